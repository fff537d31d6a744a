//! `findAndModify` for every front end: one document found (`filter`, `sort`), then removed
//! or updated (upserted when nothing matches and the update says so) in one transaction, and
//! answered as it was before or, with `return_new`, after, projected when asked.
//!
//! Not for: the command's shape and its `lastErrorObject` (`mongo::commands::find_and_modify`),
//! multi-document updates (`update`).

use bson::{Bson, Document};

use super::read;
use super::transaction::OpScope;
use super::update::{apply_statement, StatementFailure, UpdateStatement};
use super::validation::DocumentValidation;
use super::write::{collection_for_write, mark_multikey};
use super::write_errors::duplicate_id_error;
use super::OpError;
use crate::query::planner::ReadPlan;
use crate::query::{
    encode_key, Collation, Filter, Projection, SortSpec, UpdateContext, UpdateSpec,
};
use crate::state::ServerCounters;

/// What happens to the document found.
pub enum Modification {
    /// It is deleted (and answered as it was).
    Remove,
    /// It is updated, or a document is inserted when none matches and `upsert` is set.
    Update {
        update: UpdateSpec,
        context: UpdateContext,
        upsert: bool,
        /// Answer the document after the update instead of before.
        return_new: bool,
        /// Whether the document written is validated (`bypassDocumentValidation`).
        validation: DocumentValidation,
    },
}

/// A parsed `findAndModify`.
pub struct FindAndModify {
    pub filter: Filter,
    pub sort: Option<SortSpec>,
    pub projection: Option<Projection>,
    pub modification: Modification,
    /// Its own collation (none: the collection's default).
    pub collation: Option<Collation>,
}

/// What a `findAndModify` did.
#[derive(Debug, Default)]
pub struct FoundAndModified {
    /// The document answered (before or after, projected), if one was found or upserted.
    pub value: Option<Document>,
    /// Documents found or upserted (0 or 1).
    pub n: i32,
    /// For updates: whether an existing document was updated.
    pub updated_existing: Option<bool>,
    /// The `_id` of an upserted document.
    pub upserted: Option<Bson>,
}

/// Runs `request` on `db.name` in one transaction.
pub async fn find_and_modify(
    scope: &mut OpScope<'_>,
    db: &str,
    name: &str,
    request: FindAndModify,
) -> Result<FoundAndModified, OpError> {
    let namespace = format!("{db}.{name}");
    let upsert = matches!(
        request.modification,
        Modification::Update { upsert: true, .. }
    );
    let state = scope.state;
    let in_transaction = scope.in_multi_document_transaction();
    let mut transaction = scope.begin().await?;
    let collection = match transaction.collection_info(db, name).await? {
        Some(collection) => collection,
        None if upsert => collection_for_write(&mut transaction, db, name).await?,
        None => return Ok(FoundAndModified::default()),
    };
    super::capped::check_transaction_write(in_transaction, Some(&collection))?;
    let FindAndModify {
        filter,
        sort,
        projection,
        modification,
        collation,
    } = request;
    let mut outcome = match modification {
        Modification::Remove => {
            let record = &collection.record;
            ServerCounters::add(&state.counters.op_delete, 1);
            let collation = collection.collation_for(collation)?;
            read::check_text_index(&filter, &collection.indexes)?;
            let plan = ReadPlan::collated(filter, sort, 0, Some(1), &collection.indexes, collation);
            super::index_usage::record(&collection, &plan);
            let found = read::execute_for_update(transaction.session(), record, &plan)
                .await?
                .into_iter()
                .next();
            if let Some(document) = &found {
                let key = encode_key(document.get("_id").unwrap_or(&Bson::Null));
                transaction.session().delete(record, &[key]).await?;
            }
            FoundAndModified {
                n: i32::from(found.is_some()),
                value: found,
                ..FoundAndModified::default()
            }
        }
        Modification::Update {
            update,
            context,
            upsert,
            return_new,
            validation,
        } => {
            ServerCounters::add(&state.counters.op_update, 1);
            let statement = UpdateStatement {
                filter,
                update,
                context,
                upsert,
                multi: false,
                sort,
                collation,
                validation,
            };
            let applied = match apply_statement(
                transaction.session(),
                &collection,
                &statement,
                &namespace,
                state.settings.documents,
            )
            .await
            {
                Ok(applied) => applied,
                Err(StatementFailure::Error(error)) => return Err(error),
                Err(StatementFailure::Store(error)) => return Err(error.into()),
                Err(StatementFailure::Duplicate { namespace, id }) => {
                    let entry = duplicate_id_error(0, &namespace, &id);
                    return Err(OpError::DuplicateKey(Box::new(entry)));
                }
                Err(StatementFailure::IndexDuplicate { entry }) => {
                    return Err(OpError::DuplicateKey(entry));
                }
            };
            mark_multikey(&mut transaction, &collection.indexes, &applied.new_multikey).await?;
            if let Some((id, inserted)) = applied.upserted {
                FoundAndModified {
                    value: return_new.then_some(inserted),
                    n: 1,
                    updated_existing: Some(false),
                    upserted: Some(id),
                }
            } else {
                let before = applied.matched.into_iter().next();
                let after = applied.updated.into_iter().next();
                let found = before.is_some();
                FoundAndModified {
                    value: if return_new { after } else { before },
                    n: i32::from(found),
                    updated_existing: Some(found),
                    upserted: None,
                }
            }
        }
    };
    transaction.commit().await?;
    if let (Some(document), Some(projection)) = (&outcome.value, &projection) {
        outcome.value = Some(projection.apply(document)?);
    }
    Ok(outcome)
}
