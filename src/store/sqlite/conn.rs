//! Connections: opening and configuring one SQLite connection, the deadpool `Manager` that
//! pools them, the guard that never lets a half transaction go back to the pool, the
//! "own transaction or savepoint" helper every write uses, and the mapping of SQLite errors
//! to `StoreError`.
//!
//! Not for: SQL about collections, documents or the catalog (`catalog.rs`, `write.rs`,
//! `sql.rs`), or how blocking calls are scheduled on tokio (`session.rs`).
//!
//! Durability: every connection runs in WAL mode with `synchronous = NORMAL`. A committed
//! transaction is in the WAL file before `COMMIT` returns, so it survives `kill -9` of the
//! process (MongoDB's default journal gives the same guarantee); only a power loss or OS
//! crash may lose the last commits. `busy_timeout` makes a writer wait for SQLite's single
//! write lock instead of failing at once; after it expires the error is `Unavailable`.

use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::time::Duration;

use deadpool::managed::{self, Metrics, RecycleResult};
use rusqlite::trace::{TraceEvent, TraceEventCodes};
use rusqlite::{ffi, Connection, ErrorCode, OpenFlags};

use super::super::StoreError;

/// Prepared statements kept per connection (`prepare_cached`).
const STATEMENT_CACHE: usize = 64;

/// Opens and configures one connection to the database file at `path`.
pub(super) fn open_connection(path: &Path, busy_timeout: Duration) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(busy_timeout)?;
    // journal_mode answers with a row; WAL is persistent in the file, asking again is cheap.
    let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    conn.execute_batch("PRAGMA synchronous = NORMAL")?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    super::project::register(&conn)?;
    // Each statement's text (placeholders, never values) goes to the command running it,
    // for `currentOp` and the slow-operation log.
    conn.trace_v2(
        TraceEventCodes::SQLITE_TRACE_STMT,
        Some(|event: TraceEvent<'_>| {
            if let TraceEvent::Stmt(_, sql) = event {
                if !sql.starts_with("--") {
                    crate::compute::with_command_interrupt(|interrupt| {
                        interrupt.statement_started(sql)
                    });
                }
            }
        }),
    )?;
    Ok(conn)
}

/// deadpool manager over `rusqlite::Connection`.
pub(super) struct Manager {
    path: PathBuf,
    busy_timeout: Duration,
}

impl Manager {
    pub(super) fn new(path: PathBuf, busy_timeout: Duration) -> Self {
        Manager { path, busy_timeout }
    }
}

impl managed::Manager for Manager {
    type Type = Connection;
    type Error = rusqlite::Error;

    /// Opening is a short blocking file operation; it happens only when the pool grows.
    async fn create(&self) -> Result<Connection, rusqlite::Error> {
        open_connection(&self.path, self.busy_timeout)
    }

    /// A connection that comes back inside a transaction (its session was dropped or its
    /// future cancelled mid-transaction) is rolled back before anyone else gets it.
    async fn recycle(&self, conn: &mut Connection, _: &Metrics) -> RecycleResult<rusqlite::Error> {
        rollback_if_open(conn)?;
        // A snapshot transaction shortened the wait for the write lock; restore it.
        conn.busy_timeout(self.busy_timeout)?;
        Ok(())
    }
}

/// Rolls back an open transaction, if any.
pub(super) fn rollback_if_open(conn: &Connection) -> rusqlite::Result<()> {
    if !conn.is_autocommit() {
        conn.execute_batch("ROLLBACK")?;
    }
    Ok(())
}

/// A pooled connection that rolls back any open transaction when dropped, so that the
/// write lock is released at once rather than when the pool next recycles it.
pub(super) struct PooledConn(pub(super) managed::Object<Manager>);

impl Deref for PooledConn {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.0
    }
}

impl DerefMut for PooledConn {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.0
    }
}

impl Drop for PooledConn {
    fn drop(&mut self) {
        // A failed rollback leaves the transaction open; `Manager::recycle` tries again.
        let _ = rollback_if_open(&self.0);
    }
}

/// Runs `f` atomically: in its own `BEGIN IMMEDIATE` transaction when the connection is in
/// autocommit mode, else inside a savepoint of the caller's transaction. On error everything
/// `f` did is undone and the caller's transaction (if any) stays usable.
pub(super) fn write_tx<R>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<R, StoreError>,
) -> Result<R, StoreError> {
    let own = conn.is_autocommit();
    let (start, done, undo) = if own {
        ("BEGIN IMMEDIATE", "COMMIT", "ROLLBACK")
    } else {
        (
            "SAVEPOINT dg_op",
            "RELEASE dg_op",
            "ROLLBACK TO dg_op; RELEASE dg_op",
        )
    };
    conn.execute_batch(start).map_err(db_err)?;
    let result = f(conn).and_then(|r| conn.execute_batch(done).map(|()| r).map_err(db_err));
    if result.is_err() {
        // SQLite may already have rolled back on its own (e.g. on SQLITE_FULL); then this
        // fails with "no transaction is active", which changes nothing.
        let _ = conn.execute_batch(undo);
    }
    result
}

/// Maps a SQLite error: lock contention is retryable, unique violations are duplicate keys,
/// a full disk is out of disk space, everything else is a database error.
pub(super) fn db_err(e: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::SqliteFailure(failure, _) = &e {
        match failure.code {
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
                return StoreError::Unavailable(e.to_string())
            }
            ErrorCode::DiskFull => return StoreError::OutOfDiskSpace(e.to_string()),
            // The command's interrupt stopped the statement (`killOp`): its reason.
            ErrorCode::OperationInterrupted => {
                if let Some(reason) =
                    crate::compute::with_command_interrupt(|interrupt| interrupt.cancellation())
                        .flatten()
                {
                    return StoreError::Interrupted(reason);
                }
            }
            ErrorCode::ConstraintViolation
                if failure.extended_code == ffi::SQLITE_CONSTRAINT_UNIQUE
                    || failure.extended_code == ffi::SQLITE_CONSTRAINT_PRIMARYKEY =>
            {
                return StoreError::DuplicateKey
            }
            _ => {}
        }
    }
    if let rusqlite::Error::SqliteFailure(_, Some(message)) = &e {
        if message.starts_with("no such table") {
            // A table named by a cached catalog record is gone (another process dropped or
            // renamed the collection): the caller re-reads the catalog and retries.
            return StoreError::StaleCatalog(message.clone());
        }
    }
    StoreError::Database(e.to_string())
}

/// Maps a pool checkout error.
pub(super) fn pool_err(e: managed::PoolError<rusqlite::Error>, wait: Duration) -> StoreError {
    match e {
        managed::PoolError::Timeout(_) => StoreError::PoolTimeout(wait),
        managed::PoolError::Backend(e) => db_err(e),
        managed::PoolError::Closed => StoreError::Unavailable("connection pool is closed".into()),
        other => StoreError::Database(other.to_string()),
    }
}
