//! The catalog of the PostgreSQL backend (schema `docgate`) and the DDL of collections.
//!
//! - `docgate.catalog(id = 1, format, version, next_name)`: one row. `version` is bumped, and
//!   `NOTIFY docgate_catalog, '<version>'` sent, in the same transaction as every catalog
//!   change; bumping first also takes the row lock, so catalog changes of several docgate
//!   processes serialize and every check after it sees the latest committed catalog.
//!   `next_name` numbers generated names; numbers are never reused.
//! - `docgate.databases(db, schema_name)`: each MongoDB database is a PostgreSQL schema.
//! - `docgate.collections(db, name, schema_name, table_name, options, uuid)`: each collection
//!   is a table in its database's schema; `options` is the BSON of the create options, `uuid`
//!   16 random bytes (`gen_random_uuid()`), new for a collection renamed into another
//!   database (MongoDB copies it into a new collection there). A view is a row with no
//!   table (its table name is reserved but never created).
//! - `docgate.meta(kind, db, name, body json)`: users, roles, REST modules and OAuth clients
//!   (see `meta.rs`).
//! - `docgate.indexes`: secondary indexes and their entries tables (see `index.rs`); they
//!   are dropped and renamed (moved between schemas) along with their collection.
//!
//! Names: an ordinary database name (1..63 bytes of `[A-Za-z0-9_]`) is kept as it is,
//! quoted, as its schema's name, so people looking at the database recognise their data.
//! Anything else — longer than PostgreSQL's 63-byte identifiers, other characters (dots,
//! unicode), reserved (`pg_*`, `public`, `information_schema`, `docgate`, our own `dg_*` and
//! `dgi_*`), or equal ignoring case to a name already taken in PostgreSQL or in the catalog
//! (tools fold case) — gets a generated schema name `db_<n>`, recorded in the catalog.
//!
//! A collection's table is named for one incarnation of it: `<name>$<n>` (`coll$<n>` when
//! the name is not ordinary; an ordinary name is cut to leave room for the suffix), `n` from
//! `next_name`. Every create and every rename (`$out` and `convertToCapped` rename a new
//! table over their target) takes a new name, so a table name is never given twice: a
//! reader whose statement names a table that was dropped or renamed meanwhile fails
//! (`StaleCatalog`) instead of reading whatever took the name — a cursor never mixes two
//! incarnations. Catalogs written by earlier versions (tables named `<name>` or `coll_<n>`)
//! are read as they are: the catalog records every table's name, and no name with a `$`
//! was ever given before. Index and sequence names are left to PostgreSQL, which picks
//! free ones.
//!
//! A collection table is `(n bigint identity PRIMARY KEY, k bytea UNIQUE, doc bytea, j jsonb,
//! nt jsonb)`: `n` is insertion order (MongoDB's natural order; its index lets
//! `find().limit(n)` and REST pages stop early instead of sorting the table), `k` the `_id`
//! key whose unique index serves `_id` lookups and `ORDER BY k`, `doc` the raw BSON returned
//! byte for byte, `j` the queryable image (`store/image.rs`), `nt` the image's number types
//! (`store/number_types.rs`). The `n` index is internal and not counted as a MongoDB index.
//!
//! Formats: 1 had no `nt`. Opening a format-1 catalog adds the column to every collection
//! table (no rewrite: the rows written before read `nt` as NULL, which the SQL `$group`
//! takes as "unknown" and leaves to Rust) and records format 2, which a docgate that would
//! write rows without `nt` refuses to open.
//!
//! Rename keeps the data (`ALTER TABLE … RENAME` to its new name / `SET SCHEMA`). Dropping the last
//! collection of a database drops its schema when nothing else lives in it. Drop and rename
//! match the record by `(db, name, uuid)`, so a stale record never touches a collection that
//! was meanwhile recreated under the same name; dropping a record that is gone is a no-op.
//!
//! Not for: documents (`write.rs`, `sql.rs`) or transaction control (`session.rs`).

use bson::{Document, RawDocument};

