//! Shared harness for docgate's integration tests: start the real `docgate` binary
//! on a free loopback port over a fresh data directory, hand out driver clients,
//! kill and restart it on the same data (for crash tests), and stop it on drop.
//!
//! Not for assertions about server behaviour: those live in the test files.
//! The backend is chosen in one place, [`TestBackend`], from `DOCGATE_TEST_BACKEND`:
//! unset or `sqlite` gives each server its own SQLite directory; a `postgres://…` URL
//! gives each server its own freshly created database on that PostgreSQL (created and
//! dropped with `psql`), so tests stay independent on either backend.
//! `DOCGATE_TEST_ORACLE=oracle://user:password@host:port/service` (in a build with
//! `--features oracle`) runs the servers on that Oracle schema instead: one schema for
//! every server, each starting without docgate's `DG_*` tables, so run such suites with
//! `--test-threads=1`.

#![allow(dead_code)]

pub mod launcher;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use tempfile::TempDir;

use launcher::Launch;

/// How long a freshly spawned server gets to accept its first connection.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How many times `start` retries when the chosen port was taken by someone else
/// between releasing it and the server binding it.
const START_ATTEMPTS: usize = 3;

/// The storage of one test server, decided once per server from `DOCGATE_TEST_BACKEND`
/// and kept across restarts (crash tests restart on the same data).
#[derive(Debug)]
pub enum TestBackend {
    /// `sqlite:<dir>`: the server's private directory.
    Sqlite { dir: PathBuf },
    /// A database created for this server on the PostgreSQL that `admin_url` reaches.
    Postgres { admin_url: String, database: String },
    /// The Oracle schema `DOCGATE_TEST_ORACLE` names, emptied of docgate's tables.
    Oracle { url: String },
}

impl TestBackend {
    /// Reads `DOCGATE_TEST_BACKEND`: unset, empty or `sqlite` → SQLite in `data_dir`;
    /// `postgres://…` or `postgresql://…` → a new, empty database on that server.
    pub fn for_new_server(data_dir: &Path) -> TestBackend {
        let oracle = std::env::var("DOCGATE_TEST_ORACLE").unwrap_or_default();
        if !oracle.trim().is_empty() {
            oracle_schema::wipe(oracle.trim());
            return TestBackend::Oracle {
                url: oracle.trim().to_string(),
            };
        }
        let setting = std::env::var("DOCGATE_TEST_BACKEND").unwrap_or_default();
        let setting = setting.trim();
        if setting.is_empty() || setting == "sqlite" {
            return TestBackend::Sqlite {
                dir: data_dir.to_path_buf(),
            };
        }
        if !(setting.starts_with("postgres://") || setting.starts_with("postgresql://")) {
            panic!("DOCGATE_TEST_BACKEND must be `sqlite` or a postgres:// URL, not {setting:?}");
        }
        let database = unique_database_name();
        psql(setting, &format!("CREATE DATABASE \"{database}\""));
        TestBackend::Postgres {
            admin_url: setting.to_string(),
            database,
        }
    }

    /// Runs `sql` as the PostgreSQL superuser of the test cluster; None on SQLite.
    pub fn run_postgres_sql(&self, sql: &str) -> Option<()> {
        match self {
            TestBackend::Sqlite { .. } | TestBackend::Oracle { .. } => None,
            TestBackend::Postgres { admin_url, .. } => {
                psql(admin_url, sql);
                Some(())
            }
        }
    }

    /// The `--backend` argument: the single place it is built.
    pub fn arg(&self) -> String {
        match self {
            TestBackend::Sqlite { dir } => format!("sqlite:{}", dir.display()),
            TestBackend::Postgres {
                admin_url,
                database,
            } => with_database(admin_url, database),
            TestBackend::Oracle { url } => url.clone(),
        }
    }

    /// Removes what `for_new_server` created outside the temp dir.
    pub fn release(&self) {
        if let TestBackend::Postgres {
            admin_url,
            database,
        } = self
        {
            psql(
                admin_url,
                &format!("DROP DATABASE IF EXISTS \"{database}\" WITH (FORCE)"),
            );
        }
    }
}

/// `docgate_test_<pid>_<n>_<nanos>`: unique across parallel tests and test binaries.
fn unique_database_name() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "docgate_test_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

