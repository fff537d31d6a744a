//! Shared helpers of the docgate-on-PostgreSQL deployment tests (`postgres_instances.rs`,
//! `postgres_faults.rs`, `postgres_pool.rs`): skipping when `DOCGATE_SKIP_POSTGRES=1`, a
//! fresh database per test on the PostgreSQL named by `DOCGATE_TEST_PG_URL`, real `docgate`
//! processes over a PostgreSQL URL with extra flags (started by `tests/common/launcher.rs`,
//! included here with `#[path]`), and small driver helpers that fail a test (instead of
//! hanging it) when docgate does not answer.
//!
//! Not for assertions: those live in the test files. Included with `mod postgres_support;`.
//! It does not include `tests/common` (whose own harness test would then run in every binary
//! that includes it).

#![allow(dead_code)]

// A test that also includes `tests/common` loads the launcher twice; each copy is the same.
#[allow(clippy::duplicate_mod)]
#[path = "../common/launcher.rs"]
pub mod launcher;

use std::future::IntoFuture;
use std::process::Child;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mongodb::bson::{doc, Document};
use mongodb::error::{Error, ErrorKind, WriteFailure};
use mongodb::options::IndexOptions;
use mongodb::{Client, Collection, Database, IndexModel};
use tempfile::TempDir;

use launcher::Launch;
use tokio_postgres::NoTls;

/// How long a freshly spawned docgate gets to say it listens.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest any single driver call may take before the test calls it a hang.
pub const OP_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest a whole test may take.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(240);

// ---------------------------------------------------------------------------
// PostgreSQL: skipping, fresh databases, the throwaway cluster
// ---------------------------------------------------------------------------

/// True when PostgreSQL tests are to be skipped (prints a note).
pub fn skipped() -> bool {
    if std::env::var("DOCGATE_SKIP_POSTGRES").is_ok_and(|v| v == "1") {
        eprintln!("note: DOCGATE_SKIP_POSTGRES=1, skipping a docgate-on-PostgreSQL test");
        return true;
    }
    false
}

/// `DOCGATE_TEST_PG_URL`, `None` when skipped; panics with instructions when unset.
pub fn server_url() -> Option<String> {
    if skipped() {
        return None;
    }
    match std::env::var("DOCGATE_TEST_PG_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_owned()),
        _ => panic!(
            "DOCGATE_TEST_PG_URL is not set. Start a throwaway PostgreSQL with\n    \
             export DOCGATE_TEST_PG_URL=$(tests/pg_cluster.sh start /tmp/docgate-pg)\n\
             (stop it with `tests/pg_cluster.sh stop /tmp/docgate-pg`), or set \
             DOCGATE_SKIP_POSTGRES=1 to skip the PostgreSQL tests."
        ),
    }
}

/// `url` with its database name replaced by `dbname`, keeping any `?query`.
pub fn with_dbname(url: &str, dbname: &str) -> String {
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

/// A plain PostgreSQL client (not docgate's) on `url`.
pub async fn pg_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect to PostgreSQL for the test: {e}"));
    tokio::spawn(connection);
    client
}

/// A database created for one test on the `DOCGATE_TEST_PG_URL` server.
pub struct TestDb {
    /// docgate's `--backend`.
    pub url: String,
    server: String,
    name: String,
}

impl TestDb {
    /// Creates a database with a unique name; `None` when PostgreSQL tests are skipped.
    pub async fn create() -> Option<TestDb> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let server = server_url()?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "dg_inst_{}_{nanos}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let admin = pg_client(&server).await;
        admin
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        Some(TestDb {
            url: with_dbname(&server, &name),
            server,
            name,
        })
    }

    /// Drops the database (call when the test passed; a failed test keeps it to look at).
    pub async fn drop_db(self) {
        let admin = pg_client(&self.server).await;
        admin
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.name
            ))
            .await
            .unwrap_or_else(|e| panic!("DROP DATABASE {}: {e}", self.name));
    }
}

// ---------------------------------------------------------------------------
// docgate processes and driver helpers
// ---------------------------------------------------------------------------

/// One running `docgate` over a PostgreSQL URL with extra flags; killed on drop (its stderr
/// is printed if the test is failing).
pub struct Docgate {
    name: &'static str,
    child: Child,
    port: u16,
    /// The REST front end's port.
    rest_port: u16,
    /// Holds the stderr log.
    dir: TempDir,
}

impl Docgate {
    pub fn start(name: &'static str, backend: &str, extra: &[&str]) -> Docgate {
        let dir = tempfile::Builder::new()
            .prefix("docgate-inst-")
            .tempdir()
            .expect("create temp dir");
        let log = dir.path().join("docgate.log");
        let launch = Launch {
            args: extra,
            timeout: START_TIMEOUT,
            ..Launch::new(backend)
        };
        match launch.start(|_| log.clone()) {
            Ok(launched) => Docgate {
                name,
                child: launched.child,
                port: launched.port,
                rest_port: launched.rest_port,
                dir,
            },
            Err(why) => panic!("docgate {name} did not start: {why}"),
        }
    }

