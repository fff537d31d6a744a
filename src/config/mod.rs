//! Settings: command-line flags, `DOCGATE_*` environment variables and an optional TOML
//! file, resolved once at start into [`Settings`]. Precedence: flag, then environment, then
//! file, then the built-in default.
//!
//! Not for: anything that changes at run time (catalog metadata lives in the database).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use serde::Deserialize;

pub mod limits;

pub use limits::LimitSettings;
use limits::{FileLimits, LimitArgs};

use crate::auth::service::AuthSource;
use crate::auth::{AuthMode, AuthSettings, ThrottleSettings, VerifierSettings};

/// Default MongoDB listener: loopback only (DESIGN.md invariant 7).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:27017";
/// Default REST listener: loopback only, ORDS's usual port.
pub const DEFAULT_REST_LISTEN: &str = "127.0.0.1:8080";
/// The `--rest-listen` value that turns the REST front end off.
pub const REST_LISTEN_OFF: &str = "off";
/// Default backend: an embedded SQLite database in `./docgate-data`.
pub const DEFAULT_BACKEND: &str = "sqlite:./docgate-data";
/// Default bound on simultaneous client connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// Whether the MongoDB listener speaks TLS (MongoDB's `net.tls.mode`, without the
/// `preferTLS` nuance: docgate has no replica-set peers to prefer it for).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TlsMode {
    /// Plain TCP only.
    Disabled,
    /// TLS or plain, told apart by the first byte a client sends.
    Allowed,
    /// TLS on every connection; a plain client is refused.
    Required,
}

impl std::fmt::Display for TlsMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TlsMode::Disabled => "disabled",
            TlsMode::Allowed => "allowed",
            TlsMode::Required => "required",
        })
    }
}

/// The command line. Every flag also reads a `DOCGATE_*` environment variable.
#[derive(Debug, Parser)]
#[command(
    name = "docgate",
    version,
    about = "A MongoDB-compatible document server over SQL databases"
)]
pub struct Cli {
    /// TOML settings file (keys: backend, listen, rest_listen, log_format, max_connections,
    /// pool.min, pool.max, pool.wait_timeout, pool.statement_cache, cache.metadata.enabled,
    /// cache.metadata.timeout, ttl_monitor_interval, auth.mode, auth.source, auth.cache.enabled,
    /// auth.cache.timeout, auth.cache.max_entries, security.credentials.attempts,
    /// security.credentials.lock_time, tls.cert, tls.key, tls.mode, rest.token_lifetime,
    /// rest.jwks, rest.jwt_issuer, rest.jwt_audience, rest.jwt_roles_claim, and the
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

/// Parses a duration: humane (`500ms`, `30s`, `5m`, `1h`, `1d`, a bare number of seconds)
/// or ISO-8601 (`PT30S`, `PT1M30S`, `P1D`, `PT0.5S`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let invalid = || format!("invalid duration {text:?}: use e.g. 500ms, 30s, 5m, 1h or PT30S");
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

/// Parses a REST listener setting: an address, or `off` for no REST front end.
pub fn parse_rest_listen(text: &str) -> Result<Option<SocketAddr>, String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case(REST_LISTEN_OFF) {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|e| format!("invalid rest_listen {text:?} ({e}): use HOST:PORT or `off`"))
}

