//! Command dispatch: looks a command up in the command table, checks its privileges and
//! what docgate refuses (`let` in an explain), lets the `failCommand` fail point intercept
//! it, sets its time limit, runs its handler (in its session and transaction:
//! `transactions`), stamps the cluster time on the reply, and
//! is the one place where a handler's result becomes a reply (`ok: 1` added, errors mapped
//! by `OpError`). A reply is a document, or for the cursor commands BSON bytes already, so
//! stored documents reach the client undecoded.
//!
//! Not for: the commands themselves (one file per family under `commands/`), the table of
//! their names and privileges (`command_table.rs`), or what a handler gets
//! (`context.rs`).

use bson::{Bson, Document, RawDocumentBuf};

use super::command_table::{self, Command, CommandSpec};
use super::commands::fail_points::Intercept;
use super::commands::{
    aggregate, auth, capped, coll_mod, delete, diagnostics, explain, fail_points, find,
    find_and_modify, fsync, handshake, indexes, insert, namespaces, operations, plan_cache,
    profiling, replication, shutdown, stats, update, users,
};
use super::context::{CommandContext, ConnectionInfo};
use super::error::{CommandResult, OpError, ReplyResult};
use super::request::CommandRequest;
use super::transactions;
use super::MongoServer;
use crate::interrupt::{Interrupt, Interruption};
use crate::state::ServerCounters;

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
/// On the replica-set face, the client's `$clusterTime` moves the clock first and every
/// reply carries the cluster time.
pub async fn dispatch(
    server: &MongoServer,
    connection: &mut ConnectionInfo,
    request: CommandRequest,
    interrupt: &Interrupt,
) -> CommandReply {
    let timer = super::observe::CommandTimer::start(&request.name);
    let reply = match replication::receive_cluster_time(server, &request) {
        Ok(()) => dispatch_command(server, connection, request, interrupt).await,
        Err(error) => error.to_reply().into(),
    };
    timer.finish(server, &reply);
    replication::stamp_reply(server, reply)
}

async fn dispatch_command(
    server: &MongoServer,
    connection: &mut ConnectionInfo,
    request: CommandRequest,
    interrupt: &Interrupt,
) -> CommandReply {
    ServerCounters::add(&server.state.counters.op_command, 1);
    let mut context = CommandContext {
        server,
        connection,
        transaction: None,
    };
    let spec = command_table::lookup(&request.name).filter(|spec| {
        spec.command != Command::ConfigureFailPoint || server.face.enable_test_commands
    });
    if let Err(error) = auth::authorize(&mut context, &request, spec).await {
        tracing::debug!(command = %request.name, db = %request.db, %error, "command refused");
        return error.to_reply().into();
    }
    let Some(spec) = spec else {
        return OpError::CommandNotFound(request.name).to_reply().into();
    };
    // Listed by `currentOp` until it ends; then logged if slow, and profiled. Every log line
    // of the command names its connection and operation: the wire front end's request id.
    let running = operations::begin(server, context.connection, &request, spec, interrupt);
    let span = tracing::info_span!(
        "command",
        conn = context.connection.id,
        opid = running.operation().opid
    );
    let registered = async {
        let reply = run_registered(&mut context, &request, spec, interrupt).await;
        profiling::operation_finished(server, running, &request, &reply);
        reply
    };
    tracing::Instrument::instrument(registered, span).await
}

/// Runs a command that may run (authorized, registered): fail points, the Stable API, its
/// time limit, its handler, and its reply.
async fn run_registered(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
    spec: &CommandSpec,
    interrupt: &Interrupt,
) -> CommandReply {
    let server = context.server;
    if let Intercept::Reply(reply) = server
        .fail_points
        .before_command(spec, request, context.connection)
        .await
    {
        return reply.into();
    }
    let refused = super::stable_api::check(spec, request);
    // A getMore keeps the `$$CLUSTER_TIME` of its cursor's command (`ops::cursors`).
    if server.is_replica_set() && !matches!(spec.command, Command::GetMore) {
        interrupt.set_cluster_time(server.state.cluster_time.now());
    }
    let limit = match spec.command {
        Command::GetMore => get_more_time_limit(server, request),
        _ => time_limit(server, request),
    };
    let result = match refused.and(limit) {
        Err(error) => Err(error),
        Ok(limit) => {
            if let Some(limit) = limit {
                interrupt.set_deadline(std::time::Instant::now() + limit);
            }
            let running = super::transactions::run(context, request, spec.command);
            crate::compute::scope(interrupt.clone(), within_deadline(running, interrupt)).await
        }
    };
    if result.is_ok() && spec.command.writes() {
        // The write's operationTime: later than every time answered before it.
        server.state.cluster_time.tick();
    }
    let mut reply = match result {
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
    };
    server
        .fail_points
        .after_command(spec, request, context.connection, &mut reply);
    reply
}

