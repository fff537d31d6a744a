//! Catalog tests: create, list, drop, rename, catalog version, reopening the store.

use bson::doc;

use super::super::super::{ScanRequest, StoreError, StoreSession};
use super::{create, keys_of, ok, open_in, session, stored, tempdir};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_list_drop() {
    let dir = tempdir();
    let store = open_in(&dir);
    let mut s = session(&store).await;
    let v0 = ok(s.catalog_version().await);
    let opts = doc! { "capped": false, "validator": { "a": { "$gt": 1 } } };
    let b = ok(s.create_collection("app", "b.with.dots", &opts).await);
    let a = create(&mut s, "app", "a").await;
    let z = create(&mut s, "other", "a").await;
    assert_eq!(b.options, opts);
    assert_eq!(b.uuid.len(), 16);
    assert_ne!(a.uuid, b.uuid);
    assert_eq!(a.uuid[6] >> 4, 4, "UUID v4 layout");
    assert!(a.table.starts_with("dgc_") && a.table != b.table && a.table != z.table);
    assert!(ok(s.catalog_version().await) >= v0 + 3);

    let listed = ok(s.list_collections().await);
    assert_eq!(listed, vec![a.clone(), b.clone(), z.clone()]);

    match s.create_collection("app", "a", &doc! {}).await {
        Err(StoreError::AlreadyExists(what)) => assert_eq!(what, "app.a"),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }

    let v1 = ok(s.catalog_version().await);
    ok(s.drop_collection(&a).await);
    assert!(ok(s.catalog_version().await) > v1);
    assert_eq!(ok(s.list_collections().await), vec![b.clone(), z.clone()]);
    // Dropping again (a stale record) is a no-op; the table is gone.
    ok(s.drop_collection(&a).await);
    assert!(s.scan(&a, &ScanRequest::all()).await.is_err());
    // The name can be reused; the new table has a new physical name.
    let a2 = create(&mut s, "app", "a").await;
    assert_ne!(a2.table, a.table);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_keeps_data_and_checks_target() {
    let dir = tempdir();
    let store = open_in(&dir);
    let mut s = session(&store).await;
    let a = create(&mut s, "app", "a").await;
    let b = create(&mut s, "app", "b").await;
    ok(s.insert(&a, &[stored("1", doc! {"x": 1})], true).await);

    match s.rename_collection(&a, "app", "b").await {
        Err(StoreError::AlreadyExists(what)) => assert_eq!(what, "app.b"),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    let v = ok(s.catalog_version().await);
    let moved = ok(s.rename_collection(&a, "archive", "a2").await);
    assert!(ok(s.catalog_version().await) > v);
    assert_eq!((moved.db.as_str(), moved.name.as_str()), ("archive", "a2"));
    assert_eq!(
        (moved.table.as_str(), &moved.uuid),
        (a.table.as_str(), &a.uuid)
    );
    assert_eq!(
        keys_of(&ok(s.scan(&moved, &ScanRequest::all()).await)),
        ["1"]
    );
    assert_eq!(
        ok(s.list_collections().await),
        vec![b.clone(), moved.clone()]
    );
    // The stale record no longer names a collection: rename fails, drop is a no-op that
    // must not drop the renamed collection's table.
    assert!(s.rename_collection(&a, "x", "y").await.is_err());
    ok(s.drop_collection(&a).await);
    assert_eq!(
        ok(s.count(&moved, &super::super::super::Predicate::True).await),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_reopening() {
    let dir = tempdir();
    let (coll, version) = {
        let store = open_in(&dir);
        let mut s = session(&store).await;
        let coll = create(&mut s, "app", "keep").await;
        ok(
            s.insert(&coll, &[stored("1", doc! {}), stored("2", doc! {})], true)
                .await,
        );
        (coll, ok(s.catalog_version().await))
    };
    let store = open_in(&dir);
    let mut s = session(&store).await;
    assert_eq!(ok(s.catalog_version().await), version);
    assert_eq!(ok(s.list_collections().await), vec![coll.clone()]);
    assert_eq!(
        keys_of(&ok(s.scan(&coll, &ScanRequest::all()).await)),
        ["1", "2"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_sizes_and_indexes() {
    let dir = tempdir();
    let store = open_in(&dir);
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "stats").await;
    let docs: Vec<_> = (0..100)
        .map(|i| stored(&format!("{i:03}"), doc! {"pad": "x".repeat(100)}))
        .collect();
    let expected: u64 = docs.iter().map(|d| d.bson.len() as u64).sum();
    ok(s.insert(&coll, &docs, true).await);
    let stats = ok(s.collection_stats(&coll).await);
    assert_eq!(stats.count, 100);
    assert_eq!(stats.data_size, expected);
    assert_eq!(stats.index_count, 1);
    assert!(stats.storage_size >= expected, "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_inside_a_transaction_commits_with_it() {
    let dir = tempdir();
    let store = open_in(&dir);
    let mut s = session(&store).await;
    let v = ok(s.catalog_version().await);
    ok(s.begin().await);
    let coll = create(&mut s, "app", "in_tx").await;
    ok(s.insert(&coll, &[stored("1", doc! {})], true).await);
    let renamed = ok(s.rename_collection(&coll, "app", "renamed").await);
    ok(s.commit().await);
    let mut other = session(&store).await;
    assert_eq!(ok(other.list_collections().await), vec![renamed.clone()]);
    assert_eq!(ok(other.catalog_version().await), v + 2);
    assert_eq!(
        keys_of(&ok(other.scan(&renamed, &ScanRequest::all()).await)),
        ["1"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_reports_errors_and_describes_itself() {
    let dir = tempdir();
    let file = dir.path().join("not_a_dir");
    ok(std::fs::write(&file, b"x"));
    let options = super::super::SqliteOptions::default();
    assert!(super::super::SqliteStore::open(&file, options).is_err());
    let store = open_in(&dir);
    use super::super::super::Store;
    assert_eq!(store.backend_name(), "sqlite");
    assert!(store.describe().ends_with(super::super::DATABASE_FILE));
    assert!(store.file().exists());
}
