//! The document API in ORDS's SODA shapes, under `/ords/{db}/soda/latest/`:
//!
//! | route | method | what |
//! |---|---|---|
//! | `/` | GET | the database's collections |
//! | `/{coll}` | PUT | create (201; 200 when it exists) |
//! | `/{coll}` | DELETE | drop (404 when missing) |
//! | `/{coll}` | GET | a page of documents: `limit`, `offset`, `q` (a MongoDB filter as JSON) |
//! | `/{coll}` | POST | insert one document (201, `_id` assigned when absent) |
//! | `/{coll}?action=query` | POST | a page of what the body's filter selects |
//! | `/{coll}?action=insert` | POST | insert an array of documents, all or none |
//! | `/{coll}?action=delete` | POST | delete what the body's filter selects |
//! | `/{coll}/{id}` | GET, PUT, PATCH, DELETE | one document by `_id` |
//!
//! PUT of an id replaces the document, or creates it (201) when none has that `_id`. PATCH
//! takes MongoDB update operators (`{"$set":{…}}`, `{"$inc":{…}}`) or an update pipeline
//! (a JSON array), never a bare document (use PUT to replace), and answers the updated
//! document. A POST to a missing collection creates it, as MongoDB's `insert` does; reads
//! of a missing collection are 404.
//!
//! Callers need the role actions MongoDB's commands need: `find` to read, `insert`, `update`
//! and `remove` to write, `createCollection`/`dropCollection`/`listCollections` (see
//! `security` for when credentials are required at all).
//!
//! Not for: how documents are read and written (that is `operations`) or who may do it
//! (that is `security`).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use bson::{doc, Bson, Document};
use serde_json::{json, Value};

use super::error::{RestError, RestResult};
use super::extjson::{self, id_from_segment, id_to_segment, RelaxedDocument, RelaxedRaw};
use super::extract::{Body, Params, Segments};
use super::operations::{self, PageRequest, UpdateOutcome};
use super::page::{
    inserted_items, request_base, resume_of, Envelope, Paging, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE,
};
use super::security::Caller;
use crate::auth::roles::Action;
use crate::query::UpdateSpec;
use crate::rest::RestState;
use crate::state::AppState;

/// The document API's routes.
pub fn routes() -> Router<Arc<RestState>> {
    Router::new()
        .route("/ords/{db}/soda/latest", get(list_collections))
        .route("/ords/{db}/soda/latest/", get(list_collections))
        .route(
            "/ords/{db}/soda/latest/{coll}",
            get(list_documents)
                .put(create_collection)
                .delete(drop_collection)
                .post(post_to_collection),
        )
        .route(
            "/ords/{db}/soda/latest/{coll}/{id}",
            get(get_document)
                .put(put_document)
                .patch(patch_document)
                .delete(delete_document),
        )
}

/// GET `/`: the collections of `db`, by name.
async fn list_collections(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments(db): Segments<String>,
    params: Params,
    uri: Uri,
    headers: HeaderMap,
) -> RestResult<Json<Envelope>> {
    caller.require_action(Action::ListCollections, &db)?;
    let paging = Paging::from_params(params.get("limit"), params.get("offset"), MAX_PAGE_SIZE)?;
    let snapshot = state.catalog.snapshot().await?;
    let mut names = snapshot
        .collections_in(&db)
        .skip(usize::try_from(paging.offset).unwrap_or(usize::MAX))
        .map(|record| json!({"name": record.name}));
    let items: Vec<Value> = names
        .by_ref()
        .take(usize::try_from(paging.limit).unwrap_or(usize::MAX))
        .collect();
    let has_more = names.next().is_some();
    Ok(Json(Envelope::new(
        items, has_more, paging, None, &uri, &headers,
    )))
}

/// PUT `/{coll}`: 201 when created, 200 when it was there already.
async fn create_collection(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments((db, coll)): Segments<(String, String)>,
) -> RestResult<StatusCode> {
    caller.require_action(Action::CreateCollection, &db)?;
    let created = operations::create_collection(&state, &db, &coll).await?;
    Ok(if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    })
}

