//! Document writes of the Oracle backend: batched insert with unique-conflict reporting,
//! replace by key, delete by key.
//!
//! Insert: one array-DML statement (`INSERT INTO t (k, doc, j) VALUES (:1, :2, JSON(:3))`,
//! one round trip per 10,000 documents) with Oracle's batch errors: rows whose `_id` key is
//! taken fail with ORA-00001 and are reported as conflicts, the others are written, in
//! batch order (so `n`, the natural order, follows the batch, and when a key repeats inside
//! the batch the first occurrence wins).
//! - unordered: that statement; its own transaction outside the caller's, a savepoint
//!   inside.
//! - ordered: in `SAVEPOINT dg_ins`; on the first conflict f everything is rolled back to it
//!   and `docs[..f]` inserted again the same way, until a try has no conflict; then
//!   `conflicts = [f]`.
//! - with secondary index keys: documents one by one, each (row, then its entries per
//!   index) in `SAVEPOINT dg_doc`, so that an `_id` conflict adds no entries and a unique
//!   entry conflict undoes that document only and names its index.
//!
//! Replace: each document by `UPDATE … WHERE k = :n` (when a key repeats, the last one
//! wins, as applied one by one), then per index the old entries of the rewritten documents
//! are deleted and the new ones inserted; a unique collision is `IndexKeyConflict` and the
//! call's scope undoes everything. Delete: entries, then rows, by `k IN (…)` lists.
//!
//! Stale catalogs: like PostgreSQL, every write first takes `LOCK TABLE <coll> IN ROW
//! EXCLUSIVE MODE` (index builds take `SHARE`) and then checks that its documents carry
//! keys for exactly the collection's current entries tables; otherwise nothing is written
//! and the answer is `StoreError::StaleCatalog` (the core re-reads its catalog and retries).
//!
//! Not for: reads (`sql.rs`) or collection DDL (`catalog.rs`).

use super::super::image::json_image_without_nul;
use super::super::{CollectionRecord, InsertOutcome, StoreError, StoredDocument};
use super::conn::{quote_ident, Bind, OraConn};
use super::index::entries_of;

const INSERT_ROW: &str = "(k, doc, j) VALUES (:1, :2, JSON(:3))";

/// Locks the collection against index builds and checks that `docs` carry keys for
/// exactly its entries tables.
fn lock_and_check(
    conn: &mut OraConn,
    coll: &CollectionRecord,
    docs: &[StoredDocument],
) -> Result<(), StoreError> {
    conn.execute(
        &format!("LOCK TABLE {} IN ROW EXCLUSIVE MODE", coll.table),
        &[],
    )?;
    let mut current: Vec<String> = entries_of(conn, &coll.db, &coll.name)?
        .into_iter()
        .map(|(_, table)| quote_ident(&table))
        .collect();
    current.sort();
    for doc in docs {
        let mut tables: Vec<&str> = doc.index_keys.iter().map(|e| e.table.as_str()).collect();
        tables.sort_unstable();
        if tables != current {
            return Err(StoreError::StaleCatalog(format!(
                "the index keys of a document do not match the indexes of its collection \
                 {}.{} (table {})",
                coll.db, coll.name, coll.table
            )));
        }
    }
    Ok(())
}

fn row_binds(doc: &StoredDocument) -> Result<Vec<Bind>, StoreError> {
    Ok(vec![
        Bind::Raw(doc.key.clone()),
        Bind::Blob(doc.bson.clone()),
        Bind::Clob(json_image_without_nul(&doc.bson)?),
    ])
}

pub(super) fn insert(
    conn: &mut OraConn,
    coll: &CollectionRecord,
    docs: &[StoredDocument],
    ordered: bool,
) -> Result<InsertOutcome, StoreError> {
    if docs.is_empty() {
        return Ok(InsertOutcome::default());
    }
    let rows = docs.iter().map(row_binds).collect::<Result<Vec<_>, _>>()?;
    let sql = format!("INSERT INTO {} {INSERT_ROW}", coll.table);
    let indexed = docs
        .iter()
        .any(|d| d.index_keys.iter().any(|e| !e.keys.is_empty()));
    conn.atomic(|conn| {
        lock_and_check(conn, coll, docs)?;
        if indexed {
            return insert_one_by_one(conn, &sql, docs, &rows, ordered);
        }
        if !ordered {
            let conflicts = rows_conflicting(conn.execute_many(&sql, &rows, true)?)?;
            return Ok(InsertOutcome {
                index_conflicts: Vec::new(),
                inserted: (docs.len() - conflicts.len()) as u64,
                conflicts,
            });
        }
        let mut end = docs.len();
        while end > 0 {
            conn.execute("SAVEPOINT dg_ins", &[])?;
            let conflicts = rows_conflicting(conn.execute_many(&sql, &rows[..end], true)?)?;
            match conflicts.first() {
                None => break,
                Some(&first) => {
                    conn.execute("ROLLBACK TO SAVEPOINT dg_ins", &[])?;
                    end = first;
                }
            }
        }
        Ok(InsertOutcome {
            index_conflicts: Vec::new(),
            inserted: end as u64,
            conflicts: if end < docs.len() {
                vec![end]
            } else {
                Vec::new()
            },
        })
    })
}