/// `url` with its database (the path after host:port) replaced by `database`,
/// keeping any `?query`.
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

/// Runs one SQL statement with `psql` against `url`; panics with psql's output on failure.
fn psql(url: &str, sql: &str) {
    let out = Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql])
        .output()
        .unwrap_or_else(|e| panic!("run psql for {sql:?}: {e}"));
    assert!(
        out.status.success(),
        "psql {sql:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `PRAGMA integrity_check` of the SQLite database a stopped server left in `data_dir`
/// ("ok" when intact).
pub fn sqlite_integrity_check(data_dir: &Path) -> String {
    let file = data_dir.join("docgate.db");
    let conn = rusqlite::Connection::open(&file)
        .unwrap_or_else(|e| panic!("open {}: {e}", file.display()));
    conn.query_row("PRAGMA integrity_check", [], |row| row.get::<_, String>(0))
        .unwrap_or_else(|e| panic!("integrity_check of {}: {e}", file.display()))
}

/// A running `docgate` process with its own temporary data directory.
pub struct TestServer {
    child: Option<Child>,
    /// Extra flags given to every run of the server.
    extra_args: Vec<String>,
    port: u16,
    /// The port of the REST front end (`--rest-listen`) of the current run.
    rest_port: u16,
    /// The port of the admin listener (`--admin-listen`: `/metrics`) of the current run.
    admin_port: u16,
    /// Holds the data directory and the stderr logs; deleted on drop.
    dir: TempDir,
    /// Incremented on every spawn, so each run of the server has its own log file.
    runs: usize,
    /// Where the data lives; the same for every run of this server.
    backend: TestBackend,
    /// `RLIMIT_NOFILE` (soft and hard) the server runs under, if set.
    open_file_limit: Option<u64>,
}

impl TestServer {
    /// Starts a server on a fresh, empty data directory and waits until it has logged a
    /// line containing "listening" and accepts TCP connections. Panics (with the
    /// server's stderr) if it does not within 20 s.
    pub fn start() -> TestServer {
        TestServer::start_with_args(&[])
    }

    /// Like [`TestServer::start`], with extra command-line flags for every run.
    pub fn start_with_args(args: &[&str]) -> TestServer {
        TestServer::start_with_open_file_limit(args, None)
    }

    /// A server holding at most 40 KB per blocking stage, spilling under `temp`.
    pub fn start_limited(temp: &tempfile::TempDir) -> TestServer {
        TestServer::start_with_args(&[
            "--blocking-stage-memory-limit-bytes",
            "40000",
            "--temp-dir",
            temp.path().to_str().expect("utf-8 temp dir"),
        ])
    }

    /// Like [`TestServer::start_with_args`], the server's soft and hard open-file limit
    /// set to `limit` (as `ulimit -n` would).
    pub fn start_with_open_file_limit(args: &[&str], limit: Option<u64>) -> TestServer {
        let dir = tempfile::Builder::new()
            .prefix("docgate-test-")
            .tempdir()
            .expect("create temp dir");
        let data_dir = dir.path().join("data");
        std::fs::create_dir_all(&data_dir).expect("create data dir");
        let backend = TestBackend::for_new_server(&data_dir);
        let mut server = TestServer {
            extra_args: args.iter().map(|a| a.to_string()).collect(),
            child: None,
            port: 0,
            rest_port: 0,
            admin_port: 0,
            dir,
            runs: 0,
            backend,
            open_file_limit: limit,
        };
        server.spawn_and_wait();
        server
    }

    /// Sends SIGTERM (a graceful shutdown) and waits for the server to exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("server is running");
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed");
        child.wait().expect("wait for docgate")
    }

    /// Waits up to `within` for the server to exit by itself (the `shutdown` command);
    /// its exit status, or None if it still runs.
    pub fn wait_for_exit(
        &mut self,
        within: std::time::Duration,
    ) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + within;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Kills the server with SIGKILL (if it is running) and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the running server (SIGKILL, no chance to flush) if there is one and
    /// starts a new one on the same data directory. The new server may listen on a
    /// different port: use [`TestServer::uri`] / [`TestServer::port`] afterwards.
    pub fn restart_same_data(&mut self) {
        self.kill();
        self.spawn_and_wait();
    }

    /// The process id of the current server.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("server is running").id()
    }

    /// The resident memory of the current server, in bytes (`VmRSS` of /proc).
    pub fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read /proc/<pid>/status");
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/<pid>/status");
        kib * 1024
    }

    /// CPU time (user and system) the current server has used, in seconds.
    pub fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()))
            .expect("read /proc/<pid>/stat");
        // Fields after the parenthesised command name: state is the 3rd field, utime the
        // 14th and stime the 15th, counted in clock ticks (100 per second on Linux).
        let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0)
        };
        (ticks(11) + ticks(12)) as f64 / 100.0
    }

    /// The port the current server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port the current server's REST front end listens on.
    pub fn rest_port(&self) -> u16 {
        self.rest_port
    }

    /// `http://127.0.0.1:<rest port>`: prefix of every REST URL of the current server.
    pub fn rest_base(&self) -> String {
        format!("http://127.0.0.1:{}", self.rest_port)
    }

    /// `http://127.0.0.1:<admin port>`: where the current server serves `/metrics`,
    /// `/livez` and `/readyz`.
    pub fn admin_base(&self) -> String {
        format!("http://127.0.0.1:{}", self.admin_port)
    }

    /// A connection string for the current server (direct connection, short
    /// server-selection timeout so a dead server fails a test instead of hanging it).
    pub fn uri(&self) -> String {
        self.uri_with_options("serverSelectionTimeoutMS=10000")
    }

    /// A direct-connection string for the current server with extra URI `options`
    /// (`key=value` pairs joined by `&`).
    pub fn uri_with_options(&self, options: &str) -> String {
        format!(
            "mongodb://127.0.0.1:{}/?directConnection=true&{options}",
            self.port
        )
    }

    /// A driver client for the current server.
    pub async fn client(&self) -> mongodb::Client {
        self.client_with_uri(&self.uri()).await
    }

    /// A driver client built from `uri` (for tests that need extra URI options).
    pub async fn client_with_uri(&self, uri: &str) -> mongodb::Client {
        mongodb::Client::with_uri_str(uri)
            .await
            .unwrap_or_else(|e| panic!("client for {uri}: {e}"))
    }

    /// The data directory given to the server (meaningful for the sqlite backend).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The storage this server runs on.
    pub fn backend(&self) -> &TestBackend {
        &self.backend
    }

    /// Runs SQL directly on the server's backend database, behind docgate's back: on SQLite
    /// through rusqlite on the data directory's database file, on PostgreSQL with psql.
    pub fn run_backend_sql(&self, sql: &str) {
        match &self.backend {
            TestBackend::Sqlite { dir } => {
                let path = dir.join(docgate::store::sqlite::DATABASE_FILE);
                let connection = rusqlite::Connection::open(&path)
                    .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
                connection
                    .busy_timeout(Duration::from_secs(10))
                    .expect("busy timeout");
                connection
                    .execute_batch(sql)
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
            TestBackend::Postgres {
                admin_url,
                database,
            } => psql(&with_database(admin_url, database), sql),
            TestBackend::Oracle { url } => oracle_schema::execute(url, sql),
        }
    }

    /// Everything the server wrote to stderr in all its runs so far.
    pub fn stderr_log(&self) -> String {
        let mut all = String::new();
        for run in 1..=self.runs {
            let path = self.log_path(run);
            if let Ok(text) = std::fs::read_to_string(&path) {
                all.push_str(&format!("--- {} ---\n", path.display()));
                all.push_str(&text);
            }
        }
        all
    }

    fn log_path(&self, run: usize) -> PathBuf {
        run_log(self.dir.path(), run)
    }

    fn spawn_and_wait(&mut self) {
        let backend = self.backend.arg();
        let args: Vec<&str> = self.extra_args.iter().map(String::as_str).collect();
        let launch = Launch {
            args: &args,
            timeout: START_TIMEOUT,
            open_file_limit: self.open_file_limit,
            attempts: START_ATTEMPTS,
            ..Launch::new(&backend)
        };
        let dir = self.dir.path().to_path_buf();
        let runs = &mut self.runs;
        let started = launch.start(|_| {
            *runs += 1;
            run_log(&dir, *runs)
        });
        match started {
            Ok(launched) => {
                self.child = Some(launched.child);
                self.port = launched.port;
                self.rest_port = launched.rest_port;
                self.admin_port = launched.admin_port;
            }
            Err(why) => panic!(
                "docgate did not start ({why}) after {START_ATTEMPTS} attempts\n{}",
                self.stderr_log()
            ),
        }
    }
}

