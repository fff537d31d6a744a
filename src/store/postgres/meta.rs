//! Metadata records of the PostgreSQL backend: `docgate.meta(kind, db, name, body json)`,
//! primary key `(kind, db, name)` (created with the catalog, see `catalog.rs`). Users and
//! roles (auth), REST modules and OAuth clients (rest) live here. Every change bumps the
//! catalog version and notifies the other instances in the same transaction, like collection
//! DDL, so every instance drops what it cached at once.
//!
//! Not for: what a record means (its owner — `auth`, `rest` — decides that).

use tokio_postgres::Row;

use super::super::{MetaRecord, MetaWrite, StoreError};
use super::catalog_row::bump_version;
use super::conn::PgConn;

fn record(row: &Row) -> Result<MetaRecord, StoreError> {
    let get = |i: usize| -> Result<String, StoreError> {
        row.try_get(i)
            .map_err(|e| StoreError::Corrupt(format!("meta row: {e}")))
    };
    MetaRecord::from_stored(get(0)?, get(1)?, get(2)?, &get(3)?)
}

pub(super) async fn list(
    conn: &mut PgConn,
    kind: &str,
    db: Option<&str>,
) -> Result<Vec<MetaRecord>, StoreError> {
    let rows = conn
        .query(
            "SELECT kind, db, name, body::text FROM docgate.meta
             WHERE kind = $1 AND ($2::text IS NULL OR db = $2) ORDER BY db, name",
            &params![kind.to_owned(), db.map(str::to_owned)],
        )
        .await?;
    rows.iter().map(record).collect()
}

pub(super) async fn get(
    conn: &mut PgConn,
    kind: &str,
    db: &str,
    name: &str,
) -> Result<Option<MetaRecord>, StoreError> {
    let rows = conn
        .query(
            "SELECT kind, db, name, body::text FROM docgate.meta
             WHERE kind = $1 AND db = $2 AND name = $3",
            &params![kind.to_owned(), db.to_owned(), name.to_owned()],
        )
        .await?;
    rows.first().map(record).transpose()
}

pub(super) async fn put(
    conn: &mut PgConn,
    meta: &MetaRecord,
    mode: MetaWrite,
) -> Result<bool, StoreError> {
    let scope = conn.open_scope();
    let result = put_body(conn, meta, mode).await;
    conn.close_scope(scope, result).await
}

async fn put_body(
    conn: &mut PgConn,
    meta: &MetaRecord,
    mode: MetaWrite,
) -> Result<bool, StoreError> {
    bump_version(conn).await?;
    let sql = match mode {
        MetaWrite::Insert => {
            "INSERT INTO docgate.meta (kind, db, name, body) VALUES ($1, $2, $3, $4::text::json)
             ON CONFLICT DO NOTHING"
        }
        MetaWrite::Update => {
            "UPDATE docgate.meta SET body = $4::text::json
             WHERE kind = $1 AND db = $2 AND name = $3"
        }
        MetaWrite::Upsert => {
            "INSERT INTO docgate.meta (kind, db, name, body) VALUES ($1, $2, $3, $4::text::json)
             ON CONFLICT (kind, db, name) DO UPDATE SET body = excluded.body"
        }
    };
    let written = conn
        .execute(
            sql,
            &params![
                meta.kind.clone(),
                meta.db.clone(),
                meta.name.clone(),
                meta.body.to_string()
            ],
        )
        .await?;
    if written == 0 && mode == MetaWrite::Insert {
        return Err(StoreError::AlreadyExists(format!(
            "{} {}.{}",
            meta.kind, meta.db, meta.name
        )));
    }
    Ok(written > 0)
}

pub(super) async fn delete(
    conn: &mut PgConn,
    kind: &str,
    db: &str,
    name: Option<&str>,
) -> Result<u64, StoreError> {
    let scope = conn.open_scope();
    let result = async {
        bump_version(conn).await?;
        conn.execute(
            "DELETE FROM docgate.meta WHERE kind = $1 AND db = $2 AND ($3::text IS NULL OR name = $3)",
            &params![kind.to_owned(), db.to_owned(), name.map(str::to_owned)],
        )
        .await
    }
    .await;
    conn.close_scope(scope, result).await
}
