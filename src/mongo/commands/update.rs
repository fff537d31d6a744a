//! `update`: statements of `{q, u, upsert, multi, arrayFilters}` run in one transaction.
//! Each statement reads its matches through the planner, applies the update in Rust with the
//! query core, and writes the changed documents back in one batch; a statement that fails
//! writes nothing. Ordered commands stop at the first failing statement. `n` counts matched
//! (and upserted) documents, `nModified` only those that really changed, as MongoDB does.
//!
//! Not for: findAndModify (a later capability) or SQL-level set-based updates (the planner
//! will take those over when it can express an update in SQL).

use bson::{doc, Bson, Document};

use super::write_support::{
    collection_for_write, command_write_error, count_bson, duplicate_id_error, open_session,
    prepare_for_storage, with_write_errors,
};
use crate::mongo::dispatch::CommandContext;
use crate::mongo::error::{CommandError, CommandResult};
use crate::mongo::request::{opt_array, opt_bool, opt_document, CommandRequest};
use crate::planner::{self, ReadPlan};
use crate::query::filter::{equality_fields, Filter};
use crate::query::keys::encode_key;
use crate::query::update::UpdateSpec;
use crate::state::ServerCounters;
use crate::store::{CollectionRecord, StoreSession, StoredDocument};

/// What one statement did.
#[derive(Default)]
struct StatementOutcome {
    matched: u64,
    modified: u64,
    upserted: Option<Bson>,
}

/// A parsed update statement.
struct UpdateStatement {
    filter: Filter,
    update: UpdateSpec,
    upsert: bool,
    multi: bool,
}

const STATEMENT_FIELDS: &[&str] = &[
    "q",
    "u",
    "upsert",
    "multi",
    "arrayFilters",
    "collation",
    "hint",
    "c",
    "sort",
];

fn parse_statement(value: &Bson) -> Result<UpdateStatement, CommandError> {
    let Bson::Document(statement) = value else {
        return Err(CommandError::TypeMismatch(
            "update statements must be objects".into(),
        ));
    };
    for key in statement.keys() {
        if !STATEMENT_FIELDS.contains(&key.as_str()) {
            return Err(CommandError::UnknownField(format!("UpdateOpEntry.{key}")));
        }
    }
    if opt_array(statement, "arrayFilters")?.is_some_and(|filters| !filters.is_empty()) {
        return Err(CommandError::NotSupported(
            "arrayFilters are not supported by docgate yet".into(),
        ));
    }
    if let Some(collation) = opt_document(statement, "collation")? {
        if collation.get_str("locale").ok() != Some("simple") {
            return Err(CommandError::NotSupported(
                "collations other than 'simple' are not supported".into(),
            ));
        }
    }
    let filter = Filter::parse(opt_document(statement, "q")?.unwrap_or(&Document::new()))?;
    let update = match statement.get("u") {
        Some(Bson::Document(update)) => UpdateSpec::parse(update)?,
        Some(Bson::Array(_)) => {
            return Err(CommandError::NotSupported(
                "pipeline-style updates are not supported by docgate yet".into(),
            ))
        }
        _ => {
            return Err(CommandError::FailedToParse(
                "BSON field 'update.updates.u' is missing but a required field".into(),
            ))
        }
    };
    let multi = opt_bool(statement, "multi")?.unwrap_or(false);
    if multi && matches!(update, UpdateSpec::Replacement(_)) {
        return Err(CommandError::FailedToParse(
            "multi update is not supported for replacement-style update".into(),
        ));
    }
    Ok(UpdateStatement {
        filter,
        update,
        upsert: opt_bool(statement, "upsert")?.unwrap_or(false),
        multi,
    })
}

