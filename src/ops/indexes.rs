//! Index management for every front end: building the requested indexes that do not exist
//! yet, and dropping indexes. An index is built in the same transaction that records it:
//! every existing document's keys are computed by the query core (`IndexSpec::entries`) and
//! handed to the store, which fills the index's entries table and enforces uniqueness. A
//! failed build (duplicate key, parallel arrays) leaves nothing behind; the catalog is
//! invalidated when the transaction commits.
//!
//! Not for: which indexes a command names, or its reply (the front ends); using indexes (the
//! planner); expiring documents (`ttl`).

use bson::{doc, Bson, Document};

use super::read;
use super::transaction::Transaction;
use super::write::collection_for_write;
use super::write_errors::duplicate_index_error;
use super::OpError;
use crate::catalog::{CollectionInfo, NO_INDEXES};
use crate::query::planner::ReadPlan;
use crate::query::{encode_key, Collation, Filter, IndexSpec};
use crate::state::AppState;
use crate::store::{CollectionRecord, IndexRecord, StoreError, StoreSession};

/// Most indexes a collection may have, the `_id` index included (MongoDB's limit).
const MAX_INDEXES: usize = 64;

/// The `_id` index every collection has.
pub fn id_index_spec() -> Document {
    doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"}
}

/// The `_id` index of `record` as `listIndexes` shows it: a clustered collection's is its
/// `clusteredIndex` (its name, `unique`, `clustered: true`).
pub fn id_index_spec_of(record: &CollectionRecord) -> Document {
    match record.options.get_document("clusteredIndex") {
        Ok(clustered) => {
            let mut spec = clustered.clone();
            spec.insert("clustered", true);
            spec
        }
        Err(_) => id_index_spec(),
    }
}

/// The `_id` index of `info` as `listIndexes` shows it: with its collation on a collection
/// with a default collation.
pub fn id_index_document(info: &CollectionInfo) -> Document {
    let mut spec = id_index_spec_of(&info.record);
    if let Some(Ok(collation)) = info
        .collated_id_index()
        .map(|index| index.spec.document.get_document("collation"))
    {
        spec.insert("collation", collation.clone());
    }
    spec
}

/// The collated `_id` index a collection created with `options` has: none without a
/// `collation` (or with the simple one), else a unique index of that collation over `_id`,
/// kept beside the primary key as an entries table like any collated index.
pub fn collated_id_index_spec(options: &Document) -> Result<Option<IndexSpec>, OpError> {
    let Ok(collation) = options.get_document("collation") else {
        return Ok(None);
    };
    let Some(full) = Collation::parse(collation)?.to_document() else {
        return Ok(None);
    };
    let mut spec = id_index_spec();
    spec.insert("collation", full);
    Ok(Some(IndexSpec::parse(&spec)?))
}

/// Builds the collated `_id` index of `coll` (see [`collated_id_index_spec`]) over its
/// `documents`, in the caller's transaction; nothing when its options have no collation.
/// `_id`s equal under the collation are MongoDB's E11000.
pub(super) async fn build_collated_id_index(
    session: &mut dyn StoreSession,
    coll: &CollectionRecord,
    documents: &[Document],
) -> Result<(), OpError> {
    let Some(spec) = collated_id_index_spec(&coll.options)? else {
        return Ok(());
    };
    let (entries, multikey) = index_entries(&spec, documents)?;
    match build_index(session, coll, &spec, multikey, &entries).await {
        Ok(_) => Ok(()),
        Err(StoreError::IndexKeyConflict { .. }) => Err(duplicate_while_building(
            &format!("{}.{}", coll.db, coll.name),
            &spec,
            documents,
        )),
        Err(other) => Err(other.into()),
    }
}

/// What a `createIndexes` did: indexes before and after (the `_id` index counted), and
/// whether the collection was created for it.
#[derive(Debug)]
pub struct IndexesCreated {
    pub before: usize,
    pub after: usize,
    pub created_collection: bool,
}

