//! PostgreSQL's own transaction, pool and concurrency tests: without the statement cache,
//! empty and nested transactions, a failed read aborting the transaction, cancelled calls,
//! a writer waiting for the key another transaction holds, pool timeouts. The transaction
//! tests every backend shares are in `store/conformance/transactions.rs`.

use std::sync::Arc;
use std::time::Duration;

use bson::doc;

use super::super::super::{Predicate, ScanRequest, Store, StoreError, StoreSession};
use super::{create, keys_of, ok, open, open_with, session, stored};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_statement_cache_and_with_empty_transactions() {
    let db = fresh_db!();
    let options = super::super::PostgresOptions {
        statement_cache: false,
        ..super::super::PostgresOptions::default()
    };
    let store = ok(super::super::PostgresStore::connect(&db.url, options).await);
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "c").await;
    for round in 0..3 {
        let key = format!("k{round}");
        ok(s.begin().await);
        ok(s.insert(&coll, &[stored(&key, doc! {})], false).await);
        assert_eq!(
            ok(s.replace(&coll, &[stored(&key, doc! {"v": 1})]).await),
            1
        );
        ok(s.commit().await);
    }
    assert_eq!(ok(s.count(&coll, &Predicate::True).await), 3);
    // begin/commit and begin/rollback with nothing in between.
    ok(s.begin().await);
    ok(s.commit().await);
    ok(s.begin().await);
    ok(s.rollback().await);
    assert!(s.begin().await.is_ok());
    assert!(s.begin().await.is_err(), "no nested begin");
    ok(s.rollback().await);
    assert_eq!(
        ok(s.delete(&coll, &[b"k0".to_vec(), b"k1".to_vec()]).await),
        2
    );
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_read_aborts_the_transaction_and_commit_says_so() {
    let db = fresh_db!();
    let store = open(&db).await;
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "c").await;
    let gone = super::super::super::CollectionRecord {
        table: "\"app\".\"no_such_table\"".into(),
        ..coll.clone()
    };
    ok(s.begin().await);
    ok(s.insert(&coll, &[stored("a", doc! {})], true).await);
    assert!(s.scan(&gone, &ScanRequest::all()).await.is_err());
    assert!(s.commit().await.is_err());
    // The session is usable again, and nothing was written.
    assert_eq!(ok(s.count(&coll, &Predicate::True).await), 0);
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_call_inside_a_transaction_is_rolled_back() {
    let db = fresh_db!();
    let store = open_with(&db, 1, Duration::from_secs(5)).await;
    let coll = {
        let mut s = session(&store).await;
        create(&mut s, "app", "c").await
    };
    let docs: Vec<_> = (0..20_000)
        .map(|i| stored(&format!("{i:06}"), doc! {"pad": "y".repeat(200)}))
        .collect();
    {
        let mut s = session(&store).await;
        ok(s.begin().await);
        ok(s.insert(&coll, &docs[..10], true).await);
        let cut = tokio::time::timeout(Duration::from_millis(1), s.insert(&coll, &docs, true));
        let _ = cut.await;
    }
    let mut s = session(&store).await;
    assert_eq!(ok(s.count(&coll, &Predicate::True).await), 0);
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_key_writer_waits_for_open_transaction() {
    let db = fresh_db!();
    let store = Arc::new(open(&db).await);
    let mut holder = session(&store).await;
    let coll = create(&mut holder, "app", "c").await;
    ok(holder.begin().await);
    ok(holder
        .insert(&coll, &[stored("k", doc! {"v": 1})], true)
        .await);
    let waiting = {
        let (store, coll) = (store.clone(), coll.clone());
        tokio::spawn(async move {
            let mut s = store.session().await?;
            s.insert(
                &coll,
                &[stored("k", doc! {"v": 2}), stored("m", doc! {})],
                false,
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Readers are not blocked by the writer and do not see its rows.
    let mut reader = session(&store).await;
    assert_eq!(ok(reader.count(&coll, &Predicate::True).await), 0);
    assert!(
        !waiting.is_finished(),
        "the second writer waits for the key"
    );
    ok(holder.commit().await);
    let out = ok(ok(waiting.await));
    assert_eq!((out.conflicts, out.inserted), (vec![0], 1));
    assert_eq!(
        keys_of(&ok(reader.scan(&coll, &ScanRequest::all()).await)),
        ["k", "m"]
    );
    drop((holder, reader));
    drop(store);
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_pool_times_out_as_pool_timeout() {
    let db = fresh_db!();
    let store = open_with(&db, 1, Duration::from_millis(200)).await;
    let held = session(&store).await;
    let started = std::time::Instant::now();
    match store.session().await {
        Err(StoreError::PoolTimeout(d)) => assert_eq!(d, Duration::from_millis(200)),
        Err(e) => panic!("expected PoolTimeout, got {e:?}"),
        Ok(_) => panic!("expected PoolTimeout, got a session"),
    }
    assert!(started.elapsed() >= Duration::from_millis(150));
    drop(held);
    let mut s = session(&store).await;
    ok(s.catalog_version().await);
    drop((s, store));
    db.drop_db().await;
}
