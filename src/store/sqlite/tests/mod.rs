//! Tests of the SQLite backend against real database files in temporary directories (no
//! mocks). Shared helpers live here; one file per area.

mod catalog;
mod documents;
mod index_plans;
mod indexes;
mod plans;
mod timing;
mod transactions;

use std::time::Duration;

use bson::{doc, Document};
use tempfile::TempDir;

use super::super::{
    CollectionRecord, DocumentIndexKeys, IndexBound, IndexRecord, Predicate, StoreSession,
    StoredDocument,
};
use super::{SqliteOptions, SqliteSession, SqliteStore};

/// Unwraps a result in test code, with the error's message.
pub(super) fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("unexpected error: {e:?}"),
    }
}

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

pub(super) async fn create(s: &mut SqliteSession, db: &str, name: &str) -> CollectionRecord {
    ok(s.create_collection(db, name, &Document::new()).await)
}

/// A stored document with key `key` and body `{_id: key as string, ..body}`.
pub(super) fn stored(key: &str, body: Document) -> StoredDocument {
    let mut d = doc! { "_id": key };
    d.extend(body);
    StoredDocument {
        index_keys: Vec::new(),
        key: key.as_bytes().to_vec(),
        bson: ok(d.to_vec()),
    }
}

pub(super) fn keys_of(docs: &[Vec<u8>]) -> Vec<String> {
    docs.iter()
        .map(|b| {
            let d = ok(bson::RawDocument::from_bytes(b));
            ok(d.get_str("_id")).to_owned()
        })
        .collect()
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
