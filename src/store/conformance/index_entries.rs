//! Secondary index tests on every backend (first written for PostgreSQL): creating over
//! existing documents, unique collisions (at create, on insert ordered/unordered and within
//! a batch, on replace), entries kept in step with insert/replace/delete, `IndexRange` and
//! index-ordered scans, drop, rename (also to another database). Index keys are made-up byte
//! strings (big-endian numbers), as the core's encoding would be. `indexes.rs` has the other
//! half; multikey notifications and plans stay in the backends' tests.

use std::time::Duration;

use bson::{doc, Document};

use super::super::{
    CollectionRecord, DocumentIndexKeys, IndexBound, IndexRecord, KeyOrder, Predicate, ScanRequest,
    StoreError, StoreSession, StoredDocument,
};
use super::backends::admin;
use super::{backends, create, keys_of, ok, stored, BackendKind};

/// A two-byte, order-preserving index key.
pub(crate) fn ik(i: u16) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}

/// `stored(key, {})` with keys in the given indexes.
pub(crate) fn with_keys(key: &str, keys: &[(&IndexRecord, Vec<Vec<u8>>)]) -> StoredDocument {
    let mut d = stored(key, doc! {});
    d.index_keys = keys
        .iter()
        .map(|(index, keys)| DocumentIndexKeys {
            table: index.table.clone(),
            index: index.name.clone(),
            unique: index.unique,
            keys: keys.clone(),
        })
        .collect();
    d
}

pub(crate) fn range(
    index: &IndexRecord,
    lower: Option<(u16, bool)>,
    upper: Option<(u16, bool)>,
) -> Predicate {
    let bound = |b: Option<(u16, bool)>| {
        b.map(|(i, inclusive)| IndexBound {
            key: ik(i),
            inclusive,
        })
    };
    Predicate::IndexRange {
        table: index.table.clone(),
        lower: bound(lower),
        upper: bound(upper),
    }
}

/// `_id`s (sorted) of the documents the predicate selects.
pub(crate) async fn ids(
    s: &mut dyn StoreSession,
    coll: &CollectionRecord,
    filter: Predicate,
) -> Vec<String> {
    let request = ScanRequest {
        filter,
        ..ScanRequest::all()
    };
    let mut out = keys_of(&ok(s.scan(coll, &request).await));
    out.sort();
    out
}

/// Documents in `[key, successor)`: equality as the core asks for it.
pub(crate) async fn equal(
    s: &mut dyn StoreSession,
    coll: &CollectionRecord,
    index: &IndexRecord,
    i: u16,
) -> Vec<String> {
    ids(s, coll, range(index, Some((i, true)), Some((i + 1, false)))).await
}

