//! Document writes: batched insert with unique-conflict reporting, replace by key, delete by
//! key — each one set-based statement over bound arrays, whatever the batch size.
//!
//! Insert: `INSERT INTO t (k, doc, j, nt) SELECT … FROM unnest($1::bytea[], $2::bytea[],
//! $3::text[], $4::text[]) WITH ORDINALITY … ORDER BY ordinality ON CONFLICT (k) DO NOTHING RETURNING k`.
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
//! Secondary indexes (`index.rs`): each document carries its keys per index.
//! - Insert without unique keys in the batch: the rows as above, then the entries of the
//!   inserted documents, one `INSERT … SELECT * FROM unnest($1, $2)` per index, in the same
//!   scope.
//! - Insert with unique keys: documents one by one inside the batch's scope, each by one
//!   statement (the row, then its entries in data-modifying CTEs that read the row's
//!   `RETURNING`, so an `_id` conflict adds no entries) in a savepoint `dg_doc` sent in the
//!   same pipeline: one round trip per document. A unique violation rolls that document back
//!   and reports its position in `conflicts` and, with the index PostgreSQL named (by its
//!   entries table), in `index_conflicts`. Sequential, so the first document holding a key
//!   wins exactly, in the batch as against concurrent writers.
//! - Replace: rows updated (`RETURNING k`), then per index the old entries of the rewritten
//!   documents deleted and the new ones inserted; a unique violation is `IndexKeyConflict`
//!   and the scope undoes the whole call.
//! - Delete: the collection's entries tables are read from the catalog, then one statement
//!   deletes rows and entries (a data-modifying CTE per index).
//!
//! Stale catalogs: several processes may share the database, so the core may have computed
//! `index_keys` from a catalog that another one has changed since. Every insert and replace
//! therefore checks, inside its scope, that its documents carry keys for exactly the
//! collection's current entries tables (compared by qualified table name); if not, nothing is
//! written and the answer is `StoreError::StaleCatalog` (the core re-reads its catalog and
//! retries). The check is sound because the write first takes `LOCK TABLE <coll> IN ROW
//! EXCLUSIVE MODE` (the mode the write takes anyway) in a statement of its own, so the
//! catalog is read with a snapshot taken after the lock: index builds and drops take `SHARE`
//! on the collection (`index.rs`), so a build either committed before (and is seen, so the
//! keys must include it) or starts after this write's transaction ends (and its scan sees the
//! write). Costs no extra round trip on the set-based paths: the lock goes out in the
//! pipeline of the first statement, and that statement carries the check as a CTE `g`, its
//! rows written only `WHERE g.ok` and a `NULL` row answered when not ok. The one-by-one path
//! checks with a `SELECT` first (one round trip), since its statements name the entries
//! tables, which may no longer exist. Delete takes the same lock before it reads the
//! collection's entries tables.
//!
//! Not for: reads (`sql.rs`) or collection DDL (`catalog.rs`).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::super::image::json_image_without_nul;
use super::super::number_types::number_types;
use super::super::{CollectionRecord, InsertOutcome, StoreError, StoredDocument};
use super::conn::{Params, PgConn, LOCK_ROW_EXCLUSIVE};
use super::index;

/// What a write checks the collection's current indexes against: the entries tables its
/// documents carry keys for (qualified names, sorted bytewise, as `COLLATE "C"` sorts).
struct Guard {
    db: String,
    collection: String,
    tables: Vec<String>,
}

impl Guard {
    /// The tables the documents carry keys for; every document must name the same ones,
    /// each once (else they cannot all match the collection, and nothing is written).
    fn new(coll: &CollectionRecord, docs: &[StoredDocument]) -> Result<Guard, StoreError> {
        fn tables_of(doc: &StoredDocument) -> Vec<&str> {
            let mut tables: Vec<&str> = doc.index_keys.iter().map(|e| e.table.as_str()).collect();
            tables.sort_unstable();
            tables
        }
        let tables = docs.first().map(tables_of).unwrap_or_default();
        let repeated = tables.windows(2).any(|w| w[0] == w[1]);
        if repeated || docs.iter().skip(1).any(|d| tables_of(d) != tables) {
            return Err(stale(coll));
        }
        Ok(Guard {
            db: coll.db.clone(),
            collection: coll.name.clone(),
            tables: tables.into_iter().map(str::to_owned).collect(),
        })
    }

