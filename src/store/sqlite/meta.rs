//! Metadata records of the SQLite backend: `dg_meta(kind, db, name, body)`, primary key
//! `(kind, db, name)`, `body` a JSON text. Users and roles (auth), REST modules and OAuth
//! clients (rest) live here. Every change bumps the catalog version in the same
//! transaction, like collection DDL, so caches drop what they hold at once.
//!
//! Not for: what a record means (its owner — `auth`, `rest` — decides that).

use rusqlite::{params, Connection, OptionalExtension};

use super::super::{MetaRecord, MetaWrite, StoreError};
use super::catalog_row::bump_version;
use super::conn::{db_err, write_tx};

/// The table, created when the store opens.
pub(super) const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS dg_meta (
     kind TEXT NOT NULL,
     db TEXT NOT NULL,
     name TEXT NOT NULL,
     body TEXT NOT NULL,
     PRIMARY KEY (kind, db, name)
 );";

pub(super) fn list(
    conn: &Connection,
    kind: &str,
    db: Option<&str>,
) -> Result<Vec<MetaRecord>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT kind, db, name, body FROM dg_meta
             WHERE kind = ?1 AND (?2 IS NULL OR db = ?2) ORDER BY db, name",
        )
        .map_err(db_err)?;
    let rows = stmt
        .query_map(params![kind, db], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })
        .map_err(db_err)?;
    let mut out = Vec::new();
    for row in rows {
        let (kind, db, name, body): (String, String, String, String) = row.map_err(db_err)?;
        out.push(MetaRecord::from_stored(kind, db, name, &body)?);
    }
    Ok(out)
}

pub(super) fn get(
    conn: &Connection,
    kind: &str,
    db: &str,
    name: &str,
) -> Result<Option<MetaRecord>, StoreError> {
    let body: Option<String> = conn
        .prepare_cached("SELECT body FROM dg_meta WHERE kind = ?1 AND db = ?2 AND name = ?3")
        .and_then(|mut stmt| {
            stmt.query_row(params![kind, db, name], |row| row.get(0))
                .optional()
        })
        .map_err(db_err)?;
    body.map(|body| MetaRecord::from_stored(kind.to_owned(), db.to_owned(), name.to_owned(), &body))
        .transpose()
}

pub(super) fn put(
    conn: &Connection,
    meta: &MetaRecord,
    mode: MetaWrite,
) -> Result<bool, StoreError> {
    let body = meta.body.to_string();
    let key = params![meta.kind, meta.db, meta.name, body];
    write_tx(conn, |conn| {
        let written = match mode {
            MetaWrite::Insert => {
                let inserted = conn
                    .execute(
                        "INSERT INTO dg_meta (kind, db, name, body) VALUES (?1, ?2, ?3, ?4)
                         ON CONFLICT DO NOTHING",
                        key,
                    )
                    .map_err(db_err)?;
                if inserted == 0 {
                    return Err(StoreError::AlreadyExists(format!(
                        "{} {}.{}",
                        meta.kind, meta.db, meta.name
                    )));
                }
                true
            }
            MetaWrite::Update => {
                conn.execute(
                    "UPDATE dg_meta SET body = ?4 WHERE kind = ?1 AND db = ?2 AND name = ?3",
                    key,
                )
                .map_err(db_err)?
                    > 0
            }
            MetaWrite::Upsert => {
                conn.execute(
                    "INSERT INTO dg_meta (kind, db, name, body) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (kind, db, name) DO UPDATE SET body = excluded.body",
                    key,
                )
                .map_err(db_err)?;
                true
            }
        };
        if written {
            bump_version(conn)?;
        }
        Ok(written)
    })
}

pub(super) fn delete(
    conn: &Connection,
    kind: &str,
    db: &str,
    name: Option<&str>,
) -> Result<u64, StoreError> {
    write_tx(conn, |conn| {
        let deleted = conn
            .execute(
                "DELETE FROM dg_meta WHERE kind = ?1 AND db = ?2 AND (?3 IS NULL OR name = ?3)",
                params![kind, db, name],
            )
            .map_err(db_err)?;
        if deleted > 0 {
            bump_version(conn)?;
        }
        Ok(deleted as u64)
    })
}