/// DELETE `/{coll}`.
async fn drop_collection(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments((db, coll)): Segments<(String, String)>,
) -> RestResult<StatusCode> {
    caller.require_action(Action::DropCollection, &db)?;
    operations::drop_collection(&state, &db, &coll).await?;
    Ok(StatusCode::OK)
}

/// A page of `filter`'s matches in the ORDS envelope.
async fn page_of(
    state: &AppState,
    (db, coll): (&str, &str),
    filter: &Document,
    params: &Params,
    uri: &Uri,
    headers: &HeaderMap,
) -> RestResult<Json<Envelope<RelaxedRaw>>> {
    let paging = Paging::from_params(params.get("limit"), params.get("offset"), DEFAULT_PAGE_SIZE)?;
    let sort = params
        .get("sort")
        .map(|text| extjson::parse_document_text(text, "sort"))
        .transpose()?;
    let collection = operations::existing_collection(state, db, coll).await?;
    let page = operations::find_page(
        state,
        &collection,
        PageRequest {
            filter,
            sort: sort.as_ref(),
            offset: paging.offset,
            limit: paging.limit,
            resume: resume_of(uri)?,
        },
    )
    .await?;
    let items = page.items.into_iter().map(RelaxedRaw).collect();
    Ok(Json(Envelope::new(
        items,
        page.has_more,
        paging,
        page.next.as_ref(),
        uri,
        headers,
    )))
}

/// GET `/{coll}?limit&offset&q&sort`.
async fn list_documents(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments((db, coll)): Segments<(String, String)>,
    params: Params,
    uri: Uri,
    headers: HeaderMap,
) -> RestResult<Json<Envelope<RelaxedRaw>>> {
    caller.require_action(Action::Find, &db)?;
    let filter = extjson::parse_document_text(params.get("q").unwrap_or(""), "q")?;
    page_of(&state, (&db, &coll), &filter, &params, &uri, &headers).await
}

/// POST `/{coll}` with `action` = none (insert one), `query`, `insert` or `delete`.
async fn post_to_collection(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments((db, coll)): Segments<(String, String)>,
    params: Params,
    uri: Uri,
    headers: HeaderMap,
    Body(body): Body,
) -> RestResult<Response> {
    let action = match params.get("action") {
        None | Some("insert") => Action::Insert,
        Some("query") => Action::Find,
        Some("delete") => Action::Remove,
        Some(_) => Action::Find,
    };
    caller.require_action(action, &db)?;
    match params.get("action") {
        None => {
            let document = match extjson::parse_body(&state, &body, Value::Null)? {
                Value::Array(_) => {
                    return Err(RestError::BadRequest(
                        "to insert an array of documents, POST it with ?action=insert".into(),
                    ))
                }
                other => extjson::to_document(other, "the document")?,
            };
            let ids = operations::insert_documents(&state, &db, &coll, vec![document]).await?;
            let location = ids.first().map(|id| {
                format!(
                    "{}{}/{}",
                    request_base(&uri, &headers),
                    uri.path(),
                    id_to_segment(id)
                )
            });
            let mut response = (StatusCode::CREATED, Json(inserted_items(&ids))).into_response();
            if let Some(value) = location.and_then(|l| l.parse().ok()) {
                response.headers_mut().insert(header::LOCATION, value);
            }
            Ok(response)
        }
        Some("insert") => {
            let value = extjson::parse_body(&state, &body, Value::Null)?;
            let documents = extjson::to_documents(value, "the documents")?;
            let ids = operations::insert_documents(&state, &db, &coll, documents).await?;
            Ok((StatusCode::OK, Json(inserted_items(&ids))).into_response())
        }
        Some("query") => {
            let value = extjson::parse_body(&state, &body, json!({}))?;
            let filter = extjson::to_document(value, "the filter")?;
            Ok(
                page_of(&state, (&db, &coll), &filter, &params, &uri, &headers)
                    .await?
                    .into_response(),
            )
        }
        Some("delete") => {
            let value = extjson::parse_body(&state, &body, Value::Null)?;
            let filter = extjson::to_document(value, "the filter")?;
            let deleted = operations::delete_matching(&state, &db, &coll, &filter, false).await?;
            Ok(Json(json!({"count": deleted, "itemsDeleted": deleted})).into_response())
        }
        Some(other) => Err(RestError::BadRequest(format!(
            "unknown action {other:?}: use query, insert or delete"
        ))),
    }
}

