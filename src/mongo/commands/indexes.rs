//! Index commands: `createIndexes`, `listIndexes`, `dropIndexes`.
//!
//! An index is built in the same transaction that records it: every existing document's
//! keys are computed by the query core (`IndexSpec::entries`) and handed to the store, which
//! fills the index's entries table and enforces uniqueness. A failed build (duplicate key,
//! parallel arrays) leaves nothing behind. The `_id` index always exists and cannot be
//! dropped.
//!
//! Not for: using indexes (the planner chooses them) or expiring documents (see `ops::ttl`).

use bson::{doc, Bson, Document};

use super::cursor_reply::{cursor_batch_size, encode_documents, first_batch_reply};
use crate::catalog::{CollectionInfo, NO_INDEXES};
use crate::mongo::context::CommandContext;
use crate::mongo::cursors::BatchOptions;
use crate::mongo::error::{CommandResult, OpError, ReplyResult};
use crate::mongo::request::CommandRequest;
use crate::ops::read;
use crate::ops::transaction::Transaction;
use crate::ops::write::collection_for_write;
use crate::query::encode_key;
use crate::query::planner::ReadPlan;
use crate::query::Filter;
use crate::query::IndexSpec;
use crate::store::StoreError;

/// Most indexes a collection may have, the `_id` index included (MongoDB's limit).
const MAX_INDEXES: usize = 64;

/// The `_id` index every collection has.
pub fn id_index_spec() -> Document {
    doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"}
}

/// `listIndexes`: the `_id` index, then the secondary indexes as created.
pub async fn list_indexes(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> ReplyResult {
    let mut arguments = request.arguments();
    let batch_size = cursor_batch_size(arguments.document("cursor")?)?;
    arguments.finish()?;
    let name = request.collection()?;
    let Some(info) = context
        .catalog()
        .fresh_snapshot()
        .await?
        .info(&request.db, name)
        .cloned()
    else {
        return Err(OpError::NamespaceNotFound(format!(
            "ns does not exist: {}.{name}",
            request.db
        )));
    };
    let mut specs = vec![id_index_spec()];
    specs.extend(info.indexes.iter().map(|index| index.spec.document.clone()));
    let namespace = format!("{}.{name}", request.db);
    first_batch_reply(
        context,
        request,
        &namespace,
        encode_documents(&specs)?,
        BatchOptions {
            batch_size,
            ..BatchOptions::default()
        },
    )
}

/// `createIndexes`: builds each requested index that does not exist yet.
pub async fn create_indexes(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let mut arguments = request.arguments();
    let requested = arguments
        .array("indexes")?
        .ok_or_else(|| OpError::missing_field("createIndexes.indexes"))?;
    // One member is every quorum: the build is committed when the command answers.
    arguments.without_effect("commitQuorum");
    for unsupported in ["ignoreUnknownIndexOptions", "isTimeseriesNamespace"] {
        if arguments.bool(unsupported)?.unwrap_or(false) {
            return Err(OpError::NotSupported(format!(
                "createIndexes option '{unsupported}' is not supported by docgate"
            )));
        }
    }
    arguments.finish()?;
    let name = request.collection()?;
    let namespace = format!("{}.{name}", request.db);
    if requested.is_empty() {
        return Err(OpError::BadValue(
            "Must specify at least one index to create".into(),
        ));
    }
    let specs: Vec<IndexSpec> = requested
        .iter()
        .map(|value| match value {
            Bson::Document(spec) => Ok(IndexSpec::parse(spec)?),
            _ => Err(OpError::TypeMismatch(
                "Each element of 'indexes' must be an object".into(),
            )),
        })
        .collect::<Result<_, _>>()?;

    let state = &context.server.state;
    let mut transaction = Transaction::begin(state.store.as_ref(), &state.catalog).await?;
    let info = collection_for_write(&mut transaction, &request.db, name).await?;
    let created_collection = transaction.catalog_changed();
    let before = info.indexes.len() + 1;
    let to_build = new_indexes(&info, &specs)?;
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
            let mut entries = Vec::with_capacity(documents.len());
            let mut multikey = false;
            for document in &documents {
                if let Some(keys) = spec.entries(document)? {
                    multikey |= keys.multikey;
                    let id = document.get("_id").unwrap_or(&Bson::Null);
                    entries.push((encode_key(id), keys.keys));
                }
            }
            let built = transaction
                .session()
                .create_index(
                    &info.record,
                    &spec.name,
                    &spec.document,
                    spec.unique,
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
                Err(other) => return Err(other.into()),
            }
        }
    }
    transaction.commit().await?;
    let after = before + to_build.len();
    let mut reply = doc! {
        "numIndexesBefore": before as i32,
        "numIndexesAfter": after as i32,
        "createdCollectionAutomatically": created_collection,
    };
    if to_build.is_empty() {
        reply.insert("note", "all indexes already exist");
    }
    Ok(reply)
}

