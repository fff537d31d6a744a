//! Connections: the deadpool manager that pools PostgreSQL clients, the per-connection state
//! the backend keeps (transaction, pending statements, statement cache, broken), the
//! statement helpers every module uses, the "own transaction or savepoint" scope of writes,
//! and the mapping of PostgreSQL errors to `StoreError`.
//!
//! Not for: SQL about collections or documents (`catalog.rs`, `write.rs`, `sql.rs`).
//!
//! Round trips: `BEGIN`, `SAVEPOINT` and the `LOCK TABLE` a write takes before it reads the
//! catalog (`lock_before_next`, see `write.rs`) are not sent on their own. They are remembered as
//! pending and sent in the same network write as the next statement (tokio-postgres
//! pipelines requests that are polled together), and the `RELEASE` of a single-statement
//! write goes along too. A one-statement write inside the caller's transaction therefore
//! costs one round trip (`SAVEPOINT; INSERT …; RELEASE`), and `begin` + first read one. A
//! statement is prepared once per connection when `statement_cache` is on (a map here
//! rather than deadpool's cache, because pipelining needs to know whether a `Parse` round
//! trip comes first; a statement that is not cached yet is prepared after the pending
//! prologue, so a failing `Parse` still happens inside the savepoint).
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

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use deadpool::managed::{self, Metrics, RecycleError, RecycleResult};
use deadpool_postgres::ClientWrapper;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};

use super::super::{StoreCounters, StoreError};

/// Prepared statements kept per connection; past it the cache starts over.
const STATEMENT_CACHE: usize = 256;

/// One pooled PostgreSQL connection with the state the backend tracks about it.
pub(super) struct PgConn {
    client: ClientWrapper,
    /// How to cancel the statement running on this connection (`killOp`), made once.
    cancel: std::sync::Arc<tokio_postgres::CancelToken>,
    /// Set when a cancel request was sent for this connection. PostgreSQL acts on a cancel
    /// request whenever it arrives, so one still on its way could stop the statement of the
    /// next command to use the connection: such a connection is never handed out again.
    cancel_sent: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Prepared statements by SQL text (empty when the cache is off).
    statements: HashMap<String, Statement>,
    statement_cache: bool,
    /// A transaction (the caller's or one of our own) may be open or pending.
    pub(super) dirty: bool,
    /// The caller opened a transaction with `begin`.
    pub(super) in_tx: bool,
    /// A statement failed inside the caller's transaction outside any savepoint, so
    /// PostgreSQL has aborted it; `commit` must not pretend it succeeded.
    pub(super) aborted: bool,
    /// A call failed with a connection error; never hand this connection out again.
    pub(super) broken: bool,
    /// `BEGIN` to send before the next statement.
    pending_begin: bool,
    /// The caller's transaction is a snapshot transaction (`begin_snapshot`): its `BEGIN`
    /// is [`SNAPSHOT_BEGIN`].
    snapshot: bool,
    /// `SAVEPOINT dg_op` to send before the next statement.
    pending_savepoint: bool,
    /// `SAVEPOINT dg_doc` to send before the next statement (after `dg_op`).
    pending_doc_savepoint: bool,
    /// `LOCK TABLE …;` to send before the next statement (after `dg_op`, before `dg_doc`,
    /// so that undoing one document does not release it).
    pending_lock: Option<String>,
    /// `"schema"."table"` of the last unique violation, to tell which index refused a write.
    pub(super) violation: Option<String>,
    /// The store's totals (statement times).
    counters: Arc<StoreCounters>,
}

/// deadpool manager: `deadpool_postgres::Manager` plus rollback of dirty connections.
pub(super) struct Manager {
    inner: deadpool_postgres::Manager,
    statement_cache: bool,
    counters: Arc<StoreCounters>,
}

impl Manager {
    pub(super) fn new(
        inner: deadpool_postgres::Manager,
        statement_cache: bool,
        counters: Arc<StoreCounters>,
    ) -> Self {
        Manager {
            inner,
            statement_cache,
            counters,
        }
    }
}

impl managed::Manager for Manager {
    type Type = PgConn;
    type Error = tokio_postgres::Error;

