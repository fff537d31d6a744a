//! Tests of the PostgreSQL backend against a real PostgreSQL server (no mocks). Shared
//! helpers live here; one file per area, the same list as the SQLite backend's tests.
//!
//! The server comes from env `DOCGATE_TEST_PG_URL` (e.g. the line printed by
//! `tests/pg_cluster.sh start DIR`). Each test creates its own database with a random name,
//! so tests run in parallel and leave each other alone; it drops it when it passes. Without
//! the variable the tests fail, saying how to start a server, unless
//! `DOCGATE_SKIP_POSTGRES=1`, which makes them return early with a note.

/// A fresh database for this test, or `return` when PostgreSQL tests are skipped.
macro_rules! fresh_db {
    () => {
        match super::fresh_db().await {
            Some(db) => db,
            None => return,
        }
    };
}

mod catalog;
mod changes;
mod documents;
mod indexes;
mod plans;
mod restart;
mod stale;
mod timing;
mod transactions;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bson::{doc, Document};
use tokio_postgres::NoTls;

use super::super::{CollectionRecord, StoreSession, StoredDocument};
use super::{PostgresOptions, PostgresSession, PostgresStore};

/// Unwraps a result in test code, with the error's message.
pub(super) fn ok<T, E: std::fmt::Debug>(r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("unexpected error: {e:?}"),
    }
}

/// True when PostgreSQL tests are to be skipped (prints a note).
pub(super) fn skipped() -> bool {
    if std::env::var("DOCGATE_SKIP_POSTGRES").is_ok_and(|v| v == "1") {
        eprintln!("note: DOCGATE_SKIP_POSTGRES=1, skipping a PostgreSQL store test");
        return true;
    }
    false
}

/// The test server's URL; panics with instructions when it is not set.
pub(super) fn server_url() -> Option<String> {
    if skipped() {
        return None;
    }
    match std::env::var("DOCGATE_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => panic!(
            "DOCGATE_TEST_PG_URL is not set. Start a throwaway PostgreSQL with\n    \
             export DOCGATE_TEST_PG_URL=$(tests/pg_cluster.sh start /tmp/docgate-pg)\n\
             (stop it with `tests/pg_cluster.sh stop /tmp/docgate-pg`), or set \
             DOCGATE_SKIP_POSTGRES=1 to skip the PostgreSQL store tests."
        ),
    }
}

/// `url` with its database name replaced by `dbname`.
pub(super) fn with_dbname(url: &str, dbname: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let head = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    format!("{head}/{dbname}{query}")
}

/// A database created for one test.
pub(super) struct TestDb {
    pub(super) url: String,
    server: String,
    name: String,
}

impl TestDb {
    /// Drops the database (and any connection still open to it).
    pub(super) async fn drop_db(self) {
        let admin = admin(&self.server).await;
        ok(admin
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.name
            ))
            .await);
    }
}

/// A plain client (not the store's) on `url`.
pub(super) async fn admin(url: &str) -> tokio_postgres::Client {
    let (client, connection) = ok(tokio_postgres::connect(url, NoTls).await);
    tokio::spawn(connection);
    client
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates a database with a random name; `None` when PostgreSQL tests are skipped.
pub(super) async fn fresh_db() -> Option<TestDb> {
    let server = server_url()?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!(
        "dg_test_{}_{}_{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let client = admin(&server).await;
    ok(client
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .await);
    Some(TestDb {
        url: with_dbname(&server, &name),
        server,
        name,
    })
}

pub(super) async fn open(db: &TestDb) -> PostgresStore {
    ok(PostgresStore::connect(&db.url, PostgresOptions::default()).await)
}

pub(super) async fn open_with(db: &TestDb, pool_max: usize, wait: Duration) -> PostgresStore {
    let options = PostgresOptions {
        pool_min: 1,
        pool_max,
        pool_wait_timeout: wait,
        statement_cache: true,
    };
    ok(PostgresStore::connect(&db.url, options).await)
}

pub(super) async fn session(store: &PostgresStore) -> PostgresSession {
    ok(store.postgres_session().await)
}

pub(super) async fn create(s: &mut PostgresSession, db: &str, name: &str) -> CollectionRecord {
    ok(s.create_collection(db, name, &Document::new()).await)
}

/// A stored document with key `key` and body `{_id: key as string, ..body}`.
pub(super) fn stored(key: &str, body: Document) -> StoredDocument {
    let mut d = doc! { "_id": key };
    d.extend(body);
    StoredDocument {
        index_keys: Vec::new(),
        key: key.as_bytes().to_vec(),
        bson: ok(d.to_vec()),
    }
}

pub(super) fn keys_of(docs: &[Vec<u8>]) -> Vec<String> {
    docs.iter()
        .map(|b| {
            let d = ok(bson::RawDocument::from_bytes(b));
            ok(d.get_str("_id")).to_owned()
        })
        .collect()
}

#[test]
fn database_names_replace_the_path() {
    assert_eq!(
        with_dbname("postgres://u@h:1/postgres", "x"),
        "postgres://u@h:1/x"
    );
    assert_eq!(
        with_dbname("postgres://u@h:1?sslmode=disable", "x"),
        "postgres://u@h:1/x?sslmode=disable"
    );
}
