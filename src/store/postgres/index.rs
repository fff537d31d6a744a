//! Secondary indexes of the PostgreSQL backend: their catalog records and entries tables.
//!
//! - `docgate.indexes(db, collection, name, spec, table_name, is_unique, multikey)`: one row
//!   per secondary index; `spec` is the BSON the core gave (`listIndexes` shape). The entries
//!   table lives in the collection's schema (`docgate.collections.schema_name`), so the
//!   record keeps only its table name.
//! - Entries table `dgi_<n>` (`n` from the catalog's `next_name`, never reused; `dgi_*` is
//!   never a kept collection name, see `catalog.rs`): `(ik bytea, k bytea, PRIMARY KEY (ik,
//!   k))` plus an index on `k` (maintenance by `_id` key: replace, delete) and, for a unique
//!   index, `UNIQUE (ik)`. `ik` is the core's order-preserving index key, `k` the document's
//!   `_id` key; bytea compares like `memcmp`, so the primary key walks index order for
//!   `IndexRange` and `order_index` scans (`sql.rs`). A text index's table (entries are
//!   words, `EntriesKind::Words`) also has `tsv tsvector`, generated from `ik` with the
//!   'simple' configuration, and a GIN index on it (`Predicate::TextTerms`).
//!
//! Against writers planning from a stale catalog (several processes may share the
//! database): builds and drops take `LOCK TABLE <coll> IN SHARE MODE` first (before the
//! catalog row, the order writers take them in: `ROW EXCLUSIVE` on the collection, then
//! maybe the catalog row to mark an index multikey). Writers take `ROW EXCLUSIVE` before
//! they read the collection's indexes (`write.rs`), so they either committed before the
//! change (a build's scan sees them) or read the catalog after it committed (and answer
//! `StaleCatalog` when their keys do not match). A build's documents are scanned by the core
//! before `create_index`; `lock_for_build` (`StoreSession::lock_collection_for_index_build`)
//! takes the same lock before that scan, for the whole transaction, so that no write slips in
//! between the scan and the build (under READ COMMITTED it would be missed).
//!
//! Every change bumps the catalog version (and notifies) in the same transaction, like the
//! collection DDL; each call runs in its own transaction or a savepoint of the caller's, so a
//! failure (a unique collision while building) leaves nothing behind.
//!
//! Not for: maintaining entries on document writes (`write.rs`).

use bson::{Document, RawDocument};

use super::super::{CollectionRecord, EntriesKind, IndexRecord, StoreError};
use super::catalog_row::{bump_version, corrupt, next_number, table_taken};
use super::conn::{qualified, quote_ident, PgConn, LOCK_SHARE};

/// `LOCK TABLE <coll> IN SHARE MODE` for the rest of the caller's transaction (see the
/// module doc); an error outside a transaction.
pub(super) async fn lock_for_build(
    conn: &mut PgConn,
    coll: &CollectionRecord,
) -> Result<(), StoreError> {
    if !conn.in_tx {
        return Err(StoreError::Database(
            "locking a collection for an index build needs a transaction".into(),
        ));
    }
    conn.batch(&format!("LOCK TABLE {} IN {LOCK_SHARE} MODE", coll.table))
        .await
}

/// Every secondary index, ordered by (db, collection, name).
pub(super) async fn list_indexes(conn: &mut PgConn) -> Result<Vec<IndexRecord>, StoreError> {
    let rows = conn
        .query(
            "SELECT i.db, i.collection, i.name, i.spec, c.schema_name, i.table_name,
                    i.is_unique, i.multikey
             FROM docgate.indexes i
             JOIN docgate.collections c ON c.db = i.db AND c.name = i.collection
             ORDER BY i.db COLLATE \"C\", i.collection COLLATE \"C\", i.name COLLATE \"C\"",
            &params![],
        )
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let get = |i| row.try_get::<_, String>(i).map_err(corrupt);
        let (db, collection, name) = (get(0)?, get(1)?, get(2)?);
        let (schema, table) = (get(4)?, get(5)?);
        let spec: Vec<u8> = row.try_get(3).map_err(corrupt)?;
        let spec = RawDocument::from_bytes(&spec)
            .and_then(Document::try_from)
            .map_err(|e| StoreError::Corrupt(format!("spec of index {name}: {e}")))?;
        out.push(IndexRecord {
            db,
            collection,
            name,
            spec,
            table: qualified(&schema, &table),
            unique: row.try_get(6).map_err(corrupt)?,
            multikey: row.try_get(7).map_err(corrupt)?,
        });
    }
    Ok(out)
}

/// Creates, fills and records a secondary index (see the trait).
pub(super) async fn create_index(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    new: NewIndex<'_>,
    entries: &[(Vec<u8>, Vec<Vec<u8>>)],
) -> Result<IndexRecord, StoreError> {
    let scope = conn.open_scope();
    let result = create_body(conn, coll, &new, entries).await;
    conn.close_scope(scope, result).await
}

