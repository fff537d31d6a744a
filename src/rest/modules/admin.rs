//! Module administration: `GET /ords/{db}/_/modules` (all modules of the database, published
//! or not) and `PUT`/`GET`/`DELETE /ords/{db}/_/modules/{name}` (a module as ONE JSON
//! document). A PUT is validated, stored as a metadata record (which bumps the catalog version,
//! so every instance serves it on its next request) and answers 201 when new, 200 when it
//! replaced one. `docgate rest apply FILE` stores modules through [`apply_module`] too.
//!
//! Callers need a role that administers the database (`dbAdmin`, `dbOwner`, `root`), unless
//! no user exists yet (see `security`).
//!
//! Not for: serving the handlers (`dispatch`).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;

use super::definition::{ModuleDefinition, MODULE_KIND};
use crate::auth::roles::Action;
use crate::rest::error::{RestError, RestResult};
use crate::rest::extjson;
use crate::rest::extract::{Body, Segments};
use crate::rest::security::Caller;
use crate::rest::RestState;
use crate::state::AppState;
use crate::store::{MetaRecord, MetaWrite, StoreError};

/// The action whose grant makes a caller a module administrator of a database (granted by
/// `dbAdmin`, `dbOwner`, `dbAdminAnyDatabase` and `root`).
pub const ADMIN_ACTION: Action = Action::CollMod;

/// The admin routes.
pub fn routes() -> Router<Arc<RestState>> {
    Router::new()
        .route("/ords/{db}/_/modules", get(list_modules))
        .route(
            "/ords/{db}/_/modules/{name}",
            get(get_module).put(put_module).delete(delete_module),
        )
}

/// Validates `body` as module `name` (None: the body's own name) of `db` and stores it.
/// Answers whether it was new.
pub async fn apply_module(
    state: &AppState,
    db: &str,
    name: Option<&str>,
    body: Value,
) -> RestResult<bool> {
    crate::ops::namespace::check_db_name(db)?;
    let module = ModuleDefinition::parse(body, name)?;
    let record = MetaRecord {
        kind: MODULE_KIND.to_string(),
        db: db.to_string(),
        name: module.name.clone(),
        body: serde_json::to_value(&module)
            .map_err(|e| RestError::Internal(format!("cannot encode the module: {e}")))?,
    };
    match state.catalog.put_meta(&record, MetaWrite::Insert).await {
        Ok(_) => Ok(true),
        Err(StoreError::AlreadyExists(_)) => {
            state.catalog.put_meta(&record, MetaWrite::Upsert).await?;
            Ok(false)
        }
        Err(other) => Err(other.into()),
    }
}

async fn list_modules(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments(db): Segments<String>,
) -> RestResult<Json<Value>> {
    caller.require_action(ADMIN_ACTION, &db)?;
    let records = state.catalog.meta_records(MODULE_KIND, Some(&db)).await?;
    let items: Vec<Value> = records.iter().map(|record| record.body.clone()).collect();
    Ok(Json(serde_json::json!({
        "items": items, "hasMore": false, "count": records.len()
    })))
}

async fn get_module(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments((db, name)): Segments<(String, String)>,
) -> RestResult<Json<Value>> {
    caller.require_action(ADMIN_ACTION, &db)?;
    match state.catalog.meta_record(MODULE_KIND, &db, &name).await? {
        Some(record) => Ok(Json(record.body)),
        None => Err(RestError::NotFound(format!(
            "no REST module {name} in {db}"
        ))),
    }
}

async fn put_module(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments((db, name)): Segments<(String, String)>,
    Body(body): Body,
) -> RestResult<StatusCode> {
    caller.require_action(ADMIN_ACTION, &db)?;
    let body = extjson::parse_body(&state, &body, Value::Null)?;
    let created = apply_module(&state, &db, Some(&name), body).await?;
    Ok(if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    })
}

async fn delete_module(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments((db, name)): Segments<(String, String)>,
) -> RestResult<StatusCode> {
    caller.require_action(ADMIN_ACTION, &db)?;
    match state
        .catalog
        .delete_meta(MODULE_KIND, &db, Some(&name))
        .await?
    {
        0 => Err(RestError::NotFound(format!(
            "no REST module {name} in {db}"
        ))),
        _ => Ok(StatusCode::OK),
    }
}

/// `docgate rest apply FILE --db DB`: stores the module, or each module of an array, that
/// the JSON file holds; answers one line per module.
pub async fn apply_module_file(
    state: &AppState,
    db: &str,
    path: &std::path::Path,
) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    let modules = match value {
        Value::Array(modules) => modules,
        module => vec![module],
    };
    let mut lines = Vec::with_capacity(modules.len());
    for module in modules {
        let name = module
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("(unnamed)")
            .to_string();
        let created = apply_module(state, db, None, module)
            .await
            .map_err(|e| format!("module {name}: {e}"))?;
        let verb = if created { "created" } else { "replaced" };
        lines.push(format!("{verb} REST module {name} in {db}"));
    }
    Ok(lines)
}
