//! Errors a backend can report, in backend-neutral terms. The mongo and rest front ends map
//! them to MongoDB codes and HTTP statuses in one place each. What the database itself said
//! (PostgreSQL's `FATAL: the database system is shutting down`, SQLite's text) is kept for
//! the server's log; a client is told [`StoreError::client_message`], in docgate's words.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    /// A collection (or other named object) already exists.
    #[error("{0} already exists")]
    AlreadyExists(String),
    /// A unique constraint rejected a write outside `insert` (e.g. a replace).
    #[error("duplicate key")]
    DuplicateKey,
    /// A unique secondary index rejected a write outside `insert` (a replace, or building
    /// the index over existing documents). Carries the index name.
    #[error("duplicate key in index {index}")]
    IndexKeyConflict { index: String },
    /// A write carried index keys for other indexes than its collection has now (the
    /// caller planned from a stale catalog). Nothing was written; re-read the catalog and
    /// retry.
    #[error("stale catalog: {0}")]
    StaleCatalog(String),
    /// The backend cannot do this (yet).
    #[error("{0}")]
    Unsupported(String),
    /// No connection could be checked out of the pool in time; the caller may retry.
    #[error("timed out waiting for a database connection after {0:?}")]
    PoolTimeout(std::time::Duration),
    /// The database could not be reached or the connection broke; the caller may retry.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A write of a snapshot transaction (`begin_snapshot`) met a concurrent one: another
    /// transaction changed or locked the same rows (PostgreSQL's serialization failure,
    /// deadlock or lock timeout), or holds the write lock (SQLite). The whole transaction
    /// may be retried.
    #[error("write conflict: {0}")]
    WriteConflict(String),
    /// Anything else the database reported.
    #[error("database error: {0}")]
    Database(String),
    /// The device holding the data is full (SQLite's SQLITE_FULL, PostgreSQL's disk_full):
    /// the write was rolled back; it may succeed once space is freed.
    #[error("out of disk space: {0}")]
    OutOfDiskSpace(String),
    /// Stored data could not be decoded (corruption or a bug).
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    /// The read was stopped part way: its time limit passed, its client went away, or the
    /// server is shutting down.
    #[error("{0}")]
    Interrupted(#[from] crate::interrupt::Interruption),
}

impl StoreError {
    /// What a client is told. The backend's own text (which names its internals, and may
    /// name tables or settings) stays in the server log; see [`StoreError::withholds_detail`].
    pub fn client_message(&self) -> String {
        match self {
            StoreError::Unavailable(_) => {
                "the database is unavailable at the moment; the operation can be retried".into()
            }
            StoreError::Database(_) => {
                "the database failed the operation; the server log has the details".into()
            }
            StoreError::OutOfDiskSpace(_) => {
                "the device holding the data is out of space; the write was not applied".into()
            }
            StoreError::Corrupt(_) => {
                "stored data could not be read; the server log has the details".into()
            }
            StoreError::WriteConflict(_) => {
                "Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction.".into()
            }
            other => other.to_string(),
        }
    }

    /// Whether [`StoreError::client_message`] leaves out what the backend said (the caller
    /// then logs it).
    pub fn withholds_detail(&self) -> bool {
        matches!(
            self,
            StoreError::Unavailable(_)
                | StoreError::Database(_)
                | StoreError::Corrupt(_)
                | StoreError::OutOfDiskSpace(_)
        )
    }
}
