//! The catalog tables of the SQLite backend and the DDL of collection tables.
//!
//! - `dg_catalog(id = 1, version, next_table)`: one row. `version` is bumped in the same
//!   transaction as every catalog change (caches compare it); `next_table` is the sequence
//!   that names physical tables `dgc_<n>` (collections) and `dgi_<n>` (index entries).
//!   Numbers are never reused, so a stale cache entry can never point at a newer table.
//! - `dg_collections(db, name, table_name, options, uuid)`, primary key `(db, name)`:
//!   `options` is the BSON of the create options, `uuid` 16 random bytes (UUID v4 layout).
//!   A view is a row of its own with no table (`table_name` `dgv_<n>`, never created).
//!
//! A collection table is a rowid table (rowid order = insertion order, MongoDB's natural
//! order; without AUTOINCREMENT a new rowid is still above every live one; a capped
//! collection's table has `dg_seq INTEGER PRIMARY KEY AUTOINCREMENT` as its rowid, so a
//! deleted newest rowid is never handed out again under a tailable cursor's position):
//! `k BLOB NOT NULL` (the `_id` key, unique index `<table>_id`), `doc BLOB NOT NULL` (raw BSON,
//! returned byte for byte) and `j BLOB NOT NULL` (the JSONB image, see `store/image.rs`).
//! Physical names never derive from user names; rename only rewrites the record (and, into
//! another database, gives the collection a new `uuid`: MongoDB copies it into a new
//! collection there).
//!
//! Secondary indexes (`dg_indexes`, entries tables `dgi_<n>`) are described in `index.rs`;
//! they belong to the collection's physical table, so a rename carries them along and a
//! drop drops them with it.
//!
//! Drop and rename match the record by `(db, name, table_name)`: a stale record (the
//! collection was meanwhile dropped, recreated or renamed elsewhere) never touches another
//! collection's table. Dropping a record that is already gone is a no-op.
//!
//! Not for: documents (`write.rs`, `sql.rs`) or transaction control (`session.rs`).

use bson::{Document, RawDocument};
use rusqlite::{params, Connection, OptionalExtension};

use super::super::{CollectionRecord, CollectionStats, StoreError};
use super::catalog_row::{bump_version, next_table_number};
use super::conn::{db_err, write_tx};
use super::index;
use super::sql::quote_ident;

/// Creates the catalog tables if missing (run once when the store opens).
pub(super) fn init_schema(conn: &Connection) -> Result<(), StoreError> {
    write_tx(conn, |conn| {
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS dg_catalog (
                 id INTEGER PRIMARY KEY CHECK (id = 1),
                 version INTEGER NOT NULL,
                 next_table INTEGER NOT NULL
             );
             INSERT OR IGNORE INTO dg_catalog (id, version, next_table) VALUES (1, 0, 1);
             CREATE TABLE IF NOT EXISTS dg_collections (
                 db TEXT NOT NULL,
                 name TEXT NOT NULL,
                 table_name TEXT NOT NULL UNIQUE,
                 options BLOB NOT NULL,
                 uuid BLOB NOT NULL,
                 PRIMARY KEY (db, name)
             );",
        )
        .map_err(db_err)?;
        conn.execute_batch(index::SCHEMA).map_err(db_err)?;
        conn.execute_batch(super::meta::SCHEMA).map_err(db_err)?;
        conn.execute_batch(super::write_record::SCHEMA)
            .map_err(db_err)
    })
}

pub(super) fn list_collections(conn: &Connection) -> Result<Vec<CollectionRecord>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT db, name, table_name, options, uuid FROM dg_collections ORDER BY db, name",
        )
        .map_err(db_err)?;
    let rows = stmt
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, Vec<u8>>(3)?,
                row.get::<_, Vec<u8>>(4)?,
            ))
        })
        .map_err(db_err)?;
    let mut out = Vec::new();
    for row in rows {
        let (db, name, table, options, uuid) = row.map_err(db_err)?;
        let options = RawDocument::from_bytes(&options)
            .and_then(Document::try_from)
            .map_err(|e| StoreError::Corrupt(format!("options of {db}.{name}: {e}")))?;
        out.push(CollectionRecord {
            db,
            name,
            table,
            options,
            uuid,
        });
    }
    Ok(out)
}

