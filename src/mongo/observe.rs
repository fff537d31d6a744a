//! What the mongo front end tells `/metrics`: each command's name, time and outcome (one
//! call from `dispatch`), the limits a connection or a command ran into, and, at scrape
//! time, its cursors, sessions and transactions and the limits it was configured with
//! (`MetricSource for MongoServer`).
//!
//! Not for: the registry or the exposition (`crate::metrics`), or `serverStatus`
//! (`commands::diagnostics`, which reads the same registries).

use std::sync::OnceLock;
use std::time::Instant;

use bson::{Bson, RawBsonRef};

use super::command_table;
use super::dispatch::CommandReply;
use super::reader::{ReadError, ReadLimits};
use super::MongoServer;
use crate::metrics::{CommandSeries, LimitHit, MetricSource, Samples};

/// Each command's series, by its position in the command table (and one more for names
/// that are no command: `unknown`), resolved at its first use.
pub struct CommandSeriesTable(Box<[OnceLock<CommandSeries>]>);

impl Default for CommandSeriesTable {
    fn default() -> Self {
        CommandSeriesTable(
            (0..=command_table::COMMANDS.len())
                .map(|_| OnceLock::new())
                .collect(),
        )
    }
}

impl CommandSeriesTable {
    /// The series of the command at `position` (None: `unknown`).
    fn get(&self, server: &MongoServer, position: Option<usize>) -> Option<&CommandSeries> {
        let spec = position.and_then(|position| command_table::COMMANDS.get(position));
        let slot = self
            .0
            .get(position.unwrap_or(command_table::COMMANDS.len()))?;
        Some(slot.get_or_init(|| {
            server
                .state
                .metrics
                .command_series(spec.map_or("unknown", |spec| spec.name))
        }))
    }
}

/// A command being timed, by its position in the command table.
pub(super) struct CommandTimer {
    position: Option<usize>,
    started: Instant,
}

impl CommandTimer {
    /// Starts timing the command a client names (`unknown` when it is not a command, so
    /// clients cannot grow the label set).
    pub(super) fn start(name: &str) -> CommandTimer {
        CommandTimer {
            position: command_table::position(name),
            started: Instant::now(),
        }
    }

    /// Records the command with its reply's outcome, and the limits its reply (or its
    /// write errors) says it ran into.
    pub(super) fn finish(self, server: &MongoServer, reply: &CommandReply) {
        let metrics = &server.state.metrics;
        let elapsed = self.started.elapsed();
        let Some(series) = server.command_series.get(server, self.position) else {
            return;
        };
        match reply {
            CommandReply::Document(document) if !is_ok(document.get("ok")) => {
                let code = document.get_i32("code").unwrap_or(0);
                let code_name = document.get_str("codeName").unwrap_or("");
                metrics.record_command(series, elapsed, Some((code, code_name)));
                count_limit_hit(server, code, document.get_str("errmsg").unwrap_or(""));
            }
            CommandReply::Document(document) => {
                metrics.record_command(series, elapsed, None);
                if let Ok(errors) = document.get_array("writeErrors") {
                    for error in errors.iter().filter_map(Bson::as_document) {
                        let code = error.get_i32("code").unwrap_or(0);
                        count_limit_hit(server, code, error.get_str("errmsg").unwrap_or(""));
                    }
                }
            }
            CommandReply::Encoded(bytes) => {
                let ok = match bytes.get("ok") {
                    Ok(Some(RawBsonRef::Double(ok))) => ok != 0.0,
                    Ok(Some(RawBsonRef::Int32(ok))) => ok != 0,
                    _ => true,
                };
                let error = (!ok).then_some((0, ""));
                metrics.record_command(series, elapsed, error);
            }
        }
    }
}

fn is_ok(ok: Option<&Bson>) -> bool {
    match ok {
        Some(Bson::Double(ok)) => *ok != 0.0,
        Some(Bson::Int32(ok)) => *ok != 0,
        Some(Bson::Int64(ok)) => *ok != 0,
        Some(Bson::Boolean(ok)) => *ok,
        _ => true,
    }
}

/// Counts the limit an error code stands for: 10334 (a document over its limit), 50 (past
/// `maxTimeMS`), 292 (a blocking stage over its memory), 146 from the cursor registry (too
/// many open cursors), and the nesting limit's BadValue.
fn count_limit_hit(server: &MongoServer, code: i32, message: &str) {
    let hit = match code {
        10334 => LimitHit::DocumentSize,
        50 => LimitHit::MaxTime,
        292 => LimitHit::BlockingStageMemory,
        146 if message.contains("cursors") => LimitHit::OpenCursors,
        2 if message.starts_with("BSONObj exceeds maximum nested object depth") => {
            LimitHit::NestingDepth
        }
        _ => return,
    };
    server.state.metrics.limit_hit(hit);
}

