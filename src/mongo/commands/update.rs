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
    collection_for_write, command_write_error, count_bson, duplicate_id_error,
    duplicate_index_error, mark_multikey, open_session, prepare_for_storage, with_write_errors,
};
use crate::catalog::CollectionInfo;
use crate::mongo::dispatch::CommandContext;
use crate::mongo::error::{CommandError, CommandResult};
use crate::mongo::request::{opt_array, opt_bool, opt_document, CommandRequest};
use crate::query::filter::{upsert_seed, Filter};
use crate::query::keys::encode_key;
use crate::query::planner::{self, ReadPlan};
use crate::query::sort::SortSpec;
use crate::query::update::UpdateContext;
use crate::query::update::UpdateSpec;
use crate::state::ServerCounters;
use crate::store::StoreError;
use crate::store::{StoreSession, StoredDocument};
use std::collections::BTreeSet;

/// A parsed update statement (also the core of `findAndModify`).
pub(crate) struct UpdateStatement {
    pub filter: Filter,
    pub update: UpdateSpec,
    pub context: UpdateContext,
    pub upsert: bool,
    pub multi: bool,
    pub sort: Option<SortSpec>,
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

/// Parses an update given as a document (replacement or operators) or a pipeline.
pub(crate) fn parse_update(value: Option<&Bson>, field: &str) -> Result<UpdateSpec, CommandError> {
    match value {
        Some(Bson::Document(update)) => Ok(UpdateSpec::parse(update)?),
        Some(Bson::Array(stages)) => {
            let stages: Vec<Document> = stages
                .iter()
                .map(|stage| match stage {
                    Bson::Document(stage) => Ok(stage.clone()),
                    _ => Err(CommandError::FailedToParse(
                        "Each element of an update pipeline must be an object".into(),
                    )),
                })
                .collect::<Result<_, _>>()?;
            Ok(UpdateSpec::parse_pipeline(&stages)?)
        }
        Some(_) => Err(CommandError::FailedToParse(format!(
            "BSON field '{field}' must be an object or an array"
        ))),
        None => Err(CommandError::missing_field(field)),
    }
}

/// Parses `arrayFilters` into the update context.
pub(super) fn parse_array_filters(statement: &Document) -> Result<UpdateContext, CommandError> {
    let Some(filters) = opt_array(statement, "arrayFilters")? else {
        return Ok(UpdateContext::default());
    };
    let filters: Vec<Document> = filters
        .iter()
        .map(|f| match f {
            Bson::Document(f) => Ok(f.clone()),
            _ => Err(CommandError::TypeMismatch(
                "arrayFilters entries must be objects".into(),
            )),
        })
        .collect::<Result<_, _>>()?;
    Ok(UpdateContext::with_array_filters(&filters)?)
}

/// Refuses collations other than `simple` (docgate compares by code points).
pub(super) fn check_simple_collation(statement: &Document) -> Result<(), CommandError> {
    if let Some(collation) = opt_document(statement, "collation")? {
        if collation.get_str("locale").ok() != Some("simple") {
            return Err(CommandError::NotSupported(
                "collations other than 'simple' are not supported".into(),
            ));
        }
    }
    Ok(())
}

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
    check_simple_collation(statement)?;
    let filter = Filter::parse(opt_document(statement, "q")?.unwrap_or(&Document::new()))?;
    let update = parse_update(statement.get("u"), "update.updates.u")?;
    let multi = opt_bool(statement, "multi")?.unwrap_or(false);
    if multi && matches!(update, UpdateSpec::Replacement(_)) {
        return Err(CommandError::FailedToParse(
            "multi update is not supported for replacement-style update".into(),
        ));
    }
    let sort = opt_document(statement, "sort")?
        .map(SortSpec::parse)
        .transpose()?;
    if sort.is_some() && multi {
        return Err(CommandError::FailedToParse(
            "Cannot specify sort with multi=true".into(),
        ));
    }
    Ok(UpdateStatement {
        filter,
        update,
        context: parse_array_filters(statement)?,
        upsert: opt_bool(statement, "upsert")?.unwrap_or(false),
        multi,
        sort,
    })
}