fn exists(conn: &Connection, db: &str, name: &str) -> Result<bool, StoreError> {
    conn.prepare_cached("SELECT 1 FROM dg_collections WHERE db = ?1 AND name = ?2")
        .and_then(|mut stmt| stmt.query_row(params![db, name], |_| Ok(())).optional())
        .map(|found| found.is_some())
        .map_err(db_err)
}

pub(super) fn create_collection(
    conn: &Connection,
    db: &str,
    name: &str,
    options: &Document,
) -> Result<CollectionRecord, StoreError> {
    create_record(conn, db, name, options, true)
}

/// Records a view: a catalog row with its options and no table. Its `table_name` is a
/// `dgv_<n>` from the same sequence, which no table ever takes, so the row's uniqueness
/// holds and a drop of the record (`DROP TABLE IF EXISTS`) touches nothing.
pub(super) fn create_view(
    conn: &Connection,
    db: &str,
    name: &str,
    options: &Document,
) -> Result<CollectionRecord, StoreError> {
    create_record(conn, db, name, options, false)
}

/// Replaces the options of `coll` (matched by `(db, name, table_name)`); bumps the version.
pub(super) fn set_collection_options(
    conn: &Connection,
    coll: &CollectionRecord,
    options: &Document,
) -> Result<(), StoreError> {
    let options_bson = options
        .to_vec()
        .map_err(|e| StoreError::Database(format!("collection options: {e}")))?;
    write_tx(conn, |conn| {
        let changed = conn
            .execute(
                "UPDATE dg_collections SET options = ?4
                 WHERE db = ?1 AND name = ?2 AND table_name = ?3",
                params![coll.db, coll.name, coll.table, options_bson],
            )
            .map_err(db_err)?;
        if changed == 0 {
            return Err(StoreError::Database(format!(
                "collection {}.{} no longer exists",
                coll.db, coll.name
            )));
        }
        bump_version(conn)
    })
}

fn create_record(
    conn: &Connection,
    db: &str,
    name: &str,
    options: &Document,
    with_table: bool,
) -> Result<CollectionRecord, StoreError> {
    let options_bson = options
        .to_vec()
        .map_err(|e| StoreError::Database(format!("collection options: {e}")))?;
    write_tx(conn, |conn| {
        if exists(conn, db, name)? {
            return Err(StoreError::AlreadyExists(format!("{db}.{name}")));
        }
        let prefix = if with_table { "dgc" } else { "dgv" };
        let table = format!("{prefix}_{}", next_table_number(conn)?);
        let uuid = new_uuid(conn)?;
        if with_table {
            // A capped collection's rowids are never reused (AUTOINCREMENT): a tailable
            // cursor resumes after one, and a deleted newest row must not come back as a
            // new document.
            let sequence = if options.get_bool("capped").unwrap_or(false) {
                "dg_seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            } else {
                ""
            };
            conn.execute_batch(&format!(
                "CREATE TABLE {t} ({sequence}k BLOB NOT NULL, doc BLOB NOT NULL, j BLOB NOT NULL);
                 CREATE UNIQUE INDEX {i} ON {t} (k);",
                t = quote_ident(&table),
                i = quote_ident(&id_index_name(&table)),
            ))
            .map_err(db_err)?;
        }
        conn.execute(
            "INSERT INTO dg_collections (db, name, table_name, options, uuid)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![db, name, table, options_bson, uuid],
        )
        .map_err(|e| match db_err(e) {
            StoreError::DuplicateKey => StoreError::AlreadyExists(format!("{db}.{name}")),
            other => other,
        })?;
        Ok(CollectionRecord {
            db: db.to_owned(),
            name: name.to_owned(),
            table,
            options: options.clone(),
            uuid,
        })
    })
}

/// 16 random bytes in the UUID v4 layout: the identity of a new collection.
fn new_uuid(conn: &Connection) -> Result<Vec<u8>, StoreError> {
    let mut uuid: Vec<u8> = conn
        .query_row("SELECT randomblob(16)", [], |row| row.get(0))
        .map_err(db_err)?;
    if let [.., ref mut b6, _, ref mut b8, _, _, _, _, _, _, _] = uuid[..] {
        *b6 = (*b6 & 0x0f) | 0x40;
        *b8 = (*b8 & 0x3f) | 0x80;
    }
    Ok(uuid)
}

