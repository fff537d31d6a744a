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
//! Secondary index entries (tables described in `index.rs`) are maintained in the same
//! transaction. Which indexes a collection has is read from `dg_indexes` inside the write;
//! every document must carry keys for exactly those (else the caller's catalog is stale and
//! nothing is written). Insert without a unique secondary index keeps the set-based path
//! above, then writes the inserted documents' entries set-based, per index. With one, the
//! documents go one by one, each in `SAVEPOINT dg_doc`: the row (an `_id` conflict rejects
//! it), then its entries (a unique violation rolls the document back and is reported in
//! `conflicts` and `index_conflicts`); ordered stops there, unordered carries on. Replace
//! deletes each document's old entries and writes its new keys; a unique violation fails the
//! whole call with `IndexKeyConflict`. Delete removes the entries of the deleted keys.
//!
//! Not for: reads (`sql.rs`) or collection DDL (`catalog.rs`).

use std::collections::HashMap;

use rusqlite::types::ToSql;
use rusqlite::Connection;

use super::super::image::json_image;
use super::super::{InsertOutcome, StoreError, StoredDocument};
use super::conn::{db_err, write_tx};
use super::index::{self, EntriesTable};
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
        let indexes = index::collection_indexes(conn, table)?;
        let keys = keys_per_index(table, &indexes, docs)?;
        if indexes.iter().any(|i| i.unique) {
            return insert_each(conn, table, docs, &images, &indexes, &keys, ordered);
        }
        let outcome = insert_batch(conn, table, docs, &images, ordered)?;
        if !indexes.is_empty() {
            // Ordered stops at its conflict; both report conflicts ascending.
            let stop = match outcome.conflicts.first() {
                Some(&first) if ordered => first,
                _ => docs.len(),
            };
            let mut rejected = outcome.conflicts.iter().peekable();
            let mut inserted = Vec::with_capacity(stop);
            for i in 0..stop {
                if rejected.next_if(|&&r| r == i).is_none() {
                    inserted.push(i);
                }
            }
            for (x, index) in indexes.iter().enumerate() {
                let rows: Vec<(&[u8], &[u8])> = inserted
                    .iter()
                    .flat_map(|&i| {
                        keys[i][x]
                            .iter()
                            .map(move |ik| (ik.as_slice(), &docs[i].key[..]))
                    })
                    .collect();
                index::insert_entries(conn, index, &rows)?;
            }
        }
        Ok(outcome)
    })
}

/// For each document, the keys it gives each of `indexes` (in that order). The documents
/// must carry keys for exactly the collection's indexes: otherwise the caller computed them
/// from a stale catalog and writing would leave an index incomplete, so nothing is written.
fn keys_per_index<'a>(
    table: &str,
    indexes: &[EntriesTable],
    docs: &'a [StoredDocument],
) -> Result<Vec<Vec<&'a [Vec<u8>]>>, StoreError> {
    let stale = || {
        StoreError::StaleCatalog(format!(
            "the index keys of a document do not match the indexes of its collection \
             (table {table})"
        ))
    };
    docs.iter()
        .map(|doc| {
            if doc.index_keys.len() != indexes.len() {
                return Err(stale());
            }
            indexes
                .iter()
                .map(|index| {
                    doc.index_keys
                        .iter()
                        .find(|e| e.table == index.table)
                        .map(|e| e.keys.as_slice())
                        .ok_or_else(stale)
                })
                .collect()
        })
        .collect()
}

/// The set-based path (no unique secondary index): `INSERT_ROWS` documents per statement.
fn insert_batch(
    conn: &Connection,
    table: &str,
    docs: &[StoredDocument],
    images: &[String],
    ordered: bool,
) -> Result<InsertOutcome, StoreError> {
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
                    let again = insert_rows(conn, table, &chunk[..first], &chunk_images[..first])?;
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
}

