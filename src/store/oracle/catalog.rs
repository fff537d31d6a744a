//! The catalog of the Oracle backend (tables `DG_*` in the connecting user's schema) and the
//! DDL of collections.
//!
//! - `dg_catalog(id = 1, format, version, next_name)`: one row; see `catalog_row.rs`.
//! - `dg_collections(db, name, table_name, options, uuid)`: each collection is a table
//!   `DG_C<n>` of the same schema; `options` is the BSON of the create options, `uuid` 16
//!   random bytes (UUID v4 layout).
//! - `dg_indexes`: secondary indexes and their entries tables `DG_I<n>` (see `index.rs`).
//! - `dg_meta` (see `meta.rs`) and `dg_write_records` (see `write_record.rs`).
//!
//! Names: Oracle schemas are users, which a docgate account should not have to create, so
//! every table lives in the connecting user's schema under a generated name; MongoDB's
//! database and collection names are only catalog data (any length, any characters) and a
//! rename changes catalog rows, never a table (into another database it also gives the
//! collection a new `uuid`: MongoDB copies it into a new collection there). Generated names
//! are never reused.
//!
//! A collection table is `(n NUMBER identity PRIMARY KEY, k RAW(2000) UNIQUE, doc BLOB,
//! j JSON)`: `n` is insertion order (MongoDB's natural order), `k` the `_id` key whose
//! unique index serves `_id` lookups and `ORDER BY k`, `doc` the raw BSON returned byte for
//! byte (invariant 1), `j` the queryable image (`store/image.rs`) as Oracle's binary JSON
//! (OSON), which `JSON_EXISTS` reads. README explains why this is not a JSON collection
//! table.
//!
//! DDL runs in autonomous transactions and drops wait for the commit (see `conn.rs`).
//!
//! Not for: documents (`write.rs`, `sql.rs`) or transaction control (`session.rs`).

use bson::{Document, RawDocument};

use super::super::{CollectionRecord, CollectionStats, StoreError};
use super::catalog_row::{bump_version, next_number};
use super::conn::{get, quote_ident, Bind, OraConn};
use super::index;

/// Format of the catalog tables written by this code.
const FORMAT: i64 = 1;

/// The catalog tables, each created if missing (23ai's `IF NOT EXISTS`), in order.
pub const BOOTSTRAP: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS dg_catalog (
         id NUMBER(1) PRIMARY KEY CHECK (id = 1),
         format NUMBER(10) NOT NULL,
         version NUMBER(19) NOT NULL,
         next_name NUMBER(19) NOT NULL
     )",
    "CREATE TABLE IF NOT EXISTS dg_collections (
         db VARCHAR2(1000) NOT NULL,
         name VARCHAR2(1000) NOT NULL,
         table_name VARCHAR2(128) NOT NULL UNIQUE,
         options BLOB NOT NULL,
         uuid RAW(16) NOT NULL UNIQUE,
         PRIMARY KEY (db, name)
     )",
    "CREATE TABLE IF NOT EXISTS dg_indexes (
         db VARCHAR2(1000) NOT NULL,
         collection VARCHAR2(1000) NOT NULL,
         name VARCHAR2(1000) NOT NULL,
         spec BLOB NOT NULL,
         table_name VARCHAR2(128) NOT NULL UNIQUE,
         is_unique NUMBER(1) NOT NULL,
         multikey NUMBER(1) NOT NULL,
         PRIMARY KEY (db, collection, name)
     )",
    "CREATE TABLE IF NOT EXISTS dg_write_records (
         session_id RAW(2000) PRIMARY KEY,
         txn_number NUMBER(19) NOT NULL,
         reply BLOB NOT NULL,
         written_ms NUMBER(19) NOT NULL
     )",
    "CREATE TABLE IF NOT EXISTS dg_meta (
         kind VARCHAR2(1000) NOT NULL,
         db VARCHAR2(1000) NOT NULL,
         name VARCHAR2(1000) NOT NULL,
         body CLOB NOT NULL CHECK (body IS JSON),
         PRIMARY KEY (kind, db, name)
     )",
];

