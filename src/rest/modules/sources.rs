//! What a metadata-defined handler runs, by source type. Every source is a MongoDB spec
//! (JSON, Extended JSON allowed) whose `":name"` strings are bind placeholders (`binds`);
//! nothing is SQL, so a front end never builds SQL (DESIGN.md) and values are always bound.
//!
//! | source type | source | answers |
//! |---|---|---|
//! | `collection_feed` | `"events"` or `{"collection", "filter"?, "sort"?}` | a page (ORDS envelope) |
//! | `collection_item` | `"events"` or `{"collection"}`; the `:id` segment names the `_id` (ObjectId hex, integer or string) | the document, or 404 |
//! | `query` | `{"collection", "filter"?, "sort"?, "projection"?}` | a page |
//! | `dml` | `{"collection", "insert": doc or [docs]}`, `{"collection", "update": {"filter", "update", "upsert"?}}` or `{"collection", "delete": filter}` | ids (201), the updated document, or the count deleted |
//! | `pipeline` | `{"collection", "pipeline": [stages]}` | a page of the results; ending in `$out`/`$merge` (into the handler's database; the caller needs MongoDB's privileges for it), an empty page once written |
//!
//! The collection is always a literal name, never a bind.
//!
//! Not for: matching requests to handlers or checking privileges (`dispatch`).

use std::borrow::Cow;
use std::collections::HashMap;

use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bson::{doc, Bson, Document};
use serde_json::json;

use super::binds::Binds;
use super::definition::{HandlerDefinition, SourceType};
use crate::auth::Action;
use crate::ops::read::decode_document;
use crate::query::output_stage::OutputStage;
use crate::query::Projection;
use crate::query::UpdateSpec;
use crate::rest::error::{RestError, RestResult};
use crate::rest::extjson::{id_candidates, RelaxedDocument, RelaxedRaw};
use crate::rest::operations::{self, PageRequest, UpdateOutcome};
use crate::rest::page::{inserted_items, resume_of, Envelope, Paging};
use crate::state::AppState;
use crate::store::ScanPosition;

/// Everything a handler runs with.
pub struct HandlerCall<'a> {
    pub state: &'a AppState,
    pub db: &'a str,
    pub binds: &'a Binds,
    /// The raw text of the template's `:name` segments.
    pub segments: &'a HashMap<String, String>,
    pub paging: Paging,
    pub uri: &'a Uri,
    pub headers: &'a HeaderMap,
    /// Who calls (a pipeline that writes checks its privileges on the target).
    pub caller: &'a crate::rest::security::Caller,
}

/// A handler's source with the request's values bound (the compiled spec itself when it
/// has no placeholders).
struct BoundSource<'a> {
    collection: &'a str,
    spec: Cow<'a, Document>,
}

fn bind_source<'a>(handler: &'a HandlerDefinition, binds: &Binds) -> RestResult<BoundSource<'a>> {
    let compiled = &handler.compiled;
    let spec = if compiled.has_placeholders {
        Cow::Owned(compiled.bind(binds)?)
    } else {
        Cow::Borrowed(&compiled.spec)
    };
    Ok(BoundSource {
        collection: &compiled.collection,
        spec,
    })
}

fn optional_document<'a>(spec: &'a Document, field: &str) -> RestResult<Option<&'a Document>> {
    match spec.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Document(document)) => Ok(Some(document)),
        Some(_) => Err(RestError::BadRequest(format!(
            "the handler's {field} must be an object"
        ))),
    }
}

/// Runs `handler` for one request.
pub async fn run(handler: &HandlerDefinition, call: HandlerCall<'_>) -> RestResult<Response> {
    let source = bind_source(handler, call.binds)?;
    match handler.source_type {
        SourceType::CollectionFeed | SourceType::Query => page(&call, &source).await,
        SourceType::CollectionItem => item(&call, &source).await,
        SourceType::Dml => dml(&call, &source).await,
        SourceType::Pipeline => pipeline(&call, &source).await,
    }
}

async fn page(call: &HandlerCall<'_>, source: &BoundSource<'_>) -> RestResult<Response> {
    let empty = Document::new();
    let filter = optional_document(&source.spec, "filter")?.unwrap_or(&empty);
    let sort = optional_document(&source.spec, "sort")?;
    let projection = optional_document(&source.spec, "projection")?
        .filter(|p| !p.is_empty())
        .map(Projection::parse)
        .transpose()?;
    let collection =
        operations::existing_collection(call.state, call.db, source.collection).await?;
    let found = operations::find_page(
        call.state,
        &collection,
        PageRequest {
            filter,
            sort,
            offset: call.paging.offset,
            limit: call.paging.limit,
            resume: resume_of(call.uri)?,
        },
    )
    .await?;
    let next = found.next.as_ref();
    let Some(projection) = projection else {
        let items = found.items.into_iter().map(RelaxedRaw).collect();
        return Ok(page_response(items, found.has_more, next, call));
    };
    let mut items = Vec::with_capacity(found.items.len());
    for raw in &found.items {
        let document = decode_document(raw.as_bytes())?;
        items.push(RelaxedDocument(projection.apply(&document)?));
    }
    Ok(page_response(items, found.has_more, next, call))
}

