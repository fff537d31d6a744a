//! Errors a backend can report, in backend-neutral terms. The mongo and rest front ends map
//! them to MongoDB codes and HTTP statuses in one place each.

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
    /// Anything else the database reported.
    #[error("database error: {0}")]
    Database(String),
    /// Stored data could not be decoded (corruption or a bug).
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
}
