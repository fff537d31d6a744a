//! The command line: clap's [`Cli`] with its subcommands, and the limit flags ([`LimitArgs`],
//! flattened into it). Every flag also reads a `DOCGATE_*` environment variable (clap's `env`).
//! Also [`LogFormat`] (logging is the binary's) and [`parse_duration`], the one spelling of durations that flags and the file share.
//!
//! Not for: the settings file (`file`) or choosing between flag, file and default (`resolve`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Deserialize;

use super::error::InvalidDuration;
use crate::auth::service::AuthSource;
use crate::auth::AuthMode;
use crate::mongo::settings::{TlsMode, Topology};

/// The format of the log lines on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// The command line. Every flag also reads a `DOCGATE_*` environment variable.
#[derive(Debug, Parser)]
#[command(
    name = "docgate",
    version,
    about = "A MongoDB-compatible document server over SQL databases"
)]
pub struct Cli {
    /// TOML settings file (keys: backend, listen, rest_listen, admin_listen, log_format, max_connections,
    /// pool.min, pool.max, pool.wait_timeout, pool.statement_cache, cache.metadata.enabled,
    /// cache.metadata.timeout, ttl_monitor_interval, slow_op_threshold, auth.mode, auth.source, auth.cache.enabled,
    /// auth.cache.timeout, auth.cache.max_entries, security.credentials.attempts,
    /// security.credentials.lock_time, tls.cert, tls.key, tls.mode, rest.token_lifetime,
    /// rest.jwks, rest.jwt_issuer, rest.jwt_audience, rest.jwt_roles_claim, topology,
    /// replica_set, advertise, load_balanced, enable_test_commands, and the
    /// `[limits]` table: the limit flags' names with underscores).
    #[arg(long, env = "DOCGATE_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// Where the data lives: `sqlite:DIR` (default `sqlite:./docgate-data`) or
    /// `postgres://user:pass@host:port/dbname`.
    #[arg(long, env = "DOCGATE_BACKEND", global = true)]
    pub backend: Option<String>,
    /// Address of the MongoDB protocol listener (default 127.0.0.1:27017).
    #[arg(long, env = "DOCGATE_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Address of the REST (ORDS-style HTTP) listener (default 127.0.0.1:8080), or `off`.
    #[arg(long, env = "DOCGATE_REST_LISTEN")]
    pub rest_listen: Option<String>,
    /// Address of the admin listener serving `/metrics`, `/livez` and `/readyz` (default
    /// 127.0.0.1:9216), or `off`.
    #[arg(long, env = "DOCGATE_ADMIN_LISTEN")]
    pub admin_listen: Option<String>,
    /// Log format on stderr.
    #[arg(long, env = "DOCGATE_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
    /// Maximum simultaneous client connections; more wait in the accept queue.
    #[arg(long, env = "DOCGATE_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Connections the pool opens at start and keeps open (ORDS `pool.min`).
    #[arg(long, env = "DOCGATE_POOL_MIN")]
    pub pool_min: Option<usize>,
    /// Most connections the pool opens (ORDS `pool.max`).
    #[arg(long, env = "DOCGATE_POOL_MAX")]
    pub pool_max: Option<usize>,
    /// How long a command waits for a free connection before a retryable error
    /// (ORDS `pool.wait_timeout`; e.g. `10s`, `500ms`, `PT10S`).
    #[arg(long, env = "DOCGATE_POOL_WAIT_TIMEOUT", value_parser = parse_duration)]
    pub pool_wait_timeout: Option<Duration>,
    /// Cache prepared statements per connection (ORDS `pool.statement_cache`).
    #[arg(long, env = "DOCGATE_POOL_STATEMENT_CACHE")]
    pub pool_statement_cache: Option<bool>,
    /// Cache catalog metadata (ORDS `cache.metadata.enabled`).
    #[arg(long, env = "DOCGATE_CACHE_METADATA_ENABLED")]
    pub cache_metadata_enabled: Option<bool>,
    /// How long cached metadata may serve before it is re-read (ORDS
    /// `cache.metadata.timeout`; e.g. `5s`, `PT1M`). Changes made through any docgate
    /// instance invalidate it at once.
    #[arg(long, env = "DOCGATE_CACHE_METADATA_TIMEOUT", value_parser = parse_duration)]
    pub cache_metadata_timeout: Option<Duration>,
    /// How often expired documents of TTL indexes are deleted (MongoDB's
    /// `ttlMonitorSleepSecs`; default 60s).
    #[arg(long, env = "DOCGATE_TTL_MONITOR_INTERVAL", value_parser = parse_duration)]
    pub ttl_monitor_interval: Option<Duration>,
    /// A command that runs longer than this is logged as a "Slow query" line (its shape,
    /// values redacted, and its SQL) and recorded by a profiler at level 1: MongoDB's
    /// `slowms` (default 100ms; `profile` changes it while the server runs).
    #[arg(long, env = "DOCGATE_SLOW_OP_THRESHOLD", value_parser = parse_duration)]
    pub slow_op_threshold: Option<Duration>,
    /// Authentication: `on` (default: required once any user exists) or `off` (development
    /// only; warned about when listening beyond loopback).
    #[arg(long, env = "DOCGATE_AUTH", value_enum)]
    pub auth: Option<AuthMode>,
    /// Who checks passwords of `$external` users (`auth.source`): `docgate` (its own users of
    /// `admin`, the default) or `database` (PostgreSQL roles, verified by a logon).
    #[arg(long, env = "DOCGATE_AUTH_SOURCE", value_enum)]
    pub auth_source: Option<AuthSource>,
    /// Remember successful password verifications (PLAIN, HTTP Basic): the fast path
    /// (`auth.cache.enabled`, default true).
    #[arg(long, env = "DOCGATE_AUTH_CACHE_ENABLED")]
    pub auth_cache_enabled: Option<bool>,
    /// How long a verification is remembered (`auth.cache.timeout`, default 5m).
    #[arg(long, env = "DOCGATE_AUTH_CACHE_TIMEOUT", value_parser = parse_duration)]
    pub auth_cache_timeout: Option<Duration>,
    /// How many verifications are remembered at most (`auth.cache.max_entries`, default 10000).
    #[arg(long, env = "DOCGATE_AUTH_CACHE_MAX_ENTRIES")]
    pub auth_cache_max_entries: Option<u64>,
    /// Failed attempts before a user is locked (ORDS `security.credentials.attempts`,
    /// default 5; 0 turns throttling off).
    #[arg(long, env = "DOCGATE_SECURITY_CREDENTIALS_ATTEMPTS")]
    pub security_credentials_attempts: Option<u32>,
    /// How long a locked user stays locked (ORDS `security.credentials.lock_time`, default
    /// 10m).
    #[arg(long, env = "DOCGATE_SECURITY_CREDENTIALS_LOCK_TIME", value_parser = parse_duration)]
    pub security_credentials_lock_time: Option<Duration>,
    /// PEM file with the MongoDB listener's certificate chain, leaf first.
    #[arg(long, env = "DOCGATE_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// PEM file with the private key of `--tls-cert` (PKCS#8, RSA or EC).
    #[arg(long, env = "DOCGATE_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// TLS on the MongoDB listener (default: `required` with a certificate, `disabled`
    /// without one).
    #[arg(long, env = "DOCGATE_TLS_MODE", value_enum)]
    pub tls_mode: Option<TlsMode>,
    /// Lifetime of the access tokens `POST /ords/{db}/oauth/token` issues (default 1h).
    #[arg(long, env = "DOCGATE_REST_TOKEN_LIFETIME", value_parser = parse_duration)]
    pub rest_token_lifetime: Option<Duration>,
    /// JWKS file (JSON Web Key Set) of an external identity provider whose JWTs the REST
    /// front end accepts as bearer tokens.
    #[arg(long, env = "DOCGATE_REST_JWKS")]
    pub rest_jwks: Option<PathBuf>,
    /// Required `iss` of external JWTs.
    #[arg(long, env = "DOCGATE_REST_JWT_ISSUER")]
    pub rest_jwt_issuer: Option<String>,
    /// Required `aud` of external JWTs.
    #[arg(long, env = "DOCGATE_REST_JWT_AUDIENCE")]
    pub rest_jwt_audience: Option<String>,
    /// Claim of external JWTs that lists the caller's roles (default `roles`).
    #[arg(long, env = "DOCGATE_REST_JWT_ROLES_CLAIM")]
    pub rest_jwt_roles_claim: Option<String>,
    /// What the MongoDB listener presents itself as: `replicaset` (default: the primary of
    /// a one-member replica set) or `standalone`.
    #[arg(long, env = "DOCGATE_TOPOLOGY", value_enum)]
    pub topology: Option<Topology>,
    /// The replica set's name drivers name in `?replicaSet=` (default `docgate`).
    #[arg(long, env = "DOCGATE_REPLICA_SET")]
    pub replica_set: Option<String>,
    /// The `HOST:PORT` drivers are told to reach this server at (`hello`'s `hosts`, `me`,
    /// `primary`; default: the listen address).
    #[arg(long, env = "DOCGATE_ADVERTISE")]
    pub advertise: Option<String>,
    /// Serve drivers connecting with `loadBalanced=true` (several instances behind an L4
    /// load balancer): `hello` answers a `serviceId`.
    #[arg(long, env = "DOCGATE_LOAD_BALANCED")]
    pub load_balanced: bool,
    /// Turn on MongoDB's test commands (`configureFailPoint` with the `failCommand` fail
    /// point), as `enableTestCommands` does; never in production.
    #[arg(long, env = "DOCGATE_ENABLE_TEST_COMMANDS")]
    pub enable_test_commands: bool,
    /// Limits and timeouts against clients that take more than their share.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// What to do; without a subcommand docgate serves.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands besides serving.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Manage users without a running server (for bootstrapping the first administrator).
    #[command(subcommand)]
    User(UserCommand),
    /// Manage REST modules without a running server.
    #[command(subcommand)]
    Rest(RestCommand),
    /// Loads the concert sample (collections artists, venues, events; REST module `concert`;
    /// role `concert_user` and the demo user `fan`, password `fan`, in database `concert`),
    /// then serves.
    Demo,
}