/// Counts the limit that ended a connection's read, if one did.
pub(super) fn count_read_limit(server: &MongoServer, error: &ReadError, limits: ReadLimits) {
    let hit = match error {
        ReadError::TooLarge { .. } if limits.max_message < server.limits.max_message_bytes => {
            LimitHit::UnauthenticatedMessageSize
        }
        ReadError::TooLarge { .. } => LimitHit::MessageSize,
        ReadError::Slow(_) => LimitHit::MessageTimeout,
        ReadError::Idle(_) => LimitHit::IdleTimeout,
        ReadError::Closed | ReadError::TooShort(_) | ReadError::Io(_) => return,
    };
    server.state.metrics.limit_hit(hit);
}

impl MetricSource for MongoServer {
    fn sample(&self, samples: &mut Samples) {
        let cursors = self.cursors.metrics();
        samples.gauge(
            "docgate_cursors_open",
            "Cursors open now (serverStatus metrics.cursor.open.total)",
            &[],
            cursors.open as f64,
        );
        samples.counter(
            "docgate_cursors_opened",
            "Cursors opened since start",
            &[],
            cursors.total_opened,
        );
        samples.counter(
            "docgate_cursors_timed_out",
            "Cursors closed for being idle since start",
            &[],
            cursors.timed_out,
        );
        let sessions = self.sessions.metrics();
        samples.gauge(
            "docgate_sessions_active",
            "Logical sessions this process holds now",
            &[],
            sessions.active_sessions as f64,
        );
        samples.gauge(
            "docgate_transactions_open",
            "Multi-document transactions open now",
            &[],
            sessions.open_transactions as f64,
        );
        for (outcome, value) in [
            ("started", sessions.transactions_started),
            ("committed", sessions.transactions_committed),
            ("aborted", sessions.transactions_aborted),
        ] {
            samples.counter(
                "docgate_transactions",
                "Multi-document transactions since start, by what happened to them",
                &[("outcome", outcome)],
                value,
            );
        }
        self.sample_limits(samples);
    }
}

impl MongoServer {
    /// Each limit of the mongo front end as configured (0: none).
    fn sample_limits(&self, samples: &mut Samples) {
        let limits = &self.limits;
        let documents = self.state.settings.documents;
        let seconds = |d: Option<std::time::Duration>| d.map_or(0.0, |d| d.as_secs_f64());
        for (limit, value) in [
            ("max_message_bytes", limits.max_message_bytes as f64),
            ("max_document_bytes", documents.max_bytes as f64),
            ("max_nesting_depth", documents.max_depth as f64),
            (
                "max_connections",
                self.state.settings.max_connections as f64,
            ),
            ("idle_timeout_seconds", seconds(limits.idle_timeout)),
            (
                "unauthenticated_idle_timeout_seconds",
                limits.unauthenticated_idle_timeout.as_secs_f64(),
            ),
            (
                "message_timeout_seconds",
                limits.message_timeout.as_secs_f64(),
            ),
            (
                "unauthenticated_max_message_bytes",
                limits.unauthenticated_max_message_bytes as f64,
            ),
            (
                "incoming_message_budget_bytes",
                limits.incoming_message_budget_bytes as f64,
            ),
            ("default_max_time_seconds", seconds(limits.default_max_time)),
            (
                "blocking_stage_memory_limit_bytes",
                limits.blocking_stage_memory_bytes as f64,
            ),
            ("max_open_cursors", limits.cursors.max_open as f64),
            (
                "max_open_cursors_per_session",
                limits.cursors.max_open_per_session as f64,
            ),
            (
                "cursor_timeout_seconds",
                limits.cursors.idle_timeout.as_secs_f64(),
            ),
            (
                "transaction_lifetime_limit_seconds",
                limits.sessions.transaction_lifetime.as_secs_f64(),
            ),
        ] {
            samples.gauge(
                "docgate_limit",
                "Each limit as configured, by its setting (0: none)",
                &[("limit", limit)],
                value,
            );
        }
    }
}

/// Counts a connection that had to wait because `--max-connections` were open.
pub fn count_connection_limit(server: &MongoServer) {
    server.state.metrics.limit_hit(LimitHit::MaxConnections);
}
