//! The profiler as the wire front end runs it: the `profile` command, what happens when a
//! command ends ([`operation_finished`]: the "Slow query" log line — the command's shape
//! with its values redacted, and its SQL — and the `system.profile` entry), and reading
//! `system.profile` with `find`, `count` and `aggregate` (it is kept in memory by the core's
//! profiler, not in the store).
//!
//! What each place shows of a command: `currentOp` and `system.profile` show it as sent
//! (passwords and SASL payloads replaced by `"xxx"`, like MongoDB); the log shows only its
//! shape (every value `"###"`, like MongoDB's `redactClientLogData`), so that client data
//! never reaches log files.
//!
//! Not for: the levels, thresholds and the bounded store of entries
//! (`crate::ops::profiler`), or the running operations (`operations`).

use bson::{doc, Bson, Document, RawDocumentBuf};

use super::cursor_reply::first_batch_reply;
use super::find::FindArguments;
use crate::mongo::context::CommandContext;
use crate::mongo::dispatch::CommandReply;
use crate::mongo::error::{CommandResult, OpError, ReplyResult};
use crate::mongo::request::{as_i64, CommandRequest};
use crate::mongo::MongoServer;
use crate::ops::cursors::BatchOptions;
use crate::ops::operations::{shape_of, RunningGuard, RunningOperation};
use crate::ops::profiler::ProfileChange;
use crate::query::{Filter, SortDirection};

/// The collection every database's profile entries are read from.
pub const PROFILE_COLLECTION: &str = "system.profile";

/// MongoDB's log id of a "Slow query" line.
const SLOW_QUERY_LOG_ID: i64 = 51803;

/// `profile`: `{profile: -1|0|1|2, slowms, sampleRate, filter}`; answers the settings as
/// they were (`was`, `slowms`, `sampleRate`, and `filter` when one was set).
pub fn profile(context: &CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let mut arguments = request.arguments();
    let level = match as_i64(request.target()) {
        Some(-1) => None,
        Some(level @ 0..=2) => Some(level as i32),
        Some(other) => {
            return Err(OpError::BadValue(format!(
                "Invalid profiling level: {other}; it must be -1, 0, 1 or 2"
            )))
        }
        None => {
            return Err(OpError::TypeMismatch(format!(
                "BSON field 'profile.profile' is the wrong type '{}', expected type 'int'",
                crate::mongo::request::type_name(request.target())
            )))
        }
    };
    let slow_ms = arguments.i64("slowms")?;
    let sample_rate = match arguments.value("sampleRate") {
        None => None,
        Some(value) => {
            let rate = match value {
                Bson::Double(rate) => *rate,
                other => as_i64(other).map(|n| n as f64).ok_or_else(|| {
                    OpError::TypeMismatch(format!(
                        "BSON field 'profile.sampleRate' is the wrong type '{}', expected type 'double'",
                        crate::mongo::request::type_name(other)
                    ))
                })?,
            };
            if !(0.0..=1.0).contains(&rate) {
                return Err(OpError::BadValue(
                    "'sampleRate' must be between 0.0 and 1.0 inclusive".into(),
                ));
            }
            Some(rate)
        }
    };
    let filter = match arguments.value("filter") {
        None => None,
        Some(Bson::String(unset)) if unset == "unset" => Some(None),
        Some(Bson::Document(filter)) => Some(Some((filter.clone(), Filter::parse(filter)?))),
        Some(other) => {
            return Err(OpError::TypeMismatch(format!(
            "BSON field 'profile.filter' is the wrong type '{}', expected an object or \"unset\"",
            crate::mongo::request::type_name(other)
        )))
        }
    };
    arguments.finish()?;
    let before = context.server.state.profiler.configure(
        &request.db,
        ProfileChange {
            level,
            slow_ms,
            sample_rate,
            filter,
        },
    );
    let mut reply = doc! {
        "was": before.level,
        "slowms": before.slow_ms,
        "sampleRate": before.sample_rate,
    };
    if let Some(filter) = before.filter {
        reply.insert("filter", filter);
        reply.insert(
            "note",
            "When a filter expression is set, slowms and sampleRate are not used for profiling and slow-query log lines.",
        );
    }
    Ok(reply)
}