/// The stderr log of run `run` (counted from 1) of a server whose files are in `dir`.
fn run_log(dir: &Path, run: usize) -> PathBuf {
    dir.join(format!("docgate.{run}.stderr.log"))
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("docgate stderr:\n{}", self.stderr_log());
            // Keep a PostgreSQL database of a failed test for inspection.
            if let TestBackend::Postgres { database, .. } = &self.backend {
                eprintln!("kept PostgreSQL database {database}");
            }
            return;
        }
        self.backend.release();
    }
}

#[cfg(test)]
mod harness_tests {
    use super::with_database;

    #[test]
    fn with_database_replaces_only_the_database() {
        assert_eq!(
            with_database("postgres://u@127.0.0.1:5432/postgres", "t1"),
            "postgres://u@127.0.0.1:5432/t1"
        );
        assert_eq!(
            with_database("postgresql://u:p@h/db?sslmode=disable", "t2"),
            "postgresql://u:p@h/t2?sslmode=disable"
        );
        assert_eq!(
            with_database("postgres://u@h:1", "t3"),
            "postgres://u@h:1/t3"
        );
    }
}

/// The Oracle schema of `DOCGATE_TEST_ORACLE`, reached with the `oracle` crate.
#[cfg(feature = "oracle")]
mod oracle_schema {
    fn connect(url: &str) -> oracle::Connection {
        let url = docgate::store::oracle::url::OracleUrl::parse(url)
            .unwrap_or_else(|e| panic!("DOCGATE_TEST_ORACLE: {e}"));
        oracle::Connection::connect(&url.user, &url.password, &url.connect_string)
            .unwrap_or_else(|e| panic!("DOCGATE_TEST_ORACLE: {e}"))
    }

