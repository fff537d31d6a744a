//! docgate over PostgreSQL as a deployment sees it, through the official Rust `mongodb`
//! driver against real `docgate` processes: a pool of one connection serves one client's
//! commands one at a time (no command holds a connection while waiting for another), and
//! with that pool exhausted a command gets a retryable `NetworkTimeout` after
//! `--pool-wait-timeout` instead of waiting for ever.
//!
//! Each test creates a fresh database on the PostgreSQL named by env `DOCGATE_TEST_PG_URL`
//! (dropped when the test passes). `DOCGATE_SKIP_POSTGRES=1` makes every test return early
//! with a note, as the PostgreSQL store tests do. Shared helpers live in `postgres_support/`.
//!
//! Not for: two instances on one database (`postgres_instances.rs`), PostgreSQL stopping
//! under a client (`postgres_faults.rs`), the store's own behaviour
//! (`src/store/conformance`, `src/store/postgres/tests`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod postgres_support;

use std::time::{Duration, Instant};

use mongodb::bson::{doc, Bson, Document};
use mongodb::error::ErrorKind;
use mongodb::options::IndexOptions;
use mongodb::IndexModel;

use postgres_support::*;

// ---------------------------------------------------------------------------
// 3. Pool exhaustion
// ---------------------------------------------------------------------------

/// docgate with a single pooled connection and a short wait for it.
const POOL_OF_ONE: &[&str] = &[
    "--pool-min",
    "1",
    "--pool-max",
    "1",
    "--pool-wait-timeout",
    "500ms",
];

/// A pool of one connection is enough for one client doing one thing at a time: no command
/// may hold a pooled connection while it waits for a second one (which would time out here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_of_one_serves_one_client() {
    let Some(db) = TestDb::create().await else {
        return;
    };
    tokio::time::timeout(TEST_TIMEOUT, async {
        let server = Docgate::start("pool-of-one", &db.url, POOL_OF_ONE);
        let client = server.client().await;
        let app = client.database("app");
        let made = app.collection::<Document>("made");
        let implicit = app.collection::<Document>("implicit");
        let unique_k = || {
            IndexModel::builder()
                .keys(doc! {"k": 1})
                .options(IndexOptions::builder().unique(true).build())
                .build()
        };
        // Every step runs even when an earlier one failed, so one run names them all.
        let mut failed = Vec::new();
        let mut step = |what: &str, result: mongodb::error::Result<()>| {
            if let Err(e) = result {
                failed.push(format!("{what}: {}", brief(&e)));
            }
        };
        step(
            "create",
            bounded("create", app.create_collection("made")).await,
        );
        step(
            "insert into an existing collection",
            bounded("insert", made.insert_one(doc! {"_id": 1, "k": 1}))
                .await
                .map(|_| ()),
        );
        step(
            "createIndexes",
            bounded("create index", made.create_index(unique_k()))
                .await
                .map(|_| ()),
        );
        step(
            "insert with a unique index",
            bounded("insert", made.insert_one(doc! {"_id": 2, "k": 2}))
                .await
                .map(|_| ()),
        );
        step(
            "find",
            try_find_all("find", &made, doc! {}).await.map(|_| ()),
        );
        step(
            "insert creating a collection",
            bounded("insert", implicit.insert_one(doc! {"_id": 1}))
                .await
                .map(|_| ()),
        );
        let rename = doc! {"renameCollection": "app.made", "to": "app.renamed"};
        step(
            "renameCollection",
            bounded("rename", client.database("admin").run_command(rename))
                .await
                .map(|_| ()),
        );
        step(
            "drop",
            bounded("drop", app.collection::<Document>("renamed").drop()).await,
        );
        assert!(
            failed.is_empty(),
            "with --pool-max 1, one client's commands failed one at a time:\n  {}",
            failed.join("\n  ")
        );
    })
    .await
    .expect("the pool-of-one test did not finish in time");
    db.drop_db().await;
}

/// With `--pool-max 1`, one command holds the only connection (its query waits on a table
/// lock the test takes from outside docgate); a second command then gets NetworkTimeout
/// (89) with `RetryableWriteError` after about `--pool-wait-timeout`, not a hang, and
/// everything works again once the lock is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_pool_answers_a_retryable_timeout() {
    let Some(db) = TestDb::create().await else {
        return;
    };
    tokio::time::timeout(TEST_TIMEOUT, pool_exhaustion_body(&db))
        .await
        .expect("the pool exhaustion test did not finish in time");
    db.drop_db().await;
}

