//! `SqliteSession`: one pooled connection implementing `StoreSession`.
//!
//! Scheduling blocking calls: rusqlite is blocking. On a multi-thread tokio runtime (the
//! server's) each call runs under `tokio::task::block_in_place`, which hands the worker's
//! other tasks to another thread and runs the statements right here, with no copy and no
//! thread hop. On a current-thread runtime (`#[tokio::test]` defaults, small tools)
//! `block_in_place` would panic, so the connection is moved into `spawn_blocking` and moved
//! back afterwards; this keeps the runtime responsive while a writer waits for SQLite's
//! lock. Outside any runtime the call simply runs inline. Because the connection lives in the
//! session between calls, a transaction opened by `begin` spans any number of calls.
//!
//! A point read (`_id` equality, at most one row) runs right on the worker thread instead:
//! in WAL mode a read never waits for a lock and such a statement takes microseconds, less
//! than handing the worker's other tasks over to another thread would cost.
//!
//! Cancellation: a call cannot be interrupted under `block_in_place` by dropping its future;
//! `killOp` of the command that runs it stops the statement with SQLite's interrupt handle
//! (registered with the command's interrupt while the call runs). If the future of a
//! `spawn_blocking` call is dropped, the connection is dropped when the blocking task ends
//! (rolling back an open transaction, see `conn::PooledConn`) and this session answers
//! `Unavailable` from then on.
//!
//! Not for: SQL text (`sql.rs`, `write.rs`, `catalog.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bson::Document;
use rusqlite::Connection;
use tokio::runtime::{Handle, RuntimeFlavor};

use super::super::where_clause::PositionColumns;
use super::super::{
    CollectionRecord, CollectionStats, DocumentFold, EntriesKind, IndexRecord, InsertOutcome,
    MetaRecord, MetaWrite, PositionedRow, Predicate, ScanPosition, ScanRequest, StoreCounters,
    StoreError, StoreSession, StoredDocument, WriteRecord,
};
use super::conn::{db_err, PooledConn};
use super::{capped, catalog, catalog_row, fold, index, meta, sql, write, write_record};

/// A session of the SQLite backend. Get one from `SqliteStore::sqlite_session` (concrete) or
/// `Store::session` (boxed).
pub struct SqliteSession {
    conn: Option<PooledConn>,
    /// The wait for the write lock outside snapshot transactions (the pool's wait timeout).
    busy_timeout: std::time::Duration,
    /// A snapshot transaction (`begin_snapshot`) is open: failing to get the write lock is
    /// a write conflict, not an unavailable database.
    in_snapshot: bool,
    /// How many sessions of the store wait for the write lock now.
    waiting_writers: Arc<AtomicUsize>,
    /// The store's totals (statement times).
    counters: Arc<StoreCounters>,
}

/// How long a write of a snapshot transaction waits for SQLite's one write lock (held by
/// a plain write, or by another transaction that has written) before it answers a write
/// conflict, which the client retries as a whole transaction.
const SNAPSHOT_WRITE_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

impl SqliteSession {
    pub(super) fn new(
        conn: PooledConn,
        busy_timeout: std::time::Duration,
        waiting_writers: Arc<AtomicUsize>,
        counters: Arc<StoreCounters>,
    ) -> Self {
        SqliteSession {
            conn: Some(conn),
            busy_timeout,
            in_snapshot: false,
            waiting_writers,
            counters,
        }
    }

    /// Inside a snapshot transaction, the lock contention SQLite reports (`SQLITE_BUSY`,
    /// including `SQLITE_BUSY_SNAPSHOT`: another connection wrote since this transaction's
    /// snapshot) is a write conflict.
    fn conflict_in_snapshot<R>(&self, result: Result<R, StoreError>) -> Result<R, StoreError> {
        match result {
            Err(StoreError::Unavailable(text)) if self.in_snapshot => {
                Err(StoreError::WriteConflict(text))
            }
            other => other,
        }
    }