/// Runs the command; a write planned from a stale catalog runs once more.
pub(super) async fn run_with_retry(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
    command: Command,
) -> ReplyResult {
    let server = context.server;
    let mut result = run(context, request, command).await;
    if crate::ops::retry::refreshed_after_stale(&server.state.catalog, &result).await {
        result = run(context, request, command).await;
    }
    result
}

/// `running`, or 50 MaxTimeMSExpired once the deadline passes, or 11601 Interrupted once
/// `killOp` cancels it. Evaluation on the compute pool stops at its next check; a statement
/// in the database is abandoned at the deadline, cancelled by `killOp` (a write it makes is
/// one transaction: it is applied whole or not at all).
async fn within_deadline(
    running: impl std::future::Future<Output = ReplyResult>,
    interrupt: &Interrupt,
) -> ReplyResult {
    let limited = async {
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
    };
    // Only a kill abandons the command here: a client gone or a deadline let it end at its
    // next check as before.
    let killed = async {
        match interrupt.cancelled().await {
            Interruption::Killed => Interruption::Killed,
            _ => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        result = limited => result,
        reason = killed => Err(OpError::Query(reason.into())),
    }
}

/// A `getMore`'s time limit: what its cursor's opening command left of its `maxTimeMS`
/// (MongoDB's limit covers every batch of a cursor). `maxTimeMS` on the `getMore` itself is
/// only for tailable `awaitData` cursors (how long it waits for new documents, read by
/// `getMore`; such a cursor has no overall limit); on any other cursor: BadValue.
fn get_more_time_limit(
    server: &MongoServer,
    request: &CommandRequest,
) -> Result<Option<std::time::Duration>, OpError> {
    let id = match request.target() {
        Bson::Int64(id) => Some(*id),
        _ => None,
    };
    if id.is_some_and(|id| server.cursors.awaits_data(id)) {
        time_limit(server, request)?;
        return Ok(None);
    }
    if request.body.contains_key("maxTimeMS") && time_limit(server, request)?.is_some() {
        return Err(OpError::BadValue(
            "cannot set maxTimeMS on getMore command for a non-awaitData cursor".into(),
        ));
    }
    Ok(match request.target() {
        Bson::Int64(id) => server.cursors.time_left(*id),
        _ => None,
    })
}

/// The command's time limit: its `maxTimeMS` (0: none), else the server's default.
fn time_limit(
    server: &MongoServer,
    request: &CommandRequest,
) -> Result<Option<std::time::Duration>, OpError> {
    let Some(value) = request.body.get("maxTimeMS") else {
        return Ok(server.limits.default_max_time);
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

/// Runs the handler of `command`.
async fn run(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
    command: Command,
) -> ReplyResult {
    /// A handler's reply document as a reply.
    fn document(result: CommandResult) -> ReplyResult {
        result.map(CommandReply::from)
    }
    match command {
        Command::Find => find::find(context, request).await,
        Command::GetMore => find::get_more(context, request).await,
        Command::Aggregate => aggregate::aggregate(context, request).await,
        Command::ListCollections => namespaces::list_collections(context, request).await,
        Command::ListIndexes => indexes::list_indexes(context, request).await,
        Command::Hello => {
            handshake::await_topology_change(context, request).await?;
            let mut reply = handshake::hello(context, request)?;
            auth::add_to_hello(context, request, &mut reply).await;
            Ok(reply.into())
        }
        Command::SaslStart => document(auth::sasl_start(context, request).await),
        Command::SaslContinue => document(auth::sasl_continue(context, request).await),
        Command::Logout => document(auth::logout(context)),
        Command::Authenticate => document(auth::authenticate(request)),
        Command::CreateUser => document(users::create_user(context, request).await),
        Command::UpdateUser => document(users::update_user(context, request).await),
        Command::DropUser => document(users::drop_user(context, request).await),
        Command::DropAllUsersFromDatabase => {
            document(users::drop_all_users(context, request).await)
        }
        Command::UsersInfo => document(users::users_info(context, request).await),
        Command::GrantRolesToUser => document(users::grant_roles(context, request).await),
        Command::RevokeRolesFromUser => document(users::revoke_roles(context, request).await),
        Command::CreateRole => document(users::create_role(context, request).await),
        Command::DropRole => document(users::drop_role(context, request).await),
        Command::RolesInfo => document(users::roles_info(context, request).await),
        Command::Ping => document(Ok(Document::new())),
        Command::PlanCacheClear => document(plan_cache::plan_cache_clear(context, request)),
        Command::PlanCacheClearFilters => {
            document(plan_cache::plan_cache_clear_filters(context, request))
        }
        Command::PlanCacheListFilters => {
            document(plan_cache::plan_cache_list_filters(context, request))
        }
        Command::BuildInfo => document(Ok(handshake::build_info(context))),
        Command::WhatsMyUri => document(handshake::whats_my_uri(context)),
        Command::EndSessions | Command::KillSessions => {
            document(transactions::end_sessions(context, request).await)
        }
        Command::KillAllSessions | Command::KillAllSessionsByPattern => {
            document(transactions::kill_all_sessions(context, request).await)
        }
        Command::StartSession => document(transactions::start_session(context, request)),
        Command::RefreshSessions => document(transactions::refresh_sessions(context, request)),
        // Run by `transactions::run` when they carry their session and transaction number.
        Command::CommitTransaction | Command::AbortTransaction => {
            Err(OpError::InvalidOptions(format!(
                "{} requires lsid, txnNumber and autocommit: false",
                request.name
            )))
        }
        Command::GetParameter => document(diagnostics::get_parameter(context, request)),
        Command::GetCmdLineOpts => document(diagnostics::get_cmd_line_opts(context)),
        Command::GetLog => document(diagnostics::get_log(request)),
        Command::CurrentOp => document(operations::current_op(context, request)),
        Command::KillOp => document(operations::kill_op(context, request)),
        Command::Profile => document(profiling::profile(context, request)),
        Command::Fsync => document(fsync::fsync(context, request).await),
        Command::FsyncUnlock => document(fsync::fsync_unlock(request)),
        Command::Shutdown => document(shutdown::shutdown(context, request)),
        Command::HostInfo => document(diagnostics::host_info()),
        Command::ConnectionStatus => document(auth::connection_status(context).await),
        Command::ServerStatus => document(Ok(diagnostics::server_status(context))),
        Command::ListCommands => document(Ok(diagnostics::list_commands(context))),
        Command::ListDatabases => document(namespaces::list_databases(context, request).await),
        Command::CreateIndexes => document(indexes::create_indexes(context, request).await),
        Command::DropIndexes => document(indexes::drop_indexes(context, request).await),
        Command::Create => document(namespaces::create(context, request).await),
        Command::ConvertToCapped => document(capped::convert_to_capped(context, request).await),
        Command::CloneCollectionAsCapped => {
            document(capped::clone_collection_as_capped(context, request).await)
        }
        Command::Drop => document(namespaces::drop(context, request).await),
        Command::DropDatabase => document(namespaces::drop_database(context, request).await),
        Command::RenameCollection => {
            document(namespaces::rename_collection(context, request).await)
        }
        Command::CollMod => document(coll_mod::coll_mod(context, request).await),
        Command::CollStats => document(stats::coll_stats(context, request).await),
        Command::DbStats => document(stats::db_stats(context, request).await),
        Command::Validate => document(stats::validate(context, request).await),
        Command::Insert => document(insert::insert(context, request).await),
        Command::KillCursors => document(find::kill_cursors(context, request)),
        Command::Count => document(find::count(context, request).await),
        Command::Distinct => document(find::distinct(context, request).await),
        Command::Update => document(update::update(context, request).await),
        Command::FindAndModify => {
            document(find_and_modify::find_and_modify(context, request).await)
        }
        Command::Delete => document(delete::delete(context, request).await),
        Command::Explain => document(explain::explain(context, request).await),
        Command::ReplSetGetStatus => document(replication::repl_set_get_status(context, request)),
        Command::ReplSetGetConfig => document(replication::repl_set_get_config(context, request)),
        Command::ReplSetInitiate => document(replication::repl_set_initiate(context, request)),
        Command::ReplSetReconfig => document(replication::repl_set_reconfig(context, request)),
        Command::ConfigureFailPoint => {
            document(fail_points::configure_fail_point(context, request))
        }
    }
}
