//! One update statement inside the caller's transaction: its matches read through the
//! planner (locked for the transaction), the update applied in Rust by the query core, the
//! changed documents written back in one batch, an upsert inserted when nothing matched
//! (retried as an update when a concurrent upsert won). A statement that fails writes
//! nothing. Shared by the wire's `update` and `findAndModify` and by REST.
//!
//! Not for: parsing statements (the front ends), or the command around them.

use super::capped::{self, CappedLimits};
use std::collections::BTreeSet;

use bson::{Bson, Document};

use super::prepare::{prepare_for_storage, DocumentLimits};
use super::read;
use super::validation::{DocumentValidation, ValidationCheck};
use super::write_errors::{command_write_error, duplicate_id_error, duplicate_index_error};
use super::OpError;
use crate::catalog::CollectionInfo;
use crate::query::encode_key;
use crate::query::planner::ReadPlan;
use crate::query::{upsert_seed, Filter};
use crate::query::{Collation, SortSpec};
use crate::query::{UpdateContext, UpdateSpec};
use crate::store::{StoreError, StoreSession, StoredDocument};

/// A parsed update statement (also the core of `findAndModify`).
pub struct UpdateStatement {
    pub filter: Filter,
    pub update: UpdateSpec,
    pub context: UpdateContext,
    pub upsert: bool,
    pub multi: bool,
    pub sort: Option<SortSpec>,
    /// The statement's own collation (none: the collection's default).
    pub collation: Option<Collation>,
    /// Whether the documents it writes are validated (`bypassDocumentValidation`).
    pub validation: DocumentValidation,
}

/// Why a statement failed: a write error for the client, or a store failure that aborts the
/// whole command.
pub enum StatementFailure {
    Error(OpError),
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
    pub fn into_write_error(self, index: usize) -> Document {
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
            StatementFailure::Store(error) => command_write_error(index, &OpError::Store(error)),
        }
    }
}

impl From<OpError> for StatementFailure {
    fn from(error: OpError) -> Self {
        match error {
            OpError::Store(store) => StatementFailure::Store(store),
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
pub struct AppliedStatement {
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
pub async fn apply_statement(
    session: &mut dyn StoreSession,
    collection: &CollectionInfo,
    statement: &UpdateStatement,
    namespace: &str,
    limits: DocumentLimits,
) -> Result<AppliedStatement, StatementFailure> {
    let record = &collection.record;
    let limit = if statement.multi { None } else { Some(1) };
    let collation = collection.collation_for(statement.collation.clone())?;
    read::check_text_index(&statement.filter, &collection.indexes).map_err(OpError::from)?;
    let plan = ReadPlan::collated(
        statement.filter.clone(),
        statement.sort.clone(),
        0,
        limit,
        &collection.indexes,
        collation.clone(),
    );
    super::index_usage::record(collection, &plan);
    // A concurrent upsert of the same document may win the insert; MongoDB then retries the
    // statement as an update, and so do we (a bounded number of times).
    for attempt in 0..=UPSERT_RETRIES {
        let matched = read::execute_for_update(session, record, &plan).await?;
        let mut applied = AppliedStatement::default();
        let mut changed: Vec<StoredDocument> = Vec::new();
        let mut changed_documents: Vec<Document> = Vec::new();
        for original in &matched {
            let mut document = original.clone();
            // Update operators that compare ($pull, $addToSet, $min, $max, $push's $sort)
            // do so under the statement's collation.
            let changed_here = collation.install(|| {
                let context = statement
                    .context
                    .clone()
                    .with_query_match(&statement.filter, original);
                statement.update.apply_with_context(&mut document, &context)
            })?;
            if changed_here {
                let check =
                    ValidationCheck::updated_document(collection, statement.validation, original);
                let prepared =
                    prepare_for_storage(document.clone(), &collection.indexes, limits, &check)?;
                let original_id = original.get("_id").cloned().unwrap_or(Bson::Null);
                if prepared.stored.key != encode_key(&original_id) {
                    return Err(StatementFailure::Error(OpError::Query(
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
            let check = ValidationCheck::new_document(Some(collection), statement.validation);
            let prepared = prepare_for_storage(document, &collection.indexes, limits, &check)?;
            let capped = CappedLimits::of(record);
            if let Some(limits) = &capped {
                capped::check_fits(limits, prepared.stored.bson.len())?;
                capped::before_insert(session, record).await?;
            }
            let inserted = session
                .insert(record, std::slice::from_ref(&prepared.stored), true)
                .await?;
            if let Some(limits) = &capped {
                capped::make_room(session, record, limits).await?;
            }
            let stored_document = read::decode_document(&prepared.stored.bson)?;
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
    Err(StatementFailure::Error(OpError::BadValue(
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
