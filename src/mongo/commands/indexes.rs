//! Index commands: `createIndexes`, `listIndexes`, `dropIndexes` — their arguments, which
//! indexes a `dropIndexes` names, and their replies. Builds and drops run in the core
//! (`ops::indexes`: one transaction, nothing left behind by a failed build). The `_id` index
//! always exists and cannot be dropped.
//!
//! Not for: using indexes (the planner chooses them) or expiring documents (see `ops::ttl`).

use bson::{doc, Bson};

use super::cursor_reply::{cursor_batch_size, encode_documents, first_batch_reply};
use crate::catalog::CollectionInfo;
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError, ReplyResult};
use crate::mongo::request::CommandRequest;
use crate::ops;
use crate::ops::cursors::BatchOptions;
use crate::query::IndexSpec;

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
    ops::views::check_not_view(&info.record)?;
    let mut specs = vec![ops::indexes::id_index_document(&info)];
    specs.extend(
        info.secondary_indexes()
            .map(|index| index.spec.document.clone()),
    );
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
    if requested.is_empty() {
        return Err(OpError::BadValue(
            "Must specify at least one index to create".into(),
        ));
    }
    let specs: Vec<IndexSpec> = requested
        .iter()
        .map(|value| match value {
            // MongoDB builds such an index over existing duplicates; docgate's unique
            // storage cannot hold them, so the mode is only reached through collMod.
            Bson::Document(spec) if spec.contains_key("prepareUnique") => {
                Err(OpError::NotSupported(
                    "createIndexes option 'prepareUnique' is not supported by docgate; \
                     set it with collMod"
                        .into(),
                ))
            }
            Bson::Document(spec) => Ok(IndexSpec::parse(spec)?),
            _ => Err(OpError::TypeMismatch(
                "Each element of 'indexes' must be an object".into(),
            )),
        })
        .collect::<Result<_, _>>()?;

    let built =
        ops::indexes::create_indexes(&context.server.state, &request.db, name, &specs).await?;
    let mut reply = doc! {
        "numIndexesBefore": built.before as i32,
        "numIndexesAfter": built.after as i32,
        "createdCollectionAutomatically": built.created_collection,
    };
    if built.before == built.after {
        reply.insert("note", "all indexes already exist");
    }
    Ok(reply)
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
    ops::views::check_not_view(&info.record)?;
    let before = info.index_count() as i32;
    let is_id = |value: &Bson| match value {
        Bson::String(s) => s == "_id_",
        Bson::Document(key) => key.len() == 1 && key.contains_key("_id"),
        _ => false,
    };
    let selected: Vec<usize> = match index {
        None => return Err(OpError::missing_field("dropIndexes.index")),
        Some(Bson::String(all)) if all == "*" => (0..info.indexes.len())
            .filter(|position| !info.indexes[*position].spec.is_id_index())
            .collect(),
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
        ops::indexes::drop_indexes(&context.server.state, &info, &selected).await?;
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
