//! Stopping evaluation part way: a command's time limit (`maxTimeMS`), its client going
//! away, or the server shutting down — and the command's other limit that evaluation reads
//! as it goes: the memory a blocking stage may hold, and where it may spill past it
//! ([`blocking_memory`]; no spill directory when the command said `allowDiskUse: false`).
//! It also carries the values MongoDB fixes once per command, which evaluation reads
//! wherever it runs: `$$NOW` ([`command_now`]) and `$$CLUSTER_TIME`
//! ([`command_cluster_time`]).
//!
//! The code that owns a command makes an [`Interrupt`] (a deadline and a cancel flag shared
//! with whoever may cancel it) and installs it on the thread that evaluates, with
//! [`Interrupt::install`]. Evaluation loops call [`check`] as they go — per document in the
//! pipeline stages and residual filters, per element in array operators, per node in
//! expression evaluation — and return the [`Interruption`] as an error when it fires. `check`
//! costs a thread-local counter increment; the clock and the flags are read every
//! [`CHECK_EVERY`] calls.
//!
//! An operation killed with `killOp` is cancelled the same way ([`Interruption::Killed`]).
//! The store reports the SQL statement an operation runs ([`Interrupt::statement_started`],
//! read back by `currentOp`) and, while it runs, how to cancel it in the database
//! ([`Interrupt::on_cancel`]: SQLite's interrupt handle, PostgreSQL's cancel request); a
//! cancel then stops the statement too. [`Interrupt::cancelled`] is a future that resolves
//! when the interrupt is cancelled, for whoever waits on something else meanwhile.
//!
//! A leaf module (std only): the query core, the store and both front ends use it.
//!
//! Not for: scheduling (see `crate::compute`) or how an error reaches a client.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// Why evaluation stopped, with MongoDB's error for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Interruption {
    /// The command's `maxTimeMS` (or the server's default) passed: 50 MaxTimeMSExpired.
    #[error("operation exceeded time limit")]
    TimeLimit,
    /// The client that sent the command went away: 11601 Interrupted.
    #[error("operation was interrupted because a client disconnected")]
    ClientGone,
    /// The server is shutting down: 11600 InterruptedAtShutdown.
    #[error("interrupted at shutdown")]
    Shutdown,
    /// `killOp` killed the operation: 11601 Interrupted.
    #[error("operation was interrupted")]
    Killed,
    /// A blocking sort held more than the command's memory limit (`allowDiskUse: false`):
    /// 292 QueryExceededMemoryLimitNoDiskUseAllowed.
    #[error(
        "Sort exceeded memory limit of 104857600 bytes, but did not opt in to external \
         sorting. Aborting operation. Pass allowDiskUse:true to opt in."
    )]
    SortMemoryLimit,
    /// A `$group` held more than the command's memory limit: 292 as well.
    #[error(
        "Exceeded memory limit for $group, but didn't allow external sort. Pass \
         allowDiskUse:true to opt in."
    )]
    GroupMemoryLimit,
}

impl Interruption {
    /// MongoDB's numeric code.
    pub fn code(self) -> i32 {
        match self {
            Interruption::TimeLimit => 50,
            Interruption::ClientGone | Interruption::Killed => 11601,
            Interruption::Shutdown => 11600,
            Interruption::SortMemoryLimit | Interruption::GroupMemoryLimit => 292,
        }
    }

    /// MongoDB's code name.
    pub fn code_name(self) -> &'static str {
        match self {
            Interruption::TimeLimit => "MaxTimeMSExpired",
            Interruption::ClientGone | Interruption::Killed => "Interrupted",
            Interruption::Shutdown => "InterruptedAtShutdown",
            Interruption::SortMemoryLimit | Interruption::GroupMemoryLimit => {
                "QueryExceededMemoryLimitNoDiskUseAllowed"
            }
        }
    }

    /// The interruption a MongoDB error code stands for (an evaluation error carries it as
    /// its code): the time limit, a client gone, shutdown — not a memory limit, which says
    /// nothing about the command's client or deadline.
    pub fn from_code(code: i32) -> Option<Interruption> {
        [
            Interruption::TimeLimit,
            Interruption::ClientGone,
            Interruption::Shutdown,
        ]
        .into_iter()
        .find(|reason| reason.code() == code)
    }

    fn from_flag(flag: u8) -> Option<Interruption> {
        match flag {
            1 => Some(Interruption::TimeLimit),
            2 => Some(Interruption::ClientGone),
            3 => Some(Interruption::Shutdown),
            4 => Some(Interruption::SortMemoryLimit),
            5 => Some(Interruption::GroupMemoryLimit),
            6 => Some(Interruption::Killed),
            _ => None,
        }
    }

    fn flag(self) -> u8 {
        match self {
            Interruption::TimeLimit => 1,
            Interruption::ClientGone => 2,
            Interruption::Shutdown => 3,
            Interruption::SortMemoryLimit => 4,
            Interruption::GroupMemoryLimit => 5,
            Interruption::Killed => 6,
        }
    }
}