/// What `create_index` records.
pub(super) struct NewIndex<'a> {
    name: &'a str,
    spec: &'a Document,
    spec_bson: Vec<u8>,
    unique: bool,
    multikey: bool,
    kind: EntriesKind,
}

impl<'a> NewIndex<'a> {
    pub(super) fn new(
        name: &'a str,
        spec: &'a Document,
        unique: bool,
        multikey: bool,
        kind: EntriesKind,
    ) -> Result<NewIndex<'a>, StoreError> {
        let spec_bson = spec
            .to_vec()
            .map_err(|e| StoreError::Database(format!("index spec: {e}")))?;
        Ok(NewIndex {
            name,
            spec,
            spec_bson,
            unique,
            multikey,
            kind,
        })
    }
}

async fn create_body(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    new: &NewIndex<'_>,
    entries: &[(Vec<u8>, Vec<Vec<u8>>)],
) -> Result<IndexRecord, StoreError> {
    // Before the catalog row (see the module doc); a no-op after `lock_for_build`.
    conn.lock_before_next(&coll.table, LOCK_SHARE);
    bump_version(conn).await?;
    let schema = collection_schema(conn, coll).await?;
    let rows = conn
        .query(
            "SELECT 1 FROM docgate.indexes WHERE db = $1 AND collection = $2 AND name = $3",
            &params![coll.db.clone(), coll.name.clone(), new.name.to_owned()],
        )
        .await?;
    if !rows.is_empty() {
        return Err(StoreError::AlreadyExists(format!(
            "index {} of {}.{}",
            new.name, coll.db, coll.name
        )));
    }
    let table = free_table(conn, &[&schema]).await?;
    let full = qualified(&schema, &table);
    // A text index's entries are words: a generated `tsvector` of them ('simple': no
    // stemming or stop words, the core made the words), searched through a GIN index.
    let words = match new.kind {
        EntriesKind::Keys => "",
        EntriesKind::Words => {
            ", tsv tsvector GENERATED ALWAYS AS \
             (to_tsvector('simple'::regconfig, encode(ik, 'escape'))) STORED"
        }
    };
    conn.batch(&format!(
        "CREATE TABLE {full} (
             ik bytea NOT NULL,
             k bytea NOT NULL{words},
             PRIMARY KEY (ik, k){}
         )",
        if new.unique { ", UNIQUE (ik)" } else { "" }
    ))
    .await?;
    let (iks, ks): (Vec<Vec<u8>>, Vec<Vec<u8>>) = entries
        .iter()
        .flat_map(|(k, iks)| iks.iter().map(move |ik| (ik.clone(), k.clone())))
        .unzip();
    if !iks.is_empty() {
        conn.execute(
            &format!(
                "INSERT INTO {full} (ik, k) SELECT * FROM unnest($1::bytea[], $2::bytea[])
                 ON CONFLICT (ik, k) DO NOTHING"
            ),
            &params![iks, ks],
        )
        .await
        .map_err(|e| match e {
            StoreError::DuplicateKey => StoreError::IndexKeyConflict {
                index: new.name.to_owned(),
            },
            other => other,
        })?;
    }
    conn.batch(&format!("CREATE INDEX ON {full} (k)")).await?;
    if new.kind == EntriesKind::Words {
        conn.batch(&format!("CREATE INDEX ON {full} USING gin (tsv)"))
            .await?;
    }
    if !entries.is_empty() {
        // Statistics now, not when autovacuum next looks (up to a minute later): without
        // them PostgreSQL guesses that a key range matches many entries and plans a
        // `find_one` on the index as a walk of the whole table in natural order that stops
        // at the first match.
        conn.batch(&format!("ANALYZE {full}; ANALYZE {}", coll.table))
            .await?;
    }
    conn.execute(
        "INSERT INTO docgate.indexes
             (db, collection, name, spec, table_name, is_unique, multikey)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &params![
            coll.db.clone(),
            coll.name.clone(),
            new.name.to_owned(),
            new.spec_bson.clone(),
            table,
            new.unique,
            new.multikey
        ],
    )
    .await
    .map_err(|e| match e {
        StoreError::DuplicateKey => {
            StoreError::AlreadyExists(format!("index {} of {}.{}", new.name, coll.db, coll.name))
        }
        other => other,
    })?;
    Ok(IndexRecord {
        db: coll.db.clone(),
        collection: coll.name.clone(),
        name: new.name.to_owned(),
        spec: new.spec.clone(),
        table: full,
        unique: new.unique,
        multikey: new.multikey,
    })
}

