//! Secondary indexes of the SQLite backend: their catalog records, the DDL of their entries
//! tables, and the statements that write and remove entry rows.
//!
//! - `dg_indexes(coll_table, name, spec, table_name, is_unique, multikey)`, primary key
//!   `(coll_table, name)`: one row per secondary index, tied to its collection by the
//!   collection's physical table (`dg_collections.table_name`). A rename therefore moves the
//!   indexes with the collection without touching this table, and a stale collection record
//!   can never reach another collection's indexes. `list_indexes` joins `dg_collections` for
//!   the database and collection names. `spec` is the BSON the core gave (`listIndexes`
//!   shape).
//! - Entries table `dgi_<n>` (`n` from `dg_catalog.next_table`, the sequence that also names
//!   collection tables, never reused): `(ik BLOB NOT NULL, k BLOB NOT NULL, PRIMARY KEY (ik,
//!   k)) WITHOUT ROWID`, ordered by index key then `_id` key (BLOBs compare like `memcmp`),
//!   so `IndexRange` and `order_index` scans (`sql.rs`) walk the primary key; index
//!   `<t>_k` on `(k)` serves deletes by `_id` key and the join back to documents; for a
//!   unique index, unique index `<t>_u` on `(ik)`.
//!
//! A text index (`EntriesKind::Words`) keeps its entries in a rowid table instead, `(id
//! INTEGER PRIMARY KEY, ik BLOB, k BLOB, UNIQUE (ik, k))` (the explicit `id` keeps rowids
//! stable across VACUUM), with the same `<t>_k` index, and an FTS5 table `<t>_fts` over
//! `ik` (external content, ASCII tokenizer, no positions) kept in step by insert and delete
//! triggers, so the write paths below serve both kinds; `Predicate::TextTerms` asks
//! `<t>_fts` (`sql.rs`).
//!
//! Entry rows are written `ON CONFLICT (ik, k) DO NOTHING` (a key listed twice for one
//! document is harmless); only `<t>_u` can reject a row, reported as
//! `StoreError::IndexKeyConflict` with the index name. Every catalog change bumps the catalog
//! version in the same transaction; each call runs in its own transaction or a savepoint of
//! the caller's (`conn::write_tx`), so a failure leaves nothing behind.
//!
//! Not for: when entries are written on document writes (`write.rs`).

use bson::{Document, RawDocument};
use rusqlite::types::ToSql;
use rusqlite::{params, Connection, OptionalExtension};

use super::super::{CollectionRecord, EntriesKind, IndexRecord, StoreError};
use super::catalog_row::{bump_version, next_table_number};
use super::conn::{db_err, write_tx};
use super::sql::quote_ident;

/// The catalog table of secondary indexes (run by `catalog::init_schema`).
pub(super) const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS dg_indexes (
     coll_table TEXT NOT NULL,
     name TEXT NOT NULL,
     spec BLOB NOT NULL,
     table_name TEXT NOT NULL UNIQUE,
     is_unique INTEGER NOT NULL,
     multikey INTEGER NOT NULL,
     PRIMARY KEY (coll_table, name)
 );";

/// Entry rows per INSERT statement (2 bound values each).
const ENTRY_ROWS: usize = 500;
/// `_id` keys per DELETE statement.
const DELETE_KEYS: usize = 500;

/// A secondary index as the write paths need it: where its entries live, its name for
/// conflict reports, and whether it is unique. Read from `dg_indexes` inside the write.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct EntriesTable {
    pub(super) table: String,
    pub(super) name: String,
    pub(super) unique: bool,
}

/// The secondary indexes of the collection stored in `coll_table`, ordered by name.
pub(super) fn collection_indexes(
    conn: &Connection,
    coll_table: &str,
) -> Result<Vec<EntriesTable>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT table_name, name, is_unique FROM dg_indexes
             WHERE coll_table = ?1 ORDER BY name",
        )
        .map_err(db_err)?;
    let rows = stmt
        .query_map([coll_table], |row| {
            Ok(EntriesTable {
                table: row.get(0)?,
                name: row.get(1)?,
                unique: row.get(2)?,
            })
        })
        .map_err(db_err)?;
    rows.collect::<Result<_, _>>().map_err(db_err)
}