/// Builds each of `specs` that `db.name` does not have yet (creating the collection if
/// missing), in one transaction.
pub async fn create_indexes(
    state: &AppState,
    db: &str,
    name: &str,
    specs: &[IndexSpec],
) -> Result<IndexesCreated, OpError> {
    let namespace = format!("{db}.{name}");
    let mut transaction = Transaction::begin(state.store.as_ref(), &state.catalog).await?;
    let info = collection_for_write(&mut transaction, db, name).await?;
    let created_collection = transaction.catalog_changed();
    let before = info.index_count();
    let to_build = new_indexes(&info, specs)?;
    if before + to_build.len() > MAX_INDEXES {
        return Err(OpError::Query(crate::query::QueryError::location(
            67,
            format!(
                "add index fails, too many indexes for {namespace} key:{}",
                to_build
                    .last()
                    .map(|s| s.key_pattern().to_string())
                    .unwrap_or_default()
            ),
        )));
    }
    if !to_build.is_empty() {
        // No write may slip between this scan and the build (PostgreSQL: SHARE lock).
        transaction
            .session()
            .lock_collection_for_index_build(&info.record)
            .await?;
        let plan = ReadPlan::new(Filter::And(Vec::new()), None, 0, None, NO_INDEXES);
        let documents = read::execute(transaction.session(), &info.record, &plan).await?;
        for spec in &to_build {
            let (entries, multikey) = index_entries(spec, &documents)?;
            let built = build_index(
                transaction.session(),
                &info.record,
                spec,
                multikey,
                &entries,
            )
            .await;
            match built {
                Ok(_) => transaction.changed_catalog(),
                Err(StoreError::IndexKeyConflict { .. }) => {
                    transaction.rollback().await?;
                    return Err(duplicate_while_building(&namespace, spec, &documents));
                }
                // Built meanwhile by a concurrent createIndexes (Mongoose's `init()` beside
                // `syncIndexes()`): planned from a stale catalog, so the command runs again
                // on a fresh one (`retry`), where the index exists.
                Err(StoreError::AlreadyExists(what)) => {
                    transaction.rollback().await?;
                    return Err(
                        StoreError::StaleCatalog(format!("{what} was built meanwhile")).into(),
                    );
                }
                Err(other) => return Err(other.into()),
            }
        }
    }
    transaction.commit().await?;
    for spec in &to_build {
        super::index_usage::built(&info.record, &spec.name);
    }
    Ok(IndexesCreated {
        before,
        after: before + to_build.len(),
        created_collection,
    })
}

/// Creates `spec`'s index on `coll` filled with `entries`: a text index searched by the
/// backend's full-text engine, or an index of byte keys.
pub(super) async fn build_index(
    session: &mut dyn StoreSession,
    coll: &CollectionRecord,
    spec: &IndexSpec,
    multikey: bool,
    entries: &[(Vec<u8>, Vec<Vec<u8>>)],
) -> Result<IndexRecord, StoreError> {
    match spec.text {
        Some(_) => {
            session
                .create_text_index(coll, &spec.name, &spec.document, entries)
                .await
        }
        None => {
            session
                .create_index(
                    coll,
                    &spec.name,
                    &spec.document,
                    spec.enforces_unique(),
                    multikey,
                    entries,
                )
                .await
        }
    }
}

/// Drops the indexes of `info` at `positions`, in one transaction.
pub async fn drop_indexes(
    state: &AppState,
    info: &CollectionInfo,
    positions: &[usize],
) -> Result<(), OpError> {
    let mut transaction = Transaction::begin(state.store.as_ref(), &state.catalog).await?;
    for position in positions {
        if let Some(index) = info.indexes.get(*position) {
            transaction.session().drop_index(&index.record).await?;
            transaction.changed_catalog();
        }
    }
    transaction.commit().await
}

