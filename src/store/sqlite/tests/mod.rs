//! Tests of the SQLite backend against real database files in temporary directories (no
//! mocks). Shared helpers live here; one file per area. The tests every backend shares are in
//! `store/conformance`.

mod catalog;
mod index_plans;
mod indexes;
mod plans;
mod timing;
mod transactions;

use std::time::Duration;

use tempfile::TempDir;

pub(super) use super::super::conformance::{create, keys_of, ok, stored};
use super::super::{DocumentIndexKeys, IndexBound, IndexRecord, Predicate, StoredDocument};
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

/// `doc` with index keys: for each index, the given keys (sorted, deduplicated here).
pub(super) fn indexed(
    mut doc: StoredDocument,
    keys: &[(&IndexRecord, &[&[u8]])],
) -> StoredDocument {
    doc.index_keys = keys
        .iter()
        .map(|(index, keys)| {
            let mut keys: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
            keys.sort();
            keys.dedup();
            DocumentIndexKeys {
                table: index.table.clone(),
                index: index.name.clone(),
                unique: index.unique,
                keys,
            }
        })
        .collect();
    doc
}

/// An `IndexRange` over `index`.
pub(super) fn range(
    index: &IndexRecord,
    lower: Option<IndexBound>,
    upper: Option<IndexBound>,
) -> Predicate {
    Predicate::IndexRange {
        table: index.table.clone(),
        lower,
        upper,
    }
}
