//! What docgate shows of itself to operators: the one metrics registry ([`Metrics`], in
//! `AppState`) that both front ends, the core, the store and authentication feed, the
//! figures read from each area's own counters at scrape time ([`Samples`], [`MetricSource`]),
//! the health probes (`health`, also served by the REST listener) and the admin listener
//! that serves `/metrics`, `/livez` and `/readyz` (`admin`).
//!
//! Two kinds of figures: events recorded as they happen (commands, REST requests, limits
//! hit: families in [`Metrics`]), and figures an area already keeps for itself (connections,
//! opcounters, cursors, sessions, the pool, the caches, PBKDF2 runs) read when `/metrics` is
//! scraped, so `/metrics` and `serverStatus` read one source and cannot disagree.
//!
//! Not for: the figures themselves (each area counts its own), or MongoDB's `serverStatus`
//! shape (`mongo::commands::diagnostics`). Imports neither front end: each registers a
//! [`MetricSource`] with the admin listener instead.

pub mod admin;
pub mod health;
mod samples;
mod shared;

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

pub use samples::{MetricSource, Samples};

/// A latency histogram in seconds, with docgate's buckets (0.5 ms to about 12 s).
pub type LatencyHistogram = Histogram;

/// A new [`LatencyHistogram`].
pub fn latency_histogram() -> LatencyHistogram {
    Histogram::new(exponential_buckets(0.0005, 2.5, 12))
}

/// A command by its name in the command table (`unknown` for a name that is not one, so
/// that clients cannot grow the label set) and whether it answered `ok: 1`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CommandLabels {
    command: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CommandNameLabel {
    command: &'static str,
}

/// A failed command's MongoDB error code and code name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    code: i32,
    code_name: String,
}

/// A REST request's route: the router's path pattern for the built-in routes, or a REST
/// module's name and URI template for its handlers.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RestLabels {
    module: String,
    route: String,
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RestRouteLabels {
    module: String,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabel {
    limit: &'static str,
}

/// The route of a REST request, for its metrics: a module's (name, template), or the
/// router's path pattern (`module` empty).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestRoute {
    pub module: String,
    pub route: String,
}

/// The limits whose hits are counted (`docgate_limit_hits_total{limit}`), by the name of
/// their setting (or, for MongoDB's fixed ones, of the limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitHit {
    /// A message over 48,000,000 bytes.
    MessageSize,
    /// A message over `--unauthenticated-max-message-bytes` before authentication.
    UnauthenticatedMessageSize,
    /// A document over 16 MiB.
    DocumentSize,
    /// A document nested deeper than 100 levels.
    NestingDepth,
    /// A message not complete within `--message-timeout`.
    MessageTimeout,
    /// A connection silent for `--idle-timeout` (or the unauthenticated one).
    IdleTimeout,
    /// `--max-connections` connections open: the next waits in the accept queue.
    MaxConnections,
    /// `--max-open-cursors` or `--max-open-cursors-per-session` reached.
    OpenCursors,
    /// A command past its `maxTimeMS` (or `--default-max-time-ms`).
    MaxTime,
    /// A blocking stage over `--blocking-stage-memory-limit-bytes` (292).
    BlockingStageMemory,
    /// A REST body over `--rest-max-body-bytes`.
    RestBodySize,
    /// A REST JSON body nested deeper than `--rest-max-json-depth`.
    RestJsonDepth,
    /// A REST request past `--rest-request-timeout`.
    RestRequestTimeout,
    /// `--rest-max-connections` connections open.
    RestMaxConnections,
}

impl LimitHit {
    /// The `limit` label.
    pub fn name(self) -> &'static str {
        match self {
            LimitHit::MessageSize => "max_message_bytes",
            LimitHit::UnauthenticatedMessageSize => "unauthenticated_max_message_bytes",
            LimitHit::DocumentSize => "max_document_bytes",
            LimitHit::NestingDepth => "max_nesting_depth",
            LimitHit::MessageTimeout => "message_timeout",
            LimitHit::IdleTimeout => "idle_timeout",
            LimitHit::MaxConnections => "max_connections",
            LimitHit::OpenCursors => "max_open_cursors",
            LimitHit::MaxTime => "max_time_ms",
            LimitHit::BlockingStageMemory => "blocking_stage_memory_limit_bytes",
            LimitHit::RestBodySize => "rest_max_body_bytes",
            LimitHit::RestJsonDepth => "rest_max_json_depth",
            LimitHit::RestRequestTimeout => "rest_request_timeout",
            LimitHit::RestMaxConnections => "rest_max_connections",
        }
    }
}

/// One command's series, resolved once so that recording it takes no family lookup (the
/// handles share their values with the registered families).
#[derive(Clone, Debug)]
pub struct CommandSeries {
    ok: Counter,
    error: Counter,
    seconds: LatencyHistogram,
}

/// The events docgate records as they happen; one per `AppState`.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    commands: Family<CommandLabels, Counter>,
    command_seconds: Family<CommandNameLabel, LatencyHistogram, fn() -> LatencyHistogram>,
    command_errors: Family<ErrorLabels, Counter>,
    rest_requests: Family<RestLabels, Counter>,
    rest_seconds: Family<RestRouteLabels, LatencyHistogram, fn() -> LatencyHistogram>,
    limit_hits: Family<LimitLabel, Counter>,
    sql_groups: Family<SqlGroupLabel, Counter>,
}

