//! The storage seam: the `Store` trait that every backend implements, and the neutral
//! vocabulary (collection records, stored documents) that the core uses to talk to it. The
//! scan requests and pushdown predicates it evaluates are the planner's (`query::scan`),
//! re-exported here.
//!
//! What lives here: how collections become tables, how documents are stored losslessly
//! (raw BSON bytes plus a backend-specific queryable image), how a pushdown predicate
//! becomes SQL, transactions and the connection pool.
//!
//! What does not: MongoDB command shapes, filter semantics (a predicate given to the store
//! may over-select; the core re-checks with the Rust evaluator), or anything about the wire.
//! Nothing outside `src/store/` spells SQL.

#[cfg(test)]
mod conformance;
pub mod error;
mod image;
mod number_types;
#[cfg(feature = "oracle")]
pub mod oracle;
pub mod postgres;
pub mod settings;
pub mod sqlite;
mod where_clause;

use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bson::Document;

pub use crate::query::scan::{
    IndexBound, KeyOrder, PathValue, PositionedRow, Predicate, ScanPosition, ScanRequest,
};
pub use crate::query::sql_group::{Extreme, GroupRequest, GroupRow, NumberTotals};
pub use error::StoreError;

/// A collection as recorded in the catalog tables of the backend.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectionRecord {
    /// MongoDB database name.
    pub db: String,
    /// MongoDB collection name (may contain `.`).
    pub name: String,
    /// Physical table name chosen by the store; safe to splice as an identifier. Never
    /// given to two tables of one catalog, so it names this incarnation of the collection
    /// only.
    pub table: String,
    /// The options the collection was created with (`create` command fields), as given.
    pub options: Document,
    /// 16 random bytes assigned at creation (and on a rename into another database),
    /// reported as `info.uuid` (BSON binary subtype 4).
    pub uuid: Vec<u8>,
}

/// One document as written: the order-preserving encoding of its `_id`, its raw BSON bytes,
/// and the keys it contributes to each secondary index of its collection.
#[derive(Clone, Debug, Default)]
pub struct StoredDocument {
    /// `query::encode_key(&_id)`; equal `_id`s (by MongoDB's rules) have equal keys.
    pub key: Vec<u8>,
    /// The document exactly as the client sent it (after `_id` was added if missing).
    pub bson: Vec<u8>,
    /// One entry per secondary index of the collection (computed by the core); an index
    /// that excludes the document (sparse, partial) has an entry with no keys.
    pub index_keys: Vec<DocumentIndexKeys>,
}

/// The keys one document contributes to one secondary index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DocumentIndexKeys {
    /// `IndexRecord::table` of the index.
    pub table: String,
    /// `IndexRecord::name`, for conflict reports.
    pub index: String,
    /// Whether the index is unique (a key may belong to one document only).
    pub unique: bool,
    /// The byte keys (sorted, deduplicated); empty when the index excludes the document.
    pub keys: Vec<Vec<u8>>,
}

/// A secondary index as recorded in the catalog tables. Its entries live in their own
/// table of `(ik, k)` rows: index key bytes (order-preserving, from the core) and the `_id`
/// key of the document, ordered by `(ik, k)`, with `ik` unique for unique indexes.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexRecord {
    pub db: String,
    pub collection: String,
    pub name: String,
    /// The index as `listIndexes` shows it ({v, key, name, options...}), as given.
    pub spec: Document,
    /// Physical entries table chosen by the store; safe to splice as an identifier.
    pub table: String,
    pub unique: bool,
    /// Some document has had more than one key in this index (an array on an indexed path);
    /// such an index cannot order a scan.
    pub multikey: bool,
}

/// How an index's entry keys are searched: as ordered byte keys (B-tree ranges) or as
/// words for the backend's full-text engine (a text index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntriesKind {
    Keys,
    Words,
}

