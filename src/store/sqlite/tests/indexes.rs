//! SQLite's own secondary index test: a database file from before indexes is upgraded. The
//! index tests every backend shares are in `store/conformance/indexes.rs` and
//! `index_entries.rs`; the plans SQLite picks in `index_plans.rs`.

use bson::doc;

use super::super::super::{IndexBound, IndexRecord, Predicate, ScanRequest, StoreSession};
use super::{create, keys_of, ok, open_in, range, session, stored, tempdir};

fn scan_keys(docs: Vec<Vec<u8>>) -> Vec<String> {
    keys_of(&docs)
}

async fn find(
    s: &mut super::SqliteSession,
    coll: &super::super::super::CollectionRecord,
    p: Predicate,
) -> Vec<String> {
    let request = ScanRequest {
        filter: p,
        ..ScanRequest::all()
    };
    scan_keys(ok(s.scan(coll, &request).await))
}

fn bound(key: &[u8], inclusive: bool) -> Option<IndexBound> {
    Some(IndexBound {
        key: key.to_vec(),
        inclusive,
    })
}

/// Equality on one key: `[key, key ++ 0x00)`.
fn equal(index: &IndexRecord, key: &[u8]) -> Predicate {
    let mut next = key.to_vec();
    next.push(0);
    range(index, bound(key, true), bound(&next, false))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_from_before_indexes_is_upgraded() {
    let dir = tempdir();
    let coll = {
        let store = open_in(&dir);
        let mut s = session(&store).await;
        let coll = create(&mut s, "app", "old").await;
        ok(s.insert(&coll, &[stored("1", doc! {})], true).await);
        let conn = ok(rusqlite::Connection::open(store.file()));
        ok(conn.execute_batch("DROP TABLE dg_indexes"));
        coll
    };
    let store = open_in(&dir);
    let mut s = session(&store).await;
    assert!(ok(s.list_indexes().await).is_empty());
    let entries = vec![(b"1".to_vec(), vec![b"k".to_vec()])];
    let a = ok(s
        .create_index(&coll, "a", &doc! {}, false, false, &entries)
        .await);
    assert_eq!(find(&mut s, &coll, equal(&a, b"k")).await, ["1"]);
}
