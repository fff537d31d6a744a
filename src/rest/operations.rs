//! The document operations the REST front end runs — read a page, insert, update or replace
//! one document, delete by filter — on the same core paths as the wire commands: filters,
//! sorts and updates parsed by `query`, reads planned by `query::planner` (so indexes are
//! used), documents prepared and written by the same functions `insert`, `update` and
//! `delete` use, one transaction per operation, the catalog invalidated after DDL, and a
//! write planned from a stale catalog run once more (`ops::retry`), as on the wire.
//!
//! Both the document API (`soda`) and the metadata-defined handlers run through here.
//!
//! Not for: HTTP shapes (envelopes, status codes, parameters) or SQL.

use std::sync::Arc;

use bson::raw::RawDocumentBuf;
use bson::{doc, Bson, Document};

use super::error::{RestError, RestResult};
use crate::catalog::CollectionInfo;
use crate::ops;
use crate::ops::delete::{run_statement, DeleteStatement};
use crate::ops::find::FindRequest;
use crate::ops::insert::InsertMode;
use crate::ops::output_documents::OutputDocuments;
use crate::ops::pipeline_output::PipelineRead;
use crate::ops::read;
use crate::ops::retry::refreshed_after_stale;
use crate::ops::transaction::OpScope;
use crate::ops::transaction::Transaction;
use crate::ops::update::{apply_statement, StatementFailure, UpdateStatement};
use crate::ops::validation::DocumentValidation;
use crate::ops::write::{collection_for_write, mark_multikey};
use crate::query::Filter;
use crate::query::SortSpec;
use crate::query::{UpdateContext, UpdateSpec};
use crate::state::{AppState, ServerCounters};
use crate::store::ScanPosition;

/// One page of a read: the documents, in their stored bytes (a page is mostly sent on as it
/// is, see `extjson::RelaxedRaw`), whether more follow, and where the next page resumes
/// when the read's order allows a keyset.
pub struct FoundPage {
    pub items: Vec<RawDocumentBuf>,
    pub has_more: bool,
    pub next: Option<ScanPosition>,
}

/// What to read: a filter, an optional sort, and the page — from `offset`, or right after
/// `resume` (the position an earlier page of the same read ended at).
#[derive(Clone)]
pub struct PageRequest<'a> {
    pub filter: &'a Document,
    pub sort: Option<&'a Document>,
    pub offset: u64,
    pub limit: u64,
    pub resume: Option<ScanPosition>,
}

/// The collection `db.name` with its indexes, or 404.
pub async fn existing_collection(
    state: &AppState,
    db: &str,
    name: &str,
) -> RestResult<Arc<CollectionInfo>> {
    state
        .catalog
        .collection_info(db, name)
        .await?
        .ok_or_else(|| RestError::NotFound(format!("collection {db}.{name} does not exist")))
}

/// Reads one page the way a cursor reads a batch (`ops::find::page`): a keyset query from
/// where the previous page ended when the order allows it, so deep pages do not count an
/// offset through everything before them. When the collection was dropped, renamed or
/// replaced (`$out`) after `collection` was looked up, its table is gone (the store never
/// gives a table's name to another collection): the page is read again from the collection
/// as the refreshed catalog has it, up to [`PAGE_READ_ATTEMPTS`] times (a stream of `$out`
/// stages can replace it again meanwhile); a page never mixes two collections.
pub async fn find_page(
    state: &AppState,
    collection: &CollectionInfo,
    request: PageRequest<'_>,
) -> RestResult<FoundPage> {
    ServerCounters::add(&state.counters.op_query, 1);
    let mut result = read_page(state, collection, request.clone()).await;
    for _ in 1..PAGE_READ_ATTEMPTS {
        if !refreshed_after_stale(&state.catalog, &result).await {
            break;
        }
        let record = &collection.record;
        let current = existing_collection(state, &record.db, &record.name).await?;
        result = read_page(state, &current, request.clone()).await;
    }
    result
}