    /// The rows of `sql`, a `SELECT` of the position `columns` then the (maybe projected)
    /// document, each with its position.
    async fn positioned_rows(
        &mut self,
        columns: PositionColumns,
        sql: sql::Sql,
    ) -> Result<Vec<PositionedRow>, StoreError> {
        self.run(move |conn: &Connection| {
            let mut stmt = conn.prepare_cached(&sql.text).map_err(db_err)?;
            let rows = stmt
                .query_map(rusqlite::params_from_iter(sql.params.iter()), |row| {
                    let position = columns.read(|| row.get(0), |i| row.get(i))?;
                    Ok(PositionedRow {
                        position,
                        document: row.get(columns.width())?,
                    })
                })
                .map_err(db_err)?;
            rows.collect::<Result<Vec<PositionedRow>, _>>()
                .map_err(db_err)
        })
        .await
    }

    /// Runs `f` on the connection without blocking the async runtime (see the module doc).
    pub(super) async fn run<R, F>(&mut self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    {
        let started = std::time::Instant::now();
        let result = match Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(RuntimeFlavor::MultiThread) => {
                let conn = self.conn.as_deref().ok_or_else(lost)?;
                // `killOp` of the command stops the statement (SQLITE_INTERRUPT).
                let handle = conn.get_interrupt_handle();
                let _cancel = crate::compute::with_command_interrupt(|interrupt| {
                    interrupt.on_cancel(Box::new(move || handle.interrupt()))
                });
                tokio::task::block_in_place(|| f(conn))
            }
            Ok(_) => {
                let conn = self.conn.take().ok_or_else(lost)?;
                let (conn, result) = tokio::task::spawn_blocking(move || {
                    let result = f(&conn);
                    (conn, result)
                })
                .await
                .map_err(|e| StoreError::Database(format!("database task failed: {e}")))?;
                self.conn = Some(conn);
                result
            }
            Err(_) => f(self.conn.as_deref().ok_or_else(lost)?),
        };
        self.counters.statement_took(started);
        self.conflict_in_snapshot(result)
    }

    /// Runs `f`, a statement that finishes in microseconds and never waits, on the worker
    /// thread itself (see the module doc); elsewhere like [`SqliteSession::run`].
    async fn run_short<R, F>(&mut self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    {
        match Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(RuntimeFlavor::MultiThread) | Err(_) => {
                let started = std::time::Instant::now();
                let result = f(self.conn.as_deref().ok_or_else(lost)?);
                self.counters.statement_took(started);
                self.conflict_in_snapshot(result)
            }
            Ok(_) => self.run(f).await,
        }
    }

    /// The SQLite query plan of a scan: the `detail` lines of `EXPLAIN QUERY PLAN`.
    pub async fn explain_scan(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        after: Option<&ScanPosition>,
    ) -> Result<Vec<String>, StoreError> {
        let sql = sql::select(&coll.table, "doc", request, after);
        self.run(move |conn| {
            let mut stmt = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {}", sql.text))
                .map_err(db_err)?;
            let rows = stmt
                .query_map(rusqlite::params_from_iter(sql.params.iter()), |row| {
                    row.get(3)
                })
                .map_err(db_err)?;
            rows.collect::<Result<Vec<String>, _>>().map_err(db_err)
        })
        .await
    }
}

impl SqliteSession {
    /// Copies the write-ahead log into the database file and truncates it (`fsync`).
    pub(super) async fn checkpoint(&mut self) -> Result<(), StoreError> {
        self.run(|conn| {
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .map_err(db_err)
        })
        .await
    }

    /// Creates an index (`create_index`, `create_text_index`): whether it is unique and
    /// multikey, and what its entries are.
    async fn create_entries_index(
        &mut self,
        coll: &CollectionRecord,
        name: &str,
        spec: &Document,
        (unique, multikey, kind): (bool, bool, EntriesKind),
        entries: &[(Vec<u8>, Vec<Vec<u8>>)],
    ) -> Result<IndexRecord, StoreError> {
        let (coll, name, spec) = (coll.clone(), name.to_owned(), spec.clone());
        let entries = entries.to_vec();
        self.run(move |conn| {
            let new = index::NewIndex {
                name: &name,
                spec: &spec,
                unique,
                multikey,
                kind,
            };
            index::create_index(conn, &coll, &new, &entries)
        })
        .await
    }