/// Every secondary index of every collection, ordered by (db, collection, name).
pub(super) fn list_indexes(conn: &Connection) -> Result<Vec<IndexRecord>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT c.db, c.name, i.name, i.spec, i.table_name, i.is_unique, i.multikey
             FROM dg_indexes AS i JOIN dg_collections AS c ON c.table_name = i.coll_table
             ORDER BY c.db, c.name, i.name",
        )
        .map_err(db_err)?;
    let rows = stmt
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, Vec<u8>>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, bool>(5)?,
                row.get::<_, bool>(6)?,
            ))
        })
        .map_err(db_err)?;
    let mut out = Vec::new();
    for row in rows {
        let (db, collection, name, spec, table, unique, multikey) = row.map_err(db_err)?;
        let spec = RawDocument::from_bytes(&spec)
            .and_then(Document::try_from)
            .map_err(|e| {
                StoreError::Corrupt(format!("spec of index {name} of {db}.{collection}: {e}"))
            })?;
        out.push(IndexRecord {
            db,
            collection,
            name,
            spec,
            table,
            unique,
            multikey,
        });
    }
    Ok(out)
}

/// What `create_index` records.
#[derive(Clone, Copy)]
pub(super) struct NewIndex<'a> {
    pub(super) name: &'a str,
    pub(super) spec: &'a Document,
    pub(super) unique: bool,
    pub(super) multikey: bool,
    pub(super) kind: EntriesKind,
}

/// The FTS5 table over a text index's entries table.
pub(super) fn fts_table(table: &str) -> String {
    format!("{table}_fts")
}

/// Creates the entries table of a new index on `coll`, fills it with `entries` (`_id` key,
/// index keys of that document) and records it. See `StoreSession::create_index`.
pub(super) fn create_index(
    conn: &Connection,
    coll: &CollectionRecord,
    new: &NewIndex<'_>,
    entries: &[(Vec<u8>, Vec<Vec<u8>>)],
) -> Result<IndexRecord, StoreError> {
    let NewIndex {
        name,
        spec,
        unique,
        multikey,
        kind,
    } = *new;
    let spec_bson = spec
        .to_vec()
        .map_err(|e| StoreError::Database(format!("index spec: {e}")))?;
    write_tx(conn, |conn| {
        let live = conn
            .prepare_cached(
                "SELECT 1 FROM dg_collections WHERE db = ?1 AND name = ?2 AND table_name = ?3",
            )
            .and_then(|mut stmt| {
                stmt.query_row(params![coll.db, coll.name, coll.table], |_| Ok(()))
                    .optional()
            })
            .map_err(db_err)?;
        if live.is_none() {
            return Err(StoreError::Database(format!(
                "collection {}.{} no longer exists",
                coll.db, coll.name
            )));
        }
        let taken = conn
            .prepare_cached("SELECT 1 FROM dg_indexes WHERE coll_table = ?1 AND name = ?2")
            .and_then(|mut stmt| {
                stmt.query_row(params![coll.table, name], |_| Ok(()))
                    .optional()
            })
            .map_err(db_err)?;
        if taken.is_some() {
            return Err(already_exists(coll, name));
        }
        let table = format!("dgi_{}", next_table_number(conn)?);
        let quoted = quote_ident(&table);
        let mut ddl = match kind {
            EntriesKind::Keys => format!(
                "CREATE TABLE {quoted} (ik BLOB NOT NULL, k BLOB NOT NULL, PRIMARY KEY (ik, k))
                     WITHOUT ROWID;
                 CREATE INDEX {} ON {quoted} (k);",
                quote_ident(&format!("{table}_k")),
            ),
            EntriesKind::Words => words_ddl(&table),
        };
        if unique {
            ddl.push_str(&format!(
                "CREATE UNIQUE INDEX {} ON {quoted} (ik);",
                quote_ident(&format!("{table}_u"))
            ));
        }
        conn.execute_batch(&ddl).map_err(db_err)?;
        let index = EntriesTable {
            table: table.clone(),
            name: name.to_owned(),
            unique,
        };
        let rows: Vec<(&[u8], &[u8])> = entries
            .iter()
            .flat_map(|(k, keys)| keys.iter().map(move |ik| (ik.as_slice(), k.as_slice())))
            .collect();
        insert_entries(conn, &index, &rows)?;
        conn.execute(
            "INSERT INTO dg_indexes (coll_table, name, spec, table_name, is_unique, multikey)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![coll.table, name, spec_bson, table, unique, multikey],
        )
        .map_err(|e| match db_err(e) {
            StoreError::DuplicateKey => already_exists(coll, name),
            other => other,
        })?;
        Ok(IndexRecord {
            db: coll.db.clone(),
            collection: coll.name.clone(),
            name: name.to_owned(),
            spec: spec.clone(),
            table,
            unique,
            multikey,
        })
    })
}

