//! Transaction, pool and concurrency tests: rollback, failed calls inside a transaction,
//! sessions dropped or cancelled mid-transaction, concurrent writers, pool timeouts,
//! current-thread runtimes.

use std::sync::Arc;
use std::time::Duration;

use bson::doc;

use super::super::super::{
    Predicate, ScanRequest, Store, StoreError, StoreSession, StoredDocument,
};
use super::{create, keys_of, ok, open, open_with, session, stored};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_leaves_nothing() {
    let db = fresh_db!();
    let store = open(&db).await;
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
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_spans_several_calls_and_failed_call_keeps_transaction() {
    let db = fresh_db!();
    let store = open(&db).await;
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "c").await;
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
    // A statement that fails in PostgreSQL (not before): its savepoint is rolled back.
    let gone = super::super::super::CollectionRecord {
        table: "\"app\".\"no_such_table\"".into(),
        ..coll.clone()
    };
    assert!(s
        .insert(&gone, &[stored("z", doc! {})], true)
        .await
        .is_err());
    ok(s.insert(&coll, &[stored("c", doc! {})], true).await);
    ok(s.commit().await);
    let mut other = session(&store).await;
    assert_eq!(
        keys_of(&ok(other.scan(&coll, &ScanRequest::all()).await)),
        ["a", "c"]
    );
    drop((s, other, store));
    db.drop_db().await;
}

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
async fn dropped_session_is_rolled_back() {
    let db = fresh_db!();
    let store = open_with(&db, 1, Duration::from_secs(5)).await;
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
    // No transaction was left open anywhere: another store can write the same key.
    let other = open(&db).await;
    let mut o = session(&other).await;
    assert_eq!(
        ok(o.insert(&coll, &[stored("a", doc! {})], true).await).inserted,
        1
    );
    drop((s, o, store, other));
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
async fn concurrent_writers_both_succeed() {
    let db = fresh_db!();
    let store = Arc::new(open(&db).await);
    let coll = {
        let mut s = session(&store).await;
        create(&mut s, "app", "c").await
    };
    let mut tasks = Vec::new();
    for writer in 0..4 {
        let (store, coll) = (store.clone(), coll.clone());
        tasks.push(tokio::spawn(async move {
            let mut s = store.session().await?;
            for batch in 0..20 {
                let docs: Vec<_> = (0..50)
                    .map(|i| stored(&format!("w{writer}-{batch}-{i}"), doc! {"i": i}))
                    .collect();
                s.begin().await?;
                let out = s.insert(&coll, &docs, true).await?;
                s.commit().await?;
                assert_eq!(out.inserted, 50);
            }
            Ok::<_, StoreError>(())
        }));
    }
    for task in tasks {
        ok(ok(task.await));
    }
    let mut s = session(&store).await;
    assert_eq!(ok(s.count(&coll, &Predicate::True).await), 4000);
    drop(s);
    drop(store);
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

/// The default `#[tokio::test]` runtime is current-thread; everything is async, so a
/// transaction still spans calls and a waiting writer does not block the runtime.
#[tokio::test]
async fn current_thread_runtime_works() {
    let db = fresh_db!();
    let store = open(&db).await;
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "c").await;
    ok(s.begin().await);
    ok(s.insert(&coll, &[stored("a", doc! {})], true).await);
    let mut other = session(&store).await;
    let docs = [stored("a", doc! {}), stored("b", doc! {})];
    let (second, ()) = tokio::join!(other.insert(&coll, &docs, false), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        ok(s.commit().await);
    });
    assert_eq!(ok(second).inserted, 1);
    assert_eq!(
        keys_of(&ok(s.scan(&coll, &ScanRequest::all()).await)),
        ["a", "b"]
    );
    drop((s, other, store));
    db.drop_db().await;
}
