//! Secondary indexes of the Oracle backend: records in `dg_indexes` and one entries table
//! `DG_I<n>(ik RAW, k RAW)` per index, holding the index keys the core computed for each
//! document (MongoDB's key order, collation sort keys, multikey arrays — all already in the
//! bytes), with primary key `(ik, k)` (the walk order), `UNIQUE (ik)` for unique indexes,
//! and an index on `k` for maintenance. The same design as the other backends, so the
//! planner's `IndexRange` and index walks mean the same everywhere.
//!
//! Builds and drops lock the collection in `SHARE` mode first (writers lock it in `ROW
//! EXCLUSIVE` mode before checking their keys against the indexes, see `write.rs`), so a
//! build never misses a write and a write never misses a build. The entries table and its
//! index are created by autonomous DDL before the entries are inserted in the call's own
//! transaction; a drop waits for the commit (see `conn.rs`).
//!
//! Not for: maintaining entries on document writes (`write.rs`).

use bson::Document;

use super::super::{CollectionRecord, IndexRecord, StoreError};
use super::catalog::decode_document;
use super::catalog_row::{bump_version, next_number};
use super::conn::{get, quote_ident, Bind, OraConn};

/// `LOCK TABLE <coll> IN SHARE MODE` for the rest of the caller's transaction.
pub(super) fn lock_for_build(
    conn: &mut OraConn,
    coll: &CollectionRecord,
) -> Result<(), StoreError> {
    if !conn.in_tx {
        return Err(StoreError::Database(
            "locking a collection for an index build needs a transaction".into(),
        ));
    }
    conn.execute(&format!("LOCK TABLE {} IN SHARE MODE", coll.table), &[])
        .map(|_| ())
}

/// Every secondary index, ordered by (db, collection, name) bytewise.
pub(super) fn list_indexes(conn: &mut OraConn) -> Result<Vec<IndexRecord>, StoreError> {
    let rows = conn.query(
        "SELECT db, collection, name, spec, table_name, is_unique, multikey FROM dg_indexes",
        &[],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let name: String = get(&row, 2)?;
        let spec: Vec<u8> = get(&row, 3)?;
        let table: String = get(&row, 4)?;
        let unique: i64 = get(&row, 5)?;
        let multikey: i64 = get(&row, 6)?;
        out.push(IndexRecord {
            db: get(&row, 0)?,
            collection: get(&row, 1)?,
            spec: decode_document(&spec, &format!("spec of index {name}"))?,
            name,
            table: quote_ident(&table),
            unique: unique != 0,
            multikey: multikey != 0,
        });
    }
    out.sort_by(|a, b| (&a.db, &a.collection, &a.name).cmp(&(&b.db, &b.collection, &b.name)));
    Ok(out)
}

/// The DDL of an entries table named `table` (unquoted, generated): the table, then the
/// index on `k`.
pub fn entries_ddl(table: &str, unique: bool) -> [String; 2] {
    let t = quote_ident(table);
    let unique = if unique {
        format!(
            ", CONSTRAINT {} UNIQUE (ik)",
            quote_ident(&format!("{table}_U"))
        )
    } else {
        String::new()
    };
    [
        format!(
            "CREATE TABLE {t} (
                 ik RAW(2000) NOT NULL,
                 k RAW(2000) NOT NULL,
                 CONSTRAINT {pk} PRIMARY KEY (ik, k){unique}
             )",
            pk = quote_ident(&format!("{table}_P")),
        ),
        format!(
            "CREATE INDEX {} ON {t} (k)",
            quote_ident(&format!("{table}_K"))
        ),
    ]
}

