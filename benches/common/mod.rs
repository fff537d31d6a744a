//! Shared harness of docgate's benchmarks: start the real `docgate` release binary on a free
//! loopback port over SQLite or PostgreSQL (with the tests' launcher, `tests/common/launcher.rs`), find a collection's physical table for the
//! direct-SQL baselines, obtain a PostgreSQL (from `DOCGATE_BENCH_PG_URL` or a throwaway
//! cluster started with `tests/pg_cluster.sh`), summarize latencies, print tables.
//!
//! Not for: measuring anything itself; each bench file says what it measures.
//!
//! Environment shared by every bench:
//! - `DOCGATE_BENCH_PG_URL=postgres://…`: use that PostgreSQL (a fresh database is created on
//!   it with `psql` and dropped afterwards) instead of starting a cluster.
//! - `DOCGATE_BENCH_PG=0`: SQLite only; `DOCGATE_BENCH_SQLITE=0`: PostgreSQL only.
//! - `DOCGATE_BENCH_CPUS=0` (a `taskset` CPU list): run the benchmark, and everything it
//!   starts (docgate, the throwaway PostgreSQL, relays), on those CPUs only. On one CPU a
//!   hand-over between processes is a context switch instead of waking another, idle CPU —
//!   which on a virtual machine costs tens of microseconds and varies with where the
//!   scheduler put things — so what remains is the work done; the default measures both.

#![allow(dead_code)]

#[path = "../../tests/common/launcher.rs"]
pub mod launcher;
pub mod raw_sql;
pub mod relay;
pub mod wire_client;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use launcher::Launch;

/// How long a freshly spawned server gets to accept its first connection.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// An integer setting from the environment, else `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, not {v:?}")),
        _ => default,
    }
}

/// Where a benchmarked server keeps its data.
#[derive(Clone, Debug)]
pub enum Backend {
    Sqlite { dir: PathBuf },
    Postgres { url: String },
}

impl Backend {
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite { .. } => "sqlite",
            Backend::Postgres { .. } => "postgres",
        }
    }

    /// The `--backend` argument.
    pub fn arg(&self) -> String {
        match self {
            Backend::Sqlite { dir } => format!("sqlite:{}", dir.display()),
            Backend::Postgres { url } => url.clone(),
        }
    }

    /// The SQLite database file docgate writes (only for `Sqlite`).
    pub fn sqlite_file(&self) -> PathBuf {
        match self {
            Backend::Sqlite { dir } => dir.join(docgate::store::sqlite::DATABASE_FILE),
            Backend::Postgres { .. } => panic!("not a SQLite backend"),
        }
    }
}

/// A running `docgate` process; stopped (SIGTERM, then SIGKILL) on drop.
pub struct Server {
    child: Child,
    pub port: u16,
    /// The REST front end's port (`--rest-listen`).
    pub rest_port: u16,
    log: PathBuf,
}

impl Server {
    /// Starts `docgate --listen 127.0.0.1:<free port> --rest-listen 127.0.0.1:<free port>
    /// --backend <backend>` and waits until it accepts TCP connections. `log_dir` receives its stderr.
    pub fn start(backend: &Backend, log_dir: &Path, extra_args: &[&str]) -> Server {
        let backend = backend.arg();
        let launch = Launch {
            args: extra_args,
            envs: &[("DOCGATE_LOG", "warn")],
            timeout: START_TIMEOUT,
            // At log level warn the "listening" line is not written.
            wait_for_announcement: false,
            ..Launch::new(&backend)
        };
        // Several servers may share `log_dir`: each start gets a log of its own.
        static STARTS: AtomicUsize = AtomicUsize::new(0);
        let started = launch.start(|attempt| {
            let n = STARTS.fetch_add(1, Ordering::Relaxed);
            log_dir.join(format!("docgate-{n}-{attempt}.log"))
        });
        match started {
            Ok(launched) => Server {
                child: launched.child,
                port: launched.port,
                rest_port: launched.rest_port,
                log: launched.log,
            },
            Err(why) => panic!("cannot start docgate: {why}"),
        }
    }

