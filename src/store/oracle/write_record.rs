//! Retryable-write records of the Oracle backend: `dg_write_records(session_id,
//! txn_number, reply, written_ms)` (created with the catalog, see `catalog.rs`), one row per
//! logical session, written with a `MERGE` in the write's own transaction so that the write
//! and its record commit together, on every instance sharing the database.
//!
//! Not for: deciding what a retry answers (`ops::sessions`).

use super::super::{StoreError, WriteRecord};
use super::conn::{get, Bind, OraConn};

pub(super) fn get_record(
    conn: &mut OraConn,
    session: &[u8],
) -> Result<Option<WriteRecord>, StoreError> {
    let rows = conn.query(
        "SELECT txn_number, reply, written_ms FROM dg_write_records WHERE session_id = :1",
        &[Bind::Raw(session.to_vec())],
    )?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    Ok(Some(WriteRecord {
        txn_number: get(row, 0)?,
        reply: get(row, 1)?,
        written_ms: get(row, 2)?,
    }))
}

/// The upsert of a session's record: one `MERGE`.
const PUT: &str = "MERGE INTO dg_write_records w
     USING (SELECT :1 AS session_id, :2 AS txn_number, :3 AS reply, :4 AS written_ms
            FROM dual) s
     ON (w.session_id = s.session_id)
     WHEN MATCHED THEN UPDATE SET w.txn_number = s.txn_number, w.reply = s.reply,
         w.written_ms = s.written_ms
     WHEN NOT MATCHED THEN INSERT (session_id, txn_number, reply, written_ms)
         VALUES (s.session_id, s.txn_number, s.reply, s.written_ms)";

pub(super) fn put(
    conn: &mut OraConn,
    session: &[u8],
    record: &WriteRecord,
) -> Result<(), StoreError> {
    let binds = [
        Bind::Raw(session.to_vec()),
        Bind::Int(record.txn_number),
        Bind::Blob(record.reply.clone()),
        Bind::Int(record.written_ms),
    ];
    conn.atomic(|conn| conn.execute(PUT, &binds).map(|_| ()))
}

pub(super) fn delete(
    conn: &mut OraConn,
    session: Option<&[u8]>,
    written_before_ms: i64,
) -> Result<u64, StoreError> {
    conn.atomic(|conn| match session {
        Some(session) => conn.execute(
            "DELETE FROM dg_write_records WHERE session_id = :1",
            &[Bind::Raw(session.to_vec())],
        ),
        None => conn.execute(
            "DELETE FROM dg_write_records WHERE written_ms < :1",
            &[Bind::Int(written_before_ms)],
        ),
    })
}
