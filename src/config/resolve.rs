//! Resolving the settings once at start: flags and environment (`cli`) over the file (`file`)
//! over the built-in defaults, checked, into each area's own settings put together in
//! [`Settings`] (`Settings::resolve`): the shared state's `AppSettings` and each front end's.
//!
//! Not for: the settings types themselves (each area owns its own: `store::settings`,
//! `catalog`, `auth`, `mongo::settings`, `rest::settings`, `state::AppSettings`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::cli::LogFormat;
use super::cli::{parse_duration, Cli, LimitArgs};
use super::error::{ConfigError, InvalidDuration};
use super::file::{self, FileLimits, FileSettings};
use crate::auth::{AuthSettings, ThrottleSettings, VerifierSettings};
use crate::catalog::MetadataCacheSettings;
use crate::mongo::settings::{FaceSettings, MongoLimits, TlsIdentityFiles, TlsMode, TlsSettings};
use crate::ops::cursors::CursorLimits;
use crate::ops::prepare::DocumentLimits;
use crate::ops::sessions::SessionSettings;
use crate::rest::settings::{RestLimits, RestSettings};
use crate::state::AppSettings;
use crate::store::settings::{BackendUrl, PoolSettings};

/// Default MongoDB listener: loopback only (DESIGN.md invariant 7).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:27017";
/// Default REST listener: loopback only, ORDS's usual port.
pub const DEFAULT_REST_LISTEN: &str = "127.0.0.1:8080";
/// The `--rest-listen` (and `--admin-listen`) value that turns the listener off.
pub const REST_LISTEN_OFF: &str = "off";
/// Default admin listener (`/metrics`, `/livez`, `/readyz`): loopback only, the port
/// MongoDB's Prometheus exporter uses.
pub const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1:9216";
/// Default backend: an embedded SQLite database in `./docgate-data`.
pub const DEFAULT_BACKEND: &str = "sqlite:./docgate-data";
/// Default bound on simultaneous client connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// Default of `--shutdown-grace`.
const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Parses a REST listener setting: an address, or `off` for no REST front end.
pub fn parse_rest_listen(text: &str) -> Result<Option<SocketAddr>, ConfigError> {
    let text = text.trim();
    if text.eq_ignore_ascii_case(REST_LISTEN_OFF) {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|source| ConfigError::RestListen {
            text: text.to_string(),
            source,
        })
}

/// Parses an admin listener setting: an address, or `off` for none.
pub fn parse_admin_listen(text: &str) -> Result<Option<SocketAddr>, ConfigError> {
    let text = text.trim();
    if text.eq_ignore_ascii_case(REST_LISTEN_OFF) {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|source| ConfigError::AdminListen {
            text: text.to_string(),
            source,
        })
}

/// Pairs the certificate with its key and picks the default mode: `required` with a
/// certificate, `disabled` without one.
fn resolve_tls(
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    mode: Option<TlsMode>,
) -> Result<TlsSettings, ConfigError> {
    let identity = match (cert, key) {
        (Some(cert), Some(key)) => Some(TlsIdentityFiles { cert, key }),
        (None, None) => None,
        (Some(_), None) => return Err(ConfigError::TlsCertWithoutKey),
        (None, Some(_)) => return Err(ConfigError::TlsKeyWithoutCert),
    };
    let mode = mode.unwrap_or(if identity.is_some() {
        TlsMode::Required
    } else {
        TlsMode::Disabled
    });
    if mode != TlsMode::Disabled && identity.is_none() {
        return Err(ConfigError::TlsWithoutIdentity(mode));
    }
    Ok(TlsSettings { mode, identity })
}

/// The resolved settings: those the shared state is opened with, and each front end's own.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The store, catalog, authentication and process settings (`AppState::open`).
    pub app: AppSettings,
    /// Address of the REST listener, or `None` for no REST front end.
    pub rest_listen: Option<SocketAddr>,
    /// Address of the admin listener (`/metrics`, `/livez`, `/readyz`), or `None`.
    pub admin_listen: Option<SocketAddr>,
    pub log_format: LogFormat,
    /// TLS on the MongoDB listener.
    pub tls: TlsSettings,
    /// What the mongo front end allows each connection and command (`MongoServer::new`).
    pub mongo_limits: MongoLimits,
    /// The REST front end's tokens and limits (`RestState::new`).
    pub rest: RestSettings,
    /// How the mongo front end presents itself: replica set or standalone, load-balanced,
    /// test commands (`MongoServer::new`).
    pub face: FaceSettings,
}