use super::super::{CollectionRecord, CollectionStats, StoreError};
use super::catalog_row::{bump_version, corrupt, next_number, table_taken};
use super::conn::{qualified, quote_ident, PgConn};
use super::index;

/// Format of the catalog tables written by this code.
const FORMAT: i32 = 2;

/// Creates the catalog if missing. Idempotent; a transaction-level advisory lock makes two
/// processes starting at once take turns.
pub(super) async fn bootstrap(conn: &mut PgConn) -> Result<(), StoreError> {
    let scope = conn.open_scope();
    let result = bootstrap_body(conn).await;
    conn.close_scope(scope, result).await
}

async fn bootstrap_body(conn: &mut PgConn) -> Result<(), StoreError> {
    conn.batch(
        "SELECT pg_advisory_xact_lock(7237112421875475761);
         CREATE SCHEMA IF NOT EXISTS docgate;
         CREATE TABLE IF NOT EXISTS docgate.catalog (
             id int PRIMARY KEY CHECK (id = 1),
             format int NOT NULL,
             version bigint NOT NULL,
             next_name bigint NOT NULL
         );
         INSERT INTO docgate.catalog (id, format, version, next_name) VALUES (1, 2, 0, 1)
             ON CONFLICT (id) DO NOTHING;
         CREATE TABLE IF NOT EXISTS docgate.databases (
             db text PRIMARY KEY,
             schema_name text NOT NULL UNIQUE
         );
         CREATE TABLE IF NOT EXISTS docgate.collections (
             db text NOT NULL,
             name text NOT NULL,
             schema_name text NOT NULL,
             table_name text NOT NULL,
             options bytea NOT NULL,
             uuid bytea NOT NULL UNIQUE,
             PRIMARY KEY (db, name),
             UNIQUE (schema_name, table_name)
         );
         CREATE TABLE IF NOT EXISTS docgate.indexes (
             db text NOT NULL,
             collection text NOT NULL,
             name text NOT NULL,
             spec bytea NOT NULL,
             table_name text NOT NULL,
             is_unique boolean NOT NULL,
             multikey boolean NOT NULL,
             PRIMARY KEY (db, collection, name)
         );
         CREATE TABLE IF NOT EXISTS docgate.write_records (
             session bytea PRIMARY KEY,
             txn_number bigint NOT NULL,
             reply bytea NOT NULL,
             written_ms bigint NOT NULL
         );
         CREATE TABLE IF NOT EXISTS docgate.meta (
             kind text NOT NULL,
             db text NOT NULL,
             name text NOT NULL,
             body json NOT NULL,
             PRIMARY KEY (kind, db, name)
         );
         DO $$ BEGIN
             IF (SELECT data_type FROM information_schema.columns
                 WHERE table_schema = 'docgate' AND table_name = 'meta'
                   AND column_name = 'body') = 'jsonb' THEN
                 ALTER TABLE docgate.meta ALTER COLUMN body TYPE json USING body::json;
             END IF;
         END $$;",
    )
    .await?;
    let row = conn
        .query_one(
            "SELECT format FROM docgate.catalog WHERE id = 1",
            &params![],
        )
        .await?;
    let format: i32 = row.try_get(0).map_err(corrupt)?;
    if format > FORMAT {
        return Err(StoreError::Database(format!(
            "the docgate catalog has format {format}; this docgate understands up to {FORMAT}"
        )));
    }
    if format < 2 {
        add_number_types_column(conn).await?;
    }
    Ok(())
}

/// Format 1 → 2: every collection table gets the `nt` column (NULL in the rows it has).
async fn add_number_types_column(conn: &mut PgConn) -> Result<(), StoreError> {
    let rows = conn
        .query(
            "SELECT c.schema_name, c.table_name FROM docgate.collections AS c
             JOIN pg_namespace AS s ON s.nspname = c.schema_name
             JOIN pg_class AS t ON t.relnamespace = s.oid AND t.relname = c.table_name",
            &params![],
        )
        .await?;
    for row in rows {
        let schema: String = row.try_get(0).map_err(corrupt)?;
        let table: String = row.try_get(1).map_err(corrupt)?;
        conn.batch(&format!(
            "ALTER TABLE {} ADD COLUMN IF NOT EXISTS nt jsonb",
            qualified(&schema, &table)
        ))
        .await?;
    }
    conn.batch("UPDATE docgate.catalog SET format = 2 WHERE id = 1")
        .await
}

