//! The REST front end's settings ([`RestSettings`]): its bearer tokens (the lifetime of the
//! tokens docgate issues, an external identity provider's JWKS, issuer, audience and roles
//! claim) and the limits its listener enforces ([`RestLimits`]).
//!
//! Not for: reading them from flags, environment or file (`crate::config` does), or using
//! them (`tokens`, `listener`).

use std::path::PathBuf;
use std::time::Duration;

/// Settings of the REST front end: its bearer tokens and its listener's limits.
#[derive(Clone, Debug, PartialEq)]
pub struct RestSettings {
    /// Lifetime of the OAuth2 access tokens docgate issues.
    pub token_lifetime: Duration,
    /// JWKS file of an external identity provider.
    pub jwks: Option<PathBuf>,
    pub jwt_issuer: Option<String>,
    pub jwt_audience: Option<String>,
    pub jwt_roles_claim: String,
    /// What the listener allows each client.
    pub limits: RestLimits,
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
            limits: RestLimits::default(),
        }
    }
}

/// The limits the REST listener enforces (`[limits]`'s `rest_*`). A `None` means no limit.
#[derive(Clone, Debug, PartialEq)]
pub struct RestLimits {
    /// Most simultaneous REST connections; more wait in the accept queue.
    pub max_connections: usize,
    /// Closes a keep-alive connection idle this long, and one whose request head takes longer.
    pub idle_timeout: Duration,
    /// Time limit of one request, evaluation included.
    pub request_timeout: Option<Duration>,
    /// Largest request body (413 beyond).
    pub max_body_bytes: usize,
    /// Deepest nesting of objects and arrays in a JSON body (400 beyond).
    pub max_json_depth: usize,
    /// What a blocking sort or `$group` of one request may hold before it spills to
    /// temporary files: the wire's limit and `--temp-dir` (REST has no `allowDiskUse`, so it
    /// always may spill, as MongoDB's `allowDiskUseByDefault`).
    pub blocking_memory: crate::interrupt::BlockingMemory,
}

impl RestLimits {
    /// MongoDB's largest message (a bulk insert).
    pub const DEFAULT_MAX_BODY_BYTES: usize = 48_000_000;
    /// MongoDB's nesting limit for stored documents.
    pub const DEFAULT_MAX_JSON_DEPTH: usize = 100;
}

impl Default for RestLimits {
    fn default() -> Self {
        RestLimits {
            max_connections: 1024,
            idle_timeout: Duration::from_secs(60),
            request_timeout: Some(Duration::from_secs(60)),
            max_body_bytes: RestLimits::DEFAULT_MAX_BODY_BYTES,
            max_json_depth: RestLimits::DEFAULT_MAX_JSON_DEPTH,
            blocking_memory: crate::mongo::settings::MongoLimits::default().blocking_memory(None),
        }
    }
}
