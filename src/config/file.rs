//! The `--config` TOML file: the keys it accepts ([`FileSettings`], ORDS's names for pool and
//! cache keys, a `[limits]` table with the limit flags' names) and reading it. Unknown keys are
//! refused.
//!
//! Not for: flags (`cli`) or choosing between flag, file and default (`resolve`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::cli::LogFormat;
use super::error::ConfigError;

use crate::auth::service::AuthSource;
use crate::auth::AuthMode;
use crate::mongo::settings::{TlsMode, Topology};

/// Reads and parses the settings file at `path`.
pub(super) fn read(path: &Path) -> Result<FileSettings, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
        path: path.to_path_buf(),
        source,
    })?;
    toml::from_str::<FileSettings>(&text).map_err(|source| ConfigError::ParseFile {
        path: path.to_path_buf(),
        source,
    })
}

/// Keys accepted in the `--config` TOML file. Pool and cache keys use ORDS's names:
/// `pool.max = 20` or a `[pool]` table, `cache.metadata.timeout = "30s"`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileSettings {
    pub(super) backend: Option<String>,
    pub(super) listen: Option<SocketAddr>,
    pub(super) rest_listen: Option<String>,
    pub(super) admin_listen: Option<String>,
    pub(super) log_format: Option<LogFormat>,
    pub(super) max_connections: Option<usize>,
    pub(super) ttl_monitor_interval: Option<String>,
    pub(super) slow_op_threshold: Option<String>,
    pub(super) topology: Option<Topology>,
    pub(super) replica_set: Option<String>,
    pub(super) advertise: Option<String>,
    pub(super) load_balanced: Option<bool>,
    pub(super) enable_test_commands: Option<bool>,
    #[serde(default)]
    pub(super) pool: FilePool,
    #[serde(default)]
    pub(super) cache: FileCache,
    #[serde(default)]
    pub(super) auth: FileAuth,
    #[serde(default)]
    pub(super) security: FileSecurity,
    #[serde(default)]
    pub(super) limits: FileLimits,
    #[serde(default)]
    pub(super) tls: FileTls,
    #[serde(default)]
    pub(super) rest: FileRest,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileRest {
    pub(super) token_lifetime: Option<String>,
    pub(super) jwks: Option<PathBuf>,
    pub(super) jwt_issuer: Option<String>,
    pub(super) jwt_audience: Option<String>,
    pub(super) jwt_roles_claim: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAuth {
    pub(super) mode: Option<AuthMode>,
    pub(super) source: Option<AuthSource>,
    #[serde(default)]
    pub(super) cache: FileAuthCache,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAuthCache {
    pub(super) enabled: Option<bool>,
    pub(super) timeout: Option<String>,
    pub(super) max_entries: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileSecurity {
    #[serde(default)]
    pub(super) credentials: FileCredentials,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileCredentials {
    pub(super) attempts: Option<u32>,
    pub(super) lock_time: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FilePool {
    pub(super) min: Option<usize>,
    pub(super) max: Option<usize>,
    pub(super) wait_timeout: Option<String>,
    pub(super) statement_cache: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileTls {
    pub(super) cert: Option<PathBuf>,
    pub(super) key: Option<PathBuf>,
    pub(super) mode: Option<TlsMode>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileCache {
    #[serde(default)]
    pub(super) metadata: FileMetadataCache,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileMetadataCache {
    pub(super) enabled: Option<bool>,
    pub(super) timeout: Option<String>,
}

/// The `[limits]` table of the settings file: the flags' names with underscores.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileLimits {
    pub(super) idle_timeout: Option<String>,
    pub(super) unauthenticated_idle_timeout: Option<String>,
    pub(super) message_timeout: Option<String>,
    pub(super) unauthenticated_max_message_bytes: Option<usize>,
    pub(super) max_message_bytes: Option<usize>,
    pub(super) max_document_bytes: Option<usize>,
    pub(super) max_nesting_depth: Option<usize>,
    pub(super) incoming_message_budget_bytes: Option<usize>,
    pub(super) rest_max_connections: Option<usize>,
    pub(super) rest_idle_timeout: Option<String>,
    pub(super) rest_request_timeout: Option<String>,
    pub(super) rest_max_body_bytes: Option<usize>,
    pub(super) rest_max_json_depth: Option<usize>,
    pub(super) default_max_time_ms: Option<u64>,
    pub(super) blocking_stage_memory_limit_bytes: Option<usize>,
    pub(super) temp_dir: Option<std::path::PathBuf>,
    pub(super) shutdown_grace: Option<String>,
    pub(super) max_open_cursors: Option<usize>,
    pub(super) max_open_cursors_per_session: Option<usize>,
    pub(super) cursor_timeout_ms: Option<u64>,
    pub(super) transaction_lifetime_limit_seconds: Option<u64>,
}
