//! The handshake and session housekeeping drivers send on their own: `hello`/`isMaster`
//! (limits, wire version, compression negotiation; the replica-set face — set name, hosts,
//! primary, topology version, last write — unless `--topology standalone`; the `serviceId` of
//! load-balanced connections; the awaitable `hello` of drivers' streaming monitors),
//! `buildInfo`, `whatsmyuri`, `endSessions`, `killAllSessions`.
//!
//! Not for: authentication (`saslSupportedMechs` and `speculativeAuthenticate` are answered
//! by `auth.rs`, which dispatch calls after `hello`).

use bson::{doc, oid::ObjectId, Bson, DateTime, Document, Timestamp};
use docgate_wire::Compressor;

use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::{opt_array, CommandRequest};

use crate::mongo::limits::{
    LOGICAL_SESSION_TIMEOUT_MINUTES, MAX_WIRE_VERSION, MAX_WRITE_BATCH_SIZE, MONGODB_VERSION,
};

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
    let server = context.server;
    if server.is_replica_set() {
        reply.insert(
            "topologyVersion",
            doc! {"processId": server.process_id, "counter": 0_i64},
        );
        reply.insert("hosts", vec![server.advertise.clone()]);
        reply.insert("setName", server.face.replica_set.clone());
        reply.insert("setVersion", 1);
    }
    reply.insert(
        if legacy {
            "ismaster"
        } else {
            "isWritablePrimary"
        },
        true,
    );
    if server.is_replica_set() {
        reply.insert("secondary", false);
        reply.insert("primary", server.advertise.clone());
        reply.insert("me", server.advertise.clone());
        reply.insert("electionId", election_id());
        reply.insert("lastWrite", last_write(server.state.cluster_time.now()));
    }
    if load_balanced(request)? && server.face.load_balanced {
        // A server not started with --load-balanced answers as mongos does to a connection
        // that did not come through a load balancer: without serviceId, so the driver
        // refuses it ("the server does not support this mode").
        reply.insert("serviceId", server.service_id);
    }
    reply.insert("maxBsonObjectSize", max_bson_object_size(server));
    reply.insert(
        "maxMessageSizeBytes",
        server.limits.max_message_bytes as i32,
    );
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

/// Whether the `hello` asks for load-balanced mode (`loadBalanced: true`).
fn load_balanced(request: &CommandRequest) -> Result<bool, OpError> {
    match request.body.get("loadBalanced") {
        None => Ok(false),
        Some(Bson::Boolean(value)) => Ok(*value),
        Some(other) => Err(OpError::TypeMismatch(format!(
            "BSON field 'hello.loadBalanced' is the wrong type '{}', expected type 'bool'",
            crate::mongo::request::type_name(other)
        ))),
    }
}

/// The one election of the one-member set: term 1 (MongoDB's electionId is the max
/// 32-bit value followed by the term).
pub fn election_id() -> ObjectId {
    ObjectId::from_bytes([0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1])
}

/// The replication term: always 1 (there is never another election).
pub const TERM: i64 = 1;

/// An optime `{ts, t}` at cluster time `ts`.
pub fn op_time(ts: Timestamp) -> Document {
    doc! {"ts": ts, "t": TERM}
}

/// The wall-clock date of cluster time `ts` (its seconds).
pub fn wall_time(ts: Timestamp) -> DateTime {
    DateTime::from_millis(i64::from(ts.time) * 1000)
}

/// `serverStatus.repl` on the replica-set face: what `hello` says of the set.
pub fn repl_status(server: &crate::mongo::MongoServer) -> Document {
    doc! {
        "topologyVersion": {"processId": server.process_id, "counter": 0_i64},
        "hosts": [server.advertise.clone()],
        "setName": server.face.replica_set.clone(),
        "setVersion": 1,
        "isWritablePrimary": true,
        "secondary": false,
        "primary": server.advertise.clone(),
        "me": server.advertise.clone(),
        "electionId": election_id(),
        "lastWrite": last_write(server.state.cluster_time.now()),
    }
}

/// `hello.lastWrite`: the last write is the current cluster time, and majority-committed at
/// once (the set has one member, which commits before it answers).
fn last_write(now: Timestamp) -> Document {
    doc! {
        "opTime": op_time(now),
        "lastWriteDate": wall_time(now),
        "majorityOpTime": op_time(now),
        "majorityWriteDate": wall_time(now),
    }
}

/// The awaitable `hello` of a driver's streaming monitor (`topologyVersion` and
/// `maxAwaitTimeMS`): the topology of a one-member set never changes, so when the client
/// already knows this process's topology version it waits out `maxAwaitTimeMS` before the
/// reply, as MongoDB does (shutdown or the client going away ends the wait early). Any
/// other `hello` answers at once.
pub async fn await_topology_change(
    context: &CommandContext<'_>,
    request: &CommandRequest,
) -> Result<(), OpError> {
    let server = context.server;
    let (Some(Bson::Document(known)), Some(wait)) = (
        request.body.get("topologyVersion"),
        request.body.get("maxAwaitTimeMS"),
    ) else {
        return Ok(());
    };
    let Some(millis) = crate::mongo::request::as_i64(wait) else {
        return Err(OpError::TypeMismatch(
            "maxAwaitTimeMS must be a number".into(),
        ));
    };
    if millis < 0 {
        return Err(OpError::BadValue(
            "maxAwaitTimeMS must be a non-negative integer".into(),
        ));
    }
    let same_process = known.get_object_id("processId").ok() == Some(server.process_id);
    if !server.is_replica_set() || !same_process {
        return Ok(());
    }
    let interrupt = crate::compute::current_interrupt();
    let mut until = std::time::Instant::now() + std::time::Duration::from_millis(millis as u64);
    if let Some(deadline) = interrupt.deadline() {
        // A time limit (`maxTimeMS`, `--default-max-time-ms`) shortens the wait: the reply
        // comes in time instead of as MaxTimeMSExpired.
        let margin = std::time::Duration::from_millis(50);
        until = until.min(deadline.checked_sub(margin).unwrap_or(deadline));
    }
    while std::time::Instant::now() < until {
        if server.is_draining() || interrupt.status().is_err() {
            break;
        }
        let step = until
            .saturating_duration_since(std::time::Instant::now())
            .min(std::time::Duration::from_millis(100));
        tokio::time::sleep(step).await;
    }
    Ok(())
}

/// The largest document the server stores (`--max-document-bytes`), as drivers read it.
fn max_bson_object_size(server: &crate::mongo::MongoServer) -> i32 {
    i32::try_from(server.state.settings.documents.max_bytes).unwrap_or(i32::MAX)
}

/// `buildInfo`: the MongoDB version we speak for, plus docgate's own version and backend.
pub fn build_info(context: &CommandContext<'_>) -> Document {
    doc! {
        "version": MONGODB_VERSION,
        "gitVersion": "docgate",
        "versionArray": [7, 0, 0, 0],
        "bits": 64,
        "debug": cfg!(debug_assertions),
        "maxBsonObjectSize": max_bson_object_size(context.server),
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
