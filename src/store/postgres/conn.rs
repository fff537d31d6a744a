//! Connections: the deadpool manager that pools PostgreSQL clients, the per-connection state
//! the backend keeps (open transaction, broken), the statement helpers every module uses,
//! the "own transaction or savepoint" scope of writes, and the mapping of PostgreSQL errors
//! to `StoreError`.
//!
//! Not for: SQL about collections or documents (`catalog.rs`, `write.rs`, `sql.rs`).
//!
//! Recycling: the manager wraps `deadpool_postgres::Manager` with `RecyclingMethod::Fast`
//! (`Client::is_closed`, no round trip), and adds two checks of its own:
//! - a connection on which a call failed with a connection error (SQLSTATE class 08,
//!   57P01..57P03, or the socket closed) is marked `broken` and discarded, so after a
//!   PostgreSQL restart the pool drops its dead connections and opens new ones by itself;
//! - a connection that comes back `dirty` (inside a transaction: its session was dropped or a
//!   call was cancelled mid-transaction) gets a `ROLLBACK`, which also proves it alive;
//!   if that fails the connection is discarded.
//!
//! `RecyclingMethod::Verified` would cost a round trip on every checkout (a `find` by `_id`
//! would pay two); the checks above catch the same dead connections that matter here, and a
//! connection that dies between checkout and use answers `Unavailable`, which is retryable.

use std::time::Duration;

use deadpool::managed::{self, Metrics, RecycleError, RecycleResult};
use deadpool_postgres::ClientWrapper;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Row, Statement};

use super::super::StoreError;

/// One pooled PostgreSQL connection with the state the backend tracks about it.
pub(super) struct PgConn {
    client: ClientWrapper,
    /// A transaction (the caller's or one of our own) may be open.
    pub(super) dirty: bool,
    /// The caller opened a transaction with `begin`.
    pub(super) in_tx: bool,
    /// A statement failed inside the caller's transaction outside any savepoint, so
    /// PostgreSQL has aborted it; `commit` must not pretend it succeeded.
    pub(super) aborted: bool,
    /// A call failed with a connection error; never hand this connection out again.
    pub(super) broken: bool,
    statement_cache: bool,
}

/// deadpool manager: `deadpool_postgres::Manager` plus rollback of dirty connections.
pub(super) struct Manager {
    inner: deadpool_postgres::Manager,
    statement_cache: bool,
}

impl Manager {
    pub(super) fn new(inner: deadpool_postgres::Manager, statement_cache: bool) -> Self {
        Manager {
            inner,
            statement_cache,
        }
    }
}

impl managed::Manager for Manager {
    type Type = PgConn;
    type Error = tokio_postgres::Error;

    async fn create(&self) -> Result<PgConn, tokio_postgres::Error> {
        let client = managed::Manager::create(&self.inner).await?;
        Ok(PgConn {
            client,
            dirty: false,
            in_tx: false,
            aborted: false,
            broken: false,
            statement_cache: self.statement_cache,
        })
    }

    async fn recycle(
        &self,
        conn: &mut PgConn,
        metrics: &Metrics,
    ) -> RecycleResult<tokio_postgres::Error> {
        if conn.broken {
            return Err(RecycleError::message("connection broke"));
        }
        if conn.dirty || conn.in_tx {
            conn.client.batch_execute("ROLLBACK").await?;
            conn.dirty = false;
            conn.in_tx = false;
            conn.aborted = false;
        }
        managed::Manager::recycle(&self.inner, &mut conn.client, metrics).await
    }
}

/// Parameters of one statement, in `$n` order.
pub(super) type Params = Vec<Box<dyn ToSql + Sync + Send>>;

