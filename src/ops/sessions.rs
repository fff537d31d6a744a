//! Logical sessions and what hangs off them: multi-document transactions and retryable
//! writes, as MongoDB defines them, for any front end that speaks sessions (today the wire).
//!
//! A session is named by its `lsid.id` and the user who uses it ([`SessionKey`]). It is
//! created by its first command and ends with `endSessions`, a kill, or after
//! `logicalSessionTimeoutMinutes` idle. Commands on one session run one at a time (its
//! state is behind an async mutex the command holds while it runs).
//!
//! A session has at most one open transaction ([`OpenTransaction`]): a snapshot SQL
//! transaction on one pooled connection (`SessionTransaction::begin_snapshot`) that every
//! command carrying its `txnNumber` joins. It ends with `commitTransaction`,
//! `abortTransaction`, any failed command in it, a newer `txnNumber`, the end or kill of the
//! session, the client's disconnect, or its lifetime (`transactionLifetimeLimitSeconds`);
//! each gives the connection back to the pool (dropping the store session rolls it back).
//!
//! Retryable writes keep the session's highest `txnNumber` here; the reply of each one is
//! recorded by the store in the write's own SQL transaction (`StoreSession::put_write_record`),
//! so a retry answers the recorded reply on any instance sharing the database.
//!
//! Not for: parsing the fields of a command (`mongo::transactions`), SQL (`store`), cursors
//! (`cursors`, which know their session by id).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::OwnedMutexGuard;

use super::transaction::SessionTransaction;
use super::OpError;
use crate::catalog::Catalog;
use crate::store::Store;

/// How long sessions and transactions may live.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SessionSettings {
    /// A session unused this long is ended (`logicalSessionTimeoutMinutes`, 30).
    pub idle_timeout: Duration,
    /// A transaction open this long is aborted (`transactionLifetimeLimitSeconds`, 60).
    pub transaction_lifetime: Duration,
    /// A transaction whose client disconnected is aborted when no command has continued it
    /// from another connection for this long (drivers retry `commitTransaction` on a new
    /// connection after a network error, so the transaction must outlive the old one
    /// briefly; MongoDB keeps it for its whole lifetime).
    pub disconnect_grace: Duration,
    /// A transaction that holds the backend's one write lock (SQLite) while another writer
    /// waits for it, and has no command running, is aborted after this long idle, so that a
    /// client idling inside a transaction cannot keep every other writer waiting for the
    /// transaction's lifetime.
    pub write_lock_idle_limit: Duration,
}

impl Default for SessionSettings {
    fn default() -> Self {
        SessionSettings {
            idle_timeout: Duration::from_secs(30 * 60),
            transaction_lifetime: Duration::from_secs(60),
            disconnect_grace: Duration::from_secs(5),
            write_lock_idle_limit: Duration::from_secs(1),
        }
    }
}

/// Who a session is: its id (`lsid.id`, a UUID's bytes) and the user that uses it (MongoDB
/// keys sessions by both, so one user cannot join another's session).
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct SessionKey {
    pub id: Vec<u8>,
    pub user: Option<(String, String)>,
}

/// Counts for `serverStatus.transactions` and `logicalSessionRecordCache`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SessionMetrics {
    pub active_sessions: u64,
    pub open_transactions: u64,
    pub transactions_started: u64,
    pub transactions_committed: u64,
    pub transactions_aborted: u64,
}

/// An open transaction between two of its commands.
#[derive(Clone, Debug)]
pub struct IdleTransaction {
    pub key: SessionKey,
    /// Its `txnNumber`.
    pub number: i64,
    /// Since it started.
    pub open_for: Duration,
    /// Since its last command ended.
    pub idle_for: Duration,
}

