//! `findAndModify`: its arguments (`query`, `sort`, `remove` or `update`, `new`, `upsert`,
//! `fields`, `arrayFilters`) and its reply, `value` and a `lastErrorObject` with `n`,
//! `updatedExisting` and `upserted` as MongoDB reports them. The operation itself runs in the
//! core (`ops::find_and_modify`, one transaction).
//!
//! Not for: multi-document updates (see `update`).

use bson::{doc, Bson, Document};

use super::update::{parse_array_filters, parse_update};
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::CommandRequest;
use crate::ops::find_and_modify::{self, FindAndModify, Modification};
use crate::ops::validation::DocumentValidation;
use crate::query::{parse_with_variables, Filter, Projection, SortSpec};

/// `findAndModify` (also spelled `findandmodify`).
pub async fn find_and_modify(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let mut arguments = request.arguments();
    let collation = arguments.collation()?;
    let variables = arguments.variables("let")?;
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
    // changes which document is found (the sort decides).
    arguments.without_effect("hint");
    // Its privilege is checked before the command runs (`auth::authorize`).
    let validation = DocumentValidation::from_bypass_flag(
        arguments.bool("bypassDocumentValidation")?.unwrap_or(false),
    );
    arguments.finish()?;
    let name = request.collection()?;
    let db = request.db.as_str();
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
    let sort = sort.map(SortSpec::parse).transpose()?;
    // The `let` variables are in scope of the query, the update and the projection.
    let (filter, projection, update) = parse_with_variables(&variables, || {
        let filter = Filter::parse(query.unwrap_or(&Document::new()))?;
        let projection = fields
            .filter(|f| !f.is_empty())
            .map(Projection::parse)
            .transpose()?;
        let update = update
            .map(|update| parse_update(Some(update), "findAndModify.update"))
            .transpose()?;
        Ok::<_, OpError>((filter, projection, update))
    })?;
    let modification = match update {
        None => Modification::Remove,
        Some(update) => Modification::Update {
            update,
            context: parse_array_filters(array_filters)?,
            upsert,
            return_new,
            validation,
        },
    };
    let request = FindAndModify {
        filter,
        sort,
        projection,
        modification,
        collation,
    };
    let outcome = find_and_modify::find_and_modify(&mut context.scope(), db, name, request).await?;
    let mut last_error = doc! {"n": outcome.n};
    if let Some(updated_existing) = outcome.updated_existing {
        last_error.insert("updatedExisting", updated_existing);
    }
    if let Some(id) = outcome.upserted {
        last_error.insert("upserted", id);
    }
    let value = outcome.value.map_or(Bson::Null, Bson::Document);
    Ok(doc! {"lastErrorObject": last_error, "value": value})
}
