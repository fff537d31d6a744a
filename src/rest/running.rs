//! REST requests as running operations: each request is registered with the core's
//! operation registry while it runs (so `currentOp` lists it and `killOp` interrupts it,
//! like a wire command), and gets a request id — the client's `X-Request-Id` when it sends
//! a sensible one, else `rest-<opid>` — that every log line of the request carries (the
//! `request` field of its span) and the response echoes in `X-Request-Id`.
//!
//! Not for: the accept loop and time limits (`listener`), or what a request does.

use std::net::SocketAddr;

use bson::doc;
use hyper::header::HeaderValue;
use hyper::Request;

use crate::interrupt::Interrupt;
use crate::ops::operations::{OperationClient, OperationStart, RunningGuard};
use crate::state::AppState;

/// The header a request id comes and goes in.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The longest request id taken from a client.
const MAX_REQUEST_ID: usize = 128;

/// A running REST request: listed until dropped.
pub struct RestOperation<'s> {
    _running: RunningGuard<'s>,
    /// Its request id.
    pub request_id: String,
    /// The span its log lines are in.
    pub span: tracing::Span,
}

/// Registers `request` from `peer`, running under `interrupt`.
pub fn begin<'s, B>(
    state: &'s AppState,
    request: &Request<B>,
    peer: SocketAddr,
    interrupt: &Interrupt,
) -> RestOperation<'s> {
    let path = request.uri().path();
    let start = OperationStart {
        op: "command",
        ns: namespace(path),
        command: doc! {"rest": request.method().as_str(), "path": path},
        client: std::sync::Arc::new(OperationClient {
            client: Some(peer.to_string()),
            connection_id: None,
            desc: "rest".into(),
            app_name: request
                .headers()
                .get(hyper::header::USER_AGENT)
                .and_then(|agent| agent.to_str().ok())
                .map(|agent| agent.chars().take(MAX_REQUEST_ID).collect()),
            client_metadata: None,
        }),
        user: None,
        lsid: None,
    };
    let running = state.operations.begin(start, interrupt.clone());
    let opid = running.operation().opid;
    let request_id = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|id| id.to_str().ok())
        .filter(|id| {
            !id.is_empty() && id.len() <= MAX_REQUEST_ID && id.bytes().all(|b| b.is_ascii_graphic())
        })
        .map_or_else(|| format!("rest-{opid}"), str::to_string);
    let span = tracing::info_span!("request", request = %request_id, opid);
    RestOperation {
        _running: running,
        request_id,
        span,
    }
}

/// The request id as a response header value.
pub fn header_value(request_id: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(request_id).ok()
}

/// `db.collection` of a document API path (`/ords/{db}/soda/latest/{collection}…`), else
/// `db.$cmd` for another `/ords/{db}/…` path, else the empty namespace.
fn namespace(path: &str) -> String {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["ords", db, "soda", _, collection, ..] => format!("{db}.{collection}"),
        ["ords", db, ..] => format!("{db}.$cmd"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_come_from_the_path() {
        assert_eq!(namespace("/ords/shop/soda/latest/orders/17"), "shop.orders");
        assert_eq!(namespace("/ords/shop/concerts/events"), "shop.$cmd");
        assert_eq!(namespace("/livez"), "");
    }
}