    /// The wire (MongoDB) port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:<rest port>`: prefix of this instance's REST URLs.
    pub fn rest_base(&self) -> String {
        format!("http://127.0.0.1:{}", self.rest_port)
    }

    /// A client with short connect/selection timeouts and no driver-side retries, so the
    /// test sees each reply docgate sent.
    pub async fn client(&self) -> Client {
        let uri = format!(
            "mongodb://127.0.0.1:{}/?directConnection=true&serverSelectionTimeoutMS=10000\
             &connectTimeoutMS=10000&retryWrites=false&retryReads=false",
            self.port
        );
        Client::with_uri_str(&uri)
            .await
            .unwrap_or_else(|e| panic!("client for {uri}: {e}"))
    }

    /// Like [`Docgate::client`], authenticating as `user` of `source` with `mechanism`.
    pub async fn client_as(
        &self,
        user: &str,
        password: &str,
        source: &str,
        mechanism: &str,
    ) -> Client {
        let uri = format!(
            "mongodb://{user}:{password}@127.0.0.1:{}/?directConnection=true\
             &serverSelectionTimeoutMS=10000&connectTimeoutMS=10000&retryWrites=false\
             &retryReads=false&authSource={source}&authMechanism={mechanism}",
            self.port
        );
        Client::with_uri_str(&uri)
            .await
            .unwrap_or_else(|e| panic!("client for {uri}: {e}"))
    }

    /// Panics unless the process is still running.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("docgate {} exited with {status}", self.name);
        }
    }

    pub fn stderr_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("docgate.log")).unwrap_or_default()
    }
}

impl Drop for Docgate {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- docgate {} stderr ---\n{}",
                self.name,
                self.stderr_log()
            );
        }
    }
}

/// Awaits one driver call, failing the test (not hanging it) after `OP_TIMEOUT`.
pub async fn bounded<T>(what: &str, call: impl IntoFuture<Output = T>) -> T {
    match tokio::time::timeout(OP_TIMEOUT, call.into_future()).await {
        Ok(value) => value,
        Err(_) => panic!("{what}: no answer within {OP_TIMEOUT:?} (hang)"),
    }
}

/// Unwraps a driver result with the step's name.
pub fn ok<T>(what: &str, result: mongodb::error::Result<T>) -> T {
    result.unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// A driver error in one line: the server's code, code name, labels and message.
pub fn brief(e: &Error) -> String {
    match &*e.kind {
        ErrorKind::Command(c) => format!(
            "error {} ({}) labels {:?}: {}",
            c.code,
            c.code_name,
            e.labels(),
            c.message
        ),
        ErrorKind::Write(WriteFailure::WriteError(w)) => {
            format!("write error {}: {}", w.code, w.message)
        }
        other => format!("{other:?}"),
    }
}

/// A driver result in one line.
pub fn brief_result<T: std::fmt::Debug>(result: &mongodb::error::Result<T>) -> String {
    match result {
        Ok(value) => format!("Ok({value:?})"),
        Err(e) => brief(e),
    }
}

/// The server's code carried by a driver error, if the server answered one.
pub fn server_code(err: &Error) -> Option<i32> {
    match &*err.kind {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
        _ => None,
    }
}

/// All documents of `coll` matching `filter`, by `_id`.
pub async fn find_all(what: &str, coll: &Collection<Document>, filter: Document) -> Vec<Document> {
    bounded(what, async {
        let mut cursor = ok(what, coll.find(filter).sort(doc! {"_id": 1}).await);
        let mut out = Vec::new();
        while ok(what, cursor.advance().await) {
            out.push(ok(what, cursor.deserialize_current()));
        }
        out
    })
    .await
}

pub async fn collection_names(what: &str, db: &Database) -> Vec<String> {
    let mut names = ok(what, bounded(what, db.list_collection_names()).await);
    names.sort();
    names
}

pub async fn index_names(what: &str, coll: &Collection<Document>) -> Vec<String> {
    let mut names = ok(what, bounded(what, coll.list_index_names()).await);
    names.sort();
    names
}

pub async fn insert(what: &str, coll: &Collection<Document>, document: Document) {
    ok(what, bounded(what, coll.insert_one(document)).await);
}

pub async fn create_unique_index(what: &str, coll: &Collection<Document>, field: &str) {
    let model = IndexModel::builder()
        .keys(doc! {field: 1})
        .options(IndexOptions::builder().unique(true).build())
        .build();
    ok(what, bounded(what, coll.create_index(model)).await);
}

/// `find_all` that returns docgate's error instead of failing the test.
pub async fn try_find_all(
    what: &str,
    coll: &Collection<Document>,
    filter: Document,
) -> mongodb::error::Result<Vec<Document>> {
    bounded(what, async {
        let mut cursor = coll.find(filter).sort(doc! {"_id": 1}).await?;
        let mut out = Vec::new();
        while cursor.advance().await? {
            out.push(cursor.deserialize_current()?);
        }
        Ok(out)
    })
    .await
}
