//! Limits and timeouts that keep one client — logged in or not — from taking the server's
//! memory, connections, file descriptors or CPU from the others: flags (`--idle-timeout`,
//! …), their environment variables, the `[limits]` table of the settings file, and the
//! resolved [`LimitSettings`]. README's "Limits and abuse" lists them.
//!
//! Not for: enforcing them (the listeners, `crate::compute` and `crate::interrupt` do).

use std::time::Duration;

use clap::Args;
use serde::Deserialize;

use super::parse_duration;

/// The command-line flags of the limits (flattened into `Cli`).
#[derive(Args, Debug, Default)]
pub struct LimitArgs {
    /// Close a MongoDB connection that sends nothing for this long (default 30m; 0 = never).
    #[arg(long, env = "DOCGATE_IDLE_TIMEOUT", value_parser = parse_duration)]
    pub idle_timeout: Option<Duration>,
    /// Close a MongoDB connection that has not authenticated and sends nothing for this
    /// long, when authentication is required (default 60s; above drivers' 10s heartbeat).
    #[arg(long, env = "DOCGATE_UNAUTHENTICATED_IDLE_TIMEOUT", value_parser = parse_duration)]
    pub unauthenticated_idle_timeout: Option<Duration>,
    /// Close a connection whose message, TLS handshake or HTTP request head is not complete
    /// this long after it began (default 60s).
    #[arg(long, env = "DOCGATE_MESSAGE_TIMEOUT", value_parser = parse_duration)]
    pub message_timeout: Option<Duration>,
    /// Largest message, compressed or not, a MongoDB connection may send before it has
    /// authenticated, when authentication is required (default 65536 bytes).
    #[arg(long, env = "DOCGATE_UNAUTHENTICATED_MAX_MESSAGE_BYTES")]
    pub unauthenticated_max_message_bytes: Option<usize>,
    /// Bytes of incoming MongoDB messages (and their decompressed bodies) held at once
    /// across all connections; a larger message waits its turn (default 1 GiB).
    #[arg(long, env = "DOCGATE_INCOMING_MESSAGE_BUDGET_BYTES")]
    pub incoming_message_budget_bytes: Option<usize>,
    /// Most simultaneous REST connections; more wait in the accept queue (default 1024).
    #[arg(long, env = "DOCGATE_REST_MAX_CONNECTIONS")]
    pub rest_max_connections: Option<usize>,
    /// Close a REST keep-alive connection idle this long, and one whose request head takes
    /// longer (default 60s).
    #[arg(long, env = "DOCGATE_REST_IDLE_TIMEOUT", value_parser = parse_duration)]
    pub rest_idle_timeout: Option<Duration>,
    /// Time limit of one REST request, evaluation included (default 60s; 0 = none).
    #[arg(long, env = "DOCGATE_REST_REQUEST_TIMEOUT", value_parser = parse_duration)]
    pub rest_request_timeout: Option<Duration>,
    /// `maxTimeMS` of commands that do not set one, as MongoDB 8's `defaultMaxTimeMS`
    /// (default 0: none).
    #[arg(long, env = "DOCGATE_DEFAULT_MAX_TIME_MS")]
    pub default_max_time_ms: Option<u64>,
    /// How long shutdown lets running commands finish before interrupting them (default 30s).
    #[arg(long, env = "DOCGATE_SHUTDOWN_GRACE", value_parser = parse_duration)]
    pub shutdown_grace: Option<Duration>,
}

/// The `[limits]` table of the settings file: the flags' names with underscores.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileLimits {
    idle_timeout: Option<String>,
    unauthenticated_idle_timeout: Option<String>,
    message_timeout: Option<String>,
    unauthenticated_max_message_bytes: Option<usize>,
    incoming_message_budget_bytes: Option<usize>,
    rest_max_connections: Option<usize>,
    rest_idle_timeout: Option<String>,
    rest_request_timeout: Option<String>,
    default_max_time_ms: Option<u64>,
    shutdown_grace: Option<String>,
}

/// The resolved limits. A zero duration means "no limit" where the flag says so.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitSettings {
    pub idle_timeout: Option<Duration>,
    pub unauthenticated_idle_timeout: Duration,
    pub message_timeout: Duration,
    pub unauthenticated_max_message_bytes: usize,
    pub incoming_message_budget_bytes: usize,
    pub rest_max_connections: usize,
    pub rest_idle_timeout: Duration,
    pub rest_request_timeout: Option<Duration>,
    pub default_max_time: Option<Duration>,
    pub shutdown_grace: Duration,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            idle_timeout: Some(Duration::from_secs(30 * 60)),
            unauthenticated_idle_timeout: Duration::from_secs(60),
            message_timeout: Duration::from_secs(60),
            unauthenticated_max_message_bytes: 64 * 1024,
            incoming_message_budget_bytes: 1 << 30,
            rest_max_connections: 1024,
            rest_idle_timeout: Duration::from_secs(60),
            rest_request_timeout: Some(Duration::from_secs(60)),
            default_max_time: None,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

