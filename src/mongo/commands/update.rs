//! `update`: statements of `{q, u, upsert, multi, arrayFilters}` run in one transaction.
//! Each statement reads its matches through the planner, applies the update in Rust with the
//! query core, and writes the changed documents back in one batch; a statement that fails
//! writes nothing. Ordered commands stop at the first failing statement. `n` counts matched
//! (and upserted) documents, `nModified` only those that really changed, as MongoDB does.
//!
//! Not for: findAndModify (a later capability) or SQL-level set-based updates (the planner
//! will take those over when it can express an update in SQL).

use std::collections::BTreeSet;

use bson::{doc, Bson, Document};

use super::write_reply::{count_bson, with_write_errors};
use crate::mongo::arguments::{check_statements, Arguments, FieldKind};
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::CommandRequest;
use crate::ops::update::{apply_statement, AppliedStatement, StatementFailure, UpdateStatement};
use crate::ops::validation::DocumentValidation;
use crate::ops::write::{collection_for_write, mark_multikey};
use crate::query::Filter;
use crate::query::UpdateContext;
use crate::query::UpdateSpec;
use crate::query::{parse_with_variables, QueryError};
use crate::state::ServerCounters;

/// Parses an update given as a document (replacement or operators) or a pipeline.
pub(crate) fn parse_update(value: Option<&Bson>, field: &str) -> Result<UpdateSpec, OpError> {
    match value {
        Some(Bson::Document(update)) => Ok(UpdateSpec::parse(update)?),
        Some(Bson::Array(stages)) => {
            let stages: Vec<Document> = stages
                .iter()
                .map(|stage| match stage {
                    Bson::Document(stage) => Ok(stage.clone()),
                    _ => Err(OpError::FailedToParse(
                        "Each element of an update pipeline must be an object".into(),
                    )),
                })
                .collect::<Result<_, _>>()?;
            Ok(UpdateSpec::parse_pipeline(&stages)?)
        }
        Some(_) => Err(OpError::FailedToParse(format!(
            "BSON field '{field}' must be an object or an array"
        ))),
        None => Err(OpError::missing_field(field)),
    }
}

/// Parses `arrayFilters` into the update context.
pub(super) fn parse_array_filters(filters: Option<&Vec<Bson>>) -> Result<UpdateContext, OpError> {
    let Some(filters) = filters else {
        return Ok(UpdateContext::default());
    };
    let filters: Vec<Document> = filters
        .iter()
        .map(|f| match f {
            Bson::Document(f) => Ok(f.clone()),
            _ => Err(OpError::TypeMismatch(
                "arrayFilters entries must be objects".into(),
            )),
        })
        .collect::<Result<_, _>>()?;
    Ok(UpdateContext::with_array_filters(&filters)?)
}

/// Parses one statement with the command's `let` variables in scope of its filter and
/// update; the statement's own constants `c` apply to its update pipeline only.
pub(super) fn parse_statement(
    value: &Bson,
    variables: &[(String, Bson)],
    validation: DocumentValidation,
) -> Result<UpdateStatement, OpError> {
    let Bson::Document(statement) = value else {
        return Err(OpError::TypeMismatch(
            "update statements must be objects".into(),
        ));
    };
    let mut arguments = Arguments::new("UpdateOpEntry", statement);
    let collation = arguments.collation()?;
    let constants = arguments.value("c").is_some();
    let mut in_scope = variables.to_vec();
    in_scope.extend(arguments.variables("c")?);
    let filter = parse_with_variables(variables, || {
        Filter::parse(arguments.document("q")?.unwrap_or(&Document::new())).map_err(OpError::from)
    })?;
    let update = parse_with_variables(&in_scope, || {
        parse_update(arguments.value("u"), "update.updates.u")
    })?;
    if constants && !matches!(update, UpdateSpec::Pipeline(_)) {
        return Err(QueryError::location(
            51198,
            "Constant values may only be specified for pipeline updates",
        )
        .into());
    }
    let multi = arguments.bool("multi")?.unwrap_or(false);
    let upsert = arguments.bool("upsert")?.unwrap_or(false);
    let context = parse_array_filters(arguments.array("arrayFilters")?)?;
    // MongoDB uses a statement's hint to pick an index; docgate's planner picks its own,
    // which never changes which documents match.
    arguments.without_effect("hint");
    // A statement's `sort` (updateOne/replaceOne with sort) is MongoDB 8.0's; docgate
    // answers as 7.0, which does not know the field, so it is not taken and `finish` refuses
    // it as 7.0 does.
    arguments.finish()?;
    if multi && matches!(update, UpdateSpec::Replacement(_)) {
        return Err(OpError::FailedToParse(
            "multi update is not supported for replacement-style update".into(),
        ));
    }
    Ok(UpdateStatement {
        filter,
        update,
        context,
        upsert,
        multi,
        sort: None,
        collation,
        validation,
    })
}