pub(super) fn drop_collection(
    conn: &Connection,
    coll: &CollectionRecord,
) -> Result<(), StoreError> {
    write_tx(conn, |conn| {
        let removed = conn
            .execute(
                "DELETE FROM dg_collections WHERE db = ?1 AND name = ?2 AND table_name = ?3",
                params![coll.db, coll.name, coll.table],
            )
            .map_err(db_err)?;
        if removed == 0 {
            return Ok(());
        }
        index::drop_collection_indexes(conn, &coll.table)?;
        conn.execute_batch(&format!(
            "DROP TABLE IF EXISTS {}",
            quote_ident(&coll.table)
        ))
        .map_err(db_err)?;
        bump_version(conn)
    })
}

pub(super) fn rename_collection(
    conn: &Connection,
    coll: &CollectionRecord,
    to_db: &str,
    to_name: &str,
) -> Result<CollectionRecord, StoreError> {
    write_tx(conn, |conn| {
        if exists(conn, to_db, to_name)? {
            return Err(StoreError::AlreadyExists(format!("{to_db}.{to_name}")));
        }
        // Into another database it is a new collection there (MongoDB copies it): a new
        // identity.
        let uuid = if coll.db == to_db {
            coll.uuid.clone()
        } else {
            new_uuid(conn)?
        };
        let moved = conn
            .execute(
                "UPDATE dg_collections SET db = ?4, name = ?5, uuid = ?6
                 WHERE db = ?1 AND name = ?2 AND table_name = ?3",
                params![coll.db, coll.name, coll.table, to_db, to_name, uuid],
            )
            .map_err(db_err)?;
        if moved == 0 {
            return Err(StoreError::Database(format!(
                "collection {}.{} no longer exists",
                coll.db, coll.name
            )));
        }
        bump_version(conn)?;
        Ok(CollectionRecord {
            db: to_db.to_owned(),
            name: to_name.to_owned(),
            uuid,
            ..coll.clone()
        })
    })
}

/// Count and data size by SQL aggregate; index count: the `_id` index plus the secondary
/// indexes in `dg_indexes`; storage from the `dbstat` virtual table (compiled into the
/// bundled SQLite) over the table, the entries tables and all their SQLite indexes, 0 if
/// `dbstat` is unavailable.
pub(super) fn collection_stats(
    conn: &Connection,
    coll: &CollectionRecord,
) -> Result<CollectionStats, StoreError> {
    let (count, data_size): (i64, i64) = conn
        .query_row(
            &format!(
                "SELECT COUNT(*), COALESCE(SUM(length(doc)), 0) FROM {}",
                quote_ident(&coll.table)
            ),
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .map_err(db_err)?;
    let secondary = index::collection_indexes(conn, &coll.table)?;
    // The collection table holds the documents; its unique index on `k` is `_id_`; each
    // secondary index is an entries table with indexes of its own.
    let storage_size = object_size(conn, &coll.table)?;
    let mut index_sizes = vec![(
        "_id_".to_owned(),
        object_size(conn, &id_index_name(&coll.table))?,
    )];
    for entries in &secondary {
        let mut size = object_size(conn, &entries.table)?;
        let indexes: Vec<String> = conn
            .prepare_cached("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?1")
            .and_then(|mut stmt| {
                stmt.query_map([&entries.table], |row| row.get(0))?
                    .collect::<Result<_, _>>()
            })
            .map_err(db_err)?;
        for index in &indexes {
            size += object_size(conn, index)?;
        }
        index_sizes.push((entries.name.clone(), size));
    }
    Ok(CollectionStats {
        count: to_u64(count),
        data_size: to_u64(data_size),
        storage_size,
        index_count: 1 + secondary.len() as u64,
        index_sizes,
    })
}

/// The unique index on `k` of collection table `table`: MongoDB's `_id_`.
fn id_index_name(table: &str) -> String {
    format!("{table}_id")
}

/// Bytes of the pages of one table or index, from the `dbstat` virtual table (0 when the
/// build has none).
fn object_size(conn: &Connection, object: &str) -> Result<u64, StoreError> {
    let size: rusqlite::Result<Option<i64>> = conn.query_row(
        "SELECT pgsize FROM dbstat WHERE name = ?1 AND aggregate = TRUE",
        [object],
        |row| row.get(0),
    );
    Ok(size.ok().flatten().map_or(0, to_u64))
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