    /// After a snapshot transaction: plain writes wait for the lock as long as the pool says.
    async fn end_snapshot(&mut self) {
        if std::mem::take(&mut self.in_snapshot) {
            let wait = self.busy_timeout;
            // A failure leaves the short wait; the pool restores it when recycling.
            let _ = self
                .run(move |conn| conn.busy_timeout(wait).map_err(db_err))
                .await;
        }
    }
}

fn lost() -> StoreError {
    StoreError::Unavailable("the session lost its connection (a call was cancelled)".into())
}

#[async_trait]
impl StoreSession for SqliteSession {
    async fn begin(&mut self) -> Result<(), StoreError> {
        // Counted while it waits, so that a transaction idling on the lock knows it is in
        // someone's way (`blocks_writers`).
        let waiting = self.waiting_writers.clone();
        waiting.fetch_add(1, Ordering::SeqCst);
        let result = self
            .run(|conn| conn.execute_batch("BEGIN IMMEDIATE").map_err(db_err))
            .await;
        waiting.fetch_sub(1, Ordering::SeqCst);
        result
    }

    async fn begin_snapshot(&mut self) -> Result<(), StoreError> {
        self.run(|conn| {
            conn.busy_timeout(SNAPSHOT_WRITE_WAIT).map_err(db_err)?;
            conn.execute_batch("BEGIN DEFERRED").map_err(db_err)
        })
        .await?;
        self.in_snapshot = true;
        Ok(())
    }

    async fn commit(&mut self) -> Result<(), StoreError> {
        let result = self
            .run(|conn| conn.execute_batch("COMMIT").map_err(db_err))
            .await;
        self.end_snapshot().await;
        result
    }

    async fn rollback(&mut self) -> Result<(), StoreError> {
        let result = self
            .run(|conn| conn.execute_batch("ROLLBACK").map_err(db_err))
            .await;
        self.end_snapshot().await;
        result
    }

    fn blocks_writers(&self) -> bool {
        self.waiting_writers.load(Ordering::SeqCst) > 0
            && self.conn.as_deref().is_some_and(|conn| {
                conn.transaction_state(None::<&str>)
                    .is_ok_and(|state| state == rusqlite::TransactionState::Write)
            })
    }

    async fn write_record(&mut self, session: &[u8]) -> Result<Option<WriteRecord>, StoreError> {
        let session = session.to_vec();
        self.run_short(move |conn| write_record::get(conn, &session))
            .await
    }

    async fn put_write_record(
        &mut self,
        session: &[u8],
        record: &WriteRecord,
    ) -> Result<(), StoreError> {
        let (session, record) = (session.to_vec(), record.clone());
        self.run(move |conn| write_record::put(conn, &session, &record))
            .await
    }

    async fn delete_write_records(
        &mut self,
        session: Option<&[u8]>,
        written_before_ms: i64,
    ) -> Result<u64, StoreError> {
        let session = session.map(<[u8]>::to_vec);
        self.run(move |conn| write_record::delete(conn, session.as_deref(), written_before_ms))
            .await
    }

    async fn catalog_version(&mut self) -> Result<i64, StoreError> {
        self.run(catalog_row::catalog_version).await
    }

    async fn list_collections(&mut self) -> Result<Vec<CollectionRecord>, StoreError> {
        self.run(catalog::list_collections).await
    }

    async fn create_collection(
        &mut self,
        db: &str,
        name: &str,
        options: &Document,
    ) -> Result<CollectionRecord, StoreError> {
        let (db, name, options) = (db.to_owned(), name.to_owned(), options.clone());
        self.run(move |conn| catalog::create_collection(conn, &db, &name, &options))
            .await
    }

    async fn create_view(
        &mut self,
        db: &str,
        name: &str,
        options: &Document,
    ) -> Result<CollectionRecord, StoreError> {
        let (db, name, options) = (db.to_owned(), name.to_owned(), options.clone());
        self.run(move |conn| catalog::create_view(conn, &db, &name, &options))
            .await
    }

