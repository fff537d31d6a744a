//! `OracleSession`: one pooled Oracle connection implementing `StoreSession`.
//!
//! The `oracle` crate blocks, so every call moves the connection into
//! `tokio::task::spawn_blocking`, runs the synchronous code of `catalog.rs`, `write.rs`, …
//! there, and takes the connection back; a tokio worker never waits on Oracle. The
//! arguments are cloned into the blocking task (it must own what it uses).
//!
//! Transactions: after `begin` the connection stays with the session, so a transaction
//! spans any number of calls (see `conn.rs` for scopes and DDL). A session dropped inside a
//! transaction rolls back on a blocking thread before its connection goes back to the pool.
//!
//! Not for: SQL text (`sql.rs`, `write.rs`, `catalog.rs`).

use async_trait::async_trait;
use bson::Document;

use super::super::where_clause::PositionColumns;
use super::super::{
    CollectionRecord, CollectionStats, IndexRecord, InsertOutcome, MetaRecord, MetaWrite,
    PositionedRow, Predicate, ScanPosition, ScanRequest, StoreError, StoreSession, StoredDocument,
    WriteRecord,
};
use super::conn::{get, Bind, OraConn};
use super::index::NewIndex;
use super::{catalog, catalog_row, index, meta, sql, write, write_record};

/// A session of the Oracle backend.
pub struct OracleSession {
    conn: Option<OraConn>,
}

impl OracleSession {
    pub(super) fn new(conn: OraConn) -> Self {
        OracleSession { conn: Some(conn) }
    }

    /// Runs `body` with the connection on a blocking thread.
    pub(super) async fn call<T: Send + 'static>(
        &mut self,
        body: impl FnOnce(&mut OraConn) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let mut conn = self
            .conn
            .take()
            .ok_or_else(|| StoreError::Unavailable("the session has no connection".into()))?;
        let joined = tokio::task::spawn_blocking(move || {
            let result = body(&mut conn);
            (conn, result)
        })
        .await;
        match joined {
            Ok((conn, result)) => {
                self.conn = Some(conn);
                result
            }
            Err(e) => Err(StoreError::Database(format!("an Oracle call failed: {e}"))),
        }
    }

    /// Oracle's plan for a scan: the lines of `DBMS_XPLAN.DISPLAY` after `EXPLAIN PLAN`
    /// (placeholders need no values there).
    pub async fn explain_scan(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
    ) -> Result<Vec<String>, StoreError> {
        let statement = sql::select(&coll.table, "doc", request, None)?;
        // In a scope of its own: `EXPLAIN PLAN` writes PLAN_TABLE rows.
        self.call(move |conn| conn.atomic(|conn| explain(conn, &statement.text)))
            .await
    }
}

/// `EXPLAIN PLAN` of `text` and the lines `DBMS_XPLAN.DISPLAY` shows of it.
fn explain(conn: &mut OraConn, text: &str) -> Result<Vec<String>, StoreError> {
    conn.execute(
        &format!("EXPLAIN PLAN SET STATEMENT_ID = 'docgate' FOR {text}"),
        &[],
    )?;
    let rows = conn.query(
        "SELECT plan_table_output FROM TABLE(DBMS_XPLAN.DISPLAY(NULL, 'docgate', 'BASIC'))",
        &[],
    )?;
    conn.execute("DELETE FROM plan_table WHERE statement_id = 'docgate'", &[])?;
    rows.iter().map(|row| get::<String>(row, 0)).collect()
}

impl Drop for OracleSession {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        if !conn.in_tx {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn_blocking(move || {
                let _ = conn.end(false);
            });
        }
        // Without a runtime the connection is released as it is; Oracle rolls back an
        // open transaction when a pooled session is released.
    }
}

/// The documents a scan selects.
fn select_documents(
    conn: &mut OraConn,
    table: &str,
    request: &ScanRequest,
) -> Result<Vec<Vec<u8>>, StoreError> {
    let statement = sql::select(table, "doc", request, None)?;
    let rows = conn.query(&statement.text, &statement.binds)?;
    rows.iter().map(|row| get(row, 0)).collect()
}

