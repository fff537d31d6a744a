//! `insert`: a batch of documents in one transaction and a bounded number of SQL
//! statements, with MongoDB's ordered/unordered semantics — ordered stops at the first
//! failing document (those before it stay written), unordered writes every valid document —
//! and `writeErrors` carrying the statement `index` (E11000 with `keyPattern`/`keyValue`).
//!
//! Not for: updates and upserts (see `update`).

use bson::{doc, Bson, Document};

use super::write_support::{count_bson, open_session, with_write_errors};
use crate::mongo::dispatch::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::{opt_array, opt_bool, CommandRequest};
use crate::ops::prepare::{prepare_for_storage, PreparedDocument};
use crate::ops::write::{collection_for_write, mark_multikey};
use crate::ops::write_errors::{command_write_error, duplicate_id_error, duplicate_index_error};
use crate::query::planner;
use crate::state::ServerCounters;
use crate::store::StoredDocument;
use std::collections::BTreeSet;

/// `insert`.
pub async fn insert(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    request.check_fields(&["documents", "ordered", "bypassDocumentValidation"])?;
    let name = request.collection()?;
    let namespace = format!("{}.{name}", request.db);
    let ordered = opt_bool(&request.body, "ordered")?.unwrap_or(true);
    let documents = opt_array(&request.body, "documents")?
        .ok_or_else(|| OpError::missing_field("insert.documents"))?;
    if documents.is_empty() {
        return Err(OpError::InvalidLength(
            "Write batch sizes must be between 1 and 100000. Got 0 operations.".into(),
        ));
    }
    if documents.len() > super::handshake::MAX_WRITE_BATCH_SIZE as usize {
        return Err(OpError::InvalidLength(format!(
            "Write batch sizes must be between 1 and 100000. Got {} operations.",
            documents.len()
        )));
    }

    // The collection's indexes decide the keys each document contributes.
    let existing = context.collection_info(&request.db, name).await?;
    let indexes = existing
        .as_ref()
        .map_or(&[][..], |info| info.indexes.as_slice());

    // Validate and encode everything first; invalid documents become write errors.
    let mut prepared: Vec<(usize, PreparedDocument)> = Vec::with_capacity(documents.len());
    let mut invalid: Vec<(usize, OpError)> = Vec::new();
    for (index, value) in documents.iter().enumerate() {
        let result = match value {
            Bson::Document(document) => prepare_for_storage(document.clone(), indexes),
            _ => Err(OpError::TypeMismatch(
                "insert documents must be objects".into(),
            )),
        };
        match result {
            Ok(document) => prepared.push((index, document)),
            Err(error) => invalid.push((index, error)),
        }
    }
    // Ordered: only the documents before the first invalid one are attempted.
    let first_invalid = invalid.first().map(|(index, _)| *index);
    if ordered {
        if let Some(stop) = first_invalid {
            prepared.retain(|(index, _)| *index < stop);
        }
    }

    let mut session = open_session(context).await?;
    session.begin().await?;
    let (info, created) =
        collection_for_write(context.catalog(), session.as_mut(), &request.db, name).await?;
    let batch: Vec<StoredDocument> = prepared.iter().map(|(_, p)| p.stored.clone()).collect();
    let outcome = session.insert(&info.record, &batch, ordered).await?;
    let new_multikey: BTreeSet<usize> = prepared
        .iter()
        .flat_map(|(_, p)| p.new_multikey.iter().copied())
        .collect();
    let marked = mark_multikey(session.as_mut(), &info.indexes, &new_multikey).await?;
    session.commit().await?;
    if created || marked {
        context.catalog().invalidate().await;
    }
    ServerCounters::add(&context.server.state.counters.op_insert, outcome.inserted);

    let mut errors: Vec<(usize, Document)> = Vec::new();
    for position in &outcome.conflicts {
        let Some((index, document)) = prepared.get(*position) else {
            continue;
        };
        let by_index = outcome.index_conflicts.iter().find(|(p, _)| p == position);
        let spec =
            by_index.and_then(|(_, name)| info.indexes.iter().find(|i| &i.record.name == name));
        let entry = match spec {
            Some(spec) => {
                let original = planner::decode_document(&document.stored.bson)?;
                duplicate_index_error(*index, &namespace, &spec.spec, &original)
            }
            None => duplicate_id_error(*index, &namespace, &document.id),
        };
        errors.push((*index, entry));
    }
    let stopped_by_conflict = ordered && !errors.is_empty();
    if !stopped_by_conflict {
        let reported = if ordered {
            invalid.into_iter().take(1).collect::<Vec<_>>()
        } else {
            invalid
        };
        errors.extend(
            reported
                .iter()
                .map(|(index, error)| (*index, command_write_error(*index, error))),
        );
    }
    errors.sort_by_key(|(index, _)| *index);
    Ok(with_write_errors(
        doc! {"n": count_bson(outcome.inserted)},
        errors.into_iter().map(|(_, e)| e).collect(),
    ))
}