    async fn set_collection_options(
        &mut self,
        coll: &CollectionRecord,
        options: &Document,
    ) -> Result<(), StoreError> {
        let (coll, options) = (coll.clone(), options.clone());
        self.run(move |conn| catalog::set_collection_options(conn, &coll, &options))
            .await
    }

    async fn drop_collection(&mut self, coll: &CollectionRecord) -> Result<(), StoreError> {
        let coll = coll.clone();
        self.run(move |conn| catalog::drop_collection(conn, &coll))
            .await
    }

    async fn rename_collection(
        &mut self,
        coll: &CollectionRecord,
        to_db: &str,
        to_name: &str,
    ) -> Result<CollectionRecord, StoreError> {
        let (coll, to_db, to_name) = (coll.clone(), to_db.to_owned(), to_name.to_owned());
        self.run(move |conn| catalog::rename_collection(conn, &coll, &to_db, &to_name))
            .await
    }

    async fn insert(
        &mut self,
        coll: &CollectionRecord,
        docs: &[StoredDocument],
        ordered: bool,
    ) -> Result<InsertOutcome, StoreError> {
        let (table, docs) = (coll.table.clone(), docs.to_vec());
        self.run(move |conn| write::insert(conn, &table, &docs, ordered))
            .await
    }

    async fn scan(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let sql = sql::select(&coll.table, "doc", request, None);
        let read = move |conn: &Connection| {
            let mut stmt = conn.prepare_cached(&sql.text).map_err(db_err)?;
            let rows = stmt
                .query_map(rusqlite::params_from_iter(sql.params.iter()), |row| {
                    row.get(0)
                })
                .map_err(db_err)?;
            rows.collect::<Result<Vec<Vec<u8>>, _>>().map_err(db_err)
        };
        if matches!(request.filter, Predicate::KeyEquals(_)) {
            self.run_short(read).await
        } else {
            self.run(read).await
        }
    }

    async fn scan_from(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        after: Option<&ScanPosition>,
    ) -> Result<Vec<PositionedRow>, StoreError> {
        let columns = PositionColumns::of(request);
        let select_list = columns.select_list::<sql::Sql>();
        let sql = sql::select(&coll.table, &select_list, request, after);
        self.positioned_rows(columns, sql).await
    }

    async fn scan_from_projected(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        after: Option<&ScanPosition>,
        spec: &Document,
    ) -> Result<Vec<PositionedRow>, StoreError> {
        let columns = PositionColumns::of(request);
        let select_list = columns.select_list::<sql::Sql>();
        let projected = select_list
            .strip_suffix("doc")
            .map(|positions| format!("{positions}{}(doc, ?)", super::project::PROJECT_FUNCTION))
            .ok_or_else(|| StoreError::Corrupt(format!("select list {select_list}")))?;
        let mut sql = sql::select(&coll.table, &projected, request, after);
        let spec = spec
            .to_vec()
            .map_err(|e| StoreError::Corrupt(format!("projection: {e}")))?;
        // The select list's placeholder comes before every other one.
        sql.params.insert(0, rusqlite::types::Value::Blob(spec));
        self.positioned_rows(columns, sql).await
    }

    async fn fold_scan(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        fold: Box<dyn DocumentFold>,
    ) -> Result<(), StoreError> {
        let sql = sql::select(&coll.table, "doc", request, None);
        self.run(move |conn| fold::run(conn, &sql, fold)).await
    }