/// The tables of a text index: entries with stable rowids, the FTS5 table over them and
/// the triggers that keep it in step (see the module doc).
fn words_ddl(table: &str) -> String {
    let quoted = quote_ident(table);
    let fts = quote_ident(&fts_table(table));
    let trigger = |suffix: &str| quote_ident(&format!("{table}_{suffix}"));
    format!(
        "CREATE TABLE {quoted} (id INTEGER PRIMARY KEY, ik BLOB NOT NULL, k BLOB NOT NULL,
             UNIQUE (ik, k));
         CREATE INDEX {k_index} ON {quoted} (k);
         CREATE VIRTUAL TABLE {fts} USING fts5(ik, content={content}, content_rowid='id',
             tokenize='ascii', detail='none', columnsize=0);
         CREATE TRIGGER {ai} AFTER INSERT ON {quoted} BEGIN
             INSERT INTO {fts} (rowid, ik) VALUES (new.id, new.ik);
         END;
         CREATE TRIGGER {ad} AFTER DELETE ON {quoted} BEGIN
             INSERT INTO {fts} ({fts}, rowid, ik) VALUES ('delete', old.id, old.ik);
         END;",
        k_index = trigger("k"),
        content = quote_literal(table),
        ai = trigger("ai"),
        ad = trigger("ad"),
    )
}

/// `'text'` with quotes doubled (table names are docgate's own, `dgi_<n>`).
fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn already_exists(coll: &CollectionRecord, name: &str) -> StoreError {
    StoreError::AlreadyExists(format!("index {name} of {}.{}", coll.db, coll.name))
}

/// Drops an index's entries table and its record, matched by entries table and name (a
/// stale record of an index already dropped is a no-op).
pub(super) fn drop_index(conn: &Connection, index: &IndexRecord) -> Result<(), StoreError> {
    write_tx(conn, |conn| {
        let removed = conn
            .execute(
                "DELETE FROM dg_indexes WHERE table_name = ?1 AND name = ?2",
                params![index.table, index.name],
            )
            .map_err(db_err)?;
        if removed == 0 {
            return Ok(());
        }
        drop_tables(conn, &index.table)?;
        bump_version(conn)
    })
}

/// Drops an index's entries table and, for a text index, its FTS5 table.
fn drop_tables(conn: &Connection, table: &str) -> Result<(), StoreError> {
    conn.execute_batch(&format!(
        "DROP TABLE IF EXISTS {}; DROP TABLE IF EXISTS {};",
        quote_ident(table),
        quote_ident(&fts_table(table))
    ))
    .map_err(db_err)
}

/// Sets the multikey flag; bumps the catalog version when the flag changed.
pub(super) fn mark_multikey(conn: &Connection, index: &IndexRecord) -> Result<(), StoreError> {
    write_tx(conn, |conn| {
        let changed = conn
            .execute(
                "UPDATE dg_indexes SET multikey = 1
                 WHERE table_name = ?1 AND name = ?2 AND multikey = 0",
                params![index.table, index.name],
            )
            .map_err(db_err)?;
        if changed > 0 {
            bump_version(conn)?;
        }
        Ok(())
    })
}