pub(super) async fn list_collections(
    conn: &mut PgConn,
) -> Result<Vec<CollectionRecord>, StoreError> {
    let rows = conn
        .query(
            "SELECT db, name, schema_name, table_name, options, uuid FROM docgate.collections
             ORDER BY db COLLATE \"C\", name COLLATE \"C\"",
            &params![],
        )
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let get = |i| row.try_get::<_, String>(i).map_err(corrupt);
        let (db, name, schema, table) = (get(0)?, get(1)?, get(2)?, get(3)?);
        let options: Vec<u8> = row.try_get(4).map_err(corrupt)?;
        let uuid: Vec<u8> = row.try_get(5).map_err(corrupt)?;
        let options = RawDocument::from_bytes(&options)
            .and_then(Document::try_from)
            .map_err(|e| StoreError::Corrupt(format!("options of {db}.{name}: {e}")))?;
        out.push(CollectionRecord {
            db,
            name,
            table: qualified(&schema, &table),
            options,
            uuid,
        });
    }
    Ok(out)
}

async fn exists(conn: &mut PgConn, db: &str, name: &str) -> Result<bool, StoreError> {
    let rows = conn
        .query(
            "SELECT 1 FROM docgate.collections WHERE db = $1 AND name = $2",
            &params![db.to_owned(), name.to_owned()],
        )
        .await?;
    Ok(!rows.is_empty())
}

/// Whether PostgreSQL can take `name` as it is (before checking it is free).
fn ordinary(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    (1..=63).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !lower.starts_with("pg_")
        && !lower.starts_with("dg_")
        && !lower.starts_with("dgi_")
        && !matches!(lower.as_str(), "public" | "information_schema" | "docgate")
}

async fn schema_taken(conn: &mut PgConn, schema: &str) -> Result<bool, StoreError> {
    let row = conn
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE lower(nspname) = lower($1))
                 OR EXISTS (SELECT 1 FROM docgate.databases
                            WHERE lower(schema_name) = lower($1))",
            &params![schema.to_owned()],
        )
        .await?;
    row.try_get(0).map_err(corrupt)
}

/// The schema of database `db`, created (and recorded) if it has none yet.
async fn ensure_schema(conn: &mut PgConn, db: &str) -> Result<String, StoreError> {
    let rows = conn
        .query(
            "SELECT schema_name FROM docgate.databases WHERE db = $1",
            &params![db.to_owned()],
        )
        .await?;
    if let Some(row) = rows.first() {
        return row.try_get(0).map_err(corrupt);
    }
    let mut schema = db.to_owned();
    if !ordinary(db) || schema_taken(conn, db).await? {
        loop {
            schema = format!("db_{}", next_number(conn).await?);
            if !schema_taken(conn, &schema).await? {
                break;
            }
        }
    }
    conn.batch(&format!("CREATE SCHEMA {}", quote_ident(&schema)))
        .await?;
    conn.execute(
        "INSERT INTO docgate.databases (db, schema_name) VALUES ($1, $2)",
        &params![db.to_owned(), schema.clone()],
    )
    .await?;
    Ok(schema)
}

/// A table name in `schema` for a new incarnation of collection `name` (created, or
/// renamed to `name`) that no table of this catalog ever had: [`incarnation_table`] with a
/// fresh number.
async fn choose_table(conn: &mut PgConn, schema: &str, name: &str) -> Result<String, StoreError> {
    loop {
        let table = incarnation_table(name, next_number(conn).await?);
        if !table_taken(conn, schema, &table).await? {
            return Ok(table);
        }
    }
}