/// What happened to a batch of inserts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InsertOutcome {
    /// Indexes (into the batch) of documents rejected by a unique constraint — the `_id`
    /// key or a unique secondary index — ascending. With `ordered`, at most one: the first
    /// conflict, and nothing after it was written.
    pub conflicts: Vec<usize>,
    /// The subset of `conflicts` rejected by a unique secondary index, with the index name
    /// (the others collided on `_id`).
    pub index_conflicts: Vec<(usize, String)>,
    /// Number of documents written.
    pub inserted: u64,
}

/// A metadata record kept beside the collections: users and roles (`auth`), REST modules and
/// OAuth clients (`rest`). `kind` says whose it is, `(kind, db, name)` is the key and `body`
/// is the owner's JSON. Writing one bumps the catalog version like collection DDL does.
#[derive(Clone, Debug, PartialEq)]
pub struct MetaRecord {
    pub kind: String,
    pub db: String,
    pub name: String,
    pub body: serde_json::Value,
}

impl MetaRecord {
    /// A record as a backend stores it (the body as JSON text).
    pub(crate) fn from_stored(
        kind: String,
        db: String,
        name: String,
        body: &str,
    ) -> Result<MetaRecord, StoreError> {
        let body = serde_json::from_str(body)
            .map_err(|e| StoreError::Corrupt(format!("{kind} {db}.{name}: {e}")))?;
        Ok(MetaRecord {
            kind,
            db,
            name,
            body,
        })
    }
}

/// The connection pool's figures (`serverStatus`, `/metrics`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PoolStatus {
    pub max_size: usize,
    pub size: usize,
    pub in_use: usize,
    /// Callers waiting for a connection now.
    pub waiting: usize,
}

impl PoolStatus {
    /// From deadpool's status.
    pub(crate) fn of(status: deadpool::Status) -> PoolStatus {
        PoolStatus {
            max_size: status.max_size,
            size: status.size,
            in_use: status.size.saturating_sub(status.available),
            waiting: status.waiting,
        }
    }
}

/// Running totals each backend keeps of its pool and its statements (`/metrics`).
#[derive(Debug)]
pub struct StoreCounters {
    /// Connections checked out of the pool.
    pub checkouts: AtomicU64,
    /// Checkouts that found every connection of a full pool in use and waited.
    pub waits: AtomicU64,
    /// Checkouts that waited `pool.wait_timeout` in vain (`StoreError::PoolTimeout`).
    pub timeouts: AtomicU64,
    /// Time the backend took per statement (PostgreSQL: one statement's round trip;
    /// SQLite: one call on the connection's blocking thread, its statements together).
    pub statement_seconds: crate::metrics::LatencyHistogram,
}

impl Default for StoreCounters {
    fn default() -> Self {
        StoreCounters {
            checkouts: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            statement_seconds: crate::metrics::latency_histogram(),
        }
    }
}

impl StoreCounters {
    /// Checks a connection out of `pool`, counting the checkout, whether it had to wait,
    /// and whether it timed out.
    pub(crate) async fn checkout<M: deadpool::managed::Manager>(
        &self,
        pool: &deadpool::managed::Pool<M>,
    ) -> Result<deadpool::managed::Object<M>, deadpool::managed::PoolError<M::Error>> {
        self.checkouts.fetch_add(1, Ordering::Relaxed);
        let status = pool.status();
        if status.available == 0 && status.size >= status.max_size {
            self.waits.fetch_add(1, Ordering::Relaxed);
        }
        let checked_out = pool.get().await;
        if let Err(deadpool::managed::PoolError::Timeout(_)) = &checked_out {
            self.timeouts.fetch_add(1, Ordering::Relaxed);
        }
        checked_out
    }

    /// Records one statement's time.
    pub(crate) fn statement_took(&self, started: std::time::Instant) {
        self.statement_seconds
            .observe(started.elapsed().as_secs_f64());
    }
}

