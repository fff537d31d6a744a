//! Catalog tests: create, list, drop, rename (odd names included), catalog version, schema
//! and table names, a new store on the same database, stats, connect errors.

use std::time::Duration;

use bson::doc;

use super::super::super::{Predicate, ScanRequest, Store, StoreError, StoreSession};
use super::super::{PostgresOptions, PostgresStore};
use super::{admin, create, keys_of, ok, open, session, stored};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_list_drop() {
    let db = fresh_db!();
    let store = open(&db).await;
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
    assert_eq!(a.table, "\"app\".\"a\"");
    assert_eq!(z.table, "\"other\".\"a\"");
    assert!(b.table.starts_with("\"app\".\"coll_"), "{}", b.table);
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
    let v2 = ok(s.catalog_version().await);
    ok(s.drop_collection(&a).await);
    assert_eq!(ok(s.catalog_version().await), v2);
    assert!(s.scan(&a, &ScanRequest::all()).await.is_err());
    // The name can be reused; the stale record cannot drop the new collection.
    let a2 = create(&mut s, "app", "a").await;
    ok(s.insert(&a2, &[stored("1", doc! {})], true).await);
    ok(s.drop_collection(&a).await);
    assert_eq!(ok(s.count(&a2, &Predicate::True).await), 1);
    // Dropping the last collection of a database drops its schema.
    ok(s.drop_collection(&z).await);
    let client = admin(&db.url).await;
    let schemas = ok(client
        .query("SELECT 1 FROM pg_namespace WHERE nspname = 'other'", &[])
        .await);
    assert!(schemas.is_empty());
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_names_get_generated_names_and_work() {
    let db = fresh_db!();
    let store = open(&db).await;
    let mut s = session(&store).await;
    let long = "x".repeat(64);
    let long_db = "d".repeat(70);
    let names: Vec<(&str, &str)> = vec![
        ("app", long.as_str()),
        ("app", "Upper"),
        ("app", "upper"), // equal to "Upper" ignoring case
        ("app", "fs.files"),
        ("app", "données"),
        ("app", "pg_thing"),
        ("app", "a\"quote"),
        ("app", "dg_tmp_1"),
        ("public", "c"),
        ("pg_catalog", "c"),
        ("docgate", "c"),
        ("Mixed", "c"),
        ("mixed", "c"),
        ("my.db", "c"),
        ("数据", "c"),
        (long_db.as_str(), "c"),
    ];
    let mut records = Vec::new();
    for (i, (dbname, name)) in names.iter().enumerate() {
        let coll = create(&mut s, dbname, name).await;
        ok(
            s.insert(&coll, &[stored(&i.to_string(), doc! {"i": i as i32})], true)
                .await,
        );
        records.push(coll);
    }
    let tables: std::collections::HashSet<String> =
        records.iter().map(|r| r.table.to_lowercase()).collect();
    assert_eq!(
        tables.len(),
        records.len(),
        "no two collections share a table"
    );
    assert_eq!(records[1].table, "\"app\".\"Upper\"");
    assert!(records[2].table.starts_with("\"app\".\"coll_"));
    assert!(records[11].table.starts_with("\"Mixed\"."));
    assert!(records[12].table.starts_with("\"db_"));
    for (i, coll) in records.iter().enumerate() {
        assert_eq!(
            keys_of(&ok(s.scan(coll, &ScanRequest::all()).await)),
            [i.to_string()]
        );
    }
    let mut listed: Vec<(String, String)> = ok(s.list_collections().await)
        .into_iter()
        .map(|r| (r.db, r.name))
        .collect();
    let mut expected: Vec<(String, String)> = names
        .iter()
        .map(|(d, n)| (d.to_string(), n.to_string()))
        .collect();
    listed.sort();
    expected.sort();
    assert_eq!(listed, expected);
    // Rename across databases with odd names, keeping data.
    let moved = ok(s.rename_collection(&records[4], "数据", "fs.chunks").await);
    assert_eq!(
        keys_of(&ok(s.scan(&moved, &ScanRequest::all()).await)),
        ["4"]
    );
    let moved = ok(s.rename_collection(&moved, "app", "plain").await);
    assert_eq!(moved.table, "\"app\".\"plain\"");
    assert_eq!(ok(s.count(&moved, &Predicate::True).await), 1);
    for coll in records.iter().filter(|r| r.uuid != moved.uuid) {
        ok(s.drop_collection(coll).await);
    }
    ok(s.drop_collection(&moved).await);
    assert!(ok(s.list_collections().await).is_empty());
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_objects_are_left_alone() {
    let db = fresh_db!();
    let client = admin(&db.url).await;
    ok(client
        .batch_execute(
            "CREATE SCHEMA theirs; CREATE TABLE theirs.t (x int); CREATE TABLE public.c (x int)",
        )
        .await);
    let store = open(&db).await;
    let mut s = session(&store).await;
    // A schema docgate did not create is not taken over.
    let coll = create(&mut s, "theirs", "t").await;
    assert!(coll.table.starts_with("\"db_"), "{}", coll.table);
    ok(s.insert(&coll, &[stored("1", doc! {})], true).await);
    ok(s.drop_collection(&coll).await);
    let rows = ok(client.query("SELECT count(*) FROM theirs.t", &[]).await);
    assert_eq!(rows.len(), 1);
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_statements_follow_drop_and_recreate() {
    let db = fresh_db!();
    let store = open(&db).await;
    let mut a = session(&store).await;
    let mut b = session(&store).await;
    let coll = create(&mut a, "app", "c").await;
    ok(a.insert(&coll, &[stored("old", doc! {})], true).await);
    // Session a prepares (and caches) its statements on the first table.
    assert_eq!(
        keys_of(&ok(a.scan(&coll, &ScanRequest::all()).await)),
        ["old"]
    );
    ok(b.drop_collection(&coll).await);
    let again = create(&mut b, "app", "c").await;
    assert_eq!(again.table, coll.table);
    ok(b.insert(&again, &[stored("new", doc! {})], true).await);
    assert_eq!(
        keys_of(&ok(a.scan(&again, &ScanRequest::all()).await)),
        ["new"]
    );
    ok(a.insert(&again, &[stored("newer", doc! {})], true).await);
    assert_eq!(ok(b.count(&again, &Predicate::True).await), 2);
    drop((a, b, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_keeps_data_and_checks_target() {
    let db = fresh_db!();
    let store = open(&db).await;
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
    assert_eq!(moved.table, "\"archive\".\"a2\"");
    assert_eq!(moved.uuid, a.uuid);
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
    assert_eq!(ok(s.count(&moved, &Predicate::True).await), 1);
    // Within one schema, and back.
    let back = ok(s.rename_collection(&moved, "archive", "a3").await);
    assert_eq!(back.table, "\"archive\".\"a3\"");
    let back = ok(s.rename_collection(&back, "app", "a").await);
    assert_eq!(back.table, "\"app\".\"a\"");
    assert_eq!(ok(s.count(&back, &Predicate::True).await), 1);
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_a_new_store() {
    let db = fresh_db!();
    let (coll, version) = {
        let store = open(&db).await;
        let mut s = session(&store).await;
        let coll = create(&mut s, "app", "keep").await;
        ok(
            s.insert(&coll, &[stored("1", doc! {}), stored("2", doc! {})], true)
                .await,
        );
        (coll, ok(s.catalog_version().await))
    };
    let store = open(&db).await;
    let mut s = session(&store).await;
    assert_eq!(ok(s.catalog_version().await), version);
    assert_eq!(ok(s.list_collections().await), vec![coll.clone()]);
    assert_eq!(
        keys_of(&ok(s.scan(&coll, &ScanRequest::all()).await)),
        ["1", "2"]
    );
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_bootstraps_and_creates() {
    let db = fresh_db!();
    let url = db.url.clone();
    let mut tasks = Vec::new();
    for i in 0..4 {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let store = PostgresStore::connect(&url, PostgresOptions::default()).await?;
            let mut s = store.postgres_session().await?;
            let mine = s
                .create_collection("app", &format!("c{i}"), &doc! {})
                .await?;
            let shared = s.create_collection("app", "shared", &doc! {}).await;
            Ok::<_, StoreError>((mine, shared.is_ok()))
        }));
    }
    let mut winners = 0;
    for task in tasks {
        let (_, won) = ok(ok(task.await));
        winners += usize::from(won);
    }
    assert_eq!(winners, 1, "exactly one create of app.shared succeeds");
    let store = open(&db).await;
    let mut s = session(&store).await;
    assert_eq!(ok(s.list_collections().await).len(), 5);
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_sizes_and_indexes() {
    let db = fresh_db!();
    let store = open(&db).await;
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
    drop((s, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_inside_a_transaction_commits_with_it() {
    let db = fresh_db!();
    let store = open(&db).await;
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
    drop((s, other, store));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_reports_errors_and_describes_itself() {
    let db = fresh_db!();
    let options = PostgresOptions {
        pool_wait_timeout: Duration::from_secs(2),
        ..PostgresOptions::default()
    };
    // Nothing listens on port 1.
    match PostgresStore::connect("postgres://u:secret@127.0.0.1:1/x", options.clone()).await {
        Err(StoreError::Unavailable(text)) => assert!(!text.contains("secret"), "{text}"),
        Err(e) => panic!("expected Unavailable, got {e:?}"),
        Ok(_) => panic!("expected Unavailable, got a store"),
    }
    match PostgresStore::connect("not a url://", options.clone()).await {
        Err(StoreError::Database(_)) => {}
        Err(e) => panic!("expected Database, got {e:?}"),
        Ok(_) => panic!("expected an error, got a store"),
    }
    let with_password = db.url.replacen("postgres@", "postgres:hunter2@", 1);
    let store = ok(PostgresStore::connect(&with_password, options).await);
    assert_eq!(store.backend_name(), "postgres");
    let text = store.describe();
    assert!(text.starts_with("postgres postgres@127.0.0.1:"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    drop(store);
    db.drop_db().await;
}