/// How a `$group` planned as SQL was answered (`docgate_sql_groups_total{answered}`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SqlGroupLabel {
    answered: &'static str,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Empty families, registered under their names.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let commands = Family::<CommandLabels, Counter>::default();
        registry.register(
            "docgate_commands",
            "MongoDB commands run, by command and outcome (ok or error)",
            commands.clone(),
        );
        let command_seconds = Family::new_with_constructor(latency_histogram as fn() -> _);
        registry.register(
            "docgate_command_duration_seconds",
            "Time from a command's arrival to its reply, by command",
            command_seconds.clone(),
        );
        let command_errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "docgate_command_errors",
            "MongoDB commands that answered ok: 0, by error code and code name",
            command_errors.clone(),
        );
        let rest_requests = Family::<RestLabels, Counter>::default();
        registry.register(
            "docgate_rest_requests",
            "REST requests answered, by module, route, method and status",
            rest_requests.clone(),
        );
        let rest_seconds = Family::new_with_constructor(latency_histogram as fn() -> _);
        registry.register(
            "docgate_rest_request_duration_seconds",
            "Time from a REST request's head to its response, by module and route",
            rest_seconds.clone(),
        );
        let limit_hits = Family::<LimitLabel, Counter>::default();
        registry.register(
            "docgate_limit_hits",
            "Times a limit refused or cut off a client, by the limit's setting",
            limit_hits.clone(),
        );
        let sql_groups = Family::<SqlGroupLabel, Counter>::default();
        registry.register(
            "docgate_sql_groups",
            "$group stages planned as SQL (PostgreSQL), by how they were answered: \"sql\", \
             or \"rust\" when a value the SQL cannot group exactly sent the rows through Rust",
            sql_groups.clone(),
        );
        Metrics {
            registry,
            commands,
            command_seconds,
            command_errors,
            rest_requests,
            rest_seconds,
            limit_hits,
            sql_groups,
        }
    }

    /// Counts a `$group` planned as SQL: answered by the SQL (`in_sql`) or by Rust.
    pub fn sql_group(&self, in_sql: bool) {
        let answered = if in_sql { "sql" } else { "rust" };
        self.sql_groups
            .get_or_create(&SqlGroupLabel { answered })
            .inc();
    }

    /// The series of `command` (its table name, or `unknown`), for a caller to keep.
    pub fn command_series(&self, command: &'static str) -> CommandSeries {
        CommandSeries {
            ok: self.commands.get_or_create_owned(&CommandLabels {
                command,
                outcome: "ok",
            }),
            error: self.commands.get_or_create_owned(&CommandLabels {
                command,
                outcome: "error",
            }),
            seconds: self
                .command_seconds
                .get_or_create_owned(&CommandNameLabel { command }),
        }
    }

    /// Records a command in its series: how long it took and, when it failed, its error
    /// code and code name.
    pub fn record_command(
        &self,
        series: &CommandSeries,
        elapsed: Duration,
        error: Option<(i32, &str)>,
    ) {
        match error {
            None => series.ok.inc(),
            Some(_) => series.error.inc(),
        };
        series.seconds.observe(elapsed.as_secs_f64());
        if let Some((code, code_name)) = error {
            self.command_errors
                .get_or_create(&ErrorLabels {
                    code,
                    code_name: code_name.to_owned(),
                })
                .inc();
        }
    }

    /// Records a REST request by its route, method and status.
    pub fn record_rest_request(
        &self,
        route: &RestRoute,
        method: &axum::http::Method,
        status: u16,
        elapsed: Duration,
    ) {
        self.rest_requests
            .get_or_create(&RestLabels {
                module: route.module.clone(),
                route: route.route.clone(),
                method: method_label(method),
                status,
            })
            .inc();
        self.rest_seconds
            .get_or_create(&RestRouteLabels {
                module: route.module.clone(),
                route: route.route.clone(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Counts one hit of `limit`.
    pub fn limit_hit(&self, limit: LimitHit) {
        self.limit_hits
            .get_or_create(&LimitLabel {
                limit: limit.name(),
            })
            .inc();
    }

    /// The Prometheus text exposition of the recorded events and of `samples`.
    pub fn render(&self, samples: Samples) -> String {
        let mut text = String::new();
        let mut sampled = Registry::default();
        sampled.register_collector(Box::new(samples));
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry);
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &sampled);
        text
    }
}

/// The HTTP method as a label; methods outside HTTP's own are `other`, so clients cannot
/// grow the label set.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_events_appear_in_the_exposition() {
        let metrics = Metrics::new();
        let find = metrics.command_series("find");
        metrics.record_command(&find, Duration::from_millis(2), None);
        metrics.record_command(
            &metrics.command_series("insert"),
            Duration::from_millis(1),
            Some((11000, "DuplicateKey")),
        );
        metrics.limit_hit(LimitHit::MessageSize);
        let mut samples = Samples::default();
        samples.gauge("docgate_cursors_open", "open cursors", &[], 3.0);
        samples.counter(
            "docgate_pool_checkouts",
            "checkouts",
            &[("backend", "sqlite")],
            7,
        );
        let text = metrics.render(samples);
        for line in [
            "docgate_commands_total{command=\"find\",outcome=\"ok\"} 1",
            "docgate_commands_total{command=\"insert\",outcome=\"error\"} 1",
            "docgate_command_errors_total{code=\"11000\",code_name=\"DuplicateKey\"} 1",
            "docgate_command_duration_seconds_count{command=\"find\"} 1",
            "docgate_limit_hits_total{limit=\"max_message_bytes\"} 1",
            "docgate_cursors_open 3",
            "docgate_pool_checkouts_total{backend=\"sqlite\"} 7",
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
    }
}