/// Every session this process knows.
pub struct SessionRegistry {
    sessions: Mutex<HashMap<SessionKey, Arc<SessionSlot>>>,
    settings: SessionSettings,
    counters: Arc<TransactionCounters>,
    last_purge: Mutex<Instant>,
    /// Pooled connections transactions may hold at once: the pool's size less a reserve,
    /// so that idle transactions can never starve the commands of everyone else.
    transaction_slots: Arc<tokio::sync::Semaphore>,
}

/// How long a new transaction waits for a slot when every slot is held.
const TRANSACTION_SLOT_WAIT: Duration = Duration::from_millis(100);

/// How many of `pool_size` connections transactions may hold: a quarter (at least one)
/// stays for plain commands.
pub fn transaction_slots(pool_size: usize) -> usize {
    let reserve = (pool_size / 4).max(1);
    pool_size.saturating_sub(reserve).max(1)
}

/// How often expired retryable-write records are deleted.
const RECORD_PURGE_INTERVAL: Duration = Duration::from_secs(60);

/// One session: its state (held by the command running on it) and when it was last used
/// (readable without waiting for that command).
pub struct SessionSlot {
    state: Arc<tokio::sync::Mutex<ServerSession>>,
    last_used: Mutex<Instant>,
}

#[derive(Default)]
struct TransactionCounters {
    started: AtomicU64,
    committed: AtomicU64,
    aborted: AtomicU64,
    open: AtomicU64,
}

/// A session's state, held by the one command that runs on it.
pub struct ServerSession {
    /// The highest `txnNumber` seen (transactions and retryable writes share the sequence).
    highest_txn: Option<i64>,
    transaction: TransactionState,
    counters: Arc<TransactionCounters>,
    slots: Arc<tokio::sync::Semaphore>,
}

enum TransactionState {
    None,
    Open(OpenTransaction),
    Committed(i64),
    /// Aborted, with why (for the NoSuchTransaction message).
    Aborted(i64, &'static str),
}

/// A session's open transaction.
pub struct OpenTransaction {
    pub number: i64,
    pub transaction: SessionTransaction,
    started: Instant,
    /// When its last command ended (or it started).
    idle_since: Instant,
    /// The connection its last command came on.
    connection: i64,
    /// When that connection closed, if it did and no command came since.
    orphaned_since: Option<Instant>,
    /// A command of it is running, or was stopped part way (its time limit passed, its
    /// client went away) — then its connection may be mid-statement, and the transaction
    /// cannot go on.
    command_running: bool,
    /// Its share of the connections transactions may hold.
    _slot: tokio::sync::OwnedSemaphorePermit,
}

impl OpenTransaction {
    /// Notes that a command of the transaction has finished.
    pub fn command_done(&mut self) {
        self.idle_since = Instant::now();
        self.command_running = false;
    }
}

impl SessionRegistry {
    /// A registry whose transactions hold at most `max_transactions` pooled connections.
    pub fn new(settings: SessionSettings, max_transactions: usize) -> SessionRegistry {
        SessionRegistry {
            sessions: Mutex::new(HashMap::new()),
            settings,
            counters: Arc::default(),
            last_purge: Mutex::new(Instant::now()),
            transaction_slots: Arc::new(tokio::sync::Semaphore::new(max_transactions.max(1))),
        }
    }