    /// The process id of the server (for reading its `/proc/<pid>/status`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A direct-connection URI for this server with extra `options` (`k=v&…`).
    pub fn uri(&self, options: &str) -> String {
        self.uri_with_credentials("", options)
    }

    /// [`Server::uri`] signed in as `user`.
    pub fn uri_as(&self, user: &str, password: &str, options: &str) -> String {
        self.uri_with_credentials(&format!("{user}:{password}@"), options)
    }

    fn uri_with_credentials(&self, credentials: &str, options: &str) -> String {
        let sep = if options.is_empty() { "" } else { "&" };
        format!(
            "mongodb://{credentials}127.0.0.1:{}/?directConnection=true&serverSelectionTimeoutMS=10000{sep}{options}",
            self.port
        )
    }

    /// A driver client for this server, without credentials.
    pub async fn anonymous_client(&self) -> mongodb::Client {
        mongodb::Client::with_uri_str(self.uri(""))
            .await
            .expect("driver client")
    }

    /// A driver client signed in as the benchmark user (`BENCH_USER`, role `root`), the way
    /// an application runs against a production server. The user is created first through
    /// the localhost exception; a server that already has users (another server on the same
    /// PostgreSQL database made it) is fine. The anonymous "no users yet" mode is not what a
    /// benchmark should measure: there every command confirms with the database that still
    /// no user exists.
    pub async fn client(&self) -> mongodb::Client {
        let anonymous = self.anonymous_client().await;
        let created = anonymous
            .database("admin")
            .run_command(bson::doc! {
                "createUser": BENCH_USER, "pwd": BENCH_PASSWORD, "roles": ["root"]
            })
            .await;
        if let Err(error) = created {
            let code = match &*error.kind {
                mongodb::error::ErrorKind::Command(c) => Some(c.code),
                _ => None,
            };
            // 51003: the user exists; 13: users exist, so the exception is closed.
            assert!(
                matches!(code, Some(51003) | Some(13)),
                "createUser {BENCH_USER}: {error}"
            );
        }
        anonymous.shutdown().await;
        mongodb::Client::with_uri_str(self.uri_as(BENCH_USER, BENCH_PASSWORD, ""))
            .await
            .expect("driver client")
    }
}

/// The user `Server::client` signs in as.
pub const BENCH_USER: &str = "bench";
/// `BENCH_USER`'s password.
pub const BENCH_PASSWORD: &str = "bench-password";