/// The scan's `_id` keys in its order, then those rows locked with `FOR UPDATE` (which
/// waits for concurrent writers and reads their committed versions) in that order; rows
/// deleted meanwhile drop out. Two statements because Oracle refuses `FOR UPDATE` together
/// with `FETCH`/`OFFSET` and joins to inline views.
fn select_for_update(
    conn: &mut OraConn,
    table: &str,
    request: &ScanRequest,
) -> Result<Vec<Vec<u8>>, StoreError> {
    let statement = sql::select(table, "k", request, None)?;
    let keys: Vec<Vec<u8>> = conn
        .query(&statement.text, &statement.binds)?
        .iter()
        .map(|row| get(row, 0))
        .collect::<Result<_, _>>()?;
    let mut locked = std::collections::HashMap::with_capacity(keys.len());
    for chunk in keys.chunks(1_000) {
        let list = (1..=chunk.len())
            .map(|i| format!(":{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let binds: Vec<Bind> = chunk.iter().map(|k| Bind::Raw(k.clone())).collect();
        for row in conn.query(
            &format!("SELECT k, doc FROM {table} WHERE k IN ({list}) FOR UPDATE"),
            &binds,
        )? {
            let key: Vec<u8> = get(&row, 0)?;
            let doc: Vec<u8> = get(&row, 1)?;
            locked.insert(key, doc);
        }
    }
    Ok(keys.iter().filter_map(|k| locked.remove(k)).collect())
}

fn select_positioned(
    conn: &mut OraConn,
    table: &str,
    request: &ScanRequest,
    after: Option<&ScanPosition>,
) -> Result<Vec<PositionedRow>, StoreError> {
    let columns = PositionColumns::of(request);
    let select_list = columns.select_list::<sql::Sql>();
    let statement = sql::select(table, &select_list, request, after)?;
    let rows = conn.query(&statement.text, &statement.binds)?;
    rows.iter()
        .map(|row| {
            let position = columns.read(|| get(row, 0), |i| get(row, i))?;
            let document = get(row, columns.width())?;
            Ok(PositionedRow { position, document })
        })
        .collect()
}

#[async_trait]
impl StoreSession for OracleSession {
    async fn begin(&mut self) -> Result<(), StoreError> {
        self.call(|conn| conn.begin(false)).await
    }

    /// SERIALIZABLE: every read sees the transaction's snapshot; a write to a row another
    /// transaction changed since answers ORA-08177 (`WriteConflict`), after waiting for
    /// that transaction to end if it still holds the row.
    async fn begin_snapshot(&mut self) -> Result<(), StoreError> {
        self.call(|conn| conn.begin(true)).await
    }

    async fn commit(&mut self) -> Result<(), StoreError> {
        self.call(|conn| conn.end(true)).await
    }

    async fn rollback(&mut self) -> Result<(), StoreError> {
        self.call(|conn| conn.end(false)).await
    }

    async fn write_record(&mut self, session: &[u8]) -> Result<Option<WriteRecord>, StoreError> {
        let session = session.to_vec();
        self.call(move |conn| write_record::get_record(conn, &session))
            .await
    }

    async fn put_write_record(
        &mut self,
        session: &[u8],
        record: &WriteRecord,
    ) -> Result<(), StoreError> {
        let (session, record) = (session.to_vec(), record.clone());
        self.call(move |conn| write_record::put(conn, &session, &record))
            .await
    }

    async fn delete_write_records(
        &mut self,
        session: Option<&[u8]>,
        written_before_ms: i64,
    ) -> Result<u64, StoreError> {
        let session = session.map(<[u8]>::to_vec);
        self.call(move |conn| write_record::delete(conn, session.as_deref(), written_before_ms))
            .await
    }

    async fn catalog_version(&mut self) -> Result<i64, StoreError> {
        self.call(catalog_row::catalog_version).await
    }

    async fn list_collections(&mut self) -> Result<Vec<CollectionRecord>, StoreError> {
        self.call(catalog::list_collections).await
    }

    async fn create_collection(
        &mut self,
        db: &str,
        name: &str,
        options: &Document,
    ) -> Result<CollectionRecord, StoreError> {
        let (db, name, options) = (db.to_owned(), name.to_owned(), options.clone());
        self.call(move |conn| catalog::create_collection(conn, &db, &name, &options))
            .await
    }

    async fn create_view(
        &mut self,
        db: &str,
        name: &str,
        options: &Document,
    ) -> Result<CollectionRecord, StoreError> {
        let (db, name, options) = (db.to_owned(), name.to_owned(), options.clone());
        self.call(move |conn| catalog::create_view(conn, &db, &name, &options))
            .await
    }

    async fn set_collection_options(
        &mut self,
        coll: &CollectionRecord,
        options: &Document,
    ) -> Result<(), StoreError> {
        let (coll, options) = (coll.clone(), options.clone());
        self.call(move |conn| catalog::set_collection_options(conn, &coll, &options))
            .await
    }

    async fn drop_collection(&mut self, coll: &CollectionRecord) -> Result<(), StoreError> {
        let coll = coll.clone();
        self.call(move |conn| catalog::drop_collection(conn, &coll))
            .await
    }

    async fn rename_collection(
        &mut self,
        coll: &CollectionRecord,
        to_db: &str,
        to_name: &str,
    ) -> Result<CollectionRecord, StoreError> {
        let (coll, to_db, to_name) = (coll.clone(), to_db.to_owned(), to_name.to_owned());
        self.call(move |conn| catalog::rename_collection(conn, &coll, &to_db, &to_name))
            .await
    }

    async fn insert(
        &mut self,
        coll: &CollectionRecord,
        docs: &[StoredDocument],
        ordered: bool,
    ) -> Result<InsertOutcome, StoreError> {
        let (coll, docs) = (coll.clone(), docs.to_vec());
        self.call(move |conn| write::insert(conn, &coll, &docs, ordered))
            .await
    }

    async fn scan(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let (table, request) = (coll.table.clone(), request.clone());
        self.call(move |conn| select_documents(conn, &table, &request))
            .await
    }

    async fn scan_from(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
        after: Option<&ScanPosition>,
    ) -> Result<Vec<PositionedRow>, StoreError> {
        let (table, request, after) = (coll.table.clone(), request.clone(), after.cloned());
        self.call(move |conn| select_positioned(conn, &table, &request, after.as_ref()))
            .await
    }

    async fn scan_for_update(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let (table, request) = (coll.table.clone(), request.clone());
        // Outside a transaction the locks end with the call (the scope commits).
        self.call(move |conn| conn.atomic(|conn| select_for_update(conn, &table, &request)))
            .await
    }

    async fn count(
        &mut self,
        coll: &CollectionRecord,
        filter: &Predicate,
    ) -> Result<u64, StoreError> {
        let statement = sql::count(&coll.table, filter)?;
        self.call(move |conn| {
            let row = conn.query_one(&statement.text, &statement.binds)?;
            let n: i64 = get(&row, 0)?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
        .await
    }

    async fn replace(
        &mut self,
        coll: &CollectionRecord,
        docs: &[StoredDocument],
    ) -> Result<u64, StoreError> {
        let (coll, docs) = (coll.clone(), docs.to_vec());
        self.call(move |conn| write::replace(conn, &coll, &docs))
            .await
    }

    async fn delete(
        &mut self,
        coll: &CollectionRecord,
        keys: &[Vec<u8>],
    ) -> Result<u64, StoreError> {
        let (coll, keys) = (coll.clone(), keys.to_vec());
        self.call(move |conn| write::delete(conn, &coll, &keys))
            .await
    }

    async fn lock_collection_for_index_build(
        &mut self,
        coll: &CollectionRecord,
    ) -> Result<(), StoreError> {
        let coll = coll.clone();
        self.call(move |conn| index::lock_for_build(conn, &coll))
            .await
    }

    async fn list_indexes(&mut self) -> Result<Vec<IndexRecord>, StoreError> {
        self.call(index::list_indexes).await
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
        let coll = coll.clone();
        let new = NewIndex {
            name: name.to_owned(),
            spec: spec.clone(),
            unique,
            multikey,
        };
        let entries = entries.to_vec();
        self.call(move |conn| index::create_index(conn, &coll, &new, &entries))
            .await
    }

    async fn drop_index(&mut self, index: &IndexRecord) -> Result<(), StoreError> {
        let index = index.clone();
        self.call(move |conn| index::drop_index(conn, &index)).await
    }

    async fn set_index_spec(
        &mut self,
        index: &IndexRecord,
        spec: &Document,
    ) -> Result<(), StoreError> {
        let (index, spec) = (index.clone(), spec.clone());
        self.call(move |conn| index::set_index_spec(conn, &index, &spec))
            .await
    }

    async fn mark_multikey(&mut self, index: &IndexRecord) -> Result<(), StoreError> {
        let index = index.clone();
        self.call(move |conn| index::mark_multikey(conn, &index))
            .await
    }

    async fn collection_stats(
        &mut self,
        coll: &CollectionRecord,
    ) -> Result<CollectionStats, StoreError> {
        let coll = coll.clone();
        self.call(move |conn| catalog::collection_stats(conn, &coll))
            .await
    }

    async fn explain(
        &mut self,
        coll: &CollectionRecord,
        request: &ScanRequest,
    ) -> Result<Vec<String>, StoreError> {
        self.explain_scan(coll, request).await
    }

    async fn list_meta(
        &mut self,
        kind: &str,
        db: Option<&str>,
    ) -> Result<Vec<MetaRecord>, StoreError> {
        let (kind, db) = (kind.to_owned(), db.map(str::to_owned));
        self.call(move |conn| meta::list(conn, &kind, db.as_deref()))
            .await
    }

    async fn get_meta(
        &mut self,
        kind: &str,
        db: &str,
        name: &str,
    ) -> Result<Option<MetaRecord>, StoreError> {
        let (kind, db, name) = (kind.to_owned(), db.to_owned(), name.to_owned());
        self.call(move |conn| meta::get_one(conn, &kind, &db, &name))
            .await
    }

    async fn put_meta(&mut self, record: &MetaRecord, mode: MetaWrite) -> Result<bool, StoreError> {
        let record = record.clone();
        self.call(move |conn| meta::put(conn, &record, mode)).await
    }

    async fn delete_meta(
        &mut self,
        kind: &str,
        db: &str,
        name: Option<&str>,
    ) -> Result<u64, StoreError> {
        let (kind, db, name) = (kind.to_owned(), db.to_owned(), name.map(str::to_owned));
        self.call(move |conn| meta::delete(conn, &kind, &db, name.as_deref()))
            .await
    }
}
