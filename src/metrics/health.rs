//! The health probes, one implementation served on the admin listener and on the REST
//! listener, without authentication (they reveal nothing but up or down):
//! - `GET /livez`: 200 `{"status":"ok"}` while the process serves requests;
//! - `GET /readyz`: 200 `{"status":"ok","backend":…}` when the database answers a statement
//!   (the catalog version, read through a pooled session) and the catalog is loaded (from
//!   the metadata cache or read afresh), within 2 seconds; else 503
//!   `{"status":"unavailable",…}` naming no internals — the detail goes to the server log.
//!
//! Not for: routing (each listener mounts these on its own router).

use std::time::Duration;

use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use crate::state::AppState;

/// How long `/readyz` waits for the database before it answers 503.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// `/livez`'s answer.
pub fn live() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// `/readyz`'s answer: the backend is reachable and the catalog loaded.
pub async fn ready(state: &AppState) -> (StatusCode, Json<Value>) {
    let backend = state.store.backend_name();
    let probe = async {
        let mut session = state.store.session().await?;
        session.catalog_version().await?;
        drop(session);
        state.catalog.snapshot().await
    };
    let reason = match tokio::time::timeout(READY_TIMEOUT, probe).await {
        Ok(Ok(_)) => {
            return (
                StatusCode::OK,
                Json(json!({"status": "ok", "backend": backend})),
            )
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness probe: the database did not answer");
            "the database did not answer"
        }
        Err(_) => {
            tracing::warn!("readiness probe: the database did not answer within 2 s");
            "the database did not answer in time"
        }
    };
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({"status": "unavailable", "backend": backend, "reason": reason})),
    )
}