/// Reads of one page at most, when its collection keeps being replaced under it.
const PAGE_READ_ATTEMPTS: usize = 3;

/// One read of [`find_page`].
async fn read_page(
    state: &AppState,
    collection: &CollectionInfo,
    request: PageRequest<'_>,
) -> RestResult<FoundPage> {
    let find = FindRequest {
        filter: Filter::parse(request.filter)?,
        sort: request.sort.map(SortSpec::parse).transpose()?,
        projection: None,
        skip: request.offset,
        limit: None,
        hint: None,
        collation: None,
    };
    let size = usize::try_from(request.limit).unwrap_or(usize::MAX);
    if ops::views::is_view(&collection.record) {
        return view_page(state, collection, &request, size).await;
    }
    let found = ops::find::page(
        &mut OpScope::autocommit(state),
        collection,
        find,
        size,
        request.resume,
    )
    .await?;
    Ok(FoundPage {
        items: found.documents,
        has_more: found.has_more,
        next: found.next,
    })
}

/// A page of a view: its pipeline, then the page's filter, sort, offset and one more
/// document than the page (whether more follow); pages of a view are counted by offset.
async fn view_page(
    state: &AppState,
    view: &CollectionInfo,
    request: &PageRequest<'_>,
    size: usize,
) -> RestResult<FoundPage> {
    if request.resume.is_some() {
        return Err(ops::OpError::BadValue(
            "pages of a view cannot resume from a position; page with offset".into(),
        )
        .into());
    }
    let mut stages = vec![doc! {"$match": request.filter.clone()}];
    if let Some(sort) = request.sort {
        stages.push(doc! {"$sort": sort.clone()});
    }
    if request.offset > 0 {
        stages.push(doc! {"$skip": i64::try_from(request.offset).unwrap_or(i64::MAX)});
    }
    stages.push(doc! {"$limit": i64::try_from(size).unwrap_or(i64::MAX).saturating_add(1)});
    let mut documents = collect_pipeline(state, &view.record.db, &view.record.name, stages).await?;
    let has_more = documents.len() > size;
    documents.truncate(size);
    Ok(FoundPage {
        items: ops::find::encode_documents(&documents)?,
        has_more,
        next: None,
    })
}

/// The document whose `_id` is `id`, if any.
pub async fn find_by_id(
    state: &AppState,
    collection: &CollectionInfo,
    id: &Bson,
) -> RestResult<Option<Document>> {
    find_first(state, collection, &doc! {"_id": id.clone()}).await
}

/// The first document `filter` selects, if any.
pub async fn find_first(
    state: &AppState,
    collection: &CollectionInfo,
    filter: &Document,
) -> RestResult<Option<Document>> {
    let page = find_page(
        state,
        collection,
        PageRequest {
            filter,
            sort: None,
            offset: 0,
            limit: 1,
            resume: None,
        },
    )
    .await?;
    page.items
        .first()
        .map(|raw| read::decode_document(raw.as_bytes()))
        .transpose()
        .map_err(Into::into)
}

/// Creates `db.name`; answers whether it was created (false: it existed already).
pub async fn create_collection(state: &AppState, db: &str, name: &str) -> RestResult<bool> {
    Ok(ops::collections::create_collection(state, db, name, &Document::new()).await?)
}

/// Drops `db.name` and its data, or 404.
pub async fn drop_collection(state: &AppState, db: &str, name: &str) -> RestResult<()> {
    let collection = existing_collection(state, db, name).await?;
    Ok(ops::collections::drop_collections(state, std::slice::from_ref(&collection.record)).await?)
}