/// The batch positions rejected by a unique constraint (sorted); any other failure of a
/// row is the call's error.
fn rows_conflicting(failed: Vec<(usize, StoreError)>) -> Result<Vec<usize>, StoreError> {
    let mut conflicts = Vec::with_capacity(failed.len());
    for (at, error) in failed {
        match error {
            StoreError::DuplicateKey => conflicts.push(at),
            other => return Err(other),
        }
    }
    conflicts.sort_unstable();
    Ok(conflicts)
}

/// Each document, row and entries, in a savepoint of its own (see the module doc).
fn insert_one_by_one(
    conn: &mut OraConn,
    sql: &str,
    docs: &[StoredDocument],
    rows: &[Vec<Bind>],
    ordered: bool,
) -> Result<InsertOutcome, StoreError> {
    let mut out = InsertOutcome::default();
    for (i, (doc, row)) in docs.iter().zip(rows).enumerate() {
        conn.execute("SAVEPOINT dg_doc", &[])?;
        let rejected = match conn.execute(sql, row) {
            Ok(_) => insert_entries(conn, doc)?,
            Err(StoreError::DuplicateKey) => Some(None),
            Err(e) => return Err(e),
        };
        match rejected {
            None => out.inserted += 1,
            Some(index) => {
                conn.execute("ROLLBACK TO SAVEPOINT dg_doc", &[])?;
                out.conflicts.push(i);
                if let Some(index) = index {
                    out.index_conflicts.push((i, index));
                }
                if ordered {
                    break;
                }
            }
        }
    }
    Ok(out)
}

/// Inserts the entries of one document; `Some(Some(index))` when a unique index refused
/// one of them.
fn insert_entries(
    conn: &mut OraConn,
    doc: &StoredDocument,
) -> Result<Option<Option<String>>, StoreError> {
    for entry in &doc.index_keys {
        let rows: Vec<Vec<Bind>> = entry
            .keys
            .iter()
            .map(|ik| vec![Bind::Raw(ik.clone()), Bind::Raw(doc.key.clone())])
            .collect();
        let sql = format!("INSERT INTO {} (ik, k) VALUES (:1, :2)", entry.table);
        match conn.execute_many(&sql, &rows, false) {
            Ok(_) => {}
            Err(StoreError::DuplicateKey) => return Ok(Some(Some(entry.index.clone()))),
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

pub(super) fn replace(
    conn: &mut OraConn,
    coll: &CollectionRecord,
    docs: &[StoredDocument],
) -> Result<u64, StoreError> {
    if docs.is_empty() {
        return Ok(0);
    }
    let rows = docs.iter().map(row_binds).collect::<Result<Vec<_>, _>>()?;
    let sql = format!(
        "UPDATE {} SET doc = :1, j = JSON(:2) WHERE k = :3",
        coll.table
    );
    conn.atomic(|conn| {
        lock_and_check(conn, coll, docs)?;
        let mut written = 0;
        let mut rewritten: Vec<&StoredDocument> = Vec::new();
        for (doc, row) in docs.iter().zip(rows) {
            let [key, bson, image]: [Bind; 3] = row
                .try_into()
                .map_err(|_| StoreError::Database("row binds".into()))?;
            let n = conn.execute(&sql, &[bson, image, key])?;
            if n > 0 {
                written += n;
                rewritten.retain(|d| d.key != doc.key);
                rewritten.push(doc);
            }
        }
        for doc in rewritten {
            for entry in &doc.index_keys {
                conn.execute(
                    &format!("DELETE FROM {} WHERE k = :1", entry.table),
                    &[Bind::Raw(doc.key.clone())],
                )?;
            }
            if let Some(Some(index)) = insert_entries(conn, doc)? {
                return Err(StoreError::IndexKeyConflict { index });
            }
        }
        Ok(written)
    })
}

pub(super) fn delete(
    conn: &mut OraConn,
    coll: &CollectionRecord,
    keys: &[Vec<u8>],
) -> Result<u64, StoreError> {
    if keys.is_empty() {
        return Ok(0);
    }
    conn.atomic(|conn| {
        conn.execute(
            &format!("LOCK TABLE {} IN ROW EXCLUSIVE MODE", coll.table),
            &[],
        )?;
        let tables: Vec<String> = entries_of(conn, &coll.db, &coll.name)?
            .into_iter()
            .map(|(_, table)| quote_ident(&table))
            .collect();
        let mut deleted = 0;
        for chunk in keys.chunks(1_000) {
            let (list, binds) = key_list(chunk);
            for table in &tables {
                conn.execute(&format!("DELETE FROM {table} WHERE k IN ({list})"), &binds)?;
            }
            deleted += conn.execute(
                &format!("DELETE FROM {} WHERE k IN ({list})", coll.table),
                &binds,
            )?;
        }
        Ok(deleted)
    })
}

/// `:1, :2, …` and the keys bound to them.
fn key_list(keys: &[Vec<u8>]) -> (String, Vec<Bind>) {
    let list = (1..=keys.len())
        .map(|i| format!(":{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    (list, keys.iter().map(|k| Bind::Raw(k.clone())).collect())
}