/// Creates, fills and records a secondary index (see the trait).
pub(super) fn create_index(
    conn: &mut OraConn,
    coll: &CollectionRecord,
    new: &NewIndex,
    entries: &[(Vec<u8>, Vec<Vec<u8>>)],
) -> Result<IndexRecord, StoreError> {
    let spec_bson = new
        .spec
        .to_vec()
        .map_err(|e| StoreError::Database(format!("index spec: {e}")))?;
    conn.atomic(|conn| {
        conn.execute(&format!("LOCK TABLE {} IN SHARE MODE", coll.table), &[])?;
        bump_version(conn)?;
        let recorded = conn.query(
            "SELECT 1 FROM dg_collections WHERE db = :1 AND name = :2 AND uuid = :3",
            &[
                Bind::Text(coll.db.clone()),
                Bind::Text(coll.name.clone()),
                Bind::Raw(coll.uuid.clone()),
            ],
        )?;
        if recorded.is_empty() {
            return Err(StoreError::Database(format!(
                "collection {}.{} no longer exists",
                coll.db, coll.name
            )));
        }
        let taken = conn.query(
            "SELECT 1 FROM dg_indexes WHERE db = :1 AND collection = :2 AND name = :3",
            &[
                Bind::Text(coll.db.clone()),
                Bind::Text(coll.name.clone()),
                Bind::Text(new.name.clone()),
            ],
        )?;
        if !taken.is_empty() {
            return Err(StoreError::AlreadyExists(format!(
                "index {} of {}.{}",
                new.name, coll.db, coll.name
            )));
        }
        let table = format!("DG_I{}", next_number(conn)?);
        let full = quote_ident(&table);
        for ddl in entries_ddl(&table, new.unique) {
            if let Err(e) = conn.ddl(&ddl) {
                conn.drop_after_commit(full.clone());
                return Err(e);
            }
        }
        let filled = fill(conn, &full, &new.name, entries).and_then(|()| {
            conn.execute(
                "INSERT INTO dg_indexes
                     (db, collection, name, spec, table_name, is_unique, multikey)
                 VALUES (:1, :2, :3, :4, :5, :6, :7)",
                &[
                    Bind::Text(coll.db.clone()),
                    Bind::Text(coll.name.clone()),
                    Bind::Text(new.name.clone()),
                    Bind::Blob(spec_bson),
                    Bind::Text(table.clone()),
                    Bind::Int(i64::from(new.unique)),
                    Bind::Int(i64::from(new.multikey)),
                ],
            )
        });
        if let Err(e) = filled {
            // The table was created outside this transaction: drop it once it is over.
            conn.drop_after_commit(full);
            return Err(match e {
                StoreError::DuplicateKey => StoreError::AlreadyExists(format!(
                    "index {} of {}.{}",
                    new.name, coll.db, coll.name
                )),
                other => other,
            });
        }
        Ok(IndexRecord {
            db: coll.db.clone(),
            collection: coll.name.clone(),
            name: new.name.clone(),
            spec: new.spec.clone(),
            table: full,
            unique: new.unique,
            multikey: new.multikey,
        })
    })
}

/// What `create_index` records.
pub(super) struct NewIndex {
    pub(super) name: String,
    pub(super) spec: Document,
    pub(super) unique: bool,
    pub(super) multikey: bool,
}

/// Inserts the entries of the build (array DML); a unique collision is
/// `IndexKeyConflict`.
fn fill(
    conn: &mut OraConn,
    table: &str,
    index: &str,
    entries: &[(Vec<u8>, Vec<Vec<u8>>)],
) -> Result<(), StoreError> {
    let mut rows: Vec<Vec<Bind>> = entries
        .iter()
        .flat_map(|(k, iks)| {
            iks.iter()
                .map(move |ik| vec![Bind::Raw(ik.clone()), Bind::Raw(k.clone())])
        })
        .collect();
    rows.dedup();
    conn.execute_many(
        &format!("INSERT INTO {table} (ik, k) VALUES (:1, :2)"),
        &rows,
        false,
    )
    .map(|_| ())
    .map_err(|e| match e {
        StoreError::DuplicateKey => StoreError::IndexKeyConflict {
            index: index.to_owned(),
        },
        other => other,
    })
}

/// The entries table (unquoted) of `index` if its record still names the same table.
fn locate(conn: &mut OraConn, index: &IndexRecord) -> Result<Option<String>, StoreError> {
    let rows = conn.query(
        "SELECT table_name FROM dg_indexes
         WHERE db = :1 AND collection = :2 AND name = :3 FOR UPDATE",
        &[
            Bind::Text(index.db.clone()),
            Bind::Text(index.collection.clone()),
            Bind::Text(index.name.clone()),
        ],
    )?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let table: String = get(row, 0)?;
    Ok((quote_ident(&table) == index.table).then_some(table))
}

/// The collection table (quoted) of `(db, name)`, if recorded.
fn collection_table(
    conn: &mut OraConn,
    db: &str,
    name: &str,
) -> Result<Option<String>, StoreError> {
    let rows = conn.query(
        "SELECT table_name FROM dg_collections WHERE db = :1 AND name = :2",
        &[Bind::Text(db.to_owned()), Bind::Text(name.to_owned())],
    )?;
    match rows.first() {
        Some(row) => Ok(Some(quote_ident(&get::<String>(row, 0)?))),
        None => Ok(None),
    }
}

