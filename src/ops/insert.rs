//! Inserting a batch of documents, for every front end: each document made ready to store,
//! then one transaction and a bounded number of SQL statements, with MongoDB's ordered and
//! unordered semantics — ordered stops at the first failing document (those before it stay
//! written), unordered writes every valid document — or, for REST, all or nothing.
//! Failures are `writeErrors` entries carrying the statement `index` (E11000 with
//! `keyPattern`/`keyValue`).
//!
//! Not for: updates and upserts (`update`), or how a front end reports the outcome.

use std::collections::BTreeSet;

use bson::{Bson, Document};

use super::capped::{self, CappedLimits};
use super::prepare::{prepare_for_storage, PreparedDocument};
use super::transaction::OpScope;
use super::validation::{DocumentValidation, ValidationCheck};
use super::write::{collection_for_write, mark_multikey};
use super::write_errors::{command_write_error, duplicate_id_error, duplicate_index_error};
use super::OpError;
use crate::state::ServerCounters;
use crate::store::StoredDocument;

/// What happens to the rest of a batch when one document fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertMode {
    /// Stop at the first failure; the documents before it stay written (MongoDB's default).
    Ordered,
    /// Write every document that can be written.
    Unordered,
    /// Write all or nothing: the first failure is the operation's error.
    AllOrNothing,
}

/// What an insert did.
#[derive(Debug)]
pub struct InsertOutcome {
    /// Documents written.
    pub inserted: u64,
    /// The `_id` of every document of the batch that was made ready to store, in batch
    /// order (with `AllOrNothing`, of every document: all were written).
    pub ids: Vec<Bson>,
    /// `writeErrors` entries of the documents that failed, by batch index.
    pub write_errors: Vec<Document>,
}

/// Inserts `documents` into `db.name`, created if missing as MongoDB's `insert` does. A
/// batch item that is not a document fails as MongoDB's `insert` fails it, and so does one
/// the collection's validator refuses (unless `validation` bypasses it).
pub async fn insert(
    scope: &mut OpScope<'_>,
    db: &str,
    name: &str,
    documents: Vec<Bson>,
    mode: InsertMode,
    validation: DocumentValidation,
) -> Result<InsertOutcome, OpError> {
    let namespace = format!("{db}.{name}");
    // The indexes the catalog knows decide the keys each document contributes; a write
    // planned from a stale list is caught by the store and retried (`retry`).
    let state = scope.state;
    let known = scope.collection_info(db, name).await?;
    let indexes = known
        .as_ref()
        .map_or(&[][..], |info| info.indexes.as_slice());
    let check = ValidationCheck::new_document(known.as_deref(), validation);
    let capped = known
        .as_ref()
        .and_then(|info| CappedLimits::of(&info.record));
    capped::check_transaction_write(scope.in_multi_document_transaction(), known.as_deref())?;

    // Validate and encode everything first; invalid documents become write errors.
    let mut prepared: Vec<(usize, PreparedDocument)> = Vec::with_capacity(documents.len());
    let mut invalid: Vec<(usize, OpError)> = Vec::new();
    for (index, value) in documents.into_iter().enumerate() {
        let result = match value {
            Bson::Document(document) => {
                prepare_for_storage(document, indexes, state.settings.documents, &check).and_then(
                    |prepared| match &capped {
                        Some(limits) => capped::check_fits(limits, prepared.stored.bson.len())
                            .map(|()| prepared),
                        None => Ok(prepared),
                    },
                )
            }
            _ => Err(OpError::TypeMismatch(
                "insert documents must be objects".into(),
            )),
        };
        match result {
            Ok(document) => prepared.push((index, document)),
            Err(error) if mode == InsertMode::AllOrNothing => return Err(error),
            Err(error) => invalid.push((index, error)),
        }
    }
    // Ordered: only the documents before the first invalid one are attempted.
    if mode == InsertMode::Ordered {
        if let Some(&(stop, _)) = invalid.first() {
            prepared.retain(|(index, _)| *index < stop);
        }
    }

    let mut transaction = scope.begin().await?;
    let info = collection_for_write(&mut transaction, db, name).await?;
    // The limits as this transaction sees the collection (the catalog read before may be
    // stale; a capped collection is never created implicitly).
    let capped = CappedLimits::of(&info.record);
    if capped.is_some() {
        capped::before_insert(transaction.session(), &info.record).await?;
    }
    let batch: Vec<StoredDocument> = prepared.iter().map(|(_, p)| p.stored.clone()).collect();
    let outcome = transaction
        .session()
        .insert(&info.record, &batch, mode != InsertMode::Unordered)
        .await?;
    if let Some(limits) = &capped {
        capped::make_room(transaction.session(), &info.record, limits).await?;
    }

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
                let original = super::read::decode_document(&document.stored.bson)?;
                duplicate_index_error(*index, &namespace, &spec.spec, &original)
            }
            None => duplicate_id_error(*index, &namespace, &document.id),
        };
        errors.push((*index, entry));
    }
    if mode == InsertMode::AllOrNothing && !errors.is_empty() {
        let (_, entry) = errors.swap_remove(0);
        transaction.rollback().await?;
        return Err(OpError::DuplicateKey(Box::new(entry)));
    }
    let new_multikey: BTreeSet<usize> = prepared
        .iter()
        .flat_map(|(_, p)| p.new_multikey.iter().copied())
        .collect();
    mark_multikey(&mut transaction, &info.indexes, &new_multikey).await?;
    transaction.commit().await?;
    ServerCounters::add(&state.counters.op_insert, outcome.inserted);
    if capped.is_some() && outcome.inserted > 0 {
        scope.announce_capped_insert(&info.record.uuid);
    }

    // An ordered batch that stopped at a conflict never reached a later invalid document.
    let stopped_by_conflict = mode == InsertMode::Ordered && !errors.is_empty();
    if !stopped_by_conflict {
        let reported = if mode == InsertMode::Ordered {
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
    Ok(InsertOutcome {
        inserted: outcome.inserted,
        ids: prepared.into_iter().map(|(_, p)| p.id).collect(),
        write_errors: errors.into_iter().map(|(_, entry)| entry).collect(),
    })
}