/// What a retryable write answered (see `StoreSession::put_write_record`).
#[derive(Clone, Debug, PartialEq)]
pub struct WriteRecord {
    /// The write's `txnNumber`.
    pub txn_number: i64,
    /// What the write answered, as BSON bytes (the front end's record: for the wire, the
    /// command's name and its reply).
    pub reply: Vec<u8>,
    /// When it was written, in milliseconds since the Unix epoch.
    pub written_ms: i64,
}

/// How `put_meta` treats an existing record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaWrite {
    /// Only a new record: an existing one is `StoreError::AlreadyExists`.
    Insert,
    /// Only an existing record: a missing one writes nothing (`Ok(false)`).
    Update,
    /// Either.
    Upsert,
}

/// Size figures for `collStats` / `dbStats`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CollectionStats {
    pub count: u64,
    /// Sum of the BSON sizes of the documents.
    pub data_size: u64,
    /// Bytes used on disk by the collection's table without its indexes, when the backend
    /// can tell; else 0.
    pub storage_size: u64,
    /// Number of indexes on the table (the `_id` index counts as one).
    pub index_count: u64,
    /// Bytes on disk of each index by its MongoDB name, `_id_` first; empty when the backend
    /// cannot tell.
    pub index_sizes: Vec<(String, u64)>,
}

impl CollectionStats {
    /// The figures with one entry per MongoDB index: an entries table named like an index
    /// listed before it (the collated `_id_` index kept beside the primary key, see
    /// `CollectionInfo::collated_id_index`) adds its size to that one instead of counting
    /// as an index of its own.
    pub fn merged_by_index_name(mut self) -> CollectionStats {
        let listed = self.index_sizes.len();
        let mut merged: Vec<(String, u64)> = Vec::with_capacity(listed);
        for (name, size) in std::mem::take(&mut self.index_sizes) {
            match merged.iter_mut().find(|(seen, _)| *seen == name) {
                Some((_, total)) => *total += size,
                None => merged.push((name, size)),
            }
        }
        let folded = (listed - merged.len()) as u64;
        self.index_count = self.index_count.saturating_sub(folded);
        self.index_sizes = merged;
        self
    }

    /// Sum of `index_sizes`.
    pub fn total_index_size(&self) -> u64 {
        self.index_sizes.iter().map(|(_, size)| size).sum()
    }
}

/// What [`StoreSession::fold_scan`] feeds the selected documents to, one at a time in the
/// scan's order: the core's grouping, say. The store knows nothing of what it computes.
pub trait DocumentFold: Send {
    /// Takes one selected row's stored BSON. An error stops the statement (the fold keeps
    /// the reason; the store answers a generic one).
    fn feed(&mut self, document: &[u8]) -> Result<(), StoreError>;
}

/// How a backend runs a `$group` right after a read, inside the read's statement
/// ([`Store::group_in_statement`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupInStatement {
    /// It does not: the rows stream through Rust's grouping.
    None,
    /// A fold the core supplies is fed inside the statement ([`StoreSession::fold_scan`]:
    /// SQLite, where Rust functions can be registered on the connection).
    Fold,
    /// As SQL ([`StoreSession::group_scan`]: PostgreSQL), for the shapes
    /// `query::aggregate::sql_group` pushes.
    Sql,
}

