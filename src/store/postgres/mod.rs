//! The PostgreSQL backend: a server database for scale-out. A deadpool pool of tokio-postgres
//! connections, catalog tables in schema `docgate`, one PostgreSQL schema per MongoDB
//! database and one table per collection holding the `_id` key, the raw BSON and a `jsonb`
//! image for pushdown; a listener that turns `NOTIFY docgate_catalog` into
//! `Store::catalog_changes`.
//!
//! Files: `conn.rs` (pool manager, recycling, statement helpers, scopes, error mapping),
//! `session.rs` (`StoreSession`, transactions, rollback of dropped sessions), `catalog.rs`
//! (catalog tables, name mapping, collection DDL, stats), `index.rs` (secondary indexes:
//! records and entries tables), `write.rs` (insert, replace, delete, with index entries),
//! `sql.rs` (predicates and scans to SQL and jsonpath), `listen.rs` (catalog change
//! notifications). The JSON image is shared with SQLite (`store/image.rs`).
//!
//! Pool (settings named after ORDS's `pool.*`): `pool_min` connections are opened at
//! connect (so a wrong URL fails at start, and the first requests find warm connections);
//! up to `pool_max` are opened on demand; a checkout waits at most `pool_wait_timeout`, then
//! answers `PoolTimeout`. Opening a connection is bounded by the same timeout. The pool
//! hands out the most recently returned connection first (LIFO), whose statement cache is
//! warm. With `statement_cache`, statements are prepared once per connection (see
//! `conn.rs`), saving a round trip on every later call. deadpool keeps no minimum after
//! start: connections it closes (broken ones) are reopened on demand, not eagerly.
//!
//! Concurrency: READ COMMITTED, PostgreSQL's default. Writers to the same rows wait for each
//! other's row locks; catalog changes serialize on the catalog row (see `catalog.rs`).
//! Writers planned from another process's older catalog are caught: they lock the collection
//! (`ROW EXCLUSIVE`) before checking their index keys against its indexes, and index builds
//! and drops lock it in `SHARE` mode (see `write.rs`, `index.rs`).
//!
//! Not for: MongoDB semantics; predicates given here may over-select and the core re-checks.

/// `Params` from values: `params![a, b]` boxes each value for binding.
macro_rules! params {
    ($($v:expr),* $(,)?) => {{
        let p: super::conn::Params = vec![$(Box::new($v)),*];
        p
    }};
}

mod capped;
mod catalog;
mod catalog_row;
mod conn;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod grouping;
mod index;
mod listen;
mod meta;
mod session;
mod sql;
mod statistics;
mod write;
mod write_record;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool::managed::{Pool, QueueMode};
use deadpool::Runtime;
use deadpool_postgres::{ManagerConfig, RecyclingMethod};
use tokio::sync::{broadcast, oneshot};
use tokio_postgres::config::Host;
use tokio_postgres::{Config, NoTls};

use super::{Store, StoreCounters, StoreError, StoreSession};
use conn::{pool_err, Manager};

pub use session::PostgresSession;

/// Settings of the PostgreSQL store, named after ORDS's `jdbc.MinLimit`/`jdbc.MaxLimit`
/// (`pool.min`/`pool.max`), `pool.wait_timeout` and `pool.statement_cache`.
#[derive(Clone, Debug, PartialEq)]
pub struct PostgresOptions {
    /// Connections opened at connect.
    pub pool_min: usize,
    /// Most connections open at once.
    pub pool_max: usize,
    /// How long a caller waits for a pooled connection (and a new connection may take).
    pub pool_wait_timeout: Duration,
    /// Prepare each statement once per connection.
    pub statement_cache: bool,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            pool_min: 2,
            pool_max: 16,
            pool_wait_timeout: Duration::from_secs(10),
            statement_cache: true,
        }
    }
}