/// The schema of `coll`, locking its record; an error when it was dropped (or recreated).
async fn collection_schema(
    conn: &mut PgConn,
    coll: &CollectionRecord,
) -> Result<String, StoreError> {
    let rows = conn
        .query(
            "SELECT schema_name FROM docgate.collections
             WHERE db = $1 AND name = $2 AND uuid = $3 FOR UPDATE",
            &params![coll.db.clone(), coll.name.clone(), coll.uuid.clone()],
        )
        .await?;
    match rows.first() {
        Some(row) => row.try_get(0).map_err(corrupt),
        None => Err(StoreError::Database(format!(
            "collection {}.{} no longer exists",
            coll.db, coll.name
        ))),
    }
}

/// A fresh `dgi_<n>` free in every schema of `schemas`.
async fn free_table(conn: &mut PgConn, schemas: &[&str]) -> Result<String, StoreError> {
    'next: loop {
        let table = format!("dgi_{}", next_number(conn).await?);
        for schema in schemas {
            if table_taken(conn, schema, &table).await? {
                continue 'next;
            }
        }
        return Ok(table);
    }
}

/// The record of `index` (schema, table name) if it still names the same entries table.
async fn locate(conn: &mut PgConn, index: &IndexRecord) -> Result<Option<String>, StoreError> {
    let rows = conn
        .query(
            "SELECT c.schema_name, i.table_name FROM docgate.indexes i
             JOIN docgate.collections c ON c.db = i.db AND c.name = i.collection
             WHERE i.db = $1 AND i.collection = $2 AND i.name = $3 FOR UPDATE OF i",
            &params![
                index.db.clone(),
                index.collection.clone(),
                index.name.clone()
            ],
        )
        .await?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let schema: String = row.try_get(0).map_err(corrupt)?;
    let table: String = row.try_get(1).map_err(corrupt)?;
    Ok((qualified(&schema, &table) == index.table).then_some(table))
}

/// Drops the entries table and the record; a no-op when the index is gone (or was
/// recreated meanwhile, with another table).
pub(super) async fn drop_index(conn: &mut PgConn, index: &IndexRecord) -> Result<(), StoreError> {
    let scope = conn.open_scope();
    let result = drop_body(conn, index).await;
    conn.close_scope(scope, result).await
}

async fn drop_body(conn: &mut PgConn, index: &IndexRecord) -> Result<(), StoreError> {
    // The collection first, then the catalog row (see the module doc).
    let rows = conn
        .query(
            "SELECT schema_name, table_name FROM docgate.collections WHERE db = $1 AND name = $2",
            &params![index.db.clone(), index.collection.clone()],
        )
        .await?;
    let Some(row) = rows.first() else {
        return Ok(());
    };
    let schema: String = row.try_get(0).map_err(corrupt)?;
    let table: String = row.try_get(1).map_err(corrupt)?;
    conn.lock_before_next(&qualified(&schema, &table), LOCK_SHARE);
    bump_version(conn).await?;
    let Some(table) = locate(conn, index).await? else {
        return Ok(());
    };
    conn.execute(
        "DELETE FROM docgate.indexes WHERE db = $1 AND collection = $2 AND name = $3
             AND table_name = $4",
        &params![
            index.db.clone(),
            index.collection.clone(),
            index.name.clone(),
            table
        ],
    )
    .await?;
    conn.batch(&format!("DROP TABLE IF EXISTS {}", index.table))
        .await
}

/// Sets the multikey flag. Bumps the version (first, like every catalog change, so locks
/// are taken in the same order) unless the flag was already set.
pub(super) async fn mark_multikey(
    conn: &mut PgConn,
    index: &IndexRecord,
) -> Result<(), StoreError> {
    let scope = conn.open_scope();
    let result = mark_body(conn, index).await;
    conn.close_scope(scope, result).await
}

async fn mark_body(conn: &mut PgConn, index: &IndexRecord) -> Result<(), StoreError> {
    let key = || {
        params![
            index.db.clone(),
            index.collection.clone(),
            index.name.clone()
        ]
    };
    let pending = conn
        .query(
            "SELECT 1 FROM docgate.indexes
             WHERE db = $1 AND collection = $2 AND name = $3 AND NOT multikey",
            &key(),
        )
        .await?;
    if pending.is_empty() {
        return Ok(());
    }
    bump_version(conn).await?;
    if locate(conn, index).await?.is_some() {
        conn.execute(
            "UPDATE docgate.indexes SET multikey = TRUE
             WHERE db = $1 AND collection = $2 AND name = $3",
            &key(),
        )
        .await?;
    }
    Ok(())
}

/// Replaces the specification of `index` (`collMod`'s `hidden`, `expireAfterSeconds`);
/// bumps the version first, like every catalog change.
pub(super) async fn set_index_spec(
    conn: &mut PgConn,
    index: &IndexRecord,
    spec: &Document,
) -> Result<(), StoreError> {
    let spec_bson = spec
        .to_vec()
        .map_err(|e| StoreError::Database(format!("index spec: {e}")))?;
    let scope = conn.open_scope();
    let result = set_spec_body(conn, index, spec_bson).await;
    conn.close_scope(scope, result).await
}

