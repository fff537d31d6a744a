//! The operations running now, as the wire front end shows and stops them: registering each
//! command with the core's operation registry while it runs ([`begin`]), `currentOp`, the
//! documents of the `$currentOp` stage ([`current_op_stage`]: the same entries, and the
//! sessions idle in a transaction) and `killOp`.
//!
//! Not for: the registry itself (`crate::ops::operations`), the profiler and the slow-op
//! log (`profiling`), or how a killed command stops (`crate::interrupt`).

use std::sync::Arc;

use bson::{doc, Bson, Document};

use crate::auth::roles::{allows, Action};
use crate::auth::service::Access;
use crate::interrupt::Interrupt;
use crate::mongo::arguments::GENERIC_ARGUMENTS;
use crate::mongo::command_table::{Command, CommandSpec};
use crate::mongo::context::{CommandContext, ConnectionInfo};
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::{as_bool, as_i64, CommandRequest};
use crate::mongo::MongoServer;
use crate::ops::operations::{
    without_secrets, KillOutcome, OperationClient, OperationStart, RunningGuard, RunningOperation,
};
use crate::ops::sessions::IdleTransaction;
use crate::query::collectionless::CurrentOpOptions;
use crate::query::Filter;

/// Bytes of a command kept for `currentOp`, `$currentOp` and `system.profile`; a larger one
/// is kept as `{$truncated: …}` (so that a large insert costs nothing here).
const KEPT_COMMAND_BYTES: usize = 64 * 1024;

/// Bytes of a command `currentOp` (and `$currentOp` with `truncateOps: true`) shows whole;
/// a larger one is shown as `{$truncated: …}`, as MongoDB does past 1 KB.
const SHOWN_COMMAND_BYTES: usize = 1024;

/// Registers `request` (which runs under `interrupt`) as running until the guard is dropped.
pub fn begin<'s>(
    server: &'s MongoServer,
    connection: &mut ConnectionInfo,
    request: &CommandRequest,
    spec: &CommandSpec,
    interrupt: &Interrupt,
) -> RunningGuard<'s> {
    let start = OperationStart {
        op: op_kind(spec.command),
        ns: namespace(request, spec.command),
        command: shown_command(request),
        client: operation_client(connection),
        user: connection
            .auth
            .user
            .as_ref()
            .map(|user| (user.db.clone(), user.name.clone())),
        lsid: request.body.get_document("lsid").ok().cloned(),
    };
    server.state.operations.begin(start, interrupt.clone())
}

/// The connection as its operations show it, made once (again if the handshake's metadata
/// came after it was made).
fn operation_client(connection: &mut ConnectionInfo) -> Arc<OperationClient> {
    match &connection.operation_client {
        Some(client)
            if client.client_metadata.is_some() == connection.client_metadata.is_some() =>
        {
            client.clone()
        }
        _ => {
            let app_name = connection
                .client_metadata
                .as_ref()
                .and_then(|metadata| metadata.get_document("application").ok())
                .and_then(|application| application.get_str("name").ok())
                .map(str::to_string);
            let client = Arc::new(OperationClient {
                client: Some(connection.peer.to_string()),
                connection_id: Some(connection.id),
                desc: format!("conn{}", connection.id),
                app_name,
                client_metadata: connection.client_metadata.clone(),
            });
            connection.operation_client = Some(client.clone());
            client
        }
    }
}

/// MongoDB's `op` of a command.
fn op_kind(command: Command) -> &'static str {
    match command {
        Command::Find => "query",
        Command::GetMore => "getmore",
        Command::Insert => "insert",
        Command::Update => "update",
        Command::Delete => "remove",
        _ => "command",
    }
}