    pub fn settings(&self) -> SessionSettings {
        self.settings
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionKey, Arc<SessionSlot>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks session `key` used now, creating it on its first command.
    pub fn touch(&self, key: &SessionKey) -> Arc<SessionSlot> {
        let mut sessions = self.lock();
        if let Some(slot) = sessions.get(key) {
            // Every command of a driver carries its session: no allocation on this path.
            *slot.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
            return slot.clone();
        }
        let slot = sessions.entry(key.clone()).or_insert_with(|| {
            Arc::new(SessionSlot {
                state: Arc::new(tokio::sync::Mutex::new(ServerSession {
                    highest_txn: None,
                    transaction: TransactionState::None,
                    counters: self.counters.clone(),
                    slots: self.transaction_slots.clone(),
                })),
                last_used: Mutex::new(Instant::now()),
            })
        });
        *slot.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        slot.clone()
    }

    /// Every session this process knows, with when it was last used (`$listLocalSessions`).
    pub fn list(&self) -> Vec<(SessionKey, std::time::SystemTime)> {
        let now = Instant::now();
        let wall = std::time::SystemTime::now();
        self.lock()
            .iter()
            .map(|(key, slot)| {
                let last = *slot.last_used.lock().unwrap_or_else(|e| e.into_inner());
                (key.clone(), wall - now.saturating_duration_since(last))
            })
            .collect()
    }

    /// Ends the sessions whose ids are `ids` (any user's, as MongoDB's `endSessions` for the
    /// ids given): open transactions are aborted. Answers how many sessions ended.
    pub async fn end(&self, ids: &[Vec<u8>]) -> usize {
        self.remove_where(|key| ids.contains(&key.id)).await
    }

    /// Ends every session (`killAllSessions`), or those of the given users.
    pub async fn end_all(&self, users: Option<&[(String, String)]>) -> usize {
        self.remove_where(|key| match (users, &key.user) {
            (None, _) => true,
            (Some(users), Some(user)) => users.contains(user),
            (Some(_), None) => false,
        })
        .await
    }

    async fn remove_where(&self, doomed: impl Fn(&SessionKey) -> bool) -> usize {
        let removed: Vec<Arc<SessionSlot>> = {
            let mut sessions = self.lock();
            let keys: Vec<SessionKey> = sessions.keys().filter(|k| doomed(k)).cloned().collect();
            keys.iter().filter_map(|k| sessions.remove(k)).collect()
        };
        for slot in &removed {
            // Waits for a command running on the session to finish, then aborts.
            slot.state.lock().await.abort("its session ended");
        }
        removed.len()
    }

    /// Marks the open transactions whose last command came on `connection` orphaned: the
    /// reaper aborts them unless a command continues them from another connection within
    /// the disconnect grace.
    pub async fn connection_closed(&self, connection: i64) {
        let slots: Vec<Arc<SessionSlot>> = self.lock().values().cloned().collect();
        for slot in slots {
            let mut session = slot.state.lock().await;
            if let TransactionState::Open(open) = &mut session.transaction {
                if open.connection == connection {
                    open.orphaned_since = Some(Instant::now());
                }
            }
        }
    }

    /// Aborts transactions past their lifetime and ends sessions idle past the timeout;
    /// answers the ids of the sessions ended (their cursors and write records go too). A
    /// session busy with a command is left for the next round.
    pub fn reap(&self) -> Vec<Vec<u8>> {
        let now = Instant::now();
        let mut ended = Vec::new();
        let mut sessions = self.lock();
        sessions.retain(|key, slot| {
            let Ok(mut session) = slot.state.try_lock() else {
                return true;
            };
            if let TransactionState::Open(open) = &mut session.transaction {
                let settings = &self.settings;
                let why = if open.command_running {
                    // Nobody holds the session, yet its command never finished.
                    Some("a command of it was interrupted")
                } else if now.duration_since(open.started) >= settings.transaction_lifetime {
                    Some("it exceeded transactionLifetimeLimitSeconds")
                } else if open
                    .orphaned_since
                    .is_some_and(|since| now.duration_since(since) >= settings.disconnect_grace)
                {
                    Some("its client disconnected")
                } else if now.duration_since(open.idle_since) >= settings.write_lock_idle_limit
                    && open.transaction.session().blocks_writers()
                {
                    Some("it held the database's write lock idle while other writers waited")
                } else {
                    None
                };
                if let Some(why) = why {
                    session.abort(why);
                }
            }
            let last_used = *slot.last_used.lock().unwrap_or_else(|e| e.into_inner());
            if now.duration_since(last_used) >= self.settings.idle_timeout {
                session.abort("its session expired");
                ended.push(key.id.clone());
                return false;
            }
            true
        });
        ended
    }

    /// The open transactions no command runs on now (`$currentOp`'s idle sessions).
    pub fn idle_transactions(&self) -> Vec<IdleTransaction> {
        let now = Instant::now();
        self.lock()
            .iter()
            .filter_map(|(key, slot)| {
                let session = slot.state.try_lock().ok()?;
                match &session.transaction {
                    TransactionState::Open(open) if !open.command_running => {
                        Some(IdleTransaction {
                            key: key.clone(),
                            number: open.number,
                            open_for: now.duration_since(open.started),
                            idle_for: now.duration_since(open.idle_since),
                        })
                    }
                    _ => None,
                }
            })
            .collect()
    }

    /// Whether it is time to delete expired retryable-write records (once a minute).
    pub fn should_purge_records(&self) -> bool {
        let mut last = self.last_purge.lock().unwrap_or_else(|e| e.into_inner());
        if last.elapsed() >= RECORD_PURGE_INTERVAL {
            *last = Instant::now();
            true
        } else {
            false
        }
    }

    /// Counts for `serverStatus`.
    pub fn metrics(&self) -> SessionMetrics {
        let counters = &self.counters;
        SessionMetrics {
            active_sessions: self.lock().len() as u64,
            open_transactions: counters.open.load(Ordering::Relaxed),
            transactions_started: counters.started.load(Ordering::Relaxed),
            transactions_committed: counters.committed.load(Ordering::Relaxed),
            transactions_aborted: counters.aborted.load(Ordering::Relaxed),
        }
    }
}

impl SessionSlot {
    /// The session's state, once the command running on it (if any) is done.
    pub async fn enter(&self) -> OwnedMutexGuard<ServerSession> {
        self.state.clone().lock_owned().await
    }
}

impl ServerSession {
    /// Checks `txn` for a retryable write: older than the session's latest is 225
    /// TransactionTooOld; a newer one aborts an open transaction and becomes the latest.
    pub fn begin_retryable_write(&mut self, txn: i64) -> Result<(), OpError> {
        self.check_not_older(txn)?;
        if self.highest_txn.is_some_and(|highest| txn > highest) {
            self.abort("a newer transaction number arrived");
        }
        self.highest_txn = Some(txn);
        Ok(())
    }

