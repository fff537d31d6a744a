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
pub mod reader;
pub mod request;
pub mod settings;
pub mod tls;
pub mod transactions;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

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
    next_connection_id: AtomicI64,
}

impl MongoServer {
    pub fn new(state: Arc<AppState>, limits: settings::MongoLimits) -> MongoServer {
        let message_budget = reader::MessageBudget::new(limits.incoming_message_budget_bytes);
        let transaction_slots =
            crate::ops::sessions::transaction_slots(state.store.pool_status().max_size);
        MongoServer {
            state,
            cursors: CursorRegistry::new(limits.cursors),
            sessions: SessionRegistry::new(limits.sessions, transaction_slots),
            limits,
            message_budget,
            next_connection_id: AtomicI64::new(1),
        }
    }

    /// The next `connectionId` reported by `hello`.
    pub fn next_connection_id(&self) -> i64 {
        self.next_connection_id.fetch_add(1, Ordering::Relaxed)
    }
}