/// A backend: SQLite (`sqlite`), PostgreSQL (`postgres`) or Oracle (`oracle`, cargo feature
/// `oracle`). Built once, shared by both front ends through `AppState`,
/// owner of the one connection pool.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Short backend name for logs and `buildInfo`: "sqlite", "postgres" or "oracle".
    fn backend_name(&self) -> &'static str;

    /// Where the data lives, for the startup log line; never contains a password.
    fn describe(&self) -> String;

    /// The connection pool now: its limit, its connections, and how many are checked out
    /// (a multi-document transaction holds one for its whole life).
    fn pool_status(&self) -> PoolStatus;

    /// The pool's and the statements' running totals.
    fn counters(&self) -> &StoreCounters;

    /// Checks a connection out of the pool. Waits at most the pool's wait timeout, then
    /// answers `StoreError::PoolTimeout`.
    async fn session(&self) -> Result<Box<dyn StoreSession>, StoreError>;

    /// Announcements of catalog changes made by any process on the same database (the new
    /// catalog version), for backends that can push them (PostgreSQL LISTEN/NOTIFY). None
    /// when the backend cannot; the catalog then relies on its own invalidation and expiry.
    fn catalog_changes(&self) -> Option<tokio::sync::broadcast::Receiver<i64>> {
        None
    }

    /// Whether the backend implements capped collections (`StoreSession::capped_overflow`
    /// and `serialize_capped_writes`); the core refuses to create one where it does not.
    fn supports_capped(&self) -> bool {
        false
    }

    /// How the backend runs a `$group` right after a read inside the read's statement.
    fn group_in_statement(&self) -> GroupInStatement {
        GroupInStatement::None
    }

    /// Whether the backend applies a projection of plain fields inside a read's statement
    /// ([`StoreSession::scan_from_projected`]).
    fn projects_in_statement(&self) -> bool {
        false
    }

    /// Whether the backend has logons of its own that `verify_login` checks passwords
    /// against (`auth.source = database`): PostgreSQL roles, Oracle database users.
    fn delegates_logons(&self) -> bool {
        false
    }

    /// Flushes what is committed to the database's files (`fsync`): SQLite checkpoints its
    /// write-ahead log into the database file, PostgreSQL runs `CHECKPOINT` (which needs a
    /// role allowed to: superuser or `pg_checkpoint`).
    async fn checkpoint(&self) -> Result<(), StoreError>;

    /// Whether `user` can log on to the backend with `password` (delegated verification:
    /// database roles as users). Backends without logons answer `Unsupported`.
    async fn verify_login(&self, user: &str, password: &str) -> Result<bool, StoreError> {
        let _ = (user, password);
        Err(StoreError::Unsupported(format!(
            "the {} backend has no logons to delegate verification to",
            self.backend_name()
        )))
    }
}

/// One pooled connection. Outside `begin`/`commit` every call is its own transaction; inside,
/// calls share the caller's transaction (this is how a command, and later a multi-document
/// transaction, becomes atomic). Dropping a session inside a transaction rolls it back.
#[async_trait]
pub trait StoreSession: Send {
    /// Starts a write transaction (on SQLite `BEGIN IMMEDIATE`, so writers queue up front).
    async fn begin(&mut self) -> Result<(), StoreError>;
    /// Starts a transaction of several commands (a MongoDB multi-document transaction):
    /// every read sees one snapshot plus the transaction's own writes, and a write that
    /// meets a concurrent transaction's answers `StoreError::WriteConflict` at once or after
    /// a short bounded wait, never a hang. PostgreSQL: `REPEATABLE READ` with a short
    /// `lock_timeout`. SQLite: `BEGIN DEFERRED`, so the one write lock is taken at the
    /// first write, not for the transaction's whole life.
    async fn begin_snapshot(&mut self) -> Result<(), StoreError>;
    async fn commit(&mut self) -> Result<(), StoreError>;
    async fn rollback(&mut self) -> Result<(), StoreError>;

    /// The result recorded for the last retryable write of a logical session: its
    /// transaction number and the reply (BSON) it answered. One record per session.
    async fn write_record(&mut self, session: &[u8]) -> Result<Option<WriteRecord>, StoreError>;
    /// Records (replacing the session's earlier one) the reply of a retryable write, inside
    /// the write's own transaction, so the write and its record commit together.
    async fn put_write_record(
        &mut self,
        session: &[u8],
        record: &WriteRecord,
    ) -> Result<(), StoreError>;
    /// Deletes the records of `session`, or of every session last written before
    /// `written_before_ms` (milliseconds since the Unix epoch). Answers how many.
    async fn delete_write_records(
        &mut self,
        session: Option<&[u8]>,
        written_before_ms: i64,
    ) -> Result<u64, StoreError>;