/// `<name>$<number>`: the collection's name when PostgreSQL can take it as it is (cut to
/// leave room for the suffix in 63 bytes), else `coll`, then `$` and a number of the
/// catalog's `next_name`. Numbers are never reused and `$` is in no kept or generated
/// name of earlier docgate versions, so such a name is never given twice: a statement of a
/// reader that still names a replaced table fails instead of reading its successor.
fn incarnation_table(name: &str, number: i64) -> String {
    let suffix = format!("${number}");
    let base = if ordinary(name) { name } else { "coll" };
    // An ordinary name is ASCII: any byte is a character boundary.
    let kept = base.len().min(63 - suffix.len());
    format!("{}{suffix}", &base[..kept])
}

pub(super) async fn create_collection(
    conn: &mut PgConn,
    db: &str,
    name: &str,
    options: &Document,
) -> Result<CollectionRecord, StoreError> {
    create_record(conn, db, name, options, true).await
}

/// Records a view: a catalog row with its options and no table (the table name it keeps is
/// reserved in its schema like a collection's, but never created; a drop's `DROP TABLE IF
/// EXISTS` touches nothing).
pub(super) async fn create_view(
    conn: &mut PgConn,
    db: &str,
    name: &str,
    options: &Document,
) -> Result<CollectionRecord, StoreError> {
    create_record(conn, db, name, options, false).await
}

/// The catalog row of a collection (with its table) or a view (without), in one scope.
async fn create_record(
    conn: &mut PgConn,
    db: &str,
    name: &str,
    options: &Document,
    with_table: bool,
) -> Result<CollectionRecord, StoreError> {
    let options_bson = options
        .to_vec()
        .map_err(|e| StoreError::Database(format!("collection options: {e}")))?;
    let scope = conn.open_scope();
    let result = create_body(conn, db, name, options, options_bson, with_table).await;
    conn.close_scope(scope, result).await.map_err(|e| match e {
        StoreError::DuplicateKey => StoreError::AlreadyExists(format!("{db}.{name}")),
        other => other,
    })
}

/// Replaces the options of `coll` (matched by `(db, name, uuid)`); bumps the version.
pub(super) async fn set_collection_options(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    options: &Document,
) -> Result<(), StoreError> {
    let options_bson = options
        .to_vec()
        .map_err(|e| StoreError::Database(format!("collection options: {e}")))?;
    let scope = conn.open_scope();
    let result = set_options_body(conn, coll, options_bson).await;
    conn.close_scope(scope, result).await
}

async fn set_options_body(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    options_bson: Vec<u8>,
) -> Result<(), StoreError> {
    bump_version(conn).await?;
    let changed = conn
        .execute(
            "UPDATE docgate.collections SET options = $4
             WHERE db = $1 AND name = $2 AND uuid = $3",
            &params![
                coll.db.clone(),
                coll.name.clone(),
                coll.uuid.clone(),
                options_bson
            ],
        )
        .await?;
    if changed == 0 {
        return Err(StoreError::Database(format!(
            "collection {}.{} no longer exists",
            coll.db, coll.name
        )));
    }
    Ok(())
}

async fn create_body(
    conn: &mut PgConn,
    db: &str,
    name: &str,
    options: &Document,
    options_bson: Vec<u8>,
    with_table: bool,
) -> Result<CollectionRecord, StoreError> {
    bump_version(conn).await?;
    if exists(conn, db, name).await? {
        return Err(StoreError::AlreadyExists(format!("{db}.{name}")));
    }
    let schema = ensure_schema(conn, db).await?;
    let table = choose_table(conn, &schema, name).await?;
    let full = qualified(&schema, &table);
    if with_table {
        conn.batch(&format!(
            "CREATE TABLE {full} (
                 n bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                 k bytea NOT NULL UNIQUE,
                 doc bytea NOT NULL,
                 j jsonb NOT NULL,
                 nt jsonb
             )"
        ))
        .await?;
    }
    let row = conn
        .query_one(
            "INSERT INTO docgate.collections (db, name, schema_name, table_name, options, uuid)
             VALUES ($1, $2, $3, $4, $5, uuid_send(gen_random_uuid()))
             RETURNING uuid",
            &params![db.to_owned(), name.to_owned(), schema, table, options_bson],
        )
        .await?;
    Ok(CollectionRecord {
        db: db.to_owned(),
        name: name.to_owned(),
        table: full,
        options: options.clone(),
        uuid: row.try_get(0).map_err(corrupt)?,
    })
}