    /// Runs one statement and commits it.
    pub fn execute(url: &str, sql: &str) {
        let conn = connect(url);
        conn.execute(sql, &[])
            .and_then(|_| conn.commit())
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Drops every table named `DG_*` (docgate's catalog, collections and index entries).
    pub fn wipe(url: &str) {
        let conn = connect(url);
        let tables: Vec<String> = conn
            .query_as::<String>(
                "SELECT table_name FROM user_tables WHERE table_name LIKE 'DG\\_%' ESCAPE '\\'",
                &[],
            )
            .and_then(|rows| rows.collect())
            .unwrap_or_else(|e| panic!("list the DG_ tables: {e}"));
        for table in tables {
            conn.execute(
                &format!("DROP TABLE \"{table}\" CASCADE CONSTRAINTS PURGE"),
                &[],
            )
            .unwrap_or_else(|e| panic!("drop {table}: {e}"));
        }
    }
}

/// Without the `oracle` feature there is no Oracle backend to run the suites on.
#[cfg(not(feature = "oracle"))]
mod oracle_schema {
    const NEEDS_FEATURE: &str =
        "DOCGATE_TEST_ORACLE needs a build with the Oracle backend: cargo test --features oracle";

    pub fn execute(_url: &str, _sql: &str) {
        panic!("{NEEDS_FEATURE}");
    }

    pub fn wipe(_url: &str) {
        panic!("{NEEDS_FEATURE}");
    }
}

/// `serverStatus.metrics.query.<group>.<name>`.
pub async fn query_metric(client: &mongodb::Client, group: &str, name: &str) -> i64 {
    let status = client
        .database("admin")
        .run_command(mongodb::bson::doc! {"serverStatus": 1})
        .await
        .expect("serverStatus");
    status
        .get_document("metrics")
        .and_then(|m| m.get_document("query"))
        .and_then(|q| q.get_document(group))
        .and_then(|g| g.get_i64(name))
        .unwrap_or_else(|_| panic!("metrics.query.{group}.{name} in {status}"))
}
