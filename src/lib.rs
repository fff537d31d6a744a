//! docgate: a MongoDB-compatible document server over SQL databases.
//!
//! One process, two front ends (the MongoDB wire protocol in [`mongo`], HTTP REST in [`rest`]), one core ([`query`], [`catalog`]) and one store ([`store`]). Data flows one way:
//! front end → core → store. See DESIGN.md for the invariants every module keeps.

pub mod auth;
pub mod catalog;
// The planner is part of the query core; it is declared here until the query module
// can name the store types it plans for.
pub mod config;
pub mod mongo;
pub mod query;
pub mod rest;
pub mod state;
pub mod store;
