//! The Oracle Database 23ai backend (cargo feature `oracle`): the `oracle` crate (ODPI-C,
//! compiled from source; the Oracle Instant Client is loaded at run time), its session
//! pool, catalog tables `DG_*` in the connecting user's schema, and one table per
//! collection holding the `_id` key, the raw BSON and a `JSON` image for pushdown.
//!
//! Files: `url.rs` (`oracle://` URLs), `conn.rs` (binds, statements, scopes, autonomous
//! DDL, error mapping), `session.rs` (`StoreSession` on blocking threads), `catalog.rs` and
//! `catalog_row.rs` (catalog tables, collection DDL, stats), `index.rs` (secondary indexes:
//! records and entries tables), `write.rs` (insert, replace, delete, with index entries),
//! `sql.rs` (predicates and scans to SQL with `JSON_EXISTS`), `meta.rs`, `write_record.rs`.
//!
//! Pool (the same `pool.*` settings as the other backends): an ODPI-C session pool of
//! `pool_min`..`pool_max` sessions; a checkout waits at most `pool_wait_timeout`, then
//! answers `PoolTimeout`. With `statement_cache`, each session caches 64 statements.
//! Everything that talks to Oracle runs on tokio's blocking threads.
//!
//! Without an Oracle Client library, `connect` answers `Unavailable` with ODPI-C's
//! `DPI-1047` and how to install the Instant Client; docgate then exits non-zero.
//!
//! Catalog changes of other instances: a task polls the catalog version once a second and
//! announces changes through `Store::catalog_changes` (Oracle's `DBMS_ALERT` would push
//! them, but needs an `EXECUTE` grant a docgate account should not need).
//!
//! Not for: MongoDB semantics; predicates given here may over-select and the core re-checks.

mod catalog;
mod catalog_row;
mod conn;
mod index;
mod meta;
mod session;
pub mod sql;
pub mod url;
mod write;
mod write_record;

use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use oracle::pool::{GetMode, Pool, PoolBuilder};
use tokio::sync::{broadcast, oneshot};

use super::{PoolStatus, Store, StoreCounters, StoreError, StoreSession};
use conn::{ora_err, OraConn};
use url::OracleUrl;

pub use catalog::{collection_ddl, BOOTSTRAP};
pub use conn::{client_missing, Bind, AUTONOMOUS_DDL, CLIENT_MISSING};
pub use index::entries_ddl;
pub use session::OracleSession;

/// How often other instances' catalog changes are looked for.
const CATALOG_POLL: Duration = Duration::from_secs(1);

/// ORA-24457: no free session in the pool within the wait timeout.
const POOL_GET_TIMEOUT: i32 = 24457;

/// Settings of the Oracle store (the same `pool.*` settings as PostgreSQL).
#[derive(Clone, Debug, PartialEq)]
pub struct OracleOptions {
    pub pool_min: usize,
    pub pool_max: usize,
    pub pool_wait_timeout: Duration,
    pub statement_cache: bool,
}

impl Default for OracleOptions {
    fn default() -> Self {
        OracleOptions {
            pool_min: 2,
            pool_max: 16,
            pool_wait_timeout: Duration::from_secs(10),
            statement_cache: true,
        }
    }
}

/// The Oracle store: owns the session pool and the catalog poller (stopped when the store
/// is dropped).
pub struct OracleStore {
    pool: Pool,
    url: OracleUrl,
    options: OracleOptions,
    changes: broadcast::Sender<i64>,
    /// Checkouts, waits and timeouts of the session pool (`/metrics`).
    counters: StoreCounters,
    _stop_poller: oneshot::Sender<()>,
}

/// Runs blocking Oracle work on a blocking thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StoreError::Database(format!("an Oracle call failed: {e}")))?
}

impl OracleStore {
    /// Connects to `url` (`oracle://user:password@host:port/service`), creates the
    /// catalog if this is a new schema, opens the pool and starts the catalog poller.
    /// Must run inside a tokio runtime.
    pub async fn connect(url: &str, options: OracleOptions) -> Result<OracleStore, StoreError> {
        let url = OracleUrl::parse(url).map_err(StoreError::Database)?;
        let built = {
            let (url, options) = (url.clone(), options.clone());
            blocking(move || build_pool(&url, &options)).await?
        };
        let pool = built;
        {
            let pool = pool.clone();
            let wait = options.pool_wait_timeout;
            blocking(move || {
                let mut first = checkout(&pool, wait)?;
                catalog::bootstrap(&mut first)
            })
            .await?;
        }
        let (changes, _) = broadcast::channel(64);
        let (stop, stopped) = oneshot::channel();
        tokio::spawn(poll_catalog(
            pool.clone(),
            options.pool_wait_timeout,
            changes.clone(),
            stopped,
        ));
        Ok(OracleStore {
            counters: StoreCounters::default(),
            pool,
            url,
            options,
            changes,
            _stop_poller: stop,
        })
    }

