//! Document writes: batched insert with unique-conflict reporting, replace by key, delete by
//! key. Every call is atomic (its own transaction, or a savepoint inside the caller's, see
//! `conn::write_tx`) and uses a bounded number of statements.
//!
//! Insert: `INSERT INTO t (k, doc, j) VALUES (?, ?, jsonb(?)), … ON CONFLICT DO NOTHING
//! RETURNING k`, `INSERT_ROWS` rows per statement (well under SQLite's bound-parameter limit).
//! Rows are inserted in batch order, so when a key repeats inside the batch the first
//! occurrence wins; a batch index is a conflict when its key is not among the keys the
//! statement returned (or was already claimed by an earlier index). With `ordered`, each
//! statement runs inside `SAVEPOINT dg_chunk`; on its first conflict at index f the chunk is
//! rolled back, the rows before f are inserted again, and the batch stops: `conflicts = [f]`.
//!
//! Replace and delete run one prepared statement per document / per `DELETE_KEYS` keys; in an
//! embedded database that costs no round trips.
//!
//! Not for: reads (`sql.rs`) or collection DDL (`catalog.rs`).

use std::collections::HashMap;

use rusqlite::types::ToSql;
use rusqlite::Connection;

use super::super::image::json_image;
use super::super::{InsertOutcome, StoreError, StoredDocument};
use super::conn::{db_err, write_tx};
use super::sql::quote_ident;

/// Rows per INSERT statement (3 bound values each).
const INSERT_ROWS: usize = 256;
/// Keys per DELETE statement.
const DELETE_KEYS: usize = 500;

pub(super) fn insert(
    conn: &Connection,
    table: &str,
    docs: &[StoredDocument],
    ordered: bool,
) -> Result<InsertOutcome, StoreError> {
    let images = docs
        .iter()
        .map(|d| json_image(&d.bson))
        .collect::<Result<Vec<_>, _>>()?;
    write_tx(conn, |conn| {
        let mut outcome = InsertOutcome::default();
        let mut start = 0;
        while start < docs.len() {
            let end = (start + INSERT_ROWS).min(docs.len());
            let (chunk, chunk_images) = (&docs[start..end], &images[start..end]);
            if ordered {
                conn.execute_batch("SAVEPOINT dg_chunk").map_err(db_err)?;
            }
            let conflicts = insert_rows(conn, table, chunk, chunk_images)?;
            match conflicts.first() {
                Some(&first) if ordered => {
                    conn.execute_batch("ROLLBACK TO dg_chunk; RELEASE dg_chunk")
                        .map_err(db_err)?;
                    if first > 0 {
                        let again =
                            insert_rows(conn, table, &chunk[..first], &chunk_images[..first])?;
                        if let Some(&other) = again.first() {
                            // Cannot happen (same rows, same state); report it faithfully.
                            outcome.inserted += other as u64;
                            outcome.conflicts.push(start + other);
                            return Ok(outcome);
                        }
                    }
                    outcome.inserted += first as u64;
                    outcome.conflicts.push(start + first);
                    return Ok(outcome);
                }
                _ => {
                    if ordered {
                        conn.execute_batch("RELEASE dg_chunk").map_err(db_err)?;
                    }
                    outcome.inserted += (chunk.len() - conflicts.len()) as u64;
                    outcome
                        .conflicts
                        .extend(conflicts.into_iter().map(|i| start + i));
                }
            }
            start = end;
        }
        Ok(outcome)
    })
}

/// Inserts `docs` with one statement; returns the indexes (into `docs`) not inserted.
fn insert_rows(
    conn: &Connection,
    table: &str,
    docs: &[StoredDocument],
    images: &[String],
) -> Result<Vec<usize>, StoreError> {
    if docs.is_empty() {
        return Ok(Vec::new());
    }
    let mut text = format!("INSERT INTO {} (k, doc, j) VALUES ", quote_ident(table));
    for i in 0..docs.len() {
        text.push_str(if i == 0 {
            "(?, ?, jsonb(?))"
        } else {
            ", (?, ?, jsonb(?))"
        });
    }
    text.push_str(" ON CONFLICT DO NOTHING RETURNING k");
    let mut params: Vec<&dyn ToSql> = Vec::with_capacity(docs.len() * 3);
    for (doc, image) in docs.iter().zip(images) {
        params.push(&doc.key);
        params.push(&doc.bson);
        params.push(image);
    }
    let mut stmt = conn.prepare_cached(&text).map_err(db_err)?;
    let mut inserted: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut rows = stmt.query(params.as_slice()).map_err(db_err)?;
    while let Some(row) = rows.next().map_err(db_err)? {
        let key: Vec<u8> = row.get(0).map_err(db_err)?;
        *inserted.entry(key).or_default() += 1;
    }
    let mut conflicts = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        match inserted.get_mut(doc.key.as_slice()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => conflicts.push(i),
        }
    }
    Ok(conflicts)
}

pub(super) fn replace(
    conn: &Connection,
    table: &str,
    docs: &[StoredDocument],
) -> Result<u64, StoreError> {
    let images = docs
        .iter()
        .map(|d| json_image(&d.bson))
        .collect::<Result<Vec<_>, _>>()?;
    let text = format!(
        "UPDATE {} SET doc = ?1, j = jsonb(?2) WHERE k = ?3",
        quote_ident(table)
    );
    write_tx(conn, |conn| {
        let mut stmt = conn.prepare_cached(&text).map_err(db_err)?;
        let mut written = 0u64;
        for (doc, image) in docs.iter().zip(&images) {
            let params: [&dyn ToSql; 3] = [&doc.bson, image, &doc.key];
            written += stmt.execute(params.as_slice()).map_err(db_err)? as u64;
        }
        Ok(written)
    })
}

pub(super) fn delete(conn: &Connection, table: &str, keys: &[Vec<u8>]) -> Result<u64, StoreError> {
    write_tx(conn, |conn| {
        let mut deleted = 0u64;
        for chunk in keys.chunks(DELETE_KEYS) {
            let mut text = format!("DELETE FROM {} WHERE k IN (", quote_ident(table));
            for i in 0..chunk.len() {
                text.push_str(if i == 0 { "?" } else { ", ?" });
            }
            text.push(')');
            let params: Vec<&dyn ToSql> = chunk.iter().map(|k| k as &dyn ToSql).collect();
            let mut stmt = conn.prepare_cached(&text).map_err(db_err)?;
            deleted += stmt.execute(params.as_slice()).map_err(db_err)? as u64;
        }
        Ok(deleted)
    })
}