/// `items` in the ORDS page envelope (`next` resuming after `resume` when given).
fn page_response<Item: serde::Serialize>(
    items: Vec<Item>,
    has_more: bool,
    resume: Option<&ScanPosition>,
    call: &HandlerCall<'_>,
) -> Response {
    Json(Envelope::new(
        items,
        has_more,
        call.paging,
        resume,
        call.uri,
        call.headers,
    ))
    .into_response()
}

async fn item(call: &HandlerCall<'_>, source: &BoundSource<'_>) -> RestResult<Response> {
    let segment = call
        .segments
        .get("id")
        .or_else(|| {
            (call.segments.len() == 1)
                .then(|| call.segments.values().next())
                .flatten()
        })
        .ok_or_else(|| {
            RestError::Internal("a collection_item handler needs a :id template segment".into())
        })?;
    let candidates = id_candidates(segment);
    let filter = doc! {"_id": {"$in": candidates}};
    let collection =
        operations::existing_collection(call.state, call.db, source.collection).await?;
    let found = operations::find_first(call.state, &collection, &filter).await?;
    match found {
        Some(document) => Ok(Json(RelaxedDocument(document)).into_response()),
        None => Err(RestError::NotFound(format!(
            "no document with _id {segment:?} in {}.{}",
            call.db, source.collection
        ))),
    }
}

async fn dml(call: &HandlerCall<'_>, source: &BoundSource<'_>) -> RestResult<Response> {
    let (db, name) = (call.db, source.collection);
    if let Some(insert) = source.spec.get("insert") {
        let documents = match insert {
            Bson::Document(document) => vec![document.clone()],
            Bson::Array(items) => items
                .iter()
                .map(|item| match item {
                    Bson::Document(document) => Ok(document.clone()),
                    _ => Err(RestError::BadRequest("insert takes documents".into())),
                })
                .collect::<RestResult<_>>()?,
            _ => return Err(RestError::BadRequest("insert takes documents".into())),
        };
        let ids = operations::insert_documents(call.state, db, name, documents).await?;
        return Ok((StatusCode::CREATED, Json(inserted_items(&ids))).into_response());
    }
    if let Some(update) = optional_document(&source.spec, "update")? {
        let empty = Document::new();
        let filter = optional_document(update, "filter")?.unwrap_or(&empty);
        let operators = optional_document(update, "update")?
            .ok_or_else(|| RestError::Internal("a dml update needs update.update".into()))?;
        let upsert = matches!(update.get("upsert"), Some(Bson::Boolean(true)));
        let spec = UpdateSpec::parse(operators)?;
        return match operations::update_one(call.state, db, name, filter, spec, upsert).await? {
            UpdateOutcome::Updated(document) => Ok(Json(RelaxedDocument(document)).into_response()),
            UpdateOutcome::Inserted(document) => {
                Ok((StatusCode::CREATED, Json(RelaxedDocument(document))).into_response())
            }
            UpdateOutcome::NotFound => Err(RestError::NotFound(format!(
                "no document in {db}.{name} matches"
            ))),
        };
    }
    if let Some(filter) = optional_document(&source.spec, "delete")? {
        let deleted = operations::delete_matching(call.state, db, name, filter, false).await?;
        return Ok(Json(json!({"count": deleted, "itemsDeleted": deleted})).into_response());
    }
    Err(RestError::Internal(
        "a dml source needs one of insert, update or delete".into(),
    ))
}

async fn pipeline(call: &HandlerCall<'_>, source: &BoundSource<'_>) -> RestResult<Response> {
    let stages = match source.spec.get("pipeline") {
        Some(Bson::Array(stages)) => stages
            .iter()
            .map(|stage| match stage {
                Bson::Document(stage) => Ok(stage.clone()),
                _ => Err(RestError::Internal(
                    "pipeline stages must be objects".into(),
                )),
            })
            .collect::<RestResult<Vec<Document>>>()?,
        _ => {
            return Err(RestError::Internal(
                "a pipeline source needs \"pipeline\": [...]".into(),
            ))
        }
    };
    let parsed = crate::query::Pipeline::parse(&stages)?;
    if let Some(output) = parsed.output() {
        // What the wire's `aggregate` requires of `$out`/`$merge`, asked of the caller: insert
        // and remove ($out replaces the collection) or insert and update ($merge) on the
        // target, which must be in the handler's own database.
        let target_db = output.target().db_or(call.db);
        if target_db != call.db {
            return Err(RestError::Forbidden(format!(
                "{} into database {target_db}: a handler of {} writes only there",
                output.name(),
                call.db
            )));
        }
        call.caller.require_action(Action::Insert, call.db)?;
        let second = match output {
            OutputStage::Out(_) => Action::Remove,
            OutputStage::Merge(_) => Action::Update,
        };
        call.caller.require_action(second, call.db)?;
        operations::aggregate_into(call.state, call.db, source.collection, &stages, &parsed)
            .await?;
        return Ok(page_response(
            Vec::<RelaxedDocument>::new(),
            false,
            None,
            call,
        ));
    }
    let results = operations::aggregate(call.state, call.db, source.collection, &stages).await?;
    let offset = usize::try_from(call.paging.offset).unwrap_or(usize::MAX);
    let limit = usize::try_from(call.paging.limit).unwrap_or(usize::MAX);
    let mut rest = results.into_iter().skip(offset);
    let items: Vec<RelaxedDocument> = rest.by_ref().take(limit).map(RelaxedDocument).collect();
    let has_more = rest.next().is_some();
    Ok(page_response(items, has_more, None, call))
}
