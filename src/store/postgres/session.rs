//! `PostgresSession`: one pooled connection implementing `StoreSession`.
//!
//! Transactions: after `begin` the connection stays with the session, so a transaction
//! spans any number of calls; `BEGIN` itself goes out with the first statement (see
//! `conn.rs`). Writes inside it run in savepoints, so a failed
//! call leaves the transaction usable; a failed read aborts it (PostgreSQL's rule), which the
//! session remembers: `commit` then rolls back and reports an error instead of letting
//! PostgreSQL turn the `COMMIT` silently into a `ROLLBACK`.
//!
//! Dropping a session inside a transaction: `Drop` takes the connection and spawns a task
//! that sends `ROLLBACK` and only then returns the connection to the pool, so locks are
//! released at once and nobody else ever sees the transaction. Without a tokio runtime (or if
//! that rollback fails) the connection goes back marked dirty and the pool's `recycle` rolls
//! it back (or discards it) before handing it out again; see `conn.rs`.
//!
//! Not for: SQL text (`sql.rs`, `write.rs`, `catalog.rs`).

use async_trait::async_trait;
use bson::Document;
use deadpool::managed::Object;
use tokio::runtime::Handle;

use super::super::where_clause::PositionColumns;
use super::super::{
    CollectionRecord, CollectionStats, EntriesKind, GroupRequest, GroupRow, IndexRecord,
    InsertOutcome, MetaRecord, MetaWrite, PositionedRow, Predicate, ScanPosition, ScanRequest,
    StoreError, StoreSession, StoredDocument, WriteRecord,
};
use super::conn::{Manager, PgConn};
use super::{capped, catalog, catalog_row, grouping, index, meta, sql, write, write_record};

/// A session of the PostgreSQL backend. Get one from `PostgresStore::postgres_session`
/// (concrete) or `Store::session` (boxed).
pub struct PostgresSession {
    conn: Option<Object<Manager>>,
}

impl PostgresSession {
    /// `SELECT doc …` for a scan, with `suffix` (e.g. ` FOR UPDATE`) appended.
    async fn select_documents(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        suffix: &str,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let mut sql = sql::select(&coll.table, "doc", request, None)?;
        sql.text.push_str(suffix);
        let rows = self.conn()?.query(&sql.text, &sql.params).await?;
        rows.iter()
            .map(|row| {
                row.try_get(0)
                    .map_err(|e| StoreError::Corrupt(e.to_string()))
            })
            .collect()
    }

    /// `SELECT <position columns>, doc …` for a positioned scan resuming after `after`.
    async fn select_positioned(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        after: Option<&ScanPosition>,
    ) -> Result<Vec<PositionedRow>, StoreError> {
        let columns = PositionColumns::of(request);
        let select_list = columns.select_list::<sql::Sql>();
        let sql = sql::select(&coll.table, &select_list, request, after)?;
        let rows = self.conn()?.query(&sql.text, &sql.params).await?;
        let corrupt = |e: tokio_postgres::Error| StoreError::Corrupt(e.to_string());
        rows.iter()
            .map(|row| {
                let position = columns.read(
                    || row.try_get(0).map_err(corrupt),
                    |i| row.try_get(i).map_err(corrupt),
                )?;
                let document = row.try_get(columns.width()).map_err(corrupt)?;
                Ok(PositionedRow { position, document })
            })
            .collect()
    }

    pub(super) fn new(conn: Object<Manager>) -> Self {
        PostgresSession { conn: Some(conn) }
    }

    pub(super) fn conn(&mut self) -> Result<&mut PgConn, StoreError> {
        self.conn
            .as_deref_mut()
            .ok_or_else(|| StoreError::Unavailable("the session has no connection".into()))
    }

    /// `CHECKPOINT` (`fsync`).
    pub(super) async fn checkpoint(&mut self) -> Result<(), StoreError> {
        self.conn()?.batch("CHECKPOINT").await
    }

    /// PostgreSQL's plan for a scan: the lines of `EXPLAIN` (with the values bound).
    pub async fn explain_scan(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        after: Option<&ScanPosition>,
    ) -> Result<Vec<String>, StoreError> {
        let sql = sql::select(&coll.table, "doc", request, after)?;
        let conn = self.conn()?;
        let rows = conn
            .query(&format!("EXPLAIN {}", sql.text), &sql.params)
            .await?;
        rows.iter()
            .map(|row| {
                row.try_get(0)
                    .map_err(|e| StoreError::Database(e.to_string()))
            })
            .collect()
    }
}

