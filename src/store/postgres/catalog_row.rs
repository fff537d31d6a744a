//! The one row of `docgate.catalog` that every catalog change goes through, for the
//! collection DDL (`catalog.rs`), the index DDL (`index.rs`) and the metadata records
//! (`meta.rs`): the catalog version (bumped, and `NOTIFY docgate_catalog` queued, in the same
//! transaction as each change; `listen.rs` waits on [`CHANNEL`]), the counter of generated
//! names, and whether a table name is free in a schema.
//!
//! Not for: creating the catalog tables (`catalog::bootstrap`) or the DDL itself.

use super::super::StoreError;
use super::conn::PgConn;

/// Channel of catalog change notifications; the payload is the new version.
pub(super) const CHANNEL: &str = "docgate_catalog";

pub(super) fn corrupt(e: tokio_postgres::Error) -> StoreError {
    StoreError::Corrupt(format!("catalog row: {e}"))
}

pub(super) async fn catalog_version(conn: &mut PgConn) -> Result<i64, StoreError> {
    let row = conn
        .query_one(
            "SELECT version FROM docgate.catalog WHERE id = 1",
            &params![],
        )
        .await?;
    row.try_get(0).map_err(corrupt)
}

/// Bumps the version and queues the notification (sent at commit).
pub(super) async fn bump_version(conn: &mut PgConn) -> Result<i64, StoreError> {
    let row = conn
        .query_one(
            "WITH v AS (UPDATE docgate.catalog SET version = version + 1 WHERE id = 1
                        RETURNING version)
             SELECT version, pg_notify('docgate_catalog', version::text)::text FROM v",
            &params![],
        )
        .await?;
    row.try_get(0).map_err(corrupt)
}

pub(super) async fn next_number(conn: &mut PgConn) -> Result<i64, StoreError> {
    let row = conn
        .query_one(
            "UPDATE docgate.catalog SET next_name = next_name + 1 WHERE id = 1
             RETURNING next_name - 1",
            &params![],
        )
        .await?;
    row.try_get(0).map_err(corrupt)
}

pub(super) async fn table_taken(
    conn: &mut PgConn,
    schema: &str,
    table: &str,
) -> Result<bool, StoreError> {
    let row = conn
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
                            WHERE s.nspname = $1 AND lower(c.relname) = lower($2))
                 OR EXISTS (SELECT 1 FROM pg_type t JOIN pg_namespace s ON s.oid = t.typnamespace
                            WHERE s.nspname = $1 AND lower(t.typname) = lower($2))
                 OR EXISTS (SELECT 1 FROM docgate.collections
                            WHERE schema_name = $1 AND lower(table_name) = lower($2))",
            &params![schema.to_owned(), table.to_owned()],
        )
        .await?;
    row.try_get(0).map_err(corrupt)
}
