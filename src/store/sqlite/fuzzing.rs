//! A scratch SQLite collection for the fuzz targets (`docgate::fuzzing`, cargo feature
//! `fuzzing`): an in-memory database with the real catalog schema, one collection, its
//! secondary indexes and documents, written by the functions the store uses; and a check
//! that every statement the store would run for a scan prepares, binds exactly the values it
//! carries and runs.
//!
//! Not for: the server (its connections come from the pool in `conn.rs`).

use std::path::Path;
use std::time::Duration;

use bson::Document;
use rusqlite::Connection;

use super::super::where_clause::PositionColumns;
use super::conn::{db_err, open_connection};
use super::{catalog, index, sql, write};
use crate::store::{CollectionRecord, IndexRecord, ScanRequest, StoreError, StoredDocument};

/// One collection in an in-memory SQLite database.
pub struct ScratchCollection {
    conn: Connection,
    collection: CollectionRecord,
}

impl ScratchCollection {
    /// A new empty collection.
    pub fn new() -> Result<ScratchCollection, StoreError> {
        let conn =
            open_connection(Path::new(":memory:"), Duration::from_secs(1)).map_err(db_err)?;
        catalog::init_schema(&conn)?;
        let collection = catalog::create_collection(&conn, "fuzz", "c", &Document::new())?;
        Ok(ScratchCollection { conn, collection })
    }

    /// Creates an (empty) secondary index named `name` with the listIndexes-style `spec`.
    pub fn create_index(
        &self,
        name: &str,
        spec: &Document,
        multikey: bool,
    ) -> Result<IndexRecord, StoreError> {
        let new = index::NewIndex {
            name,
            spec,
            unique: false,
            multikey,
            kind: crate::store::EntriesKind::Keys,
        };
        index::create_index(&self.conn, &self.collection, &new, &[])
    }

    /// Inserts `documents` with their index keys.
    pub fn insert(&self, documents: &[StoredDocument]) -> Result<u64, StoreError> {
        Ok(write::insert(&self.conn, &self.collection.table, documents, false)?.inserted)
    }

    /// Runs every statement the store writes for `request`: the scan itself, the scan resumed
    /// after its first row, and the count of its filter. Each must prepare and bind exactly
    /// as many values as it has placeholders. Answers the raw BSON of the documents the scan
    /// selects, or what went wrong with which statement.
    pub fn check_scan(&self, request: &ScanRequest) -> Result<Vec<Vec<u8>>, String> {
        let columns = PositionColumns::of(request);
        let select_list = columns.select_list::<sql::Sql>();
        let scan = sql::select(&self.collection.table, &select_list, request, None);
        let rows = self.run(&scan, |row| {
            let position = columns.read(|| row.get(0), |i| row.get(i))?;
            Ok((position, row.get::<_, Vec<u8>>(columns.width())?))
        })?;
        if let Some((position, _)) = rows.first() {
            let resumed = sql::select(
                &self.collection.table,
                &select_list,
                request,
                Some(position),
            );
            self.run(&resumed, |row| row.get::<_, Vec<u8>>(columns.width()))?;
        }
        let count = sql::count(&self.collection.table, &request.filter);
        let counted = self.run(&count, |row| row.get::<_, i64>(0))?;
        let documents: Vec<Vec<u8>> = rows.into_iter().map(|(_, document)| document).collect();
        if request.skip == 0 && request.limit.is_none() && counted != [documents.len() as i64] {
            return Err(format!(
                "count {counted:?} differs from the scan's {} rows: {}",
                documents.len(),
                count.text
            ));
        }
        Ok(documents)
    }

    fn run<T>(
        &self,
        statement: &sql::Sql,
        read: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, String> {
        let failed = |e: rusqlite::Error| format!("{e}: {}", statement.text);
        let mut prepared = self.conn.prepare(&statement.text).map_err(failed)?;
        if prepared.parameter_count() != statement.params.len() {
            return Err(format!(
                "{} placeholders, {} bound values: {}",
                prepared.parameter_count(),
                statement.params.len(),
                statement.text
            ));
        }
        let rows = prepared
            .query_map(rusqlite::params_from_iter(statement.params.iter()), read)
            .map_err(failed)?;
        rows.collect::<Result<Vec<T>, _>>().map_err(failed)
    }
}