impl Drop for PostgresSession {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        if !conn.transaction_sent() || conn.broken {
            conn.reset_transaction();
            return;
        }
        if let Ok(handle) = Handle::try_current() {
            handle.spawn(async move {
                match conn.client().batch_execute("ROLLBACK").await {
                    Ok(()) => conn.reset_transaction(),
                    Err(_) => conn.broken = true,
                }
                drop(conn);
            });
        }
    }
}

#[async_trait]
impl StoreSession for PostgresSession {
    async fn begin(&mut self) -> Result<(), StoreError> {
        let conn = self.conn()?;
        if conn.in_tx {
            return Err(StoreError::Database(
                "a transaction is already open on this session".into(),
            ));
        }
        conn.begin();
        Ok(())
    }

    async fn begin_snapshot(&mut self) -> Result<(), StoreError> {
        let conn = self.conn()?;
        if conn.in_tx {
            return Err(StoreError::Database(
                "a transaction is already open on this session".into(),
            ));
        }
        conn.begin_snapshot();
        Ok(())
    }

    async fn write_record(&mut self, session: &[u8]) -> Result<Option<WriteRecord>, StoreError> {
        write_record::get(self.conn()?, session).await
    }

    async fn put_write_record(
        &mut self,
        session: &[u8],
        record: &WriteRecord,
    ) -> Result<(), StoreError> {
        write_record::put(self.conn()?, session, record).await
    }

    async fn delete_write_records(
        &mut self,
        session: Option<&[u8]>,
        written_before_ms: i64,
    ) -> Result<u64, StoreError> {
        write_record::delete(self.conn()?, session, written_before_ms).await
    }

    async fn commit(&mut self) -> Result<(), StoreError> {
        let conn = self.conn()?;
        if conn.aborted {
            conn.end(false).await?;
            return Err(StoreError::Database(
                "the transaction was aborted by an earlier error and has been rolled back".into(),
            ));
        }
        conn.end(true).await
    }

    async fn rollback(&mut self) -> Result<(), StoreError> {
        self.conn()?.end(false).await
    }

    async fn catalog_version(&mut self) -> Result<i64, StoreError> {
        catalog_row::catalog_version(self.conn()?).await
    }

    async fn list_collections(&mut self) -> Result<Vec<CollectionRecord>, StoreError> {
        catalog::list_collections(self.conn()?).await
    }

    async fn create_collection(
        &mut self,
        db: &str,
        name: &str,
        options: &Document,
    ) -> Result<CollectionRecord, StoreError> {
        catalog::create_collection(self.conn()?, db, name, options).await
    }

    async fn create_view(
        &mut self,
        db: &str,
        name: &str,
        options: &Document,
    ) -> Result<CollectionRecord, StoreError> {
        catalog::create_view(self.conn()?, db, name, options).await
    }

    async fn set_collection_options(
        &mut self,
        coll: &CollectionRecord,
        options: &Document,
    ) -> Result<(), StoreError> {
        catalog::set_collection_options(self.conn()?, coll, options).await
    }

    async fn drop_collection(&mut self, coll: &CollectionRecord) -> Result<(), StoreError> {
        catalog::drop_collection(self.conn()?, coll).await
    }

    async fn rename_collection(
        &mut self,
        coll: &CollectionRecord,
        to_db: &str,
        to_name: &str,
    ) -> Result<CollectionRecord, StoreError> {
        catalog::rename_collection(self.conn()?, coll, to_db, to_name).await
    }

    async fn insert(
        &mut self,
        coll: &CollectionRecord,
        docs: &[StoredDocument],
        ordered: bool,
    ) -> Result<InsertOutcome, StoreError> {
        let conn = self.conn()?;
        let outcome = write::insert(conn, coll, docs, ordered).await?;
        super::statistics::after_insert(conn, coll, docs).await;
        Ok(outcome)
    }

    async fn scan(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        self.select_documents(coll, request, "").await
    }