/// Drops the entries tables and records of every index of the collection stored in
/// `coll_table` (inside `catalog::drop_collection`'s transaction).
pub(super) fn drop_collection_indexes(
    conn: &Connection,
    coll_table: &str,
) -> Result<(), StoreError> {
    for index in collection_indexes(conn, coll_table)? {
        drop_tables(conn, &index.table)?;
    }
    conn.execute("DELETE FROM dg_indexes WHERE coll_table = ?1", [coll_table])
        .map_err(db_err)
        .map(drop)
}

/// Inserts entry rows `(ik, k)` into `index`'s table, `ENTRY_ROWS` per statement. A key
/// taken by another document in a unique index fails with `IndexKeyConflict`; the failing
/// statement writes nothing, earlier ones stay (the caller's savepoint undoes them).
pub(super) fn insert_entries(
    conn: &Connection,
    index: &EntriesTable,
    rows: &[(&[u8], &[u8])],
) -> Result<(), StoreError> {
    for chunk in rows.chunks(ENTRY_ROWS) {
        let mut text = format!("INSERT INTO {} (ik, k) VALUES ", quote_ident(&index.table));
        for i in 0..chunk.len() {
            text.push_str(if i == 0 { "(?, ?)" } else { ", (?, ?)" });
        }
        text.push_str(" ON CONFLICT (ik, k) DO NOTHING");
        let mut params: Vec<&dyn ToSql> = Vec::with_capacity(chunk.len() * 2);
        for (ik, k) in chunk {
            params.push(ik);
            params.push(k);
        }
        let mut stmt = conn.prepare_cached(&text).map_err(db_err)?;
        stmt.execute(params.as_slice())
            .map_err(|e| match db_err(e) {
                StoreError::DuplicateKey => StoreError::IndexKeyConflict {
                    index: index.name.clone(),
                },
                other => other,
            })?;
    }
    Ok(())
}

/// Deletes the entries of the documents with `_id` keys `keys` from `table`, `DELETE_KEYS`
/// keys per statement (served by the `(k)` index).
pub(super) fn delete_entries(
    conn: &Connection,
    table: &str,
    keys: &[&[u8]],
) -> Result<(), StoreError> {
    for chunk in keys.chunks(DELETE_KEYS) {
        let text = if chunk.len() == 1 {
            format!("DELETE FROM {} WHERE k = ?", quote_ident(table))
        } else {
            let mut text = format!("DELETE FROM {} WHERE k IN (", quote_ident(table));
            for i in 0..chunk.len() {
                text.push_str(if i == 0 { "?" } else { ", ?" });
            }
            text.push(')');
            text
        };
        let params: Vec<&dyn ToSql> = chunk.iter().map(|k| k as &dyn ToSql).collect();
        let mut stmt = conn.prepare_cached(&text).map_err(db_err)?;
        stmt.execute(params.as_slice()).map_err(db_err)?;
    }
    Ok(())
}

/// Replaces the specification of `index` (matched by collection, name and entries table;
/// `collMod`'s `hidden` and `expireAfterSeconds`); bumps the version.
pub(super) fn set_index_spec(
    conn: &Connection,
    index: &IndexRecord,
    spec: &Document,
) -> Result<(), StoreError> {
    let spec_bson = spec
        .to_vec()
        .map_err(|e| StoreError::Database(format!("index spec: {e}")))?;
    write_tx(conn, |conn| {
        let changed = conn
            .execute(
                "UPDATE dg_indexes SET spec = ?5
                 WHERE name = ?3 AND table_name = ?4 AND coll_table =
                     (SELECT table_name FROM dg_collections WHERE db = ?1 AND name = ?2)",
                params![
                    index.db,
                    index.collection,
                    index.name,
                    index.table,
                    spec_bson
                ],
            )
            .map_err(db_err)?;
        if changed == 0 {
            return Err(StoreError::Database(format!(
                "index {} no longer exists",
                index.name
            )));
        }
        bump_version(conn)
    })
}