/// `db.collection` of a command on a collection, else `db.$cmd`.
fn namespace(request: &CommandRequest, command: Command) -> String {
    let on_collection = matches!(
        command,
        Command::Find
            | Command::Aggregate
            | Command::Count
            | Command::Distinct
            | Command::Insert
            | Command::Update
            | Command::Delete
            | Command::FindAndModify
            | Command::Create
            | Command::Drop
            | Command::CreateIndexes
            | Command::DropIndexes
            | Command::ListIndexes
            | Command::CollStats
            | Command::Validate
    );
    let collection = match (command, request.target()) {
        (Command::GetMore, _) => request.body.get_str("collection").ok(),
        (_, Bson::String(name)) if on_collection => Some(name.as_str()),
        _ => None,
    };
    match collection {
        Some(name) => format!("{}.{name}", request.db),
        // `aggregate: 1`, as MongoDB names its namespace.
        None if command == Command::Aggregate => format!("{}.$cmd.aggregate", request.db),
        None => format!("{}.$cmd", request.db),
    }
}

/// The command as `currentOp` and `system.profile` show it: secrets out, and past
/// [`KEPT_COMMAND_BYTES`] `{$truncated: <its first fields>}`. Copies at most about that
/// much of the command.
fn shown_command(request: &CommandRequest) -> Document {
    truncated(
        without_secrets(&request.name, &request.body),
        KEPT_COMMAND_BYTES,
    )
}

/// `command` whole if it is about `limit` bytes or less, else `{$truncated: <the text of
/// its first fields>, comment}` as MongoDB shows a large command.
fn truncated(command: Document, limit: usize) -> Document {
    let mut budget = limit;
    let mut fitting = 0;
    for (key, value) in &command {
        match value_size(value, budget.saturating_sub(key.len())) {
            Some(size) if size + key.len() <= budget => {
                budget -= size + key.len();
                fitting += 1;
            }
            _ => break,
        }
    }
    if fitting == command.len() {
        return command;
    }
    let shown: Document = command
        .iter()
        .take(fitting)
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let mut text = shown.to_string();
    let mut end = text.len().min(limit);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    let mut truncated = doc! {"$truncated": format!("{text} ...")};
    if let Some(comment) = command.get("comment") {
        truncated.insert("comment", comment.clone());
    }
    truncated
}

/// About the encoded size of `value`, or None once past `budget` (without walking on).
fn value_size(value: &Bson, budget: usize) -> Option<usize> {
    let size = match value {
        Bson::Document(document) => {
            let mut total = 5;
            for (key, item) in document {
                total += key.len() + 2 + value_size(item, budget.checked_sub(total)?)?;
            }
            total
        }
        Bson::Array(items) => {
            let mut total = 5;
            for item in items {
                total += 4 + value_size(item, budget.checked_sub(total)?)?;
            }
            total
        }
        Bson::String(text) => text.len() + 5,
        Bson::Binary(binary) => binary.bytes.len() + 5,
        Bson::JavaScriptCode(code) => code.len() + 5,
        _ => 16,
    };
    (size <= budget).then_some(size)
}

/// `currentOp`: `{currentOp: 1, $ownOps: bool, $all: bool, <filter on the entries>}` on
/// `admin`. Without the `inprog` privilege only `$ownOps: true` is allowed.
pub fn current_op(context: &CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    if request.db != "admin" {
        return Err(OpError::Unauthorized(
            "currentOp may only be run against the admin database.".into(),
        ));
    }
    let mut own_ops = false;
    let mut filter = Document::new();
    for (key, value) in request.body.iter().skip(1) {
        match key.as_str() {
            "$ownOps" => own_ops = flag(key, value)?,
            "$all" => {
                if flag(key, value)? {
                    return Err(OpError::NotSupported(
                        "currentOp with $all: true is not supported by docgate: it lists the \
                         operations running now, not idle connections or sessions"
                            .into(),
                    ));
                }
            }
            key if GENERIC_ARGUMENTS.contains(&key) => {}
            _ => {
                filter.insert(key.clone(), value.clone());
            }
        }
    }
    let filter = Filter::parse(&filter)?;
    let inprog: Vec<Bson> = in_progress(context, own_ops, "currentOp", true)?
        .into_iter()
        .filter(|entry| filter.matches(entry))
        .map(Bson::Document)
        .collect();
    Ok(doc! {"inprog": inprog})
}