/// The flag's duration if given, else the file's (parsed), else `None`.
/// MongoDB's default `slowms`.
const DEFAULT_SLOW_OP_THRESHOLD: Duration = Duration::from_millis(100);

fn duration(
    flag: Option<Duration>,
    file: Option<String>,
) -> Result<Option<Duration>, InvalidDuration> {
    match flag {
        Some(value) => Ok(Some(value)),
        None => file.as_deref().map(parse_duration).transpose(),
    }
}

impl Settings {
    /// Resolves flags/environment over the optional file over defaults.
    pub fn resolve(cli: Cli, argv: Vec<String>) -> Result<Settings, ConfigError> {
        let file = match &cli.config {
            Some(path) => file::read(path)?,
            None => FileSettings::default(),
        };
        let backend = cli
            .backend
            .clone()
            .or(file.backend.clone())
            .unwrap_or_else(|| DEFAULT_BACKEND.to_string());
        let default_listen: SocketAddr =
            DEFAULT_LISTEN.parse().map_err(ConfigError::DefaultListen)?;
        let max_connections = cli
            .max_connections
            .or(file.max_connections)
            .unwrap_or(DEFAULT_MAX_CONNECTIONS);
        if max_connections == 0 {
            return Err(ConfigError::NotAtLeastOne("max_connections"));
        }
        let pool = resolve_pool(&cli, &file)?;
        let cache_defaults = MetadataCacheSettings::default();
        let metadata_cache = MetadataCacheSettings {
            enabled: cli
                .cache_metadata_enabled
                .or(file.cache.metadata.enabled)
                .unwrap_or(cache_defaults.enabled),
            timeout: duration(
                cli.cache_metadata_timeout,
                file.cache.metadata.timeout.clone(),
            )?
            .unwrap_or(cache_defaults.timeout),
        };
        let ttl_monitor_interval =
            duration(cli.ttl_monitor_interval, file.ttl_monitor_interval.clone())?
                .unwrap_or(Duration::from_secs(60));
        if ttl_monitor_interval.is_zero() {
            return Err(ConfigError::NotPositive("ttl_monitor_interval".into()));
        }
        let slow_op_threshold = duration(cli.slow_op_threshold, file.slow_op_threshold.clone())?
            .unwrap_or(DEFAULT_SLOW_OP_THRESHOLD);
        let auth = resolve_auth(&cli, &file)?;
        let face = resolve_face(&cli, &file)?;
        let limits = resolve_limits(cli.limits, file.limits)?;
        let tls = resolve_tls(
            cli.tls_cert.or(file.tls.cert),
            cli.tls_key.or(file.tls.key),
            cli.tls_mode.or(file.tls.mode),
        )?;
        let app = AppSettings {
            backend: BackendUrl::parse(&backend)?,
            listen: cli.listen.or(file.listen).unwrap_or(default_listen),
            max_connections,
            pool,
            metadata_cache,
            ttl_monitor_interval,
            slow_op_threshold,
            auth,
            shutdown_grace: limits.shutdown_grace,
            documents: limits.documents,
            argv: argv
                .iter()
                .map(|a| super::redact::redact_argument(a))
                .collect(),
        };
        let rest_listen = parse_rest_listen(
            cli.rest_listen
                .or(file.rest_listen)
                .as_deref()
                .unwrap_or(DEFAULT_REST_LISTEN),
        )?;
        let admin_listen = parse_admin_listen(
            cli.admin_listen
                .or(file.admin_listen)
                .as_deref()
                .unwrap_or(DEFAULT_ADMIN_LISTEN),
        )?;
        Ok(Settings {
            app,
            rest_listen,
            admin_listen,
            log_format: cli
                .log_format
                .or(file.log_format)
                .unwrap_or(LogFormat::Text),
            tls,
            mongo_limits: limits.mongo,
            rest: RestSettings {
                token_lifetime: duration(cli.rest_token_lifetime, file.rest.token_lifetime)?
                    .unwrap_or(RestSettings::DEFAULT_TOKEN_LIFETIME),
                jwks: cli.rest_jwks.or(file.rest.jwks),
                jwt_issuer: cli.rest_jwt_issuer.or(file.rest.jwt_issuer),
                jwt_audience: cli.rest_jwt_audience.or(file.rest.jwt_audience),
                jwt_roles_claim: cli
                    .rest_jwt_roles_claim
                    .or(file.rest.jwt_roles_claim)
                    .unwrap_or_else(|| "roles".to_string()),
                limits: limits.rest,
            },
            face,
        })
    }
}