async fn pool_exhaustion_body(db: &TestDb) {
    // The collections are made through a docgate with an ordinary pool, so that this test
    // depends only on what happens when the pool is exhausted.
    {
        let setup = Docgate::start("setup", &db.url, &[]);
        let client = setup.client().await;
        let app = client.database("app");
        insert("setup: held", &app.collection("held"), doc! {"_id": 1}).await;
        insert("setup: other", &app.collection("other"), doc! {"_id": 1}).await;
    }
    let mut server = Docgate::start("pool", &db.url, POOL_OF_ONE);
    let client = server.client().await;
    let app = client.database("app");
    let held = app.collection::<Document>("held");
    let other = app.collection::<Document>("other");
    // Both are in the cached catalog now, and the pool works.
    assert_eq!(find_all("find held", &held, doc! {}).await.len(), 1);
    assert_eq!(find_all("find other", &other, doc! {}).await.len(), 1);

    // Lock `held`'s table from a connection of the test's own.
    let mut pg = pg_client(&db.url).await;
    let row = pg
        .query_one(
            "SELECT schema_name, table_name FROM docgate.collections \
             WHERE db = 'app' AND name = 'held'",
            &[],
        )
        .await
        .expect("find the table of app.held");
    let (schema, table): (String, String) = (row.get(0), row.get(1));
    let lock = pg.transaction().await.expect("BEGIN");
    lock.batch_execute(&format!(
        "LOCK TABLE \"{}\".\"{}\" IN ACCESS EXCLUSIVE MODE",
        schema.replace('"', "\"\""),
        table.replace('"', "\"\"")
    ))
    .await
    .expect("LOCK TABLE");

    // A find on `held` takes the only pooled connection and waits on the lock.
    let blocked = tokio::spawn({
        let held = held.clone();
        async move { try_find_all("find held (blocked)", &held, doc! {}).await }
    });
    let watcher = pg_client(&db.url).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let waiting: i64 = watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND application_name = 'docgate' \
                   AND wait_event_type = 'Lock'",
                &[],
            )
            .await
            .expect("read pg_stat_activity")
            .get(0);
        if waiting > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "docgate's find on app.held never waited on the table lock"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Commands needing a connection now get a retryable timeout after ~500 ms.
    for what in ["find other", "insert other"] {
        let began = Instant::now();
        let result = if what == "find other" {
            bounded(what, other.find_one(doc! {})).await.map(|_| ())
        } else {
            bounded(what, other.insert_one(doc! {"_id": 2}))
                .await
                .map(|_| ())
        };
        eprintln!(
            "{what} with the pool busy answered after {:?}: {result:?}",
            began.elapsed()
        );
        let e = match result {
            Ok(()) => panic!("{what} succeeded while the only connection was busy"),
            Err(e) => e,
        };
        match &*e.kind {
            ErrorKind::Command(c) => {
                assert_eq!(
                    (c.code, c.code_name.as_str()),
                    (89, "NetworkTimeout"),
                    "{what}: {e:?}"
                );
            }
            _ => panic!("{what}: expected a NetworkTimeout command error, got {e:?}"),
        }
        assert!(
            e.contains_label("RetryableWriteError"),
            "{what}: no RetryableWriteError label: {e:?}"
        );
    }

    // A new client's handshake (`hello`, with no user yet) and `ping` need no database
    // connection: they are answered while the pool is busy, so drivers keep the server
    // selectable and can retry.
    let newcomer = server.client().await;
    let pong = bounded(
        "ping from a new client with the pool busy",
        newcomer.database("admin").run_command(doc! {"ping": 1}),
    )
    .await;
    assert!(
        pong.is_ok(),
        "a new client's handshake or ping failed while the pool was busy: {pong:?}"
    );

    // Release the lock: the blocked find completes, and the pool serves again.
    lock.rollback().await.expect("ROLLBACK");
    let found = bounded("the blocked find", blocked)
        .await
        .expect("the blocked find panicked");
    assert_eq!(
        ok("the blocked find", found),
        vec![doc! {"_id": 1}],
        "the find that held the connection"
    );
    insert("insert other after", &other, doc! {"_id": 3}).await;
    let ids: Vec<Bson> = find_all("find other after", &other, doc! {})
        .await
        .iter()
        .filter_map(|d| d.get("_id").cloned())
        .collect();
    // `_id` 2 was refused before reaching the database.
    assert_eq!(ids, vec![Bson::Int32(1), Bson::Int32(3)]);
    server.assert_running();
}