pub(super) async fn drop_collection(
    conn: &mut PgConn,
    coll: &CollectionRecord,
) -> Result<(), StoreError> {
    let scope = conn.open_scope();
    let result = drop_body(conn, coll).await;
    conn.close_scope(scope, result).await
}

async fn drop_body(conn: &mut PgConn, coll: &CollectionRecord) -> Result<(), StoreError> {
    let rows = conn
        .query(
            "DELETE FROM docgate.collections WHERE db = $1 AND name = $2 AND uuid = $3
             RETURNING schema_name, table_name",
            &params![coll.db.clone(), coll.name.clone(), coll.uuid.clone()],
        )
        .await?;
    let Some(row) = rows.first() else {
        return Ok(());
    };
    let schema: String = row.try_get(0).map_err(corrupt)?;
    let table: String = row.try_get(1).map_err(corrupt)?;
    bump_version(conn).await?;
    index::drop_all(conn, &coll.db, &coll.name, &schema).await?;
    conn.batch(&format!(
        "DROP TABLE IF EXISTS {}",
        qualified(&schema, &table)
    ))
    .await?;
    drop_schema_if_unused(conn, &coll.db, &schema).await
}

/// After the last collection of `db` left: drops its schema, unless something else lives in
/// it (then schema and record stay, and the next collection of `db` goes there again).
async fn drop_schema_if_unused(
    conn: &mut PgConn,
    db: &str,
    schema: &str,
) -> Result<(), StoreError> {
    let rows = conn
        .query(
            "SELECT 1 FROM docgate.collections WHERE db = $1 LIMIT 1",
            &params![db.to_owned()],
        )
        .await?;
    if !rows.is_empty() {
        return Ok(());
    }
    conn.batch("SAVEPOINT dg_schema").await?;
    let dropped = conn
        .batch(&format!("DROP SCHEMA {}", quote_ident(schema)))
        .await;
    match dropped {
        Ok(()) => {
            conn.execute(
                "DELETE FROM docgate.databases WHERE db = $1",
                &params![db.to_owned()],
            )
            .await?;
            conn.batch("RELEASE dg_schema").await
        }
        Err(_) => conn.undo_savepoint("dg_schema").await,
    }
}

pub(super) async fn rename_collection(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    to_db: &str,
    to_name: &str,
) -> Result<CollectionRecord, StoreError> {
    let scope = conn.open_scope();
    let result = rename_body(conn, coll, to_db, to_name).await;
    conn.close_scope(scope, result).await
}

