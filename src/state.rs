//! `AppState`: everything the front ends share, built once at start — the store (which owns
//! the one connection pool), the catalog (which owns the one metadata cache), the
//! authentication service (users, password verifier), the settings and the server-wide
//! counters.
//!
//! Not for: per-connection state (that lives in `mongo::connection`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use crate::auth::AuthService;
use crate::catalog::Catalog;
use crate::config::{BackendUrl, Settings};
use crate::store::postgres::{PostgresOptions, PostgresStore};
use crate::store::sqlite::{SqliteOptions, SqliteStore};
use crate::store::{Store, StoreError};

/// Server-wide counters reported by `serverStatus` (and later exported as metrics).
#[derive(Debug, Default)]
pub struct ServerCounters {
    pub connections_current: AtomicU64,
    pub connections_total: AtomicU64,
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
    pub settings: Settings,
    pub store: Arc<dyn Store>,
    pub catalog: Catalog,
    /// Users, roles and password verification (with its fast path), for both front ends.
    pub auth: Arc<AuthService>,
    pub counters: ServerCounters,
    pub started: Instant,
    pub started_at: SystemTime,
}

impl AppState {
    /// Opens the backend named in the settings and builds the shared state.
    pub async fn open(settings: Settings) -> Result<Arc<AppState>, StoreError> {
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
        };
        let catalog = Catalog::new(store.clone(), &settings.metadata_cache);
        let auth = Arc::new(
            AuthService::open(settings.auth.clone(), catalog.clone(), store.clone()).await?,
        );
        Ok(Arc::new(AppState {
            catalog,
            auth,
            store,
            settings,
            counters: ServerCounters::default(),
            started: Instant::now(),
            started_at: SystemTime::now(),
        }))
    }
}