/// `update`.
pub async fn update(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    request.check_fields(&["updates", "ordered", "bypassDocumentValidation", "let"])?;
    let name = request.collection()?;
    let namespace = format!("{}.{name}", request.db);
    let ordered = opt_bool(&request.body, "ordered")?.unwrap_or(true);
    let statements = opt_array(&request.body, "updates")?.ok_or_else(|| {
        CommandError::FailedToParse(
            "BSON field 'update.updates' is missing but a required field".into(),
        )
    })?;
    if statements.is_empty() || statements.len() > super::handshake::MAX_WRITE_BATCH_SIZE as usize {
        return Err(CommandError::InvalidLength(format!(
            "Write batch sizes must be between 1 and 100000. Got {} operations.",
            statements.len()
        )));
    }

    let mut session = open_session(context).await?;
    session.begin().await?;
    let mut record = context
        .server
        .state
        .catalog
        .collection(&request.db, name)
        .await?;
    let mut created = false;
    let (mut matched, mut modified) = (0u64, 0u64);
    let mut upserted: Vec<Bson> = Vec::new();
    let mut errors: Vec<Document> = Vec::new();

    for (index, value) in statements.iter().enumerate() {
        let result = match parse_statement(value) {
            Ok(statement) => {
                if statement.upsert && record.is_none() {
                    let (new_record, was_created) =
                        collection_for_write(context, session.as_mut(), &request.db, name).await?;
                    created |= was_created;
                    record = Some(new_record);
                }
                match &record {
                    Some(record) => {
                        run_statement(session.as_mut(), record, &statement, &namespace).await
                    }
                    None => Ok(StatementOutcome::default()),
                }
            }
            Err(error) => Err(StatementFailure::Error(error)),
        };
        match result {
            Ok(outcome) => {
                matched += outcome.matched;
                modified += outcome.modified;
                if let Some(id) = outcome.upserted {
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
    session.commit().await?;
    if created {
        context.server.state.catalog.invalidate().await;
    }
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

/// Why a statement failed: a write error for the client, or a store failure that aborts the
/// whole command.
enum StatementFailure {
    Error(CommandError),
    Duplicate { namespace: String, id: Bson },
    Store(crate::store::StoreError),
}

impl StatementFailure {
    fn into_write_error(self, index: usize) -> Document {
        match self {
            StatementFailure::Error(error) => command_write_error(index, &error),
            StatementFailure::Duplicate { namespace, id } => {
                duplicate_id_error(index, &namespace, &id)
            }
            StatementFailure::Store(error) => {
                command_write_error(index, &CommandError::Store(error))
            }
        }
    }
}

impl From<CommandError> for StatementFailure {
    fn from(error: CommandError) -> Self {
        match error {
            CommandError::Store(store) => StatementFailure::Store(store),
            other => StatementFailure::Error(other),
        }
    }
}

impl From<crate::query::QueryError> for StatementFailure {
    fn from(error: crate::query::QueryError) -> Self {
        StatementFailure::Error(error.into())
    }
}

impl From<crate::store::StoreError> for StatementFailure {
    fn from(error: crate::store::StoreError) -> Self {
        StatementFailure::Store(error)
    }
}

/// Runs one statement: everything is computed in Rust first and written in one batch, so a
/// statement that fails half-way writes nothing.
async fn run_statement(
    session: &mut dyn StoreSession,
    record: &CollectionRecord,
    statement: &UpdateStatement,
    namespace: &str,
) -> Result<StatementOutcome, StatementFailure> {
    let limit = if statement.multi { None } else { Some(1) };
    let plan = ReadPlan::new(statement.filter.clone(), None, 0, limit);
    let documents = planner::execute(session, record, &plan).await?;
    let mut outcome = StatementOutcome {
        matched: documents.len() as u64,
        ..Default::default()
    };
    let mut changed: Vec<StoredDocument> = Vec::new();
    for mut document in documents {
        let original_id = document.get("_id").cloned().unwrap_or(Bson::Null);
        if statement.update.apply(&mut document)? {
            let (stored, _) = prepare_for_storage(document)?;
            if stored.key != encode_key(&original_id) {
                return Err(StatementFailure::Error(CommandError::Query(crate::query::QueryError::immutable_field(
                    "Performing an update on the path '_id' would modify the immutable field '_id'",
                ))));
            }
            changed.push(stored);
        }
    }
    if !changed.is_empty() {
        outcome.modified = session.replace(record, &changed).await?;
    }
    if outcome.matched == 0 && statement.upsert {
        let seed = equality_fields(&statement.filter);
        let document = statement.update.apply_for_upsert(seed)?;
        let (stored, id) = prepare_for_storage(document)?;
        let inserted = session
            .insert(record, std::slice::from_ref(&stored), true)
            .await?;
        if !inserted.conflicts.is_empty() {
            return Err(StatementFailure::Duplicate {
                namespace: namespace.to_string(),
                id,
            });
        }
        outcome.upserted = Some(id);
    }
    Ok(outcome)
}