    async fn create(&self) -> Result<PgConn, tokio_postgres::Error> {
        let client = managed::Manager::create(&self.inner).await?;
        Ok(PgConn {
            cancel: std::sync::Arc::new(client.cancel_token()),
            cancel_sent: std::sync::Arc::default(),
            client,
            statements: HashMap::new(),
            statement_cache: self.statement_cache,
            dirty: false,
            in_tx: false,
            aborted: false,
            broken: false,
            pending_begin: false,
            snapshot: false,
            pending_savepoint: false,
            pending_doc_savepoint: false,
            pending_lock: None,
            violation: None,
            counters: self.counters.clone(),
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
        if conn.cancel_sent.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(RecycleError::message(
                "a cancel request was sent for it (it could still arrive)",
            ));
        }
        let sent_something = !conn.pending_begin;
        conn.pending_begin = false;
        conn.pending_savepoint = false;
        conn.pending_doc_savepoint = false;
        conn.pending_lock = None;
        if (conn.dirty || conn.in_tx) && sent_something {
            conn.client.batch_execute("ROLLBACK").await?;
        }
        conn.reset_transaction();
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

/// What a statement answers.
enum Answer {
    Rows(Vec<Row>),
    Count(u64),
}

/// Sends `text` (simple protocol) unless it is empty.
async fn send(client: &Client, text: &str) -> Result<(), tokio_postgres::Error> {
    if text.is_empty() {
        Ok(())
    } else {
        client.batch_execute(text).await
    }
}

impl PgConn {
    /// Forgets every transaction flag (after a rollback or commit went through).
    pub(super) fn reset_transaction(&mut self) {
        self.dirty = false;
        self.in_tx = false;
        self.aborted = false;
        self.pending_begin = false;
        self.snapshot = false;
        self.pending_savepoint = false;
        self.pending_doc_savepoint = false;
        self.pending_lock = None;
    }

    /// Starts the caller's snapshot transaction (a multi-document transaction): like
    /// `begin`, with [`SNAPSHOT_BEGIN`].
    pub(super) fn begin_snapshot(&mut self) {
        self.begin();
        self.snapshot = true;
    }

    /// Takes `LOCK TABLE table IN mode MODE` (`table` quoted, `mode` one of the `LOCK_*`
    /// constants) with the next statement, in the same pipeline: inside the scope of the
    /// write (a `LOCK` needs a transaction block, so `run_atomic` then opens one). The lock
    /// holds until the scope is rolled back or the transaction ends.
    pub(super) fn lock_before_next(&mut self, table: &str, mode: &str) {
        self.pending_lock = Some(format!("LOCK TABLE {table} IN {mode} MODE;"));
    }

    /// Starts the caller's transaction; `BEGIN` goes out with the next statement.
    pub(super) fn begin(&mut self) {
        self.in_tx = true;
        self.dirty = true;
        self.aborted = false;
        self.pending_begin = true;
    }

    /// Ends the caller's transaction with `COMMIT` or `ROLLBACK` (nothing to send when
    /// no statement ran since `begin`).
    pub(super) async fn end(&mut self, commit: bool) -> Result<(), StoreError> {
        if self.pending_begin {
            self.reset_transaction();
            return Ok(());
        }
        self.pending_savepoint = false;
        let result = self.batch(if commit { "COMMIT" } else { "ROLLBACK" }).await;
        if result.is_ok() {
            self.reset_transaction();
        } else {
            // A failed COMMIT ends the transaction too; the pool rolls back if needed.
            self.in_tx = false;
            self.aborted = false;
        }
        result
    }

    /// The pending prologue (`BEGIN; SAVEPOINT dg_op;`), now considered sent.
    fn take_prologue(&mut self) -> String {
        let mut text = String::new();
        if std::mem::take(&mut self.pending_begin) {
            text.push_str(if self.snapshot && self.in_tx {
                SNAPSHOT_BEGIN
            } else {
                "BEGIN;"
            });
        }
        if std::mem::take(&mut self.pending_savepoint) {
            text.push_str("SAVEPOINT dg_op;");
        }
        if let Some(lock) = self.pending_lock.take() {
            text.push_str(&lock);
        }
        if std::mem::take(&mut self.pending_doc_savepoint) {
            text.push_str("SAVEPOINT dg_doc;");
        }
        text
    }

    /// Remembers a connection error so that the pool discards this connection, and an
    /// error inside the caller's transaction, which PostgreSQL has now aborted.
    fn check<T>(&mut self, r: Result<T, tokio_postgres::Error>) -> Result<T, StoreError> {
        r.map_err(|e| {
            self.violation = e
                .as_db_error()
                .filter(|db| *db.code() == SqlState::UNIQUE_VIOLATION)
                .and_then(|db| {
                    Some(format!(
                        "{}.{}",
                        quote_ident(db.schema()?),
                        quote_ident(db.table()?)
                    ))
                });
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

    /// Sends the prologue and `sql` with `params`, then `epilogue`, in one pipeline (plus a
    /// `Parse` round trip first when the statement is not prepared yet).
    async fn run(
        &mut self,
        sql: &str,
        params: &Params,
        epilogue: &str,
        rows: bool,
    ) -> Result<Answer, tokio_postgres::Error> {
        let _running = self.statement_started(sql);
        let mut prologue = self.take_prologue();
        let stmt = match self.statements.get(sql) {
            Some(stmt) => stmt.clone(),
            None => {
                let (sent, prepared) =
                    tokio::join!(send(&self.client, &prologue), self.client.prepare(sql));
                prologue.clear();
                sent?;
                let stmt = prepared?;
                if self.statement_cache {
                    if self.statements.len() >= STATEMENT_CACHE {
                        self.statements.clear();
                    }
                    self.statements.insert(sql.to_owned(), stmt.clone());
                }
                stmt
            }
        };
        let client: &Client = &self.client;
        let values = refs(params);
        let statement = async {
            if rows {
                client.query(&stmt, &values).await.map(Answer::Rows)
            } else {
                client.execute(&stmt, &values).await.map(Answer::Count)
            }
        };
        let started = std::time::Instant::now();
        let (sent, answer, after) =
            tokio::join!(send(client, &prologue), statement, send(client, epilogue));
        self.counters.statement_took(started);
        sent?;
        let answer = answer?;
        after?;
        Ok(answer)
    }

    /// `run` of a single statement that must be atomic and, inside the caller's
    /// transaction, must leave it usable when it fails: there it is wrapped in a savepoint
    /// sent in the same pipeline. Outside, a single statement is atomic by itself; with a
    /// pending lock (which needs a transaction block) it goes out as `BEGIN; LOCK …;`, the
    /// statement and `COMMIT` in one pipeline (a failed statement turns that `COMMIT` into
    /// a `ROLLBACK`).
    async fn run_atomic(
        &mut self,
        sql: &str,
        params: &Params,
        rows: bool,
    ) -> Result<Answer, StoreError> {
        if !self.in_tx && self.pending_lock.is_none() {
            let r = self.run(sql, params, "", rows).await;
            return self.check(r);
        }
        if !self.in_tx {
            self.pending_begin = true;
            self.dirty = true;
            let r = self.run(sql, params, "COMMIT", rows).await;
            let r = self.check(r);
            if r.is_err() {
                // The statement may never have been sent (a failed `Parse`), leaving the
                // transaction open: end it (a no-op warning when it is over already).
                if self.batch("ROLLBACK").await.is_err() {
                    return r;
                }
            }
            self.dirty = false;
            return r;
        }
        self.pending_savepoint = true;
        let r = self.run(sql, params, "RELEASE dg_op", rows).await;
        match self.check(r) {
            Ok(answer) => Ok(answer),
            Err(e) => {
                let _ = self.undo_savepoint("dg_op").await;
                Err(e)
            }
        }
    }

    /// Runs a statement that returns rows in a savepoint `dg_doc` of its own, sent in the
    /// same pipeline (`SAVEPOINT dg_doc; …; RELEASE dg_doc`), so that a failure undoes just
    /// this statement; only inside a scope or the caller's transaction.
    pub(super) async fn query_in_savepoint(
        &mut self,
        sql: &str,
        params: &Params,
    ) -> Result<Vec<Row>, StoreError> {
        self.pending_doc_savepoint = true;
        let r = self.run(sql, params, "RELEASE dg_doc", true).await;
        match self.check(r) {
            Ok(Answer::Rows(rows)) => Ok(rows),
            Ok(Answer::Count(_)) => Ok(Vec::new()),
            Err(e) => {
                self.undo_savepoint("dg_doc").await?;
                Err(e)
            }
        }
    }

    /// Runs a statement that returns rows.
    pub(super) async fn query(
        &mut self,
        sql: &str,
        params: &Params,
    ) -> Result<Vec<Row>, StoreError> {
        let r = self.run(sql, params, "", true).await;
        match self.check(r)? {
            Answer::Rows(rows) => Ok(rows),
            Answer::Count(_) => Ok(Vec::new()),
        }
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
        let r = self.run(sql, params, "", false).await;
        match self.check(r)? {
            Answer::Count(n) => Ok(n),
            Answer::Rows(rows) => Ok(rows.len() as u64),
        }
    }

    /// `query` as one atomic write (see `run_atomic`).
    pub(super) async fn query_atomic(
        &mut self,
        sql: &str,
        params: &Params,
    ) -> Result<Vec<Row>, StoreError> {
        match self.run_atomic(sql, params, true).await? {
            Answer::Rows(rows) => Ok(rows),
            Answer::Count(_) => Ok(Vec::new()),
        }
    }

    /// Reports `sql` to the command running it (`currentOp`) and lets its `killOp`
    /// cancel it (PostgreSQL's cancel request, sent on a connection of its own) until the
    /// returned registration is dropped.
    fn statement_started(&self, sql: &str) -> Option<crate::interrupt::CancelRegistration> {
        crate::compute::with_command_interrupt(|interrupt| {
            interrupt.statement_started(sql);
            let token = self.cancel.clone();
            let cancel_sent = self.cancel_sent.clone();
            interrupt.on_cancel(Box::new(move || {
                // Before the request leaves: the pool checks this when it next hands the
                // connection out (the canceller runs under the interrupt's lock, which the
                // registration's drop takes, so this is set before the statement's end).
                cancel_sent.store(true, std::sync::atomic::Ordering::SeqCst);
                let token = token.clone();
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        if let Err(error) = token.cancel_query(tokio_postgres::NoTls).await {
                            tracing::debug!(%error, "cancel request failed");
                        }
                    });
                }
            }))
        })
    }

    /// Runs statements without parameters (simple protocol; DDL and transaction control),
    /// after the pending prologue, in one message.
    pub(super) async fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        let _running = self.statement_started(sql);
        let mut text = self.take_prologue();
        text.push_str(sql);
        let r = self.client.batch_execute(&text).await;
        self.check(r)
    }

    /// Opens the scope of an operation of several statements: its own transaction outside
    /// `begin`, a savepoint inside the caller's (so that a failed call leaves the caller's
    /// transaction usable). Nothing is sent yet: `BEGIN` / `SAVEPOINT` go out with the
    /// first statement.
    pub(super) fn open_scope(&mut self) -> Scope {
        if self.in_tx {
            self.pending_savepoint = true;
            Scope::Savepoint
        } else {
            self.pending_begin = true;
            self.dirty = true;
            Scope::Own
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
        match scope {
            Scope::Own => {
                if std::mem::take(&mut self.pending_begin) {
                    // Nothing was sent.
                    self.pending_lock = None;
                    self.dirty = false;
                    return Ok(());
                }
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
            Scope::Savepoint => {
                if std::mem::take(&mut self.pending_savepoint) {
                    self.pending_lock = None;
                    return Ok(());
                }
                if ok {
                    self.batch("RELEASE dg_op").await
                } else {
                    self.undo_savepoint("dg_op").await
                }
            }
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

    /// Whether anything of a transaction reached the server (else there is nothing to roll
    /// back).
    pub(super) fn transaction_sent(&self) -> bool {
        (self.dirty || self.in_tx) && !self.pending_begin
    }
}

/// Lock mode of writers (what `INSERT`/`UPDATE`/`DELETE` take anyway), taken explicitly
/// before they read the collection's indexes; conflicts with `LOCK_SHARE`.
pub(super) const LOCK_ROW_EXCLUSIVE: &str = "ROW EXCLUSIVE";
/// Lock mode of index builds and drops: waits for writers in flight, keeps new ones out.
pub(super) const LOCK_SHARE: &str = "SHARE";

/// The start of a multi-document transaction: one snapshot for all its reads (MongoDB's
/// snapshot isolation), and a row lock held by another transaction answers 55P03 after a
/// short wait (a write conflict) instead of queueing behind it for its whole life.
const SNAPSHOT_BEGIN: &str =
    "BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL lock_timeout = '200ms';";

/// How an operation of several statements is wrapped (see `PgConn::open_scope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scope {
    Own,
    Savepoint,
}

/// Maps a PostgreSQL error: connection problems and server shutdown are retryable
/// `Unavailable`, unique violations `DuplicateKey`, serialization failures, deadlocks and
/// lock timeouts `WriteConflict`, a missing table `StaleCatalog`, the
/// rest `Database`.
/// Why the running command cancelled its statement, when `code` says a statement was
/// cancelled and the command did cancel (not a server-side `statement_timeout`).
fn cancelled_by_command(code: &SqlState) -> Option<crate::interrupt::Interruption> {
    if *code != SqlState::QUERY_CANCELED {
        return None;
    }
    crate::compute::with_command_interrupt(|interrupt| interrupt.cancellation()).flatten()
}

pub(super) fn pg_err(e: tokio_postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let text = format!("{}: {} ({})", db.severity(), db.message(), code.code());
        return if *code == SqlState::UNIQUE_VIOLATION {
            StoreError::DuplicateKey
        } else if *code == SqlState::T_R_SERIALIZATION_FAILURE
            || *code == SqlState::T_R_DEADLOCK_DETECTED
            || *code == SqlState::LOCK_NOT_AVAILABLE
        {
            // A concurrent transaction changed or holds the same rows.
            StoreError::WriteConflict(text)
        } else if *code == SqlState::DISK_FULL {
            StoreError::OutOfDiskSpace(text)
        } else if let Some(reason) = cancelled_by_command(code) {
            // The command's interrupt cancelled the statement (`killOp`): its reason.
            StoreError::Interrupted(reason)
        } else if *code == SqlState::UNDEFINED_TABLE {
            // A table named by a cached catalog record is gone: another instance dropped or
            // renamed the collection. The caller re-reads the catalog and retries.
            StoreError::StaleCatalog(text)
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

/// `"schema"."table"`.
pub(super) fn qualified(schema: &str, table: &str) -> String {
    format!("{}.{}", quote_ident(schema), quote_ident(table))
}
