//! Metadata records of the Oracle backend: `dg_meta(kind, db, name, body CLOB IS JSON)`,
//! primary key `(kind, db, name)` (created with the catalog, see `catalog.rs`). Users and
//! roles (auth), REST modules and OAuth clients (rest) live here. Every change bumps the
//! catalog version in the same transaction, like collection DDL.
//!
//! Oracle's `VARCHAR2` has no empty string (`''` is NULL), and server-wide records have an
//! empty `db`: every key column is stored with a one-character prefix `~` and read back
//! without it, so `""` and every other string round-trip and order as they do elsewhere.
//!
//! Not for: what a record means (its owner — `auth`, `rest` — decides that).

use oracle::Row;

use super::super::{MetaRecord, MetaWrite, StoreError};
use super::catalog_row::bump_version;
use super::conn::{get, Bind, OraConn};

/// `s` as stored in a key column.
fn stored(s: &str) -> Bind {
    Bind::Text(format!("~{s}"))
}

/// A key column as read back.
fn unstored(row: &Row, i: usize) -> Result<String, StoreError> {
    let s: String = get(row, i)?;
    match s.strip_prefix('~') {
        Some(s) => Ok(s.to_owned()),
        None => Err(StoreError::Corrupt(format!(
            "meta key {s:?} lacks its prefix"
        ))),
    }
}

fn record(row: &Row) -> Result<MetaRecord, StoreError> {
    let body: String = get(row, 3)?;
    MetaRecord::from_stored(
        unstored(row, 0)?,
        unstored(row, 1)?,
        unstored(row, 2)?,
        &body,
    )
}

pub(super) fn list(
    conn: &mut OraConn,
    kind: &str,
    db: Option<&str>,
) -> Result<Vec<MetaRecord>, StoreError> {
    let rows = match db {
        Some(db) => conn.query(
            "SELECT kind, db, name, body FROM dg_meta WHERE kind = :1 AND db = :2",
            &[stored(kind), stored(db)],
        )?,
        None => conn.query(
            "SELECT kind, db, name, body FROM dg_meta WHERE kind = :1",
            &[stored(kind)],
        )?,
    };
    let mut out = rows.iter().map(record).collect::<Result<Vec<_>, _>>()?;
    out.sort_by(|a, b| (&a.db, &a.name).cmp(&(&b.db, &b.name)));
    Ok(out)
}

pub(super) fn get_one(
    conn: &mut OraConn,
    kind: &str,
    db: &str,
    name: &str,
) -> Result<Option<MetaRecord>, StoreError> {
    let rows = conn.query(
        "SELECT kind, db, name, body FROM dg_meta WHERE kind = :1 AND db = :2 AND name = :3",
        &[stored(kind), stored(db), stored(name)],
    )?;
    rows.first().map(record).transpose()
}

/// The upsert: one `MERGE`.
const UPSERT: &str = "MERGE INTO dg_meta m
     USING (SELECT :1 AS kind, :2 AS db, :3 AS name, :4 AS body FROM dual) s
     ON (m.kind = s.kind AND m.db = s.db AND m.name = s.name)
     WHEN MATCHED THEN UPDATE SET m.body = s.body
     WHEN NOT MATCHED THEN INSERT (kind, db, name, body) VALUES (s.kind, s.db, s.name, s.body)";

pub(super) fn put(
    conn: &mut OraConn,
    meta: &MetaRecord,
    mode: MetaWrite,
) -> Result<bool, StoreError> {
    let binds = [
        stored(&meta.kind),
        stored(&meta.db),
        stored(&meta.name),
        Bind::Clob(meta.body.to_string()),
    ];
    conn.atomic(|conn| {
        bump_version(conn)?;
        let written = match mode {
            MetaWrite::Insert => match conn.execute(
                "INSERT INTO dg_meta (kind, db, name, body) VALUES (:1, :2, :3, :4)",
                &binds,
            ) {
                Err(StoreError::DuplicateKey) => {
                    return Err(StoreError::AlreadyExists(format!(
                        "{} {}.{}",
                        meta.kind, meta.db, meta.name
                    )))
                }
                other => other?,
            },
            MetaWrite::Update => {
                let [kind, db, name, body] = binds.clone();
                conn.execute(
                    "UPDATE dg_meta SET body = :1 WHERE kind = :2 AND db = :3 AND name = :4",
                    &[body, kind, db, name],
                )?
            }
            MetaWrite::Upsert => conn.execute(UPSERT, &binds)?,
        };
        Ok(written > 0)
    })
}

pub(super) fn delete(
    conn: &mut OraConn,
    kind: &str,
    db: &str,
    name: Option<&str>,
) -> Result<u64, StoreError> {
    conn.atomic(|conn| {
        bump_version(conn)?;
        match name {
            Some(name) => conn.execute(
                "DELETE FROM dg_meta WHERE kind = :1 AND db = :2 AND name = :3",
                &[stored(kind), stored(db), stored(name)],
            ),
            None => conn.execute(
                "DELETE FROM dg_meta WHERE kind = :1 AND db = :2",
                &[stored(kind), stored(db)],
            ),
        }
    })
}