/// The one catalog row, inserted unless present.
const CATALOG_ROW: &str = "MERGE INTO dg_catalog c USING (SELECT 1 AS id FROM dual) s
     ON (c.id = s.id)
     WHEN NOT MATCHED THEN INSERT (id, format, version, next_name) VALUES (1, 1, 0, 1)";

/// Creates the catalog if missing. Idempotent, also when two processes start at once.
pub(super) fn bootstrap(conn: &mut OraConn) -> Result<(), StoreError> {
    for ddl in BOOTSTRAP {
        conn.ddl(ddl)?;
    }
    conn.atomic(|conn| {
        match conn.execute(CATALOG_ROW, &[]) {
            // Another process inserted it between our MERGE's check and its insert.
            Ok(_) | Err(StoreError::DuplicateKey) => {}
            Err(e) => return Err(e),
        }
        let row = conn.query_one("SELECT format FROM dg_catalog WHERE id = 1", &[])?;
        let format: i64 = get(&row, 0)?;
        if format > FORMAT {
            return Err(StoreError::Database(format!(
                "the docgate catalog has format {format}; this docgate understands up to {FORMAT}"
            )));
        }
        Ok(())
    })
}

/// A stored BSON document (options, index specs).
pub(super) fn decode_document(bytes: &[u8], what: &str) -> Result<Document, StoreError> {
    RawDocument::from_bytes(bytes)
        .and_then(Document::try_from)
        .map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// Every collection, ordered by (db, name) bytewise (sorted here, whatever NLS_SORT is).
pub(super) fn list_collections(conn: &mut OraConn) -> Result<Vec<CollectionRecord>, StoreError> {
    let rows = conn.query(
        "SELECT db, name, table_name, options, uuid FROM dg_collections",
        &[],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let (db, name): (String, String) = (get(&row, 0)?, get(&row, 1)?);
        let table: String = get(&row, 2)?;
        let options: Vec<u8> = get(&row, 3)?;
        let options = decode_document(&options, &format!("options of {db}.{name}"))?;
        out.push(CollectionRecord {
            db,
            name,
            table: quote_ident(&table),
            options,
            uuid: get(&row, 4)?,
        });
    }
    out.sort_by(|a, b| (&a.db, &a.name).cmp(&(&b.db, &b.name)));
    Ok(out)
}

fn exists(conn: &mut OraConn, db: &str, name: &str) -> Result<bool, StoreError> {
    let rows = conn.query(
        "SELECT 1 FROM dg_collections WHERE db = :1 AND name = :2",
        &[Bind::Text(db.to_owned()), Bind::Text(name.to_owned())],
    )?;
    Ok(!rows.is_empty())
}

/// The DDL of a collection table named `table` (unquoted, generated).
pub fn collection_ddl(table: &str) -> String {
    let t = quote_ident(table);
    format!(
        "CREATE TABLE {t} (
             n NUMBER(19) GENERATED ALWAYS AS IDENTITY CONSTRAINT {pk} PRIMARY KEY,
             k RAW(2000) NOT NULL CONSTRAINT {uk} UNIQUE,
             doc BLOB NOT NULL,
             j JSON NOT NULL
         )",
        pk = quote_ident(&format!("{table}_N")),
        uk = quote_ident(&format!("{table}_K")),
    )
}

pub(super) fn create_collection(
    conn: &mut OraConn,
    db: &str,
    name: &str,
    options: &Document,
) -> Result<CollectionRecord, StoreError> {
    create_record(conn, db, name, options, true)
}

/// Records a view: a catalog row with its definition as options and no table (its
/// generated `DG_V<n>` name is never created, so a drop has no table to remove).
pub(super) fn create_view(
    conn: &mut OraConn,
    db: &str,
    name: &str,
    options: &Document,
) -> Result<CollectionRecord, StoreError> {
    create_record(conn, db, name, options, false)
}

/// Whether a recorded table name is a view's, which has no table.
fn is_view_table(table: &str) -> bool {
    unquoted(table).starts_with(VIEW_PREFIX)
}

const VIEW_PREFIX: &str = "DG_V";