    fn check_not_older(&self, txn: i64) -> Result<(), OpError> {
        match self.highest_txn {
            Some(highest) if txn < highest => Err(OpError::TransactionTooOld(format!(
                "Cannot start transaction {txn} on session because a newer transaction {highest} has already started"
            ))),
            _ => Ok(()),
        }
    }

    /// The open transaction `txn` for a command that runs in it: started now (`start`:
    /// `startTransaction: true`), or continued. Starting aborts an older open transaction.
    pub async fn enter_transaction(
        &mut self,
        store: &dyn Store,
        txn: i64,
        start: bool,
        connection: i64,
    ) -> Result<&mut OpenTransaction, OpError> {
        self.check_not_older(txn)?;
        if start {
            if self.highest_txn == Some(txn) {
                return Err(OpError::ConflictingOperation(format!(
                    "Transaction with {{ txnNumber: {txn} }} has already been started"
                )));
            }
            self.abort("a newer transaction started");
            self.highest_txn = Some(txn);
            let slot = tokio::time::timeout(
                TRANSACTION_SLOT_WAIT,
                self.slots.clone().acquire_owned(),
            )
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or_else(|| {
                OpError::LockTimeout(
                    "too many open transactions: every pooled connection that transactions may hold (three quarters of pool.max) is held; retry the transaction".into(),
                )
            })?;
            let transaction = SessionTransaction::begin_snapshot(store).await?;
            self.counters.started.fetch_add(1, Ordering::Relaxed);
            self.counters.open.fetch_add(1, Ordering::Relaxed);
            self.transaction = TransactionState::Open(OpenTransaction {
                number: txn,
                transaction,
                started: Instant::now(),
                idle_since: Instant::now(),
                connection,
                orphaned_since: None,
                command_running: false,
                _slot: slot,
            });
        } else if self.highest_txn != Some(txn) {
            return Err(no_such_transaction(txn, "it was never started"));
        }
        if matches!(&self.transaction, TransactionState::Open(open) if open.command_running) {
            self.abort("a command of it was interrupted");
        }
        match &mut self.transaction {
            TransactionState::Open(open) if open.number == txn => {
                open.connection = connection;
                open.orphaned_since = None;
                open.command_running = true;
                Ok(open)
            }
            TransactionState::Committed(number) if *number == txn => Err(
                OpError::TransactionCommitted(format!("Transaction {txn} has been committed.")),
            ),
            TransactionState::Aborted(number, why) if *number == txn => {
                Err(no_such_transaction(txn, why))
            }
            _ => Err(no_such_transaction(txn, "it was never started")),
        }
    }

