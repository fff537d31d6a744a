//! SQLite's own transaction, pool and concurrency tests: recycling a connection left inside
//! a transaction, writers waiting for the one write lock, busy-lock and pool timeouts. The
//! transaction tests every backend shares are in `store/conformance/transactions.rs`.

use std::time::Duration;

use bson::doc;
use deadpool::managed::Manager as _;

use super::super::super::{Predicate, ScanRequest, Store, StoreError, StoreSession};
use super::super::conn::{open_connection, Manager};
use super::super::DATABASE_FILE;
use super::{create, keys_of, ok, open_in, open_with, session, stored, tempdir};

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
