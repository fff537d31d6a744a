//! Transaction, pool and concurrency tests: rollback, sessions dropped mid-transaction,
//! recycling, concurrent writers, pool timeouts, current-thread runtimes.

use std::time::Duration;

use bson::doc;
use deadpool::managed::Manager as _;

use super::super::super::{Predicate, ScanRequest, Store, StoreError, StoreSession};
use super::super::conn::{open_connection, Manager};
use super::super::DATABASE_FILE;
use super::{create, keys_of, ok, open_in, open_with, session, stored, tempdir};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_leaves_nothing() {
    let dir = tempdir();
    let store = open_in(&dir);
    let mut s = session(&store).await;
    let keep = create(&mut s, "app", "keep").await;
    let v = ok(s.catalog_version().await);
    ok(s.begin().await);
    ok(s.insert(&keep, &[stored("a", doc! {})], true).await);
    let temp = create(&mut s, "app", "temp").await;
    ok(s.insert(&temp, &[stored("b", doc! {})], true).await);
    // Inside the transaction the session sees its own writes.
    assert_eq!(ok(s.count(&keep, &Predicate::True).await), 1);
    assert!(ok(s.catalog_version().await) > v);
    ok(s.rollback().await);
    assert_eq!(ok(s.count(&keep, &Predicate::True).await), 0);
    assert_eq!(ok(s.list_collections().await), vec![keep.clone()]);
    assert_eq!(ok(s.catalog_version().await), v);
    assert!(s.scan(&temp, &ScanRequest::all()).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_spans_several_calls_and_failed_call_keeps_transaction() {
    let dir = tempdir();
    let store = open_in(&dir);
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "c").await;
    ok(s.begin().await);
    ok(s.insert(&coll, &[stored("a", doc! {})], true).await);
    assert!(matches!(
        s.create_collection("app", "c", &doc! {}).await,
        Err(StoreError::AlreadyExists(_))
    ));
    let bad = super::super::super::StoredDocument {
        index_keys: Vec::new(),
        key: b"x".to_vec(),
        bson: vec![1],
    };
    assert!(s
        .insert(&coll, &[stored("b", doc! {}), bad], false)
        .await
        .is_err());
    ok(s.insert(&coll, &[stored("c", doc! {})], true).await);
    ok(s.commit().await);
    let mut other = session(&store).await;
    assert_eq!(
        keys_of(&ok(other.scan(&coll, &ScanRequest::all()).await)),
        ["a", "c"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_session_is_rolled_back() {
    let dir = tempdir();
    let store = open_with(&dir, 1, Duration::from_secs(5));
    let coll = {
        let mut s = session(&store).await;
        create(&mut s, "app", "c").await
    };
    {
        let mut s = session(&store).await;
        ok(s.begin().await);
        ok(s.insert(&coll, &[stored("a", doc! {})], true).await);
        // Dropped here, inside the transaction.
    }
    // The only connection is handed out again, usable and without the insert.
    let mut s = session(&store).await;
    assert_eq!(ok(s.count(&coll, &Predicate::True).await), 0);
    ok(s.insert(&coll, &[stored("b", doc! {})], true).await);
    assert_eq!(ok(s.count(&coll, &Predicate::True).await), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recycle_rolls_back_an_open_transaction() {
    let dir = tempdir();
    let store = open_in(&dir); // creates the directory and the catalog
    let file = dir.path().join("data").join(DATABASE_FILE);
    let manager = Manager::new(file.clone(), Duration::from_secs(1));
    let mut conn = ok(manager.create().await);
    ok(conn.execute_batch("BEGIN IMMEDIATE; UPDATE dg_catalog SET version = 999"));
    assert!(!conn.is_autocommit());
    let metrics = deadpool::managed::Metrics::default();
    assert!(manager.recycle(&mut conn, &metrics).await.is_ok());
    assert!(conn.is_autocommit());
    let mut s = session(&store).await;
    assert_ne!(ok(s.catalog_version().await), 999);
    // A second, plain connection can write: the lock is free.
    let plain = ok(open_connection(&file, Duration::from_secs(1)));
    ok(plain.execute_batch("BEGIN IMMEDIATE; ROLLBACK"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_both_succeed() {
    let dir = tempdir();
    let store = std::sync::Arc::new(open_in(&dir));
    let coll = {
        let mut s = session(&store).await;
        create(&mut s, "app", "c").await
    };
    let mut tasks = Vec::new();
    for writer in 0..2 {
        let (store, coll) = (store.clone(), coll.clone());
        tasks.push(tokio::spawn(async move {
            let mut s = store.session().await?;
            for batch in 0..20 {
                let docs: Vec<_> = (0..50)
                    .map(|i| stored(&format!("w{writer}-{batch}-{i}"), doc! {"i": i}))
                    .collect();
                let out = s.insert(&coll, &docs, true).await?;
                assert_eq!(out.inserted, 50);
            }
            Ok::<_, StoreError>(())
        }));
    }
    for task in tasks {
        ok(ok(task.await));
    }
    let mut s = session(&store).await;
    assert_eq!(ok(s.count(&coll, &Predicate::True).await), 2000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_waits_for_open_transaction() {
    let dir = tempdir();
    let store = std::sync::Arc::new(open_in(&dir));
    let mut holder = session(&store).await;
    let coll = create(&mut holder, "app", "c").await;
    ok(holder.begin().await);
    ok(holder
        .insert(&coll, &[stored("first", doc! {})], true)
        .await);
    let waiting = {
        let (store, coll) = (store.clone(), coll.clone());
        tokio::spawn(async move {
            let mut s = store.session().await?;
            s.insert(&coll, &[stored("second", doc! {})], true).await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Readers are not blocked by the writer (WAL).
    let mut reader = session(&store).await;
    assert_eq!(ok(reader.count(&coll, &Predicate::True).await), 0);
    ok(holder.commit().await);
    assert_eq!(ok(ok(waiting.await)).inserted, 1);
    assert_eq!(
        keys_of(&ok(reader.scan(&coll, &ScanRequest::all()).await)),
        ["first", "second"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_lock_times_out_as_unavailable_and_pool_as_pool_timeout() {
    let dir = tempdir();
    let store = open_with(&dir, 2, Duration::from_millis(200));
    let mut holder = session(&store).await;
    let coll = create(&mut holder, "app", "c").await;
    ok(holder.begin().await);
    let mut other = session(&store).await;
    match other.insert(&coll, &[stored("x", doc! {})], true).await {
        Err(StoreError::Unavailable(_)) => {}
        res => panic!("expected Unavailable, got {res:?}"),
    }
    match store.session().await {
        Err(StoreError::PoolTimeout(d)) => assert_eq!(d, Duration::from_millis(200)),
        Err(e) => panic!("expected PoolTimeout, got {e:?}"),
        Ok(_) => panic!("expected PoolTimeout, got a session"),
    }
    ok(holder.rollback().await);
    ok(other.insert(&coll, &[stored("x", doc! {})], true).await);
}

/// The default `#[tokio::test]` runtime is current-thread: calls go through spawn_blocking,
/// and a transaction still spans calls.
#[tokio::test]
async fn current_thread_runtime_works() {
    let dir = tempdir();
    let store = open_in(&dir);
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "c").await;
    ok(s.begin().await);
    ok(s.insert(&coll, &[stored("a", doc! {})], true).await);
    // A second writer waits without blocking the runtime, which lets the holder commit.
    let mut other = session(&store).await;
    let docs = [stored("b", doc! {})];
    let (second, ()) = tokio::join!(other.insert(&coll, &docs, true), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        ok(s.commit().await);
    });
    assert_eq!(ok(second).inserted, 1);
    assert_eq!(
        keys_of(&ok(s.scan(&coll, &ScanRequest::all()).await)),
        ["a", "b"]
    );
}
