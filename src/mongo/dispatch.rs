//! Command dispatch: the table of supported commands, the per-connection facts commands may
//! read or set (`ConnectionInfo`), and the one place where a handler's result becomes a
//! reply (`ok: 1` added, errors mapped by `OpError`). A reply is a document, or for the
//! cursor commands BSON bytes already, so stored documents reach the client undecoded.
//!
//! Not for: the commands themselves (one file per family under `commands/`).

use std::net::SocketAddr;

use bson::{Bson, Document, RawDocumentBuf};
use docgate_wire::Compressor;

use super::commands::auth::ConnectionAuth;
use super::commands::{
    aggregate, auth, delete, diagnostics, explain, find, find_and_modify, handshake, indexes,
    insert, namespaces, stats, update, users,
};
use super::error::{CommandResult, OpError, ReplyResult};
use super::request::CommandRequest;
use super::MongoServer;
use crate::interrupt::{Interrupt, Interruption};
use crate::state::ServerCounters;

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
}

impl ConnectionInfo {
    pub fn new(id: i64, peer: SocketAddr) -> ConnectionInfo {
        ConnectionInfo {
            id,
            peer,
            compressors: Vec::new(),
            client_metadata: None,
            auth: ConnectionAuth::default(),
        }
    }
}

/// Everything a handler gets.
pub struct CommandContext<'a> {
    pub server: &'a MongoServer,
    pub connection: &'a mut ConnectionInfo,
}

