//! Tests of the PostgreSQL backend against a real PostgreSQL server (no mocks). Shared
//! helpers live here; one file per area, the same list as the SQLite backend's tests.
//!
//! The server comes from env `DOCGATE_TEST_PG_URL` (e.g. the line printed by
//! `tests/pg_cluster.sh start DIR`). Each test creates its own database with a random name,
//! so tests run in parallel and leave each other alone; it drops it when it passes. Without
//! the variable the tests fail, saying how to start a server, unless
//! `DOCGATE_SKIP_POSTGRES=1`, which makes them return early with a note. The databases and
//! the shared helpers come from `store/conformance`, whose suite also runs the tests common
//! to every backend on PostgreSQL.

/// A fresh database for this test, or `return` when PostgreSQL tests are skipped.
macro_rules! fresh_db {
    () => {
        match super::fresh_db().await {
            Some(db) => db,
            None => return,
        }
    };
}

mod cancel;
mod catalog;
mod changes;
mod indexes;
mod plans;
mod restart;
mod stale;
mod transactions;

use std::time::Duration;

pub(super) use super::super::conformance::backends::{admin, fresh_db, TestDb};
pub(super) use super::super::conformance::{create, keys_of, ok, stored};
use super::{PostgresOptions, PostgresSession, PostgresStore};

pub(super) async fn open(db: &TestDb) -> PostgresStore {
    ok(PostgresStore::connect(&db.url, PostgresOptions::default()).await)
}

pub(super) async fn open_with(db: &TestDb, pool_max: usize, wait: Duration) -> PostgresStore {
    let options = PostgresOptions {
        pool_min: 1,
        pool_max,
        pool_wait_timeout: wait,
        statement_cache: true,
    };
    ok(PostgresStore::connect(&db.url, options).await)
}

pub(super) async fn session(store: &PostgresStore) -> PostgresSession {
    ok(store.postgres_session().await)
}