fn flag(key: &str, value: &Bson) -> Result<bool, OpError> {
    as_bool(value).ok_or_else(|| {
        OpError::TypeMismatch(format!(
            "BSON field '{key}' is the wrong type '{}', expected type 'bool'",
            crate::mongo::request::type_name(value)
        ))
    })
}

/// The user the connection runs as when access control applies (None: it does not, and
/// every operation is everyone's), and whether they may act on all operations with `action`.
fn requester(context: &CommandContext<'_>, action: Action) -> (Option<(String, String)>, bool) {
    if context.connection.auth.access != Some(Access::Required) {
        return (None, true);
    }
    match &context.connection.auth.user {
        Some(user) => (
            Some((user.db.clone(), user.name.clone())),
            allows(&user.roles, action, "admin"),
        ),
        None => (None, false),
    }
}

/// The entries of every operation running now (`inprog` of `currentOp`, the documents of
/// `$currentOp`): all of them, or with `own_only` (or without the `inprog` privilege, which
/// then needs `own_only`: 13 Unauthorized naming `command`) the requester's; commands past
/// 1 KB shown `$truncated` with `truncate`.
pub fn in_progress(
    context: &CommandContext<'_>,
    own_only: bool,
    command: &str,
    truncate: bool,
) -> Result<Vec<Document>, OpError> {
    let (user, may_see_all) = requester(context, Action::Inprog);
    if !may_see_all && !own_only {
        return Err(OpError::Unauthorized(format!(
            "not authorized on admin to execute command {{ {command}: ... }}"
        )));
    }
    let operations = context.server.state.operations.list();
    Ok(operations
        .iter()
        .filter(|operation| may_see_all && !own_only || operation.start.user == user)
        .map(|operation| entry(context.server, operation, truncate))
        .collect())
}

/// One `inprog` entry, in MongoDB's shape, with docgate's `docgate.sql`: the statement the
/// operation runs or ran last.
fn entry(server: &MongoServer, operation: &RunningOperation, truncate: bool) -> Document {
    let start = &operation.start;
    let client = &start.client;
    let running = operation.started.elapsed();
    let mut entry = doc! {
        "type": "op",
        "host": &server.advertise,
        "desc": &client.desc,
    };
    if let Some(id) = client.connection_id {
        entry.insert("connectionId", id);
    }
    if let Some(address) = &client.client {
        entry.insert("client", address);
    }
    if let Some(app_name) = &client.app_name {
        entry.insert("appName", app_name);
    }
    if let Some(metadata) = &client.client_metadata {
        entry.insert("clientMetadata", metadata.clone());
    }
    entry.insert("active", true);
    entry.insert(
        "currentOpTime",
        bson::DateTime::now()
            .try_to_rfc3339_string()
            .unwrap_or_default(),
    );
    if let Some((db, name)) = &start.user {
        entry.insert("effectiveUsers", vec![doc! {"user": name, "db": db}]);
    }
    entry.insert("opid", i64::from(operation.opid));
    if let Some(lsid) = &start.lsid {
        entry.insert("lsid", lsid.clone());
    }
    entry.insert("secs_running", running.as_secs() as i64);
    entry.insert(
        "microsecs_running",
        i64::try_from(running.as_micros()).unwrap_or(i64::MAX),
    );
    entry.insert("op", start.op);
    entry.insert("ns", &start.ns);
    let command = if truncate {
        truncated(start.command.clone(), SHOWN_COMMAND_BYTES)
    } else {
        start.command.clone()
    };
    entry.insert("command", command);
    entry.insert("numYields", 0);
    entry.insert("locks", Document::new());
    entry.insert("waitingForLock", false);
    entry.insert("killPending", operation.kill_pending());
    let sql = operation
        .statement()
        .map_or(Bson::Null, |sql| Bson::String(sql.to_string()));
    entry.insert("docgate", doc! {"sql": sql});
    entry
}

