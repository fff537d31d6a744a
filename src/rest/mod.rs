//! The REST front end: an axum router in the style of Oracle REST Data Services, served in
//! the same process and over the same `AppState` as the mongo front end (one catalog cache,
//! one pool). Routes live under `/ords/{db}/`:
//! - `soda/latest/…` — the document API (`soda`);
//! - `_/modules/…` — REST module administration (`modules::admin`);
//! - `_/oauth/clients`, `oauth/token` — OAuth2 client credentials (`oauth`);
//! - `open-api-catalog/` — OpenAPI 3 description of the published modules (`openapi`);
//! - anything else — the handlers of the database's published REST modules
//!   (`modules::dispatch`).
//!
//! Outside `/ords/`, `/livez` and `/readyz` are health probes (`health`).
//!
//! Every request runs as an operation `currentOp` lists and `killOp` stops, with a request
//! id (`X-Request-Id`) in its log lines and its response (`running`).
//!
//! Every error is a JSON body with the right status (`error`); unknown routes are 404 and
//! known routes with another method 405, in the same shape. Each response carries its route
//! (the router's pattern, or a module's template) for `/metrics`, and the front end's limits
//! are sampled there (`MetricSource for RestState`).
//!
//! Not for: the wire protocol, or SQL (requests reach data through `operations`, which runs
//! the core's planner and the store's sessions).

pub mod demo;
pub mod error;
pub mod extjson;
pub mod extract;
pub mod health;
pub mod listener;
pub mod modules;
pub mod oauth;
pub mod openapi;
pub mod operations;
pub mod page;
pub mod running;
pub mod security;
pub mod settings;
pub mod soda;
pub mod tokens;

use std::sync::Arc;

use settings::{RestLimits, RestSettings};

use axum::extract::DefaultBodyLimit;
use axum::http::Uri;
use axum::response::Response;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::metrics::RestRoute;
use crate::state::AppState;
use error::RestError;

/// What REST handlers share: the process's `AppState` (reached through `Deref`), the REST
/// front end's token service, its limits and its parsed modules.
pub struct RestState {
    pub app: Arc<AppState>,
    pub tokens: tokens::TokenService,
    /// What the listener allows each client.
    pub limits: RestLimits,
    /// REST modules parsed from the catalog's cached records.
    pub modules: modules::dispatch::ParsedModules,
}

impl std::ops::Deref for RestState {
    type Target = AppState;

    fn deref(&self) -> &AppState {
        &self.app
    }
}

impl RestState {
    /// The REST state over `app`; fails when the token settings cannot be used (an
    /// unreadable JWKS file).
    pub fn new(app: Arc<AppState>, settings: &RestSettings) -> Result<Arc<RestState>, String> {
        let tokens = tokens::TokenService::new(settings)?;
        Ok(Arc::new(RestState {
            app,
            tokens,
            limits: settings.limits.clone(),
            modules: Default::default(),
        }))
    }
}

/// The whole REST router over the shared state. The body limit is raised for the built-in
/// routes (their extractors read bodies); the module dispatcher, the fallback, reads its
/// body itself under the same limit, so it is added after the layer and pays nothing for it.
pub fn router(state: Arc<RestState>) -> Router {
    let max_body = state.limits.max_body_bytes;
    Router::new()
        .merge(soda::routes())
        .merge(modules::admin::routes())
        .merge(oauth::routes())
        .merge(openapi::routes())
        .merge(health::routes())
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body))
        .fallback(modules::dispatch::serve)
        .layer(axum::middleware::from_fn(label_route))
        .with_state(state)
}

/// Labels the response with its route for `/metrics` (the listener records it): the
/// router's path pattern, unless the module dispatcher named the module and template.
async fn label_route(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let matched = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|path| path.as_str().to_owned());
    let mut response = next.run(request).await;
    if response.extensions().get::<RestRoute>().is_none() {
        response.extensions_mut().insert(RestRoute {
            module: String::new(),
            route: matched.unwrap_or_else(|| "unmatched".to_owned()),
        });
    }
    response
}

async fn method_not_allowed(uri: Uri) -> RestError {
    RestError::MethodNotAllowed(format!("this method is not allowed on {}", uri.path()))
}

/// Serves `router(state)` on `listener` until `shutdown` turns true, then lets requests in
/// flight finish (see `listener` for its limits).
pub async fn serve(state: Arc<RestState>, listener: TcpListener, shutdown: watch::Receiver<bool>) {
    let limits = state.limits.clone();
    let app = state.app.clone();
    self::listener::serve(router(state), app, limits, listener, shutdown).await
}

impl crate::metrics::MetricSource for RestState {
    /// The REST front end's limits as configured (0: none).
    fn sample(&self, samples: &mut crate::metrics::Samples) {
        let limits = &self.limits;
        for (limit, value) in [
            ("rest_max_connections", limits.max_connections as f64),
            (
                "rest_idle_timeout_seconds",
                limits.idle_timeout.as_secs_f64(),
            ),
            (
                "rest_request_timeout_seconds",
                limits.request_timeout.map_or(0.0, |d| d.as_secs_f64()),
            ),
            ("rest_max_body_bytes", limits.max_body_bytes as f64),
            ("rest_max_json_depth", limits.max_json_depth as f64),
        ] {
            samples.gauge(
                "docgate_limit",
                "Each limit as configured, by its setting (0: none)",
                &[("limit", limit)],
                value,
            );
        }
    }
}