/// Removes the record and drops the entries table after the commit; a no-op when the
/// index is gone (or was recreated meanwhile, with another table).
pub(super) fn drop_index(conn: &mut OraConn, index: &IndexRecord) -> Result<(), StoreError> {
    conn.atomic(|conn| {
        let Some(coll) = collection_table(conn, &index.db, &index.collection)? else {
            return Ok(());
        };
        conn.execute(&format!("LOCK TABLE {coll} IN SHARE MODE"), &[])?;
        bump_version(conn)?;
        let Some(table) = locate(conn, index)? else {
            return Ok(());
        };
        conn.execute(
            "DELETE FROM dg_indexes WHERE db = :1 AND collection = :2 AND name = :3",
            &[
                Bind::Text(index.db.clone()),
                Bind::Text(index.collection.clone()),
                Bind::Text(index.name.clone()),
            ],
        )?;
        conn.drop_after_commit(quote_ident(&table));
        Ok(())
    })
}

/// Replaces the recorded specification of `index` (`hidden`, `expireAfterSeconds`: options
/// that change neither its keys nor its entries); bumps the version.
pub(super) fn set_index_spec(
    conn: &mut OraConn,
    index: &IndexRecord,
    spec: &Document,
) -> Result<(), StoreError> {
    let spec_bson = spec
        .to_vec()
        .map_err(|e| StoreError::Database(format!("index spec: {e}")))?;
    conn.atomic(|conn| {
        bump_version(conn)?;
        let changed = conn.execute(
            "UPDATE dg_indexes SET spec = :1 WHERE db = :2 AND collection = :3 AND name = :4",
            &[
                Bind::Blob(spec_bson),
                Bind::Text(index.db.clone()),
                Bind::Text(index.collection.clone()),
                Bind::Text(index.name.clone()),
            ],
        )?;
        if changed == 0 {
            return Err(StoreError::Database(format!(
                "index {} no longer exists",
                index.name
            )));
        }
        Ok(())
    })
}

/// Sets the multikey flag (bumping the version) unless it was set already.
pub(super) fn mark_multikey(conn: &mut OraConn, index: &IndexRecord) -> Result<(), StoreError> {
    conn.atomic(|conn| {
        let key = [
            Bind::Text(index.db.clone()),
            Bind::Text(index.collection.clone()),
            Bind::Text(index.name.clone()),
        ];
        let pending = conn.query(
            "SELECT 1 FROM dg_indexes
             WHERE db = :1 AND collection = :2 AND name = :3 AND multikey = 0",
            &key,
        )?;
        if pending.is_empty() {
            return Ok(());
        }
        bump_version(conn)?;
        if locate(conn, index)?.is_some() {
            conn.execute(
                "UPDATE dg_indexes SET multikey = 1
                 WHERE db = :1 AND collection = :2 AND name = :3",
                &key,
            )?;
        }
        Ok(())
    })
}

/// The indexes of the collection `(db, name)`: (index name, entries table unquoted),
/// ordered by name.
pub(super) fn entries_of(
    conn: &mut OraConn,
    db: &str,
    name: &str,
) -> Result<Vec<(String, String)>, StoreError> {
    let rows = conn.query(
        "SELECT name, table_name FROM dg_indexes WHERE db = :1 AND collection = :2",
        &[Bind::Text(db.to_owned()), Bind::Text(name.to_owned())],
    )?;
    let mut out = rows
        .iter()
        .map(|row| Ok((get(row, 0)?, get(row, 1)?)))
        .collect::<Result<Vec<(String, String)>, StoreError>>()?;
    out.sort();
    Ok(out)
}

/// Removes every index record of the collection `(db, name)` and drops their entries
/// tables after the commit (called by `drop_collection`).
pub(super) fn drop_all(conn: &mut OraConn, db: &str, name: &str) -> Result<(), StoreError> {
    let tables = entries_of(conn, db, name)?;
    conn.execute(
        "DELETE FROM dg_indexes WHERE db = :1 AND collection = :2",
        &[Bind::Text(db.to_owned()), Bind::Text(name.to_owned())],
    )?;
    for (_, table) in tables {
        conn.drop_after_commit(quote_ident(&table));
    }
    Ok(())
}

/// Moves the index records of a renamed collection along (the tables keep their names).
pub(super) fn move_all(
    conn: &mut OraConn,
    from: (&str, &str),
    to: (&str, &str),
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE dg_indexes SET db = :1, collection = :2 WHERE db = :3 AND collection = :4",
        &[
            Bind::Text(to.0.to_owned()),
            Bind::Text(to.1.to_owned()),
            Bind::Text(from.0.to_owned()),
            Bind::Text(from.1.to_owned()),
        ],
    )
    .map(|_| ())
}
