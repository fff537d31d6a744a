//! PostgreSQL's own secondary index tests: multikey notifications (LISTEN/NOTIFY), the plans
//! PostgreSQL picks for the entries tables, older catalogs upgraded and rolled-back indexes
//! leaving no table. The index tests every backend shares, and the helpers used here, are in
//! `store/conformance/index_entries.rs` and `indexes.rs`.

use std::time::Duration;

use bson::doc;

use super::super::super::conformance::index_entries::{equal, ik, make_index, range, with_keys};
use super::super::super::{KeyOrder, ScanRequest, Store, StoreSession};
use super::{admin, create, ok, open, session, stored, TestDb};

/// Number of `dgi_*` tables in the database.
async fn index_tables(db: &TestDb) -> i64 {
    let client = admin(&db.url).await;
    let row = ok(client
        .query_one(
            "SELECT count(*) FROM pg_class WHERE relname LIKE 'dgi\\_%' AND relkind = 'r'",
            &[],
        )
        .await);
    ok(row.try_get(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mark_multikey_bumps_the_version_and_notifies() {
    let db = fresh_db!();
    let watcher = open(&db).await;
    let mut rx = match watcher.catalog_changes() {
        Some(rx) => rx,
        None => panic!("the PostgreSQL store reports catalog changes"),
    };
    let store = open(&db).await;
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "c").await;
    let idx = make_index(&mut s, &coll, "a_1", false, &[]).await;
    let v = ok(s.catalog_version().await);
    ok(s.mark_multikey(&idx).await);
    let v2 = ok(s.catalog_version().await);
    assert_eq!(v2, v + 1);
    let mut last = 0;
    while last < v2 {
        last = match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Ok(version)) => version,
            other => panic!("no catalog change received: {other:?}"),
        };
    }
    assert!(ok(s.list_indexes().await)[0].multikey);
    // Already multikey: nothing changes.
    ok(s.mark_multikey(&idx).await);
    assert_eq!(ok(s.catalog_version().await), v2);
    drop((s, store, watcher));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_use_the_entries_index() {
    let db = fresh_db!();
    let store = open(&db).await;
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "plans").await;
    let idx = make_index(&mut s, &coll, "n_1", false, &[]).await;
    let docs: Vec<_> = (0..2000u16)
        .map(|i| {
            let mut d = with_keys(&format!("{i:04}"), &[(&idx, vec![ik((i * 7) % 2000)])]);
            d.bson = ok(doc! {"_id": format!("{i:04}"), "pad": "x".repeat(50)}.to_vec());
            d
        })
        .collect();
    ok(s.insert(&coll, &docs, true).await);
    ok(admin(&db.url).await.batch_execute("ANALYZE").await);
    let on_entries = |plan: &[String]| {
        plan.iter()
            .any(|l| l.contains("Index") && l.contains("dgi_"))
            && !plan.iter().any(|l| l.contains("Seq Scan"))
    };
    let request = ScanRequest {
        filter: range(&idx, Some((100, true)), Some((110, false))),
        ..ScanRequest::all()
    };
    let plan = ok(s.explain(&coll, &request).await);
    assert!(on_entries(&plan), "{plan:?}");
    assert_eq!(ok(s.scan(&coll, &request).await).len(), 10);
    for order in [KeyOrder::Ascending, KeyOrder::Descending] {
        let request = ScanRequest {
            order: Some(order),
            order_index: Some(idx.table.clone()),
            limit: Some(10),
            ..ScanRequest::all()
        };
        let plan = ok(s.explain(&coll, &request).await);
        assert!(on_entries(&plan), "{plan:?}");
        assert!(!plan.iter().any(|l| l.contains("Sort")), "{plan:?}");
        assert_eq!(ok(s.scan(&coll, &request).await).len(), 10);
    }
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn older_catalogs_are_upgraded_and_rolled_back_indexes_vanish() {
    let db = fresh_db!();
    let store = open(&db).await;
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "c").await;
    ok(s.insert(&coll, &[stored("a", doc! {})], true).await);
    drop((s, store));
    // A catalog written before secondary indexes existed.
    ok(admin(&db.url)
        .await
        .batch_execute("DROP TABLE docgate.indexes")
        .await);
    let store = open(&db).await;
    let mut s = session(&store).await;
    assert!(ok(s.list_indexes().await).is_empty());
    ok(s.begin().await);
    make_index(&mut s, &coll, "a_1", false, &[("a", vec![ik(1)])]).await;
    assert_eq!(ok(s.list_indexes().await).len(), 1);
    ok(s.rollback().await);
    assert!(ok(s.list_indexes().await).is_empty());
    assert_eq!(index_tables(&db).await, 0);
    let idx = make_index(&mut s, &coll, "a_1", false, &[("a", vec![ik(1)])]).await;
    assert_eq!(equal(&mut s, &coll, &idx, 1).await, ["a"]);
    drop((s, store));
    db.drop_db().await;
}
