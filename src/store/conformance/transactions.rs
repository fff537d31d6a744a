//! Transaction, pool and concurrency tests on every backend: rollback, failed calls inside a
//! transaction, sessions dropped mid-transaction, concurrent writers, current-thread
//! runtimes. How each backend makes writers wait (SQLite's one write lock, PostgreSQL's row
//! locks), recycling, cancellation and pool timeouts stay in the backends' own tests.

use std::sync::Arc;
use std::time::Duration;

use bson::doc;

use super::super::{CollectionRecord, Predicate, ScanRequest, Store, StoreError, StoredDocument};
use super::{backends, create, keys_of, ok, stored, BackendKind};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_leaves_nothing() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let keep = create(&mut *s, "app", "keep").await;
        let v = ok(s.catalog_version().await);
        ok(s.begin().await);
        ok(s.insert(&keep, &[stored("a", doc! {})], true).await);
        let temp = create(&mut *s, "app", "temp").await;
        ok(s.insert(&temp, &[stored("b", doc! {})], true).await);
        // Inside the transaction the session sees its own writes.
        assert_eq!(ok(s.count(&keep, &Predicate::True).await), 1);
        assert!(ok(s.catalog_version().await) > v);
        ok(s.rollback().await);
        assert_eq!(ok(s.count(&keep, &Predicate::True).await), 0);
        assert_eq!(ok(s.list_collections().await), vec![keep.clone()]);
        assert_eq!(ok(s.catalog_version().await), v);
        assert!(s.scan(&temp, &ScanRequest::all()).await.is_err());
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_spans_several_calls_and_failed_call_keeps_transaction() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        ok(s.begin().await);
        ok(s.insert(&coll, &[stored("a", doc! {})], true).await);
        assert!(matches!(
            s.create_collection("app", "c", &doc! {}).await,
            Err(StoreError::AlreadyExists(_))
        ));
        let bad = StoredDocument {
            index_keys: Vec::new(),
            key: b"x".to_vec(),
            bson: vec![1],
        };
        assert!(s
            .insert(&coll, &[stored("b", doc! {}), bad], false)
            .await
            .is_err());
        if backend.kind == BackendKind::Postgres {
            // A statement that fails in PostgreSQL (not before): its savepoint is rolled
            // back.
            let gone = CollectionRecord {
                table: "\"app\".\"no_such_table\"".into(),
                ..coll.clone()
            };
            assert!(s
                .insert(&gone, &[stored("z", doc! {})], true)
                .await
                .is_err());
        }
        ok(s.insert(&coll, &[stored("c", doc! {})], true).await);
        ok(s.commit().await);
        let mut other = ok(store.session().await);
        assert_eq!(
            keys_of(&ok(other.scan(&coll, &ScanRequest::all()).await)),
            ["a", "c"]
        );
        drop((s, other, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_session_is_rolled_back() {
    for backend in backends().await {
        let store = backend.open_with(1, Duration::from_secs(5)).await;
        let coll = {
            let mut s = ok(store.session().await);
            create(&mut *s, "app", "c").await
        };
        {
            let mut s = ok(store.session().await);
            ok(s.begin().await);
            ok(s.insert(&coll, &[stored("a", doc! {})], true).await);
            // Dropped here, inside the transaction.
        }
        // The only connection is handed out again, usable and without the insert.
        let mut s = ok(store.session().await);
        assert_eq!(ok(s.count(&coll, &Predicate::True).await), 0);
        ok(s.insert(&coll, &[stored("b", doc! {})], true).await);
        assert_eq!(ok(s.count(&coll, &Predicate::True).await), 1);
        // No transaction was left open anywhere: another store can write the same key.
        let other = backend.open().await;
        let mut o = ok(other.session().await);
        assert_eq!(
            ok(o.insert(&coll, &[stored("a", doc! {})], true).await).inserted,
            1
        );
        drop((s, o, store, other));
        backend.finish().await;
    }
}

/// `writers` tasks each insert 20 batches of 50 documents, each batch in a transaction of
/// its own when `in_transactions`, else as its own statement.
async fn concurrent_writers(store: Arc<dyn Store>, writers: usize, in_transactions: bool) {
    let coll = {
        let mut s = ok(store.session().await);
        create(&mut *s, "app", &format!("c{writers}")).await
    };
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let (store, coll) = (store.clone(), coll.clone());
        tasks.push(tokio::spawn(async move {
            let mut s = store.session().await?;
            for batch in 0..20 {
                let docs: Vec<_> = (0..50)
                    .map(|i| stored(&format!("w{writer}-{batch}-{i}"), doc! {"i": i}))
                    .collect();
                if in_transactions {
                    s.begin().await?;
                }
                let out = s.insert(&coll, &docs, true).await?;
                if in_transactions {
                    s.commit().await?;
                }
                assert_eq!(out.inserted, 50);
            }
            Ok::<_, StoreError>(())
        }));
    }
    for task in tasks {
        ok(ok(task.await));
    }
    let mut s = ok(store.session().await);
    assert_eq!(
        ok(s.count(&coll, &Predicate::True).await),
        writers as u64 * 1000
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_both_succeed() {
    for backend in backends().await {
        let store: Arc<dyn Store> = Arc::from(backend.open().await);
        concurrent_writers(store.clone(), 2, false).await;
        concurrent_writers(store.clone(), 4, true).await;
        drop(store);
        backend.finish().await;
    }
}

/// The default `#[tokio::test]` runtime is current-thread: a transaction still spans calls,
/// and a second writer that waits (SQLite: for the write lock, through spawn_blocking;
/// PostgreSQL: for the key) does not block the runtime, which lets the holder commit.
#[tokio::test]
async fn current_thread_runtime_works() {
    for backend in backends().await {
        let store = backend.open().await;
        // The second writer's batch: a new key alone (ordered), or with the held one.
        let cases = [
            ("c1", vec![stored("b", doc! {})], true),
            (
                "c2",
                vec![stored("a", doc! {}), stored("b", doc! {})],
                false,
            ),
        ];
        for (name, docs, ordered) in cases {
            let mut s = ok(store.session().await);
            let coll = create(&mut *s, "app", name).await;
            ok(s.begin().await);
            ok(s.insert(&coll, &[stored("a", doc! {})], true).await);
            let mut other = ok(store.session().await);
            let (second, ()) = tokio::join!(other.insert(&coll, &docs, ordered), async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                ok(s.commit().await);
            });
            assert_eq!(ok(second).inserted, 1);
            assert_eq!(
                keys_of(&ok(s.scan(&coll, &ScanRequest::all()).await)),
                ["a", "b"]
            );
        }
        drop(store);
        backend.finish().await;
    }
}