/// GET `/{coll}/{id}`.
async fn get_document(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments((db, coll, id)): Segments<(String, String, String)>,
) -> RestResult<Json<RelaxedDocument>> {
    caller.require_action(Action::Find, &db)?;
    let collection = operations::existing_collection(&state, &db, &coll).await?;
    let id = id_from_segment(&id);
    match operations::find_by_id(&state, &collection, &id).await? {
        Some(document) => Ok(Json(RelaxedDocument(document))),
        None => Err(not_found(&db, &coll, &id)),
    }
}

fn not_found(db: &str, coll: &str, id: &Bson) -> RestError {
    RestError::NotFound(format!("no document with _id {id} in {db}.{coll}"))
}

/// PUT `/{coll}/{id}`: replace, or create with that `_id` (201).
async fn put_document(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments((db, coll, id)): Segments<(String, String, String)>,
    Body(body): Body,
) -> RestResult<Response> {
    caller.require_action(Action::Update, &db)?;
    caller.require_action(Action::Insert, &db)?;
    let id = id_from_segment(&id);
    let mut document = extjson::to_document(
        extjson::parse_body(&state, &body, Value::Null)?,
        "the document",
    )?;
    if let Some(given) = document.get("_id") {
        if given != &id {
            return Err(RestError::BadRequest(format!(
                "the document's _id {given} differs from the _id {id} in the URL"
            )));
        }
    }
    document.remove("_id");
    if document.keys().any(|key| key.starts_with('$')) {
        return Err(RestError::BadRequest(
            "PUT replaces the document: use PATCH for update operators".into(),
        ));
    }
    let filter = doc! {"_id": id.clone()};
    let outcome = operations::update_one(
        &state,
        &db,
        &coll,
        &filter,
        UpdateSpec::Replacement(document),
        true,
    )
    .await?;
    let status = match outcome {
        UpdateOutcome::Inserted(_) => StatusCode::CREATED,
        UpdateOutcome::Updated(_) => StatusCode::OK,
        UpdateOutcome::NotFound => return Err(not_found(&db, &coll, &id)),
    };
    Ok((status, Json(inserted_items(std::slice::from_ref(&id)))).into_response())
}

/// PATCH `/{coll}/{id}`: update operators or a pipeline; answers the updated document.
async fn patch_document(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments((db, coll, id)): Segments<(String, String, String)>,
    Body(body): Body,
) -> RestResult<Json<RelaxedDocument>> {
    caller.require_action(Action::Update, &db)?;
    let id = id_from_segment(&id);
    let update = match extjson::parse_body(&state, &body, Value::Null)? {
        Value::Array(stages) => {
            let stages = extjson::to_documents(Value::Array(stages), "the update pipeline")?;
            UpdateSpec::parse_pipeline(&stages)?
        }
        other => {
            let update = extjson::to_document(other, "the update")?;
            if update.is_empty() || !update.keys().all(|key| key.starts_with('$')) {
                return Err(RestError::BadRequest(
                    "PATCH takes MongoDB update operators such as {\"$set\":{…}} (use PUT to replace the document)".into(),
                ));
            }
            UpdateSpec::parse(&update)?
        }
    };
    let filter = doc! {"_id": id.clone()};
    match operations::update_one(&state, &db, &coll, &filter, update, false).await? {
        UpdateOutcome::Updated(document) | UpdateOutcome::Inserted(document) => {
            Ok(Json(RelaxedDocument(document)))
        }
        UpdateOutcome::NotFound => Err(not_found(&db, &coll, &id)),
    }
}

/// DELETE `/{coll}/{id}`.
async fn delete_document(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments((db, coll, id)): Segments<(String, String, String)>,
) -> RestResult<Json<Value>> {
    caller.require_action(Action::Remove, &db)?;
    let id = id_from_segment(&id);
    let filter = doc! {"_id": id.clone()};
    match operations::delete_matching(&state, &db, &coll, &filter, true).await? {
        0 => Err(not_found(&db, &coll, &id)),
        n => Ok(Json(json!({"count": n, "itemsDeleted": n}))),
    }
}
