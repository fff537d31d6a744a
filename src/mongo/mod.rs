//! The MongoDB front end: a TCP listener speaking the wire protocol to drivers and mongosh,
//! optionally over TLS, one task per connection, command dispatch; cursors are the core's
//! (`ops::cursors`), kept here for the connections to share.
//!
//! Not for: SQL (commands talk to the core — `query`, `catalog` — and to the `Store` trait
//! with neutral requests), or framing details (those live in the `docgate-wire` crate).

pub mod arguments;
pub mod command_table;
pub mod commands;
pub mod connection;
pub mod context;
pub mod dispatch;
pub mod error;
pub mod limits;
pub mod listener;
pub mod observe;
pub mod reader;
pub mod request;
pub mod settings;
pub mod stable_api;
pub mod stable_api_operators;
pub mod tls;
pub mod transactions;

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use bson::oid::ObjectId;

use crate::ops::cursors::CursorRegistry;
use crate::ops::sessions::SessionRegistry;
use crate::state::AppState;

/// What every connection of the mongo front end shares.
pub struct MongoServer {
    pub state: Arc<AppState>,
    pub cursors: CursorRegistry,
    /// Logical sessions, their transactions and retryable writes (the core's).
    pub sessions: SessionRegistry,
    /// Bytes of incoming messages all connections may hold at once (`reader`).
    pub message_budget: reader::MessageBudget,
    /// What each connection and command is allowed (`[limits]`).
    pub limits: settings::MongoLimits,
    /// How the server presents itself (replica set or standalone, load-balanced, test
    /// commands).
    pub face: settings::FaceSettings,
    /// The `HOST:PORT` `hello` names as the replica set's one member: `--advertise`, else
    /// the listen address.
    pub advertise: String,
    /// `topologyVersion.processId`: fixed for the life of the process.
    pub process_id: ObjectId,
    /// `serviceId` of load-balanced connections: fixed for the life of the process.
    pub service_id: ObjectId,
    /// The fail points `configureFailPoint` set (`--enable-test-commands`).
    pub fail_points: commands::fail_points::FailPoints,
    /// Each command's `/metrics` series (`observe`).
    pub command_series: observe::CommandSeriesTable,
    /// Set when shutdown begins, so that awaitable `hello`s answer at once.
    draining: AtomicBool,
    /// Notified by the `shutdown` command: the process stops as on SIGTERM.
    shutdown_requested: tokio::sync::Notify,
    next_connection_id: AtomicI64,
}

impl MongoServer {
    /// The server for `state`; `face.advertise` unset advertises the listen address of the
    /// settings (pass the bound address there when listening on port 0).
    pub fn new(
        state: Arc<AppState>,
        limits: settings::MongoLimits,
        face: settings::FaceSettings,
    ) -> MongoServer {
        let message_budget = reader::MessageBudget::new(limits.incoming_message_budget_bytes);
        let transaction_slots =
            crate::ops::sessions::transaction_slots(state.store.pool_status().max_size);
        let advertise = face
            .advertise
            .clone()
            .unwrap_or_else(|| state.settings.listen.to_string());
        MongoServer {
            state,
            cursors: CursorRegistry::new(limits.cursors),
            sessions: SessionRegistry::new(limits.sessions, transaction_slots),
            limits,
            face,
            advertise,
            process_id: ObjectId::new(),
            service_id: ObjectId::new(),
            fail_points: commands::fail_points::FailPoints::default(),
            command_series: Default::default(),
            draining: AtomicBool::new(false),
            shutdown_requested: tokio::sync::Notify::new(),
            message_budget,
            next_connection_id: AtomicI64::new(1),
        }
    }

    /// Whether the server presents itself as a replica set member (not standalone).
    pub fn is_replica_set(&self) -> bool {
        self.face.topology == settings::Topology::ReplicaSet
    }

    /// Marks the start of shutdown (awaitable `hello`s stop waiting).
    pub fn begin_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// Asks the process to stop as on SIGTERM (the `shutdown` command).
    pub fn request_shutdown(&self) {
        self.shutdown_requested.notify_one();
    }

    /// Resolves once the `shutdown` command has asked the process to stop.
    pub async fn shutdown_requested(&self) {
        self.shutdown_requested.notified().await
    }

    /// Whether shutdown has begun.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// The next `connectionId` reported by `hello`.
    pub fn next_connection_id(&self) -> i64 {
        self.next_connection_id.fetch_add(1, Ordering::Relaxed)
    }
}