/// A command ended with `reply`: logs it when it was slow (or the database's filter says
/// so) and records it in its database's `system.profile` when the level says so. Reads of
/// `system.profile` itself are not recorded, and an awaitable `hello` is neither (it waits
/// for a topology change on purpose).
pub fn operation_finished(
    server: &MongoServer,
    running: RunningGuard<'_>,
    request: &CommandRequest,
    reply: &CommandReply,
) {
    let operation = running.operation();
    if request.body.contains_key("maxAwaitTimeMS") {
        // An awaitable `hello` (a driver's streaming monitor) waits on purpose: never slow.
        return;
    }
    let millis = i64::try_from(operation.started.elapsed().as_millis()).unwrap_or(i64::MAX);
    let profiler = &server.state.profiler;
    let entry = || profile_entry(operation, millis, reply);
    let verdict = profiler.verdict(&request.db, millis, entry);
    if verdict.log {
        log_slow(operation, millis, reply);
    }
    let reads_profile = operation
        .start
        .ns
        .strip_prefix(&request.db)
        .is_some_and(|rest| rest == format!(".{PROFILE_COLLECTION}"));
    if verdict.profile && !reads_profile {
        profiler.record(&request.db, entry());
    }
}

/// Whether the reply is an error, with its code, name and message.
fn failure(reply: &CommandReply) -> Option<(i32, String, String)> {
    let CommandReply::Document(reply) = reply else {
        return None;
    };
    let ok = match reply.get("ok") {
        Some(Bson::Double(ok)) => *ok != 0.0,
        Some(other) => as_i64(other) != Some(0),
        None => true,
    };
    if ok {
        return None;
    }
    Some((
        reply.get_i32("code").unwrap_or(0),
        reply.get_str("codeName").unwrap_or_default().to_string(),
        reply.get_str("errmsg").unwrap_or_default().to_string(),
    ))
}

/// Documents in the reply's cursor batch, for a cursor reply.
fn returned(reply: &CommandReply) -> Option<i64> {
    let count = |cursor: &bson::RawDocument| {
        ["firstBatch", "nextBatch"].iter().find_map(|key| {
            cursor
                .get_array(key)
                .ok()
                .map(|batch| batch.into_iter().count() as i64)
        })
    };
    match reply {
        CommandReply::Encoded(raw) => raw.get_document("cursor").ok().and_then(count),
        CommandReply::Document(reply) => {
            let cursor = reply.get_document("cursor").ok()?;
            let raw = RawDocumentBuf::try_from(cursor).ok()?;
            count(&raw)
        }
    }
}

fn response_length(reply: &CommandReply) -> i64 {
    match reply {
        CommandReply::Encoded(raw) => raw.as_bytes().len() as i64,
        CommandReply::Document(reply) => reply.to_vec().map_or(0, |bytes| bytes.len() as i64),
    }
}

/// The `system.profile` entry of an operation, in MongoDB's shape, with docgate's
/// `docgate.sql` (the last statement it ran).
fn profile_entry(operation: &RunningOperation, millis: i64, reply: &CommandReply) -> Document {
    let start = &operation.start;
    let mut entry = doc! {
        "op": start.op,
        "ns": &start.ns,
        "command": start.command.clone(),
    };
    // Int32 where MongoDB's entries have them.
    let int = |n: i64| Bson::Int32(i32::try_from(n).unwrap_or(i32::MAX));
    if let Some(returned) = returned(reply) {
        entry.insert("nreturned", int(returned));
    }
    entry.insert("responseLength", int(response_length(reply)));
    entry.insert("protocol", "op_msg");
    if let Some((code, name, message)) = failure(reply) {
        entry.insert("ok", 0.0);
        entry.insert("errMsg", message);
        entry.insert("errName", name);
        entry.insert("errCode", code);
    }
    entry.insert("millis", int(millis));
    entry.insert("ts", bson::DateTime::now());
    if let Some(client) = &start.client.client {
        // The address without the port, as MongoDB records it.
        let host = client
            .rsplit_once(':')
            .map_or(client.as_str(), |(host, _)| host);
        entry.insert("client", host.trim_matches(['[', ']']));
    }
    if let Some(app_name) = &start.client.app_name {
        entry.insert("appName", app_name);
    }
    match &start.user {
        Some((db, name)) => {
            entry.insert("allUsers", vec![doc! {"user": name, "db": db}]);
            entry.insert("user", format!("{name}@{db}"));
        }
        None => {
            entry.insert("allUsers", Vec::<Document>::new());
            entry.insert("user", "");
        }
    }
    let sql = operation
        .statement()
        .map_or(Bson::Null, |sql| Bson::String(sql.to_string()));
    entry.insert("docgate", doc! {"sql": sql});
    entry
}

