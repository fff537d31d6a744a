//! Serving metadata-defined handlers: a request under `/ords/{db}/` that no built-in route
//! takes is matched against the published modules of `{db}` (read through the catalog's
//! metadata cache, so a module changed through docgate is served on the very next request,
//! and one changed behind docgate's back within `cache.metadata.timeout`): the longest base
//! path that prefixes the path, then a URI template, then the handler for the method. Then
//! the privileges that cover the path are checked, binds collected, and the source run.
//!
//! Unknown module, template or unpublished module: 404. Known template, no handler for
//! the method: 405.
//!
//! Not for: what a source does (`sources`), or module administration (`admin`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::header;
use axum::response::Response;

use super::binds::Binds;
use super::definition::{ModuleDefinition, MODULE_KIND};
use super::sources::{self, HandlerCall};
use crate::rest::error::{RestError, RestResult};
use crate::rest::extjson;
use crate::rest::page::{Paging, DEFAULT_PAGE_SIZE};
use crate::rest::security;
use crate::rest::RestState;
use crate::store::MetaRecord;

/// Parsed modules per database, kept while the catalog hands out the same record list (an
/// `Arc` the metadata cache shares until the records change or expire), so a cached request
/// parses nothing. With the metadata cache off every request gets a fresh list and parses it.
///
/// Every request to a module reads this map, from as many threads as the runtime has
/// (SQLite calls hand their worker's tasks to other threads): a read-write lock lets the
/// readers pass each other, where a mutex would queue them behind any holder the OS
/// preempted.
#[derive(Default)]
pub struct ParsedModules {
    by_db: RwLock<HashMap<String, ParsedEntry>>,
}

struct ParsedEntry {
    records: Arc<Vec<MetaRecord>>,
    published: Arc<Vec<ModuleDefinition>>,
}

/// Databases whose parsed modules are kept at most (only databases that have modules count).
const MAX_PARSED_DATABASES: usize = 1024;

impl ParsedModules {
    fn lookup(
        &self,
        db: &str,
        records: &Arc<Vec<MetaRecord>>,
    ) -> Option<Arc<Vec<ModuleDefinition>>> {
        let by_db = self
            .by_db
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        by_db
            .get(db)
            .filter(|entry| Arc::ptr_eq(&entry.records, records))
            .map(|entry| entry.published.clone())
    }

    fn remember(
        &self,
        db: &str,
        records: Arc<Vec<MetaRecord>>,
        published: Arc<Vec<ModuleDefinition>>,
    ) {
        let mut by_db = self
            .by_db
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if by_db.len() >= MAX_PARSED_DATABASES && !by_db.contains_key(db) {
            by_db.clear();
        }
        by_db.insert(db.to_string(), ParsedEntry { records, published });
    }
}

/// The published modules of `db`, parsed (a stored module that no longer parses is skipped
/// with a warning: one bad row must not take the others down).
pub async fn published_modules(
    state: &RestState,
    db: &str,
) -> RestResult<Arc<Vec<ModuleDefinition>>> {
    let records = state.catalog.meta_records(MODULE_KIND, Some(db)).await?;
    if records.is_empty() {
        return Ok(Arc::new(Vec::new()));
    }
    if let Some(published) = state.modules.lookup(db, &records) {
        return Ok(published);
    }
    let mut modules = Vec::with_capacity(records.len());
    for record in records.iter() {
        match ModuleDefinition::parse(record.body.clone(), Some(&record.name)) {
            Ok(module) if module.is_published() => modules.push(module),
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(
                    db,
                    module = record.name,
                    "stored REST module is invalid: {error}"
                )
            }
        }
    }
    let published = Arc::new(modules);
    state.modules.remember(db, records, published.clone());
    Ok(published)
}

/// `(db, path below /ords/{db})` of a request path; the path below starts with `/`.
fn split_ords_path(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/ords/")?;
    let (db, below) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, "/"),
    };
    (!db.is_empty()).then_some((db, below))
}

/// The router's fallback: serves a module handler, or answers 404.
pub async fn serve(State(state): State<Arc<RestState>>, request: Request) -> Response {
    let mut route = None;
    let mut response = match serve_request(&state, request, &mut route).await {
        Ok(response) => response,
        Err(error) => axum::response::IntoResponse::into_response(error),
    };
    if let Some(route) = route {
        response.extensions_mut().insert(route);
    }
    response
}

