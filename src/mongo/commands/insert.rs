//! `insert`: a batch of documents in one transaction and a bounded number of SQL
//! statements, with MongoDB's ordered/unordered semantics — ordered stops at the first
//! failing document (those before it stay written), unordered writes every valid document —
//! and `writeErrors` carrying the statement `index` (E11000 with `keyPattern`/`keyValue`).
//!
//! Not for: updates and upserts (see `update`).

use bson::{doc, Bson, Document};

use super::write_support::{
    collection_for_write, command_write_error, count_bson, duplicate_id_error, open_session,
    prepare_for_storage, with_write_errors,
};
use crate::mongo::dispatch::CommandContext;
use crate::mongo::error::{CommandError, CommandResult};
use crate::mongo::request::{opt_array, opt_bool, CommandRequest};
use crate::state::ServerCounters;
use crate::store::StoredDocument;

/// `insert`.
pub async fn insert(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    request.check_fields(&["documents", "ordered", "bypassDocumentValidation"])?;
    let name = request.collection()?;
    let namespace = format!("{}.{name}", request.db);
    let ordered = opt_bool(&request.body, "ordered")?.unwrap_or(true);
    let documents = opt_array(&request.body, "documents")?.ok_or_else(|| {
        CommandError::FailedToParse(
            "BSON field 'insert.documents' is missing but a required field".into(),
        )
    })?;
    if documents.is_empty() {
        return Err(CommandError::InvalidLength(
            "Write batch sizes must be between 1 and 100000. Got 0 operations.".into(),
        ));
    }
    if documents.len() > super::handshake::MAX_WRITE_BATCH_SIZE as usize {
        return Err(CommandError::InvalidLength(format!(
            "Write batch sizes must be between 1 and 100000. Got {} operations.",
            documents.len()
        )));
    }

    // Validate and encode everything first; invalid documents become write errors.
    let mut prepared: Vec<(usize, StoredDocument, Bson)> = Vec::with_capacity(documents.len());
    let mut invalid: Vec<(usize, CommandError)> = Vec::new();
    for (index, value) in documents.iter().enumerate() {
        let result = match value {
            Bson::Document(document) => prepare_for_storage(document.clone()),
            _ => Err(CommandError::TypeMismatch(
                "insert documents must be objects".into(),
            )),
        };
        match result {
            Ok((stored, id)) => prepared.push((index, stored, id)),
            Err(error) => invalid.push((index, error)),
        }
    }
    // Ordered: only the documents before the first invalid one are attempted.
    let first_invalid = invalid.first().map(|(index, _)| *index);
    if ordered {
        if let Some(stop) = first_invalid {
            prepared.retain(|(index, _, _)| *index < stop);
        }
    }

    let mut session = open_session(context).await?;
    session.begin().await?;
    let (record, created) =
        collection_for_write(context, session.as_mut(), &request.db, name).await?;
    let batch: Vec<StoredDocument> = prepared
        .iter()
        .map(|(_, stored, _)| stored.clone())
        .collect();
    let outcome = session.insert(&record, &batch, ordered).await?;
    session.commit().await?;
    if created {
        context.server.state.catalog.invalidate().await;
    }
    ServerCounters::add(&context.server.state.counters.op_insert, outcome.inserted);

    let mut errors: Vec<(usize, Document)> = outcome
        .conflicts
        .iter()
        .filter_map(|position| prepared.get(*position))
        .map(|(index, _, id)| (*index, duplicate_id_error(*index, &namespace, id)))
        .collect();
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
