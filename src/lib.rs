//! docgate: a MongoDB-compatible document server over SQL databases.
//!
//! One process, two front ends (the MongoDB wire protocol in [`mongo`], HTTP REST in
//! [`rest`]), one core ([`ops`], over MongoDB's semantics and the planner in [`query`] and
//! the metadata in [`catalog`]) and one store ([`store`]). Data flows one way:
//! front end → core → store; [`query`] performs no I/O and depends on nothing above it. See DESIGN.md for the invariants every module keeps.
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
pub mod config;
pub mod diagnostic_log;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod interrupt;
pub mod metrics;
pub mod mongo;
pub mod ops;
pub mod query;
pub mod rest;
pub mod state;
pub mod store;