/// The replica-set face: topology, set name, advertised address, load balancing, test
/// commands. Flags that are switches turn on what the file leaves off.
fn resolve_face(cli: &Cli, file: &FileSettings) -> Result<FaceSettings, ConfigError> {
    let defaults = FaceSettings::default();
    let replica_set = cli
        .replica_set
        .clone()
        .or(file.replica_set.clone())
        .unwrap_or(defaults.replica_set);
    if replica_set.is_empty()
        || replica_set
            .chars()
            .any(|c| c == '/' || c == ',' || c.is_whitespace())
    {
        return Err(ConfigError::ReplicaSetName(replica_set));
    }
    let advertise = cli.advertise.clone().or(file.advertise.clone());
    if let Some(address) = &advertise {
        let valid = address.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
        });
        if !valid {
            return Err(ConfigError::Advertise(address.clone()));
        }
    }
    Ok(FaceSettings {
        topology: cli.topology.or(file.topology).unwrap_or(defaults.topology),
        replica_set,
        advertise,
        load_balanced: cli.load_balanced || file.load_balanced.unwrap_or(false),
        enable_test_commands: cli.enable_test_commands
            || file.enable_test_commands.unwrap_or(false),
    })
}

/// The pool (ORDS `pool.*`): the default minimum shrinks to fit a smaller maximum; a given
/// one must fit.
fn resolve_pool(cli: &Cli, file: &FileSettings) -> Result<PoolSettings, ConfigError> {
    let defaults = PoolSettings::default();
    let pool_max = cli.pool_max.or(file.pool.max).unwrap_or(defaults.max);
    let pool = PoolSettings {
        min: cli
            .pool_min
            .or(file.pool.min)
            .unwrap_or(defaults.min.min(pool_max)),
        max: pool_max,
        wait_timeout: duration(cli.pool_wait_timeout, file.pool.wait_timeout.clone())?
            .unwrap_or(defaults.wait_timeout),
        statement_cache: cli
            .pool_statement_cache
            .or(file.pool.statement_cache)
            .unwrap_or(defaults.statement_cache),
    };
    if pool.max == 0 || pool.min > pool.max {
        return Err(ConfigError::Pool {
            min: pool.min,
            max: pool.max,
        });
    }
    Ok(pool)
}

/// Authentication: the mode, the source, the fast path's cache and the throttle.
fn resolve_auth(cli: &Cli, file: &FileSettings) -> Result<AuthSettings, ConfigError> {
    let defaults = AuthSettings::default();
    Ok(AuthSettings {
        mode: cli.auth.or(file.auth.mode).unwrap_or(defaults.mode),
        source: cli
            .auth_source
            .or(file.auth.source)
            .unwrap_or(defaults.source),
        verifier: VerifierSettings {
            enabled: cli
                .auth_cache_enabled
                .or(file.auth.cache.enabled)
                .unwrap_or(defaults.verifier.enabled),
            timeout: duration(cli.auth_cache_timeout, file.auth.cache.timeout.clone())?
                .unwrap_or(defaults.verifier.timeout),
            max_entries: cli
                .auth_cache_max_entries
                .or(file.auth.cache.max_entries)
                .unwrap_or(defaults.verifier.max_entries),
        },
        throttle: ThrottleSettings {
            attempts: cli
                .security_credentials_attempts
                .or(file.security.credentials.attempts)
                .unwrap_or(defaults.throttle.attempts),
            lock_time: duration(
                cli.security_credentials_lock_time,
                file.security.credentials.lock_time.clone(),
            )?
            .unwrap_or(defaults.throttle.lock_time),
            max_tracked: defaults.throttle.max_tracked,
        },
    })
}