async fn rename_body(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    to_db: &str,
    to_name: &str,
) -> Result<CollectionRecord, StoreError> {
    bump_version(conn).await?;
    if exists(conn, to_db, to_name).await? {
        return Err(StoreError::AlreadyExists(format!("{to_db}.{to_name}")));
    }
    let rows = conn
        .query(
            "SELECT schema_name, table_name FROM docgate.collections
             WHERE db = $1 AND name = $2 AND uuid = $3 FOR UPDATE",
            &params![coll.db.clone(), coll.name.clone(), coll.uuid.clone()],
        )
        .await?;
    let Some(row) = rows.first() else {
        return Err(StoreError::Database(format!(
            "collection {}.{} no longer exists",
            coll.db, coll.name
        )));
    };
    let schema: String = row.try_get(0).map_err(corrupt)?;
    let table: String = row.try_get(1).map_err(corrupt)?;
    let to_schema = ensure_schema(conn, to_db).await?;
    let to_table = choose_table(conn, &to_schema, to_name).await?;
    if to_schema == schema {
        if to_table != table {
            conn.batch(&format!(
                "ALTER TABLE {} RENAME TO {}",
                qualified(&schema, &table),
                quote_ident(&to_table)
            ))
            .await?;
        }
    } else {
        // Through a name free in both schemas (`dg_*` is never a kept name).
        let tmp = format!("dg_tmp_{}", next_number(conn).await?);
        conn.batch(&format!(
            "ALTER TABLE {} RENAME TO {t};
             ALTER TABLE {} SET SCHEMA {};
             ALTER TABLE {} RENAME TO {}",
            qualified(&schema, &table),
            qualified(&schema, &tmp),
            quote_ident(&to_schema),
            qualified(&to_schema, &tmp),
            quote_ident(&to_table),
            t = quote_ident(&tmp),
        ))
        .await?;
    }
    // Into another database it is a new collection there (MongoDB copies it): a new
    // identity.
    let row = conn
        .query_one(
            "UPDATE docgate.collections SET db = $4, name = $5, schema_name = $6, table_name = $7,
                 uuid = CASE WHEN db = $4 THEN uuid ELSE uuid_send(gen_random_uuid()) END
             WHERE db = $1 AND name = $2 AND uuid = $3
             RETURNING uuid",
            &params![
                coll.db.clone(),
                coll.name.clone(),
                coll.uuid.clone(),
                to_db.to_owned(),
                to_name.to_owned(),
                to_schema.clone(),
                to_table.clone()
            ],
        )
        .await?;
    let uuid: Vec<u8> = row.try_get(0).map_err(corrupt)?;
    index::move_all(
        conn,
        (&coll.db, &coll.name, &schema),
        (to_db, to_name, &to_schema),
    )
    .await?;
    if coll.db != to_db {
        drop_schema_if_unused(conn, &coll.db, &schema).await?;
    }
    Ok(CollectionRecord {
        db: to_db.to_owned(),
        name: to_name.to_owned(),
        table: qualified(&to_schema, &to_table),
        uuid,
        ..coll.clone()
    })
}

/// Count and data size by SQL aggregate; storage from `pg_total_relation_size` (table,
/// indexes, TOAST); indexes from `pg_index` without the internal primary key on `n`.
pub(super) async fn collection_stats(
    conn: &mut PgConn,
    coll: &CollectionRecord,
) -> Result<CollectionStats, StoreError> {
    let row = conn
        .query_one(
            &format!(
                "SELECT count(*), COALESCE(sum(length(doc)), 0)::bigint FROM {}",
                coll.table
            ),
            &params![],
        )
        .await?;
    let count: i64 = row.try_get(0).map_err(corrupt)?;
    let data_size: i64 = row.try_get(1).map_err(corrupt)?;
    // The table holds the documents (its TOAST included), its indexes on `n` and `k` are
    // `_id_`, each secondary index is an entries table of its own.
    let row = conn
        .query_one(
            "SELECT pg_table_size($1::text::regclass), pg_indexes_size($1::text::regclass),
                    (SELECT count(*) FROM pg_index
                     WHERE indrelid = $1::text::regclass AND NOT indisprimary)",
            &params![coll.table.clone()],
        )
        .await?;
    let storage: i64 = row.try_get(0).map_err(corrupt)?;
    let id_index: i64 = row.try_get(1).map_err(corrupt)?;
    let indexes: i64 = row.try_get(2).map_err(corrupt)?;
    let mut index_sizes = vec![("_id_".to_owned(), to_u64(id_index))];
    for row in conn
        .query(
            "SELECT i.name, pg_total_relation_size(
                        format('%I.%I', c.schema_name, i.table_name)::regclass)
             FROM docgate.indexes i
             JOIN docgate.collections c ON c.db = i.db AND c.name = i.collection
             WHERE i.db = $1 AND i.collection = $2 ORDER BY i.name",
            &params![coll.db.clone(), coll.name.clone()],
        )
        .await?
    {
        let name: String = row.try_get(0).map_err(corrupt)?;
        let size: i64 = row.try_get(1).map_err(corrupt)?;
        index_sizes.push((name, to_u64(size)));
    }
    let secondary = index::count(conn, &coll.db, &coll.name).await?;
    Ok(CollectionStats {
        count: to_u64(count),
        data_size: to_u64(data_size),
        storage_size: to_u64(storage),
        index_count: to_u64(indexes) + secondary,
        index_sizes,
    })
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
