//! The one row of `dg_catalog` that every catalog change goes through, for the collection
//! DDL (`catalog.rs`), the index DDL (`index.rs`) and the metadata records (`meta.rs`): the
//! catalog version (bumped in the same transaction as each change; bumping first also takes
//! the row lock, so catalog changes of several docgate processes serialize) and the counter
//! of generated table names. Other instances learn of a change by polling the version
//! (`mod.rs`, `Store::catalog_changes`).
//!
//! Not for: creating the catalog tables (`catalog::bootstrap`) or the DDL itself.

use super::super::StoreError;
use super::conn::{get, OraConn};

pub(super) fn catalog_version(conn: &mut OraConn) -> Result<i64, StoreError> {
    let row = conn.query_one("SELECT version FROM dg_catalog WHERE id = 1", &[])?;
    get(&row, 0)
}

/// Bumps the version (locking the row until the transaction ends) and answers the new one.
pub(super) fn bump_version(conn: &mut OraConn) -> Result<i64, StoreError> {
    conn.execute(
        "UPDATE dg_catalog SET version = version + 1 WHERE id = 1",
        &[],
    )?;
    catalog_version(conn)
}

/// The next number for a generated name; numbers are never reused.
pub(super) fn next_number(conn: &mut OraConn) -> Result<i64, StoreError> {
    conn.execute(
        "UPDATE dg_catalog SET next_name = next_name + 1 WHERE id = 1",
        &[],
    )?;
    let row = conn.query_one("SELECT next_name - 1 FROM dg_catalog WHERE id = 1", &[])?;
    get(&row, 0)
}
