//! docgate: a MongoDB-compatible document server over SQL databases.
//!
//! One process, two front ends (the MongoDB wire protocol in [`mongo`], HTTP REST in [`rest`]), one core ([`query`], [`catalog`]) and one store ([`store`]). Data flows one way:
//! front end → core → store. See DESIGN.md for the invariants every module keeps.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

/// The allocator docgate runs with, in the server binary and in every test and benchmark that
/// hosts docgate in its own process: mimalloc. A request allocates many small, short-lived
/// objects (BSON and JSON values, SQL parameters) on whichever worker thread polls it; with
/// glibc's allocator that was about a fifth of the CPU time of a REST request, and mimalloc
/// takes about 20% off the CPU time per request (`benches/rest`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod auth;
pub mod catalog;
pub mod compute;
// The planner is part of the query core; it is declared here until the query module
// can name the store types it plans for.
pub mod config;
pub mod interrupt;
pub mod mongo;
pub mod ops;
pub mod query;
pub mod rest;
pub mod state;
pub mod store;
