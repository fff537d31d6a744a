//! Secondary index tests on every backend (first written for SQLite): creating over
//! existing documents, listing, entries kept in step by insert / replace / delete, unique
//! conflicts (at creation, ordered and unordered inserts, within a batch, on replace),
//! `IndexRange` scans, dropping, renaming, multikey. Index keys are short byte strings.
//! `index_entries.rs` has the other half, with made-up numeric keys.

use bson::doc;

use super::super::{
    CollectionRecord, IndexBound, IndexRecord, Predicate, ScanRequest, StoreError, StoreSession,
    StoredDocument,
};
use super::{backends, create, indexed, keys_of, ok, range, stored, BackendKind};

fn scan_keys(docs: Vec<Vec<u8>>) -> Vec<String> {
    keys_of(&docs)
}

async fn find(s: &mut dyn StoreSession, coll: &CollectionRecord, p: Predicate) -> Vec<String> {
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
async fn create_over_existing_documents_and_list() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "people").await;
        let other = create(&mut *s, "app", "other").await;
        let docs = [
            stored("1", doc! {}),
            stored("2", doc! {}),
            stored("3", doc! {}),
        ];
        ok(s.insert(&coll, &docs, true).await);
        let v = ok(s.catalog_version().await);
        let spec = doc! {"v": 2, "key": {"a": 1}, "name": "a_1"};
        let entries = vec![
            (b"1".to_vec(), vec![b"a1".to_vec()]),
            (b"2".to_vec(), vec![b"a2".to_vec()]),
            (b"3".to_vec(), vec![b"a2".to_vec(), b"a3".to_vec()]),
        ];
        let a = ok(s
            .create_index(&coll, "a_1", &spec, false, true, &entries)
            .await);
        assert!(ok(s.catalog_version().await) > v);
        assert_eq!(
            (a.db.as_str(), a.collection.as_str(), a.name.as_str()),
            ("app", "people", "a_1")
        );
        assert_eq!(
            (a.spec.clone(), a.unique, a.multikey),
            (spec.clone(), false, true)
        );
        let prefix = match backend.kind {
            BackendKind::Sqlite => "dgi_",
            BackendKind::Postgres => "\"app\".\"dgi_",
            #[cfg(feature = "oracle")]
            BackendKind::Oracle => "\"DG_I",
        };
        assert!(a.table.starts_with(prefix), "{}", a.table);
        let z = ok(s
            .create_index(&other, "z", &doc! {}, true, false, &[])
            .await);
        let b = ok(s
            .create_index(&coll, "b_1", &doc! {}, true, false, &[])
            .await);
        assert_ne!(b.table, a.table);
        assert_eq!(
            ok(s.list_indexes().await),
            vec![z.clone(), a.clone(), b.clone()]
        );

        match s.create_index(&coll, "a_1", &spec, false, false, &[]).await {
            Err(StoreError::AlreadyExists(what)) => assert!(what.contains("a_1"), "{what}"),
            other => panic!("expected AlreadyExists, got {other:?}"),
        }
        assert_eq!(find(&mut *s, &coll, equal(&a, b"a2")).await, ["2", "3"]);
        assert_eq!(find(&mut *s, &coll, equal(&a, b"a3")).await, ["3"]);
        assert_eq!(ok(s.count(&coll, &equal(&a, b"a2")).await), 2);
        assert_eq!(ok(s.collection_stats(&coll).await).index_count, 3);
        // A stale collection record cannot get an index.
        ok(s.drop_collection(&other).await);
        assert!(s
            .create_index(&other, "y", &doc! {}, false, false, &[])
            .await
            .is_err());
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unique_collision_at_creation_leaves_nothing() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let docs = [stored("1", doc! {}), stored("2", doc! {})];
        ok(s.insert(&coll, &docs, true).await);
        let entries = vec![
            (b"1".to_vec(), vec![b"x".to_vec()]),
            (b"2".to_vec(), vec![b"x".to_vec()]),
        ];
        let v = ok(s.catalog_version().await);
        for in_tx in [false, true] {
            if in_tx {
                ok(s.begin().await);
            }
            match s
                .create_index(&coll, "u", &doc! {}, true, false, &entries)
                .await
            {
                Err(StoreError::IndexKeyConflict { index }) => assert_eq!(index, "u"),
                other => panic!("expected IndexKeyConflict, got {other:?}"),
            }
            if in_tx {
                // The caller's transaction is still usable.
                ok(s.insert(&coll, &[stored("3", doc! {})], true).await);
                ok(s.commit().await);
            }
            assert!(ok(s.list_indexes().await).is_empty());
            assert!(backend.index_tables().await.is_empty());
            assert_eq!(ok(s.catalog_version().await), v);
        }
        // The same keys are fine for a non-unique index, and for a unique one without the clash.
        ok(s.create_index(&coll, "n", &doc! {}, false, false, &entries)
            .await);
        let unique = [
            (b"1".to_vec(), vec![b"x".to_vec()]),
            (b"2".to_vec(), vec![b"y".to_vec()]),
        ];
        ok(s.create_index(&coll, "u", &doc! {}, true, false, &unique)
            .await);
        assert_eq!(backend.index_tables().await.len(), 2);
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_maintains_entries_and_ranges_find_them() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let a = ok(s.create_index(&coll, "a", &doc! {}, false, true, &[]).await);
        let docs: Vec<StoredDocument> = [
            ("1", vec![&b"k1"[..]]),
            ("2", vec![b"k2"]),
            ("3", vec![b"k2", b"k4"]),
            ("4", vec![]), // excluded (sparse)
            ("5", vec![b"k5"]),
        ]
        .into_iter()
        .map(|(k, keys)| indexed(stored(k, doc! {}), &[(&a, &keys)]))
        .collect();
        let out = ok(s.insert(&coll, &docs, false).await);
        assert_eq!((out.inserted, out.conflicts.len()), (5, 0));
        assert!(out.index_conflicts.is_empty());

        let r = |lower, upper| range(&a, lower, upper);
        assert_eq!(find(&mut *s, &coll, equal(&a, b"k2")).await, ["2", "3"]);
        assert_eq!(
            find(&mut *s, &coll, r(bound(b"k2", false), None)).await,
            ["3", "5"]
        );
        assert_eq!(
            find(&mut *s, &coll, r(bound(b"k2", true), None)).await,
            ["2", "3", "5"]
        );
        assert_eq!(
            find(&mut *s, &coll, r(None, bound(b"k2", false))).await,
            ["1"]
        );
        assert_eq!(
            find(&mut *s, &coll, r(None, bound(b"k2", true))).await,
            ["1", "2", "3"]
        );
        assert_eq!(
            find(&mut *s, &coll, r(bound(b"k1", false), bound(b"k5", false))).await,
            ["2", "3"]
        );
        // A document with several keys in range is returned once.
        assert_eq!(
            find(&mut *s, &coll, r(None, None)).await,
            ["1", "2", "3", "5"]
        );
        assert_eq!(ok(s.count(&coll, &r(None, None)).await), 4);
        assert!(find(&mut *s, &coll, equal(&a, b"k3")).await.is_empty());

        // Ordered with an `_id` conflict: entries of the documents after it are not written.
        let batch = [
            indexed(stored("6", doc! {}), &[(&a, &[b"k6"])]),
            indexed(stored("1", doc! {}), &[(&a, &[b"k6"])]),
            indexed(stored("7", doc! {}), &[(&a, &[b"k6"])]),
        ];
        let out = ok(s.insert(&coll, &batch, true).await);
        assert_eq!((out.conflicts, out.inserted), (vec![1], 1));
        assert!(out.index_conflicts.is_empty());
        assert_eq!(find(&mut *s, &coll, equal(&a, b"k6")).await, ["6"]);
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unique_violations_on_insert() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let n = ok(s
            .create_index(&coll, "n", &doc! {}, false, false, &[])
            .await);
        let u = ok(s.create_index(&coll, "u", &doc! {}, true, false, &[]).await);
        let d = |k: &str, nk: &[u8], uk: &[u8]| {
            let uk: Vec<&[u8]> = if uk.is_empty() { vec![] } else { vec![uk] };
            indexed(stored(k, doc! {}), &[(&n, &[nk]), (&u, &uk)])
        };
        ok(s.insert(&coll, &[d("1", b"n", b"u1")], true).await);

        // Ordered: stops at the first conflict, nothing after it written.
        let batch = [
            d("2", b"n", b"u2"),
            d("3", b"n", b"u1"),
            d("4", b"n", b"u4"),
        ];
        let out = ok(s.insert(&coll, &batch, true).await);
        assert_eq!((out.conflicts.clone(), out.inserted), (vec![1], 1));
        assert_eq!(out.index_conflicts, vec![(1, "u".to_string())]);
        assert_eq!(find(&mut *s, &coll, Predicate::True).await, ["1", "2"]);
        assert_eq!(find(&mut *s, &coll, equal(&n, b"n")).await, ["1", "2"]);

        // Unordered: an `_id` conflict, a unique conflict, within-batch duplicates (first wins),
        // and documents excluded from the unique index never collide.
        let batch = [
            d("5", b"n", b"u5"),
            d("1", b"n", b"u6"), // `_id` taken: its key u6 must not block index 4
            d("6", b"n", b"u2"), // u2 taken by "2"
            d("7", b"n", b"u5"), // u5 taken by index 0 of this batch
            d("8", b"n", b"u6"),
            d("9", b"n", b""),
            d("10", b"n", b""),
        ];
        let out = ok(s.insert(&coll, &batch, false).await);
        assert_eq!(out.conflicts, vec![1, 2, 3]);
        assert_eq!(
            out.index_conflicts,
            vec![(2, "u".to_string()), (3, "u".to_string())]
        );
        assert_eq!(out.inserted, 4);
        assert_eq!(
            find(&mut *s, &coll, Predicate::True).await,
            ["1", "2", "5", "8", "9", "10"]
        );
        // Rejected documents left no entries anywhere.
        assert_eq!(
            find(&mut *s, &coll, equal(&n, b"n")).await,
            ["1", "2", "5", "8", "9", "10"]
        );
        assert_eq!(find(&mut *s, &coll, equal(&u, b"u5")).await, ["5"]);
        assert_eq!(find(&mut *s, &coll, equal(&u, b"u6")).await, ["8"]);
        assert_eq!(
            find(&mut *s, &coll, range(&u, None, None)).await,
            ["1", "2", "5", "8"]
        );

        // Inside a transaction the outcome is the same and the transaction goes on.
        ok(s.begin().await);
        let out = ok(s.insert(&coll, &[d("11", b"n", b"u1")], true).await);
        assert_eq!(out.index_conflicts, vec![(0, "u".to_string())]);
        ok(s.insert(&coll, &[d("12", b"n", b"u12")], true).await);
        ok(s.commit().await);
        assert_eq!(find(&mut *s, &coll, equal(&u, b"u12")).await, ["12"]);
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_index_keys_write_nothing() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let a = ok(s
            .create_index(&coll, "a", &doc! {}, false, false, &[])
            .await);
        // No keys for index "a" (a caller that has not seen it yet).
        assert!(s
            .insert(&coll, &[stored("1", doc! {})], true)
            .await
            .is_err());
        // Keys for an index that no longer exists.
        ok(s.drop_index(&a).await);
        let doc = indexed(stored("1", doc! {}), &[(&a, &[b"x"])]);
        assert!(s
            .insert(&coll, std::slice::from_ref(&doc), false)
            .await
            .is_err());
        assert!(s.replace(&coll, &[doc]).await.is_err());
        assert!(find(&mut *s, &coll, Predicate::True).await.is_empty());
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_moves_entries_and_unique_violations_apply_nothing() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let u = ok(s.create_index(&coll, "u", &doc! {}, true, false, &[]).await);
        let d = |k: &str, v: i32, uk: &[&[u8]]| indexed(stored(k, doc! {"v": v}), &[(&u, uk)]);
        let docs = [d("1", 0, &[b"a"]), d("2", 0, &[b"b"]), d("3", 0, &[b"c"])];
        ok(s.insert(&coll, &docs, true).await);

        // "1" moves from a to x; "2" keeps b (its own key is no conflict); "9" does not exist.
        let written = ok(s
            .replace(
                &coll,
                &[d("1", 1, &[b"x"]), d("2", 1, &[b"b"]), d("9", 1, &[b"a"])],
            )
            .await);
        assert_eq!(written, 2);
        assert!(find(&mut *s, &coll, equal(&u, b"a")).await.is_empty());
        assert_eq!(find(&mut *s, &coll, equal(&u, b"x")).await, ["1"]);
        assert_eq!(find(&mut *s, &coll, equal(&u, b"b")).await, ["2"]);

        // "3" would take b from "2": the whole call fails, "1" is not replaced either.
        let before = ok(s.scan(&coll, &ScanRequest::all()).await);
        match s
            .replace(&coll, &[d("1", 2, &[b"y"]), d("3", 2, &[b"b"])])
            .await
        {
            Err(StoreError::IndexKeyConflict { index }) => assert_eq!(index, "u"),
            other => panic!("expected IndexKeyConflict, got {other:?}"),
        }
        assert_eq!(ok(s.scan(&coll, &ScanRequest::all()).await), before);
        assert_eq!(find(&mut *s, &coll, equal(&u, b"x")).await, ["1"]);
        assert!(find(&mut *s, &coll, equal(&u, b"y")).await.is_empty());
        assert_eq!(find(&mut *s, &coll, equal(&u, b"c")).await, ["3"]);

        // Inside a transaction the failure leaves the transaction usable.
        ok(s.begin().await);
        assert!(s.replace(&coll, &[d("3", 3, &[b"b"])]).await.is_err());
        ok(s.replace(&coll, &[d("3", 3, &[])]).await);
        ok(s.commit().await);
        assert!(find(&mut *s, &coll, equal(&u, b"c")).await.is_empty());
        assert_eq!(
            find(&mut *s, &coll, range(&u, None, None)).await,
            ["1", "2"]
        );
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_removes_entries() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let a = ok(s
            .create_index(&coll, "a", &doc! {}, false, false, &[])
            .await);
        let u = ok(s.create_index(&coll, "u", &doc! {}, true, false, &[]).await);
        let docs: Vec<_> = (0..20)
            .map(|i| {
                let uk = format!("u{i:02}").into_bytes();
                indexed(
                    stored(&format!("{i:02}"), doc! {}),
                    &[(&a, &[b"same"]), (&u, &[&uk])],
                )
            })
            .collect();
        ok(s.insert(&coll, &docs, true).await);
        let gone: Vec<Vec<u8>> = (0..20)
            .step_by(2)
            .map(|i| format!("{i:02}").into_bytes())
            .collect();
        assert_eq!(ok(s.delete(&coll, &gone).await), 10);
        let odd: Vec<String> = (1..20).step_by(2).map(|i| format!("{i:02}")).collect();
        assert_eq!(find(&mut *s, &coll, equal(&a, b"same")).await, odd);
        assert_eq!(find(&mut *s, &coll, range(&u, None, None)).await, odd);
        // A deleted document's unique key is free again.
        let again = indexed(stored("x", doc! {}), &[(&a, &[]), (&u, &[b"u00"])]);
        let out = ok(s.insert(&coll, &[again], true).await);
        assert_eq!((out.inserted, out.conflicts.len()), (1, 0));
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_rename_and_multikey() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let entries = vec![(b"1".to_vec(), vec![b"k".to_vec()])];
        ok(s.insert(&coll, &[stored("1", doc! {})], true).await);
        let a = ok(s
            .create_index(&coll, "a", &doc! {}, false, false, &entries)
            .await);
        let b = ok(s
            .create_index(&coll, "b", &doc! {}, true, false, &entries)
            .await);
        assert_eq!(backend.index_tables().await.len(), 2);

        let v = ok(s.catalog_version().await);
        ok(s.mark_multikey(&a).await);
        let v2 = ok(s.catalog_version().await);
        assert!(v2 > v);
        let a = IndexRecord {
            multikey: true,
            ..a
        };
        assert_eq!(ok(s.list_indexes().await), vec![a.clone(), b.clone()]);
        ok(s.mark_multikey(&a).await); // already marked: nothing changes
        assert_eq!(ok(s.catalog_version().await), v2);

        let renamed = ok(s.rename_collection(&coll, "archive", "c2").await);
        // PostgreSQL moves the entries tables to the new database's schema with it.
        let pg = backend.kind == BackendKind::Postgres;
        let moved = |r: &IndexRecord| IndexRecord {
            db: "archive".into(),
            collection: "c2".into(),
            table: if pg {
                r.table.replace("\"app\".", "\"archive\".")
            } else {
                r.table.clone()
            },
            ..r.clone()
        };
        assert_eq!(ok(s.list_indexes().await), vec![moved(&a), moved(&b)]);
        assert_eq!(
            find(&mut *s, &renamed, equal(&moved(&a), b"k")).await,
            ["1"]
        );

        let v = ok(s.catalog_version().await);
        ok(s.drop_index(&moved(&a)).await);
        assert!(ok(s.catalog_version().await) > v);
        assert_eq!(ok(s.list_indexes().await), vec![moved(&b)]);
        assert_eq!(backend.index_tables().await, vec![moved(&b).table]);
        ok(s.drop_index(&a).await); // stale: no-op
        assert_eq!(ok(s.collection_stats(&renamed).await).index_count, 2);
        // Inserts now only need keys for "b".
        let doc = indexed(stored("2", doc! {}), &[(&moved(&b), &[b"k2"])]);
        ok(s.insert(&renamed, &[doc], true).await);

        ok(s.drop_collection(&renamed).await);
        assert!(ok(s.list_indexes().await).is_empty());
        assert!(backend.index_tables().await.is_empty());
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_listed_twice_for_one_document_is_no_conflict() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        ok(s.insert(&coll, &[stored("1", doc! {})], true).await);
        let twice = vec![(b"1".to_vec(), vec![b"x".to_vec(), b"x".to_vec()])];
        let u = ok(s
            .create_index(&coll, "u", &doc! {}, true, true, &twice)
            .await);
        let mut doc = indexed(stored("2", doc! {}), &[(&u, &[b"y"])]);
        doc.index_keys[0].keys = vec![b"y".to_vec(), b"y".to_vec()];
        let out = ok(s.insert(&coll, &[doc.clone()], true).await);
        assert_eq!((out.inserted, out.conflicts.len()), (1, 0));
        ok(s.replace(&coll, &[doc]).await);
        assert_eq!(
            find(&mut *s, &coll, range(&u, None, None)).await,
            ["1", "2"]
        );
        drop((s, store));
        backend.finish().await;
    }
}
