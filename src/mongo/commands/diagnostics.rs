//! Diagnostic commands that tools and mongosh send on their own: `getParameter`,
//! `getCmdLineOpts`, `getLog`, `hostInfo`, `connectionStatus`, `serverStatus`,
//! `listCommands`.
//!
//! Not for: anything that changes state.

use bson::{doc, Bson, DateTime, Document};

use crate::mongo::command_table::COMMANDS;
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::CommandRequest;
use crate::state::ServerCounters;

use crate::mongo::limits::MONGODB_VERSION;

/// The server parameters `getParameter` can report.
fn parameters(context: &CommandContext<'_>) -> Document {
    let cursor_timeout = context.server.cursors.limits().idle_timeout;
    doc! {
        "featureCompatibilityVersion": {"version": "7.0"},
        "authenticationMechanisms": Vec::<String>::new(),
        "cursorTimeoutMillis": i64::try_from(cursor_timeout.as_millis()).unwrap_or(i64::MAX),
        "logLevel": 0,
        "quiet": false,
        "requireApiVersion": false,
        "maxBSONDepth": 100,
        "enableTestCommands": context.server.face.enable_test_commands,
    }
}

/// `getParameter`: `{getParameter: 1, name: 1, ...}` or `{getParameter: "*"}`.
pub fn get_parameter(context: &CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let all = parameters(context);
    if matches!(request.target(), Bson::String(s) if s == "*") {
        return Ok(all);
    }
    let mut reply = Document::new();
    for key in request.body.keys() {
        if key == &request.name || key.starts_with('$') || key == "lsid" || key == "comment" {
            continue;
        }
        if let Some(value) = all.get(key) {
            reply.insert(key.clone(), value.clone());
        }
    }
    if reply.is_empty() {
        return Err(OpError::InvalidOptions("no option found to get".into()));
    }
    Ok(reply)
}

/// `getCmdLineOpts`: argv and the resolved settings.
pub fn get_cmd_line_opts(context: &CommandContext<'_>) -> CommandResult {
    let settings = &context.server.state.settings;
    let argv: Vec<Bson> = settings
        .argv
        .iter()
        .map(|a| Bson::String(a.clone()))
        .collect();
    Ok(doc! {
        "argv": argv,
        "parsed": {
            "net": {
                "bindIp": settings.listen.ip().to_string(),
                "port": i32::from(settings.listen.port()),
                "maxIncomingConnections": settings.max_connections as i64,
            },
            "storage": {"engine": context.server.state.store.backend_name(), "location": context.server.state.store.describe()},
        },
    })
}

/// `getLog`: `global` (the last lines of the server's log, in MongoDB's structured JSON
/// form: `crate::diagnostic_log`), `startupWarnings` (the warnings logged before the
/// server was ready), `*` (the names of the logs).
pub fn get_log(request: &CommandRequest) -> CommandResult {
    let lines = |lines: Vec<String>| Bson::Array(lines.into_iter().map(Bson::String).collect());
    match request.target() {
        Bson::String(name) if name == "*" => Ok(doc! {"names": ["global", "startupWarnings"]}),
        Bson::String(name) if name == "global" => {
            let (total, recent) = crate::diagnostic_log::global();
            Ok(doc! {
                "totalLinesWritten": i64::try_from(total).unwrap_or(i64::MAX),
                "log": lines(recent),
            })
        }
        Bson::String(name) if name == "startupWarnings" => {
            let warnings = crate::diagnostic_log::startup_warnings();
            Ok(doc! {"totalLinesWritten": warnings.len() as i64, "log": lines(warnings)})
        }
        Bson::String(name) => Err(OpError::BadValue(format!("No log named '{name}'"))),
        _ => Err(OpError::TypeMismatch(
            "Argument to getLog must be of type String".into(),
        )),
    }
}

/// `hostInfo`: the machine.
pub fn host_info() -> CommandResult {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1) as i32;
    Ok(doc! {
        "system": {
            "currentTime": DateTime::now(),
            "hostname": hostname(),
            "cpuAddrSize": 64,
            "numCores": cores,
            "cpuArch": std::env::consts::ARCH,
        },
        "os": {"type": std::env::consts::OS, "name": std::env::consts::OS},
        "extra": {},
    })
}

pub(super) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".to_string())
}

/// `serverStatus`: uptime, connections, operation counters.
pub fn server_status(context: &CommandContext<'_>) -> Document {
    let state = &context.server.state;
    let counters = &state.counters;
    let uptime = state.started.elapsed();
    let current = ServerCounters::get(&counters.connections_current) as i64;
    let max = state.settings.max_connections as i64;
    let mut status = doc! {
        "host": hostname(),
        "version": MONGODB_VERSION,
        "process": "docgate",
        "pid": i64::from(std::process::id()),
        "uptime": uptime.as_secs_f64(),
        "uptimeMillis": uptime.as_millis() as i64,
        "uptimeEstimate": uptime.as_secs() as i64,
        "localTime": DateTime::now(),
        "connections": {
            "current": current,
            "available": (max - current).max(0),
            "totalCreated": ServerCounters::get(&counters.connections_total) as i64,
        },
        "opcounters": {
            "insert": ServerCounters::get(&counters.op_insert) as i64,
            "query": ServerCounters::get(&counters.op_query) as i64,
            "update": ServerCounters::get(&counters.op_update) as i64,
            "delete": ServerCounters::get(&counters.op_delete) as i64,
            "getmore": ServerCounters::get(&counters.op_getmore) as i64,
            "command": ServerCounters::get(&counters.op_command) as i64,
        },
        "metrics": {"cursor": cursor_metrics(context), "query": spill_metrics()},
        "transactions": transaction_metrics(context),
        "logicalSessionRecordCache": {
            "activeSessionsCount": context.server.sessions.metrics().active_sessions as i64,
        },
        "docgate": {"pool": pool_metrics(state)},
        "storageEngine": {"name": state.store.backend_name()},
        "security": {"authentication": authentication_status(state)},
    };
    if context.server.is_replica_set() {
        status.insert("repl", super::handshake::repl_status(context.server));
    }
    status
}

