//! The SQLite backend: the embedded default store. One database file `docgate.db` inside a
//! data directory, a deadpool pool of rusqlite connections, catalog tables, one rowid table
//! per collection holding the `_id` key, the raw BSON and a JSONB image for pushdown.
//!
//! Files: `conn.rs` (connections, pool manager, transactions helper, error mapping),
//! `session.rs` (`StoreSession` and how blocking calls meet tokio), `catalog.rs` (catalog
//! tables, collection DDL, stats), `index.rs` (secondary indexes: their catalog records,
//! entries tables and entry rows), `write.rs` (insert/replace/delete, keeping index entries
//! in step), `sql.rs` (predicates and scans to SQL), `fold.rs` (a core fold run as an aggregate
//! function inside the scan's statement); the BSON → JSON image comes from `../image.rs`, shared with PostgreSQL.
//!
//! Concurrency: SQLite has one writer at a time; WAL lets readers run beside it. Writers
//! wait for the lock up to `pool_wait_timeout` (SQLite's `busy_timeout`), then get a
//! retryable `Unavailable`. Checking a connection out waits up to the same timeout, then
//! `PoolTimeout`. The pool hands out the most recently returned connection first (LIFO),
//! whose statement cache and pages are warm.
//!
//! Not for: MongoDB semantics; predicates given here may over-select and the core re-checks.

mod capped;
mod catalog;
mod catalog_row;
mod conn;
mod fold;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod index;
mod meta;
mod project;
mod session;
mod sql;
mod write;
mod write_record;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use deadpool::managed::{Pool, QueueMode};
use deadpool::Runtime;

use super::{Store, StoreCounters, StoreError, StoreSession};
use conn::{db_err, open_connection, pool_err, Manager, PooledConn};

pub use session::SqliteSession;

/// Name of the database file inside the data directory.
pub const DATABASE_FILE: &str = "docgate.db";

/// Settings of the SQLite store.
#[derive(Clone, Debug, PartialEq)]
pub struct SqliteOptions {
    /// Most connections open at once (readers run in parallel; writers take turns).
    pub pool_max: usize,
    /// How long a caller waits for a pooled connection, and for SQLite's write lock.
    pub pool_wait_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            pool_max: 8,
            pool_wait_timeout: Duration::from_secs(10),
        }
    }
}

/// The SQLite store. Cheap to share behind an `Arc`; owns the one connection pool.
pub struct SqliteStore {
    pool: Pool<Manager>,
    file: PathBuf,
    options: SqliteOptions,
    /// Sessions waiting for the write lock now (in `begin`).
    waiting_writers: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    counters: std::sync::Arc<StoreCounters>,
}

impl SqliteStore {
    /// Opens (creating if missing) the data directory `path` and the database file in it,
    /// and creates the catalog tables if this is a new database.
    pub fn open(path: &Path, options: SqliteOptions) -> Result<SqliteStore, StoreError> {
        std::fs::create_dir_all(path).map_err(|e| {
            StoreError::Unavailable(format!(
                "cannot create data directory {}: {e}",
                path.display()
            ))
        })?;
        let file = path.join(DATABASE_FILE);
        let first = open_connection(&file, options.pool_wait_timeout).map_err(db_err)?;
        catalog::init_schema(&first)?;
        drop(first);
        let pool = Pool::builder(Manager::new(file.clone(), options.pool_wait_timeout))
            .max_size(options.pool_max.max(1))
            .wait_timeout(Some(options.pool_wait_timeout))
            .queue_mode(QueueMode::Lifo)
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| StoreError::Database(format!("connection pool: {e}")))?;
        Ok(SqliteStore {
            pool,
            file,
            options,
            waiting_writers: Default::default(),
            counters: Default::default(),
        })
    }

    /// Path of the database file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Opens up to `count` pooled connections now (ORDS's `pool.min`), so that the first
    /// requests that need them do not pay for opening one (a few milliseconds: the file,
    /// WAL mode, the schema).
    pub async fn open_connections(&self, count: usize) -> Result<(), StoreError> {
        let mut opened = Vec::with_capacity(count);
        while opened.len() < count.min(self.options.pool_max.max(1)) {
            opened.push(self.sqlite_session().await?);
        }
        Ok(())
    }

    /// A session with its concrete type (for `explain_scan` and tests).
    pub async fn sqlite_session(&self) -> Result<SqliteSession, StoreError> {
        let conn = self
            .counters
            .checkout(&self.pool)
            .await
            .map_err(|e| pool_err(e, self.options.pool_wait_timeout))?;
        Ok(SqliteSession::new(
            PooledConn(conn),
            self.options.pool_wait_timeout,
            self.waiting_writers.clone(),
            self.counters.clone(),
        ))
    }
}

#[async_trait]
impl Store for SqliteStore {
    fn backend_name(&self) -> &'static str {
        "sqlite"
    }

    fn supports_capped(&self) -> bool {
        true
    }

    fn group_in_statement(&self) -> super::GroupInStatement {
        super::GroupInStatement::Fold
    }

    fn projects_in_statement(&self) -> bool {
        true
    }

    fn pool_status(&self) -> super::PoolStatus {
        super::PoolStatus::of(self.pool.status())
    }

    fn counters(&self) -> &StoreCounters {
        &self.counters
    }

    fn describe(&self) -> String {
        format!("sqlite {}", self.file.display())
    }

    async fn session(&self) -> Result<Box<dyn StoreSession>, StoreError> {
        Ok(Box::new(self.sqlite_session().await?))
    }

    async fn checkpoint(&self) -> Result<(), StoreError> {
        self.sqlite_session().await?.checkpoint().await
    }
}