impl LimitSettings {
    /// Flags and environment over the file over the defaults.
    pub(super) fn resolve(args: LimitArgs, file: FileLimits) -> Result<LimitSettings, String> {
        let defaults = LimitSettings::default();
        let duration = |flag: Option<Duration>, file: Option<String>, name: &str| match flag {
            Some(value) => Ok(Some(value)),
            None => file
                .as_deref()
                .map(parse_duration)
                .transpose()
                .map_err(|e| format!("limits.{name}: {e}")),
        };
        let positive = |value: Duration, name: &str| {
            if value.is_zero() {
                Err(format!("limits.{name} must be positive"))
            } else {
                Ok(value)
            }
        };
        let zero_is_none = |value: Duration| Some(value).filter(|v| !v.is_zero());
        let limits = LimitSettings {
            idle_timeout: match duration(args.idle_timeout, file.idle_timeout, "idle_timeout")? {
                Some(value) => zero_is_none(value),
                None => defaults.idle_timeout,
            },
            unauthenticated_idle_timeout: positive(
                duration(
                    args.unauthenticated_idle_timeout,
                    file.unauthenticated_idle_timeout,
                    "unauthenticated_idle_timeout",
                )?
                .unwrap_or(defaults.unauthenticated_idle_timeout),
                "unauthenticated_idle_timeout",
            )?,
            message_timeout: positive(
                duration(
                    args.message_timeout,
                    file.message_timeout,
                    "message_timeout",
                )?
                .unwrap_or(defaults.message_timeout),
                "message_timeout",
            )?,
            unauthenticated_max_message_bytes: args
                .unauthenticated_max_message_bytes
                .or(file.unauthenticated_max_message_bytes)
                .unwrap_or(defaults.unauthenticated_max_message_bytes),
            incoming_message_budget_bytes: args
                .incoming_message_budget_bytes
                .or(file.incoming_message_budget_bytes)
                .unwrap_or(defaults.incoming_message_budget_bytes),
            rest_max_connections: args
                .rest_max_connections
                .or(file.rest_max_connections)
                .unwrap_or(defaults.rest_max_connections),
            rest_idle_timeout: positive(
                duration(
                    args.rest_idle_timeout,
                    file.rest_idle_timeout,
                    "rest_idle_timeout",
                )?
                .unwrap_or(defaults.rest_idle_timeout),
                "rest_idle_timeout",
            )?,
            rest_request_timeout: match duration(
                args.rest_request_timeout,
                file.rest_request_timeout,
                "rest_request_timeout",
            )? {
                Some(value) => zero_is_none(value),
                None => defaults.rest_request_timeout,
            },
            default_max_time: args
                .default_max_time_ms
                .or(file.default_max_time_ms)
                .filter(|ms| *ms > 0)
                .map(Duration::from_millis),
            shutdown_grace: duration(args.shutdown_grace, file.shutdown_grace, "shutdown_grace")?
                .unwrap_or(defaults.shutdown_grace),
        };
        if limits.unauthenticated_max_message_bytes < 4096 {
            return Err(
                "limits.unauthenticated_max_message_bytes must be at least 4096 (a \
                        handshake and SASL need a few kilobytes)"
                    .into(),
            );
        }
        if limits.incoming_message_budget_bytes < docgate_wire::MAX_MESSAGE_SIZE_BYTES {
            return Err(format!(
                "limits.incoming_message_budget_bytes must be at least the largest message, {} \
                 bytes",
                docgate_wire::MAX_MESSAGE_SIZE_BYTES
            ));
        }
        if limits.rest_max_connections == 0 {
            return Err("limits.rest_max_connections must be at least 1".into());
        }
        Ok(limits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_over_the_file_and_zero_turns_a_timeout_off() {
        let args = LimitArgs {
            idle_timeout: Some(Duration::ZERO),
            default_max_time_ms: Some(250),
            ..LimitArgs::default()
        };
        let file = FileLimits {
            idle_timeout: Some("5m".into()),
            message_timeout: Some("PT10S".into()),
            rest_max_connections: Some(10),
            ..FileLimits::default()
        };
        let limits = LimitSettings::resolve(args, file).unwrap();
        assert_eq!(limits.idle_timeout, None);
        assert_eq!(limits.message_timeout, Duration::from_secs(10));
        assert_eq!(limits.rest_max_connections, 10);
        assert_eq!(limits.default_max_time, Some(Duration::from_millis(250)));
        assert_eq!(
            limits.shutdown_grace,
            LimitSettings::default().shutdown_grace
        );
    }

    #[test]
    fn limits_that_would_break_clients_are_refused() {
        let small = LimitArgs {
            unauthenticated_max_message_bytes: Some(100),
            ..LimitArgs::default()
        };
        assert!(LimitSettings::resolve(small, FileLimits::default()).is_err());
        let no_message_timeout = LimitArgs {
            message_timeout: Some(Duration::ZERO),
            ..LimitArgs::default()
        };
        assert!(LimitSettings::resolve(no_message_timeout, FileLimits::default()).is_err());
    }
}