/// `transactions` as MongoDB reports it: open now, and started, committed and aborted
/// since start.
fn transaction_metrics(context: &CommandContext<'_>) -> Document {
    let metrics = context.server.sessions.metrics();
    doc! {
        "currentOpen": metrics.open_transactions as i64,
        "totalStarted": metrics.transactions_started as i64,
        "totalCommitted": metrics.transactions_committed as i64,
        "totalAborted": metrics.transactions_aborted as i64,
    }
}

/// docgate's own: the connection pool to the backend (the figures `/metrics` reads too).
fn pool_metrics(state: &crate::state::AppState) -> Document {
    let pool = state.store.pool_status();
    let counters = state.store.counters();
    let get = |counter| ServerCounters::get(counter) as i64;
    doc! {
        "maxSize": pool.max_size as i64,
        "size": pool.size as i64,
        "inUse": pool.in_use as i64,
        "waiting": pool.waiting as i64,
        "totalCheckouts": get(&counters.checkouts),
        "totalWaits": get(&counters.waits),
        "totalTimeouts": get(&counters.timeouts),
    }
}

/// `metrics.cursor` as MongoDB reports it: timed out, opened and multi-batch totals since
/// start, and the cursors open now.
fn cursor_metrics(context: &CommandContext<'_>) -> Document {
    let metrics = context.server.cursors.metrics();
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    doc! {
        "timedOut": count(metrics.timed_out),
        "totalOpened": count(metrics.total_opened),
        "moreThanOneBatch": count(metrics.more_than_one_batch),
        "open": {
            "noTimeout": count(metrics.open_no_timeout),
            "pinned": count(metrics.open_pinned),
            "total": count(metrics.open),
        },
    }
}

/// `metrics.query` as MongoDB 7.0 reports spilling: sorts that wrote temporary files
/// (`sort.spillToDisk`) and `$group`s that did (`group.spills`), with docgate's own totals of
/// files and bytes written (`--temp-dir`).
fn spill_metrics() -> Document {
    let totals = crate::query::spill::totals();
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    doc! {
        "sort": {"spillToDisk": count(totals.sorts)},
        "group": {"spills": count(totals.groups)},
        "docgateSpill": {"files": count(totals.files), "bytes": count(totals.bytes)},
    }
}

/// Locks `serverStatus` lists by name at most (all are counted).
const MAX_LISTED_LOCKS: usize = 20;

/// `security.authentication`: MongoDB's per-mechanism counters, plus the fast verification
/// path's (`fastPath`: PBKDF2 runs and cache hits) and the failed-attempt locks in force
/// (`lockouts`: user, client address, seconds left).
fn authentication_status(state: &crate::state::AppState) -> Document {
    let mut mechanisms = Document::new();
    for name in ["SCRAM-SHA-1", "SCRAM-SHA-256", "PLAIN"] {
        let Some(m) = state.counters.mechanism(name) else {
            continue;
        };
        let get = |counter| ServerCounters::get(counter) as i64;
        mechanisms.insert(
            name,
            doc! {
                "authenticate": {
                    "received": get(&m.authenticate_received),
                    "successful": get(&m.authenticate_successful),
                },
                "speculativeAuthenticate": {
                    "received": get(&m.speculative_received),
                    "successful": get(&m.speculative_successful),
                },
            },
        );
    }
    let verifier = state.auth.verifier();
    let throttle = state.auth.throttle();
    let (locks, locked_now) = throttle.active_locks(MAX_LISTED_LOCKS);
    let locked: Vec<Document> = locks
        .iter()
        .map(|lock| {
            doc! {
                "user": &lock.user,
                "client": lock.client.to_string(),
                "remainingSecs": lock.remaining.as_secs() as i64,
            }
        })
        .collect();
    doc! {
        "mechanisms": mechanisms,
        "lockouts": {
            "current": locked_now as i64,
            "total": throttle.locks_total() as i64,
            "locked": locked,
        },
        "fastPath": {
            "enabled": verifier.settings().enabled,
            "pbkdf2Runs": verifier.pbkdf2_runs() as i64,
            "databaseLogons": state.auth.database_logons() as i64,
            "cacheHits": verifier.cache_hits() as i64,
        },
    }
}

/// `listCommands`: the supported commands.
pub fn list_commands(context: &CommandContext<'_>) -> Document {
    let mut commands = Document::new();
    let test_commands = context.server.face.enable_test_commands;
    for command in COMMANDS.iter().filter(|command| {
        command.command != crate::mongo::command_table::Command::ConfigureFailPoint || test_commands
    }) {
        commands.insert(
            command.name,
            doc! {"help": command.help, "adminOnly": false, "requiresAuth": false},
        );
    }
    doc! {"commands": commands}
}
