//! The REST accept loop: at most `--rest-max-connections` connections at once (more wait
//! in the kernel's accept queue), each served by hyper's HTTP/1.1 with a limit on how long
//! a request head may take and a keep-alive connection may stay idle
//! (`--rest-idle-timeout`), and every request run under its time limit
//! (`--rest-request-timeout`) and the blocking-stage memory limit (spilling past it, as a
//! command without `allowDiskUse: false`) as the interrupt of the evaluation it starts, listed as a
//! running operation with its request id (`running`) and stopped by `killOp`. On shutdown
//! the loop stops accepting and connections finish the request they are serving.
//!
//! Not for: routing or what a request does (see `router` and the handlers).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::Request;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio_util::task::TaskTracker;
use tower_service::Service;

use super::error::RestError;
use super::settings::RestLimits;
use crate::interrupt::{Interrupt, Interruption};
use crate::metrics::{LimitHit, RestRoute};
use crate::state::{AppState, ServerCounters};

/// Serves `app` on `listener` until `shutdown` turns true, then lets requests in flight
/// finish (for at most the shutdown grace).
pub async fn serve(
    app: Router,
    state: Arc<AppState>,
    limits: RestLimits,
    listener: TcpListener,
    mut shutdown: watch::Receiver<bool>,
) {
    let grace = state.settings.shutdown_grace;
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let tracker = TaskTracker::new();
    loop {
        if slots.available_permits() == 0 {
            state.metrics.limit_hit(LimitHit::RestMaxConnections);
        }
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            _ = shutdown.changed() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(error) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(%error, "rest accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = shutdown.changed() => break,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let connection_shutdown = shutdown.clone();
        let limits = limits.clone();
        let state = state.clone();
        tracker.spawn(async move {
            let counters = &state.counters;
            ServerCounters::add(&counters.rest_connections_current, 1);
            ServerCounters::add(&counters.rest_connections_total, 1);
            serve_connection(app, &state, limits, stream, peer, connection_shutdown).await;
            counters
                .rest_connections_current
                .fetch_sub(1, Ordering::Relaxed);
            drop(permit);
        });
    }
    tracker.close();
    if tokio::time::timeout(grace, tracker.wait()).await.is_err() {
        tracing::warn!("rest requests still running after {grace:?}; exiting anyway");
    }
}

async fn serve_connection(
    app: Router,
    state: &Arc<AppState>,
    limits: RestLimits,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    mut shutdown: watch::Receiver<bool>,
) {
    let request_timeout = limits.request_timeout;
    let blocking_memory = limits.blocking_memory;
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        let mut app = app.clone();
        let state = state.clone();
        let blocking_memory = blocking_memory.clone();
        async move {
            let started = Instant::now();
            let method = request.method().clone();
            let interrupt = Interrupt::new(request_timeout.map(|limit| Instant::now() + limit));
            interrupt.limit_blocking_memory(blocking_memory);
            // Listed by `currentOp` (and killed by `killOp`) while it runs; its log lines
            // carry its request id.
            let operation = super::running::begin(&state, &request, peer, &interrupt);
            let running = app.call(request.map(axum::body::Body::new));
            let limited = async {
                match interrupt.deadline() {
                    None => running.await,
                    Some(deadline) => match tokio::time::timeout_at(deadline.into(), running).await
                    {
                        Ok(response) => response,
                        Err(_) => {
                            interrupt.cancel(Interruption::TimeLimit);
                            state.metrics.limit_hit(LimitHit::RestRequestTimeout);
                            Ok::<Response, Infallible>(
                                RestError::from(Interruption::TimeLimit).into_response(),
                            )
                        }
                    },
                }
            };
            let killed = async {
                match interrupt.cancelled().await {
                    Interruption::Killed => Interruption::Killed,
                    _ => std::future::pending().await,
                }
            };
            let handled = async {
                tokio::select! {
                    biased;
                    response = limited => response,
                    reason = killed => Ok(RestError::from(reason).into_response()),
                }
            };
            let response = crate::compute::scope(
                interrupt.clone(),
                tracing::Instrument::instrument(handled, operation.span.clone()),
            )
            .await;
            if let Ok(response) = &response {
                record(&state, &method, response, started);
            }
            response.map(|mut response| {
                if let Some(id) = super::running::header_value(&operation.request_id) {
                    response
                        .headers_mut()
                        .insert(super::running::REQUEST_ID_HEADER, id);
                }
                response
            })
        }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.idle_timeout)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%peer, %error, "rest connection ended");
            }
        }
        _ = async { shutdown.wait_for(|stopping| *stopping).await.is_ok() } => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// Records a request for `/metrics`: its route (labelled by the router; a request cut off
/// by its time limit has none), method, status and time; a 413 is the body limit's hit.
fn record(state: &AppState, method: &axum::http::Method, response: &Response, started: Instant) {
    let status = response.status();
    if status == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        state.metrics.limit_hit(LimitHit::RestBodySize);
    }
    let elapsed = started.elapsed();
    let status = status.as_u16();
    match response.extensions().get::<RestRoute>() {
        Some(route) => state
            .metrics
            .record_rest_request(route, method, status, elapsed),
        None => {
            let timed_out = RestRoute {
                module: String::new(),
                route: "timed out".to_owned(),
            };
            state
                .metrics
                .record_rest_request(&timed_out, method, status, elapsed)
        }
    }
}