fn refs(params: &Params) -> Vec<&(dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| p.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

impl PgConn {
    /// Remembers a connection error so that the pool discards this connection.
    fn check<T>(&mut self, r: Result<T, tokio_postgres::Error>) -> Result<T, StoreError> {
        r.map_err(|e| {
            let mapped = pg_err(e);
            if matches!(mapped, StoreError::Unavailable(_)) || self.client.is_closed() {
                self.broken = true;
            }
            if self.in_tx {
                self.aborted = true;
            }
            mapped
        })
    }

    async fn statement(&self, sql: &str) -> Result<Statement, tokio_postgres::Error> {
        if self.statement_cache {
            self.client.prepare_cached(sql).await
        } else {
            self.client.prepare(sql).await
        }
    }

    /// Runs a statement that returns rows.
    pub(super) async fn query(
        &mut self,
        sql: &str,
        params: &Params,
    ) -> Result<Vec<Row>, StoreError> {
        let r = match self.statement(sql).await {
            Ok(stmt) => self.client.query(&stmt, &refs(params)).await,
            Err(e) => Err(e),
        };
        self.check(r)
    }

    /// Runs a statement that returns exactly one row.
    pub(super) async fn query_one(
        &mut self,
        sql: &str,
        params: &Params,
    ) -> Result<Row, StoreError> {
        let mut rows = self.query(sql, params).await?;
        match rows.pop() {
            Some(row) if rows.is_empty() => Ok(row),
            _ => Err(StoreError::Database(format!(
                "expected one row from: {sql}"
            ))),
        }
    }

    /// Runs a statement; returns the number of rows it touched.
    pub(super) async fn execute(&mut self, sql: &str, params: &Params) -> Result<u64, StoreError> {
        let r = match self.statement(sql).await {
            Ok(stmt) => self.client.execute(&stmt, &refs(params)).await,
            Err(e) => Err(e),
        };
        self.check(r)
    }

    /// Runs statements without parameters (simple protocol; DDL and transaction control).
    pub(super) async fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        let r = self.client.batch_execute(sql).await;
        self.check(r)
    }

    /// Opens the scope of an atomic operation: its own transaction outside `begin`, a
    /// savepoint inside the caller's (so that a failed call leaves the caller's transaction
    /// usable). `needs_tx = false` marks a single statement, atomic by itself, that needs no
    /// scope outside a transaction.
    pub(super) async fn open_scope(&mut self, needs_tx: bool) -> Result<Scope, StoreError> {
        if self.in_tx {
            self.batch("SAVEPOINT dg_op").await?;
            Ok(Scope::Savepoint)
        } else if needs_tx {
            self.dirty = true;
            self.batch("BEGIN").await?;
            Ok(Scope::Own)
        } else {
            Ok(Scope::None)
        }
    }

    /// Closes a scope: commits/releases on success, rolls back on error (the error wins).
    pub(super) async fn close_scope<T>(
        &mut self,
        scope: Scope,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match result {
            Ok(value) => {
                self.finish(scope, true).await?;
                Ok(value)
            }
            Err(e) => {
                // A failed undo marks the connection broken or dirty; the pool cleans up.
                let _ = self.finish(scope, false).await;
                Err(e)
            }
        }
    }

    /// Commits (`ok`) or rolls back a scope.
    pub(super) async fn finish(&mut self, scope: Scope, ok: bool) -> Result<(), StoreError> {
        match (scope, ok) {
            (Scope::None, _) => Ok(()),
            (Scope::Own, ok) => {
                let r = self.batch(if ok { "COMMIT" } else { "ROLLBACK" }).await;
                if r.is_ok() {
                    self.dirty = false;
                } else if ok {
                    // A failed COMMIT ends the transaction too, but make sure.
                    let _ = self.batch("ROLLBACK").await;
                    self.dirty = self.broken;
                }
                r
            }
            (Scope::Savepoint, true) => self.batch("RELEASE dg_op").await,
            (Scope::Savepoint, false) => self.undo_savepoint("dg_op").await,
        }
    }

    /// `ROLLBACK TO name; RELEASE name` (`name` is one of our constant savepoint names).
    pub(super) async fn undo_savepoint(&mut self, name: &str) -> Result<(), StoreError> {
        self.batch(&format!("ROLLBACK TO {name}; RELEASE {name}"))
            .await?;
        // Back to the state before the savepoint, which was not aborted (else the
        // SAVEPOINT itself would have failed).
        self.aborted = false;
        Ok(())
    }

    /// The raw client, for the rollback of a dropped session.
    pub(super) fn client(&self) -> &ClientWrapper {
        &self.client
    }
}

/// How an atomic operation is wrapped (see `PgConn::open_scope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scope {
    None,
    Own,
    Savepoint,
}

/// Maps a PostgreSQL error: connection problems and server shutdown are retryable
/// `Unavailable`, unique violations `DuplicateKey`, the rest `Database`.
pub(super) fn pg_err(e: tokio_postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let text = format!("{}: {} ({})", db.severity(), db.message(), code.code());
        return if *code == SqlState::UNIQUE_VIOLATION {
            StoreError::DuplicateKey
        } else if code.code().starts_with("08")
            || *code == SqlState::ADMIN_SHUTDOWN
            || *code == SqlState::CRASH_SHUTDOWN
            || *code == SqlState::CANNOT_CONNECT_NOW
            || *code == SqlState::TOO_MANY_CONNECTIONS
        {
            StoreError::Unavailable(text)
        } else {
            StoreError::Database(text)
        };
    }
    let io = std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
    if e.is_closed() || io || e.code().is_none() && is_connect_error(&e) {
        StoreError::Unavailable(e.to_string())
    } else {
        StoreError::Database(e.to_string())
    }
}

/// tokio-postgres reports refused connections and timeouts as errors without a SQLSTATE
/// whose text starts with "error connecting" / "timeout".
fn is_connect_error(e: &tokio_postgres::Error) -> bool {
    let text = e.to_string();
    text.starts_with("error connecting")
        || text.starts_with("timeout")
        || text.starts_with("connection closed")
        || text.starts_with("error communicating")
}

/// Maps a pool checkout error: waiting too long for a free connection is `PoolTimeout`;
/// failing to open a new one is `Unavailable`.
pub(super) fn pool_err(e: managed::PoolError<tokio_postgres::Error>, wait: Duration) -> StoreError {
    match e {
        managed::PoolError::Timeout(managed::TimeoutType::Wait) => StoreError::PoolTimeout(wait),
        managed::PoolError::Timeout(other) => {
            StoreError::Unavailable(format!("timed out opening a connection ({other:?})"))
        }
        managed::PoolError::Backend(e) => pg_err(e),
        managed::PoolError::Closed => StoreError::Unavailable("connection pool is closed".into()),
        other => StoreError::Database(other.to_string()),
    }
}

/// `"name"` with embedded quotes doubled: a PostgreSQL identifier.
pub(super) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