    /// `commitTransaction` of `txn`: commits the open transaction; a commit of one already
    /// committed answers ok again (a retried commit).
    pub async fn commit(&mut self, txn: i64, catalog: &Catalog) -> Result<(), OpError> {
        self.check_not_older(txn)?;
        if matches!(&self.transaction, TransactionState::Open(open) if open.command_running) {
            self.abort("a command of it was interrupted");
        }
        match std::mem::replace(&mut self.transaction, TransactionState::None) {
            TransactionState::Open(open) if open.number == txn => {
                self.counters.open.fetch_sub(1, Ordering::Relaxed);
                match open.transaction.commit(catalog).await {
                    Ok(()) => {
                        self.counters.committed.fetch_add(1, Ordering::Relaxed);
                        self.transaction = TransactionState::Committed(txn);
                        Ok(())
                    }
                    Err(error) => {
                        self.counters.aborted.fetch_add(1, Ordering::Relaxed);
                        self.transaction = TransactionState::Aborted(txn, "its commit failed");
                        Err(error)
                    }
                }
            }
            TransactionState::Committed(number) if number == txn => {
                self.transaction = TransactionState::Committed(txn);
                Ok(())
            }
            other => {
                let error = match &other {
                    TransactionState::Aborted(number, why) if *number == txn => {
                        no_such_transaction(txn, why)
                    }
                    _ => no_such_transaction(txn, "it was never started"),
                };
                self.transaction = other;
                Err(error)
            }
        }
    }

    /// `abortTransaction` of `txn`.
    pub fn abort_transaction(&mut self, txn: i64) -> Result<(), OpError> {
        self.check_not_older(txn)?;
        match &self.transaction {
            TransactionState::Open(open) if open.number == txn => {
                self.abort("it was aborted");
                Ok(())
            }
            TransactionState::Committed(number) if *number == txn => Err(
                OpError::TransactionCommitted(format!("Transaction {txn} has been committed.")),
            ),
            TransactionState::Aborted(number, why) if *number == txn => {
                Err(no_such_transaction(txn, why))
            }
            _ => Err(no_such_transaction(txn, "it was never started")),
        }
    }

    /// Aborts the open transaction, if any (dropping it rolls it back and gives its
    /// connection back to the pool).
    pub fn abort(&mut self, why: &'static str) {
        if let TransactionState::Open(open) = &self.transaction {
            let number = open.number;
            self.counters.open.fetch_sub(1, Ordering::Relaxed);
            self.counters.aborted.fetch_add(1, Ordering::Relaxed);
            self.transaction = TransactionState::Aborted(number, why);
        }
    }
}

fn no_such_transaction(txn: i64, why: &str) -> OpError {
    OpError::NoSuchTransaction(format!(
        "Transaction with {{ txnNumber: {txn} }} is not open: {why}"
    ))
}
