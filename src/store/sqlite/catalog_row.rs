//! The one row of `dg_catalog` that every catalog change goes through, for the collection
//! DDL (`catalog.rs`), the index DDL (`index.rs`) and the metadata records (`meta.rs`): the
//! catalog version, bumped in the same transaction as each change, and the counter that
//! numbers physical tables.
//!
//! Not for: creating the catalog tables (`catalog::init_schema`) or the DDL itself.

use rusqlite::Connection;

use super::super::StoreError;
use super::conn::db_err;

pub(super) fn catalog_version(conn: &Connection) -> Result<i64, StoreError> {
    conn.prepare_cached("SELECT version FROM dg_catalog WHERE id = 1")
        .and_then(|mut stmt| stmt.query_row([], |row| row.get(0)))
        .map_err(db_err)
}

pub(super) fn bump_version(conn: &Connection) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE dg_catalog SET version = version + 1 WHERE id = 1",
        [],
    )
    .map_err(db_err)
    .map(drop)
}

/// Takes the next number of the physical table sequence and bumps the catalog version.
pub(super) fn next_table_number(conn: &Connection) -> Result<i64, StoreError> {
    conn.query_row(
        "UPDATE dg_catalog SET version = version + 1, next_table = next_table + 1
         WHERE id = 1 RETURNING next_table - 1",
        [],
        |row| row.get(0),
    )
    .map_err(db_err)
}
