//! Writes planned from a stale catalog (another process changed the collection's indexes):
//! keys missing for an index that exists, keys for an index that was dropped, an index built
//! by another store while a write waits, and an index build racing writes from another
//! store, which must end with every document's entries in the index.

use std::collections::BTreeSet;
use std::time::Duration;

use bson::{doc, RawDocument};

use super::super::super::{
    CollectionRecord, DocumentIndexKeys, IndexRecord, ScanRequest, StoreError, StoreSession,
    StoredDocument,
};
use super::super::{PostgresSession, PostgresStore};
use super::{admin, create, ok, open, session, stored, TestDb};

/// The index key of a document: its `v` (0 without one), big-endian.
fn ik_of(bson: &[u8]) -> Vec<u8> {
    let v = RawDocument::from_bytes(bson)
        .ok()
        .and_then(|d| d.get_i32("v").ok())
        .unwrap_or(0);
    v.to_be_bytes().to_vec()
}

/// `{_id: key, v}` with its keys in `indexes` (`ik_of`).
fn doc_v(key: &str, v: i32, indexes: &[IndexRecord]) -> StoredDocument {
    let mut d = stored(key, doc! {"v": v});
    d.index_keys = indexes
        .iter()
        .map(|index| DocumentIndexKeys {
            table: index.table.clone(),
            index: index.name.clone(),
            unique: index.unique,
            keys: vec![ik_of(&d.bson)],
        })
        .collect();
    d
}

/// Builds index `name` on `v` the way the core does: in a transaction, the collection
/// locked, the documents scanned, the entries computed, then `create_index`; `pause`
/// between the scan and the build widens the window for racing writers.
async fn build(
    s: &mut PostgresSession,
    coll: &CollectionRecord,
    name: &str,
    unique: bool,
    pause: Duration,
) -> IndexRecord {
    ok(s.begin().await);
    ok(s.lock_collection_for_index_build(coll).await);
    let docs = ok(s.scan(coll, &ScanRequest::all()).await);
    let entries: Vec<(Vec<u8>, Vec<Vec<u8>>)> = docs
        .iter()
        .map(|bson| {
            let id = ok(ok(RawDocument::from_bytes(bson)).get_str("_id")).to_owned();
            (id.into_bytes(), vec![ik_of(bson)])
        })
        .collect();
    tokio::time::sleep(pause).await;
    let spec = doc! {"v": 2, "key": {"v": 1}, "name": name};
    let index = ok(s
        .create_index(coll, name, &spec, unique, false, &entries)
        .await);
    ok(s.commit().await);
    index
}

/// The indexes of `coll`, as a process re-reading its catalog sees them.
async fn indexes_of(s: &mut PostgresSession, coll: &CollectionRecord) -> Vec<IndexRecord> {
    ok(s.list_indexes().await)
        .into_iter()
        .filter(|i| i.db == coll.db && i.collection == coll.name)
        .collect()
}

async fn rows_in(db: &TestDb, table: &str) -> i64 {
    let client = admin(&db.url).await;
    let row = ok(client
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await);
    ok(row.try_get(0))
}

fn expect_stale<T: std::fmt::Debug>(r: Result<T, StoreError>) {
    match r {
        Err(StoreError::StaleCatalog(_)) => {}
        other => panic!("expected StaleCatalog, got {other:?}"),
    }
}