    /// Whether this session's transaction holds a lock that keeps every other writer out
    /// (SQLite's one write lock, taken at a snapshot transaction's first write) while
    /// another writer is waiting for it. Backends with row locks answer false.
    fn blocks_writers(&self) -> bool {
        false
    }

    /// Monotonic number bumped in the same transaction as every catalog change.
    async fn catalog_version(&mut self) -> Result<i64, StoreError>;
    /// Every collection of every database, ordered by (db, name).
    async fn list_collections(&mut self) -> Result<Vec<CollectionRecord>, StoreError>;
    /// Creates the table and its `_id` index and records it, with a new `uuid` and a table
    /// name no table of the catalog ever had (so a reader still naming a dropped
    /// predecessor's table fails with `StaleCatalog` instead of reading this one).
    /// `StoreError::AlreadyExists` if (db, name) is taken. Bumps the catalog version.
    async fn create_collection(
        &mut self,
        db: &str,
        name: &str,
        options: &Document,
    ) -> Result<CollectionRecord, StoreError>;
    /// Records a view: the catalog row with `options` (its definition) and no table.
    /// `AlreadyExists` if (db, name) is taken. Bumps the catalog version.
    async fn create_view(
        &mut self,
        db: &str,
        name: &str,
        options: &Document,
    ) -> Result<CollectionRecord, StoreError>;
    /// Replaces the recorded options of `coll` (a view's definition, `collMod`). Bumps the
    /// catalog version.
    async fn set_collection_options(
        &mut self,
        coll: &CollectionRecord,
        options: &Document,
    ) -> Result<(), StoreError>;
    /// Drops the table and its record. Bumps the catalog version.
    async fn drop_collection(&mut self, coll: &CollectionRecord) -> Result<(), StoreError>;
    /// Moves a collection to another (db, name), keeping its data; into another database it
    /// gets a new `uuid` (MongoDB copies it into a new collection there), within one it keeps
    /// it. A backend that names tables after collections gives the moved table a name no
    /// table had before, so a statement naming the old one fails (`StaleCatalog`) rather
    /// than read another collection. `AlreadyExists` if the target is taken. Bumps the
    /// catalog version.
    async fn rename_collection(
        &mut self,
        coll: &CollectionRecord,
        to_db: &str,
        to_name: &str,
    ) -> Result<CollectionRecord, StoreError>;

