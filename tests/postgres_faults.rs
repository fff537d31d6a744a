//! docgate over PostgreSQL as a deployment sees it, through the official Rust `mongodb`
//! driver against a real `docgate` process: a docgate whose PostgreSQL stops for ~2 s and
//! starts again answers MongoDB errors with a code and a retryable label meanwhile (never
//! hangs), then serves the same client again without a restart or reconnect, and loses no
//! acknowledged insert.
//!
//! The test starts a throwaway cluster of its own with `tests/pg_cluster.sh` (PostgreSQL 15
//! binaries, root or the cluster's owner), so stopping it disturbs nobody.
//! `DOCGATE_SKIP_POSTGRES=1` makes it return early with a note, as the PostgreSQL store tests
//! do. Shared helpers live in `postgres_support/`.
//!
//! Not for: two instances on one database (`postgres_instances.rs`), pool limits
//! (`postgres_pool.rs`), the store's own behaviour (`src/store/conformance`,
//! `src/store/postgres/tests`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod postgres_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mongodb::bson::{doc, Bson, Document};
use mongodb::error::{Error, ErrorKind};
use mongodb::Collection;
use tempfile::TempDir;

use postgres_support::*;

// ---------------------------------------------------------------------------
// The throwaway cluster
// ---------------------------------------------------------------------------

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
    let http = reqwest::Client::new();
    let rest_base = server.rest_base();
    let probe = |path: &'static str| {
        let url = format!("{rest_base}{path}");
        let http = http.clone();
        async move {
            let response = http.get(url).send().await.expect("probe request");
            let status = response.status().as_u16();
            let body: serde_json::Value = response.json().await.expect("probe body");
            (status, body)
        }
    };
    let (ready_status, ready_body) = probe("/readyz").await;
    assert_eq!(
        ready_status, 503,
        "/readyz answers 503 while PostgreSQL is down: {ready_body}"
    );
    assert_eq!(ready_body["status"], "unavailable", "{ready_body}");
    assert_eq!(
        probe("/livez").await.0,
        200,
        "/livez stays 200: the process is alive"
    );
    let elapsed = stopped.elapsed();
    if elapsed < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_secs(2) - elapsed).await;
    }
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
    let (ready_status, ready_body) = probe("/readyz").await;
    assert_eq!(
        ready_status, 200,
        "/readyz is 200 again once PostgreSQL is back: {ready_body}"
    );
    assert_eq!(ready_body["backend"], "postgres", "{ready_body}");
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
        // In docgate's words: PostgreSQL's own text (`FATAL: the database system is shutting
        // down (57P03)`) stays in the server's log.
        for backend_words in ["FATAL", "database system", "57P0", "SQLSTATE", "db error"] {
            assert!(
                !command.message.contains(backend_words),
                "insert of _id {}: the client was shown the backend's text: {}",
                a.id,
                command.message
            );
        }
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
