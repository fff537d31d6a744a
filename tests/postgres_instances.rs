//! docgate over PostgreSQL as a deployment sees it, through the official Rust `mongodb`
//! driver against real `docgate` processes:
//!
//! - two docgate processes on one PostgreSQL database, each caching metadata for 10 minutes,
//!   see each other's collection and index changes on the very next command (DESIGN.md
//!   invariant 5: only invalidation can explain that freshness), and each other's documents;
//! - a docgate whose PostgreSQL stops for ~2 s and starts again answers MongoDB errors with a
//!   code and a retryable label meanwhile (never hangs), then serves the same client again
//!   without a restart or reconnect, and loses no acknowledged insert;
//! - a pool of one connection serves one client's commands one at a time (no command holds a
//!   connection while waiting for another), and with that pool exhausted a command gets a
//!   retryable `NetworkTimeout` after `--pool-wait-timeout` instead of waiting for ever.
//!
//! The two-instance and pool tests create a fresh database on the PostgreSQL named by env
//! `DOCGATE_TEST_PG_URL` (dropped when the test passes); the fault test starts a throwaway
//! cluster of its own with `tests/pg_cluster.sh` (PostgreSQL 15 binaries, root or the
//! cluster's owner), so stopping it disturbs nobody. `DOCGATE_SKIP_POSTGRES=1` makes every
//! test return early with a note, as the PostgreSQL store tests do.
//!
//! Not for: the store's own behaviour (`src/store/postgres/tests`) or CRUD semantics
//! (`driver_crud.rs`).

use std::fs::File;
use std::future::IntoFuture;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mongodb::bson::{doc, Bson, Document};
use mongodb::error::{Error, ErrorKind, WriteFailure};
use mongodb::options::IndexOptions;
use mongodb::{Client, Collection, Database, IndexModel};
use tempfile::TempDir;
use tokio_postgres::NoTls;

/// How long a freshly spawned docgate gets to say it listens.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest any single driver call may take before the test calls it a hang.
const OP_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest a whole test may take.
const TEST_TIMEOUT: Duration = Duration::from_secs(240);
/// Metadata cache settings of the instances in the two-instance test: on, and long enough
/// that only invalidation can make a change visible during the test.
const LONG_CACHE: &[&str] = &[
    "--cache-metadata-enabled",
    "true",
    "--cache-metadata-timeout",
    "10m",
];

// ---------------------------------------------------------------------------
// PostgreSQL: skipping, fresh databases, the throwaway cluster
// ---------------------------------------------------------------------------

/// True when PostgreSQL tests are to be skipped (prints a note).
fn skipped() -> bool {
    if std::env::var("DOCGATE_SKIP_POSTGRES").is_ok_and(|v| v == "1") {
        eprintln!("note: DOCGATE_SKIP_POSTGRES=1, skipping a docgate-on-PostgreSQL test");
        return true;
    }
    false
}

