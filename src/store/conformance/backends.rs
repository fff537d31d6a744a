//! The backends the conformance suite runs against, and the throwaway databases they live
//! in: a temporary directory for SQLite, a fresh PostgreSQL database (random name, dropped
//! when the test passes) on the server named by `DOCGATE_TEST_PG_URL`, and with the `oracle`
//! feature the Oracle schema of the user `DOCGATE_TEST_ORACLE` names
//! (`oracle://user:password@host:port/service`): one schema, so its tests take turns, each
//! starting from a schema without docgate's `DG_*` tables. The PostgreSQL
//! backend's own tests use the same databases (`fresh_db`, `admin`).
//!
//! Not here: the tests themselves.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tempfile::TempDir;
use tokio_postgres::NoTls;

#[cfg(feature = "oracle")]
use super::super::oracle::{OracleOptions, OracleStore};
use super::super::postgres::{PostgresOptions, PostgresStore};
use super::super::sqlite::{SqliteOptions, SqliteStore};
use super::super::Store;
use super::ok;

/// Which backend a [`TestBackend`] is, for the few expectations that differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BackendKind {
    Sqlite,
    Postgres,
    #[cfg(feature = "oracle")]
    Oracle,
}

/// Where one backend keeps the data of one test.
enum Place {
    Dir(TempDir),
    Pg(TestDb),
    #[cfg(feature = "oracle")]
    Oracle(oracle_schema::Turn),
}

/// One backend, with an empty database of its own for one test.
pub(crate) struct TestBackend {
    pub(crate) kind: BackendKind,
    place: Place,
}

impl TestBackend {
    /// A store on this backend's database with default options (may be called again: a
    /// second store on the same data, as another process would open it).
    pub(crate) async fn open(&self) -> Box<dyn Store> {
        match &self.place {
            Place::Dir(dir) => Box::new(ok(SqliteStore::open(
                &dir.path().join("data"),
                SqliteOptions::default(),
            ))),
            Place::Pg(db) => Box::new(ok(PostgresStore::connect(
                &db.url,
                PostgresOptions::default(),
            )
            .await)),
            #[cfg(feature = "oracle")]
            Place::Oracle(turn) => Box::new(ok(OracleStore::connect(
                &turn.url,
                OracleOptions::default(),
            )
            .await)),
        }
    }

    /// A store whose pool holds at most `pool_max` connections and makes callers wait at
    /// most `wait` for one.
    pub(crate) async fn open_with(&self, pool_max: usize, wait: Duration) -> Box<dyn Store> {
        match &self.place {
            Place::Dir(dir) => {
                let options = SqliteOptions {
                    pool_max,
                    pool_wait_timeout: wait,
                };
                Box::new(ok(SqliteStore::open(&dir.path().join("data"), options)))
            }
            Place::Pg(db) => {
                let options = PostgresOptions {
                    pool_min: 1,
                    pool_max,
                    pool_wait_timeout: wait,
                    statement_cache: true,
                };
                Box::new(ok(PostgresStore::connect(&db.url, options).await))
            }
            #[cfg(feature = "oracle")]
            Place::Oracle(turn) => {
                let options = OracleOptions {
                    pool_min: 1,
                    pool_max,
                    pool_wait_timeout: wait,
                    statement_cache: true,
                };
                Box::new(ok(OracleStore::connect(&turn.url, options).await))
            }
        }
    }

    /// The URL of the PostgreSQL database, for assertions made behind the store's back.
    pub(crate) fn pg_url(&self) -> Option<&str> {
        match &self.place {
            Place::Pg(db) => Some(&db.url),
            _ => None,
        }
    }

    /// Rows in `table` (a physical name as the store reports it), counted behind the
    /// store's back.
    pub(crate) async fn rows_in(&self, table: &str) -> i64 {
        let sql = format!("SELECT count(*) FROM {table}");
        match &self.place {
            Place::Dir(dir) => {
                let conn = ok(rusqlite::Connection::open(sqlite_file(dir)));
                ok(conn.query_row(&sql, [], |row| row.get(0)))
            }
            Place::Pg(db) => ok(ok(admin(&db.url).await.query_one(&sql, &[]).await).try_get(0)),
            #[cfg(feature = "oracle")]
            Place::Oracle(turn) => oracle_schema::count(&turn.url, sql).await,
        }
    }

    /// The secondary index entries tables in the database, named as `IndexRecord::table`
    /// names them, sorted.
    pub(crate) async fn index_tables(&self) -> Vec<String> {
        match &self.place {
            Place::Dir(dir) => {
                let conn = ok(rusqlite::Connection::open(sqlite_file(dir)));
                let mut stmt = ok(conn.prepare(
                    "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'dgi\\_%' \
                     ESCAPE '\\' ORDER BY name",
                ));
                let rows = ok(stmt.query_map([], |row| row.get::<_, String>(0)));
                ok(rows.collect::<Result<Vec<_>, _>>())
            }
            Place::Pg(db) => {
                let rows = ok(admin(&db.url)
                    .await
                    .query(
                        "SELECT format('\"%s\".\"%s\"', n.nspname, c.relname) FROM pg_class c \
                         JOIN pg_namespace n ON n.oid = c.relnamespace \
                         WHERE c.relname LIKE 'dgi\\_%' AND c.relkind = 'r' ORDER BY 1",
                        &[],
                    )
                    .await);
                rows.iter().map(|row| ok(row.try_get(0))).collect()
            }
            #[cfg(feature = "oracle")]
            Place::Oracle(turn) => oracle_schema::index_tables(&turn.url).await,
        }
    }