    /// A session with its concrete type (for `explain_scan` and tests).
    pub async fn oracle_session(&self) -> Result<OracleSession, StoreError> {
        let (pool, wait) = (self.pool.clone(), self.options.pool_wait_timeout);
        self.counters.checkouts.fetch_add(1, Ordering::Relaxed);
        if self.pool_status().in_use >= self.options.pool_max.max(1) {
            self.counters.waits.fetch_add(1, Ordering::Relaxed);
        }
        let checked_out = blocking(move || checkout(&pool, wait)).await;
        if let Err(StoreError::PoolTimeout(_)) = &checked_out {
            self.counters.timeouts.fetch_add(1, Ordering::Relaxed);
        }
        Ok(OracleSession::new(checked_out?))
    }
}

fn build_pool(url: &OracleUrl, options: &OracleOptions) -> Result<Pool, StoreError> {
    let max = u32::try_from(options.pool_max.max(1)).unwrap_or(u32::MAX);
    let min = u32::try_from(options.pool_min).unwrap_or(0).min(max);
    let mut builder = PoolBuilder::new(&url.user, &url.password, &url.connect_string);
    builder
        .min_connections(min)
        .max_connections(max)
        .connection_increment(1)
        .get_mode(GetMode::TimedWait(options.pool_wait_timeout))
        .stmt_cache_size(if options.statement_cache { 64 } else { 0 })
        .driver_name("docgate");
    builder.build().map_err(|e| ora_err(&e))
}

/// A session out of the pool, proven alive only by use (a dead one fails its first call
/// with `Unavailable`, which is retryable).
fn checkout(pool: &Pool, wait: Duration) -> Result<OraConn, StoreError> {
    match pool.get() {
        Ok(conn) => Ok(OraConn::new(conn)),
        Err(e) if e.oci_code() == Some(POOL_GET_TIMEOUT) => Err(StoreError::PoolTimeout(wait)),
        Err(e) => Err(ora_err(&e)),
    }
}

/// Reads the catalog version every [`CATALOG_POLL`] and broadcasts each change, until
/// the store is dropped.
async fn poll_catalog(
    pool: Pool,
    wait: Duration,
    changes: broadcast::Sender<i64>,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut seen: Option<i64> = None;
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            _ = tokio::time::sleep(CATALOG_POLL) => {}
        }
        let pool = pool.clone();
        let version = blocking(move || {
            let mut conn = checkout(&pool, wait)?;
            catalog_row::catalog_version(&mut conn)
        })
        .await;
        if let Ok(version) = version {
            if seen.is_some_and(|seen| seen != version) {
                let _ = changes.send(version);
            }
            seen = Some(version);
        }
    }
}

#[async_trait]
impl Store for OracleStore {
    fn backend_name(&self) -> &'static str {
        "oracle"
    }

    fn describe(&self) -> String {
        format!("oracle {}@{}", self.url.user, self.url.connect_string)
    }

    fn pool_status(&self) -> PoolStatus {
        let size = self.pool.open_count().unwrap_or(0) as usize;
        let busy = self.pool.busy_count().unwrap_or(0) as usize;
        PoolStatus {
            max_size: self.options.pool_max.max(1),
            size,
            in_use: busy.min(size),
            // ODPI-C does not tell how many callers wait in a timed-wait `get`.
            waiting: 0,
        }
    }

    fn counters(&self) -> &StoreCounters {
        &self.counters
    }

    async fn session(&self) -> Result<Box<dyn StoreSession>, StoreError> {
        Ok(Box::new(self.oracle_session().await?))
    }

    /// `fsync`: a commit is already durable in Oracle's redo log; `ALTER SYSTEM CHECKPOINT`
    /// also writes the buffers to the data files (it needs the `ALTER SYSTEM` privilege).
    async fn checkpoint(&self) -> Result<(), StoreError> {
        let mut session = self.oracle_session().await?;
        session
            .call(|conn| conn.ddl("ALTER SYSTEM CHECKPOINT"))
            .await
    }

    fn catalog_changes(&self) -> Option<broadcast::Receiver<i64>> {
        Some(self.changes.subscribe())
    }

    fn delegates_logons(&self) -> bool {
        true
    }

    /// A logon as `user` to the same service, closed at once: Oracle checks the password
    /// (the delegated, slow verification path; the fast path remembers the success).
    async fn verify_login(&self, user: &str, password: &str) -> Result<bool, StoreError> {
        let (user, password) = (user.to_owned(), password.to_owned());
        let connect_string = self.url.connect_string.clone();
        blocking(move || {
            match oracle::Connector::new(user, password, connect_string).connect() {
                Ok(conn) => {
                    let _ = conn.close();
                    Ok(true)
                }
                // invalid username/password, account locked, password expired
                Err(e) if matches!(e.oci_code(), Some(1017 | 28000 | 28001)) => Ok(false),
                Err(e) => Err(StoreError::Unavailable(format!(
                    "Oracle logon: {}",
                    ora_err(&e)
                ))),
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests;