/// `docgate rest ...`.
#[derive(Debug, Subcommand)]
pub enum RestCommand {
    /// Stores the REST module(s) of a JSON file (one module document, or an array of them)
    /// in database --db, replacing modules of the same name.
    Apply {
        /// The JSON file.
        file: PathBuf,
        /// The database the modules belong to (`/ords/{db}/…`).
        #[arg(long)]
        db: String,
    },
}

/// `docgate user ...`.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Creates a user with SCRAM-SHA-1 and SCRAM-SHA-256 credentials. The password is read
    /// from DOCGATE_USER_PASSWORD or, if unset, from the first line of standard input.
    Create {
        /// The user's name.
        #[arg(long)]
        user: String,
        /// The user's authentication database.
        #[arg(long, default_value = "admin")]
        db: String,
        /// Roles, each `role` (in --db) or `role@db`; e.g. `root`, `readWrite@shop`.
        #[arg(long, value_delimiter = ',', default_value = "root")]
        roles: Vec<String>,
    },
}

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
    /// Largest MongoDB message, compressed or not (default and most: MongoDB's 48000000;
    /// `hello` announces it as `maxMessageSizeBytes`).
    #[arg(long, env = "DOCGATE_MAX_MESSAGE_BYTES")]
    pub max_message_bytes: Option<usize>,
    /// Largest stored document (default and most: MongoDB's 16777216; `hello` announces it
    /// as `maxBsonObjectSize`); larger ones answer 10334 BSONObjectTooLarge.
    #[arg(long, env = "DOCGATE_MAX_DOCUMENT_BYTES")]
    pub max_document_bytes: Option<usize>,
    /// Deepest nesting of documents and arrays in a stored document (default and most:
    /// MongoDB's 100).
    #[arg(long, env = "DOCGATE_MAX_NESTING_DEPTH")]
    pub max_nesting_depth: Option<usize>,
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
    /// Largest REST request body; a larger one answers 413 (default 48000000).
    #[arg(long, env = "DOCGATE_REST_MAX_BODY_BYTES")]
    pub rest_max_body_bytes: Option<usize>,
    /// Deepest nesting of objects and arrays in a REST JSON body; deeper answers 400
    /// (default 100).
    #[arg(long, env = "DOCGATE_REST_MAX_JSON_DEPTH")]
    pub rest_max_json_depth: Option<usize>,
    /// Bytes a blocking sort or `$group` may hold (MongoDB's 100 MiB): past them it writes
    /// temporary files under `--temp-dir`, or answers 292 in a command that sets
    /// `allowDiskUse: false`.
    #[arg(long, env = "DOCGATE_BLOCKING_STAGE_MEMORY_LIMIT_BYTES")]
    pub blocking_stage_memory_limit_bytes: Option<usize>,
    /// Directory of the temporary files of blocking stages past their memory limit
    /// (default: the OS temporary directory, `$TMPDIR` or /tmp).
    #[arg(long, env = "DOCGATE_TEMP_DIR")]
    pub temp_dir: Option<std::path::PathBuf>,
    /// `maxTimeMS` of commands that do not set one, as MongoDB 8's `defaultMaxTimeMS`
    /// (default 0: none).
    #[arg(long, env = "DOCGATE_DEFAULT_MAX_TIME_MS")]
    pub default_max_time_ms: Option<u64>,
    /// How long shutdown lets running commands finish before interrupting them (default 30s).
    #[arg(long, env = "DOCGATE_SHUTDOWN_GRACE", value_parser = parse_duration)]
    pub shutdown_grace: Option<Duration>,
    /// Most cursors open at once in the process; another is refused with 146
    /// ExceededMemoryLimit (default 20000).
    #[arg(long, env = "DOCGATE_MAX_OPEN_CURSORS")]
    pub max_open_cursors: Option<usize>,
    /// Most cursors open at once in one logical session (default 2000).
    #[arg(long, env = "DOCGATE_MAX_OPEN_CURSORS_PER_SESSION")]
    pub max_open_cursors_per_session: Option<usize>,
    /// Close a cursor idle this long, unless opened with `noCursorTimeout` (MongoDB's
    /// `cursorTimeoutMillis`; default 600000: 10 minutes).
    #[arg(long, env = "DOCGATE_CURSOR_TIMEOUT_MS")]
    pub cursor_timeout_ms: Option<u64>,
    /// Abort a multi-document transaction open this long (MongoDB's
    /// `transactionLifetimeLimitSeconds`; default 60).
    #[arg(long, env = "DOCGATE_TRANSACTION_LIFETIME_LIMIT_SECONDS")]
    pub transaction_lifetime_limit_seconds: Option<u64>,
}

