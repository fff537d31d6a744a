//! Writing a pipeline's result: `$out` replaces the target collection's documents and
//! `$merge` merges them into it, each in one store transaction — readers see the whole old
//! or the whole new content, and a merge that fails half-way leaves nothing of itself (docgate
//! is stricter than MongoDB here, which promises neither for `$merge`). The target is created
//! when missing; an existing target keeps its options and indexes, as MongoDB's `$out` keeps
//! them.
//!
//! `$out` writes into a temporary collection and renames it over the target, as MongoDB
//! does, but inside the one transaction (see [`replace_collection`]). Both take the
//! documents a chunk at a time (`output_documents`): a streamed result is spooled first, so
//! neither holds the whole result.
//!
//! Not for: running the pipeline (`aggregate`), the stages' semantics
//! (`query::aggregate::output`), or the command's reply (the front ends).

use super::capped::{self, CappedLimits};
use std::collections::{BTreeSet, HashMap};

use bson::{Bson, Document};

use super::namespace::{check_collection_name, check_db_name};
use super::output_documents::OutputDocuments;
use super::prepare::{prepare_for_storage, DocumentLimits, PreparedDocument};
use super::read;
use super::transaction::{OpScope, Transaction};
use super::validation::{DocumentValidation, ValidationCheck};
use super::write::{collection_for_write, mark_multikey};
use super::write_errors::{duplicate_id_error, duplicate_index_error};
use super::OpError;
use crate::catalog::{CollectionIndex, CollectionInfo};
use crate::query::output_stage::{MatchedWrite, MergeSpec, OutputStage, WhenNotMatched};
use crate::query::planner::ReadPlan;
use crate::query::{encode_key, Filter, QueryError};
use crate::store::{CollectionRecord, StoreError};

/// Writes `documents`, the result of a pipeline run in database `db`, as its last stage
/// `output` says, in one transaction, a chunk at a time. Inside a multi-document
/// transaction (or a snapshot read) this is MongoDB's 263 OperationNotSupportedInTransaction.
pub async fn write_output(
    scope: &mut OpScope<'_>,
    db: &str,
    output: &OutputStage,
    mut documents: OutputDocuments,
    validation: DocumentValidation,
) -> Result<(), OpError> {
    if scope.in_transaction() {
        return Err(OpError::NotInTransaction(format!(
            "{} cannot be used in a transaction",
            output.name()
        )));
    }
    check_output_target(db, output)?;
    let target_db = output.target().db_or(db);
    let limits = scope.state.settings.documents;
    let mut transaction = scope.begin().await?;
    match write_in(
        &mut transaction,
        target_db,
        output,
        &mut documents,
        limits,
        validation,
    )
    .await
    {
        Ok(()) => transaction.commit().await,
        Err(error) => {
            transaction.rollback().await?;
            Err(error)
        }
    }
}

/// The checks of `output`'s target that need no store (its database and name: MongoDB's
/// 17385/31319 for a `system.` collection, 31321/31320 for an internal database), run
/// before the pipeline so a bad target fails before the work.
pub fn check_output_target(db: &str, output: &OutputStage) -> Result<(), OpError> {
    let target = output.target();
    let target_db = target.db_or(db);
    check_db_name(target_db)?;
    if target.coll.starts_with("system.") {
        return Err(match output {
            OutputStage::Out(_) => OpError::Query(QueryError::location(
                17385,
                format!("Can't $out to special collection: {}", target.coll),
            )),
            OutputStage::Merge(_) => OpError::Query(QueryError::location(
                31319,
                format!("Cannot $merge to special collection: {}", target.coll),
            )),
        });
    }
    if matches!(target_db, "admin" | "config" | "local") {
        return Err(OpError::Query(match output {
            OutputStage::Out(_) => QueryError::location(
                31321,
                format!("Can't $out to internal database: {target_db}"),
            ),
            OutputStage::Merge(_) => QueryError::location(
                31320,
                format!("Cannot $merge to internal database: {target_db}"),
            ),
        }));
    }
    check_collection_name(target_db, &target.coll)?;
    Ok(())
}

/// How often `$out` renames its result over a target that a concurrent `$out` replaced
/// meanwhile.
const OUTPUT_ATTEMPTS: usize = 5;