    async fn count(
        &mut self,
        coll: &CollectionRecord,
        filter: &Predicate,
    ) -> Result<u64, StoreError> {
        let sql = sql::count(&coll.table, filter);
        self.run(move |conn| {
            let mut stmt = conn.prepare_cached(&sql.text).map_err(db_err)?;
            let n: i64 = stmt
                .query_row(rusqlite::params_from_iter(sql.params.iter()), |row| {
                    row.get(0)
                })
                .map_err(db_err)?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
        .await
    }

    async fn replace(
        &mut self,
        coll: &CollectionRecord,
        docs: &[StoredDocument],
    ) -> Result<u64, StoreError> {
        let (table, docs) = (coll.table.clone(), docs.to_vec());
        self.run(move |conn| write::replace(conn, &table, &docs))
            .await
    }

    async fn delete(
        &mut self,
        coll: &CollectionRecord,
        keys: &[Vec<u8>],
    ) -> Result<u64, StoreError> {
        let (table, keys) = (coll.table.clone(), keys.to_vec());
        self.run(move |conn| write::delete(conn, &table, &keys))
            .await
    }

    async fn capped_overflow(
        &mut self,
        coll: &CollectionRecord,
        max_bytes: u64,
        max_documents: Option<u64>,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let table = coll.table.clone();
        self.run(move |conn| capped::overflow(conn, &table, max_bytes, max_documents))
            .await
    }

    async fn list_indexes(&mut self) -> Result<Vec<IndexRecord>, StoreError> {
        self.run(index::list_indexes).await
    }

    async fn create_index(
        &mut self,
        coll: &CollectionRecord,
        name: &str,
        spec: &Document,
        unique: bool,
        multikey: bool,
        entries: &[(Vec<u8>, Vec<Vec<u8>>)],
    ) -> Result<IndexRecord, StoreError> {
        let kind = EntriesKind::Keys;
        self.create_entries_index(coll, name, spec, (unique, multikey, kind), entries)
            .await
    }

    async fn create_text_index(
        &mut self,
        coll: &CollectionRecord,
        name: &str,
        spec: &Document,
        entries: &[(Vec<u8>, Vec<Vec<u8>>)],
    ) -> Result<IndexRecord, StoreError> {
        let kind = EntriesKind::Words;
        self.create_entries_index(coll, name, spec, (false, false, kind), entries)
            .await
    }

    async fn drop_index(&mut self, index: &IndexRecord) -> Result<(), StoreError> {
        let index = index.clone();
        self.run(move |conn| index::drop_index(conn, &index)).await
    }

    async fn set_index_spec(
        &mut self,
        index: &IndexRecord,
        spec: &Document,
    ) -> Result<(), StoreError> {
        let (index, spec) = (index.clone(), spec.clone());
        self.run(move |conn| index::set_index_spec(conn, &index, &spec))
            .await
    }

    async fn mark_multikey(&mut self, index: &IndexRecord) -> Result<(), StoreError> {
        let index = index.clone();
        self.run(move |conn| index::mark_multikey(conn, &index))
            .await
    }

    async fn collection_stats(
        &mut self,
        coll: &CollectionRecord,
    ) -> Result<CollectionStats, StoreError> {
        let coll = coll.clone();
        self.run(move |conn| catalog::collection_stats(conn, &coll))
            .await
    }

    async fn explain(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
    ) -> Result<Vec<String>, StoreError> {
        self.explain_scan(coll, request, None).await
    }

    async fn list_meta(
        &mut self,
        kind: &str,
        db: Option<&str>,
    ) -> Result<Vec<MetaRecord>, StoreError> {
        let (kind, db) = (kind.to_owned(), db.map(str::to_owned));
        self.run(move |conn| meta::list(conn, &kind, db.as_deref()))
            .await
    }

    async fn get_meta(
        &mut self,
        kind: &str,
        db: &str,
        name: &str,
    ) -> Result<Option<MetaRecord>, StoreError> {
        let (kind, db, name) = (kind.to_owned(), db.to_owned(), name.to_owned());
        self.run(move |conn| meta::get(conn, &kind, &db, &name))
            .await
    }

    async fn put_meta(&mut self, record: &MetaRecord, mode: MetaWrite) -> Result<bool, StoreError> {
        let record = record.clone();
        self.run(move |conn| meta::put(conn, &record, mode)).await
    }

    async fn delete_meta(
        &mut self,
        kind: &str,
        db: &str,
        name: Option<&str>,
    ) -> Result<u64, StoreError> {
        let (kind, db, name) = (kind.to_owned(), db.to_owned(), name.map(str::to_owned));
        self.run(move |conn| meta::delete(conn, &kind, &db, name.as_deref()))
            .await
    }
}