/// Parses a duration: humane (`500ms`, `30s`, `5m`, `1h`, `1d`, a bare number of seconds)
/// or ISO-8601 (`PT30S`, `PT1M30S`, `P1D`, `PT0.5S`).
pub fn parse_duration(text: &str) -> Result<Duration, InvalidDuration> {
    let text = text.trim();
    let invalid = || InvalidDuration {
        text: text.to_string(),
    };
    if let Some(iso) = text.strip_prefix('P').or_else(|| text.strip_prefix('p')) {
        let mut seconds = 0f64;
        let mut number = String::new();
        let mut in_time = false;
        let mut units = 0;
        for c in iso.chars() {
            match c.to_ascii_uppercase() {
                'T' => in_time = true,
                d if d.is_ascii_digit() || d == '.' => number.push(d),
                unit => {
                    let value: f64 = number.parse().map_err(|_| invalid())?;
                    number.clear();
                    units += 1;
                    seconds += value
                        * match (unit, in_time) {
                            ('W', false) => 604_800.0,
                            ('D', false) => 86_400.0,
                            ('H', true) => 3_600.0,
                            ('M', true) => 60.0,
                            ('S', true) => 1.0,
                            _ => return Err(invalid()),
                        };
                }
            }
        }
        if !number.is_empty() || units == 0 {
            return Err(invalid());
        }
        return Duration::try_from_secs_f64(seconds).map_err(|_| invalid());
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| invalid())?;
    let scale = match unit.trim() {
        "ms" => 0.001,
        "" | "s" | "sec" | "secs" | "seconds" => 1.0,
        "m" | "min" | "mins" | "minutes" => 60.0,
        "h" | "hours" => 3_600.0,
        "d" | "days" => 86_400.0,
        _ => return Err(invalid()),
    };
    Duration::try_from_secs_f64(value * scale).map_err(|_| invalid())
}
