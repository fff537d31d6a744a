//! `AppState`: everything the front ends share, built once at start — the store (which owns
//! the one connection pool), the catalog (which owns the one metadata cache), the
//! authentication service (users, password verifier), the settings, the server-wide
//! counters, the metrics registry and the cluster time — and [`AppSettings`], the resolved settings it is opened with.
//!
//! Not for: per-connection state (that lives in `mongo::connection`), or reading settings
//! from flags, environment or file (`crate::config` does that, for `main.rs`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::auth::{AuthService, AuthSettings};
use crate::catalog::{Catalog, MetadataCacheSettings};
use crate::store::postgres::{PostgresOptions, PostgresStore};
use crate::store::settings::{BackendUrl, PoolSettings};
use crate::store::sqlite::{SqliteOptions, SqliteStore};
use crate::store::{Store, StoreError};

/// The resolved settings the shared state is opened with and both front ends read: where
/// the data lives, the pool, the metadata cache, authentication, and the few that belong to
/// the process (the MongoDB listener's address and connection bound, the TTL monitor's
/// interval, the shutdown grace, the command line).
#[derive(Clone, Debug)]
pub struct AppSettings {
    pub backend: BackendUrl,
    pub listen: SocketAddr,
    pub max_connections: usize,
    pub pool: PoolSettings,
    pub metadata_cache: MetadataCacheSettings,
    pub ttl_monitor_interval: Duration,
    /// Commands slower than this are logged (and profiled at level 1): MongoDB's `slowms`
    /// at start.
    pub slow_op_threshold: Duration,
    pub auth: AuthSettings,
    /// How long shutdown lets running commands and requests finish before interrupting them.
    pub shutdown_grace: Duration,
    /// The size and nesting a stored document may have (both front ends write through the
    /// core, which checks them).
    pub documents: crate::ops::prepare::DocumentLimits,
    /// The command line as given, passwords redacted (`config::redact`), for `getCmdLineOpts`.
    pub argv: Vec<String>,
}

/// Server-wide counters reported by `serverStatus` and `/metrics`.
#[derive(Debug, Default)]
pub struct ServerCounters {
    /// MongoDB connections open now and since start.
    pub connections_current: AtomicU64,
    pub connections_total: AtomicU64,
    /// REST connections open now and since start.
    pub rest_connections_current: AtomicU64,
    pub rest_connections_total: AtomicU64,
    pub op_insert: AtomicU64,
    pub op_query: AtomicU64,
    pub op_update: AtomicU64,
    pub op_delete: AtomicU64,
    pub op_getmore: AtomicU64,
    pub op_command: AtomicU64,
    /// Authentications per mechanism (serverStatus `security.authentication.mechanisms`).
    pub auth_scram_sha256: MechanismCounters,
    pub auth_scram_sha1: MechanismCounters,
    pub auth_plain: MechanismCounters,
}

/// MongoDB's per-mechanism authentication counters.
#[derive(Debug, Default)]
pub struct MechanismCounters {
    pub authenticate_received: AtomicU64,
    pub authenticate_successful: AtomicU64,
    pub speculative_received: AtomicU64,
    pub speculative_successful: AtomicU64,
}

impl ServerCounters {
    /// The counters of a mechanism by its name, if docgate offers it.
    pub fn mechanism(&self, name: &str) -> Option<&MechanismCounters> {
        match name {
            "SCRAM-SHA-256" => Some(&self.auth_scram_sha256),
            "SCRAM-SHA-1" => Some(&self.auth_scram_sha1),
            "PLAIN" => Some(&self.auth_plain),
            _ => None,
        }
    }
}

impl ServerCounters {
    /// Adds `n` to a counter.
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Reads a counter.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// Shared by every connection of every front end.
pub struct AppState {
    pub settings: AppSettings,
    pub store: Arc<dyn Store>,
    pub catalog: Catalog,
    /// Users, roles and password verification (with its fast path), for both front ends.
    pub auth: Arc<AuthService>,
    pub counters: ServerCounters,
    /// The events both front ends record for `/metrics` (`crate::metrics`).
    pub metrics: crate::metrics::Metrics,
    /// The cluster time replies carry and writes tick (`ops::cluster_time`).
    pub cluster_time: crate::ops::cluster_time::ClusterClock,
    pub started: Instant,
    pub started_at: SystemTime,
    /// The operations running now (`currentOp`, `killOp`).
    pub operations: crate::ops::operations::OperationRegistry,
    /// The profiler's settings and `system.profile`, and the slow-operation threshold.
    pub profiler: crate::ops::profiler::Profiler,
    /// Inserts into capped collections, announced to tailable `awaitData` cursors.
    pub capped_inserts: crate::ops::capped::CappedInserts,
}

impl AppState {
    /// Opens the backend named in the settings and builds the shared state.
    pub async fn open(settings: AppSettings) -> Result<Arc<AppState>, StoreError> {
        let store: Arc<dyn Store> = match &settings.backend {
            BackendUrl::Sqlite(dir) => {
                let options = SqliteOptions {
                    pool_max: settings.pool.max,
                    pool_wait_timeout: settings.pool.wait_timeout,
                };
                let store = SqliteStore::open(dir, options)?;
                store.open_connections(settings.pool.min).await?;
                Arc::new(store)
            }
            BackendUrl::Postgres(url) => {
                let options = PostgresOptions {
                    pool_min: settings.pool.min,
                    pool_max: settings.pool.max,
                    pool_wait_timeout: settings.pool.wait_timeout,
                    statement_cache: settings.pool.statement_cache,
                };
                Arc::new(PostgresStore::connect(url, options).await?)
            }
            BackendUrl::Oracle(url) => open_oracle(url, &settings.pool).await?,
        };
        let catalog = Catalog::new(store.clone(), &settings.metadata_cache);
        let auth = Arc::new(
            AuthService::open(settings.auth.clone(), catalog.clone(), store.clone()).await?,
        );
        let profiler = crate::ops::profiler::Profiler::new(settings.slow_op_threshold);
        Ok(Arc::new(AppState {
            profiler,
            catalog,
            auth,
            store,
            settings,
            counters: ServerCounters::default(),
            metrics: crate::metrics::Metrics::new(),
            cluster_time: crate::ops::cluster_time::ClusterClock::new(),
            started: Instant::now(),
            started_at: SystemTime::now(),
            operations: Default::default(),
            capped_inserts: crate::ops::capped::CappedInserts::default(),
        }))
    }
}

/// The Oracle store (a docgate built with the `oracle` feature).
#[cfg(feature = "oracle")]
async fn open_oracle(url: &str, pool: &PoolSettings) -> Result<Arc<dyn Store>, StoreError> {
    use crate::store::oracle::{OracleOptions, OracleStore};
    let options = OracleOptions {
        pool_min: pool.min,
        pool_max: pool.max,
        pool_wait_timeout: pool.wait_timeout,
        statement_cache: pool.statement_cache,
    };
    Ok(Arc::new(OracleStore::connect(url, options).await?))
}

/// Without the `oracle` feature: says how to get a docgate that has the backend.
#[cfg(not(feature = "oracle"))]
async fn open_oracle(_url: &str, _pool: &PoolSettings) -> Result<Arc<dyn Store>, StoreError> {
    Err(StoreError::Unsupported(
        "this docgate was built without the Oracle backend; build it with \
         `cargo build --release --features oracle` (and install the Oracle Instant Client)"
            .into(),
    ))
}
