//! `findAndModify`: finds one document (`query`, `sort`), updates or removes it in one
//! transaction, and returns it as it was before or, with `new`, after; `upsert` inserts when
//! nothing matches; `fields` projects the returned document; `lastErrorObject` reports
//! `n`, `updatedExisting` and `upserted` as MongoDB does.
//!
//! Not for: multi-document updates (see `update`).

use bson::{doc, Bson, Document};

use super::update::{parse_array_filters, parse_update};
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::CommandRequest;
use crate::ops::read;
use crate::ops::transaction::Transaction;
use crate::ops::update::{apply_statement, StatementFailure, UpdateStatement};
use crate::ops::write::{collection_for_write, mark_multikey};
use crate::ops::write_errors::duplicate_id_error;
use crate::query::encode_key;
use crate::query::planner::ReadPlan;
use crate::query::Filter;
use crate::query::Projection;
use crate::query::SortSpec;
use crate::state::ServerCounters;

/// `findAndModify` (also spelled `findandmodify`).
pub async fn find_and_modify(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let mut arguments = request.arguments();
    arguments.simple_collation()?;
    arguments.no_variables("let")?;
    let remove = arguments.bool("remove")?.unwrap_or(false);
    let return_new = arguments.bool("new")?.unwrap_or(false);
    let upsert = arguments.bool("upsert")?.unwrap_or(false);
    let update = arguments
        .value("update")
        .filter(|u| !matches!(u, Bson::Null));
    let has_update = update.is_some();
    let query = arguments.document("query")?;
    let sort = arguments.document("sort")?;
    let fields = arguments.document("fields")?;
    let array_filters = arguments.array("arrayFilters")?;
    // MongoDB uses the hint to pick an index; docgate's planner picks its own, which never
    // changes which document is found (the sort decides). No collection has a validator to
    // bypass (`validator` is refused by `create`).
    arguments.without_effect("hint");
    arguments.without_effect("bypassDocumentValidation");
    arguments.finish()?;
    let name = request.collection()?;
    let namespace = format!("{}.{name}", request.db);
    match (remove, has_update) {
        (true, true) => {
            return Err(OpError::FailedToParse("Cannot specify both an update and remove=true".into()))
        }
        (false, false) => {
            return Err(OpError::FailedToParse("Either an update or remove=true must be specified".into()))
        }
        (true, false) if return_new => {
            return Err(OpError::FailedToParse(
                "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document".into(),
            ))
        }
        (true, false) if upsert => {
            return Err(OpError::FailedToParse("Cannot specify both upsert=true and remove=true".into()))
        }
        _ => {}
    }
    let filter = Filter::parse(query.unwrap_or(&Document::new()))?;
    let sort = sort.map(SortSpec::parse).transpose()?;
    let projection = fields
        .filter(|f| !f.is_empty())
        .map(Projection::parse)
        .transpose()?;

    let state = &context.server.state;
    let mut transaction = Transaction::begin(state.store.as_ref(), &state.catalog).await?;
    let collection = match state
        .catalog
        .collection_info_in(transaction.session(), &request.db, name)
        .await?
    {
        Some(collection) => Some(collection),
        None if upsert => Some(collection_for_write(&mut transaction, &request.db, name).await?),
        None => None,
    };
    let (value, last_error) = match &collection {
        None => (None, doc! {"n": 0}),
        Some(collection) if remove => {
            let record = &collection.record;
            ServerCounters::add(&context.server.state.counters.op_delete, 1);
            let plan = ReadPlan::new(filter, sort, 0, Some(1), &collection.indexes);
            let found = read::execute_for_update(transaction.session(), record, &plan)
                .await?
                .into_iter()
                .next();
            match found {
                Some(document) => {
                    let key = encode_key(document.get("_id").unwrap_or(&Bson::Null));
                    transaction.session().delete(record, &[key]).await?;
                    (Some(document), doc! {"n": 1})
                }
                None => (None, doc! {"n": 0}),
            }
        }
        Some(collection) => {
            ServerCounters::add(&context.server.state.counters.op_update, 1);
            let statement = UpdateStatement {
                filter,
                update: parse_update(update, "findAndModify.update")?,
                context: parse_array_filters(array_filters)?,
                upsert,
                multi: false,
                sort,
            };
            let applied =
                match apply_statement(transaction.session(), collection, &statement, &namespace)
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
                (
                    return_new.then_some(inserted),
                    doc! {"n": 1, "updatedExisting": false, "upserted": id},
                )
            } else {
                let before = applied.matched.into_iter().next();
                let after = applied.updated.into_iter().next();
                let n = i32::from(before.is_some());
                let value = if return_new { after } else { before };
                (value, doc! {"n": n, "updatedExisting": n == 1})
            }
        }
    };
    transaction.commit().await?;
    let value = match (value, &projection) {
        (Some(document), Some(projection)) => Bson::Document(projection.apply(&document)?),
        (Some(document), None) => Bson::Document(document),
        (None, _) => Bson::Null,
    };
    Ok(doc! {"lastErrorObject": last_error, "value": value})
}
