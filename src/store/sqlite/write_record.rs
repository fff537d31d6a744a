//! Retryable-write records of the SQLite backend: `dg_write_records(session, txn_number,
//! reply, written_ms)`, one row per logical session (its last retryable write), written in
//! the write's own transaction so that the write and its record commit together.
//!
//! Not for: deciding what a retry answers (`ops::sessions`).

use rusqlite::{params, Connection, OptionalExtension};

use super::super::{StoreError, WriteRecord};
use super::conn::db_err;

/// The table, created when the store opens.
pub(super) const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS dg_write_records (
     session BLOB PRIMARY KEY,
     txn_number INTEGER NOT NULL,
     reply BLOB NOT NULL,
     written_ms INTEGER NOT NULL
 );";

pub(super) fn get(conn: &Connection, session: &[u8]) -> Result<Option<WriteRecord>, StoreError> {
    conn.prepare_cached(
        "SELECT txn_number, reply, written_ms FROM dg_write_records WHERE session = ?1",
    )
    .and_then(|mut stmt| {
        stmt.query_row(params![session], |row| {
            Ok(WriteRecord {
                txn_number: row.get(0)?,
                reply: row.get(1)?,
                written_ms: row.get(2)?,
            })
        })
        .optional()
    })
    .map_err(db_err)
}

pub(super) fn put(
    conn: &Connection,
    session: &[u8],
    record: &WriteRecord,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO dg_write_records (session, txn_number, reply, written_ms)
         VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (session) DO UPDATE SET txn_number = excluded.txn_number,
             reply = excluded.reply, written_ms = excluded.written_ms",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            session,
            record.txn_number,
            record.reply,
            record.written_ms
        ])
    })
    .map_err(db_err)?;
    Ok(())
}

pub(super) fn delete(
    conn: &Connection,
    session: Option<&[u8]>,
    written_before_ms: i64,
) -> Result<u64, StoreError> {
    let deleted = match session {
        Some(session) => conn.execute(
            "DELETE FROM dg_write_records WHERE session = ?1",
            params![session],
        ),
        None => conn.execute(
            "DELETE FROM dg_write_records WHERE written_ms < ?1",
            params![written_before_ms],
        ),
    }
    .map_err(db_err)?;
    Ok(deleted as u64)
}