pub(crate) async fn make_index(
    s: &mut dyn StoreSession,
    coll: &CollectionRecord,
    name: &str,
    unique: bool,
    entries: &[(&str, Vec<Vec<u8>>)],
) -> IndexRecord {
    let entries: Vec<(Vec<u8>, Vec<Vec<u8>>)> = entries
        .iter()
        .map(|(k, keys)| (k.as_bytes().to_vec(), keys.clone()))
        .collect();
    let spec = doc! {"v": 2, "key": {name: 1}, "name": name};
    ok(s.create_index(coll, name, &spec, unique, false, &entries)
        .await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_over_existing_documents_and_list() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "people").await;
        let other = create(&mut *s, "app", "other").await;
        let docs: Vec<_> = ["a", "b", "c"].iter().map(|k| stored(k, doc! {})).collect();
        ok(s.insert(&coll, &docs, true).await);
        let v0 = ok(s.catalog_version().await);
        let age = make_index(
            &mut *s,
            &coll,
            "age_1",
            false,
            &[
                ("a", vec![ik(30)]),
                ("b", vec![ik(30), ik(40)]),
                ("c", vec![]),
            ],
        )
        .await;
        assert!(ok(s.catalog_version().await) > v0);
        let prefix = match backend.kind {
            BackendKind::Sqlite => "dgi_",
            BackendKind::Postgres => "\"app\".\"dgi_",
            #[cfg(feature = "oracle")]
            BackendKind::Oracle => "\"DG_I",
        };
        assert!(age.table.starts_with(prefix), "{}", age.table);
        let email = make_index(
            &mut *s,
            &coll,
            "email_1",
            true,
            &[("a", vec![ik(1)]), ("b", vec![ik(2)])],
        )
        .await;
        let same_name = make_index(&mut *s, &other, "age_1", false, &[]).await;
        let listed = ok(s.list_indexes().await);
        assert_eq!(listed, vec![same_name.clone(), age.clone(), email.clone()]);
        assert_eq!(
            listed[1].spec,
            doc! {"v": 2, "key": {"age_1": 1}, "name": "age_1"}
        );
        assert!(email.unique && !age.unique && !age.multikey);
        match s
            .create_index(&coll, "age_1", &Document::new(), false, false, &[])
            .await
        {
            Err(StoreError::AlreadyExists(_)) => {}
            other => panic!("expected AlreadyExists, got {other:?}"),
        }
        assert_eq!(equal(&mut *s, &coll, &age, 30).await, ["a", "b"]);
        assert_eq!(equal(&mut *s, &coll, &age, 40).await, ["b"]);
        assert_eq!(equal(&mut *s, &coll, &email, 2).await, ["b"]);
        assert_eq!(ok(s.collection_stats(&coll).await).index_count, 3);
        assert_eq!(ok(s.collection_stats(&other).await).index_count, 2);
        // A collection may not take the reserved prefix as its table name.
        let sneaky = create(&mut *s, "app", "dgi_1").await;
        assert!(!sneaky.table.contains("dgi_"), "{}", sneaky.table);
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unique_collision_at_create_leaves_nothing() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let v0 = ok(s.catalog_version().await);
        let entries = vec![(b"a".to_vec(), vec![ik(1)]), (b"b".to_vec(), vec![ik(1)])];
        for in_tx in [false, true] {
            if in_tx {
                ok(s.begin().await);
            }
            match s
                .create_index(&coll, "u_1", &Document::new(), true, false, &entries)
                .await
            {
                Err(StoreError::IndexKeyConflict { index }) => assert_eq!(index, "u_1"),
                other => panic!("expected IndexKeyConflict, got {other:?}"),
            }
            if in_tx {
                // The transaction is still usable.
                make_index(&mut *s, &coll, "ok_1", false, &[("a", vec![ik(1)])]).await;
                ok(s.commit().await);
            }
        }
        let listed = ok(s.list_indexes().await);
        assert_eq!(
            listed.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
            ["ok_1"]
        );
        assert_eq!(backend.index_tables().await.len(), 1);
        assert_eq!(ok(s.catalog_version().await), v0 + 1);
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inserts_maintain_entries_and_ranges_find_them() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let idx = make_index(&mut *s, &coll, "n_1", false, &[]).await;
        for ordered in [true, false] {
            let prefix = if ordered { "o" } else { "u" };
            let docs: Vec<_> = (0..10u16)
                .map(|i| {
                    with_keys(
                        &format!("{prefix}{i}"),
                        &[(&idx, vec![ik(i * 10 + u16::from(!ordered))])],
                    )
                })
                .collect();
            let out = ok(s.insert(&coll, &docs, ordered).await);
            assert_eq!(out.inserted, 10);
        }
        // Several keys (multikey), none (excluded), and an `_id` conflict that must add nothing.
        let batch = vec![
            with_keys("m", &[(&idx, vec![ik(500), ik(501)])]),
            with_keys("x", &[(&idx, vec![])]),
            with_keys("o1", &[(&idx, vec![ik(900)])]),
        ];
        let out = ok(s.insert(&coll, &batch, false).await);
        assert_eq!((out.conflicts, out.inserted), (vec![2], 2));
        assert!(out.index_conflicts.is_empty());
        assert_eq!(backend.rows_in(&idx.table).await, 22);
        assert_eq!(equal(&mut *s, &coll, &idx, 30).await, ["o3"]);
        assert_eq!(equal(&mut *s, &coll, &idx, 31).await, ["u3"]);
        assert!(equal(&mut *s, &coll, &idx, 900).await.is_empty());
        assert_eq!(equal(&mut *s, &coll, &idx, 501).await, ["m"]);
        // Inclusive and exclusive ends, open ranges; a document with two keys in range once.
        assert_eq!(
            ids(
                &mut *s,
                &coll,
                range(&idx, Some((80, true)), Some((90, true)))
            )
            .await,
            ["o8", "o9", "u8"]
        );
        assert_eq!(
            ids(
                &mut *s,
                &coll,
                range(&idx, Some((80, false)), Some((90, false)))
            )
            .await,
            ["u8"]
        );
        assert_eq!(
            ids(&mut *s, &coll, range(&idx, Some((90, true)), None)).await,
            ["m", "o9", "u9"]
        );
        assert_eq!(
            ids(&mut *s, &coll, range(&idx, None, Some((1, true)))).await,
            ["o0", "u0"]
        );
        assert_eq!(ids(&mut *s, &coll, range(&idx, None, None)).await.len(), 21);
        assert_eq!(
            ok(s.count(&coll, &range(&idx, Some((500, true)), None)).await),
            1
        );
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unique_violations_on_insert_are_reported_per_document() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let plain = make_index(&mut *s, &coll, "a_1", false, &[]).await;
        let u = make_index(&mut *s, &coll, "u_1", true, &[]).await;
        let doc = |key: &str, unique: u16| {
            with_keys(key, &[(&plain, vec![ik(7)]), (&u, vec![ik(unique)])])
        };
        ok(s.insert(&coll, &[doc("x", 1)], true).await);

        // Ordered: stops at the first conflict.
        let out = ok(s
            .insert(&coll, &[doc("a", 2), doc("b", 1), doc("c", 3)], true)
            .await);
        assert_eq!((out.conflicts, out.inserted), (vec![1], 1));
        assert_eq!(out.index_conflicts, vec![(1, "u_1".to_owned())]);
        // Unordered: carries on; `_id` conflicts are not index conflicts.
        let out = ok(s
            .insert(&coll, &[doc("d", 1), doc("a", 9), doc("e", 4)], false)
            .await);
        assert_eq!((out.conflicts, out.inserted), (vec![0, 1], 1));
        assert_eq!(out.index_conflicts, vec![(0, "u_1".to_owned())]);
        // Within a batch the first document holding a key wins.
        let out = ok(s
            .insert(&coll, &[doc("f", 5), doc("g", 5), doc("h", 6)], false)
            .await);
        assert_eq!(out.index_conflicts, vec![(1, "u_1".to_owned())]);
        assert_eq!(equal(&mut *s, &coll, &u, 5).await, ["f"]);
        // An excluded document (no keys) never conflicts.
        let out = ok(s
            .insert(
                &coll,
                &[
                    with_keys("i", &[(&plain, vec![]), (&u, vec![])]),
                    with_keys("j", &[(&plain, vec![]), (&u, vec![])]),
                ],
                true,
            )
            .await);
        assert_eq!(out.inserted, 2);

        // Rejected documents left no row and no entry behind.
        let all = ids(&mut *s, &coll, Predicate::True).await;
        assert_eq!(all, ["a", "e", "f", "h", "i", "j", "x"]);
        assert_eq!(
            equal(&mut *s, &coll, &plain, 7).await,
            ["a", "e", "f", "h", "x"]
        );
        assert_eq!(backend.rows_in(&u.table).await, 5);
        assert_eq!(equal(&mut *s, &coll, &u, 1).await, ["x"]);

        // Inside a transaction, a rejected document leaves the transaction usable.
        ok(s.begin().await);
        let out = ok(s.insert(&coll, &[doc("k", 1), doc("l", 10)], false).await);
        assert_eq!(out.index_conflicts, vec![(0, "u_1".to_owned())]);
        ok(s.commit().await);
        assert_eq!(equal(&mut *s, &coll, &u, 10).await, ["l"]);
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refusing_index_is_named_and_batches_stay_fast() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let u = make_index(&mut *s, &coll, "u_1", true, &[]).await;
        let v = make_index(&mut *s, &coll, "v_1", true, &[]).await;
        let doc =
            |key: &str, a: u16, b: u16| with_keys(key, &[(&u, vec![ik(a)]), (&v, vec![ik(b)])]);
        ok(s.insert(&coll, &[doc("x", 1, 1)], true).await);
        let out = ok(s
            .insert(
                &coll,
                &[doc("a", 2, 1), doc("b", 1, 2), doc("c", 3, 3)],
                false,
            )
            .await);
        assert_eq!(
            out.index_conflicts,
            vec![(0, "v_1".to_owned()), (1, "u_1".to_owned())]
        );
        assert_eq!(ids(&mut *s, &coll, Predicate::True).await, ["c", "x"]);
        // A large batch through the sequential path: one round trip per document.
        let docs: Vec<_> = (10..2010u16)
            .map(|i| doc(&format!("n{i:04}"), i, i))
            .collect();
        let started = std::time::Instant::now();
        let out = ok(s.insert(&coll, &docs, true).await);
        assert_eq!(out.inserted, 2000);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(backend.rows_in(&v.table).await, 2002);
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_moves_entries_and_unique_violation_applies_nothing() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let plain = make_index(&mut *s, &coll, "a_1", false, &[]).await;
        let u = make_index(&mut *s, &coll, "u_1", true, &[]).await;
        let doc = |key: &str, a: Vec<Vec<u8>>, unique: u16| {
            with_keys(key, &[(&plain, a), (&u, vec![ik(unique)])])
        };
        ok(s.insert(
            &coll,
            &[doc("a", vec![ik(1), ik(2)], 1), doc("b", vec![ik(1)], 2)],
            true,
        )
        .await);

        // a: keys 1,2 → 3; b: excluded from a_1 now; a and b swap their unique keys.
        let swap = [
            doc("a", vec![ik(3)], 2),
            doc("b", vec![], 1),
            doc("zz", vec![ik(9)], 9),
        ];
        if backend.kind == BackendKind::Postgres {
            // In one call: PostgreSQL checks uniqueness once the statement has run.
            assert_eq!(ok(s.replace(&coll, &swap).await), 2);
        } else {
            // SQLite checks each document as it writes it: a swap in one call is refused
            // (and applies nothing, as below); through a free key it takes three calls.
            match s.replace(&coll, &swap).await {
                Err(StoreError::IndexKeyConflict { index }) => assert_eq!(index, "u_1"),
                other => panic!("expected IndexKeyConflict, got {other:?}"),
            }
            assert_eq!(equal(&mut *s, &coll, &plain, 1).await, ["a", "b"]);
            let mut n = ok(s.replace(&coll, &[doc("b", vec![], 7)]).await);
            n += ok(s.replace(&coll, &[swap[0].clone(), swap[2].clone()]).await);
            n += ok(s.replace(&coll, &[swap[1].clone()]).await);
            assert_eq!(n, 3);
        }
        assert!(equal(&mut *s, &coll, &plain, 1).await.is_empty());
        assert!(equal(&mut *s, &coll, &plain, 2).await.is_empty());
        assert_eq!(equal(&mut *s, &coll, &plain, 3).await, ["a"]);
        assert_eq!(equal(&mut *s, &coll, &u, 2).await, ["a"]);
        assert_eq!(equal(&mut *s, &coll, &u, 1).await, ["b"]);
        // A document that does not exist gets no entries.
        assert!(equal(&mut *s, &coll, &u, 9).await.is_empty());

        // a and b both take unique key 5: refused, nothing of the call applied (a's body neither).
        let mut changed = doc("a", vec![ik(4)], 5);
        changed.bson = ok(doc! {"_id": "a", "changed": true}.to_vec());
        for in_tx in [false, true] {
            if in_tx {
                ok(s.begin().await);
            }
            match s
                .replace(&coll, &[changed.clone(), doc("b", vec![], 5)])
                .await
            {
                Err(StoreError::IndexKeyConflict { index }) => assert_eq!(index, "u_1"),
                other => panic!("expected IndexKeyConflict, got {other:?}"),
            }
            if in_tx {
                assert_eq!(equal(&mut *s, &coll, &plain, 3).await, ["a"]);
                ok(s.commit().await);
            }
        }
        assert_eq!(equal(&mut *s, &coll, &plain, 3).await, ["a"]);
        assert!(equal(&mut *s, &coll, &u, 5).await.is_empty());
        let bodies = ok(s
            .scan(
                &coll,
                &ScanRequest {
                    filter: Predicate::KeyEquals(b"a".to_vec()),
                    ..ScanRequest::all()
                },
            )
            .await);
        let body = ok(bson::RawDocument::from_bytes(&bodies[0]));
        assert!(body.get("changed").ok().flatten().is_none());
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_removes_entries_and_drops_remove_tables() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let a = make_index(&mut *s, &coll, "a_1", false, &[]).await;
        let u = make_index(&mut *s, &coll, "u_1", true, &[]).await;
        let docs: Vec<_> = (0..6u16)
            .map(|i| {
                with_keys(
                    &format!("d{i}"),
                    &[(&a, vec![ik(i), ik(100 + i)]), (&u, vec![ik(i)])],
                )
            })
            .collect();
        ok(s.insert(&coll, &docs, true).await);
        assert_eq!(
            ok(
                s.delete(&coll, &[b"d1".to_vec(), b"d2".to_vec(), b"nope".to_vec()])
                    .await
            ),
            2
        );
        assert_eq!(backend.rows_in(&a.table).await, 8);
        assert_eq!(backend.rows_in(&u.table).await, 4);
        assert!(equal(&mut *s, &coll, &a, 101).await.is_empty());
        // The unique key of a deleted document is free again.
        let out = ok(s
            .insert(
                &coll,
                &[with_keys("n", &[(&a, vec![]), (&u, vec![ik(1)])])],
                true,
            )
            .await);
        assert_eq!(out.inserted, 1);

        let v = ok(s.catalog_version().await);
        ok(s.drop_index(&a).await);
        assert!(ok(s.catalog_version().await) > v);
        assert_eq!(ok(s.list_indexes().await), vec![u.clone()]);
        assert_eq!(backend.index_tables().await.len(), 1);
        // Dropping an index that is gone is a no-op.
        ok(s.drop_index(&a).await);
        // Deletes after the drop only touch the remaining index.
        assert_eq!(ok(s.delete(&coll, &[b"d3".to_vec()]).await), 1);
        assert_eq!(backend.rows_in(&u.table).await, 4);

        let other = create(&mut *s, "app", "keep").await;
        let kept = make_index(&mut *s, &other, "k_1", false, &[]).await;
        ok(s.drop_collection(&coll).await);
        assert_eq!(ok(s.list_indexes().await), vec![kept]);
        assert_eq!(backend.index_tables().await.len(), 1);
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_keeps_indexes_also_across_databases() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let a = make_index(&mut *s, &coll, "a_1", false, &[]).await;
        let u = make_index(&mut *s, &coll, "u_1", true, &[]).await;
        let docs: Vec<_> = (0..4u16)
            .map(|i| {
                with_keys(
                    &format!("d{i}"),
                    &[(&a, vec![ik(i % 2)]), (&u, vec![ik(i)])],
                )
            })
            .collect();
        ok(s.insert(&coll, &docs, true).await);

        let renamed = ok(s.rename_collection(&coll, "app", "d").await);
        let listed = ok(s.list_indexes().await);
        assert_eq!(listed.len(), 2);
        assert!(listed.iter().all(|i| i.collection == "d" && i.db == "app"));
        assert_eq!(equal(&mut *s, &renamed, &listed[0], 1).await, ["d1", "d3"]);

        let moved = ok(s.rename_collection(&renamed, "shop", "e").await);
        let listed = ok(s.list_indexes().await);
        assert_eq!(listed.len(), 2);
        assert!(listed.iter().all(|i| i.db == "shop" && i.collection == "e"));
        let prefix = match backend.kind {
            BackendKind::Sqlite => "dgi_",
            BackendKind::Postgres => "\"shop\".\"dgi_",
            #[cfg(feature = "oracle")]
            BackendKind::Oracle => "\"DG_I",
        };
        assert!(
            listed.iter().all(|i| i.table.starts_with(prefix)),
            "{listed:?}"
        );
        let (a2, u2) = (&listed[0], &listed[1]);
        assert_eq!((a2.name.as_str(), u2.name.as_str()), ("a_1", "u_1"));
        assert!(u2.unique);
        assert_eq!(equal(&mut *s, &moved, a2, 0).await, ["d0", "d2"]);
        // Entries keep being maintained (and unique enforced) in the new place.
        let out = ok(s
            .insert(
                &moved,
                &[with_keys("x", &[(a2, vec![ik(0)]), (u2, vec![ik(3)])])],
                true,
            )
            .await);
        assert_eq!(out.index_conflicts, vec![(0, "u_1".to_owned())]);
        assert_eq!(ok(s.delete(&moved, &[b"d0".to_vec()]).await), 1);
        assert_eq!(equal(&mut *s, &moved, a2, 0).await, ["d2"]);
        if let Some(url) = backend.pg_url() {
            // The old schema is gone with its last collection.
            let client = admin(url).await;
            let row = ok(client
                .query_one(
                    "SELECT count(*) FROM pg_namespace WHERE nspname = 'app'",
                    &[],
                )
                .await);
            assert_eq!(ok(row.try_get::<_, i64>(0)), 0);
        }
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_ordered_scans_follow_the_index() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        let idx = make_index(&mut *s, &coll, "n_1", false, &[]).await;
        // `_id` order and insertion order both differ from the index order.
        let docs: Vec<_> = [(3u16, "a"), (1, "d"), (4, "b"), (0, "e"), (2, "c")]
            .iter()
            .map(|(n, key)| with_keys(key, &[(&idx, vec![ik(*n)])]))
            .collect();
        ok(s.insert(&coll, &docs, false).await);
        let scan = |order, filter, skip, limit| ScanRequest {
            filter,
            order: Some(order),
            order_index: Some(idx.table.clone()),
            skip,
            limit,
        };
        let got = ok(s
            .scan(&coll, &scan(KeyOrder::Ascending, Predicate::True, 0, None))
            .await);
        assert_eq!(keys_of(&got), ["e", "d", "c", "a", "b"]);
        let got = ok(s
            .scan(
                &coll,
                &scan(KeyOrder::Descending, Predicate::True, 1, Some(2)),
            )
            .await);
        assert_eq!(keys_of(&got), ["a", "c"]);
        let filter = Predicate::KeyIn(vec![b"a".to_vec(), b"b".to_vec(), b"e".to_vec()]);
        let got = ok(s
            .scan(&coll, &scan(KeyOrder::Ascending, filter, 1, Some(5)))
            .await);
        assert_eq!(keys_of(&got), ["a", "b"]);
        let got = ok(s
            .scan(
                &coll,
                &scan(
                    KeyOrder::Descending,
                    range(&idx, Some((1, true)), Some((3, false))),
                    0,
                    None,
                ),
            )
            .await);
        assert_eq!(keys_of(&got), ["c", "d"]);
        drop((s, store));
        backend.finish().await;
    }
}