/// Serves a handler's request; `route` is set (module and template, for `/metrics`) once
/// the request matched a template.
async fn serve_request(
    state: &Arc<RestState>,
    request: Request,
    route: &mut Option<crate::metrics::RestRoute>,
) -> RestResult<Response> {
    let uri = request.uri().clone();
    let not_found = || RestError::NotFound(format!("no REST resource at {}", uri.path()));
    let (db, path) = split_ords_path(uri.path()).ok_or_else(not_found)?;
    let modules = published_modules(state, db).await?;
    let module = modules
        .iter()
        .filter(|module| module.relative_path(path).is_some())
        .max_by_key(|module| module.base_path.len())
        .ok_or_else(not_found)?;
    let relative = module.relative_path(path).unwrap_or_default();
    let (template, segments) = module.match_template(relative).ok_or_else(not_found)?;
    *route = Some(crate::metrics::RestRoute {
        module: module.name.clone(),
        route: template.uri_template.clone(),
    });
    let method = request.method().as_str();
    let handler = template
        .handlers
        .iter()
        .find(|handler| handler.method == method)
        .ok_or_else(|| {
            RestError::MethodNotAllowed(format!("{method} is not allowed on {}", uri.path()))
        })?;

    let (parts, body) = request.into_parts();
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| *addr);
    let headers = parts.headers;
    let privileges: Vec<_> = module.privileges_for(relative).collect();
    // An unprotected handler called without credentials needs nobody identified
    // (`:current_user` is null then), which spares the lookups on the hot path.
    // A pipeline that writes checks its caller's own privileges on the target, so its
    // caller is always identified.
    let caller = if privileges.is_empty()
        && !headers.contains_key(header::AUTHORIZATION)
        && !handler.compiled.writes_output()
    {
        security::Caller::Anonymous
    } else {
        security::identify(state, &headers, peer, db).await?
    };
    for privilege in privileges {
        caller.require_role(
            &privilege.roles,
            db,
            &format!("privilege {}", privilege.name),
        )?;
    }

    let query: std::collections::HashMap<String, String> = uri
        .query()
        .map(|q| {
            url_pairs(q)
                .into_iter()
                .collect::<std::collections::HashMap<_, _>>()
        })
        .unwrap_or_default();
    let default_limit = handler
        .items_per_page
        .or(module.items_per_page)
        .unwrap_or(DEFAULT_PAGE_SIZE);
    let paging = Paging::from_params(
        query.get("limit").map(String::as_str),
        query.get("offset").map(String::as_str),
        default_limit,
    )?;
    // Most requests (every GET) have no body: nothing to collect then.
    let body = if axum::body::HttpBody::is_end_stream(&body) {
        axum::body::Bytes::new()
    } else {
        axum::body::to_bytes(body, state.limits.max_body_bytes)
            .await
            .map_err(|e| RestError::PayloadTooLarge(format!("cannot read the request body: {e}")))?
    };
    let body = match extjson::parse_body(state, &body, serde_json::Value::Null)? {
        serde_json::Value::Null => None,
        value => Some(extjson::to_bson(value, "the request body")?),
    };
    let binds = Binds::collect(caller.name(), &segments, &query, body.as_ref())?;
    sources::run(
        handler,
        HandlerCall {
            state,
            db,
            binds: &binds,
            segments: &segments,
            paging,
            uri: &uri,
            headers: &headers,
            caller: &caller,
        },
    )
    .await
}

/// `a=1&b=x%20y` → pairs, percent- and `+`-decoded.
fn url_pairs(query: &str) -> Vec<(String, String)> {
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(
        &format!("/?{query}").parse().unwrap_or_default(),
    )
    .map(|axum::extract::Query(pairs)| pairs)
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ords_paths_split_into_database_and_rest() {
        assert_eq!(
            split_ords_path("/ords/concert/a/b"),
            Some(("concert", "/a/b"))
        );
        assert_eq!(split_ords_path("/ords/concert"), Some(("concert", "/")));
        assert_eq!(split_ords_path("/ords/concert/"), Some(("concert", "/")));
        assert_eq!(split_ords_path("/ords//x"), None);
        assert_eq!(split_ords_path("/other"), None);
        assert_eq!(
            url_pairs("a=1&b=x%20y+z"),
            [("a".into(), "1".into()), ("b".into(), "x y z".into())]
        );
    }
}