/// The documents of `$currentOp` (on `admin`, checked by the caller): the operations
/// running now (all users' with `allUsers: true`, which needs `inprog`), and with
/// `idleSessions` (its default) the sessions idle in an open transaction. docgate keeps no
/// list of idle connections or cursors: asking for them is refused.
pub fn current_op_stage(
    context: &CommandContext<'_>,
    options: &CurrentOpOptions,
) -> Result<Vec<Document>, OpError> {
    for (asked, option) in [
        (options.idle_connections, "idleConnections"),
        (options.idle_cursors, "idleCursors"),
        (options.backtrace, "backtrace"),
        (options.target_all_nodes, "targetAllNodes"),
    ] {
        if asked {
            return Err(OpError::NotSupported(format!(
                "$currentOp with {option}: true is not supported by docgate"
            )));
        }
    }
    // `localOps` only tells a router's own operations from the cluster's: a single server
    // has only its own.
    let own_only = !options.all_users;
    let mut documents = in_progress(context, own_only, "aggregate", options.truncate_ops)?;
    if options.idle_sessions {
        let (user, may_see_all) = requester(context, Action::Inprog);
        for idle in context.server.sessions.idle_transactions() {
            if (may_see_all && !own_only) || idle.key.user == user {
                documents.push(idle_session(context.server, &idle));
            }
        }
    }
    Ok(documents)
}

/// An idle session's entry: a transaction open between two of its commands.
fn idle_session(server: &MongoServer, idle: &IdleTransaction) -> Document {
    let micros = |d: std::time::Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
    let mut entry = doc! {
        "type": "idleSession",
        "host": &server.advertise,
        "desc": "inactive transaction",
        "active": false,
        "lsid": {"id": bson::Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: idle.key.id.clone(),
        }},
        "transaction": {
            "parameters": {"txnNumber": idle.number, "autocommit": false},
            "timeOpenMicros": micros(idle.open_for),
            "timeActiveMicros": micros(idle.open_for.saturating_sub(idle.idle_for)),
            "timeInactiveMicros": micros(idle.idle_for),
        },
        "waitingForLock": false,
    };
    if let Some((db, name)) = &idle.key.user {
        entry.insert("effectiveUsers", vec![doc! {"user": name, "db": db}]);
    }
    entry
}

/// `killOp: 1, op: <opid>` on `admin`: the operation stops with 11601 Interrupted, its
/// running statement cancelled. Anyone may kill their own operations; others' need the
/// `killop` privilege. Answers `attempting to kill op` whether or not it still runs, as
/// MongoDB does.
pub fn kill_op(context: &CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    if request.db != "admin" {
        return Err(OpError::Unauthorized(
            "killOp may only be run against the admin database.".into(),
        ));
    }
    let mut arguments = request.arguments();
    let op = arguments
        .value("op")
        .ok_or_else(|| OpError::BadValue("Did not provide \"op\" field".into()))?;
    arguments.finish()?;
    let opid = as_i64(op)
        .and_then(|opid| u32::try_from(opid).ok())
        .ok_or_else(|| {
            OpError::TypeMismatch(format!(
                "Expected an integer operation id for \"op\", got {op}"
            ))
        })?;
    let (user, may_kill_all) = requester(context, Action::KillOp);
    let outcome = context.server.state.operations.kill(opid, |operation| {
        may_kill_all || operation.start.user == user
    });
    if outcome == KillOutcome::NotAllowed {
        return Err(OpError::Unauthorized(
            "not authorized on admin to execute command { killOp: ... }".into(),
        ));
    }
    Ok(doc! {"info": "attempting to kill op"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_commands_are_shown_truncated_with_their_comment() {
        let small = doc! {"find": "c", "filter": {"a": 1}};
        assert_eq!(truncated(small.clone(), SHOWN_COMMAND_BYTES), small);
        let documents: Vec<Document> = (0..1000)
            .map(|i| doc! {"_id": i, "s": "x".repeat(20)})
            .collect();
        let large = doc! {"insert": "c", "documents": documents, "comment": "bulk"};
        let shown = truncated(large, SHOWN_COMMAND_BYTES);
        let text = shown.get_str("$truncated").unwrap();
        assert!(text.starts_with("{ \"insert\": \"c\""), "{text}");
        assert!(text.len() <= SHOWN_COMMAND_BYTES + 4, "{}", text.len());
        assert_eq!(shown.get_str("comment").ok(), Some("bulk"));
    }
}
