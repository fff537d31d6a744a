//! Catalog change notifications: a change committed through one `PostgresStore` reaches the
//! `catalog_changes` receivers of another store on the same database, with the new version;
//! rolled-back changes send nothing.

use std::time::Duration;

use tokio::sync::broadcast::Receiver;

use super::super::super::{Store, StoreSession};
use super::{create, ok, open, session};

/// The next version received within a few seconds.
async fn next(rx: &mut Receiver<i64>) -> i64 {
    match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
        Ok(Ok(v)) => v,
        other => panic!("no catalog change received: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_by_another_store_are_broadcast() {
    let db = fresh_db!();
    let watcher = open(&db).await;
    let mut rx = match watcher.catalog_changes() {
        Some(rx) => rx,
        None => panic!("the PostgreSQL store reports catalog changes"),
    };
    let writer = open(&db).await;
    let mut s = session(&writer).await;
    // `connect` returned once the watcher's LISTEN was in place.
    let coll = create(&mut s, "app", "c").await;
    let v1 = ok(s.catalog_version().await);
    assert_eq!(next(&mut rx).await, v1);

    // Nothing for a rolled-back change; the next committed one arrives with its version.
    ok(s.begin().await);
    create(&mut s, "app", "temp").await;
    ok(s.rollback().await);
    let renamed = ok(s.rename_collection(&coll, "app", "d").await);
    let v2 = ok(s.catalog_version().await);
    assert_eq!(next(&mut rx).await, v2);
    assert_eq!(v2, v1 + 1);

    // A transaction with two changes notifies once it commits.
    ok(s.begin().await);
    ok(s.drop_collection(&renamed).await);
    create(&mut s, "app", "e").await;
    assert!(rx.try_recv().is_err(), "nothing before commit");
    ok(s.commit().await);
    let v3 = ok(s.catalog_version().await);
    let mut last = next(&mut rx).await;
    while last < v3 {
        last = next(&mut rx).await;
    }
    assert_eq!(last, v3);
    drop((s, writer, watcher));
    db.drop_db().await;
}