/// The write of `write_output` inside `transaction`; the target read from the store in it
/// (never from the cache, which may not have seen a concurrent replacement yet).
async fn write_in(
    transaction: &mut Transaction<'_>,
    target_db: &str,
    output: &OutputStage,
    documents: &mut OutputDocuments,
    limits: DocumentLimits,
    validation: DocumentValidation,
) -> Result<(), OpError> {
    let coll = &output.target().coll;
    let existing = crate::catalog::read_snapshot(transaction.session())
        .await?
        .info(target_db, coll)
        .cloned();
    if let Some(existing) = &existing {
        check_writable_target(existing, output, target_db)?;
    }
    match output {
        OutputStage::Out(_) => {
            replace_collection(
                transaction,
                target_db,
                coll,
                existing.as_deref(),
                documents,
                limits,
                validation,
            )
            .await?;
        }
        OutputStage::Merge(spec) => {
            let info = collection_for_write(transaction, target_db, coll).await?;
            let namespace = format!("{target_db}.{coll}");
            let target = MergeTarget {
                info: &info,
                namespace: &namespace,
                spec,
                limits,
                validation,
            };
            merge_all(transaction, &target, documents).await?;
        }
    }
    Ok(())
}

/// A capped collection or a view cannot be an output target (MongoDB's 17152 for `$out`,
/// 166 for a view).
fn check_writable_target(
    existing: &CollectionInfo,
    output: &OutputStage,
    db: &str,
) -> Result<(), OpError> {
    let options = &existing.record.options;
    let namespace = format!("{db}.{}", existing.record.name);
    if options.contains_key("viewOn") {
        return Err(OpError::Query(QueryError::coded(
            166,
            "CommandNotSupportedOnView",
            format!("Namespace {namespace} is a view, not a collection"),
        )));
    }
    if matches!(output, OutputStage::Out(_)) && options.get_bool("capped").unwrap_or(false) {
        return Err(OpError::Query(QueryError::location(
            17152,
            format!("namespace '{namespace}' is capped so it can't be used for $out"),
        )));
    }
    Ok(())
}

/// `$out`: the new content goes into a temporary collection (`tmp.agg_out.<random>`) with
/// the target's options and its indexes, made empty first so every chunk written maintains
/// them; the target is dropped and the temporary collection renamed over it — all inside
/// the caller's transaction, so readers see the old collection until it commits and the new
/// one after. The new collection has a new identity, so a cursor open on the old one ends
/// (QueryPlanKilled), as in MongoDB. Answers how many documents were written.
async fn replace_collection(
    transaction: &mut Transaction<'_>,
    db: &str,
    coll: &str,
    existing: Option<&CollectionInfo>,
    documents: &mut OutputDocuments,
    limits: DocumentLimits,
    validation: DocumentValidation,
) -> Result<u64, OpError> {
    let namespace = format!("{db}.{coll}");
    let temp_name = format!("tmp.agg_out.{}", bson::oid::ObjectId::new().to_hex());
    let options = existing
        .map(|e| e.record.options.clone())
        .unwrap_or_default();
    let temp = transaction
        .session()
        .create_collection(db, &temp_name, &options)
        .await?;
    transaction.changed_catalog();
    let mut indexes = Vec::new();
    for index in existing.map_or(&[][..], |e| &e.indexes[..]) {
        let spec = &index.spec;
        let record =
            super::indexes::build_index(transaction.session(), &temp, spec, false, &[]).await?;
        indexes.push(CollectionIndex {
            record,
            spec: spec.clone(),
        });
    }
    // The new content meets the target's validator (the temporary collection takes its
    // options), as MongoDB's `$out` validates it.
    let check = ValidationCheck::new_document(existing, validation);
    let into = Written {
        record: &temp,
        indexes: &indexes,
        namespace: &namespace,
    };
    let mut inserted = 0;
    let mut new_multikey = BTreeSet::new();
    while let Some(chunk) = documents.next_chunk(WRITE_CHUNK).await? {
        crate::interrupt::check_now().map_err(QueryError::from)?;
        let mut prepared = Vec::with_capacity(chunk.len());
        for document in chunk {
            let document = prepare_for_storage(document, &indexes, limits, &check)?;
            new_multikey.extend(document.new_multikey.iter().copied());
            prepared.push(document);
        }
        inserted += insert_prepared(transaction, &into, prepared).await?;
    }
    mark_multikey(transaction, &indexes, &new_multikey).await?;
    if let Some(existing) = existing {
        transaction
            .session()
            .drop_collection(&existing.record)
            .await?;
    }
    // A concurrent `$out` may have committed its own target since we read the catalog:
    // the last one to commit wins, as with MongoDB's rename over the target.
    for attempt in 1..=OUTPUT_ATTEMPTS {
        match transaction
            .session()
            .rename_collection(&temp, db, coll)
            .await
        {
            Ok(_) => return Ok(inserted),
            Err(StoreError::AlreadyExists(_)) if attempt < OUTPUT_ATTEMPTS => {
                let snapshot = crate::catalog::read_snapshot(transaction.session()).await?;
                if let Some(replaced) = snapshot.info(db, coll) {
                    transaction
                        .session()
                        .drop_collection(&replaced.record)
                        .await?;
                }
            }
            Err(other) => return Err(other.into()),
        }
    }
    Err(OpError::NamespaceExists(format!(
        "{namespace} kept being replaced by concurrent $out stages"
    )))
}

