//! PostgreSQL's own catalog tests: odd names (generated table names), objects docgate did not
//! create, cached statements across drop and recreate, connect errors. The catalog tests
//! every backend shares (and the schema and table names PostgreSQL chooses) are in
//! `store/conformance/catalog.rs`.

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
    let cut = "y".repeat(63);
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
        ("app", cut.as_str()),
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
    // `<name>$<n>`; names PostgreSQL cannot take as they are are `coll$<n>`, and a name of
    // 63 bytes is cut to leave room for the suffix.
    assert!(records[0].table.starts_with("\"app\".\"coll$"));
    assert!(records[1].table.starts_with("\"app\".\"Upper$"));
    assert!(records[2].table.starts_with("\"app\".\"upper$"));
    assert!(records[3].table.starts_with("\"app\".\"coll$"));
    let cut_table = records[16]
        .table
        .trim_start_matches("\"app\".\"")
        .trim_end_matches('"');
    assert_eq!(cut_table.len(), 63, "{cut_table}");
    assert!(
        cut_table.starts_with("yyyy") && cut_table.contains('$'),
        "{cut_table}"
    );
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
    assert!(
        moved.table.starts_with("\"app\".\"plain$"),
        "{}",
        moved.table
    );
    assert_eq!(ok(s.count(&moved, &Predicate::True).await), 1);
    for coll in records.iter().filter(|r| r.uuid != moved.uuid) {
        ok(s.drop_collection(coll).await);
    }
    ok(s.drop_collection(&moved).await);
    assert!(ok(s.list_collections().await).is_empty());
    drop((s, store));
    db.drop_db().await;
}

/// A catalog written by an earlier docgate, whose tables are named as their collections
/// (`people`) or `coll_<n>`: read and written as it is; replacing such a collection (a
/// rename over it, as `$out` does), and dropping and re-creating it, give tables new names,
/// never the old one again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_named_by_earlier_versions_keep_working() {
    let db = fresh_db!();
    let client = admin(&db.url).await;
    {
        let store = open(&db).await;
        let mut s = session(&store).await;
        let people = create(&mut s, "app", "people").await;
        ok(s.insert(&people, &[stored("1", doc! {})], true).await);
        let files = create(&mut s, "app", "fs.files").await;
        ok(s.insert(&files, &[stored("2", doc! {})], true).await);
        drop((s, store));
    }
    // The names an earlier version gave them.
    for (name, old) in [("people", "people"), ("fs.files", "coll_1")] {
        let row = ok(client
            .query_one(
                "SELECT table_name FROM docgate.collections WHERE db = 'app' AND name = $1",
                &[&name],
            )
            .await);
        let table: String = row.get(0);
        ok(client
            .batch_execute(&format!(
                "ALTER TABLE app.\"{table}\" RENAME TO \"{old}\";
                 UPDATE docgate.collections SET table_name = '{old}'
                     WHERE db = 'app' AND name = '{name}'"
            ))
            .await);
    }
    let store = open(&db).await;
    let mut s = session(&store).await;
    let listed = ok(s.list_collections().await);
    assert_eq!(listed.len(), 2);
    let (files, people) = (listed[0].clone(), listed[1].clone());
    assert_eq!(files.table, "\"app\".\"coll_1\"");
    assert_eq!(people.table, "\"app\".\"people\"");
    assert_eq!(
        keys_of(&ok(s.scan(&people, &ScanRequest::all()).await)),
        ["1"]
    );
    assert_eq!(
        keys_of(&ok(s.scan(&files, &ScanRequest::all()).await)),
        ["2"]
    );
    ok(s.insert(&people, &[stored("3", doc! {})], true).await);
    assert_eq!(ok(s.count(&people, &Predicate::True).await), 2);

    // Replaced as `$out` replaces it: the old table is gone, its name is not reused.
    let replacement = create(&mut s, "app", "tmp.agg_out.1").await;
    ok(s.insert(&replacement, &[stored("new", doc! {})], true)
        .await);
    ok(s.drop_collection(&people).await);
    let replaced = ok(s.rename_collection(&replacement, "app", "people").await);
    assert!(
        replaced.table.starts_with("\"app\".\"people$"),
        "{}",
        replaced.table
    );
    match s.scan(&people, &ScanRequest::all()).await {
        Err(StoreError::StaleCatalog(_)) => {}
        other => panic!("a scan of the replaced table: {other:?}"),
    }
    assert_eq!(
        keys_of(&ok(s.scan(&replaced, &ScanRequest::all()).await)),
        ["new"]
    );
    ok(s.drop_collection(&replaced).await);
    let again = create(&mut s, "app", "people").await;
    assert!(
        again.table.starts_with("\"app\".\"people$"),
        "{}",
        again.table
    );
    assert_ne!(again.table, replaced.table);
    ok(s.drop_collection(&files).await);
    let files_again = create(&mut s, "app", "fs.files").await;
    assert_ne!(files_again.table, files.table);
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
    // A new table, never the old name: a statement on the old record fails (a cursor
    // still reading the dropped collection ends) instead of reading the new collection.
    assert_ne!(again.table, coll.table);
    ok(b.insert(&again, &[stored("new", doc! {})], true).await);
    match a.scan(&coll, &ScanRequest::all()).await {
        Err(StoreError::StaleCatalog(_)) => {}
        other => panic!("a scan of the dropped table: {other:?}"),
    }
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