impl CommandContext<'_> {
    /// The shared catalog.
    pub fn catalog(&self) -> &crate::catalog::Catalog {
        &self.server.state.catalog
    }

    /// The collection `db.name` with its indexes, if it exists.
    pub async fn collection_info(
        &self,
        db: &str,
        name: &str,
    ) -> Result<Option<std::sync::Arc<crate::catalog::CollectionInfo>>, crate::store::StoreError>
    {
        self.server.state.catalog.collection_info(db, name).await
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
    pub fn cursor_owner(&self, request: &CommandRequest) -> crate::mongo::cursors::CursorOwner {
        crate::mongo::cursors::CursorOwner {
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

/// The commands docgate answers, with the help text `listCommands` shows.
pub const COMMANDS: &[(&str, &str)] = &[
    ("authenticate", "Legacy authentication (MONGODB-X509 is not offered)."),
    ("aggregate", "Runs an aggregation pipeline ($match, $group, $sort, $skip, $limit, $count, $project, ...)."),
    ("buildInfo", "Build details of this server."),
    ("collStats", "Size and count of a collection."),
    ("connectionStatus", "Authentication state of this connection."),
    ("count", "Counts the documents matching a query."),
    ("create", "Creates a collection."),
    ("createRole", "Creates a role that bundles built-in roles."),
    ("createUser", "Creates a user."),
    ("createIndexes", "Builds secondary indexes (single field, compound, unique, sparse, partial, TTL)."),
    ("dbStats", "Size and counts of a database."),
    ("delete", "Deletes documents."),
    ("distinct", "Distinct values of a field."),
    ("drop", "Drops a collection."),
    ("dropAllUsersFromDatabase", "Drops every user of a database."),
    ("dropRole", "Drops a user-defined role."),
    ("dropUser", "Drops a user."),
    ("dropIndexes", "Drops secondary indexes."),
    ("dropDatabase", "Drops a database and all its collections."),
    ("endSessions", "Ends logical sessions and their cursors."),
    ("explain", "How a find, count, distinct, aggregate, update, delete or findAndModify would run."),
    ("find", "Queries a collection."),
    ("findAndModify", "Updates or removes one document and returns it."),
    ("getCmdLineOpts", "The command line this server was started with."),
    ("getLog", "Recent log messages (startupWarnings)."),
    ("getMore", "Next batch of a cursor."),
    ("getParameter", "Server parameters."),
    ("grantRolesToUser", "Grants roles to a user."),
    ("hello", "Handshake: server capabilities and limits."),
    ("hostInfo", "The machine this server runs on."),
    ("insert", "Inserts documents."),
    ("isMaster", "Legacy handshake (hello)."),
    ("killAllSessions", "Kills all sessions and their cursors."),
    ("killCursors", "Closes cursors."),
    ("listCollections", "Lists the collections of a database."),
    ("listCommands", "Lists the supported commands."),
    ("listDatabases", "Lists databases."),
    ("listIndexes", "Lists the indexes of a collection."),
    ("logout", "Ends the connection's authentication."),
    ("ping", "Checks that the server answers."),
    ("renameCollection", "Renames a collection, possibly into another database."),
    ("revokeRolesFromUser", "Revokes roles from a user."),
    ("rolesInfo", "Built-in and user-defined roles."),
    ("saslContinue", "Continues a SASL authentication conversation."),
    ("saslStart", "Starts SASL authentication (SCRAM-SHA-256, SCRAM-SHA-1, PLAIN)."),
    ("serverStatus", "Counters and state of this server."),
    ("update", "Updates documents."),
    ("updateUser", "Changes a user's password, roles or customData."),
    ("usersInfo", "Users of a database."),
    ("validate", "Checks a collection's documents and _id index."),
    ("whatsmyuri", "The client's address as the server sees it."),
];

/// What a command answers: a reply document, or a reply encoded as BSON already (cursor
/// replies: their batches hold documents as the store returned them) that carries its `ok`.
#[derive(Debug)]
pub enum CommandReply {
    Document(Document),
    Encoded(RawDocumentBuf),
}

impl From<Document> for CommandReply {
    fn from(document: Document) -> CommandReply {
        CommandReply::Document(document)
    }
}

impl CommandReply {
    /// The reply as a document, for the legacy OP_REPLY (only the handshake uses it).
    pub fn into_document(self) -> Document {
        match self {
            CommandReply::Document(document) => document,
            CommandReply::Encoded(bytes) => {
                Document::try_from(bytes.as_ref()).unwrap_or_else(|error| {
                    OpError::Store(crate::store::StoreError::Corrupt(error.to_string())).to_reply()
                })
            }
        }
    }
}

/// Runs one command and returns its reply. `interrupt` stops its evaluation when the
/// connection cancels it; the command's `maxTimeMS` (or `--default-max-time-ms`) sets its
/// deadline here.
pub async fn dispatch(
    server: &MongoServer,
    connection: &mut ConnectionInfo,
    request: CommandRequest,
    interrupt: &Interrupt,
) -> CommandReply {
    ServerCounters::add(&server.state.counters.op_command, 1);
    let mut context = CommandContext { server, connection };
    if let Err(error) = auth::authorize(&mut context, &request).await {
        tracing::debug!(command = %request.name, db = %request.db, %error, "command refused");
        return error.to_reply().into();
    }
    let refused = refuse_transactions(&request).and_then(|()| refuse_let(&request));
    let result = match refused.and_then(|()| time_limit(server, &request)) {
        Err(error) => Err(error),
        Ok(limit) => {
            if let Some(limit) = limit {
                interrupt.set_deadline(std::time::Instant::now() + limit);
            }
            let running = run_with_retry(&mut context, &request);
            crate::compute::scope(interrupt.clone(), within_deadline(running, interrupt)).await
        }
    };
    match result {
        Ok(CommandReply::Document(mut reply)) => {
            if !reply.contains_key("ok") {
                reply.insert("ok", 1.0);
            }
            reply.into()
        }
        Ok(encoded) => encoded,
        Err(error) => {
            tracing::debug!(command = %request.name, db = %request.db, %error, "command failed");
            error.to_reply().into()
        }
    }
}

/// Runs the command; a write planned from a stale catalog runs once more.
async fn run_with_retry(context: &mut CommandContext<'_>, request: &CommandRequest) -> ReplyResult {
    let server = context.server;
    let mut result = run(context, request).await;
    if crate::ops::retry::refreshed_after_stale(&server.state.catalog, &result).await {
        result = run(context, request).await;
    }
    result
}

/// `running`, or 50 MaxTimeMSExpired once the deadline passes. Evaluation on the compute
/// pool stops at its next check; a statement in the database is abandoned (a write it
/// makes is one transaction: it is applied whole or not at all).
async fn within_deadline(
    running: impl std::future::Future<Output = ReplyResult>,
    interrupt: &Interrupt,
) -> ReplyResult {
    let Some(deadline) = interrupt.deadline() else {
        return running.await;
    };
    match tokio::time::timeout_at(deadline.into(), running).await {
        Ok(result) => result,
        Err(_) => {
            interrupt.cancel(Interruption::TimeLimit);
            Err(OpError::Query(Interruption::TimeLimit.into()))
        }
    }
}

/// The command's time limit: its `maxTimeMS` (0: none), else the server's default.
fn time_limit(
    server: &MongoServer,
    request: &CommandRequest,
) -> Result<Option<std::time::Duration>, OpError> {
    let Some(value) = request.body.get("maxTimeMS") else {
        return Ok(server.state.settings.limits.default_max_time);
    };
    let millis = match value {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        Bson::Double(n) if n.fract() == 0.0 && n.is_finite() => *n as i64,
        other => {
            return Err(OpError::BadValue(format!(
                "maxTimeMS must be a number, not {}",
                super::request::type_name(other)
            )))
        }
    };
    match u64::try_from(millis) {
        Ok(0) => Ok(None),
        Ok(millis) if millis <= i32::MAX as u64 => {
            Ok(Some(std::time::Duration::from_millis(millis)))
        }
        _ => Err(OpError::BadValue(format!(
            "{millis} value for maxTimeMS is out of range [0, {}]",
            i32::MAX
        ))),
    }
}

/// Transactions are not implemented: a command that would start or join one is refused
/// (MongoDB's answer on a standalone server), never run as a plain command.
fn refuse_transactions(request: &CommandRequest) -> Result<(), OpError> {
    if ["txnNumber", "startTransaction", "autocommit"]
        .iter()
        .any(|field| request.body.contains_key(field))
    {
        return Err(OpError::IllegalOperation(
            "Transaction numbers are only allowed on a replica set member or mongos".into(),
        ));
    }
    Ok(())
}

/// Command-level `let` variables are not implemented yet: a command that defines some is
/// refused rather than run as if they were not there (an empty `let` changes nothing).
fn refuse_let(request: &CommandRequest) -> Result<(), OpError> {
    let body = match (request.name.as_str(), request.body.get("explain")) {
        ("explain", Some(Bson::Document(explained))) => explained,
        _ => &request.body,
    };
    match body.get("let") {
        None => Ok(()),
        Some(Bson::Document(variables)) if variables.is_empty() => Ok(()),
        Some(_) => Err(OpError::NotSupported(
            "command-level 'let' variables are not supported yet".into(),
        )),
    }
}

async fn run(context: &mut CommandContext<'_>, request: &CommandRequest) -> ReplyResult {
    match request.name.as_str() {
        "find" => find::find(context, request).await,
        "getMore" => find::get_more(context, request),
        "aggregate" => aggregate::aggregate(context, request).await,
        "listCollections" => namespaces::list_collections(context, request).await,
        "listIndexes" => indexes::list_indexes(context, request).await,
        _ => run_document_command(context, request)
            .await
            .map(CommandReply::from),
    }
}

/// The commands that answer a reply document.
async fn run_document_command(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    match request.name.as_str() {
        "hello" | "isMaster" | "ismaster" => {
            let mut reply = handshake::hello(context, request)?;
            auth::add_to_hello(context, request, &mut reply).await;
            Ok(reply)
        }
        "saslStart" => auth::sasl_start(context, request).await,
        "saslContinue" => auth::sasl_continue(context, request).await,
        "logout" => auth::logout(context),
        "authenticate" => auth::authenticate(request),
        "createUser" => users::create_user(context, request).await,
        "updateUser" => users::update_user(context, request).await,
        "dropUser" => users::drop_user(context, request).await,
        "dropAllUsersFromDatabase" => users::drop_all_users(context, request).await,
        "usersInfo" => users::users_info(context, request).await,
        "grantRolesToUser" => users::grant_roles(context, request).await,
        "revokeRolesFromUser" => users::revoke_roles(context, request).await,
        "createRole" => users::create_role(context, request).await,
        "dropRole" => users::drop_role(context, request).await,
        "rolesInfo" => users::roles_info(context, request).await,
        "ping" => Ok(Document::new()),
        "buildInfo" | "buildinfo" => Ok(handshake::build_info(context)),
        "whatsmyuri" => handshake::whats_my_uri(context),
        "endSessions" => handshake::end_sessions(context, request),
        "killAllSessions" => handshake::kill_all_sessions(context),
        "getParameter" => diagnostics::get_parameter(context, request),
        "getCmdLineOpts" => diagnostics::get_cmd_line_opts(context),
        "getLog" => diagnostics::get_log(request),
        "hostInfo" => diagnostics::host_info(),
        "connectionStatus" => auth::connection_status(context).await,
        "serverStatus" => Ok(diagnostics::server_status(context)),
        "listCommands" => Ok(diagnostics::list_commands()),
        "listDatabases" => namespaces::list_databases(context, request).await,
        "createIndexes" => indexes::create_indexes(context, request).await,
        "dropIndexes" | "deleteIndexes" => indexes::drop_indexes(context, request).await,
        "create" => namespaces::create(context, request).await,
        "drop" => namespaces::drop(context, request).await,
        "dropDatabase" => namespaces::drop_database(context, request).await,
        "renameCollection" => namespaces::rename_collection(context, request).await,
        "collStats" => stats::coll_stats(context, request).await,
        "dbStats" => stats::db_stats(context, request).await,
        "validate" => stats::validate(context, request).await,
        "insert" => insert::insert(context, request).await,
        "killCursors" => find::kill_cursors(context, request),
        "count" => find::count(context, request).await,
        "distinct" => find::distinct(context, request).await,
        "update" => update::update(context, request).await,
        "findAndModify" | "findandmodify" => {
            find_and_modify::find_and_modify(context, request).await
        }
        "delete" => delete::delete(context, request).await,
        "explain" => explain::explain(context, request).await,
        other => Err(OpError::CommandNotFound(other.to_string())),
    }
}