/// Inserts `documents` into `db.name` (created if missing, as MongoDB's `insert` does) in
/// one transaction: all are written or none (a duplicate `_id` or unique key is 409).
/// Returns the `_id` of each, in order (ObjectIds assigned where absent).
pub async fn insert_documents(
    state: &AppState,
    db: &str,
    name: &str,
    documents: Vec<Document>,
) -> RestResult<Vec<Bson>> {
    let mut result = insert_once(state, db, name, documents.clone()).await;
    if refreshed_after_stale(&state.catalog, &result).await {
        result = insert_once(state, db, name, documents.clone()).await;
    }
    result
}

async fn insert_once(
    state: &AppState,
    db: &str,
    name: &str,
    documents: Vec<Document>,
) -> RestResult<Vec<Bson>> {
    if documents.is_empty() {
        return Err(RestError::BadRequest("nothing to insert".into()));
    }
    let batch = documents.into_iter().map(Bson::Document).collect();
    let outcome = ops::insert::insert(
        &mut OpScope::autocommit(state),
        db,
        name,
        batch,
        InsertMode::AllOrNothing,
        DocumentValidation::Enforce,
    )
    .await?;
    Ok(outcome.ids)
}

/// What an update of one document did.
pub enum UpdateOutcome {
    /// No document matched (and no upsert was asked for).
    NotFound,
    /// The document as it is now.
    Updated(Document),
    /// The document inserted by an upsert.
    Inserted(Document),
}

/// Applies `update` (operators, a pipeline or a replacement) to the first document that
/// `filter` selects in `db.name`, inserting one when `upsert` and none matches.
pub async fn update_one(
    state: &AppState,
    db: &str,
    name: &str,
    filter: &Document,
    update: UpdateSpec,
    upsert: bool,
) -> RestResult<UpdateOutcome> {
    let mut result = update_once(state, db, name, filter, &update, upsert).await;
    if refreshed_after_stale(&state.catalog, &result).await {
        result = update_once(state, db, name, filter, &update, upsert).await;
    }
    result
}

async fn update_once(
    state: &AppState,
    db: &str,
    name: &str,
    filter: &Document,
    update: &UpdateSpec,
    upsert: bool,
) -> RestResult<UpdateOutcome> {
    let statement = UpdateStatement {
        filter: Filter::parse(filter)?,
        update: update.clone(),
        context: UpdateContext::default(),
        upsert,
        multi: false,
        sort: None,
        collation: None,
        validation: DocumentValidation::Enforce,
    };
    let namespace = format!("{db}.{name}");
    let mut transaction = Transaction::begin(state.store.as_ref(), &state.catalog).await?;
    let collection = if upsert {
        collection_for_write(&mut transaction, db, name).await?
    } else {
        match transaction.collection_info(db, name).await? {
            Some(collection) => collection,
            None => return Ok(UpdateOutcome::NotFound),
        }
    };
    let applied = match apply_statement(
        transaction.session(),
        &collection,
        &statement,
        &namespace,
        state.settings.documents,
    )
    .await
    {
        Ok(applied) => applied,
        Err(failure) => {
            transaction.rollback().await?;
            return Err(statement_failure(failure));
        }
    };
    mark_multikey(&mut transaction, &collection.indexes, &applied.new_multikey).await?;
    transaction.commit().await?;
    ServerCounters::add(&state.counters.op_update, 1);
    if let Some((_, document)) = applied.upserted {
        return Ok(UpdateOutcome::Inserted(document));
    }
    Ok(match applied.updated.into_iter().next() {
        Some(document) => UpdateOutcome::Updated(document),
        None => UpdateOutcome::NotFound,
    })
}

fn statement_failure(failure: StatementFailure) -> RestError {
    match failure {
        StatementFailure::Error(error) => error.into(),
        StatementFailure::Store(error) => error.into(),
        StatementFailure::Duplicate { namespace, id } => RestError::Conflict(format!(
            "E11000 duplicate key error collection: {namespace} index: _id_ dup key: {{ _id: {id} }}"
        )),
        StatementFailure::IndexDuplicate { entry } => RestError::Conflict(
            entry
                .get_str("errmsg")
                .unwrap_or("E11000 duplicate key error")
                .to_string(),
        ),
    }
}

