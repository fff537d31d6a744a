//! Document writes: batched insert with unique-conflict reporting, replace by key, delete by
//! key — each one set-based statement over bound arrays, whatever the batch size.
//!
//! Insert: `INSERT INTO t (k, doc, j) SELECT … FROM unnest($1::bytea[], $2::bytea[],
//! $3::text[]) WITH ORDINALITY … ORDER BY ordinality ON CONFLICT (k) DO NOTHING RETURNING k`.
//! Rows go in batch order (so `n`, the natural order, follows the batch, and when a key
//! repeats inside the batch the first occurrence wins); a batch index is a conflict when its
//! key is not among the returned keys (or was already claimed by an earlier index).
//! - unordered: that one statement; atomic by itself outside a transaction, inside a
//!   savepoint of the caller's transaction (sent in the same round trip, see `conn.rs`).
//! - ordered: the statement runs in its own transaction (or a savepoint of the caller's);
//!   on the first conflict f everything is rolled back and `docs[..f]` inserted again the
//!   same way, until a try has no conflict (a concurrent writer can only move f earlier);
//!   then `conflicts = [f]`.
//!
//! Replace: one `UPDATE … FROM unnest(…)` (when a key repeats, the last document wins, as
//! it would applied one by one). Delete: one `DELETE … WHERE k = ANY($1)`.
//!
//! Not for: reads (`sql.rs`) or collection DDL (`catalog.rs`).

use std::collections::HashMap;

use super::super::image::json_image_without_nul;
use super::super::{InsertOutcome, StoreError, StoredDocument};
use super::conn::{Params, PgConn};

pub(super) async fn insert(
    conn: &mut PgConn,
    table: &str,
    docs: &[StoredDocument],
    ordered: bool,
) -> Result<InsertOutcome, StoreError> {
    if docs.is_empty() {
        return Ok(InsertOutcome::default());
    }
    let images = images(docs)?;
    if !ordered {
        let conflicts = insert_rows(conn, table, docs, &images, true).await?;
        return Ok(InsertOutcome {
            index_conflicts: Vec::new(),
            inserted: (docs.len() - conflicts.len()) as u64,
            conflicts,
        });
    }
    let mut end = docs.len();
    while end > 0 {
        let scope = conn.open_scope();
        let conflicts = match insert_rows(conn, table, &docs[..end], &images[..end], false).await {
            Ok(conflicts) => conflicts,
            Err(e) => return conn.close_scope(scope, Err(e)).await,
        };
        match conflicts.first() {
            None => {
                conn.finish(scope, true).await?;
                break;
            }
            Some(&first) => {
                conn.finish(scope, false).await?;
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
}

fn images(docs: &[StoredDocument]) -> Result<Vec<String>, StoreError> {
    docs.iter()
        .map(|d| json_image_without_nul(&d.bson))
        .collect()
}

/// Inserts `docs` with one statement (`atomic`: on its own, see `PgConn::query_atomic`);
/// returns the indexes (into `docs`) not inserted.
async fn insert_rows(
    conn: &mut PgConn,
    table: &str,
    docs: &[StoredDocument],
    images: &[String],
    atomic: bool,
) -> Result<Vec<usize>, StoreError> {
    let text = format!(
        "INSERT INTO {table} (k, doc, j)
         SELECT u.k, u.d, u.j::jsonb
         FROM unnest($1::bytea[], $2::bytea[], $3::text[]) WITH ORDINALITY AS u(k, d, j, i)
         ORDER BY u.i
         ON CONFLICT (k) DO NOTHING RETURNING k"
    );
    let keys: Vec<Vec<u8>> = docs.iter().map(|d| d.key.clone()).collect();
    let bodies: Vec<Vec<u8>> = docs.iter().map(|d| d.bson.clone()).collect();
    let params: Params = vec![Box::new(keys), Box::new(bodies), Box::new(images.to_vec())];
    let rows = if atomic {
        conn.query_atomic(&text, &params).await?
    } else {
        conn.query(&text, &params).await?
    };
    let mut inserted: HashMap<Vec<u8>, usize> = HashMap::with_capacity(rows.len());
    for row in rows {
        let key: Vec<u8> = row
            .try_get(0)
            .map_err(|e| StoreError::Database(e.to_string()))?;
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

pub(super) async fn replace(
    conn: &mut PgConn,
    table: &str,
    docs: &[StoredDocument],
) -> Result<u64, StoreError> {
    if docs.is_empty() {
        return Ok(0);
    }
    // The last document of each key, in batch order.
    let mut last: HashMap<&[u8], usize> = HashMap::with_capacity(docs.len());
    for (i, doc) in docs.iter().enumerate() {
        last.insert(&doc.key, i);
    }
    let mut chosen: Vec<usize> = last.into_values().collect();
    chosen.sort_unstable();
    let mut keys = Vec::with_capacity(chosen.len());
    let mut bodies = Vec::with_capacity(chosen.len());
    let mut images = Vec::with_capacity(chosen.len());
    for i in chosen {
        keys.push(docs[i].key.clone());
        bodies.push(docs[i].bson.clone());
        images.push(json_image_without_nul(&docs[i].bson)?);
    }
    let text = format!(
        "UPDATE {table} AS t SET doc = u.d, j = u.j::jsonb
         FROM unnest($1::bytea[], $2::bytea[], $3::text[]) AS u(k, d, j)
         WHERE t.k = u.k"
    );
    conn.execute_atomic(
        &text,
        &vec![Box::new(keys), Box::new(bodies), Box::new(images)],
    )
    .await
}

pub(super) async fn delete(
    conn: &mut PgConn,
    table: &str,
    keys: &[Vec<u8>],
) -> Result<u64, StoreError> {
    if keys.is_empty() {
        return Ok(0);
    }
    let text = format!("DELETE FROM {table} WHERE k = ANY($1::bytea[])");
    conn.execute_atomic(&text, &vec![Box::new(keys.to_vec())])
        .await
}