/// Documents `$out` prepares and writes per store round trip.
const WRITE_CHUNK: usize = 1000;

/// Where a chunk of prepared documents goes: the collection, its indexes (as the documents
/// were prepared for), and the namespace its errors name.
struct Written<'a> {
    record: &'a CollectionRecord,
    indexes: &'a [CollectionIndex],
    namespace: &'a str,
}

/// Inserts `prepared` into `into` in order, making room in a capped collection; a unique
/// key they break — `_id` or a unique index — is MongoDB's E11000, naming the document.
/// Answers how many were written.
async fn insert_prepared(
    transaction: &mut Transaction<'_>,
    into: &Written<'_>,
    prepared: Vec<PreparedDocument>,
) -> Result<u64, OpError> {
    if prepared.is_empty() {
        return Ok(0);
    }
    let stored: Vec<_> = prepared.into_iter().map(|p| p.stored).collect();
    let capped = CappedLimits::of(into.record);
    if let Some(limits) = &capped {
        for document in &stored {
            capped::check_fits(limits, document.bson.len())?;
        }
        capped::before_insert(transaction.session(), into.record).await?;
    }
    let outcome = transaction
        .session()
        .insert(into.record, &stored, true)
        .await?;
    if let Some(limits) = &capped {
        capped::make_room(transaction.session(), into.record, limits).await?;
    }
    let Some(&position) = outcome.conflicts.first() else {
        return Ok(outcome.inserted);
    };
    let document = match stored.get(position) {
        Some(document) => read::decode_document(&document.bson)?,
        None => Document::new(),
    };
    let by_index = outcome.index_conflicts.iter().find(|(p, _)| *p == position);
    let entry = match by_index {
        Some((_, index)) => index_conflict_entry(into.indexes, into.namespace, index, &document),
        None => without_index(duplicate_id_error(
            0,
            into.namespace,
            document.get("_id").unwrap_or(&Bson::Null),
        )),
    };
    Err(OpError::DuplicateKey(Box::new(entry)))
}

/// `$merge`, set-based inside the caller's transaction, a chunk of results at a time: the
/// target documents a chunk matches are read (and locked), its results are applied in order
/// in memory (a later result sees what an earlier one inserted or changed; a later chunk
/// reads what an earlier one wrote), then the changed documents are written in one batch
/// and the new ones in another. Answers how many documents were written.
async fn merge_all(
    transaction: &mut Transaction<'_>,
    target: &MergeTarget<'_>,
    documents: &mut OutputDocuments,
) -> Result<u64, OpError> {
    let (info, spec) = (target.info, target.spec);
    if !spec.on_is_id() && !has_unique_index_on(&info.indexes, &spec.on) {
        return Err(OpError::Query(QueryError::location(
            51183,
            "Cannot find index to verify that join fields will be unique",
        )));
    }
    let mut written = 0;
    let mut new_multikey = BTreeSet::new();
    while let Some(chunk) = documents.next_chunk(MATCH_CHUNK).await? {
        written += merge_chunk(transaction, target, chunk, &mut new_multikey).await?;
    }
    mark_multikey(transaction, &info.indexes, &new_multikey).await?;
    Ok(written)
}