/// `DOCGATE_TEST_PG_URL`, `None` when skipped; panics with instructions when unset.
fn server_url() -> Option<String> {
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
fn with_dbname(url: &str, dbname: &str) -> String {
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
async fn pg_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect to PostgreSQL for the test: {e}"));
    tokio::spawn(connection);
    client
}

/// A database created for one test on the `DOCGATE_TEST_PG_URL` server.
struct TestDb {
    /// docgate's `--backend`.
    url: String,
    server: String,
    name: String,
}

impl TestDb {
    /// Creates a database with a unique name; `None` when PostgreSQL tests are skipped.
    async fn create() -> Option<TestDb> {
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
    async fn drop_db(self) {
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

/// `tests/pg_cluster.sh` of this repository.
fn cluster_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("pg_cluster.sh")
}

/// Runs `tests/pg_cluster.sh COMMAND DIR`; its stdout (the URL for `start`).
fn cluster(command: &str, dir: &Path) -> String {
    let out = Command::new(cluster_script())
        .arg(command)
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run tests/pg_cluster.sh {command}: {e}"));
    assert!(
        out.status.success(),
        "tests/pg_cluster.sh {command} {} failed: {}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A throwaway PostgreSQL cluster in a temporary directory, stopped and removed on drop.
struct OwnCluster {
    dir: TempDir,
    url: String,
}

impl OwnCluster {
    fn start() -> OwnCluster {
        let bin = std::env::var("PG_BIN").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into());
        assert!(
            Path::new(&bin).join("initdb").is_file(),
            "this test runs its own PostgreSQL 15 cluster and needs {bin}/initdb \
             (apt-get install postgresql-15), or set DOCGATE_SKIP_POSTGRES=1"
        );
        let dir = tempfile::Builder::new()
            .prefix("docgate-pg-fault-")
            .tempdir()
            .expect("create a temp dir for the cluster");
        let url = cluster("start", dir.path());
        assert!(
            url.starts_with("postgres://"),
            "pg_cluster.sh printed {url:?}"
        );
        OwnCluster { dir, url }
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = Command::new(cluster_script())
            .arg("stop")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .output();
    }
}

// ---------------------------------------------------------------------------
// docgate processes and driver helpers
// ---------------------------------------------------------------------------

/// A port that was free a moment ago.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}

/// Waits until `child` has logged that it listens and `port` accepts connections.
fn wait_until_listening(child: &mut Child, port: u16, log: &Path) -> Result<(), String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited early with {status}"));
        }
        let announced = std::fs::read_to_string(log)
            .map(|text| text.contains("listening"))
            .unwrap_or(false);
        if announced && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("not accepting on {addr} after {START_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One running `docgate` over a PostgreSQL URL with extra flags; killed on drop (its stderr
/// is printed if the test is failing).
struct Docgate {
    name: &'static str,
    child: Child,
    port: u16,
    /// Holds the stderr log.
    dir: TempDir,
}

impl Docgate {
    fn start(name: &'static str, backend: &str, extra: &[&str]) -> Docgate {
        let mut last_error = String::new();
        // Another process may take the port between choosing and binding it: try again.
        for _ in 0..3 {
            let dir = tempfile::Builder::new()
                .prefix("docgate-inst-")
                .tempdir()
                .expect("create temp dir");
            let port = free_port();
            let log_path = dir.path().join("docgate.log");
            let log = File::create(&log_path).expect("create stderr log");
            let mut child = Command::new(env!("CARGO_BIN_EXE_docgate"))
                .arg("--listen")
                .arg(format!("127.0.0.1:{port}"))
                .arg("--backend")
                .arg(backend)
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::from(log))
                .spawn()
                .expect("spawn docgate");
            match wait_until_listening(&mut child, port, &log_path) {
                Ok(()) => {
                    return Docgate {
                        name,
                        child,
                        port,
                        dir,
                    }
                }
                Err(why) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    last_error = format!(
                        "{why}\n{}",
                        std::fs::read_to_string(&log_path).unwrap_or_default()
                    );
                }
            }
        }
        panic!("docgate {name} did not start: {last_error}");
    }

    /// A client with short connect/selection timeouts and no driver-side retries, so the
    /// test sees each reply docgate sent.
    async fn client(&self) -> Client {
        let uri = format!(
            "mongodb://127.0.0.1:{}/?directConnection=true&serverSelectionTimeoutMS=10000\
             &connectTimeoutMS=10000&retryWrites=false&retryReads=false",
            self.port
        );
        Client::with_uri_str(&uri)
            .await
            .unwrap_or_else(|e| panic!("client for {uri}: {e}"))
    }

    /// Panics unless the process is still running.
    fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("docgate {} exited with {status}", self.name);
        }
    }

    fn stderr_log(&self) -> String {
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
async fn bounded<T>(what: &str, call: impl IntoFuture<Output = T>) -> T {
    match tokio::time::timeout(OP_TIMEOUT, call.into_future()).await {
        Ok(value) => value,
        Err(_) => panic!("{what}: no answer within {OP_TIMEOUT:?} (hang)"),
    }
}

/// Unwraps a driver result with the step's name.
fn ok<T>(what: &str, result: mongodb::error::Result<T>) -> T {
    result.unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// A driver error in one line: the server's code, code name, labels and message.
fn brief(e: &Error) -> String {
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
fn brief_result<T: std::fmt::Debug>(result: &mongodb::error::Result<T>) -> String {
    match result {
        Ok(value) => format!("Ok({value:?})"),
        Err(e) => brief(e),
    }
}

/// The server's code carried by a driver error, if the server answered one.
fn server_code(err: &Error) -> Option<i32> {
    match &*err.kind {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
        _ => None,
    }
}

/// All documents of `coll` matching `filter`, by `_id`.
async fn find_all(what: &str, coll: &Collection<Document>, filter: Document) -> Vec<Document> {
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

async fn collection_names(what: &str, db: &Database) -> Vec<String> {
    let mut names = ok(what, bounded(what, db.list_collection_names()).await);
    names.sort();
    names
}

async fn index_names(what: &str, coll: &Collection<Document>) -> Vec<String> {
    let mut names = ok(what, bounded(what, coll.list_index_names()).await);
    names.sort();
    names
}

async fn insert(what: &str, coll: &Collection<Document>, document: Document) {
    ok(what, bounded(what, coll.insert_one(document)).await);
}

async fn create_unique_index(what: &str, coll: &Collection<Document>, field: &str) {
    let model = IndexModel::builder()
        .keys(doc! {field: 1})
        .options(IndexOptions::builder().unique(true).build())
        .build();
    ok(what, bounded(what, coll.create_index(model)).await);
}

// ---------------------------------------------------------------------------
// 1. Two instances on one database
// ---------------------------------------------------------------------------

/// Collection, index, rename and drop made through A are seen by B on its very next
/// command, although B caches metadata for 10 minutes and had the old state cached; each
/// step is repeated so that a race between the change notification and the next command has
/// several chances to show. Documents cross both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_see_each_others_changes_at_once() {
    let Some(db) = TestDb::create().await else {
        return;
    };
    tokio::time::timeout(TEST_TIMEOUT, two_instances_body(&db.url))
        .await
        .expect("the two-instance test did not finish in time");
    db.drop_db().await;
}

/// What B got wrong, collected over all rounds so that one run shows every kind of miss.
#[derive(Default)]
struct Misses(Vec<String>);

impl Misses {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            let what = what();
            eprintln!("MISS: {what}");
            self.0.push(what);
        }
    }
}

/// `find_all` that returns docgate's error instead of failing the test.
async fn try_find_all(
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

/// Inserts `document` through `coll`; a miss unless docgate answers E11000.
async fn check_duplicate(
    misses: &mut Misses,
    what: &str,
    coll: &Collection<Document>,
    document: Document,
) {
    let result = bounded(what, coll.insert_one(document.clone())).await;
    misses.check(
        matches!(&result, Err(e) if server_code(e) == Some(11000)),
        || {
            format!(
                "{what}: inserting {document} answered {}; expected E11000",
                brief_result(&result)
            )
        },
    );
}

/// Expects an empty result (a collection that is gone) without an error.
async fn check_gone(misses: &mut Misses, what: &str, coll: &Collection<Document>) {
    let result = try_find_all(what, coll, doc! {}).await;
    misses.check(matches!(&result, Ok(found) if found.is_empty()), || {
        format!(
            "{what}: expected no documents and no error, got {}",
            brief_result(&result)
        )
    });
}

async fn two_instances_body(backend: &str) {
    let mut a = Docgate::start("A", backend, LONG_CACHE);
    let mut b = Docgate::start("B", backend, LONG_CACHE);
    let (client_a, client_b) = (a.client().await, b.client().await);
    let (app_a, app_b) = (client_a.database("app"), client_b.database("app"));
    let mut misses = Misses::default();

    // B caches a catalog snapshot (a collection of its own) before A changes anything.
    insert("B: seed", &app_b.collection("seed"), doc! {"_id": 0}).await;
    assert_eq!(
        find_all("B: find seed", &app_b.collection("seed"), doc! {}).await,
        vec![doc! {"_id": 0}]
    );

    const ROUNDS: usize = 5;
    for round in 0..ROUNDS {
        let name = format!("c{round}");
        let renamed = format!("r{round}");
        let (coll_a, coll_b) = (
            app_a.collection::<Document>(&name),
            app_b.collection::<Document>(&name),
        );
        let renamed_b = app_b.collection::<Document>(&renamed);
        let step = |s: &str| format!("round {round}: {s}");

        // B reads the catalog (and caches it) before the change.
        collection_names(&step("B: list before create"), &app_b).await;
        find_all(&step("B: find seed"), &app_b.collection("seed"), doc! {}).await;

        // A creates the collection (create + insert); B lists it on its next command.
        ok(
            &step("A: create"),
            bounded("A: create", app_a.create_collection(&name)).await,
        );
        insert(&step("A: insert"), &coll_a, doc! {"_id": 1, "k": 1, "j": 1}).await;
        let names = collection_names(&step("B: list after create"), &app_b).await;
        misses.check(names.contains(&name), || {
            format!("round {round}: B's listCollections right after A created {name}: {names:?}")
        });
        let found = try_find_all(&step("B: find"), &coll_b, doc! {}).await;
        misses.check(
            matches!(&found, Ok(docs) if *docs == vec![doc! {"_id": 1, "k": 1, "j": 1}]),
            || {
                format!(
                    "round {round}: B's find of the document A wrote: {}",
                    brief_result(&found)
                )
            },
        );

        // A creates a unique index; B's very next command is an insert that violates it.
        create_unique_index(&step("A: create index k_1"), &coll_a, "k").await;
        check_duplicate(
            &mut misses,
            &step("B: insert duplicate k right after A created unique k_1"),
            &coll_b,
            doc! {"_id": 2, "k": 1, "j": 2},
        )
        .await;
        let indexes = index_names(&step("B: list indexes"), &coll_b).await;
        misses.check(indexes == ["_id_", "k_1"], || {
            format!("round {round}: B's listIndexes after A created k_1: {indexes:?}")
        });

        // A creates another unique index; B's very next command lists indexes, then
        // enforces it.
        find_all(&step("B: find before j_1"), &coll_b, doc! {}).await;
        index_names(&step("B: list indexes before j_1"), &coll_b).await;
        create_unique_index(&step("A: create index j_1"), &coll_a, "j").await;
        let indexes = index_names(&step("B: list indexes after j_1"), &coll_b).await;
        misses.check(indexes == ["_id_", "j_1", "k_1"], || {
            format!("round {round}: B's listIndexes right after A created j_1: {indexes:?}")
        });
        check_duplicate(
            &mut misses,
            &step("B: insert duplicate j after A created unique j_1"),
            &coll_b,
            doc! {"_id": 3, "k": 3, "j": 1},
        )
        .await;

        // Documents written through B are read through A; B's duplicates are not there.
        insert(&step("B: insert"), &coll_b, doc! {"_id": 4, "k": 4, "j": 4}).await;
        let seen_by_a = find_all(&step("A: find"), &coll_a, doc! {}).await;
        let ids: Vec<&Bson> = seen_by_a.iter().filter_map(|d| d.get("_id")).collect();
        misses.check(ids.contains(&&Bson::Int32(4)), || {
            format!("round {round}: A does not read the document B wrote: {seen_by_a:?}")
        });
        misses.check(
            !ids.contains(&&Bson::Int32(2)) && !ids.contains(&&Bson::Int32(3)),
            || format!("round {round}: duplicates B let through are stored: {seen_by_a:?}"),
        );

        // A renames; B's very next command reads the old name (nothing), then the new.
        find_all(&step("B: find before rename"), &coll_b, doc! {}).await;
        let rename = doc! {
            "renameCollection": format!("app.{name}"),
            "to": format!("app.{renamed}"),
        };
        ok(
            &step("A: renameCollection"),
            bounded("A: rename", client_a.database("admin").run_command(rename)).await,
        );
        check_gone(
            &mut misses,
            &step("B: find under the old name right after A renamed it"),
            &coll_b,
        )
        .await;
        let names = collection_names(&step("B: list after rename"), &app_b).await;
        misses.check(names.contains(&renamed) && !names.contains(&name), || {
            format!("round {round}: B lists {names:?} after A renamed {name} to {renamed}")
        });
        let found = try_find_all(&step("B: find new name"), &renamed_b, doc! {}).await;
        misses.check(
            matches!(&found, Ok(docs) if docs.len() == seen_by_a.len()),
            || {
                format!(
                    "round {round}: B's find under the new name {renamed}: {}",
                    brief_result(&found)
                )
            },
        );
        // The indexes moved along, and B enforces them under the new name.
        check_duplicate(
            &mut misses,
            &step("B: duplicate k in the renamed collection"),
            &renamed_b,
            doc! {"_id": 5, "k": 4, "j": 5},
        )
        .await;
        insert(
            &step("B: insert into renamed"),
            &renamed_b,
            doc! {"_id": 6, "k": 6, "j": 6},
        )
        .await;
        let found = find_all(
            &step("A: find renamed"),
            &app_a.collection(&renamed),
            doc! {},
        )
        .await;
        misses.check(
            found.iter().any(|d| d.get("_id") == Some(&Bson::Int32(6))),
            || format!("round {round}: A does not read what B wrote under {renamed}: {found:?}"),
        );

        // A drops; B's very next command finds nothing, then lists without it.
        find_all(&step("B: find before drop"), &renamed_b, doc! {}).await;
        ok(
            &step("A: drop"),
            bounded("A: drop", app_a.collection::<Document>(&renamed).drop()).await,
        );
        check_gone(
            &mut misses,
            &step("B: find right after A dropped the collection"),
            &renamed_b,
        )
        .await;
        let names = collection_names(&step("B: list after drop"), &app_b).await;
        misses.check(!names.contains(&renamed) && !names.contains(&name), || {
            format!("round {round}: B lists {names:?} after A dropped {renamed}")
        });
    }

    // A sees B's first collection and its document, too.
    let names = collection_names("A: final list", &app_a).await;
    assert_eq!(names, vec!["seed".to_string()], "A's final list");
    assert_eq!(
        find_all("A: find seed", &app_a.collection("seed"), doc! {}).await,
        vec![doc! {"_id": 0}]
    );
    a.assert_running();
    b.assert_running();
    assert!(
        misses.0.is_empty(),
        "B served stale metadata {} time(s) in {ROUNDS} rounds (DESIGN.md invariant 5):\n  {}",
        misses.0.len(),
        misses.0.join("\n  ")
    );
}

// ---------------------------------------------------------------------------
// 2. PostgreSQL stops and starts under a client
// ---------------------------------------------------------------------------

/// One insert attempt of the client loop.
struct Attempt {
    id: i64,
    began: Instant,
    ended: Instant,
    error: Option<Error>,
}

/// Inserts `{_id: n}` one by one (acknowledged) until `stop` is set or `limit` passes.
async fn insert_loop(
    coll: Collection<Document>,
    stop: Arc<AtomicBool>,
    limit: Duration,
    attempts: Arc<Mutex<Vec<Attempt>>>,
) {
    let deadline = Instant::now() + limit;
    let mut id: i64 = 0;
    while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
        id += 1;
        let began = Instant::now();
        let result = tokio::time::timeout(OP_TIMEOUT, coll.insert_one(doc! {"_id": id})).await;
        let ended = Instant::now();
        let error = match result {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(e),
            Err(_) => panic!("insert of _id {id} got no answer within {OP_TIMEOUT:?} (hang)"),
        };
        let failed = error.is_some();
        attempts.lock().expect("attempts lock").push(Attempt {
            id,
            began,
            ended,
            error,
        });
        // While the database is down, do not spin.
        let pause = if failed { 50 } else { 5 };
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
}

/// Successful attempts that began after `since`.
fn successes_since(attempts: &Mutex<Vec<Attempt>>, since: Instant) -> usize {
    attempts
        .lock()
        .expect("attempts lock")
        .iter()
        .filter(|a| a.error.is_none() && a.began >= since)
        .count()
}

async fn wait_for_successes(attempts: &Mutex<Vec<Attempt>>, since: Instant, n: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while successes_since(attempts, since) < n {
        assert!(
            Instant::now() < deadline,
            "{what}: fewer than {n} acknowledged inserts within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// PostgreSQL is stopped (`pg_ctl stop -m fast`) for ~2 s under a client inserting one
/// document at a time. Meanwhile every insert is answered with a MongoDB error that has a
/// code (HostUnreachable or NetworkTimeout) and the `RetryableWriteError` label; once
/// PostgreSQL is back, the same client on the same docgate process inserts again, and
/// every acknowledged `_id` is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inserts_resume_after_postgres_stops_and_starts() {
    if skipped() {
        return;
    }
    tokio::time::timeout(TEST_TIMEOUT, postgres_restart_body())
        .await
        .expect("the PostgreSQL restart test did not finish in time");
}

async fn postgres_restart_body() {
    let pg = OwnCluster::start();
    let mut server = Docgate::start("fault", &pg.url, &["--pool-wait-timeout", "2s"]);
    let client = server.client().await;
    let coll = client.database("app").collection::<Document>("log");
    insert("create the collection", &coll, doc! {"_id": 0}).await;

    let attempts = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let looping = tokio::spawn(insert_loop(
        coll.clone(),
        stop.clone(),
        Duration::from_secs(120),
        attempts.clone(),
    ));
    let t0 = Instant::now();
    wait_for_successes(&attempts, t0, 20, "before the stop").await;

    // Stop PostgreSQL for ~2 s, then start it again on the same data and port.
    let stopping = Instant::now();
    let cluster_stop = tokio::task::spawn_blocking({
        let dir = pg.dir.path().to_path_buf();
        move || cluster("stop", &dir)
    });
    cluster_stop.await.expect("pg_cluster.sh stop");
    let stopped = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let starting = Instant::now();
    let url = tokio::task::spawn_blocking({
        let dir = pg.dir.path().to_path_buf();
        move || cluster("start", &dir)
    })
    .await
    .expect("pg_cluster.sh start");
    let started = Instant::now();
    assert_eq!(
        url, pg.url,
        "PostgreSQL came back on another URL; docgate cannot follow"
    );

    wait_for_successes(&attempts, started, 20, "after the start").await;
    stop.store(true, Ordering::SeqCst);
    bounded("the insert loop", looping)
        .await
        .expect("the insert loop panicked");

    let attempts = std::mem::take(&mut *attempts.lock().expect("attempts lock"));
    let errors: Vec<&Attempt> = attempts.iter().filter(|a| a.error.is_some()).collect();
    let acked: Vec<i64> = attempts
        .iter()
        .filter(|a| a.error.is_none())
        .map(|a| a.id)
        .collect();
    let at = |t: Instant| format!("{:.3}s", t.duration_since(t0).as_secs_f64());
    eprintln!(
        "{} attempts, {} acknowledged, {} errors; stop issued at {}, stopped at {}, start \
         issued at {}, started at {}",
        attempts.len(),
        acked.len(),
        errors.len(),
        at(stopping),
        at(stopped),
        at(starting),
        at(started)
    );
    // One line per distinct answer: first and last attempt that got it.
    let mut kinds: Vec<(String, usize, &Attempt, &Attempt)> = Vec::new();
    for a in &errors {
        let e = a.error.as_ref().expect("an error");
        let kind = match &*e.kind {
            ErrorKind::Command(c) => format!(
                "code {} {} labels {:?}: {}",
                c.code,
                c.code_name,
                e.labels(),
                c.message
            ),
            other => format!("{other:?}"),
        };
        match kinds.iter_mut().find(|(k, ..)| *k == kind) {
            Some((_, n, _, last)) => {
                *n += 1;
                *last = a;
            }
            None => kinds.push((kind, 1, a, a)),
        }
    }
    for (kind, n, first, last) in &kinds {
        eprintln!("  {n} x [{} .. {}] {kind}", at(first.began), at(last.ended));
    }

    // The outage was seen, as errors, only while the database was down.
    assert!(
        !errors.is_empty(),
        "no insert failed while PostgreSQL was stopped for 2 s (did the loop run?)"
    );
    for a in &errors {
        let e = a.error.as_ref().expect("an error");
        assert!(
            a.ended >= stopping,
            "insert of _id {} failed before PostgreSQL was stopped: {e:?}",
            a.id
        );
        assert!(
            a.began <= started,
            "insert of _id {} began after PostgreSQL was back ({} after) and still failed: \
             {e:?}",
            a.id,
            at(a.began)
        );
        // A MongoDB error with a code, saying "retry": HostUnreachable (6) when PostgreSQL
        // cannot be reached, NetworkTimeout (89) when no connection came in time.
        let ErrorKind::Command(command) = &*e.kind else {
            panic!(
                "insert of _id {} failed with something other than a server error: {e:?}",
                a.id
            );
        };
        assert!(
            matches!(
                (command.code, command.code_name.as_str()),
                (6, "HostUnreachable") | (89, "NetworkTimeout")
            ),
            "insert of _id {}: expected HostUnreachable (6) or NetworkTimeout (89), got {e:?}",
            a.id
        );
        assert!(
            e.contains_label("RetryableWriteError"),
            "insert of _id {}: no RetryableWriteError label: {e:?}",
            a.id
        );
    }

    // The same client on the same process works again, and nothing acknowledged was lost.
    server.assert_running();
    let stored: Vec<i64> = find_all("read back", &coll, doc! {})
        .await
        .iter()
        .filter_map(|d| match d.get("_id") {
            Some(Bson::Int64(v)) => Some(*v),
            Some(Bson::Int32(v)) => Some(i64::from(*v)),
            _ => None,
        })
        .collect();
    let missing: Vec<i64> = acked
        .iter()
        .copied()
        .filter(|id| !stored.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged inserts missing after the restart: {missing:?}"
    );
    let failed_but_stored = errors.iter().filter(|a| stored.contains(&a.id)).count();
    eprintln!(
        "{} stored; {failed_but_stored} of the failed inserts were stored anyway",
        stored.len()
    );
    drop(client);
    drop(server);
    drop(pg);
}

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

#[test]
fn database_names_replace_the_path() {
    assert_eq!(
        with_dbname("postgres://u@127.0.0.1:5432/postgres", "t1"),
        "postgres://u@127.0.0.1:5432/t1"
    );
    assert_eq!(
        with_dbname("postgresql://u:p@h/db?sslmode=disable", "t2"),
        "postgresql://u:p@h/t2?sslmode=disable"
    );
}
