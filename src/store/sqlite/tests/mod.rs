//! Tests of the SQLite backend against real database files in temporary directories (no
//! mocks). Shared helpers live here; one file per area. The tests every backend shares are in
//! `store/conformance`.

mod cancel;
mod catalog;
mod index_plans;
mod indexes;
mod plans;
mod transactions;

use std::time::Duration;

use tempfile::TempDir;

pub(super) use super::super::conformance::{create, indexed, keys_of, ok, range, stored};
use super::{SqliteOptions, SqliteSession, SqliteStore};

pub(super) fn open_in(dir: &TempDir) -> SqliteStore {
    ok(SqliteStore::open(
        &dir.path().join("data"),
        SqliteOptions::default(),
    ))
}

pub(super) fn open_with(dir: &TempDir, pool_max: usize, wait: Duration) -> SqliteStore {
    let options = SqliteOptions {
        pool_max,
        pool_wait_timeout: wait,
    };
    ok(SqliteStore::open(&dir.path().join("data"), options))
}

pub(super) fn tempdir() -> TempDir {
    ok(tempfile::tempdir())
}

pub(super) async fn session(store: &SqliteStore) -> SqliteSession {
    ok(store.sqlite_session().await)
}