    /// A boolean SQL expression: the collection's entries tables are exactly `tables`.
    /// Appends its three parameters to `params`.
    fn sql(&self, params: &mut Params) -> String {
        let first = params.len() + 1;
        params.push(Box::new(self.db.clone()));
        params.push(Box::new(self.collection.clone()));
        params.push(Box::new(self.tables.clone()));
        format!(
            "(SELECT coalesce(array_agg(s.q ORDER BY s.q COLLATE \"C\"), '{{}}') = ${}::text[]
              FROM (SELECT '\"' || replace(c.schema_name, '\"', '\"\"') || '\".\"'
                           || replace(i.table_name, '\"', '\"\"') || '\"' AS q
                    FROM docgate.indexes i
                    JOIN docgate.collections c ON c.db = i.db AND c.name = i.collection
                    WHERE i.db = ${} AND i.collection = ${}) AS s)",
            first + 2,
            first,
            first + 1
        )
    }
}

/// The answer to a write whose documents do not carry keys for the collection's indexes.
fn stale(coll: &CollectionRecord) -> StoreError {
    StoreError::StaleCatalog(format!(
        "the index keys of a document do not match the indexes of its collection \
         {}.{} (table {})",
        coll.db, coll.name, coll.table
    ))
}

/// Locks the collection (`ROW EXCLUSIVE`) and checks the guard, in one round trip (inside
/// the write's scope); `StaleCatalog` when the documents' keys do not match.
async fn check_indexes(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    guard: &Guard,
) -> Result<(), StoreError> {
    let mut params: Params = Vec::new();
    let text = format!("SELECT {}", guard.sql(&mut params));
    conn.lock_before_next(&coll.table, LOCK_ROW_EXCLUSIVE);
    let row = conn.query_one(&text, &params).await?;
    let ok: bool = row
        .try_get(0)
        .map_err(|e| StoreError::Database(e.to_string()))?;
    if ok {
        Ok(())
    } else {
        Err(stale(coll))
    }
}