    /// Inserts a batch in a bounded number of statements. Unique conflicts are reported, not
    /// raised; see `InsertOutcome`. Other failures are errors and write nothing.
    async fn insert(
        &mut self,
        coll: &CollectionRecord,
        docs: &[StoredDocument],
        ordered: bool,
    ) -> Result<InsertOutcome, StoreError>;
    /// Raw BSON of the documents the request selects, in insertion order unless `order` says
    /// otherwise. May over-select when the predicate is inexact (see `Predicate`).
    async fn scan(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
    ) -> Result<Vec<Vec<u8>>, StoreError>;
    /// Like `scan`, each row with the position the scan is at after it, and resuming
    /// strictly after `after` when given: how a cursor reads its result one bounded batch
    /// at a time (a keyset on the order's columns, never an offset). The request's `skip`
    /// and `limit` apply to the resumed rows.
    async fn scan_from(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        after: Option<&ScanPosition>,
    ) -> Result<Vec<PositionedRow>, StoreError>;
    /// Like `scan_from`, each row's document projected inside the statement by `spec`, the
    /// specification of a projection `Projection::applies_raw` takes
    /// (`Projection::plain_spec`): the rows carry only the kept fields, byte for byte as
    /// `Projection::apply_raw` makes them. Backends whose [`Store::projects_in_statement`]
    /// is false answer `Unsupported`.
    async fn scan_from_projected(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        after: Option<&ScanPosition>,
        spec: &Document,
    ) -> Result<Vec<PositionedRow>, StoreError> {
        let _ = (coll, request, after, spec);
        Err(StoreError::Unsupported(
            "this backend cannot project inside its statements".into(),
        ))
    }
    /// Like `scan`, for a read that a write in the same transaction depends on (update,
    /// delete, findAndModify): the selected rows are locked until the transaction ends, and
    /// a row changed by a concurrent transaction is returned as that transaction left it,
    /// so read-modify-write never loses an update. Backends whose writers are already
    /// serialized (SQLite's `BEGIN IMMEDIATE`) need nothing more than `scan`.
    async fn scan_for_update(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        self.scan(coll, request).await
    }
    /// Runs `request` as one statement whose aggregate function is `fold`: every selected
    /// row's stored document goes to it, in the request's order, and nothing else comes
    /// back (the fold keeps what it makes). Backends whose [`Store::folds_in_statement`] is
    /// false answer `Unsupported`.
    async fn fold_scan(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        fold: Box<dyn DocumentFold>,
    ) -> Result<(), StoreError> {
        let _ = (coll, request, fold);
        Err(StoreError::Unsupported(
            "this backend cannot run a fold inside its statements".into(),
        ))
    }
    /// Runs `group` over the rows `request` selects (in natural order, no index walk) as
    /// one statement: one row per group in the order of its first document, or None when
    /// some value met is one the SQL cannot group, total or order exactly (the caller then
    /// groups in Rust). Backends whose [`Store::group_in_statement`] is not `Sql` answer
    /// `Unsupported`.
    async fn group_scan(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        group: &GroupRequest,
    ) -> Result<Option<Vec<GroupRow>>, StoreError> {
        let _ = (coll, request, group);
        Err(StoreError::Unsupported(
            "this backend cannot run a $group as SQL".into(),
        ))
    }
    /// `SELECT COUNT(*)` of what `filter` selects (callers pass only exact predicates).
    async fn count(
        &mut self,
        coll: &CollectionRecord,
        filter: &Predicate,
    ) -> Result<u64, StoreError>;
    /// Rewrites documents in place, matched by key. Returns how many rows were written.
    async fn replace(
        &mut self,
        coll: &CollectionRecord,
        docs: &[StoredDocument],
    ) -> Result<u64, StoreError>;
    /// Deletes by key. Returns how many rows were deleted.
    async fn delete(
        &mut self,
        coll: &CollectionRecord,
        keys: &[Vec<u8>],
    ) -> Result<u64, StoreError>;
    /// Keeps writers out of `coll` until the transaction ends (on PostgreSQL `LOCK TABLE …
    /// IN SHARE MODE`: waits for writes in flight to commit, then blocks new ones). An index
    /// build calls it inside `begin`, before it scans the documents it computes the entries
    /// from, so that the scan sees every document and none changes before `create_index`
    /// commits (PostgreSQL answers an error outside a transaction, where the lock would end
    /// at once). Backends whose writers are serialized anyway (SQLite's `BEGIN IMMEDIATE`)
    /// do nothing.
    async fn lock_collection_for_index_build(
        &mut self,
        coll: &CollectionRecord,
    ) -> Result<(), StoreError> {
        let _ = coll;
        Ok(())
    }
    /// Keeps every other writer out of the capped collection `coll` until the transaction
    /// ends, taken before its insert: documents are then numbered in commit order, so a
    /// tailable cursor that resumes after a sequence number misses none (on PostgreSQL
    /// `LOCK TABLE … IN SHARE ROW EXCLUSIVE MODE`, which readers pass). Backends whose
    /// writers are serialized anyway (SQLite's `BEGIN IMMEDIATE`) do nothing.
    async fn serialize_capped_writes(&mut self, coll: &CollectionRecord) -> Result<(), StoreError> {
        let _ = coll;
        Ok(())
    }
    /// The `_id` keys of the oldest documents of the capped collection `coll` that must go
    /// so that the newest ones fit in `max_bytes` (the sum of their BSON sizes) and, when
    /// given, `max_documents` — oldest first; empty when everything fits. One statement.
    async fn capped_overflow(
        &mut self,
        coll: &CollectionRecord,
        max_bytes: u64,
        max_documents: Option<u64>,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let _ = (coll, max_bytes, max_documents);
        Err(StoreError::Unsupported(
            "capped collections are not supported on this backend".into(),
        ))
    }
    /// Every secondary index of every collection, ordered by (db, collection, name).
    async fn list_indexes(&mut self) -> Result<Vec<IndexRecord>, StoreError>;
    /// Creates a secondary index on `coll` and fills it with `entries` (`_id` key, index keys
    /// of that document). A unique index whose entries collide fails with
    /// `StoreError::IndexKeyConflict` and leaves nothing behind. Bumps the catalog version.
    async fn create_index(
        &mut self,
        coll: &CollectionRecord,
        name: &str,
        spec: &Document,
        unique: bool,
        multikey: bool,
        entries: &[(Vec<u8>, Vec<Vec<u8>>)],
    ) -> Result<IndexRecord, StoreError>;
    /// Creates a text index on `coll`: like `create_index` (never unique), but each entry
    /// key is space-separated words of ASCII letters and digits that the backend's
    /// full-text engine indexes (SQLite FTS5, PostgreSQL `tsvector` with GIN), searched by
    /// `Predicate::TextTerms`. Entries are then written and removed like any index's.
    /// A backend without a full-text engine answers `Unsupported`.
    async fn create_text_index(
        &mut self,
        coll: &CollectionRecord,
        name: &str,
        spec: &Document,
        entries: &[(Vec<u8>, Vec<Vec<u8>>)],
    ) -> Result<IndexRecord, StoreError> {
        let _ = (coll, name, spec, entries);
        Err(StoreError::Unsupported(
            "text indexes are not supported on this backend".into(),
        ))
    }
    /// Drops a secondary index and its entries. Bumps the catalog version.
    async fn drop_index(&mut self, index: &IndexRecord) -> Result<(), StoreError>;
    /// Replaces the recorded specification of `index` (options that change neither its
    /// keys nor its entries: `hidden`, `expireAfterSeconds`). Bumps the catalog version.
    async fn set_index_spec(
        &mut self,
        index: &IndexRecord,
        spec: &Document,
    ) -> Result<(), StoreError>;
    /// Records that `index` became multikey. Bumps the catalog version.
    async fn mark_multikey(&mut self, index: &IndexRecord) -> Result<(), StoreError>;