/// The path for collections with a unique secondary index: one document at a time, each in
/// `SAVEPOINT dg_doc` (row, then its entries). A rejected document is rolled back whole, so
/// it never blocks a later one, and the first document wins exactly.
fn insert_each(
    conn: &Connection,
    table: &str,
    docs: &[StoredDocument],
    images: &[String],
    indexes: &[EntriesTable],
    keys: &[Vec<&[Vec<u8>]>],
    ordered: bool,
) -> Result<InsertOutcome, StoreError> {
    let row = format!(
        "INSERT INTO {} (k, doc, j) VALUES (?1, ?2, jsonb(?3)) ON CONFLICT DO NOTHING",
        quote_ident(table)
    );
    let mut outcome = InsertOutcome::default();
    for (i, ((doc, image), doc_keys)) in docs.iter().zip(images).zip(keys).enumerate() {
        run(conn, "SAVEPOINT dg_doc")?;
        let params: [&dyn ToSql; 3] = [&doc.key, &doc.bson, image];
        let written = conn
            .prepare_cached(&row)
            .and_then(|mut stmt| stmt.execute(params.as_slice()))
            .map_err(db_err)?;
        let rejected = if written == 0 {
            Some(None)
        } else {
            match insert_doc_entries(conn, indexes, doc_keys, &doc.key) {
                Ok(()) => None,
                Err(StoreError::IndexKeyConflict { index }) => Some(Some(index)),
                Err(other) => return Err(other),
            }
        };
        match rejected {
            None => {
                run(conn, "RELEASE dg_doc")?;
                outcome.inserted += 1;
            }
            Some(index) => {
                run(conn, "ROLLBACK TO dg_doc")?;
                run(conn, "RELEASE dg_doc")?;
                outcome.conflicts.push(i);
                if let Some(index) = index {
                    outcome.index_conflicts.push((i, index));
                }
                if ordered {
                    break;
                }
            }
        }
    }
    Ok(outcome)
}

/// Writes one document's entries into every index (`keys` in the order of `indexes`).
fn insert_doc_entries(
    conn: &Connection,
    indexes: &[EntriesTable],
    keys: &[&[Vec<u8>]],
    key: &[u8],
) -> Result<(), StoreError> {
    for (index, index_keys) in indexes.iter().zip(keys) {
        let rows: Vec<(&[u8], &[u8])> = index_keys.iter().map(|ik| (ik.as_slice(), key)).collect();
        index::insert_entries(conn, index, &rows)?;
    }
    Ok(())
}

/// Runs a statement without parameters or rows through the statement cache.
fn run(conn: &Connection, text: &str) -> Result<(), StoreError> {
    conn.prepare_cached(text)
        .and_then(|mut stmt| stmt.execute([]))
        .map(drop)
        .map_err(db_err)
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
        let indexes = index::collection_indexes(conn, table)?;
        let keys = keys_per_index(table, &indexes, docs)?;
        let mut stmt = conn.prepare_cached(&text).map_err(db_err)?;
        let mut written = 0u64;
        for ((doc, image), doc_keys) in docs.iter().zip(&images).zip(&keys) {
            let params: [&dyn ToSql; 3] = [&doc.bson, image, &doc.key];
            let n = stmt.execute(params.as_slice()).map_err(db_err)?;
            written += n as u64;
            if n == 0 {
                continue;
            }
            for index in &indexes {
                index::delete_entries(conn, &index.table, &[&doc.key])?;
            }
            insert_doc_entries(conn, &indexes, doc_keys, &doc.key)?;
        }
        Ok(written)
    })
}

pub(super) fn delete(conn: &Connection, table: &str, keys: &[Vec<u8>]) -> Result<u64, StoreError> {
    write_tx(conn, |conn| {
        let indexes = index::collection_indexes(conn, table)?;
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
            let chunk_keys: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
            for index in &indexes {
                index::delete_entries(conn, &index.table, &chunk_keys)?;
            }
        }
        Ok(deleted)
    })
}