/// How many [`check`] calls pass between two looks at the clock and the flags.
pub const CHECK_EVERY: u32 = 256;

/// Set once when the server starts shutting down; every running evaluation then stops.
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);

/// Makes every evaluation, running or to come, stop with [`Interruption::Shutdown`].
pub fn begin_shutdown() {
    SHUTTING_DOWN.store(true, Ordering::Relaxed);
}

/// One command's interruption state: its deadline and a cancel flag. Clones share the flag.
#[derive(Clone, Debug, Default)]
pub struct Interrupt {
    shared: Arc<Shared>,
}

/// Cancels a statement running in the database (given by the store while it runs one).
pub type StatementCanceller = Box<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct Shared {
    /// Set once: at creation, or by whoever reads the command's time limit.
    deadline: OnceLock<Instant>,
    /// 0 while running, else [`Interruption::flag`] of why it was cancelled.
    cancelled: AtomicU8,
    /// Set once: the bytes a blocking stage (a sort, a group) may hold, and where it spills.
    blocking_memory: OnceLock<BlockingMemory>,
    /// The statement the command runs or ran last, and how to cancel it while it runs.
    statement: Mutex<Statement>,
    /// Who waits in [`Interrupt::cancelled`].
    waiters: Mutex<Vec<Waker>>,
    /// The command's `$$NOW`: the clock read once, when the command first asks.
    now: OnceLock<bson::DateTime>,
    /// The command's `$$CLUSTER_TIME`, set when it starts on a replica set.
    cluster_time: OnceLock<bson::Timestamp>,
}

/// What a blocking stage of a command may hold in memory, and where it writes what does not
/// fit: `spill_dir` is None when the command refused disk use (`allowDiskUse: false`), and
/// the stage then answers 292 past `bytes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockingMemory {
    /// Bytes one blocking stage may hold.
    pub bytes: usize,
    /// The directory its temporary files go to, when it may spill.
    pub spill_dir: Option<Arc<Path>>,
    /// Where docgate's own spools go past the limit even when the command refused disk use
    /// (`allowDiskUse: false`): the result of a `$unionWith`'s input, a slice, a snapshot
    /// cursor or a `$out`, which MongoDB streams and never holds, so refusing disk use
    /// gives it nothing to answer 292 for. None: such a spool is held in memory.
    pub spool_dir: Option<Arc<Path>>,
}

#[derive(Default)]
struct Statement {
    text: Option<Arc<str>>,
    canceller: Option<(u64, StatementCanceller)>,
    next_canceller: u64,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("deadline", &self.deadline)
            .field("cancelled", &self.cancelled)
            .finish_non_exhaustive()
    }
}

impl Interrupt {
    /// An interrupt that fires at `deadline` (never, for None), on [`Interrupt::cancel`],
    /// or at shutdown.
    pub fn new(deadline: Option<Instant>) -> Interrupt {
        let interrupt = Interrupt::default();
        if let Some(deadline) = deadline {
            interrupt.set_deadline(deadline);
        }
        interrupt
    }

    /// Gives the command its deadline; a deadline set already stays.
    pub fn set_deadline(&self, deadline: Instant) {
        let _ = self.shared.deadline.set(deadline);
    }

    /// Limits the memory each blocking stage of the command may hold, and says where it
    /// spills past that (nowhere: the command refused disk use); a limit set already stays.
    pub fn limit_blocking_memory(&self, limit: BlockingMemory) {
        let _ = self.shared.blocking_memory.set(limit);
    }

    /// What a blocking stage of the command may hold and where it spills, if limited.
    pub fn blocking_memory(&self) -> Option<BlockingMemory> {
        self.shared.blocking_memory.get().cloned()
    }

    /// The command's `$$NOW`: the same for every document and stage of the command (MongoDB
    /// fixes it once per command), read from the clock the first time it is asked for.
    pub fn now(&self) -> bson::DateTime {
        *self.shared.now.get_or_init(bson::DateTime::now)
    }