/// The requested specs that do not exist yet, after MongoDB's conflict checks against the
/// existing indexes and among the requested ones.
fn new_indexes(info: &CollectionInfo, specs: &[IndexSpec]) -> Result<Vec<IndexSpec>, OpError> {
    let id_index = match info.collated_id_index() {
        Some(collated) => collated.spec.clone(),
        None => IndexSpec::parse(&id_index_spec())?,
    };
    let mut to_build: Vec<IndexSpec> = Vec::new();
    let default = info.collation_for(None)?;
    'requested: for spec in specs {
        let mut spec = spec.clone();
        if spec.is_id_index() {
            let requested = spec.collation();
            if spec.collation.is_some() && requested != default {
                return Err(id_index_collation_mismatch(&requested, &default));
            }
            spec.collation = Some(default.clone());
            if let Some(full) = default.to_document() {
                spec.document.insert("collation", full);
            }
            if let Some(conflict) = spec.conflict_with(&id_index) {
                return Err(conflict.into());
            }
            continue;
        }
        spec.inherit_collation(&default);
        let spec = &spec;
        for existing in info
            .indexes
            .iter()
            .map(|index| &index.spec)
            .chain(to_build.iter())
        {
            if let Some(conflict) = spec.conflict_with(existing) {
                return Err(conflict.into());
            }
            if spec.name == existing.name {
                continue 'requested;
            }
            if spec.text.is_some() && existing.text.is_some() {
                return Err(crate::query::QueryError::location(
                    85,
                    format!(
                        "An equivalent index already exists with a different name and \
                         options. Requested index: {}, existing index: {} (a collection has \
                         at most one text index)",
                        spec.document, existing.document
                    ),
                )
                .into());
            }
        }
        to_build.push(spec.clone());
    }
    Ok(to_build)
}

/// MongoDB's BadValue for a `{_id: 1}` index requested with another collation than the
/// collection's default.
fn id_index_collation_mismatch(requested: &Collation, default: &Collation) -> OpError {
    let shown = |collation: &Collation| {
        collation
            .to_document()
            .unwrap_or_else(|| doc! {"locale": "simple"})
    };
    OpError::BadValue(format!(
        "The _id index must have the same collation as the collection. Index collation: {}, \
         collection collation: {}",
        shown(requested),
        shown(default)
    ))
}

/// MongoDB's E11000 for an index build that meets duplicates: names the first duplicated
/// key pattern value found.
fn duplicate_while_building(namespace: &str, spec: &IndexSpec, documents: &[Document]) -> OpError {
    let mut seen: std::collections::HashMap<Vec<u8>, ()> = std::collections::HashMap::new();
    for document in documents {
        let Ok(Some(entries)) = spec.entries(document) else {
            continue;
        };
        for key in entries.keys {
            if seen.insert(key, ()).is_some() {
                let entry = duplicate_index_error(0, namespace, spec, document);
                return OpError::DuplicateKey(Box::new(entry));
            }
        }
    }
    OpError::DuplicateKey(Box::new(doc! {
        "errmsg": format!("E11000 duplicate key error collection: {namespace} index: {}", spec.name),
        "keyPattern": spec.key_pattern().clone(),
    }))
}

/// An index's entries: each document's `_id` key and its keys in the index.
pub(super) type IndexEntries = Vec<(Vec<u8>, Vec<Vec<u8>>)>;

/// The entries of index `spec` for `documents` (none for a document a sparse or partial
/// index leaves out), and whether some document has several keys in it.
pub(super) fn index_entries(
    spec: &IndexSpec,
    documents: &[Document],
) -> Result<(IndexEntries, bool), OpError> {
    let mut entries = Vec::with_capacity(documents.len());
    let mut multikey = false;
    for document in documents {
        if let Some(keys) = spec.entries(document)? {
            multikey |= keys.multikey;
            let id = document.get("_id").unwrap_or(&Bson::Null);
            entries.push((encode_key(id), keys.keys));
        }
    }
    Ok((entries, multikey))
}