/// Every document's `(ik_of, _id key)` equals the index's entries, by a separate client.
async fn assert_entries_complete(db: &TestDb, store: &PostgresStore, coll: &CollectionRecord) {
    let mut s = session(store).await;
    let indexes = indexes_of(&mut s, coll).await;
    let expected: BTreeSet<(Vec<u8>, Vec<u8>)> = ok(s.scan(coll, &ScanRequest::all()).await)
        .iter()
        .map(|bson| {
            let id = ok(ok(RawDocument::from_bytes(bson)).get_str("_id")).to_owned();
            (ik_of(bson), id.into_bytes())
        })
        .collect();
    assert!(!indexes.is_empty());
    let client = admin(&db.url).await;
    for index in indexes {
        let rows = ok(client
            .query(&format!("SELECT ik, k FROM {}", index.table), &[])
            .await);
        let entries: BTreeSet<(Vec<u8>, Vec<u8>)> = rows
            .iter()
            .map(|r| (ok(r.try_get(0)), ok(r.try_get(1))))
            .collect();
        assert_eq!(entries.len(), rows.len());
        let missing: Vec<_> = expected.difference(&entries).take(5).collect();
        let extra: Vec<_> = entries.difference(&expected).take(5).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "entries of {}: {} expected, {} found; missing {missing:?}, extra {extra:?}",
            index.name,
            expected.len(),
            entries.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_missing_for_an_existing_index_write_nothing() {
    let db = fresh_db!();
    let store = open(&db).await;
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "c").await;
    ok(s.insert(&coll, &[doc_v("a", 1, &[])], true).await);
    let v = build(&mut s, &coll, "v_1", false, Duration::ZERO).await;
    let u = build(&mut s, &coll, "u_1", true, Duration::ZERO).await;
    let both = [v.clone(), u.clone()];
    let stale_docs = [doc_v("b", 2, &[]), doc_v("c", 3, &[])];
    let half = [
        doc_v("b", 2, std::slice::from_ref(&v)),
        doc_v("c", 3, std::slice::from_ref(&v)),
    ];
    for docs in [&stale_docs, &half] {
        for ordered in [false, true] {
            expect_stale(s.insert(&coll, docs, ordered).await);
        }
        expect_stale(s.replace(&coll, &[docs[0].clone()]).await);
    }
    // Documents that disagree with each other cannot all match.
    expect_stale(
        s.insert(&coll, &[doc_v("b", 2, &both), doc_v("c", 3, &[])], false)
            .await,
    );
    // The same inside a transaction, which stays usable.
    ok(s.begin().await);
    expect_stale(s.insert(&coll, &stale_docs, false).await);
    expect_stale(
        s.replace(&coll, &[doc_v("a", 9, std::slice::from_ref(&v))])
            .await,
    );
    let out = ok(s.insert(&coll, &[doc_v("b", 2, &both)], false).await);
    assert_eq!(out.inserted, 1);
    ok(s.commit().await);
    assert_eq!(rows_in(&db, &coll.table).await, 2);
    assert_eq!(rows_in(&db, &v.table).await, 2);
    // The replace with full keys goes through.
    assert_eq!(ok(s.replace(&coll, &[doc_v("a", 9, &both)]).await), 1);
    assert_entries_complete(&db, &store, &coll).await;
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_for_a_dropped_index_write_nothing() {
    let db = fresh_db!();
    let store = open(&db).await;
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "c").await;
    let v = build(&mut s, &coll, "v_1", false, Duration::ZERO).await;
    let u = build(&mut s, &coll, "u_1", true, Duration::ZERO).await;
    ok(
        s.insert(&coll, &[doc_v("a", 1, &[v.clone(), u.clone()])], true)
            .await,
    );
    ok(s.drop_index(&u).await);
    for ordered in [false, true] {
        // Through the one-by-one path (a unique index) and the set-based one.
        expect_stale(
            s.insert(&coll, &[doc_v("b", 2, &[v.clone(), u.clone()])], ordered)
                .await,
        );
    }
    let mut nonunique = u.clone();
    nonunique.unique = false;
    expect_stale(
        s.insert(&coll, &[doc_v("b", 2, &[v.clone(), nonunique])], false)
            .await,
    );
    expect_stale(
        s.replace(&coll, &[doc_v("a", 5, &[v.clone(), u.clone()])])
            .await,
    );
    assert_eq!(rows_in(&db, &coll.table).await, 1);
    ok(s.drop_index(&v).await);
    expect_stale(
        s.insert(&coll, &[doc_v("b", 2, std::slice::from_ref(&v))], false)
            .await,
    );
    expect_stale(
        s.replace(&coll, &[doc_v("a", 5, std::slice::from_ref(&v))])
            .await,
    );
    // With the catalog as it is now, both go through.
    ok(s.insert(&coll, &[doc_v("b", 2, &[])], false).await);
    assert_eq!(ok(s.replace(&coll, &[doc_v("a", 5, &[])]).await), 1);
    assert_eq!(rows_in(&db, &coll.table).await, 2);
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waiting_for_another_stores_build_is_stale() {
    let db = fresh_db!();
    let store_a = open(&db).await;
    let store_b = open(&db).await;
    let mut a = session(&store_a).await;
    let mut b = session(&store_b).await;
    let coll = create(&mut a, "app", "c").await;
    ok(a.insert(&coll, &[doc_v("a", 1, &[])], true).await);
    let outside = b.lock_collection_for_index_build(&coll).await;
    assert!(outside.is_err(), "{outside:?}");
    // B builds and holds its transaction open; A's write (planned without the index) waits.
    ok(b.begin().await);
    ok(b.lock_collection_for_index_build(&coll).await);
    let docs = ok(b.scan(&coll, &ScanRequest::all()).await);
    assert_eq!(docs.len(), 1);
    let spec = doc! {"v": 2, "key": {"v": 1}, "name": "v_1"};
    let entries = vec![(b"a".to_vec(), vec![ik_of(&docs[0])])];
    let v = ok(b
        .create_index(&coll, "v_1", &spec, false, false, &entries)
        .await);
    let (insert_coll, replace_coll) = (coll.clone(), coll.clone());
    let insert = tokio::spawn(async move {
        let r = a.insert(&insert_coll, &[doc_v("b", 2, &[])], false).await;
        (a, r)
    });
    let mut c = session(&store_a).await;
    let replace = tokio::spawn(async move {
        ok(c.begin().await);
        let r = c.replace(&replace_coll, &[doc_v("a", 7, &[])]).await;
        (c, r)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!insert.is_finished() && !replace.is_finished());
    ok(b.commit().await);
    let (mut a, r) = ok(insert.await);
    expect_stale(r);
    let (mut c, r) = ok(replace.await);
    expect_stale(r);
    ok(c.rollback().await);
    assert_eq!(rows_in(&db, &coll.table).await, 1);
    // Re-planned with the fresh catalog, both go through.
    let fresh = indexes_of(&mut a, &coll).await;
    assert_eq!(fresh, vec![v.clone()]);
    ok(a.insert(&coll, &[doc_v("b", 2, &fresh)], false).await);
    assert_eq!(ok(a.replace(&coll, &[doc_v("a", 7, &fresh)]).await), 1);
    assert_entries_complete(&db, &store_a, &coll).await;
    drop((a, b, c, store_a, store_b));
    db.drop_db().await;
}

/// Writes documents `from..to` (inserting each, then replacing every third one with a new
/// `v`), each planned from the catalog as this writer last read it, re-read and retried
/// on `StaleCatalog` as the core does; every other write in a transaction of its own.
async fn writer(store: PostgresStore, coll: CollectionRecord, from: i32, to: i32) -> usize {
    let mut s = session(&store).await;
    let mut indexes = indexes_of(&mut s, &coll).await;
    let mut stale = 0;
    for i in from..to {
        for (replace, v) in [(false, i), (true, i + 1000)] {
            if replace && i % 3 != 0 {
                continue;
            }
            loop {
                let d = doc_v(&format!("d{i:05}"), v, &indexes);
                let in_tx = i % 2 == 0;
                if in_tx {
                    ok(s.begin().await);
                }
                let r = if replace {
                    s.replace(&coll, &[d]).await.map(|n| assert_eq!(n, 1))
                } else {
                    s.insert(&coll, &[d], false)
                        .await
                        .map(|out| assert_eq!(out.inserted, 1))
                };
                match r {
                    Ok(()) => {
                        if in_tx {
                            ok(s.commit().await);
                        }
                        break;
                    }
                    Err(StoreError::StaleCatalog(_)) => {
                        if in_tx {
                            ok(s.rollback().await);
                        }
                        stale += 1;
                        indexes = indexes_of(&mut s, &coll).await;
                    }
                    Err(e) => panic!("write {i}: {e:?}"),
                }
            }
        }
    }
    stale
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_racing_another_stores_writes_misses_no_entry() {
    let db = fresh_db!();
    let store_a = open(&db).await;
    let store_b = open(&db).await;
    let mut b = session(&store_b).await;
    let coll = create(&mut b, "app", "c").await;
    let mut handles = Vec::new();
    for w in 0..2 {
        let store = open(&db).await;
        handles.push(tokio::spawn(writer(
            store,
            coll.clone(),
            w * 400,
            w * 400 + 400,
        )));
    }
    // Build two indexes while the writers run, pausing between scan and build.
    tokio::time::sleep(Duration::from_millis(100)).await;
    build(&mut b, &coll, "v_1", false, Duration::from_millis(200)).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    build(&mut b, &coll, "w_1", false, Duration::from_millis(200)).await;
    let mut stale = 0;
    for h in handles {
        stale += ok(h.await);
    }
    assert_eq!(rows_in(&db, &coll.table).await, 800);
    assert_entries_complete(&db, &store_a, &coll).await;
    eprintln!("writes retried after StaleCatalog: {stale}");
    drop((b, store_a, store_b));
    db.drop_db().await;
}
