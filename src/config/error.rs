//! Why settings could not be resolved: [`ConfigError`], one variant per check, and
//! [`InvalidDuration`], the error of [`super::parse_duration`] (also clap's, for duration
//! flags). `main.rs` prints them and exits with status 2.
//!
//! Not for: errors once the server runs (those are the areas' own).

use std::net::AddrParseError;
use std::path::PathBuf;

use crate::mongo::settings::TlsMode;
use crate::store::settings::BackendUrlError;

/// A duration in neither the humane (`30s`) nor the ISO-8601 (`PT30S`) spelling.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {text:?}: use e.g. 500ms, 30s, 5m, 1h or PT30S")]
pub struct InvalidDuration {
    pub text: String,
}

/// A setting docgate cannot start with.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {}: {source}", path.display())]
    ParseFile {
        path: PathBuf,
        source: toml::de::Error,
    },
    /// A duration of the file that does not parse.
    #[error(transparent)]
    Duration(#[from] InvalidDuration),
    /// A duration of the `[limits]` table that does not parse.
    #[error("limits.{name}: {source}")]
    LimitDuration {
        name: &'static str,
        source: InvalidDuration,
    },
    #[error("bad default listen address: {0}")]
    DefaultListen(AddrParseError),
    #[error("invalid admin_listen {text:?} ({source}): use HOST:PORT or `off`")]
    AdminListen {
        text: String,
        source: AddrParseError,
    },
    #[error("invalid rest_listen {text:?} ({source}): use HOST:PORT or `off`")]
    RestListen {
        text: String,
        source: AddrParseError,
    },
    #[error(transparent)]
    Backend(#[from] BackendUrlError),
    /// A count that must be at least 1 (the setting's name).
    #[error("{0} must be at least 1")]
    NotAtLeastOne(&'static str),
    /// A duration that must not be zero (the setting's name).
    #[error("{0} must be positive")]
    NotPositive(String),
    /// A limit outside what docgate can honour (MongoDB's own value is the most).
    #[error("limits.{name} is {value}; it must be between {min} and {max}")]
    LimitRange {
        name: &'static str,
        value: usize,
        min: usize,
        max: usize,
    },
    #[error("pool.min ({min}) must not exceed pool.max ({max}), which must be at least 1")]
    Pool { min: usize, max: usize },
    #[error(
        "limits.unauthenticated_max_message_bytes must be at least 4096 (a handshake and SASL \
         need a few kilobytes)"
    )]
    UnauthenticatedMessageTooSmall,
    #[error(
        "limits.incoming_message_budget_bytes must be at least the largest message, {0} bytes"
    )]
    MessageBudgetTooSmall(usize),
    #[error("--tls-cert needs --tls-key (tls.key)")]
    TlsCertWithoutKey,
    #[error("--tls-key needs --tls-cert (tls.cert)")]
    TlsKeyWithoutCert,
    #[error(
        "--tls-mode {0} needs a certificate and key: give --tls-cert and --tls-key (tls.cert, \
         tls.key)"
    )]
    TlsWithoutIdentity(TlsMode),
    #[error("invalid --advertise {0:?}: use HOST:PORT")]
    Advertise(String),
    #[error("invalid --replica-set {0:?}: a non-empty name without '/', ',' or spaces")]
    ReplicaSetName(String),
}
