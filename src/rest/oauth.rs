//! OAuth2 client credentials, as ORDS offers them:
//!
//! - `POST /ords/{db}/_/oauth/clients` `{"name", "roles": [...]}` (an administrator of `db`)
//!   registers a client and answers `client_id` and `client_secret` — the secret only this
//!   once: what is stored (a metadata record of kind `oauth_client`) is its SHA-256, which is
//!   enough for a 32-byte random secret. `GET` lists the clients, `DELETE …/{client_id}`
//!   removes one.
//! - `POST /ords/{db}/oauth/token` with `grant_type=client_credentials` (form or JSON body)
//!   and the client's credentials (HTTP Basic `client_id:client_secret`, or the
//!   `client_id`/`client_secret` fields) answers
//!   `{"access_token", "token_type": "bearer", "expires_in"}` (`tokens`).
//!
//! Not for: verifying tokens on requests (`tokens`, `security`).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::error::{RestError, RestResult};
use super::extract::{Body, Segments};
use super::modules::admin::ADMIN_ACTION;
use super::security::Caller;
use super::RestState;
use crate::auth::credentials::random_bytes;
use crate::store::{MetaRecord, MetaWrite};

/// Metadata record kind of OAuth clients.
pub const CLIENT_KIND: &str = "oauth_client";

/// The OAuth routes.
pub fn routes() -> Router<Arc<RestState>> {
    Router::new()
        .route(
            "/ords/{db}/_/oauth/clients",
            get(list_clients).post(register_client),
        )
        .route(
            "/ords/{db}/_/oauth/clients/{client_id}",
            delete(delete_client),
        )
        .route("/ords/{db}/oauth/token", post(issue_token))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn secret_hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewClient {
    name: String,
    #[serde(default)]
    roles: Vec<String>,
}

async fn register_client(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments(db): Segments<String>,
    Body(body): Body,
) -> RestResult<(StatusCode, Json<Value>)> {
    caller.require_action(ADMIN_ACTION, &db)?;
    let client: NewClient = serde_json::from_slice(&body)
        .map_err(|e| RestError::BadRequest(format!("invalid client: {e}")))?;
    let client_id = hex(&random_bytes(16));
    let client_secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes(32));
    let record = MetaRecord {
        kind: CLIENT_KIND.to_string(),
        db: db.clone(),
        name: client_id.clone(),
        body: json!({
            "name": client.name,
            "roles": client.roles,
            "secret_sha256": secret_hash(&client_secret),
        }),
    };
    state.catalog.put_meta(&record, MetaWrite::Insert).await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "client_id": client_id,
            "client_secret": client_secret,
            "name": client.name,
            "roles": client.roles,
        })),
    ))
}

async fn list_clients(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments(db): Segments<String>,
) -> RestResult<Json<Value>> {
    caller.require_action(ADMIN_ACTION, &db)?;
    let records = state.catalog.meta_records(CLIENT_KIND, Some(&db)).await?;
    let items: Vec<Value> = records
        .iter()
        .map(|record| {
            json!({
                "client_id": record.name,
                "name": record.body.get("name"),
                "roles": record.body.get("roles"),
            })
        })
        .collect();
    Ok(Json(
        json!({"items": items, "hasMore": false, "count": items.len()}),
    ))
}

async fn delete_client(
    State(state): State<Arc<RestState>>,
    caller: Caller,
    Segments((db, client_id)): Segments<(String, String)>,
) -> RestResult<StatusCode> {
    caller.require_action(ADMIN_ACTION, &db)?;
    match state
        .catalog
        .delete_meta(CLIENT_KIND, &db, Some(&client_id))
        .await?
    {
        0 => Err(RestError::NotFound(format!(
            "no OAuth client {client_id} in {db}"
        ))),
        _ => Ok(StatusCode::OK),
    }
}

/// The fields of a token request.
#[derive(Default, Deserialize)]
struct TokenRequest {
    grant_type: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
}

fn parse_token_request(headers: &HeaderMap, body: &[u8]) -> RestResult<TokenRequest> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let bad = |e: String| RestError::BadRequest(format!("invalid token request: {e}"));
    if json {
        serde_json::from_slice(body).map_err(|e| bad(e.to_string()))
    } else {
        let text = std::str::from_utf8(body).map_err(|e| bad(e.to_string()))?;
        let uri: axum::http::Uri = format!("/?{text}")
            .parse()
            .map_err(|e: axum::http::uri::InvalidUri| bad(e.to_string()))?;
        axum::extract::Query::<TokenRequest>::try_from_uri(&uri)
            .map(|axum::extract::Query(request)| request)
            .map_err(|e| bad(e.body_text()))
    }
}

/// `client_id:client_secret` from HTTP Basic.
fn basic_client(headers: &HeaderMap) -> Option<(String, String)> {
    let text = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = text.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    Some((id.to_string(), secret.to_string()))
}

async fn issue_token(
    State(state): State<Arc<RestState>>,
    Segments(db): Segments<String>,
    headers: HeaderMap,
    Body(body): Body,
) -> RestResult<Json<Value>> {
    let request = parse_token_request(&headers, &body)?;
    if request.grant_type.as_deref() != Some("client_credentials") {
        return Err(RestError::BadRequest(
            "unsupported grant_type: use client_credentials".into(),
        ));
    }
    let (client_id, secret) = match (
        basic_client(&headers),
        request.client_id,
        request.client_secret,
    ) {
        (Some(credentials), _, _) => credentials,
        (None, Some(id), Some(secret)) => (id, secret),
        _ => return Err(RestError::unauthorized("client credentials are required")),
    };
    let invalid = || RestError::unauthorized("invalid client credentials");
    let record = state
        .catalog
        .meta_record(CLIENT_KIND, &db, &client_id)
        .await?
        .ok_or_else(invalid)?;
    let stored = record
        .body
        .get("secret_sha256")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let presented = secret_hash(&secret);
    if !bool::from(stored.as_bytes().ct_eq(presented.as_bytes())) {
        return Err(invalid());
    }
    let roles: Vec<String> = record
        .body
        .get("roles")
        .and_then(Value::as_array)
        .map(|roles| {
            roles
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let token = state
        .tokens
        .issue(&state.catalog, &db, &client_id, &roles)
        .await?;
    Ok(Json(json!({
        "access_token": token.access_token,
        "token_type": "bearer",
        "expires_in": token.expires_in,
    })))
}