fn create_record(
    conn: &mut OraConn,
    db: &str,
    name: &str,
    options: &Document,
    with_table: bool,
) -> Result<CollectionRecord, StoreError> {
    let options_bson = options
        .to_vec()
        .map_err(|e| StoreError::Database(format!("collection options: {e}")))?;
    let result = conn.atomic(|conn| {
        bump_version(conn)?;
        if exists(conn, db, name)? {
            return Err(StoreError::AlreadyExists(format!("{db}.{name}")));
        }
        let prefix = if with_table { "DG_C" } else { VIEW_PREFIX };
        let table = format!("{prefix}{}", next_number(conn)?);
        if with_table {
            conn.ddl(&collection_ddl(&table))?;
        }
        let uuid = random_uuid();
        let recorded = conn.execute(
            "INSERT INTO dg_collections (db, name, table_name, options, uuid)
             VALUES (:1, :2, :3, :4, :5)",
            &[
                Bind::Text(db.to_owned()),
                Bind::Text(name.to_owned()),
                Bind::Text(table.clone()),
                Bind::Blob(options_bson),
                Bind::Raw(uuid.clone()),
            ],
        );
        if let Err(e) = recorded {
            // Not recorded: the table must not outlive this call.
            if with_table {
                conn.drop_after_commit(quote_ident(&table));
            }
            return Err(e);
        }
        Ok(CollectionRecord {
            db: db.to_owned(),
            name: name.to_owned(),
            table: quote_ident(&table),
            options: options.clone(),
            uuid,
        })
    });
    result.map_err(|e| match e {
        StoreError::DuplicateKey => StoreError::AlreadyExists(format!("{db}.{name}")),
        other => other,
    })
}

/// Replaces the options of `coll` (matched by uuid); bumps the version.
pub(super) fn set_collection_options(
    conn: &mut OraConn,
    coll: &CollectionRecord,
    options: &Document,
) -> Result<(), StoreError> {
    let options_bson = options
        .to_vec()
        .map_err(|e| StoreError::Database(format!("collection options: {e}")))?;
    conn.atomic(|conn| {
        bump_version(conn)?;
        let changed = conn.execute(
            "UPDATE dg_collections SET options = :1
             WHERE db = :2 AND name = :3 AND uuid = :4",
            &[
                Bind::Blob(options_bson),
                Bind::Text(coll.db.clone()),
                Bind::Text(coll.name.clone()),
                Bind::Raw(coll.uuid.clone()),
            ],
        )?;
        if changed == 0 {
            return Err(StoreError::Database(format!(
                "collection {}.{} no longer exists",
                coll.db, coll.name
            )));
        }
        Ok(())
    })
}

/// Removes the record (matched by uuid, so a stale record never touches a collection that
/// was recreated under the same name) and drops the table and its entries tables after
/// the commit. A record that is gone is a no-op.
pub(super) fn drop_collection(
    conn: &mut OraConn,
    coll: &CollectionRecord,
) -> Result<(), StoreError> {
    conn.atomic(|conn| {
        let key = [
            Bind::Text(coll.db.clone()),
            Bind::Text(coll.name.clone()),
            Bind::Raw(coll.uuid.clone()),
        ];
        let rows = conn.query(
            "SELECT table_name FROM dg_collections
             WHERE db = :1 AND name = :2 AND uuid = :3 FOR UPDATE",
            &key,
        )?;
        let Some(row) = rows.first() else {
            return Ok(());
        };
        let table: String = get(row, 0)?;
        bump_version(conn)?;
        conn.execute(
            "DELETE FROM dg_collections WHERE db = :1 AND name = :2 AND uuid = :3",
            &key,
        )?;
        index::drop_all(conn, &coll.db, &coll.name)?;
        if !is_view_table(&table) {
            conn.drop_after_commit(quote_ident(&table));
        }
        Ok(())
    })
}