/// The PostgreSQL store. Cheap to share behind an `Arc`; owns the one connection pool and
/// the catalog listener (stopped when the store is dropped).
pub struct PostgresStore {
    pool: Pool<Manager>,
    options: PostgresOptions,
    description: String,
    changes: broadcast::Sender<i64>,
    _stop_listener: oneshot::Sender<()>,
    /// The connection settings, for logons as other roles (`verify_login`).
    config: Config,
    counters: Arc<StoreCounters>,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/db`),
    /// creates the catalog if this is a new database, opens `pool_min` connections and
    /// starts the catalog listener (waiting, up to `pool_wait_timeout`, until it listens).
    /// Must run inside a tokio runtime.
    pub async fn connect(url: &str, options: PostgresOptions) -> Result<PostgresStore, StoreError> {
        // The parser's messages never repeat the URL (which may hold a password).
        let mut config: Config = url
            .parse()
            .map_err(|e| StoreError::Database(format!("invalid PostgreSQL URL: {e}")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.pool_wait_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("docgate");
        }
        let description = describe(&config);
        let inner = deadpool_postgres::Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let wait = options.pool_wait_timeout;
        let pool_max = options.pool_max.max(1);
        let counters = Arc::new(StoreCounters::default());
        let pool: Pool<Manager> = Pool::builder(Manager::new(
            inner,
            options.statement_cache,
            counters.clone(),
        ))
        .max_size(pool_max)
        .wait_timeout(Some(wait))
        .create_timeout(Some(wait))
        .recycle_timeout(Some(wait))
        .queue_mode(QueueMode::Lifo)
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|e| StoreError::Database(format!("connection pool: {e}")))?;
        {
            let mut first = pool.get().await.map_err(|e| pool_err(e, wait))?;
            catalog::bootstrap(&mut first).await?;
            let mut warm = vec![first];
            while warm.len() < options.pool_min.min(pool_max) {
                warm.push(pool.get().await.map_err(|e| pool_err(e, wait))?);
            }
        }
        let (changes, _) = broadcast::channel(64);
        let (stop, stopped) = oneshot::channel();
        let listening = listen::spawn(config.clone(), changes.clone(), stopped);
        // Changes committed after `connect` returns are seen; if LISTEN is slow, go on
        // anyway (the listener keeps trying, and broadcasts once it is in place).
        let _ = tokio::time::timeout(wait, listening).await;
        Ok(PostgresStore {
            pool,
            options,
            description,
            changes,
            _stop_listener: stop,
            config,
            counters,
        })
    }

    /// A session with its concrete type (for `explain_scan` and tests).
    pub async fn postgres_session(&self) -> Result<PostgresSession, StoreError> {
        let conn = self
            .counters
            .checkout(&self.pool)
            .await
            .map_err(|e| pool_err(e, self.options.pool_wait_timeout))?;
        Ok(PostgresSession::new(conn))
    }

    /// The options the store was built with.
    pub fn options(&self) -> &PostgresOptions {
        &self.options
    }
}

/// `postgres user@host:port/dbname`, never the password.
fn describe(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = config
                .get_ports()
                .get(i)
                .or_else(|| config.get_ports().first())
                .copied()
                .unwrap_or(5432);
            match host {
                Host::Tcp(name) => format!("{name}:{port}"),
                #[cfg(unix)]
                Host::Unix(path) => format!("{}:{port}", path.display()),
            }
        })
        .collect();
    format!(
        "postgres {}@{}/{}",
        config.get_user().unwrap_or(""),
        hosts.join(","),
        config.get_dbname().unwrap_or("")
    )
}

#[async_trait]
impl Store for PostgresStore {
    fn backend_name(&self) -> &'static str {
        "postgres"
    }

    fn supports_capped(&self) -> bool {
        true
    }

    fn group_in_statement(&self) -> super::GroupInStatement {
        super::GroupInStatement::Sql
    }

    fn pool_status(&self) -> super::PoolStatus {
        super::PoolStatus::of(self.pool.status())
    }

    fn counters(&self) -> &StoreCounters {
        &self.counters
    }

    fn describe(&self) -> String {
        self.description.clone()
    }

    async fn session(&self) -> Result<Box<dyn StoreSession>, StoreError> {
        Ok(Box::new(self.postgres_session().await?))
    }

    async fn checkpoint(&self) -> Result<(), StoreError> {
        self.postgres_session().await?.checkpoint().await
    }

    fn catalog_changes(&self) -> Option<broadcast::Receiver<i64>> {
        Some(self.changes.subscribe())
    }

    fn delegates_logons(&self) -> bool {
        true
    }

    /// A logon as `user` to the same database and server, closed at once: PostgreSQL checks
    /// the password (the delegated, slow verification path).
    async fn verify_login(&self, user: &str, password: &str) -> Result<bool, StoreError> {
        let mut config = self.config.clone();
        config
            .user(user)
            .password(password)
            .application_name("docgate-login");
        match config.connect(NoTls).await {
            Ok((client, connection)) => {
                drop(client);
                let _ = connection.await;
                Ok(true)
            }
            Err(error) => {
                use tokio_postgres::error::SqlState;
                let refused = error.code().is_some_and(|code| {
                    *code == SqlState::INVALID_PASSWORD
                        || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
                });
                if refused {
                    Ok(false)
                } else {
                    Err(StoreError::Unavailable(format!(
                        "PostgreSQL logon: {error}"
                    )))
                }
            }
        }
    }
}
