//! The handshake and session housekeeping drivers send on their own: `hello`/`isMaster`
//! (limits, wire version, compression negotiation), `buildInfo`, `whatsmyuri`,
//! `endSessions`, `killAllSessions`.
//!
//! Not for: authentication (`saslSupportedMechs` and `speculativeAuthenticate` are answered
//! by `auth.rs`, which dispatch calls after `hello`).

use bson::{doc, Bson, DateTime, Document};
use docgate_wire::{Compressor, MAX_MESSAGE_SIZE_BYTES};

use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::{opt_array, CommandRequest};

use crate::mongo::limits::{
    LOGICAL_SESSION_TIMEOUT_MINUTES, MAX_WIRE_VERSION, MAX_WRITE_BATCH_SIZE, MONGODB_VERSION,
};
use crate::ops::prepare::MAX_BSON_OBJECT_SIZE;

/// `hello` / `isMaster`: who we are and what we accept. Negotiates compression.
pub fn hello(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    if let Some(requested) = opt_array(&request.body, "compression")? {
        context.connection.compressors = requested
            .iter()
            .filter_map(|name| match name {
                Bson::String(name) => Compressor::from_name(name),
                _ => None,
            })
            .collect();
    }
    if let Some(Bson::Document(client)) = request.body.get("client") {
        if context.connection.client_metadata.is_none() {
            context.connection.client_metadata = Some(client.clone());
        }
    }
    let legacy = request.name != "hello";
    let mut reply = Document::new();
    if request.body.get("helloOk").is_some() {
        reply.insert("helloOk", true);
    }
    reply.insert(
        if legacy {
            "ismaster"
        } else {
            "isWritablePrimary"
        },
        true,
    );
    reply.insert("maxBsonObjectSize", MAX_BSON_OBJECT_SIZE);
    reply.insert("maxMessageSizeBytes", MAX_MESSAGE_SIZE_BYTES as i32);
    reply.insert("maxWriteBatchSize", MAX_WRITE_BATCH_SIZE);
    reply.insert("localTime", DateTime::now());
    reply.insert(
        "logicalSessionTimeoutMinutes",
        LOGICAL_SESSION_TIMEOUT_MINUTES,
    );
    reply.insert("connectionId", context.connection.id);
    reply.insert("minWireVersion", 0);
    reply.insert("maxWireVersion", MAX_WIRE_VERSION);
    reply.insert("readOnly", false);
    let compression: Vec<Bson> = context
        .connection
        .compressors
        .iter()
        .map(|c| Bson::String(c.name().to_string()))
        .collect();
    if !compression.is_empty() {
        reply.insert("compression", compression);
    }
    Ok(reply)
}

/// `buildInfo`: the MongoDB version we speak for, plus docgate's own version and backend.
pub fn build_info(context: &CommandContext<'_>) -> Document {
    doc! {
        "version": MONGODB_VERSION,
        "gitVersion": "docgate",
        "versionArray": [7, 0, 0, 0],
        "bits": 64,
        "debug": cfg!(debug_assertions),
        "maxBsonObjectSize": MAX_BSON_OBJECT_SIZE,
        "modules": [],
        "allocator": "system",
        "javascriptEngine": "none",
        "sysInfo": "deprecated",
        "storageEngines": [context.server.state.store.backend_name()],
        "openssl": {"running": "disabled", "compiled": "disabled"},
        "buildEnvironment": {"target_os": std::env::consts::OS, "target_arch": std::env::consts::ARCH},
        "docgate": {
            "version": env!("CARGO_PKG_VERSION"),
            "backend": context.server.state.store.backend_name(),
        },
    }
}

/// `whatsmyuri`: the client's address.
pub fn whats_my_uri(context: &CommandContext<'_>) -> CommandResult {
    Ok(doc! {"you": context.connection.peer.to_string()})
}

/// `endSessions`: forget the sessions and close their cursors.
pub fn end_sessions(context: &CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let Bson::Array(sessions) = request.target() else {
        return Err(OpError::TypeMismatch(
            "endSessions takes an array of session ids".into(),
        ));
    };
    let ids: Vec<Bson> = sessions
        .iter()
        .filter_map(|s| match s {
            Bson::Document(lsid) => lsid.get("id").cloned(),
            _ => None,
        })
        .collect();
    context.server.cursors.kill_sessions(&ids);
    Ok(Document::new())
}

/// `killAllSessions`: close every cursor.
pub fn kill_all_sessions(context: &CommandContext<'_>) -> CommandResult {
    context.server.cursors.kill_all();
    Ok(Document::new())
}