pub(super) async fn insert(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    docs: &[StoredDocument],
    ordered: bool,
) -> Result<InsertOutcome, StoreError> {
    if docs.is_empty() {
        return Ok(InsertOutcome::default());
    }
    let images = images(docs)?;
    let guard = Guard::new(coll, docs)?;
    let table = coll.table.as_str();
    if docs.iter().any(guarded) {
        let scope = conn.open_scope();
        let result = async {
            check_indexes(conn, coll, &guard).await?;
            insert_one_by_one(conn, table, docs, &images, ordered).await
        }
        .await;
        return conn.close_scope(scope, result).await;
    }
    let indexed = docs
        .iter()
        .any(|d| d.index_keys.iter().any(|e| !e.keys.is_empty()));
    let rows = Rows {
        coll,
        guard: &guard,
    };
    if !ordered {
        if !indexed {
            let conflicts = rows.insert(conn, docs, &images, true).await?;
            return Ok(outcome(docs.len(), conflicts));
        }
        let scope = conn.open_scope();
        let result = async {
            let conflicts = rows.insert(conn, docs, &images, false).await?;
            insert_entries(conn, docs, &conflicts).await?;
            Ok(outcome(docs.len(), conflicts))
        }
        .await;
        return conn.close_scope(scope, result).await;
    }
    let mut end = docs.len();
    while end > 0 {
        let scope = conn.open_scope();
        let conflicts = match rows.insert(conn, &docs[..end], &images[..end], false).await {
            Ok(conflicts) => conflicts,
            Err(e) => return conn.close_scope(scope, Err(e)).await,
        };
        match conflicts.first() {
            None => {
                if indexed {
                    if let Err(e) = insert_entries(conn, &docs[..end], &[]).await {
                        return conn.close_scope(scope, Err(e)).await;
                    }
                }
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

fn outcome(len: usize, conflicts: Vec<usize>) -> InsertOutcome {
    InsertOutcome {
        index_conflicts: Vec::new(),
        inserted: (len - conflicts.len()) as u64,
        conflicts,
    }
}

/// Whether the document has keys in a unique index (so it may be rejected by one).
fn guarded(doc: &StoredDocument) -> bool {
    doc.index_keys
        .iter()
        .any(|e| e.unique && !e.keys.is_empty())
}

/// The sequential insert of a batch touching a unique index (inside the batch's scope):
/// each document, row and entries, by one statement in a savepoint of its own (one round
/// trip), so that the first document holding a key wins exactly.
async fn insert_one_by_one(
    conn: &mut PgConn,
    table: &str,
    docs: &[StoredDocument],
    images: &[Image],
    ordered: bool,
) -> Result<InsertOutcome, StoreError> {
    let mut out = InsertOutcome::default();
    for (i, (doc, image)) in docs.iter().zip(images).enumerate() {
        let mut text = format!(
            "WITH d AS (INSERT INTO {table} (k, doc, j, nt)
                        VALUES ($1, $2, $3::text::jsonb, $4::text::jsonb)
                        ON CONFLICT (k) DO NOTHING RETURNING k)"
        );
        let mut params: Params = vec![
            Box::new(doc.key.clone()),
            Box::new(doc.bson.clone()),
            Box::new(image.json.clone()),
            Box::new(image.number_types.clone()),
        ];
        for (e, entry) in doc.index_keys.iter().enumerate() {
            params.push(Box::new(entry.keys.clone()));
            let _ = write!(
                text,
                ", e{e} AS (INSERT INTO {} (ik, k)
                    SELECT u.ik, d.k FROM d, unnest(${}::bytea[]) AS u(ik)
                    ON CONFLICT (ik, k) DO NOTHING)",
                entry.table,
                params.len()
            );
        }
        text.push_str(" SELECT count(*) FROM d");
        let rejected = match conn.query_in_savepoint(&text, &params).await {
            Ok(rows) => {
                let n: i64 = match rows.first() {
                    Some(row) => row
                        .try_get(0)
                        .map_err(|e| StoreError::Database(e.to_string()))?,
                    None => 0,
                };
                (n == 0).then_some(None)
            }
            Err(StoreError::DuplicateKey) => Some(Some(refusing_index(conn, doc))),
            Err(e) => return Err(e),
        };
        match rejected {
            None => out.inserted += 1,
            Some(index) => {
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

/// The name of the unique index of `doc` whose entries table reported the last unique
/// violation (the first unique index of `doc` if PostgreSQL did not say).
fn refusing_index(conn: &PgConn, doc: &StoredDocument) -> String {
    let named = conn
        .violation
        .as_deref()
        .and_then(|table| doc.index_keys.iter().find(|e| e.table == table));
    named
        .or_else(|| doc.index_keys.iter().find(|e| e.unique))
        .map(|e| e.index.clone())
        .unwrap_or_default()
}

/// `DuplicateKey` (a unique violation in an entries table) as `IndexKeyConflict`.
fn conflict_in(e: StoreError, index: &str) -> StoreError {
    match e {
        StoreError::DuplicateKey => StoreError::IndexKeyConflict {
            index: index.to_owned(),
        },
        other => other,
    }
}

/// Entries grouped by entries table in order of first appearance: (table, index name,
/// index keys, `_id` keys).
type Entries<'a> = Vec<(&'a str, &'a str, Vec<Vec<u8>>, Vec<Vec<u8>>)>;

fn group_entries<'a>(docs: &[&'a StoredDocument]) -> Entries<'a> {
    let mut groups: Entries<'a> = Vec::new();
    for doc in docs {
        for entry in &doc.index_keys {
            let at = match groups.iter().position(|g| g.0 == entry.table) {
                Some(at) => at,
                None => {
                    groups.push((&entry.table, &entry.index, Vec::new(), Vec::new()));
                    groups.len() - 1
                }
            };
            let group = &mut groups[at];
            for ik in &entry.keys {
                group.2.push(ik.clone());
                group.3.push(doc.key.clone());
            }
        }
    }
    groups
}

/// Inserts the entries of `docs` except those at `skip`: one set-based statement per index.
async fn insert_entries(
    conn: &mut PgConn,
    docs: &[StoredDocument],
    skip: &[usize],
) -> Result<(), StoreError> {
    let written: Vec<&StoredDocument> = docs
        .iter()
        .enumerate()
        .filter(|(i, _)| skip.binary_search(i).is_err())
        .map(|(_, d)| d)
        .collect();
    for (table, index, iks, ks) in group_entries(&written) {
        if iks.is_empty() {
            continue;
        }
        conn.execute(
            &format!(
                "INSERT INTO {table} (ik, k) SELECT * FROM unnest($1::bytea[], $2::bytea[])
                 ON CONFLICT (ik, k) DO NOTHING"
            ),
            &params![iks, ks],
        )
        .await
        .map_err(|e| conflict_in(e, index))?;
    }
    Ok(())
}

/// What a row stores beside the document: its image (`j`) and the image's number types
/// (`nt`, see `store::number_types`).
struct Image {
    json: String,
    number_types: String,
}

impl Image {
    fn of(doc: &StoredDocument) -> Result<Image, StoreError> {
        Ok(Image {
            json: json_image_without_nul(&doc.bson)?,
            number_types: number_types(&doc.bson)?,
        })
    }
}

fn images(docs: &[StoredDocument]) -> Result<Vec<Image>, StoreError> {
    docs.iter().map(Image::of).collect()
}

/// The images' JSON texts and number types texts, as two arrays to bind.
fn image_columns(images: &[Image]) -> (Vec<String>, Vec<String>) {
    images
        .iter()
        .map(|image| (image.json.clone(), image.number_types.clone()))
        .unzip()
}

/// The set-based row insert of a collection, guarded (see the module doc).
struct Rows<'a> {
    coll: &'a CollectionRecord,
    guard: &'a Guard,
}

impl Rows<'_> {
    /// Locks the collection and inserts `docs` with one statement (`atomic`: on its own,
    /// see `PgConn::query_atomic`) if the guard holds; returns the indexes (into `docs`)
    /// not inserted, or `StaleCatalog` (nothing written).
    async fn insert(
        &self,
        conn: &mut PgConn,
        docs: &[StoredDocument],
        images: &[Image],
        atomic: bool,
    ) -> Result<Vec<usize>, StoreError> {
        let keys: Vec<Vec<u8>> = docs.iter().map(|d| d.key.clone()).collect();
        let bodies: Vec<Vec<u8>> = docs.iter().map(|d| d.bson.clone()).collect();
        let (jsons, types) = image_columns(images);
        let mut params: Params = vec![
            Box::new(keys),
            Box::new(bodies),
            Box::new(jsons),
            Box::new(types),
        ];
        let text = format!(
            "WITH g AS (SELECT {} AS ok),
                  ins AS (INSERT INTO {} (k, doc, j, nt)
                          SELECT u.k, u.d, u.j::jsonb, u.nt::jsonb
                          FROM unnest($1::bytea[], $2::bytea[], $3::text[], $4::text[])
                               WITH ORDINALITY AS u(k, d, j, nt, i), g
                          WHERE g.ok
                          ORDER BY u.i
                          ON CONFLICT (k) DO NOTHING RETURNING k)
             SELECT k FROM ins UNION ALL SELECT NULL FROM g WHERE NOT g.ok",
            self.guard.sql(&mut params),
            self.coll.table
        );
        conn.lock_before_next(&self.coll.table, LOCK_ROW_EXCLUSIVE);
        let rows = if atomic {
            conn.query_atomic(&text, &params).await?
        } else {
            conn.query(&text, &params).await?
        };
        not_inserted(self.coll, docs, &rows)
    }
}

/// The indexes (into `docs`) whose key is not among the returned keys (each returned key
/// claims its first document); `StaleCatalog` when the guard's `NULL` row is there.
fn not_inserted(
    coll: &CollectionRecord,
    docs: &[StoredDocument],
    rows: &[tokio_postgres::Row],
) -> Result<Vec<usize>, StoreError> {
    let mut inserted: HashMap<Vec<u8>, usize> = HashMap::with_capacity(rows.len());
    for row in rows {
        let key: Option<Vec<u8>> = row
            .try_get(0)
            .map_err(|e| StoreError::Database(e.to_string()))?;
        let Some(key) = key else {
            return Err(stale(coll));
        };
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
    coll: &CollectionRecord,
    docs: &[StoredDocument],
) -> Result<u64, StoreError> {
    if docs.is_empty() {
        return Ok(0);
    }
    let guard = Guard::new(coll, docs)?;
    let table = coll.table.as_str();
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
    for &i in &chosen {
        keys.push(docs[i].key.clone());
        bodies.push(docs[i].bson.clone());
        images.push(Image::of(&docs[i])?);
    }
    let (jsons, types) = image_columns(&images);
    let mut params: Params = vec![
        Box::new(keys),
        Box::new(bodies),
        Box::new(jsons),
        Box::new(types),
    ];
    let update = format!(
        "WITH g AS (SELECT {} AS ok),
              upd AS (UPDATE {table} AS t SET doc = u.d, j = u.j::jsonb, nt = u.nt::jsonb
                      FROM unnest($1::bytea[], $2::bytea[], $3::text[], $4::text[])
                           AS u(k, d, j, nt), g
                      WHERE t.k = u.k AND g.ok
                      RETURNING t.k)",
        guard.sql(&mut params)
    );
    let chosen: Vec<&StoredDocument> = chosen.into_iter().map(|i| &docs[i]).collect();
    conn.lock_before_next(table, LOCK_ROW_EXCLUSIVE);
    if guard.tables.is_empty() {
        let text = format!("{update} SELECT (SELECT count(*) FROM upd), (SELECT ok FROM g)");
        let rows = conn.query_atomic(&text, &params).await?;
        let row = rows
            .first()
            .ok_or_else(|| StoreError::Database("replace answered no row".into()))?;
        let get = |e: tokio_postgres::Error| StoreError::Database(e.to_string());
        let (n, ok): (i64, bool) = (row.try_get(0).map_err(get)?, row.try_get(1).map_err(get)?);
        return if ok {
            Ok(u64::try_from(n).unwrap_or(0))
        } else {
            Err(stale(coll))
        };
    }
    let scope = conn.open_scope();
    let text = format!("{update} SELECT k FROM upd UNION ALL SELECT NULL FROM g WHERE NOT g.ok");
    let result = replace_indexed(conn, coll, &text, &params, &chosen).await;
    conn.close_scope(scope, result).await
}

/// The rows update and, per index, the old entries of the rewritten documents deleted and
/// their new ones inserted (inside the call's scope).
async fn replace_indexed(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    update: &str,
    params: &Params,
    chosen: &[&StoredDocument],
) -> Result<u64, StoreError> {
    let rows = conn.query(update, params).await?;
    let mut updated: HashSet<Vec<u8>> = HashSet::with_capacity(rows.len());
    for row in &rows {
        let key: Option<Vec<u8>> = row
            .try_get(0)
            .map_err(|e| StoreError::Database(e.to_string()))?;
        let Some(key) = key else {
            return Err(stale(coll));
        };
        updated.insert(key);
    }
    let written: Vec<&StoredDocument> = chosen
        .iter()
        .copied()
        .filter(|d| updated.contains(&d.key))
        .collect();
    for (table, index, iks, ks) in group_entries(&written) {
        let old: Vec<Vec<u8>> = written
            .iter()
            .filter(|d| d.index_keys.iter().any(|e| e.table == table))
            .map(|d| d.key.clone())
            .collect();
        conn.execute(
            &format!("DELETE FROM {table} WHERE k = ANY($1::bytea[])"),
            &params![old],
        )
        .await?;
        if iks.is_empty() {
            continue;
        }
        conn.execute(
            &format!(
                "INSERT INTO {table} (ik, k) SELECT * FROM unnest($1::bytea[], $2::bytea[])
                 ON CONFLICT (ik, k) DO NOTHING"
            ),
            &params![iks, ks],
        )
        .await
        .map_err(|e| conflict_in(e, index))?;
    }
    Ok(rows.len() as u64)
}

/// Deletes the rows and their entries in every index of the collection (looked up in the
/// catalog): one statement, its data-modifying CTEs one per index.
pub(super) async fn delete(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    keys: &[Vec<u8>],
) -> Result<u64, StoreError> {
    if keys.is_empty() {
        return Ok(0);
    }
    let scope = conn.open_scope();
    let result = delete_body(conn, coll, keys).await;
    conn.close_scope(scope, result).await
}

async fn delete_body(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    keys: &[Vec<u8>],
) -> Result<u64, StoreError> {
    // Locked first, so that no index build (which takes SHARE) is under way while the
    // entries tables are read and until the deletes are done.
    conn.lock_before_next(&coll.table, LOCK_ROW_EXCLUSIVE);
    let tables = index::entries_tables(conn, &coll.db, &coll.name).await?;
    let mut text = String::from("WITH ");
    for (i, table) in tables.iter().enumerate() {
        let _ = write!(
            text,
            "e{i} AS (DELETE FROM {table} WHERE k = ANY($1::bytea[])), "
        );
    }
    let _ = write!(
        text,
        "d AS (DELETE FROM {} WHERE k = ANY($1::bytea[]) RETURNING 1) SELECT count(*) FROM d",
        coll.table
    );
    let row = conn.query_one(&text, &params![keys.to_vec()]).await?;
    let n: i64 = row
        .try_get(0)
        .map_err(|e| StoreError::Database(e.to_string()))?;
    Ok(u64::try_from(n).unwrap_or(0))
}