/// Keys accepted in the `--config` TOML file. Pool and cache keys use ORDS's names:
/// `pool.max = 20` or a `[pool]` table, `cache.metadata.timeout = "30s"`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    backend: Option<String>,
    listen: Option<SocketAddr>,
    rest_listen: Option<String>,
    log_format: Option<LogFormat>,
    max_connections: Option<usize>,
    ttl_monitor_interval: Option<String>,
    #[serde(default)]
    pool: FilePool,
    #[serde(default)]
    cache: FileCache,
    #[serde(default)]
    auth: FileAuth,
    #[serde(default)]
    security: FileSecurity,
    #[serde(default)]
    limits: FileLimits,
    #[serde(default)]
    tls: FileTls,
    #[serde(default)]
    rest: FileRest,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRest {
    token_lifetime: Option<String>,
    jwks: Option<PathBuf>,
    jwt_issuer: Option<String>,
    jwt_audience: Option<String>,
    jwt_roles_claim: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAuth {
    mode: Option<AuthMode>,
    source: Option<AuthSource>,
    #[serde(default)]
    cache: FileAuthCache,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAuthCache {
    enabled: Option<bool>,
    timeout: Option<String>,
    max_entries: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSecurity {
    #[serde(default)]
    credentials: FileCredentials,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCredentials {
    attempts: Option<u32>,
    lock_time: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePool {
    min: Option<usize>,
    max: Option<usize>,
    wait_timeout: Option<String>,
    statement_cache: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTls {
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    mode: Option<TlsMode>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCache {
    #[serde(default)]
    metadata: FileMetadataCache,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMetadataCache {
    enabled: Option<bool>,
    timeout: Option<String>,
}

/// Connection pool settings (ORDS `pool.*`).
#[derive(Clone, Debug, PartialEq)]
pub struct PoolSettings {
    pub min: usize,
    pub max: usize,
    pub wait_timeout: Duration,
    pub statement_cache: bool,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            min: 2,
            max: 16,
            wait_timeout: Duration::from_secs(10),
            statement_cache: true,
        }
    }
}

/// Metadata cache settings (ORDS `cache.metadata.*`).
#[derive(Clone, Debug, PartialEq)]
pub struct MetadataCacheSettings {
    pub enabled: bool,
    pub timeout: Duration,
}

impl Default for MetadataCacheSettings {
    fn default() -> Self {
        MetadataCacheSettings {
            enabled: true,
            timeout: Duration::from_secs(60),
        }
    }
}

/// The certificate chain and private key the MongoDB listener presents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsIdentityFiles {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, RSA or EC).
    pub key: PathBuf,
}

/// TLS on the MongoDB listener: the mode, and the identity whenever the mode is not
/// `disabled` (resolving enforces it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    pub mode: TlsMode,
    pub identity: Option<TlsIdentityFiles>,
}

impl TlsSettings {
    /// Pairs the certificate with its key and picks the default mode: `required` with a
    /// certificate, `disabled` without one.
    fn resolve(
        cert: Option<PathBuf>,
        key: Option<PathBuf>,
        mode: Option<TlsMode>,
    ) -> Result<TlsSettings, String> {
        let identity = match (cert, key) {
            (Some(cert), Some(key)) => Some(TlsIdentityFiles { cert, key }),
            (None, None) => None,
            (Some(_), None) => return Err("--tls-cert needs --tls-key (tls.key)".into()),
            (None, Some(_)) => return Err("--tls-key needs --tls-cert (tls.cert)".into()),
        };
        let mode = mode.unwrap_or(if identity.is_some() {
            TlsMode::Required
        } else {
            TlsMode::Disabled
        });
        if mode != TlsMode::Disabled && identity.is_none() {
            return Err(format!(
                "--tls-mode {mode} needs a certificate and key: give --tls-cert and --tls-key \
                 (tls.cert, tls.key)"
            ));
        }
        Ok(TlsSettings { mode, identity })
    }
}

/// Where the data lives.
#[derive(Clone, PartialEq, Eq)]
pub enum BackendUrl {
    /// `sqlite:DIR`: a data directory holding the SQLite database file.
    Sqlite(PathBuf),
    /// `postgres://user:pass@host:port/dbname`: a PostgreSQL database.
    Postgres(String),
}

impl std::fmt::Debug for BackendUrl {
    /// Never shows a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackendUrl::Sqlite(dir) => write!(f, "sqlite:{}", dir.display()),
            BackendUrl::Postgres(url) => write!(f, "{}", redact_password(url)),
        }
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
pub fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_string();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
    }
}

impl BackendUrl {
    /// Parses `sqlite:DIR` (also `sqlite://DIR`).
    pub fn parse(url: &str) -> Result<BackendUrl, String> {
        if let Some(rest) = url.strip_prefix("sqlite:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err("sqlite backend needs a directory: sqlite:DIR".into());
            }
            return Ok(BackendUrl::Sqlite(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(BackendUrl::Postgres(url.to_string()));
        }
        Err(format!(
            "unknown backend {:?}: expected sqlite:DIR or postgres://user@host:port/dbname",
            redact_password(url)
        ))
    }
}

/// Settings of the REST front end's bearer tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct RestSettings {
    /// Lifetime of the OAuth2 access tokens docgate issues.
    pub token_lifetime: Duration,
    /// JWKS file of an external identity provider.
    pub jwks: Option<PathBuf>,
    pub jwt_issuer: Option<String>,
    pub jwt_audience: Option<String>,
    pub jwt_roles_claim: String,
}

impl RestSettings {
    /// ORDS's access token lifetime.
    pub const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
}

impl Default for RestSettings {
    fn default() -> Self {
        RestSettings {
            token_lifetime: RestSettings::DEFAULT_TOKEN_LIFETIME,
            jwks: None,
            jwt_issuer: None,
            jwt_audience: None,
            jwt_roles_claim: "roles".to_string(),
        }
    }
}

/// Resolved settings.
#[derive(Clone, Debug)]
pub struct Settings {
    pub backend: BackendUrl,
    pub listen: SocketAddr,
    pub rest_listen: Option<SocketAddr>,
    pub log_format: LogFormat,
    pub max_connections: usize,
    pub pool: PoolSettings,
    pub metadata_cache: MetadataCacheSettings,
    pub ttl_monitor_interval: Duration,
    pub auth: AuthSettings,
    pub tls: TlsSettings,
    pub rest: RestSettings,
    pub limits: LimitSettings,
    /// The command line as given, for `getCmdLineOpts`.
    pub argv: Vec<String>,
}

impl Settings {
    /// Resolves flags/environment over the optional file over defaults.
    pub fn resolve(cli: Cli, argv: Vec<String>) -> Result<Settings, String> {
        let file = match &cli.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
                toml::from_str::<FileSettings>(&text)
                    .map_err(|e| format!("invalid config file {}: {e}", path.display()))?
            }
            None => FileSettings::default(),
        };
        let backend = cli
            .backend
            .or(file.backend)
            .unwrap_or_else(|| DEFAULT_BACKEND.to_string());
        let default_listen: SocketAddr = DEFAULT_LISTEN
            .parse()
            .map_err(|e| format!("bad default listen address: {e}"))?;
        let max_connections = cli
            .max_connections
            .or(file.max_connections)
            .unwrap_or(DEFAULT_MAX_CONNECTIONS);
        if max_connections == 0 {
            return Err("max_connections must be at least 1".into());
        }
        let defaults = PoolSettings::default();
        let file_duration =
            |value: Option<String>| value.as_deref().map(parse_duration).transpose();
        let pool_max = cli.pool_max.or(file.pool.max).unwrap_or(defaults.max);
        let pool = PoolSettings {
            // The default minimum shrinks to fit a smaller maximum; a given one must fit.
            min: cli
                .pool_min
                .or(file.pool.min)
                .unwrap_or(defaults.min.min(pool_max)),
            max: pool_max,
            wait_timeout: match cli.pool_wait_timeout {
                Some(timeout) => timeout,
                None => file_duration(file.pool.wait_timeout)?.unwrap_or(defaults.wait_timeout),
            },
            statement_cache: cli
                .pool_statement_cache
                .or(file.pool.statement_cache)
                .unwrap_or(defaults.statement_cache),
        };
        if pool.max == 0 || pool.min > pool.max {
            return Err(format!(
                "pool.min ({}) must not exceed pool.max ({}), which must be at least 1",
                pool.min, pool.max
            ));
        }
        let cache_defaults = MetadataCacheSettings::default();
        let metadata_cache = MetadataCacheSettings {
            enabled: cli
                .cache_metadata_enabled
                .or(file.cache.metadata.enabled)
                .unwrap_or(cache_defaults.enabled),
            timeout: match cli.cache_metadata_timeout {
                Some(timeout) => timeout,
                None => {
                    file_duration(file.cache.metadata.timeout)?.unwrap_or(cache_defaults.timeout)
                }
            },
        };
        let ttl_monitor_interval = match cli.ttl_monitor_interval {
            Some(interval) => interval,
            None => file_duration(file.ttl_monitor_interval)?.unwrap_or(Duration::from_secs(60)),
        };
        if ttl_monitor_interval.is_zero() {
            return Err("ttl_monitor_interval must be positive".into());
        }
        let auth_defaults = AuthSettings::default();
        let auth = AuthSettings {
            mode: cli.auth.or(file.auth.mode).unwrap_or(auth_defaults.mode),
            source: cli
                .auth_source
                .or(file.auth.source)
                .unwrap_or(auth_defaults.source),
            verifier: VerifierSettings {
                enabled: cli
                    .auth_cache_enabled
                    .or(file.auth.cache.enabled)
                    .unwrap_or(auth_defaults.verifier.enabled),
                timeout: match cli.auth_cache_timeout {
                    Some(timeout) => timeout,
                    None => file_duration(file.auth.cache.timeout)?
                        .unwrap_or(auth_defaults.verifier.timeout),
                },
                max_entries: cli
                    .auth_cache_max_entries
                    .or(file.auth.cache.max_entries)
                    .unwrap_or(auth_defaults.verifier.max_entries),
            },
            throttle: ThrottleSettings {
                attempts: cli
                    .security_credentials_attempts
                    .or(file.security.credentials.attempts)
                    .unwrap_or(auth_defaults.throttle.attempts),
                lock_time: match cli.security_credentials_lock_time {
                    Some(lock) => lock,
                    None => file_duration(file.security.credentials.lock_time)?
                        .unwrap_or(auth_defaults.throttle.lock_time),
                },
                max_tracked: auth_defaults.throttle.max_tracked,
            },
        };
        let limits = LimitSettings::resolve(cli.limits, file.limits)?;
        let tls = TlsSettings::resolve(
            cli.tls_cert.or(file.tls.cert),
            cli.tls_key.or(file.tls.key),
            cli.tls_mode.or(file.tls.mode),
        )?;
        Ok(Settings {
            backend: BackendUrl::parse(&backend)?,
            listen: cli.listen.or(file.listen).unwrap_or(default_listen),
            rest_listen: parse_rest_listen(
                cli.rest_listen
                    .or(file.rest_listen)
                    .as_deref()
                    .unwrap_or(DEFAULT_REST_LISTEN),
            )?,
            log_format: cli
                .log_format
                .or(file.log_format)
                .unwrap_or(LogFormat::Text),
            max_connections,
            pool,
            metadata_cache,
            ttl_monitor_interval,
            auth,
            tls,
            rest: RestSettings {
                token_lifetime: match cli.rest_token_lifetime {
                    Some(lifetime) => lifetime,
                    None => file_duration(file.rest.token_lifetime)?
                        .unwrap_or(RestSettings::DEFAULT_TOKEN_LIFETIME),
                },
                jwks: cli.rest_jwks.or(file.rest.jwks),
                jwt_issuer: cli.rest_jwt_issuer.or(file.rest.jwt_issuer),
                jwt_audience: cli.rest_jwt_audience.or(file.rest.jwt_audience),
                jwt_roles_claim: cli
                    .rest_jwt_roles_claim
                    .or(file.rest.jwt_roles_claim)
                    .unwrap_or_else(|| "roles".to_string()),
            },
            limits,
            argv,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_urls() {
        assert_eq!(
            BackendUrl::parse("sqlite:./data").unwrap(),
            BackendUrl::Sqlite(PathBuf::from("./data"))
        );
        assert_eq!(
            BackendUrl::parse("sqlite:///var/lib/dg").unwrap(),
            BackendUrl::Sqlite(PathBuf::from("/var/lib/dg"))
        );
        assert!(BackendUrl::parse("sqlite:").is_err());
        assert!(BackendUrl::parse("mysql://x").is_err());
        assert!(matches!(
            BackendUrl::parse("postgres://u@h/db"),
            Ok(BackendUrl::Postgres(_))
        ));
    }

    /// The settings of `docgate --config FILE <flags>` with `toml` in FILE.
    fn settings_with_file(toml: &str, flags: &[&str]) -> Result<Settings, String> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("docgate.toml");
        std::fs::write(&file, toml).unwrap();
        let args = ["docgate", "--config", file.to_str().unwrap()];
        let cli = Cli::parse_from(args.iter().chain(flags));
        Settings::resolve(cli, vec![])
    }

    #[test]
    fn flags_win_over_file_over_defaults() {
        let settings = settings_with_file(
            "listen = \"127.0.0.1:3000\"\nmax_connections = 7\n",
            &["--max-connections", "9"],
        )
        .unwrap();
        assert_eq!(settings.listen, "127.0.0.1:3000".parse().unwrap());
        assert_eq!(settings.max_connections, 9);
        assert_eq!(
            settings.backend,
            BackendUrl::Sqlite(PathBuf::from("./docgate-data"))
        );
    }

    #[test]
    fn the_default_pool_minimum_fits_a_smaller_maximum() {
        let default = settings_with_file("", &[]).unwrap().pool;
        assert_eq!((default.min, default.max), (2, 16));
        let one = settings_with_file("", &["--pool-max", "1"]).unwrap().pool;
        assert_eq!((one.min, one.max), (1, 1));
        let given = settings_with_file("", &["--pool-min", "3", "--pool-max", "2"]);
        assert!(given.unwrap_err().contains("must not exceed"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("PT1M30S").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("P1D").unwrap(), Duration::from_secs(86_400));
        assert_eq!(
            parse_duration("PT0.5S").unwrap(),
            Duration::from_millis(500)
        );
        for bad in ["", "x", "5y", "PT", "P5", "PT5X", "-1s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ords_style_keys_in_the_file() {
        let settings = settings_with_file(
            "pool.max = 4\npool.wait_timeout = \"PT2S\"\ncache.metadata.enabled = false\ncache.metadata.timeout = \"30s\"\n",
            &[],
        )
        .unwrap();
        assert_eq!(settings.pool.max, 4);
        assert_eq!(settings.pool.wait_timeout, Duration::from_secs(2));
        assert!(!settings.metadata_cache.enabled);
        assert_eq!(settings.metadata_cache.timeout, Duration::from_secs(30));
    }

    #[test]
    fn rest_and_auth_keys_in_the_file() {
        let settings = settings_with_file(
            "[rest]\ntoken_lifetime = \"15m\"\njwt_issuer = \"https://idp\"\n\
             [auth]\nmode = \"off\"\ncache.timeout = \"30s\"\n\
             [security.credentials]\nattempts = 3\n",
            &["--rest-jwt-roles-claim", "groups"],
        )
        .unwrap();
        assert_eq!(settings.rest.token_lifetime, Duration::from_secs(900));
        assert_eq!(settings.rest.jwt_issuer.as_deref(), Some("https://idp"));
        assert_eq!(settings.rest.jwt_roles_claim, "groups");
        assert_eq!(settings.auth.mode, AuthMode::Off);
        assert_eq!(settings.auth.verifier.timeout, Duration::from_secs(30));
        assert_eq!(settings.auth.throttle.attempts, 3);
    }

    #[test]
    fn postgres_urls_never_show_passwords() {
        let url = BackendUrl::parse("postgres://app:s3cret@db:5432/prod").unwrap();
        assert_eq!(format!("{url:?}"), "postgres://app:***@db:5432/prod");
        assert!(!BackendUrl::parse("mysql://app:s3cret@db")
            .unwrap_err()
            .contains("s3cret"));
    }

    #[test]
    fn tls_mode_defaults_to_the_presence_of_a_certificate() {
        let settings = Settings::resolve(Cli::parse_from(["docgate"]), vec![]).unwrap();
        assert_eq!(settings.tls.mode, TlsMode::Disabled);
        let cli = Cli::parse_from(["docgate", "--tls-cert", "c.pem", "--tls-key", "k.pem"]);
        let settings = Settings::resolve(cli, vec![]).unwrap();
        assert_eq!(settings.tls.mode, TlsMode::Required);
        assert_eq!(
            settings.tls.identity,
            Some(TlsIdentityFiles {
                cert: PathBuf::from("c.pem"),
                key: PathBuf::from("k.pem"),
            })
        );
    }

    #[test]
    fn tls_needs_both_certificate_and_key() {
        for args in [
            &["docgate", "--tls-mode", "required"][..],
            &["docgate", "--tls-mode", "allowed"],
            &["docgate", "--tls-cert", "c.pem"],
            &["docgate", "--tls-key", "k.pem", "--tls-mode", "disabled"],
        ] {
            let error = Settings::resolve(Cli::parse_from(args), vec![]).unwrap_err();
            assert!(error.contains("--tls-"), "{args:?}: {error}");
        }
        let cli = Cli::parse_from(["docgate", "--tls-mode", "disabled"]);
        assert_eq!(
            Settings::resolve(cli, vec![]).unwrap().tls.mode,
            TlsMode::Disabled
        );
    }

    #[test]
    fn tls_keys_in_the_file() {
        let toml = "tls.cert = \"c.pem\"\ntls.key = \"k.pem\"\ntls.mode = \"allowed\"\n";
        let settings = settings_with_file(toml, &[]).unwrap();
        assert_eq!(settings.tls.mode, TlsMode::Allowed);
        let settings = settings_with_file(toml, &["--tls-mode", "required"]).unwrap();
        assert_eq!(settings.tls.mode, TlsMode::Required);
    }

    #[test]
    fn unknown_file_keys_are_rejected() {
        assert!(settings_with_file("listne = \"127.0.0.1:3000\"\n", &[]).is_err());
    }
}