async fn set_spec_body(
    conn: &mut PgConn,
    index: &IndexRecord,
    spec_bson: Vec<u8>,
) -> Result<(), StoreError> {
    bump_version(conn).await?;
    let Some(table) = locate(conn, index).await? else {
        return Err(StoreError::Database(format!(
            "index {} no longer exists",
            index.name
        )));
    };
    conn.execute(
        "UPDATE docgate.indexes SET spec = $5
         WHERE db = $1 AND collection = $2 AND name = $3 AND table_name = $4",
        &params![
            index.db.clone(),
            index.collection.clone(),
            index.name.clone(),
            table,
            spec_bson
        ],
    )
    .await?;
    Ok(())
}

/// The entries tables (quoted, schema-qualified) of the collection `(db, name)`.
pub(super) async fn entries_tables(
    conn: &mut PgConn,
    db: &str,
    name: &str,
) -> Result<Vec<String>, StoreError> {
    let rows = conn
        .query(
            "SELECT c.schema_name, i.table_name FROM docgate.indexes i
             JOIN docgate.collections c ON c.db = i.db AND c.name = i.collection
             WHERE i.db = $1 AND i.collection = $2
             ORDER BY i.name COLLATE \"C\"",
            &params![db.to_owned(), name.to_owned()],
        )
        .await?;
    rows.iter()
        .map(|row| {
            let schema: String = row.try_get(0).map_err(corrupt)?;
            let table: String = row.try_get(1).map_err(corrupt)?;
            Ok(qualified(&schema, &table))
        })
        .collect()
}

/// Drops every index of the collection `(db, name)` living in `schema` (called by
/// `drop_collection` after it removed the collection's record).
pub(super) async fn drop_all(
    conn: &mut PgConn,
    db: &str,
    name: &str,
    schema: &str,
) -> Result<(), StoreError> {
    let rows = conn
        .query(
            "DELETE FROM docgate.indexes WHERE db = $1 AND collection = $2 RETURNING table_name",
            &params![db.to_owned(), name.to_owned()],
        )
        .await?;
    let mut text = String::new();
    for row in rows {
        let table: String = row.try_get(0).map_err(corrupt)?;
        text.push_str(&format!(
            "DROP TABLE IF EXISTS {};",
            qualified(schema, &table)
        ));
    }
    if text.is_empty() {
        return Ok(());
    }
    conn.batch(&text).await
}

/// Moves the index records of a renamed collection along, and their entries tables when
/// it changed schema (renaming a table whose name is taken in the target schema).
pub(super) async fn move_all(
    conn: &mut PgConn,
    from: (&str, &str, &str),
    to: (&str, &str, &str),
) -> Result<(), StoreError> {
    let ((db, name, schema), (to_db, to_name, to_schema)) = (from, to);
    let rows = conn
        .query(
            "UPDATE docgate.indexes SET db = $3, collection = $4
             WHERE db = $1 AND collection = $2 RETURNING name, table_name",
            &params![
                db.to_owned(),
                name.to_owned(),
                to_db.to_owned(),
                to_name.to_owned()
            ],
        )
        .await?;
    if schema == to_schema {
        return Ok(());
    }
    for row in rows {
        let index: String = row.try_get(0).map_err(corrupt)?;
        let table: String = row.try_get(1).map_err(corrupt)?;
        let mut moved = table.clone();
        if table_taken(conn, to_schema, &table).await? {
            moved = free_table(conn, &[schema, to_schema]).await?;
            conn.batch(&format!(
                "ALTER TABLE {} RENAME TO {}",
                qualified(schema, &table),
                quote_ident(&moved)
            ))
            .await?;
            conn.execute(
                "UPDATE docgate.indexes SET table_name = $4
                 WHERE db = $1 AND collection = $2 AND name = $3",
                &params![to_db.to_owned(), to_name.to_owned(), index, moved.clone()],
            )
            .await?;
        }
        conn.batch(&format!(
            "ALTER TABLE {} SET SCHEMA {}",
            qualified(schema, &moved),
            quote_ident(to_schema)
        ))
        .await?;
    }
    Ok(())
}

/// Number of secondary indexes of the collection `(db, name)`.
pub(super) async fn count(conn: &mut PgConn, db: &str, name: &str) -> Result<u64, StoreError> {
    let row = conn
        .query_one(
            "SELECT count(*) FROM docgate.indexes WHERE db = $1 AND collection = $2",
            &params![db.to_owned(), name.to_owned()],
        )
        .await?;
    let n: i64 = row.try_get(0).map_err(corrupt)?;
    Ok(u64::try_from(n).unwrap_or(0))
}
