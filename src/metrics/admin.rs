//! The admin listener (`--admin-listen`, default `127.0.0.1:9216`, `off` for none): plain
//! HTTP serving `GET /metrics` (the Prometheus text exposition), `/livez` and `/readyz`
//! (`health`), without authentication, like MongoDB's exporters: it binds loopback by
//! default, and it is bound beyond loopback only when an operator says so.
//!
//! Not for: the REST front end's routes, or anything that changes state.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::{health, MetricSource, Samples};
use crate::state::AppState;

/// What the admin listener serves from: the shared state and the sources the front ends
/// registered.
pub struct AdminServer {
    pub state: Arc<AppState>,
    pub sources: Vec<Arc<dyn MetricSource>>,
}

impl AdminServer {
    /// The text `/metrics` answers now.
    pub fn exposition(&self) -> String {
        let mut samples = Samples::default();
        self.state.sample(&mut samples);
        for source in &self.sources {
            source.sample(&mut samples);
        }
        self.state.metrics.render(samples)
    }
}

/// The admin routes.
pub fn router(admin: Arc<AdminServer>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/livez", get(|| async { health::live() }))
        .route("/readyz", get(ready))
        .with_state(admin)
}

async fn metrics(State(admin): State<Arc<AdminServer>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        )],
        admin.exposition(),
    )
}

async fn ready(State(admin): State<Arc<AdminServer>>) -> (StatusCode, Json<Value>) {
    health::ready(&admin.state).await
}

/// Serves the admin routes on `listener` until `shutdown` turns true.
pub async fn serve(
    admin: Arc<AdminServer>,
    listener: TcpListener,
    mut shutdown: watch::Receiver<bool>,
) {
    let stopping = async move {
        let _ = shutdown.wait_for(|stopping| *stopping).await;
    };
    if let Err(error) = axum::serve(listener, router(admin))
        .with_graceful_shutdown(stopping)
        .await
    {
        tracing::warn!(%error, "admin listener stopped");
    }
}
