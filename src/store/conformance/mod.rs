//! The backend conformance suite: store tests written once against the `Store` and
//! `StoreSession` traits and run against every backend that can run here — SQLite in a
//! temporary directory always, PostgreSQL when `DOCGATE_TEST_PG_URL` names a server (each
//! test in a fresh database of its own), and in builds with the `oracle` feature Oracle when
//! `DOCGATE_TEST_ORACLE` names a schema (its tests take turns on it). FerretDB's `testBackends` loop is the model: a test
//! is `for backend in backends().await { … }`, and where backends legitimately differ (how
//! tight a pushdown is, which limit a huge `$or` must stay within) the test says so with
//! `backend.kind`.
//!
//! Also here: the helpers every backend's own tests share (`ok`, `stored`, `keys_of`, the
//! PostgreSQL test databases in `backends.rs`). Not here: backend-specific tests (EXPLAIN
//! plans, SQL text, PostgreSQL locking and stale-catalog specifics, SQLite files), which stay
//! in each backend's `tests/` folder.

pub(crate) mod backends;
mod catalog;
mod documents;
pub(crate) mod index_entries;
mod indexes;
mod meta;
mod positioned_scans;
mod text_indexes;
mod timing;
mod transactions;

use bson::{doc, Document};

use super::{
    CollectionRecord, DocumentIndexKeys, IndexBound, IndexRecord, Predicate, StoreSession,
    StoredDocument,
};
pub(crate) use backends::{backends, BackendKind};

/// Unwraps a result in test code, with the error's message.
pub(crate) fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("unexpected error: {e:?}"),
    }
}

/// Creates collection `db.name` with no options.
pub(crate) async fn create(s: &mut dyn StoreSession, db: &str, name: &str) -> CollectionRecord {
    ok(s.create_collection(db, name, &Document::new()).await)
}

/// A stored document with key `key` and body `{_id: key as string, ..body}`.
pub(crate) fn stored(key: &str, body: Document) -> StoredDocument {
    let mut d = doc! { "_id": key };
    d.extend(body);
    StoredDocument {
        index_keys: Vec::new(),
        key: key.as_bytes().to_vec(),
        bson: ok(d.to_vec()),
    }
}

/// The string `_id`s of raw documents, in order.
pub(crate) fn keys_of(docs: &[Vec<u8>]) -> Vec<String> {
    docs.iter()
        .map(|b| {
            let d = ok(bson::RawDocument::from_bytes(b));
            ok(d.get_str("_id")).to_owned()
        })
        .collect()
}

/// `doc` with index keys: for each index, the given keys (sorted, deduplicated here).
pub(crate) fn indexed(
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
pub(crate) fn range(
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