/// What a `$merge` writes into, and how.
struct MergeTarget<'a> {
    info: &'a CollectionInfo,
    namespace: &'a str,
    spec: &'a MergeSpec,
    limits: DocumentLimits,
    validation: DocumentValidation,
}

/// Merges one chunk of results ([`merge_all`]); adds the positions of the indexes it makes
/// multikey to `new_multikey`. Answers how many documents it wrote.
async fn merge_chunk(
    transaction: &mut Transaction<'_>,
    target: &MergeTarget<'_>,
    documents: Vec<Document>,
    new_multikey: &mut BTreeSet<usize>,
) -> Result<u64, OpError> {
    let (info, spec, namespace) = (target.info, target.spec, target.namespace);
    let mut results = Vec::with_capacity(documents.len());
    for mut result in documents {
        let filter = spec.match_filter(&mut result)?;
        let key = on_key(spec, &result).unwrap_or_default();
        results.push((key, filter, result));
    }

    // The target as the results find it: on-key -> the document, whether it was there.
    let mut matched: HashMap<Vec<u8>, MergedDocument> = HashMap::new();
    let filter = if spec.on_is_id() {
        let ids: Vec<Bson> = results
            .iter()
            .map(|(_, _, result)| result.get("_id").cloned().unwrap_or(Bson::Null))
            .collect();
        bson::doc! {"_id": {"$in": ids}}
    } else {
        let each: Vec<Bson> = results
            .iter()
            .map(|(_, filter, _)| Bson::Document(filter.clone()))
            .collect();
        bson::doc! {"$or": each}
    };
    let plan = ReadPlan::new(Filter::parse(&filter)?, None, 0, None, &info.indexes);
    for document in read::execute_for_update(transaction.session(), &info.record, &plan).await? {
        if let Some(key) = on_key(spec, &document) {
            let original = info.validator.is_some().then(|| document.clone());
            matched.entry(key).or_insert(MergedDocument {
                document,
                original,
                existed: true,
                changed: false,
            });
        }
    }

    let mut inserted_keys: Vec<Vec<u8>> = Vec::new();
    for (key, _, result) in results {
        crate::interrupt::check_now().map_err(QueryError::from)?;
        match matched.get_mut(&key) {
            Some(merged) => match spec.matched_write(&merged.document, &result)? {
                MatchedWrite::Keep => {}
                MatchedWrite::Fail => {
                    let existing = &merged.document;
                    let id = existing.get("_id").cloned().unwrap_or(Bson::Null);
                    return Err(duplicate_on_fields(
                        &info.indexes,
                        namespace,
                        spec,
                        &id,
                        existing,
                    ));
                }
                MatchedWrite::Write(document) => {
                    merged.document = document;
                    merged.changed = true;
                }
            },
            None => match spec.when_not_matched {
                WhenNotMatched::Insert => {
                    inserted_keys.push(key.clone());
                    matched.insert(
                        key,
                        MergedDocument {
                            document: result,
                            original: None,
                            existed: false,
                            changed: true,
                        },
                    );
                }
                WhenNotMatched::Discard => {}
                WhenNotMatched::Fail => {
                    return Err(OpError::Query(QueryError::coded(
                        13113,
                        "MergeStageNoMatchingDocument",
                        "$merge could not find a matching document in the target collection for at least one document in the source collection",
                    )))
                }
            },
        }
    }

    let (limits, validation) = (target.limits, target.validation);
    let mut replaced = Vec::new();
    for merged in matched.values().filter(|m| m.existed && m.changed) {
        let check = match &merged.original {
            Some(original) => ValidationCheck::updated_document(info, validation, original),
            None => ValidationCheck::new_document(Some(info), validation),
        };
        let prepared = prepare_for_storage(merged.document.clone(), &info.indexes, limits, &check)?;
        new_multikey.extend(prepared.new_multikey.iter().copied());
        replaced.push(prepared);
    }
    let mut inserted = Vec::with_capacity(inserted_keys.len());
    for key in &inserted_keys {
        if let Some(merged) = matched.remove(key) {
            let check = ValidationCheck::new_document(Some(info), validation);
            let prepared = prepare_for_storage(merged.document, &info.indexes, limits, &check)?;
            new_multikey.extend(prepared.new_multikey.iter().copied());
            inserted.push(prepared);
        }
    }
    let replaced_count = replaced.len() as u64;
    if !replaced.is_empty() {
        let stored: Vec<_> = replaced.into_iter().map(|p| p.stored).collect();
        match transaction.session().replace(&info.record, &stored).await {
            Ok(_) => {}
            Err(StoreError::IndexKeyConflict { index }) => {
                let document = read::decode_document(&stored[0].bson)?;
                let entry = index_conflict_entry(&info.indexes, namespace, &index, &document);
                return Err(OpError::DuplicateKey(Box::new(entry)));
            }
            Err(other) => return Err(other.into()),
        }
    }
    let into = Written {
        record: &info.record,
        indexes: &info.indexes,
        namespace,
    };
    Ok(replaced_count + insert_prepared(transaction, &into, inserted).await?)
}