/// The requested specs that do not exist yet, after MongoDB's conflict checks against the
/// existing indexes and among the requested ones.
fn new_indexes(info: &CollectionInfo, specs: &[IndexSpec]) -> Result<Vec<IndexSpec>, OpError> {
    let id_index = IndexSpec::parse(&id_index_spec())?;
    let mut to_build: Vec<IndexSpec> = Vec::new();
    'requested: for spec in specs {
        if spec.is_id_index() {
            if let Some(conflict) = spec.conflict_with(&id_index) {
                return Err(conflict.into());
            }
            continue;
        }
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
        }
        to_build.push(spec.clone());
    }
    Ok(to_build)
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
                let entry =
                    crate::ops::write_errors::duplicate_index_error(0, namespace, spec, document);
                return OpError::DuplicateKey(Box::new(entry));
            }
        }
    }
    OpError::DuplicateKey(Box::new(doc! {
        "errmsg": format!("E11000 duplicate key error collection: {namespace} index: {}", spec.name),
        "keyPattern": spec.key_pattern().clone(),
    }))
}

/// `dropIndexes`: by name, by key pattern, a list of names, or `"*"` (all but `_id_`).
pub async fn drop_indexes(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let mut arguments = request.arguments();
    let index = arguments.value("index");
    arguments.finish()?;
    let name = request.collection()?;
    let Some(info) = context.collection_info(&request.db, name).await? else {
        return Err(OpError::NamespaceNotFound(format!(
            "ns not found {}.{name}",
            request.db
        )));
    };
    let before = (info.indexes.len() + 1) as i32;
    let is_id = |value: &Bson| match value {
        Bson::String(s) => s == "_id_",
        Bson::Document(key) => key.len() == 1 && key.contains_key("_id"),
        _ => false,
    };
    let selected: Vec<usize> = match index {
        None => return Err(OpError::missing_field("dropIndexes.index")),
        Some(Bson::String(all)) if all == "*" => (0..info.indexes.len()).collect(),
        Some(value) if is_id(value) => {
            return Err(OpError::InvalidOptions("cannot drop _id index".into()))
        }
        Some(Bson::String(index_name)) => vec![find_by_name(&info, index_name)?],
        Some(Bson::Array(names)) => {
            let mut positions = Vec::new();
            for value in names {
                match value {
                    Bson::String(n) if n == "_id_" => {
                        return Err(OpError::InvalidOptions("cannot drop _id index".into()))
                    }
                    Bson::String(n) => positions.push(find_by_name(&info, n)?),
                    _ => {
                        return Err(OpError::TypeMismatch(
                            "dropIndexes names must be strings".into(),
                        ))
                    }
                }
            }
            positions
        }
        Some(Bson::Document(key)) => {
            let matching: Vec<usize> = info
                .indexes
                .iter()
                .enumerate()
                .filter(|(_, index)| index.spec.key_pattern() == key)
                .map(|(position, _)| position)
                .collect();
            match matching.as_slice() {
                [one] => vec![*one],
                [] => {
                    return Err(index_not_found(&format!(
                        "can't find index with key: {key}"
                    )))
                }
                _ => {
                    return Err(OpError::Query(crate::query::QueryError {
                        code: 86,
                        code_name: "IndexKeySpecsConflict",
                        message: format!(
                            "{} indexes found for key: {key}, identify by name instead.",
                            matching.len()
                        ),
                    }))
                }
            }
        }
        Some(_) => {
            return Err(OpError::TypeMismatch(
                "dropIndexes 'index' must be a string, an array of strings or a document".into(),
            ))
        }
    };
    if !selected.is_empty() {
        let state = &context.server.state;
        let mut transaction = Transaction::begin(state.store.as_ref(), &state.catalog).await?;
        for position in &selected {
            if let Some(index) = info.indexes.get(*position) {
                transaction.session().drop_index(&index.record).await?;
                transaction.changed_catalog();
            }
        }
        transaction.commit().await?;
    }
    Ok(doc! {"nIndexesWas": before})
}

fn find_by_name(info: &CollectionInfo, name: &str) -> Result<usize, OpError> {
    info.indexes
        .iter()
        .position(|index| index.record.name == name)
        .ok_or_else(|| index_not_found(&format!("index not found with name [{name}]")))
}

fn index_not_found(message: &str) -> OpError {
    OpError::Query(crate::query::QueryError {
        code: 27,
        code_name: "IndexNotFound",
        message: message.to_string(),
    })
}