/// The "Slow query" line: the command's shape (values redacted), its SQL, how long it took
/// and how it ended.
fn log_slow(operation: &RunningOperation, millis: i64, reply: &CommandReply) {
    let start = &operation.start;
    let shape = Bson::Document(shape_of(&start.command))
        .into_relaxed_extjson()
        .to_string();
    let sql = operation.statement();
    let sql = sql.as_deref().unwrap_or("");
    let app_name = start.client.app_name.as_deref().unwrap_or("");
    match failure(reply) {
        None => tracing::info!(
            target: "docgate::slow_op",
            log_id = SLOW_QUERY_LOG_ID,
            r#type = "command",
            ns = %start.ns,
            appName = app_name,
            command = %shape,
            sql,
            nreturned = returned(reply),
            durationMillis = millis,
            "Slow query"
        ),
        Some((code, name, _)) => tracing::info!(
            target: "docgate::slow_op",
            log_id = SLOW_QUERY_LOG_ID,
            r#type = "command",
            ns = %start.ns,
            appName = app_name,
            command = %shape,
            sql,
            ok = 0,
            errCode = code,
            errName = %name,
            durationMillis = millis,
            "Slow query"
        ),
    }
}

/// `find` on `system.profile`: the database's entries, filtered, sorted (by fields or
/// `$natural`), skipped, limited and projected in memory.
pub(super) fn find_system_profile(
    context: &CommandContext<'_>,
    request: &CommandRequest,
    arguments: FindArguments,
) -> ReplyResult {
    if arguments.collation.is_some() {
        return Err(OpError::NotSupported(
            "a collation on system.profile is not supported by docgate".into(),
        ));
    }
    match &arguments.hint {
        None => {}
        Some(Bson::Document(hint)) if hint.len() == 1 && hint.contains_key("$natural") => {}
        Some(_) => {
            return Err(OpError::BadValue(
                "hint provided does not correspond to an existing index".into(),
            ))
        }
    }
    let mut entries: Vec<Document> = context
        .server
        .state
        .profiler
        .entries(&request.db)
        .into_iter()
        .filter(|entry| arguments.filter.matches(entry))
        .collect();
    if let Some(sort) = &arguments.sort {
        if sort.natural == Some(SortDirection::Descending) {
            entries.reverse();
        }
        sort.sort(&mut entries);
    }
    let skip = usize::try_from(arguments.skip).unwrap_or(usize::MAX);
    let limit = arguments.limit.map_or(usize::MAX, |limit| {
        usize::try_from(limit).unwrap_or(usize::MAX)
    });
    let mut results = Vec::new();
    for entry in entries.into_iter().skip(skip).take(limit) {
        results.push(match &arguments.projection {
            Some(projection) => projection.apply_with_query(&entry, &arguments.filter)?,
            None => entry,
        });
    }
    let namespace = format!("{}.{PROFILE_COLLECTION}", request.db);
    let options = BatchOptions {
        batch_size: arguments.batch_size,
        single_batch: arguments.single_batch,
        no_timeout: arguments.no_cursor_timeout,
    };
    first_batch_reply(
        context,
        request,
        &namespace,
        crate::ops::find::encode_documents(&results)?,
        options,
    )
}

/// `count` on `system.profile`: the entries `filter` matches, after `skip`, up to `limit`.
pub(super) fn count_system_profile(
    context: &CommandContext<'_>,
    request: &CommandRequest,
    filter: &Filter,
    skip: u64,
    limit: Option<u64>,
) -> CommandResult {
    let matching = context
        .server
        .state
        .profiler
        .entries(&request.db)
        .iter()
        .filter(|entry| filter.matches(entry))
        .count() as u64;
    let n = matching.saturating_sub(skip).min(limit.unwrap_or(u64::MAX));
    Ok(doc! {"n": i64::try_from(n).unwrap_or(i64::MAX)})
}

/// The entries of `db`'s `system.profile`, oldest first (the input of an `aggregate` on it).
pub(super) fn system_profile_entries(server: &MongoServer, db: &str) -> Vec<Document> {
    server.state.profiler.entries(db)
}
