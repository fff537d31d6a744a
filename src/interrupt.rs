//! Stopping evaluation part way: a command's time limit (`maxTimeMS`), its client going
//! away, or the server shutting down — and the command's other limit that evaluation reads
//! as it goes: the memory a blocking stage may hold when the command said
//! `allowDiskUse: false` ([`blocking_memory_limit`]).
//!
//! The code that owns a command makes an [`Interrupt`] (a deadline and a cancel flag shared
//! with whoever may cancel it) and installs it on the thread that evaluates, with
//! [`Interrupt::install`]. Evaluation loops call [`check`] as they go — per document in the
//! pipeline stages and residual filters, per element in array operators, per node in
//! expression evaluation — and return the [`Interruption`] as an error when it fires. `check`
//! costs a thread-local counter increment; the clock and the flags are read every
//! [`CHECK_EVERY`] calls.
//!
//! A leaf module (std only): the query core, the store and both front ends use it.
//!
//! Not for: scheduling (see `crate::compute`) or how an error reaches a client.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
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
            Interruption::ClientGone => 11601,
            Interruption::Shutdown => 11600,
            Interruption::SortMemoryLimit | Interruption::GroupMemoryLimit => 292,
        }
    }

    /// MongoDB's code name.
    pub fn code_name(self) -> &'static str {
        match self {
            Interruption::TimeLimit => "MaxTimeMSExpired",
            Interruption::ClientGone => "Interrupted",
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

#[derive(Debug, Default)]
struct Shared {
    /// Set once: at creation, or by whoever reads the command's time limit.
    deadline: OnceLock<Instant>,
    /// 0 while running, else [`Interruption::flag`] of why it was cancelled.
    cancelled: AtomicU8,
    /// Set once: the bytes a blocking stage (a sort, a group) may hold.
    blocking_memory_limit: OnceLock<usize>,
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

    /// Limits the memory each blocking stage of the command may hold (a command that
    /// refused disk use); a limit set already stays.
    pub fn limit_blocking_memory(&self, bytes: usize) {
        let _ = self.shared.blocking_memory_limit.set(bytes);
    }

    /// The deadline, if the command has one.
    pub fn deadline(&self) -> Option<Instant> {
        self.shared.deadline.get().copied()
    }

    /// Stops the evaluation at its next check (the first reason given wins).
    pub fn cancel(&self, reason: Interruption) {
        let _ = self.shared.cancelled.compare_exchange(
            0,
            reason.flag(),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// Whether the command must stop now, and why.
    pub fn status(&self) -> Result<(), Interruption> {
        if let Some(reason) = Interruption::from_flag(self.shared.cancelled.load(Ordering::Relaxed))
        {
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

/// The bytes a blocking stage of the command evaluating on this thread may hold, if its
/// command limited them.
pub fn blocking_memory_limit() -> Option<usize> {
    CURRENT.with(|current| {
        current
            .borrow()
            .as_ref()
            .and_then(|interrupt| interrupt.shared.blocking_memory_limit.get().copied())
    })
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
