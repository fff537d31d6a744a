//! PostgreSQL's own catalog tests: odd names (generated table names), objects docgate did not
//! create, cached statements across drop and recreate, concurrent bootstraps, connect
//! errors. The catalog tests every backend shares (and the schema and table names PostgreSQL
//! chooses) are in `store/conformance/catalog.rs`.

use std::time::Duration;

use bson::doc;

use super::super::super::{Predicate, ScanRequest, Store, StoreError, StoreSession};
use super::super::{PostgresOptions, PostgresStore};
use super::{admin, create, keys_of, ok, open, session, stored};

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
