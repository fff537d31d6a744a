//! `shutdown`: stops the server as SIGTERM does — it stops accepting connections, lets the
//! commands and requests running finish within `--shutdown-grace`, interrupts the rest
//! (11600 InterruptedAtShutdown) and exits. Only on `admin`, with the `shutdown`
//! privilege, and without access control only from a loopback client (as MongoDB).
//! `force: true` and `timeoutSecs` would change how long running commands get; docgate
//! takes that from `--shutdown-grace` and refuses them.
//!
//! Not for: the shutdown itself (`main.rs` and the listeners).

use bson::{doc, Bson};

use crate::auth::service::Access;
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::CommandRequest;

/// `shutdown: 1` (on `admin`): `{ok: 1}`, then the server stops.
pub fn shutdown(context: &CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    if request.db != "admin" {
        return Err(OpError::Unauthorized(
            "shutdown may only be run against the admin database.".into(),
        ));
    }
    let mut arguments = request.arguments();
    let force = arguments.bool("force")?.unwrap_or(false);
    let timeout = arguments.value("timeoutSecs");
    arguments.finish()?;
    if force || timeout.is_some_and(|t| !matches!(t, Bson::Null)) {
        return Err(OpError::NotSupported(
            "shutdown with force or timeoutSecs is not supported by docgate: running commands \
             get --shutdown-grace"
                .into(),
        ));
    }
    let open = context.connection.auth.access != Some(Access::Required);
    if open && !context.connection.peer.ip().is_loopback() {
        return Err(OpError::Unauthorized(
            "shutdown must run from localhost when running db without auth".into(),
        ));
    }
    tracing::info!(client = %context.connection.peer, "shutdown requested by command");
    context.server.request_shutdown();
    Ok(doc! {})
}