/// The resolved `[limits]`: the mongo front end's, the REST front end's, and the shutdown
/// grace both listeners give.
struct Limits {
    mongo: MongoLimits,
    rest: RestLimits,
    documents: DocumentLimits,
    shutdown_grace: Duration,
}

/// `value` if it lies in `min..=max`, else the error naming the setting.
fn within(name: &'static str, value: usize, min: usize, max: usize) -> Result<usize, ConfigError> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(ConfigError::LimitRange {
            name,
            value,
            min,
            max,
        })
    }
}

/// Room in a message for the command around its largest document.
const MESSAGE_OVERHEAD: usize = 16 * 1024;

/// Flags and environment over the file over the defaults.
fn resolve_limits(args: LimitArgs, file: FileLimits) -> Result<Limits, ConfigError> {
    let mongo_defaults = MongoLimits::default();
    let rest_defaults = RestLimits::default();
    let duration = |flag: Option<Duration>, file: Option<String>, name: &'static str| match flag {
        Some(value) => Ok(Some(value)),
        None => file
            .as_deref()
            .map(parse_duration)
            .transpose()
            .map_err(|source| ConfigError::LimitDuration { name, source }),
    };
    let positive = |value: Duration, name: &str| {
        if value.is_zero() {
            Err(ConfigError::NotPositive(format!("limits.{name}")))
        } else {
            Ok(value)
        }
    };
    let zero_is_none = |value: Duration| Some(value).filter(|v| !v.is_zero());
    let mongo = MongoLimits {
        idle_timeout: match duration(args.idle_timeout, file.idle_timeout, "idle_timeout")? {
            Some(value) => zero_is_none(value),
            None => mongo_defaults.idle_timeout,
        },
        unauthenticated_idle_timeout: positive(
            duration(
                args.unauthenticated_idle_timeout,
                file.unauthenticated_idle_timeout,
                "unauthenticated_idle_timeout",
            )?
            .unwrap_or(mongo_defaults.unauthenticated_idle_timeout),
            "unauthenticated_idle_timeout",
        )?,
        message_timeout: positive(
            duration(
                args.message_timeout,
                file.message_timeout,
                "message_timeout",
            )?
            .unwrap_or(mongo_defaults.message_timeout),
            "message_timeout",
        )?,
        unauthenticated_max_message_bytes: args
            .unauthenticated_max_message_bytes
            .or(file.unauthenticated_max_message_bytes)
            .unwrap_or(mongo_defaults.unauthenticated_max_message_bytes),
        max_message_bytes: within(
            "max_message_bytes",
            args.max_message_bytes
                .or(file.max_message_bytes)
                .unwrap_or(mongo_defaults.max_message_bytes),
            64 * 1024,
            docgate_wire::MAX_MESSAGE_SIZE_BYTES,
        )?,
        incoming_message_budget_bytes: args
            .incoming_message_budget_bytes
            .or(file.incoming_message_budget_bytes)
            .unwrap_or(mongo_defaults.incoming_message_budget_bytes),
        blocking_stage_memory_bytes: args
            .blocking_stage_memory_limit_bytes
            .or(file.blocking_stage_memory_limit_bytes)
            .unwrap_or(mongo_defaults.blocking_stage_memory_bytes),
        spill_dir: args
            .temp_dir
            .or(file.temp_dir)
            .map(std::sync::Arc::from)
            .unwrap_or(mongo_defaults.spill_dir),
        default_max_time: args
            .default_max_time_ms
            .or(file.default_max_time_ms)
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis),
        cursors: CursorLimits {
            max_open: args
                .max_open_cursors
                .or(file.max_open_cursors)
                .unwrap_or(mongo_defaults.cursors.max_open),
            max_open_per_session: args
                .max_open_cursors_per_session
                .or(file.max_open_cursors_per_session)
                .unwrap_or(mongo_defaults.cursors.max_open_per_session),
            idle_timeout: positive(
                args.cursor_timeout_ms
                    .or(file.cursor_timeout_ms)
                    .map_or(mongo_defaults.cursors.idle_timeout, Duration::from_millis),
                "cursor_timeout_ms",
            )?,
        },
        sessions: SessionSettings {
            transaction_lifetime: positive(
                args.transaction_lifetime_limit_seconds
                    .or(file.transaction_lifetime_limit_seconds)
                    .map_or(
                        mongo_defaults.sessions.transaction_lifetime,
                        Duration::from_secs,
                    ),
                "transaction_lifetime_limit_seconds",
            )?,
            ..mongo_defaults.sessions
        },
    };
    let rest = RestLimits {
        max_connections: args
            .rest_max_connections
            .or(file.rest_max_connections)
            .unwrap_or(rest_defaults.max_connections),
        idle_timeout: positive(
            duration(
                args.rest_idle_timeout,
                file.rest_idle_timeout,
                "rest_idle_timeout",
            )?
            .unwrap_or(rest_defaults.idle_timeout),
            "rest_idle_timeout",
        )?,
        request_timeout: match duration(
            args.rest_request_timeout,
            file.rest_request_timeout,
            "rest_request_timeout",
        )? {
            Some(value) => zero_is_none(value),
            None => rest_defaults.request_timeout,
        },
        max_body_bytes: args
            .rest_max_body_bytes
            .or(file.rest_max_body_bytes)
            .unwrap_or(rest_defaults.max_body_bytes),
        max_json_depth: args
            .rest_max_json_depth
            .or(file.rest_max_json_depth)
            .unwrap_or(rest_defaults.max_json_depth),
        blocking_memory: mongo.blocking_memory(None),
    };
    let shutdown_grace = duration(args.shutdown_grace, file.shutdown_grace, "shutdown_grace")?
        .unwrap_or(DEFAULT_SHUTDOWN_GRACE);
    if mongo.unauthenticated_max_message_bytes < 4096 {
        return Err(ConfigError::UnauthenticatedMessageTooSmall);
    }
    if mongo.incoming_message_budget_bytes < mongo.max_message_bytes {
        return Err(ConfigError::MessageBudgetTooSmall(mongo.max_message_bytes));
    }
    let document_defaults = DocumentLimits::default();
    let documents = DocumentLimits {
        max_bytes: within(
            "max_document_bytes",
            args.max_document_bytes
                .or(file.max_document_bytes)
                .unwrap_or(document_defaults.max_bytes),
            1024,
            document_defaults
                .max_bytes
                .min(mongo.max_message_bytes - MESSAGE_OVERHEAD),
        )?,
        max_depth: within(
            "max_nesting_depth",
            args.max_nesting_depth
                .or(file.max_nesting_depth)
                .unwrap_or(document_defaults.max_depth),
            1,
            document_defaults.max_depth,
        )?,
    };
    if rest.max_connections == 0 {
        return Err(ConfigError::NotAtLeastOne("limits.rest_max_connections"));
    }
    if rest.max_json_depth == 0 {
        return Err(ConfigError::NotAtLeastOne("limits.rest_max_json_depth"));
    }
    Ok(Limits {
        mongo,
        rest,
        documents,
        shutdown_grace,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::AuthMode;
    use clap::Parser;

    /// The settings of `docgate --config FILE <flags>` with `toml` in FILE.
    fn settings_with_file(toml: &str, flags: &[&str]) -> Result<Settings, ConfigError> {
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
        assert_eq!(settings.app.listen, "127.0.0.1:3000".parse().unwrap());
        assert_eq!(settings.app.max_connections, 9);
        assert_eq!(
            settings.app.backend,
            BackendUrl::Sqlite(PathBuf::from("./docgate-data"))
        );
    }

    #[test]
    fn the_default_pool_minimum_fits_a_smaller_maximum() {
        let default = settings_with_file("", &[]).unwrap().app.pool;
        assert_eq!((default.min, default.max), (2, 16));
        let one = settings_with_file("", &["--pool-max", "1"])
            .unwrap()
            .app
            .pool;
        assert_eq!((one.min, one.max), (1, 1));
        let given = settings_with_file("", &["--pool-min", "3", "--pool-max", "2"]);
        assert!(given.unwrap_err().to_string().contains("must not exceed"));
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
        assert_eq!(settings.app.pool.max, 4);
        assert_eq!(settings.app.pool.wait_timeout, Duration::from_secs(2));
        assert!(!settings.app.metadata_cache.enabled);
        assert_eq!(settings.app.metadata_cache.timeout, Duration::from_secs(30));
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
        assert_eq!(settings.app.auth.mode, AuthMode::Off);
        assert_eq!(settings.app.auth.verifier.timeout, Duration::from_secs(30));
        assert_eq!(settings.app.auth.throttle.attempts, 3);
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
            let error = Settings::resolve(Cli::parse_from(args), vec![])
                .unwrap_err()
                .to_string();
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
    fn the_face_defaults_to_a_replica_set_and_reads_flags_and_file() {
        let default = settings_with_file("", &[]).unwrap().face;
        assert_eq!(default, FaceSettings::default());
        assert_eq!(default.describe(), "replicaset(docgate)");
        let file = "topology = \"standalone\"\nreplica_set = \"rs0\"\nadvertise = \"db.example:27018\"\nload_balanced = true\nenable_test_commands = true\n";
        let face = settings_with_file(file, &[]).unwrap().face;
        assert_eq!(face.topology, crate::mongo::settings::Topology::Standalone);
        assert_eq!(face.replica_set, "rs0");
        assert_eq!(face.advertise.as_deref(), Some("db.example:27018"));
        assert!(face.load_balanced && face.enable_test_commands);
        let face = settings_with_file(file, &["--topology", "replicaset", "--replica-set", "x"])
            .unwrap()
            .face;
        assert_eq!(face.describe(), "replicaset(x)+load-balanced");
        for bad in [
            &["--advertise", "nohost"][..],
            &["--advertise", "h:0"],
            &["--replica-set", "a/b"],
        ] {
            assert!(settings_with_file("", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn unknown_file_keys_are_rejected() {
        assert!(settings_with_file("listne = \"127.0.0.1:3000\"\n", &[]).is_err());
    }

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
        let limits = resolve_limits(args, file).unwrap();
        assert_eq!(limits.mongo.idle_timeout, None);
        assert_eq!(limits.mongo.message_timeout, Duration::from_secs(10));
        assert_eq!(limits.rest.max_connections, 10);
        assert_eq!(
            limits.mongo.default_max_time,
            Some(Duration::from_millis(250))
        );
        assert_eq!(limits.shutdown_grace, DEFAULT_SHUTDOWN_GRACE);
    }

    #[test]
    fn mongodb_limits_may_be_lowered_never_raised() {
        let defaults = resolve_limits(LimitArgs::default(), FileLimits::default()).unwrap();
        assert_eq!(defaults.documents, DocumentLimits::default());
        assert_eq!(defaults.mongo.max_message_bytes, 48_000_000);
        let lowered = LimitArgs {
            max_message_bytes: Some(1_000_000),
            max_document_bytes: Some(65_536),
            max_nesting_depth: Some(20),
            ..LimitArgs::default()
        };
        let limits = resolve_limits(lowered, FileLimits::default()).unwrap();
        assert_eq!(limits.mongo.max_message_bytes, 1_000_000);
        assert_eq!(limits.documents.max_bytes, 65_536);
        assert_eq!(limits.documents.max_depth, 20);
        for raised in [
            LimitArgs {
                max_message_bytes: Some(48_000_001),
                ..LimitArgs::default()
            },
            LimitArgs {
                max_document_bytes: Some(16 * 1024 * 1024 + 1),
                ..LimitArgs::default()
            },
            LimitArgs {
                max_nesting_depth: Some(101),
                ..LimitArgs::default()
            },
            LimitArgs {
                max_nesting_depth: Some(0),
                ..LimitArgs::default()
            },
            // A document must fit a message with its command around it.
            LimitArgs {
                max_message_bytes: Some(100_000),
                max_document_bytes: Some(99_000),
                ..LimitArgs::default()
            },
        ] {
            let error = resolve_limits(raised, FileLimits::default())
                .err()
                .expect("refused");
            assert!(error.to_string().contains("must be between"), "{error}");
        }
    }

    #[test]
    fn limits_that_would_break_clients_are_refused() {
        let small = LimitArgs {
            unauthenticated_max_message_bytes: Some(100),
            ..LimitArgs::default()
        };
        assert!(resolve_limits(small, FileLimits::default()).is_err());
        let no_message_timeout = LimitArgs {
            message_timeout: Some(Duration::ZERO),
            ..LimitArgs::default()
        };
        assert!(resolve_limits(no_message_timeout, FileLimits::default()).is_err());
    }
}
