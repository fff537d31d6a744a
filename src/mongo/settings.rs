//! The mongo front end's settings: TLS on its listener ([`TlsSettings`]: the mode and the
//! certificate and key files), the operator-set limits it enforces on connections and
//! commands ([`MongoLimits`], `[limits]` of the settings file), and how it presents itself
//! to drivers ([`FaceSettings`]: replica set or standalone, load-balanced, test commands).
//!
//! Not for: reading them from flags, environment or file (`crate::config` does), building
//! the rustls configuration (`tls`), or the limits announced to drivers (`limits`).

use std::path::PathBuf;
use std::time::Duration;

use clap::ValueEnum;

use crate::ops::cursors::CursorLimits;
use crate::ops::sessions::SessionSettings;
use serde::Deserialize;

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

/// The limits the mongo front end enforces against clients that take more than their
/// share. A `None` means no limit.
#[derive(Clone, Debug, PartialEq)]
pub struct MongoLimits {
    /// Closes a connection that sends nothing for this long.
    pub idle_timeout: Option<Duration>,
    /// Closes a connection that has not authenticated and sends nothing for this long, when
    /// authentication is required.
    pub unauthenticated_idle_timeout: Duration,
    /// Closes a connection whose message or TLS handshake is not complete this long after it
    /// began.
    pub message_timeout: Duration,
    /// Largest message a connection may send before it has authenticated, when
    /// authentication is required.
    pub unauthenticated_max_message_bytes: usize,
    /// Largest message a connection may send (`maxMessageSizeBytes`).
    pub max_message_bytes: usize,
    /// Bytes of incoming messages (and their decompressed bodies) held at once across all
    /// connections.
    pub incoming_message_budget_bytes: usize,
    /// `maxTimeMS` of commands that do not set one (MongoDB 8's `defaultMaxTimeMS`).
    pub default_max_time: Option<Duration>,
    /// Bytes a blocking stage may hold before it spills (or answers 292 in a command with
    /// `allowDiskUse: false`).
    pub blocking_stage_memory_bytes: usize,
    /// Where blocking stages write their temporary files (`--temp-dir`).
    pub spill_dir: std::sync::Arc<std::path::Path>,
    /// Open cursors and their idle timeout.
    pub cursors: CursorLimits,
    /// How long sessions and their transactions may live.
    pub sessions: SessionSettings,
}

impl MongoLimits {
    /// What a blocking stage of a `find`/`aggregate` may hold: the limit, and the temporary
    /// directory unless the command refused disk use (`allowDiskUse: false`; absent is
    /// MongoDB's `allowDiskUseByDefault`, true).
    pub fn blocking_memory(
        &self,
        allow_disk_use: Option<bool>,
    ) -> crate::interrupt::BlockingMemory {
        crate::interrupt::BlockingMemory {
            bytes: self.blocking_stage_memory_bytes,
            spill_dir: (allow_disk_use != Some(false)).then(|| self.spill_dir.clone()),
            spool_dir: Some(self.spill_dir.clone()),
        }
    }
}

impl Default for MongoLimits {
    fn default() -> Self {
        MongoLimits {
            idle_timeout: Some(Duration::from_secs(30 * 60)),
            unauthenticated_idle_timeout: Duration::from_secs(60),
            message_timeout: Duration::from_secs(60),
            unauthenticated_max_message_bytes: 64 * 1024,
            max_message_bytes: docgate_wire::MAX_MESSAGE_SIZE_BYTES,
            incoming_message_budget_bytes: 1 << 30,
            default_max_time: None,
            blocking_stage_memory_bytes: crate::query::memory::BLOCKING_STAGE_LIMIT,
            spill_dir: std::sync::Arc::from(std::env::temp_dir()),
            cursors: CursorLimits::default(),
            sessions: SessionSettings::default(),
        }
    }
}

/// What the server presents itself as in `hello` (`--topology`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Topology {
    /// The primary of a one-member replica set (the default): drivers discover it with
    /// `?replicaSet=NAME`, and replies carry the cluster time.
    #[value(name = "replicaset")]
    #[serde(rename = "replicaset")]
    ReplicaSet,
    /// A standalone mongod (the face before the replica set): for tools that insist on one.
    Standalone,
}

impl std::fmt::Display for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Topology::ReplicaSet => "replicaset",
            Topology::Standalone => "standalone",
        })
    }
}

/// How the mongo front end presents itself to drivers, and whether it offers the test
/// commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaceSettings {
    pub topology: Topology,
    /// The replica set's name (`setName`; `--replica-set`, default `docgate`).
    pub replica_set: String,
    /// The `HOST:PORT` `hello` names as the set's one member (`--advertise`); None: the
    /// address the listener is bound to.
    pub advertise: Option<String>,
    /// Answers `hello {loadBalanced: true}` with a `serviceId`, for several instances behind
    /// an L4 load balancer (`--load-balanced`).
    pub load_balanced: bool,
    /// `configureFailPoint` and the `failCommand` fail point (`--enable-test-commands`,
    /// MongoDB's `enableTestCommands`).
    pub enable_test_commands: bool,
}

impl FaceSettings {
    /// The default replica set name.
    pub const DEFAULT_REPLICA_SET: &'static str = "docgate";

    /// The name shown in the startup log line: `replicaset(NAME)`, `standalone`, with
    /// `+load-balanced` when that is on.
    pub fn describe(&self) -> String {
        let mut text = match self.topology {
            Topology::ReplicaSet => format!("replicaset({})", self.replica_set),
            Topology::Standalone => "standalone".to_string(),
        };
        if self.load_balanced {
            text.push_str("+load-balanced");
        }
        text
    }
}

impl Default for FaceSettings {
    fn default() -> Self {
        FaceSettings {
            topology: Topology::ReplicaSet,
            replica_set: FaceSettings::DEFAULT_REPLICA_SET.to_string(),
            advertise: None,
            load_balanced: false,
            enable_test_commands: false,
        }
    }
}
