//! `delete`: statements of `{q, limit}` (limit 0 = all matches, 1 = the first) run in one
//! transaction; each statement reads its matches through the planner and deletes them by
//! `_id` key in one batch. Ordered commands stop at the first failing statement.
//!
//! Not for: findAndModify's remove (a later capability).

use bson::{doc, Bson, Document};

use super::write_reply::{count_bson, with_write_errors};
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::{opt_array, opt_bool, opt_document, opt_i64, CommandRequest};
use crate::ops::delete::{run_statement, DeleteStatement};
use crate::ops::transaction::Transaction;
use crate::ops::write_errors::command_write_error;
use crate::query::Filter;
use crate::state::ServerCounters;

const STATEMENT_FIELDS: &[&str] = &["q", "limit", "collation", "hint"];

fn parse_statement(value: &Bson) -> Result<DeleteStatement, OpError> {
    let Bson::Document(statement) = value else {
        return Err(OpError::TypeMismatch(
            "delete statements must be objects".into(),
        ));
    };
    for key in statement.keys() {
        if !STATEMENT_FIELDS.contains(&key.as_str()) {
            return Err(OpError::UnknownField(format!("DeleteOpEntry.{key}")));
        }
    }
    if let Some(collation) = opt_document(statement, "collation")? {
        if collation.get_str("locale").ok() != Some("simple") {
            return Err(OpError::NotSupported(
                "collations other than 'simple' are not supported".into(),
            ));
        }
    }
    let filter = Filter::parse(
        opt_document(statement, "q")?.ok_or_else(|| OpError::missing_field("delete.deletes.q"))?,
    )?;
    let just_one = match opt_i64(statement, "limit")? {
        Some(0) => false,
        Some(1) => true,
        Some(other) => {
            return Err(OpError::FailedToParse(format!(
                "The limit field in delete objects must be 0 or 1. Got {other}"
            )))
        }
        None => return Err(OpError::missing_field("delete.deletes.limit")),
    };
    Ok(DeleteStatement { filter, just_one })
}

/// `delete`.
pub async fn delete(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    request.check_fields(&["deletes", "ordered", "let"])?;
    let name = request.collection()?;
    let ordered = opt_bool(&request.body, "ordered")?.unwrap_or(true);
    let statements = opt_array(&request.body, "deletes")?
        .ok_or_else(|| OpError::missing_field("delete.deletes"))?;
    if statements.is_empty()
        || statements.len() > crate::mongo::limits::MAX_WRITE_BATCH_SIZE as usize
    {
        return Err(OpError::InvalidLength(format!(
            "Write batch sizes must be between 1 and 100000. Got {} operations.",
            statements.len()
        )));
    }
    let collection = context.collection_info(&request.db, name).await?;
    let mut deleted = 0u64;
    let mut errors: Vec<Document> = Vec::new();
    let state = &context.server.state;
    let mut transaction = Transaction::begin(state.store.as_ref(), &state.catalog).await?;
    for (index, value) in statements.iter().enumerate() {
        let result = match (parse_statement(value), &collection) {
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