    /// Figures for `collStats`.
    async fn collection_stats(
        &mut self,
        coll: &CollectionRecord,
    ) -> Result<CollectionStats, StoreError>;

    /// The backend's plan for `scan(coll, request)`, one line per step (SQLite: the `detail`
    /// column of `EXPLAIN QUERY PLAN`, PostgreSQL: the lines of `EXPLAIN`), so tests can
    /// assert that indexes are used.
    async fn explain(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
    ) -> Result<Vec<String>, StoreError>;

    /// The metadata records of `kind`, of one database or of all, ordered by `(db, name)`.
    async fn list_meta(
        &mut self,
        kind: &str,
        db: Option<&str>,
    ) -> Result<Vec<MetaRecord>, StoreError>;

    /// One metadata record.
    async fn get_meta(
        &mut self,
        kind: &str,
        db: &str,
        name: &str,
    ) -> Result<Option<MetaRecord>, StoreError>;

    /// Writes a metadata record (see [`MetaWrite`]) and bumps the catalog version in the same
    /// transaction; answers whether a record was written.
    async fn put_meta(&mut self, record: &MetaRecord, mode: MetaWrite) -> Result<bool, StoreError>;

    /// Deletes one record of `kind` in `db` (`name` given) or all of them; bumps the catalog
    /// version when something was deleted. Answers how many were.
    async fn delete_meta(
        &mut self,
        kind: &str,
        db: &str,
        name: Option<&str>,
    ) -> Result<u64, StoreError>;
}
