//! `delete`: statements of `{q, limit}` (limit 0 = all matches, 1 = the first) run in one
//! transaction; each statement reads its matches through the planner and deletes them by
//! `_id` key in one batch. Ordered commands stop at the first failing statement.
//!
//! Not for: findAndModify's remove (a later capability).

use bson::{doc, Bson, Document};

use super::write_support::{command_write_error, count_bson, open_session, with_write_errors};
use crate::catalog::CollectionInfo;
use crate::mongo::dispatch::CommandContext;
use crate::mongo::error::{CommandError, CommandResult};
use crate::mongo::request::{opt_array, opt_bool, opt_document, opt_i64, CommandRequest};
use crate::query::filter::Filter;
use crate::query::keys::encode_key;
use crate::query::planner::{self, ReadPlan};
use crate::state::ServerCounters;
use crate::store::StoreSession;

const STATEMENT_FIELDS: &[&str] = &["q", "limit", "collation", "hint"];

/// A parsed delete statement (also what the REST front end deletes with).
pub(crate) struct DeleteStatement {
    pub filter: Filter,
    pub just_one: bool,
}

fn parse_statement(value: &Bson) -> Result<DeleteStatement, CommandError> {
    let Bson::Document(statement) = value else {
        return Err(CommandError::TypeMismatch(
            "delete statements must be objects".into(),
        ));
    };
    for key in statement.keys() {
        if !STATEMENT_FIELDS.contains(&key.as_str()) {
            return Err(CommandError::UnknownField(format!("DeleteOpEntry.{key}")));
        }
    }
    if let Some(collation) = opt_document(statement, "collation")? {
        if collation.get_str("locale").ok() != Some("simple") {
            return Err(CommandError::NotSupported(
                "collations other than 'simple' are not supported".into(),
            ));
        }
    }
    let filter = Filter::parse(
        opt_document(statement, "q")?
            .ok_or_else(|| CommandError::missing_field("delete.deletes.q"))?,
    )?;
    let just_one = match opt_i64(statement, "limit")? {
        Some(0) => false,
        Some(1) => true,
        Some(other) => {
            return Err(CommandError::FailedToParse(format!(
                "The limit field in delete objects must be 0 or 1. Got {other}"
            )))
        }
        None => return Err(CommandError::missing_field("delete.deletes.limit")),
    };
    Ok(DeleteStatement { filter, just_one })
}

/// Deletes what one statement selects, inside the caller's transaction; returns how many.
pub(crate) async fn run_statement(
    session: &mut dyn StoreSession,
    collection: &CollectionInfo,
    statement: DeleteStatement,
) -> Result<u64, CommandError> {
    let record = &collection.record;
    let limit = statement.just_one.then_some(1);
    let plan = ReadPlan::new(statement.filter, None, 0, limit, &collection.indexes);
    let documents = planner::execute_for_update(session, record, &plan).await?;
    let keys: Vec<Vec<u8>> = documents
        .iter()
        .map(|d| encode_key(d.get("_id").unwrap_or(&Bson::Null)))
        .collect();
    if keys.is_empty() {
        return Ok(0);
    }
    Ok(session.delete(record, &keys).await?)
}

/// `delete`.
pub async fn delete(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    request.check_fields(&["deletes", "ordered", "let"])?;
    let name = request.collection()?;
    let ordered = opt_bool(&request.body, "ordered")?.unwrap_or(true);
    let statements = opt_array(&request.body, "deletes")?
        .ok_or_else(|| CommandError::missing_field("delete.deletes"))?;
    if statements.is_empty() || statements.len() > super::handshake::MAX_WRITE_BATCH_SIZE as usize {
        return Err(CommandError::InvalidLength(format!(
            "Write batch sizes must be between 1 and 100000. Got {} operations.",
            statements.len()
        )));
    }
    let collection = context.collection_info(&request.db, name).await?;
    let mut deleted = 0u64;
    let mut errors: Vec<Document> = Vec::new();
    let mut session = open_session(context).await?;
    session.begin().await?;
    for (index, value) in statements.iter().enumerate() {
        let result = match (parse_statement(value), &collection) {
            (Err(error), _) => Err(error),
            (Ok(_), None) => Ok(0),
            (Ok(statement), Some(collection)) => {
                run_statement(session.as_mut(), collection, statement).await
            }
        };
        match result {
            Ok(n) => deleted += n,
            Err(CommandError::Store(error)) => return Err(error.into()),
            Err(error) => {
                errors.push(command_write_error(index, &error));
                if ordered {
                    break;
                }
            }
        }
    }
    session.commit().await?;
    ServerCounters::add(
        &context.server.state.counters.op_delete,
        statements.len() as u64,
    );
    Ok(with_write_errors(doc! {"n": count_bson(deleted)}, errors))
}
