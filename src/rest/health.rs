//! The health probes on the REST listener, `GET /livez` and `GET /readyz`, without
//! authentication: the same answers as on the admin listener (`crate::metrics::health`).
//!
//! Not for: metrics (`/metrics` is on the admin listener only).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;

use super::RestState;
use crate::metrics::health;

/// The probe routes.
pub fn routes() -> Router<Arc<RestState>> {
    Router::new()
        .route("/livez", get(|| async { health::live() }))
        .route("/readyz", get(ready))
}

async fn ready(State(state): State<Arc<RestState>>) -> (StatusCode, Json<Value>) {
    health::ready(&state).await
}