    /// Gives a `getMore` the `$$NOW` of the command that opened its cursor (MongoDB fixes
    /// it once per cursor); a time read already stays.
    pub fn set_now(&self, now: bson::DateTime) {
        let _ = self.shared.now.set(now);
    }

    /// Gives the command its `$$CLUSTER_TIME` (on a replica set); a time set already stays.
    pub fn set_cluster_time(&self, time: bson::Timestamp) {
        let _ = self.shared.cluster_time.set(time);
    }

    /// The command's `$$CLUSTER_TIME`, if it runs on a replica set.
    pub fn cluster_time(&self) -> Option<bson::Timestamp> {
        self.shared.cluster_time.get().copied()
    }

    /// The deadline, if the command has one.
    pub fn deadline(&self) -> Option<Instant> {
        self.shared.deadline.get().copied()
    }

    /// Stops the evaluation at its next check (the first reason given wins), cancels the
    /// statement running in the database, and wakes whoever waits in
    /// [`Interrupt::cancelled`].
    pub fn cancel(&self, reason: Interruption) {
        let first = self
            .shared
            .cancelled
            .compare_exchange(0, reason.flag(), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        if !first {
            return;
        }
        if let Ok(statement) = self.shared.statement.lock() {
            if let Some((_, canceller)) = &statement.canceller {
                canceller();
            }
        }
        let waiters = match self.shared.waiters.lock() {
            Ok(mut waiters) => std::mem::take(&mut *waiters),
            Err(_) => Vec::new(),
        };
        for waker in waiters {
            waker.wake();
        }
    }

    /// Whether [`Interrupt::cancel`] was called, and why.
    pub fn cancellation(&self) -> Option<Interruption> {
        Interruption::from_flag(self.shared.cancelled.load(Ordering::Relaxed))
    }

    /// Resolves with the reason once [`Interrupt::cancel`] is called (not at the deadline:
    /// whoever waits for that has the deadline).
    pub fn cancelled(&self) -> Cancelled {
        Cancelled {
            interrupt: self.clone(),
        }
    }

    /// The store reports the SQL text of a statement it starts for this command (text only:
    /// values are bound, never spelled in it). Kept until the next one, for `currentOp`.
    pub fn statement_started(&self, sql: &str) {
        if let Ok(mut statement) = self.shared.statement.lock() {
            if statement.text.as_deref() != Some(sql) {
                statement.text = Some(Arc::from(sql));
            }
        }
    }

    /// The SQL text of the statement the command runs now or ran last.
    pub fn statement(&self) -> Option<Arc<str>> {
        self.shared
            .statement
            .lock()
            .ok()
            .and_then(|statement| statement.text.clone())
    }

    /// While the returned guard lives, [`Interrupt::cancel`] calls `canceller` (the store's
    /// way to stop the statement it runs); a command cancelled already calls it at once.
    pub fn on_cancel(&self, canceller: StatementCanceller) -> CancelRegistration {
        if self.cancellation().is_some() {
            canceller();
        }
        let id = match self.shared.statement.lock() {
            Ok(mut statement) => {
                statement.next_canceller += 1;
                let id = statement.next_canceller;
                statement.canceller = Some((id, canceller));
                Some(id)
            }
            Err(_) => None,
        };
        CancelRegistration {
            interrupt: self.clone(),
            id,
        }
    }

    /// Whether the command must stop now, and why.
    pub fn status(&self) -> Result<(), Interruption> {
        if let Some(reason) = self.cancellation() {
            return Err(reason);
        }
        if SHUTTING_DOWN.load(Ordering::Relaxed) {
            return Err(Interruption::Shutdown);
        }
        match self.shared.deadline.get() {
            Some(deadline) if Instant::now() >= *deadline => Err(Interruption::TimeLimit),
            _ => Ok(()),
        }
    }

    /// Runs `work` with this interrupt installed on the current thread, so [`check`] in
    /// the evaluation it does answers for this command; the previous one is put back after.
    pub fn install<R>(&self, work: impl FnOnce() -> R) -> R {
        let previous = CURRENT.with(|current| current.replace(Some(self.clone())));
        let _restore = Restore(previous);
        work()
    }
}

/// Keeps a statement's canceller registered ([`Interrupt::on_cancel`]) until dropped.
pub struct CancelRegistration {
    interrupt: Interrupt,
    id: Option<u64>,
}

impl Drop for CancelRegistration {
    fn drop(&mut self) {
        if let Ok(mut statement) = self.interrupt.shared.statement.lock() {
            if statement.canceller.as_ref().map(|(id, _)| *id) == self.id {
                statement.canceller = None;
            }
        }
    }
}

/// The future of [`Interrupt::cancelled`].
pub struct Cancelled {
    interrupt: Interrupt,
}

impl Future for Cancelled {
    type Output = Interruption;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Interruption> {
        if let Some(reason) = self.interrupt.cancellation() {
            return Poll::Ready(reason);
        }
        if let Ok(mut waiters) = self.interrupt.shared.waiters.lock() {
            if !waiters.iter().any(|waker| waker.will_wake(context.waker())) {
                waiters.push(context.waker().clone());
            }
        }
        // A cancel between the first look and the registration has taken the wakers already.
        match self.interrupt.cancellation() {
            Some(reason) => Poll::Ready(reason),
            None => Poll::Pending,
        }
    }
}

/// Puts the thread's previous interrupt back, also when evaluation panics.
struct Restore(Option<Interrupt>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Interrupt>> = const { RefCell::new(None) };
    static CALLS: Cell<u32> = const { Cell::new(0) };
}

/// What a blocking stage of the command evaluating on this thread may hold and where it
/// spills, if its command limited it.
pub fn blocking_memory() -> Option<BlockingMemory> {
    CURRENT.with(|current| {
        current
            .borrow()
            .as_ref()
            .and_then(|interrupt| interrupt.shared.blocking_memory.get().cloned())
    })
}

/// Runs `with` on the interrupt of the command evaluating here: the one installed on this
/// thread (an evaluation on the compute pool), else the one of the task (a command's own
/// task), if any.
fn with_evaluating<R>(with: impl Fn(&Interrupt) -> R) -> Option<R> {
    CURRENT
        .with(|current| current.borrow().as_ref().map(&with))
        .or_else(|| crate::compute::with_command_interrupt(|interrupt| with(interrupt)))
}

/// `$$NOW` for the command evaluating here (one value per command); the clock outside a
/// command.
pub fn command_now() -> bson::DateTime {
    with_evaluating(Interrupt::now).unwrap_or_else(bson::DateTime::now)
}

/// `$$CLUSTER_TIME` for the command evaluating here, if it runs on a replica set.
pub fn command_cluster_time() -> Option<bson::Timestamp> {
    with_evaluating(Interrupt::cluster_time).flatten()
}

/// Called from evaluation loops: an error once the installed interrupt has fired. Cheap
/// enough to call per element (the state is read every [`CHECK_EVERY`] calls).
pub fn check() -> Result<(), Interruption> {
    let calls = CALLS.with(|calls| {
        let n = calls.get().wrapping_add(1);
        calls.set(n);
        n
    });
    if calls % CHECK_EVERY != 0 {
        return Ok(());
    }
    check_now()
}

/// Like [`check`], reading the state at once (between documents, before a long step).
pub fn check_now() -> Result<(), Interruption> {
    if SHUTTING_DOWN.load(Ordering::Relaxed) {
        return Err(Interruption::Shutdown);
    }
    CURRENT.with(|current| match &*current.borrow() {
        Some(interrupt) => interrupt.status(),
        None => Ok(()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn checks_pass_until_the_deadline_and_fail_after() {
        let interrupt = Interrupt::new(Some(Instant::now() + Duration::from_millis(30)));
        interrupt.install(|| {
            assert_eq!(check_now(), Ok(()));
            std::thread::sleep(Duration::from_millis(40));
            let failed = (0..CHECK_EVERY * 2).find_map(|_| check().err());
            assert_eq!(failed, Some(Interruption::TimeLimit));
        });
        // Uninstalled: checks on this thread answer for nobody.
        assert_eq!(check_now(), Ok(()));
    }

    #[test]
    fn the_first_cancel_reason_wins_and_clones_share_it() {
        let interrupt = Interrupt::new(None);
        let other = interrupt.clone();
        other.cancel(Interruption::ClientGone);
        interrupt.cancel(Interruption::TimeLimit);
        assert_eq!(interrupt.status(), Err(Interruption::ClientGone));
        let reason = Interruption::ClientGone;
        assert_eq!((reason.code(), reason.code_name()), (11601, "Interrupted"));
    }

    #[test]
    fn install_restores_the_previous_interrupt() {
        let outer = Interrupt::new(None);
        let inner = Interrupt::new(None);
        inner.cancel(Interruption::TimeLimit);
        outer.install(|| {
            inner.install(|| assert_eq!(check_now(), Err(Interruption::TimeLimit)));
            assert_eq!(check_now(), Ok(()));
        });
    }
}