/// Results whose target documents one read looks up.
const MATCH_CHUNK: usize = 1000;

/// A target document as the merge has left it so far.
struct MergedDocument {
    document: Document,
    /// The target document as it was, kept when the target has a validator (its
    /// `moderate` level looks at it).
    original: Option<Document>,
    /// It was in the target before the merge (replaced), or the merge inserts it.
    existed: bool,
    changed: bool,
}

/// The values of the `on` fields of `document`, encoded so that values MongoDB finds equal
/// have equal keys; None when one is missing (such a document matches no result).
fn on_key(spec: &MergeSpec, document: &Document) -> Option<Vec<u8>> {
    let mut values = Vec::with_capacity(spec.on.len());
    for field in &spec.on {
        values.push(crate::query::get_path(document, field)?.clone());
    }
    Some(encode_key(&Bson::Array(values)))
}

/// Whether a unique, non-partial index has exactly the `on` fields as its keys (in any
/// order), as `$merge` requires for `on` fields other than `_id`.
fn has_unique_index_on(indexes: &[CollectionIndex], on: &[String]) -> bool {
    let wanted: BTreeSet<&str> = on.iter().map(String::as_str).collect();
    indexes.iter().any(|index| {
        let keys: BTreeSet<&str> = index.spec.fields.iter().map(|(f, _)| f.as_str()).collect();
        index.spec.unique
            && index.spec.partial_filter.is_none()
            && keys == wanted
            && index.spec.fields.len() == on.len()
    })
}

/// `whenMatched: fail`: MongoDB inserts, and the insert fails on the `on` fields' unique
/// index (E11000).
fn duplicate_on_fields(
    indexes: &[CollectionIndex],
    namespace: &str,
    spec: &MergeSpec,
    id: &Bson,
    existing: &Document,
) -> OpError {
    let entry = if spec.on_is_id() {
        duplicate_id_error(0, namespace, id)
    } else {
        let wanted: BTreeSet<&str> = spec.on.iter().map(String::as_str).collect();
        let index = indexes.iter().find(|index| {
            index.spec.unique
                && index
                    .spec
                    .fields
                    .iter()
                    .map(|(f, _)| f.as_str())
                    .collect::<BTreeSet<_>>()
                    == wanted
        });
        match index {
            Some(index) => duplicate_index_error(0, namespace, &index.spec, existing),
            None => duplicate_id_error(0, namespace, id),
        }
    };
    OpError::DuplicateKey(Box::new(without_index(entry)))
}

/// The E11000 entry for a collision on the unique index named `index`.
fn index_conflict_entry(
    indexes: &[CollectionIndex],
    namespace: &str,
    index: &str,
    document: &Document,
) -> Document {
    let entry = match indexes.iter().find(|i| i.record.name == index) {
        Some(spec) => duplicate_index_error(0, namespace, &spec.spec, document),
        None => duplicate_id_error(0, namespace, document.get("_id").unwrap_or(&Bson::Null)),
    };
    without_index(entry)
}

/// A command error carries no batch `index`.
fn without_index(mut entry: Document) -> Document {
    entry.remove("index");
    entry
}
