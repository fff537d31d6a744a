//! Retryable-write records of the PostgreSQL backend: `docgate.write_records(session,
//! txn_number, reply, written_ms)` (created with the catalog, see `catalog.rs`), one row per
//! logical session, written in the write's own transaction so that the write and its record
//! commit together — on every instance sharing the database, so a retry that reaches another
//! instance behind a load balancer finds it too.
//!
//! Not for: deciding what a retry answers (`ops::sessions`).

use super::super::{StoreError, WriteRecord};
use super::conn::PgConn;

pub(super) async fn get(
    conn: &mut PgConn,
    session: &[u8],
) -> Result<Option<WriteRecord>, StoreError> {
    let rows = conn
        .query(
            "SELECT txn_number, reply, written_ms FROM docgate.write_records WHERE session = $1",
            &params![session.to_vec()],
        )
        .await?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let corrupt = |e: tokio_postgres::Error| StoreError::Corrupt(format!("write record: {e}"));
    Ok(Some(WriteRecord {
        txn_number: row.try_get(0).map_err(corrupt)?,
        reply: row.try_get(1).map_err(corrupt)?,
        written_ms: row.try_get(2).map_err(corrupt)?,
    }))
}

pub(super) async fn put(
    conn: &mut PgConn,
    session: &[u8],
    record: &WriteRecord,
) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO docgate.write_records (session, txn_number, reply, written_ms)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (session) DO UPDATE SET txn_number = excluded.txn_number,
             reply = excluded.reply, written_ms = excluded.written_ms",
        &params![
            session.to_vec(),
            record.txn_number,
            record.reply.clone(),
            record.written_ms
        ],
    )
    .await?;
    Ok(())
}

pub(super) async fn delete(
    conn: &mut PgConn,
    session: Option<&[u8]>,
    written_before_ms: i64,
) -> Result<u64, StoreError> {
    match session {
        Some(session) => {
            conn.execute(
                "DELETE FROM docgate.write_records WHERE session = $1",
                &params![session.to_vec()],
            )
            .await
        }
        None => {
            conn.execute(
                "DELETE FROM docgate.write_records WHERE written_ms < $1",
                &params![written_before_ms],
            )
            .await
        }
    }
}