/// `update`.
pub async fn update(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    request.check_fields(&["updates", "ordered", "bypassDocumentValidation", "let"])?;
    let name = request.collection()?;
    let namespace = format!("{}.{name}", request.db);
    let ordered = opt_bool(&request.body, "ordered")?.unwrap_or(true);
    let statements = opt_array(&request.body, "updates")?
        .ok_or_else(|| CommandError::missing_field("update.updates"))?;
    if statements.is_empty() || statements.len() > super::handshake::MAX_WRITE_BATCH_SIZE as usize {
        return Err(CommandError::InvalidLength(format!(
            "Write batch sizes must be between 1 and 100000. Got {} operations.",
            statements.len()
        )));
    }

    let mut session = open_session(context).await?;
    session.begin().await?;
    let mut collection = context
        .catalog()
        .collection_info_in(session.as_mut(), &request.db, name)
        .await?;
    let mut created = false;
    let mut new_multikey: BTreeSet<usize> = BTreeSet::new();
    let (mut matched, mut modified) = (0u64, 0u64);
    let mut upserted: Vec<Bson> = Vec::new();
    let mut errors: Vec<Document> = Vec::new();

    for (index, value) in statements.iter().enumerate() {
        let result = match parse_statement(value) {
            Ok(statement) => {
                if statement.upsert && collection.is_none() {
                    let (new_collection, was_created) = collection_for_write(
                        context.catalog(),
                        session.as_mut(),
                        &request.db,
                        name,
                    )
                    .await?;
                    created |= was_created;
                    collection = Some(new_collection);
                }
                match &collection {
                    Some(collection) => {
                        apply_statement(session.as_mut(), collection, &statement, &namespace).await
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
    let marked = mark_multikey(session.as_mut(), indexes, &new_multikey).await?;
    session.commit().await?;
    if created || marked {
        context.catalog().invalidate().await;
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
pub(crate) enum StatementFailure {
    Error(CommandError),
    /// A unique secondary index collision: the `writeErrors` entry, index to be set.
    IndexDuplicate {
        entry: Box<Document>,
    },
    Duplicate {
        namespace: String,
        id: Bson,
    },
    Store(crate::store::StoreError),
}

impl StatementFailure {
    pub(crate) fn into_write_error(self, index: usize) -> Document {
        match self {
            StatementFailure::Error(error) => command_write_error(index, &error),
            StatementFailure::Duplicate { namespace, id } => {
                duplicate_id_error(index, &namespace, &id)
            }
            StatementFailure::IndexDuplicate { entry } => {
                let mut entry = *entry;
                entry.insert("index", index as i32);
                entry
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

/// The documents a statement changed, before and after, and what it upserted.
#[derive(Default)]
pub(crate) struct AppliedStatement {
    pub matched: Vec<Document>,
    /// The documents after the update, in the order of `matched`.
    pub updated: Vec<Document>,
    pub modified: u64,
    pub upserted: Option<(Bson, Document)>,
    /// Indexes (positions in the collection's index list) made multikey by this statement.
    pub new_multikey: BTreeSet<usize>,
}

/// Runs one statement: everything is computed in Rust first and written in one batch, so a
/// statement that fails half-way writes nothing.
pub(crate) async fn apply_statement(
    session: &mut dyn StoreSession,
    collection: &CollectionInfo,
    statement: &UpdateStatement,
    namespace: &str,
) -> Result<AppliedStatement, StatementFailure> {
    let record = &collection.record;
    let limit = if statement.multi { None } else { Some(1) };
    let plan = ReadPlan::new(
        statement.filter.clone(),
        statement.sort.clone(),
        0,
        limit,
        &collection.indexes,
    );
    // A concurrent upsert of the same document may win the insert; MongoDB then retries the
    // statement as an update, and so do we (a bounded number of times).
    for attempt in 0..=UPSERT_RETRIES {
        let matched = planner::execute_for_update(session, record, &plan).await?;
        let mut applied = AppliedStatement::default();
        let mut changed: Vec<StoredDocument> = Vec::new();
        let mut changed_documents: Vec<Document> = Vec::new();
        for original in &matched {
            let mut document = original.clone();
            let context = statement
                .context
                .clone()
                .with_query_match(&statement.filter, original);
            if statement
                .update
                .apply_with_context(&mut document, &context)?
            {
                let prepared = prepare_for_storage(document.clone(), &collection.indexes)?;
                let original_id = original.get("_id").cloned().unwrap_or(Bson::Null);
                if prepared.stored.key != encode_key(&original_id) {
                    return Err(StatementFailure::Error(CommandError::Query(
                    crate::query::QueryError::immutable_field(
                        "Performing an update on the path '_id' would modify the immutable field '_id'",
                    ),
                )));
                }
                applied.new_multikey.extend(prepared.new_multikey);
                changed.push(prepared.stored);
                changed_documents.push(document.clone());
            }
            applied.updated.push(document);
        }
        applied.matched = matched;
        if !changed.is_empty() {
            applied.modified = match session.replace(record, &changed).await {
                Ok(n) => n,
                Err(StoreError::IndexKeyConflict { index }) => {
                    let document = changed_documents.into_iter().next().unwrap_or_default();
                    return Err(index_duplicate(collection, namespace, &index, document));
                }
                Err(other) => return Err(other.into()),
            };
        }
        if applied.matched.is_empty() && statement.upsert {
            let seed = upsert_seed(&statement.filter)?;
            let document = statement.update.apply_for_upsert(seed)?;
            let prepared = prepare_for_storage(document, &collection.indexes)?;
            let inserted = session
                .insert(record, std::slice::from_ref(&prepared.stored), true)
                .await?;
            let stored_document = planner::decode_document(&prepared.stored.bson)?;
            if let Some((_, index)) = inserted.index_conflicts.first() {
                return Err(index_duplicate(
                    collection,
                    namespace,
                    index,
                    stored_document,
                ));
            }
            if !inserted.conflicts.is_empty() {
                if attempt < UPSERT_RETRIES {
                    continue;
                }
                return Err(StatementFailure::Duplicate {
                    namespace: namespace.to_string(),
                    id: prepared.id,
                });
            }
            applied.new_multikey.extend(prepared.new_multikey);
            applied.upserted = Some((prepared.id, stored_document));
        }
        return Ok(applied);
    }
    Err(StatementFailure::Error(CommandError::BadValue(
        "the upsert kept colliding with concurrent inserts".into(),
    )))
}

/// How often an upsert that lost its insert to a concurrent one is retried as an update.
const UPSERT_RETRIES: usize = 3;

/// The failure for a unique secondary index collision.
fn index_duplicate(
    collection: &CollectionInfo,
    namespace: &str,
    index: &str,
    document: Document,
) -> StatementFailure {
    match collection.indexes.iter().find(|i| i.record.name == index) {
        Some(spec) => StatementFailure::IndexDuplicate {
            entry: Box::new(duplicate_index_error(0, namespace, &spec.spec, &document)),
        },
        None => StatementFailure::Store(StoreError::IndexKeyConflict {
            index: index.to_string(),
        }),
    }
}