/// Deletes every document `filter` selects in `db.name` (just the first with `just_one`),
/// in one transaction; a missing collection deletes nothing.
pub async fn delete_matching(
    state: &AppState,
    db: &str,
    name: &str,
    filter: &Document,
    just_one: bool,
) -> RestResult<u64> {
    let mut result = delete_once(state, db, name, filter, just_one).await;
    if refreshed_after_stale(&state.catalog, &result).await {
        result = delete_once(state, db, name, filter, just_one).await;
    }
    result
}

async fn delete_once(
    state: &AppState,
    db: &str,
    name: &str,
    filter: &Document,
    just_one: bool,
) -> RestResult<u64> {
    let statement = DeleteStatement {
        filter: Filter::parse(filter)?,
        just_one,
        collation: None,
    };
    let mut transaction = Transaction::begin(state.store.as_ref(), &state.catalog).await?;
    let Some(collection) = transaction.collection_info(db, name).await? else {
        return Ok(0);
    };
    let deleted = run_statement(transaction.session(), &collection, statement).await?;
    transaction.commit().await?;
    ServerCounters::add(&state.counters.op_delete, 1);
    Ok(deleted)
}

/// Runs `stages` over `db.name` (a collection or a view) and writes the result as the last
/// stage, `$out` or `$merge`, says (`pipeline` is `stages` parsed): what the wire's
/// `aggregate` does, validating what it writes.
pub async fn aggregate_into(
    state: &AppState,
    db: &str,
    name: &str,
    stages: &[Document],
    pipeline: &crate::query::Pipeline,
) -> RestResult<()> {
    let Some(output) = pipeline.output() else {
        return Err(RestError::Internal("the pipeline writes nothing".into()));
    };
    ops::aggregate_writes::check_output_target(db, output)?;
    ServerCounters::add(&state.counters.op_query, 1);
    let reading = stages[..stages.len().saturating_sub(1)].to_vec();
    let read = PipelineRead {
        db,
        name,
        stages: reading,
        hint: None,
        collation: None,
    };
    let mut scope = OpScope::autocommit(state);
    let first = ops::cursors::next_batch_limit(None);
    let (made, _) = ops::pipeline_output::run(&state.catalog, &mut scope, read, first).await?;
    let documents = OutputDocuments::of(&mut scope, made).await?;
    let validation = DocumentValidation::from_bypass_flag(false);
    ops::aggregate_writes::write_output(&mut scope, db, output, documents, validation).await?;
    Ok(())
}

/// The documents `stages` make over `db.name` (a collection or a view; a missing one is
/// empty), streamed through them as the wire's `aggregate` runs them: the answer is one
/// response, so only the result is held.
async fn collect_pipeline(
    state: &AppState,
    db: &str,
    name: &str,
    stages: Vec<Document>,
) -> RestResult<Vec<Document>> {
    let read = PipelineRead {
        db,
        name,
        stages,
        hint: None,
        collation: None,
    };
    let mut scope = OpScope::autocommit(state);
    let first = ops::cursors::next_batch_limit(None);
    let (made, _) = ops::pipeline_output::run(&state.catalog, &mut scope, read, first).await?;
    Ok(made.collect(&mut scope).await?)
}

/// Runs an aggregation pipeline over `db.name` (a collection or a view; a missing one is
/// empty) with the `aggregate` command's code: the answer is one response.
pub async fn aggregate(
    state: &AppState,
    db: &str,
    name: &str,
    stages: &[Document],
) -> RestResult<Vec<Document>> {
    // Parsed first: a pipeline that does not parse is the client's error before anything
    // is read.
    crate::query::Pipeline::parse(stages)?;
    ServerCounters::add(&state.counters.op_query, 1);
    collect_pipeline(state, db, name, stages.to_vec()).await
}