impl Drop for Server {
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!(
            "docgate did not stop on SIGTERM; killing it (log: {})",
            self.log.display()
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A PostgreSQL to benchmark on: an own throwaway cluster or a database created on
/// `DOCGATE_BENCH_PG_URL`. Cleaned up on drop.
pub struct Postgres {
    pub url: String,
    cluster: Option<TempDir>,
    created: Option<(String, String)>,
}

impl Postgres {
    /// The PostgreSQL to use, or None (with a printed note) when it is switched off or
    /// cannot be had.
    pub fn obtain() -> Option<Postgres> {
        if std::env::var("DOCGATE_BENCH_PG").as_deref() == Ok("0") {
            println!("note: DOCGATE_BENCH_PG=0: PostgreSQL skipped");
            return None;
        }
        if let Ok(admin) = std::env::var("DOCGATE_BENCH_PG_URL") {
            if !admin.trim().is_empty() {
                let admin = admin.trim().to_string();
                let db = format!(
                    "docgate_bench_{}_{}",
                    std::process::id(),
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.subsec_nanos())
                        .unwrap_or(0)
                );
                if let Err(e) = psql(&admin, &format!("CREATE DATABASE \"{db}\"")) {
                    println!("note: PostgreSQL skipped: cannot create a database on DOCGATE_BENCH_PG_URL: {e}");
                    return None;
                }
                return Some(Postgres {
                    url: with_database(&admin, &db),
                    cluster: None,
                    created: Some((admin, db)),
                });
            }
        }
        let dir = tempfile::Builder::new()
            .prefix("docgate-bench-pg-")
            .tempdir()
            .expect("temp dir");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pg_cluster.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg("start")
            .arg(dir.path())
            .output();
        match out {
            Ok(out) if out.status.success() => {
                let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
                Some(Postgres {
                    url,
                    cluster: Some(dir),
                    created: None,
                })
            }
            Ok(out) => {
                println!(
                    "note: PostgreSQL skipped: tests/pg_cluster.sh start failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                None
            }
            Err(e) => {
                println!("note: PostgreSQL skipped: cannot run tests/pg_cluster.sh: {e}");
                None
            }
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if let Some((admin, db)) = &self.created {
            if let Err(e) = psql(
                admin,
                &format!("DROP DATABASE IF EXISTS \"{db}\" WITH (FORCE)"),
            ) {
                eprintln!("cannot drop benchmark database {db}: {e}");
            }
        }
        if let Some(dir) = &self.cluster {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pg_cluster.sh");
            let _ = Command::new("bash")
                .arg(&script)
                .arg("stop")
                .arg(dir.path())
                .status();
        }
    }
}

fn psql(url: &str, sql: &str) -> Result<(), String> {
    let out = Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql])
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// `url` with its database replaced by `database`, keeping any `?query`.
fn with_database(url: &str, database: &str) -> String {
    let authority_start = url.find("://").map(|i| i + 3).unwrap_or(0);
    let (head, query) = match url.find('?') {
        Some(q) => (&url[..q], &url[q..]),
        None => (url, ""),
    };
    let base = match head[authority_start..].find('/') {
        Some(slash) => &head[..authority_start + slash],
        None => head,
    };
    format!("{base}/{database}{query}")
}

/// The backends to run: SQLite in `dir/sqlite` always, then PostgreSQL if available. The
/// returned `Postgres` must outlive the runs.
pub fn backends(dir: &Path) -> (Vec<Backend>, Option<Postgres>) {
    pin_to_cpus_if_asked();
    let sqlite_dir = dir.join("sqlite");
    std::fs::create_dir_all(&sqlite_dir).expect("create sqlite dir");
    let mut out = Vec::new();
    if std::env::var("DOCGATE_BENCH_SQLITE").as_deref() != Ok("0") {
        out.push(Backend::Sqlite { dir: sqlite_dir });
    }
    let pg = Postgres::obtain();
    if let Some(pg) = &pg {
        out.push(Backend::Postgres {
            url: pg.url.clone(),
        });
    }
    (out, pg)
}

/// Applies `DOCGATE_BENCH_CPUS` to this process (all its threads); what it starts later
/// inherits it.
fn pin_to_cpus_if_asked() {
    let Ok(cpus) = std::env::var("DOCGATE_BENCH_CPUS") else {
        return;
    };
    let pid = std::process::id().to_string();
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", cpus.trim(), &pid])
        .stdout(Stdio::null())
        .status();
    match status {
        Ok(status) if status.success() => println!("note: pinned to CPUs {}", cpus.trim()),
        other => panic!("DOCGATE_BENCH_CPUS={cpus}: taskset failed: {other:?}"),
    }
}

/// Opens a rusqlite connection on docgate's database file configured as docgate configures
/// its own (WAL, `synchronous = NORMAL`, a busy timeout).
pub fn open_sqlite(file: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(file).expect("open sqlite");
    conn.busy_timeout(Duration::from_secs(10)).expect("busy");
    let _: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .expect("wal");
    conn.execute_batch("PRAGMA synchronous = NORMAL")
        .expect("synchronous");
    conn
}

/// Connects with tokio-postgres and drives the connection on a task.
pub async fn connect_pg(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect to PostgreSQL");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// The physical table of `db.coll`, quoted for SQL, read from docgate's SQLite catalog.
pub fn sqlite_table(conn: &rusqlite::Connection, db: &str, coll: &str) -> String {
    let name: String = conn
        .query_row(
            "SELECT table_name FROM dg_collections WHERE db = ?1 AND name = ?2",
            [db, coll],
            |r| r.get(0),
        )
        .expect("collection in dg_collections");
    quote(&name)
}

/// The physical table of `db.coll`, schema-qualified and quoted, from docgate's PostgreSQL
/// catalog.
pub async fn pg_table(client: &tokio_postgres::Client, db: &str, coll: &str) -> String {
    let row = client
        .query_one(
            "SELECT schema_name, table_name FROM docgate.collections WHERE db = $1 AND name = $2",
            &[&db, &coll],
        )
        .await
        .expect("collection in docgate.collections");
    let (schema, table): (String, String) = (row.get(0), row.get(1));
    format!("{}.{}", quote(&schema), quote(&table))
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A small deterministic PRNG (xorshift64*), so runs pick the same `_id`s.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// A test document of ~200 bytes with an integer `_id`.
pub fn sample_doc(i: i64) -> bson::Document {
    bson::doc! {
        "_id": i,
        "name": format!("user-{i:07}"),
        "email": format!("user{i}@example.com"),
        "age": (i % 90) as i32,
        "n": 0i32,
        "score": (i as f64) * 0.25,
        "active": i % 3 != 0,
        "tags": ["alpha", "beta", format!("t{}", i % 17)],
        "address": { "city": format!("city-{}", i % 100), "zip": format!("{:05}", i % 100_000) },
    }
}

/// Empties `coll` and loads `sample_doc(0)` … `sample_doc(docs - 1)`, 1,000 per `insert_many`.
pub async fn load_sample_docs(coll: &mongodb::Collection<bson::Document>, docs: usize) {
    coll.drop().await.expect("drop");
    let all: Vec<bson::Document> = (0..docs as i64).map(sample_doc).collect();
    for chunk in all.chunks(1000) {
        coll.insert_many(chunk.to_vec()).await.expect("load");
    }
}

/// p50 / p90 / p95 / mean / min / max of a set of durations.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    pub p50: Duration,
    pub p90: Duration,
    pub p95: Duration,
    pub mean: Duration,
    pub min: Duration,
    pub max: Duration,
}

pub fn summarize(samples: &[Duration]) -> Summary {
    assert!(!samples.is_empty(), "no samples");
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let at = |q: f64| sorted[((sorted.len() as f64 - 1.0) * q).round() as usize];
    let total: Duration = sorted.iter().sum();
    Summary {
        p50: at(0.50),
        p90: at(0.90),
        p95: at(0.95),
        mean: total / sorted.len() as u32,
        min: sorted[0],
        max: sorted[sorted.len() - 1],
    }
}

/// Microseconds with one decimal.
pub fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

/// `a / b` as a ratio with two decimals.
pub fn ratio(a: Duration, b: Duration) -> String {
    if b.is_zero() {
        return "-".into();
    }
    format!("{:.2}x", a.as_secs_f64() / b.as_secs_f64())
}

/// Prints rows of cells as a left-aligned first column and right-aligned others.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let cols = header.len();
    let mut width = vec![0; cols];
    for (i, h) in header.iter().enumerate() {
        width[i] = h.len();
    }
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            width[i] = width[i].max(cell.len());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i == 0 {
                s.push_str(&format!("{cell:<w$}", w = width[0]));
            } else {
                s.push_str(&format!("  {cell:>w$}", w = width[i]));
            }
        }
        println!("{}", s.trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:`), in KiB.
pub fn proc_status_kib(pid: u32, field: &str) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/<pid>/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}

/// Milliseconds with one decimal.
pub fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

/// Empties `coll` and loads `sample_doc(0)` … `sample_doc(docs - 1)` in `insert_many` batches
/// of `batch`, printing progress every 100,000 documents under `label`; the time it took.
pub async fn load_with_progress(
    coll: &mongodb::Collection<bson::Document>,
    docs: usize,
    batch: usize,
    label: &str,
) -> Duration {
    coll.drop().await.expect("drop");
    let started = Instant::now();
    let mut next_report = 100_000;
    for start in (0..docs).step_by(batch.max(1)) {
        let end = (start + batch).min(docs);
        let documents: Vec<bson::Document> = (start as i64..end as i64).map(sample_doc).collect();
        coll.insert_many(documents).await.expect("load");
        if end >= next_report || end == docs {
            eprint!("\r{label}: loaded {end} of {docs} documents");
            next_report += 100_000;
        }
    }
    eprintln!();
    started.elapsed()
}
