//! One file per command family. Each handler takes the parsed request and the connection
//! context and returns the reply body (without `ok`, which dispatch adds) or a
//! `OpError`.
//!
//! Not for: SQL — handlers reach data through the catalog, the planner and `StoreSession`.

pub mod aggregate;
pub mod auth;
pub mod capped;
pub mod coll_mod;
pub(crate) mod cursor_reply;
pub mod delete;
pub mod diagnostics;
pub mod explain;
pub mod fail_points;
pub mod find;
pub mod find_and_modify;
pub mod fsync;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod handshake;
pub mod indexes;
pub mod insert;
pub mod namespaces;
pub mod operations;
pub mod plan_cache;
pub mod profiling;
pub mod replication;
pub mod shutdown;
pub mod stats;
pub mod update;
pub mod users;
pub mod views;
pub(crate) mod write_reply;
