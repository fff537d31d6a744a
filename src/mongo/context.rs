//! What a command handler gets: the server it runs in and the connection it came on
//! (`ConnectionInfo`: its id, peer, negotiated compressors, client metadata,
//! authentication, and whether a fail point asked it to hang up), with the few lookups every handler makes.
//!
//! Not for: running commands (`dispatch.rs`).

use std::net::SocketAddr;

use bson::{Bson, Document};
use docgate_wire::Compressor;

use super::commands::auth::ConnectionAuth;
use super::error::OpError;
use super::request::CommandRequest;
use super::MongoServer;
use crate::ops::transaction::{OpScope, SessionTransaction};
use crate::store::StoreSession;

/// What one connection knows about itself.
#[derive(Debug)]
pub struct ConnectionInfo {
    /// `connectionId` reported by `hello`.
    pub id: i64,
    pub peer: SocketAddr,
    /// Compressors negotiated in the handshake, in the client's order of preference.
    pub compressors: Vec<Compressor>,
    /// Client metadata sent with the first `hello` (driver name, app name).
    pub client_metadata: Option<Document>,
    /// Who the client authenticated as, and SCRAM conversations in progress.
    pub auth: ConnectionAuth,
    /// Set by the `failCommand` fail point's `closeConnection`: the connection closes
    /// without sending the reply.
    pub hang_up: bool,
    /// The connection as `currentOp` describes it, made at its first command after the
    /// handshake (`commands::operations`).
    pub operation_client: Option<std::sync::Arc<crate::ops::operations::OperationClient>>,
}

impl ConnectionInfo {
    pub fn new(id: i64, peer: SocketAddr) -> ConnectionInfo {
        ConnectionInfo {
            id,
            peer,
            compressors: Vec::new(),
            client_metadata: None,
            auth: ConnectionAuth::default(),
            hang_up: false,
            operation_client: None,
        }
    }
}

/// Everything a handler gets.
pub struct CommandContext<'a> {
    pub server: &'a MongoServer,
    pub connection: &'a mut ConnectionInfo,
    /// The session transaction the command joins: its session's multi-document
    /// transaction, or a retryable write's own (see `transactions`).
    pub transaction: Option<&'a mut SessionTransaction>,
}

impl CommandContext<'_> {
    /// Where the command's operations run: joined to its transaction, if it has one.
    pub fn scope(&mut self) -> OpScope<'_> {
        let state = &self.server.state;
        match &mut self.transaction {
            Some(transaction) => OpScope::joined(state, transaction),
            None => OpScope::autocommit(state),
        }
    }

    /// Whether the command runs inside a multi-document transaction or a retryable write.
    pub fn in_transaction(&self) -> bool {
        self.transaction.is_some()
    }

    /// A pooled store session for one command.
    pub async fn open_session(&self) -> Result<Box<dyn StoreSession>, OpError> {
        Ok(self.server.state.store.session().await?)
    }

    /// The shared catalog.
    pub fn catalog(&self) -> &crate::catalog::Catalog {
        &self.server.state.catalog
    }

    /// The collection `db.name` with its indexes, if it exists (inside the command's
    /// transaction, as that transaction sees it).
    pub async fn collection_info(
        &mut self,
        db: &str,
        name: &str,
    ) -> Result<Option<std::sync::Arc<crate::catalog::CollectionInfo>>, OpError> {
        self.scope().collection_info(db, name).await
    }

    /// The logical session id (`lsid.id`) the command carries, if any.
    pub fn session_of(request: &CommandRequest) -> Option<Bson> {
        match request.body.get("lsid") {
            Some(Bson::Document(lsid)) => lsid.get("id").cloned(),
            _ => None,
        }
    }

    /// Who a cursor opened or used by this command belongs to: its session and the
    /// connection's user.
    pub fn cursor_owner(&self, request: &CommandRequest) -> crate::ops::cursors::CursorOwner {
        crate::ops::cursors::CursorOwner {
            session: CommandContext::session_of(request),
            user: self
                .connection
                .auth
                .user
                .as_ref()
                .map(|user| (user.db.clone(), user.name.clone())),
        }
    }
}