    /// Removes the test's database (call when the test passed; drop every store first).
    pub(crate) async fn finish(self) {
        match self.place {
            Place::Dir(dir) => drop(dir),
            Place::Pg(db) => db.drop_db().await,
            #[cfg(feature = "oracle")]
            Place::Oracle(turn) => oracle_schema::wipe(&turn.url).await,
        }
    }
}

/// The SQLite database file of a test directory.
fn sqlite_file(dir: &TempDir) -> std::path::PathBuf {
    dir.path()
        .join("data")
        .join(super::super::sqlite::DATABASE_FILE)
}

/// Every backend that can run here, each with a fresh database: SQLite always, PostgreSQL
/// when `DOCGATE_TEST_PG_URL` is set (and `DOCGATE_SKIP_POSTGRES` is not `1`). The
/// PostgreSQL backend's own tests insist on the server; this suite notes its absence.
pub(crate) async fn backends() -> Vec<TestBackend> {
    let mut out = vec![TestBackend {
        kind: BackendKind::Sqlite,
        place: Place::Dir(ok(tempfile::tempdir())),
    }];
    let configured = std::env::var("DOCGATE_TEST_PG_URL").is_ok_and(|url| !url.is_empty());
    if !configured {
        eprintln!("note: DOCGATE_TEST_PG_URL is not set; conformance test on SQLite only");
    } else if let Some(db) = fresh_db().await {
        out.push(TestBackend {
            kind: BackendKind::Postgres,
            place: Place::Pg(db),
        });
    }
    #[cfg(feature = "oracle")]
    match std::env::var("DOCGATE_TEST_ORACLE") {
        Ok(url) if !url.is_empty() => out.push(TestBackend {
            kind: BackendKind::Oracle,
            place: Place::Oracle(oracle_schema::Turn::take(url).await),
        }),
        _ => eprintln!("note: DOCGATE_TEST_ORACLE is not set; conformance test not run on Oracle"),
    }
    out
}

/// The Oracle schema the suite runs on, reached behind the store's back with the `oracle`
/// crate (on blocking threads).
#[cfg(feature = "oracle")]
mod oracle_schema {
    use super::ok;
    use crate::store::oracle::url::OracleUrl;

    /// Tests on the one schema take turns.
    static TURNS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    /// A test's turn on the schema, which it starts with no `DG_*` tables.
    pub(crate) struct Turn {
        pub(crate) url: String,
        _turn: tokio::sync::MutexGuard<'static, ()>,
    }

    impl Turn {
        pub(crate) async fn take(url: String) -> Turn {
            let turn = TURNS.lock().await;
            wipe(&url).await;
            Turn { url, _turn: turn }
        }
    }

    fn connect(url: &str) -> oracle::Connection {
        let url = ok(OracleUrl::parse(url));
        ok(oracle::Connection::connect(
            &url.user,
            &url.password,
            &url.connect_string,
        ))
    }

    /// Every table of the schema named `DG_*`, quoted.
    fn dg_tables(conn: &oracle::Connection, prefix: &str) -> Vec<String> {
        let rows = ok(conn.query_as::<String>(
            "SELECT table_name FROM user_tables WHERE table_name LIKE :1 ESCAPE '\\' \
             ORDER BY table_name",
            &[&format!("{prefix}%")],
        ));
        rows.map(|name| format!("\"{}\"", ok(name))).collect()
    }

    /// Drops every `DG_*` table.
    pub(crate) async fn wipe(url: &str) {
        let url = url.to_owned();
        ok(tokio::task::spawn_blocking(move || {
            let conn = connect(&url);
            for table in dg_tables(&conn, "DG\\_") {
                ok(conn.execute(
                    &format!("DROP TABLE {table} CASCADE CONSTRAINTS PURGE"),
                    &[],
                ));
            }
        })
        .await);
    }

    pub(crate) async fn count(url: &str, sql: String) -> i64 {
        let url = url.to_owned();
        ok(
            tokio::task::spawn_blocking(move || ok(connect(&url).query_row_as::<i64>(&sql, &[])))
                .await,
        )
    }

    /// The entries tables, named as `IndexRecord::table` names them.
    pub(crate) async fn index_tables(url: &str) -> Vec<String> {
        let url = url.to_owned();
        ok(tokio::task::spawn_blocking(move || dg_tables(&connect(&url), "DG\\_I")).await)
    }
}

/// True when PostgreSQL tests are to be skipped (prints a note).
pub(crate) fn skipped() -> bool {
    if std::env::var("DOCGATE_SKIP_POSTGRES").is_ok_and(|v| v == "1") {
        eprintln!("note: DOCGATE_SKIP_POSTGRES=1, skipping a PostgreSQL store test");
        return true;
    }
    false
}

/// The test server's URL; panics with instructions when it is not set.
pub(crate) fn server_url() -> Option<String> {
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
pub(crate) fn with_dbname(url: &str, dbname: &str) -> String {
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

/// A PostgreSQL database created for one test.
pub(crate) struct TestDb {
    pub(crate) url: String,
    server: String,
    name: String,
}

impl TestDb {
    /// Drops the database (and any connection still open to it).
    pub(crate) async fn drop_db(self) {
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
pub(crate) async fn admin(url: &str) -> tokio_postgres::Client {
    let (client, connection) = ok(tokio_postgres::connect(url, NoTls).await);
    tokio::spawn(connection);
    client
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates a database with a random name; `None` when PostgreSQL tests are skipped.
pub(crate) async fn fresh_db() -> Option<TestDb> {
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