/// `update`.
pub async fn update(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let mut arguments = request.arguments();
    let ordered = arguments.bool("ordered")?.unwrap_or(true);
    let variables = arguments.variables("let")?;
    let statements = arguments
        .array("updates")?
        .ok_or_else(|| OpError::missing_field("update.updates"))?;
    // Its privilege is checked before the command runs (`auth::authorize`).
    let validation = DocumentValidation::from_bypass_flag(
        arguments.bool("bypassDocumentValidation")?.unwrap_or(false),
    );
    arguments.finish()?;
    let name = request.collection()?;
    let namespace = format!("{}.{name}", request.db);
    if statements.is_empty()
        || statements.len() > crate::mongo::limits::MAX_WRITE_BATCH_SIZE as usize
    {
        return Err(OpError::InvalidLength(format!(
            "Write batch sizes must be between 1 and 100000. Got {} operations.",
            statements.len()
        )));
    }

    check_statements(
        "update.updates",
        statements,
        &[
            ("q", FieldKind::Object),
            ("u", FieldKind::Any),
            ("c", FieldKind::Object),
            ("upsert", FieldKind::Bool),
            ("multi", FieldKind::Bool),
            ("collation", FieldKind::Object),
            ("arrayFilters", FieldKind::Array),
            ("hint", FieldKind::Any),
        ],
    )?;

    let documents = context.server.state.settings.documents;
    let mut scope = context.scope();
    let in_transaction = scope.in_multi_document_transaction();
    let mut transaction = scope.begin().await?;
    let mut collection = transaction.collection_info(&request.db, name).await?;
    crate::ops::capped::check_transaction_write(in_transaction, collection.as_deref())?;
    let mut new_multikey: BTreeSet<usize> = BTreeSet::new();
    let (mut matched, mut modified) = (0u64, 0u64);
    let mut upserted: Vec<Bson> = Vec::new();
    let mut errors: Vec<Document> = Vec::new();

    for (index, value) in statements.iter().enumerate() {
        let result = match parse_statement(value, &variables, validation) {
            Ok(statement) => {
                if statement.upsert && collection.is_none() {
                    collection =
                        Some(collection_for_write(&mut transaction, &request.db, name).await?);
                }
                match &collection {
                    Some(collection) => {
                        apply_statement(
                            transaction.session(),
                            collection,
                            &statement,
                            &namespace,
                            documents,
                        )
                        .await
                    }
                    None => Ok(AppliedStatement::default()),
                }
            }
            Err(error) => Err(StatementFailure::Error(error)),
        };
        match result {
            Ok(outcome) => {
                matched += outcome.matched.len() as u64;
                modified += outcome.modified;
                new_multikey.extend(outcome.new_multikey);
                if let Some((id, _)) = outcome.upserted {
                    matched += 1;
                    upserted.push(Bson::Document(doc! {"index": index as i32, "_id": id}));
                }
            }
            Err(StatementFailure::Store(error)) => return Err(error.into()),
            Err(failure) => {
                errors.push(failure.into_write_error(index));
                if ordered {
                    break;
                }
            }
        }
    }
    let indexes = collection
        .as_ref()
        .map_or(&[][..], |c| c.indexes.as_slice());
    mark_multikey(&mut transaction, indexes, &new_multikey).await?;
    transaction.commit().await?;
    ServerCounters::add(
        &context.server.state.counters.op_update,
        statements.len() as u64,
    );

    let mut reply = doc! {"n": count_bson(matched), "nModified": count_bson(modified)};
    if !upserted.is_empty() {
        reply.insert("upserted", upserted);
    }
    Ok(with_write_errors(reply, errors))
}