/// Moves a collection to another (db, name): catalog rows only, the table keeps its name.
pub(super) fn rename_collection(
    conn: &mut OraConn,
    coll: &CollectionRecord,
    to_db: &str,
    to_name: &str,
) -> Result<CollectionRecord, StoreError> {
    conn.atomic(|conn| {
        bump_version(conn)?;
        if exists(conn, to_db, to_name)? {
            return Err(StoreError::AlreadyExists(format!("{to_db}.{to_name}")));
        }
        // Into another database it is a new collection there (MongoDB copies it): a new
        // identity.
        let uuid = if coll.db == to_db {
            coll.uuid.clone()
        } else {
            random_uuid()
        };
        let moved = conn.execute(
            "UPDATE dg_collections SET db = :1, name = :2, uuid = :6
             WHERE db = :3 AND name = :4 AND uuid = :5",
            &[
                Bind::Text(to_db.to_owned()),
                Bind::Text(to_name.to_owned()),
                Bind::Text(coll.db.clone()),
                Bind::Text(coll.name.clone()),
                Bind::Raw(coll.uuid.clone()),
                Bind::Raw(uuid.clone()),
            ],
        )?;
        if moved == 0 {
            return Err(StoreError::Database(format!(
                "collection {}.{} no longer exists",
                coll.db, coll.name
            )));
        }
        index::move_all(conn, (&coll.db, &coll.name), (to_db, to_name))?;
        Ok(CollectionRecord {
            db: to_db.to_owned(),
            name: to_name.to_owned(),
            uuid,
            ..coll.clone()
        })
    })
}

/// Count and data size by SQL aggregate; sizes from `USER_SEGMENTS` (the table and its LOB
/// segments; the `_id_` index is the unique index on `k`; each secondary index is its
/// entries table with its indexes).
pub(super) fn collection_stats(
    conn: &mut OraConn,
    coll: &CollectionRecord,
) -> Result<CollectionStats, StoreError> {
    let row = conn.query_one(
        &format!(
            "SELECT COUNT(*), NVL(SUM(DBMS_LOB.GETLENGTH(doc)), 0) FROM {}",
            coll.table
        ),
        &[],
    )?;
    let count: i64 = get(&row, 0)?;
    let data_size: i64 = get(&row, 1)?;
    let table = unquoted(&coll.table);
    let row = conn.query_one(
        "SELECT
             (SELECT NVL(SUM(bytes), 0) FROM user_segments WHERE segment_name = :1)
           + (SELECT NVL(SUM(s.bytes), 0) FROM user_lobs l
              JOIN user_segments s ON s.segment_name = l.segment_name
              WHERE l.table_name = :2),
             (SELECT NVL(SUM(bytes), 0) FROM user_segments WHERE segment_name = :3)
         FROM dual",
        &[
            Bind::Text(table.clone()),
            Bind::Text(table.clone()),
            Bind::Text(format!("{table}_K")),
        ],
    )?;
    let storage: i64 = get(&row, 0)?;
    let id_index: i64 = get(&row, 1)?;
    let mut index_sizes = vec![("_id_".to_owned(), to_u64(id_index))];
    for (name, entries) in index::entries_of(conn, &coll.db, &coll.name)? {
        let row = conn.query_one(
            "SELECT NVL(SUM(bytes), 0) FROM user_segments WHERE segment_name IN (:1, :2, :3, :4)",
            &[
                Bind::Text(entries.clone()),
                Bind::Text(format!("{entries}_P")),
                Bind::Text(format!("{entries}_U")),
                Bind::Text(format!("{entries}_K")),
            ],
        )?;
        let size: i64 = get(&row, 0)?;
        index_sizes.push((name, to_u64(size)));
    }
    Ok(CollectionStats {
        count: to_u64(count),
        data_size: to_u64(data_size),
        storage_size: to_u64(storage),
        index_count: index_sizes.len() as u64,
        index_sizes,
    })
}

/// 16 random bytes in the UUID version 4 layout (`SYS_GUID()` is neither random nor v4).
fn random_uuid() -> Vec<u8> {
    let mut uuid: [u8; 16] = rand::random();
    uuid[6] = (uuid[6] & 0x0f) | 0x40;
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
    uuid.to_vec()
}

/// `"DG_C1"` → `DG_C1` (generated names hold no quotes).
pub(super) fn unquoted(table: &str) -> String {
    table.trim_matches('"').replace("\"\"", "\"")
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
