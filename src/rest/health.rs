//! Health probes for load balancers and orchestrators, on the REST listener, without
//! authentication (they reveal nothing but up or down):
//! - `GET /livez`: 200 `{"status":"ok"}` while the process serves requests;
//! - `GET /readyz`: 200 `{"status":"ok","backend":…}` when the database answers a statement
//!   (the catalog version, read through a pooled session) within 2 seconds, else 503
//!   `{"status":"unavailable",…}` naming no internals — the detail goes to the server log.
//!
//! Not for: metrics (counters are in `serverStatus`).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::RestState;

/// How long `/readyz` waits for the database before it answers 503.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The probe routes.
pub fn routes() -> Router<Arc<RestState>> {
    Router::new()
        .route("/livez", get(live))
        .route("/readyz", get(ready))
}

async fn live() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn ready(State(state): State<Arc<RestState>>) -> (StatusCode, Json<Value>) {
    let backend = state.store.backend_name();
    let probe = async {
        let mut session = state.store.session().await?;
        session.catalog_version().await
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