    async fn scan_from(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        after: Option<&ScanPosition>,
    ) -> Result<Vec<PositionedRow>, StoreError> {
        self.select_positioned(coll, request, after).await
    }

    async fn scan_for_update(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        // READ COMMITTED + FOR UPDATE: waits for concurrent writers of the selected rows and
        // returns their committed version, so an update computed in Rust starts from it.
        self.select_documents(coll, request, " FOR UPDATE").await
    }

    async fn group_scan(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        group: &GroupRequest,
    ) -> Result<Option<Vec<GroupRow>>, StoreError> {
        grouping::group_scan(self.conn()?, coll, request, group).await
    }

    async fn count(
        &mut self,
        coll: &CollectionRecord,
        filter: &Predicate,
    ) -> Result<u64, StoreError> {
        let sql = sql::count(&coll.table, filter)?;
        let row = self.conn()?.query_one(&sql.text, &sql.params).await?;
        let n: i64 = row
            .try_get(0)
            .map_err(|e| StoreError::Database(e.to_string()))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn replace(
        &mut self,
        coll: &CollectionRecord,
        docs: &[StoredDocument],
    ) -> Result<u64, StoreError> {
        write::replace(self.conn()?, coll, docs).await
    }

    async fn delete(
        &mut self,
        coll: &CollectionRecord,
        keys: &[Vec<u8>],
    ) -> Result<u64, StoreError> {
        write::delete(self.conn()?, coll, keys).await
    }

    async fn lock_collection_for_index_build(
        &mut self,
        coll: &CollectionRecord,
    ) -> Result<(), StoreError> {
        index::lock_for_build(self.conn()?, coll).await
    }

    async fn serialize_capped_writes(&mut self, coll: &CollectionRecord) -> Result<(), StoreError> {
        capped::serialize_writes(self.conn()?, coll).await
    }

    async fn capped_overflow(
        &mut self,
        coll: &CollectionRecord,
        max_bytes: u64,
        max_documents: Option<u64>,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        capped::overflow(self.conn()?, coll, max_bytes, max_documents).await
    }

    async fn list_indexes(&mut self) -> Result<Vec<IndexRecord>, StoreError> {
        index::list_indexes(self.conn()?).await
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
        let new = index::NewIndex::new(name, spec, unique, multikey, EntriesKind::Keys)?;
        index::create_index(self.conn()?, coll, new, entries).await
    }

    async fn create_text_index(
        &mut self,
        coll: &CollectionRecord,
        name: &str,
        spec: &Document,
        entries: &[(Vec<u8>, Vec<Vec<u8>>)],
    ) -> Result<IndexRecord, StoreError> {
        let new = index::NewIndex::new(name, spec, false, false, EntriesKind::Words)?;
        index::create_index(self.conn()?, coll, new, entries).await
    }

    async fn drop_index(&mut self, index: &IndexRecord) -> Result<(), StoreError> {
        index::drop_index(self.conn()?, index).await
    }

    async fn set_index_spec(
        &mut self,
        index: &IndexRecord,
        spec: &Document,
    ) -> Result<(), StoreError> {
        index::set_index_spec(self.conn()?, index, spec).await
    }

    async fn mark_multikey(&mut self, index: &IndexRecord) -> Result<(), StoreError> {
        index::mark_multikey(self.conn()?, index).await
    }

    async fn collection_stats(
        &mut self,
        coll: &CollectionRecord,
    ) -> Result<CollectionStats, StoreError> {
        catalog::collection_stats(self.conn()?, coll).await
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
        meta::list(self.conn()?, kind, db).await
    }

    async fn get_meta(
        &mut self,
        kind: &str,
        db: &str,
        name: &str,
    ) -> Result<Option<MetaRecord>, StoreError> {
        meta::get(self.conn()?, kind, db, name).await
    }

    async fn put_meta(&mut self, record: &MetaRecord, mode: MetaWrite) -> Result<bool, StoreError> {
        meta::put(self.conn()?, record, mode).await
    }

    async fn delete_meta(
        &mut self,
        kind: &str,
        db: &str,
        name: Option<&str>,
    ) -> Result<u64, StoreError> {
        meta::delete(self.conn()?, kind, db, name).await
    }
}
