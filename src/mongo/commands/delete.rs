//! `delete`: statements of `{q, limit}` (limit 0 = all matches, 1 = the first) run in one
//! transaction; each statement reads its matches through the planner and deletes them by
//! `_id` key in one batch. Ordered commands stop at the first failing statement.
//!
//! Not for: findAndModify's remove (a later capability).

use bson::{doc, Bson, Document};

use super::write_reply::{count_bson, with_write_errors};
use crate::mongo::arguments::{check_statements, Arguments, FieldKind};
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::CommandRequest;
use crate::ops::delete::{run_statement, DeleteStatement};
use crate::ops::write_errors::command_write_error;
use crate::query::{parse_with_variables, Filter};
use crate::state::ServerCounters;

/// Parses one statement, with the command's `let` variables in scope of its filter.
pub(super) fn parse_statement(
    value: &Bson,
    variables: &[(String, Bson)],
) -> Result<DeleteStatement, OpError> {
    let Bson::Document(statement) = value else {
        return Err(OpError::TypeMismatch(
            "delete statements must be objects".into(),
        ));
    };
    let mut arguments = Arguments::new("DeleteOpEntry", statement);
    let collation = arguments.collation()?;
    let filter = arguments.document("q")?;
    let limit = arguments.i64("limit")?;
    // MongoDB uses a statement's hint to pick an index; docgate's planner picks its own,
    // which never changes which documents match.
    arguments.without_effect("hint");
    arguments.finish()?;
    let filter = filter.ok_or_else(|| OpError::missing_field("delete.deletes.q"))?;
    let filter = parse_with_variables(variables, || Filter::parse(filter))?;
    let just_one = match limit {
        Some(0) => false,
        Some(1) => true,
        Some(other) => {
            return Err(OpError::FailedToParse(format!(
                "The limit field in delete objects must be 0 or 1. Got {other}"
            )))
        }
        None => return Err(OpError::missing_field("delete.deletes.limit")),
    };
    Ok(DeleteStatement {
        filter,
        just_one,
        collation,
    })
}

/// `delete`.
pub async fn delete(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let mut arguments = request.arguments();
    let ordered = arguments.bool("ordered")?.unwrap_or(true);
    let variables = arguments.variables("let")?;
    let statements = arguments
        .array("deletes")?
        .ok_or_else(|| OpError::missing_field("delete.deletes"))?;
    arguments.finish()?;
    let name = request.collection()?;
    if statements.is_empty()
        || statements.len() > crate::mongo::limits::MAX_WRITE_BATCH_SIZE as usize
    {
        return Err(OpError::InvalidLength(format!(
            "Write batch sizes must be between 1 and 100000. Got {} operations.",
            statements.len()
        )));
    }
    check_statements(
        "delete.deletes",
        statements,
        &[
            ("q", FieldKind::Object),
            ("limit", FieldKind::Integer),
            ("collation", FieldKind::Object),
            ("hint", FieldKind::Any),
        ],
    )?;
    let collection = context.collection_info(&request.db, name).await?;
    if let Some(collection) = &collection {
        crate::ops::views::check_not_view(&collection.record)?;
    }
    let mut deleted = 0u64;
    let mut errors: Vec<Document> = Vec::new();
    let mut scope = context.scope();
    crate::ops::capped::check_transaction_write(
        scope.in_multi_document_transaction(),
        collection.as_deref(),
    )?;
    let mut transaction = scope.begin().await?;
    for (index, value) in statements.iter().enumerate() {
        let result = match (parse_statement(value, &variables), &collection) {
            (Err(error), _) => Err(error),
            (Ok(_), None) => Ok(0),
            (Ok(statement), Some(collection)) => {
                run_statement(transaction.session(), collection, statement).await
            }
        };
        match result {
            Ok(n) => deleted += n,
            Err(OpError::Store(error)) => return Err(error.into()),
            Err(error) => {
                errors.push(command_write_error(index, &error));
                if ordered {
                    break;
                }
            }
        }
    }
    transaction.commit().await?;
    ServerCounters::add(
        &context.server.state.counters.op_delete,
        statements.len() as u64,
    );
    Ok(with_write_errors(doc! {"n": count_bson(deleted)}, errors))
}
