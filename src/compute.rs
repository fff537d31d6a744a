//! The compute pool: where CPU-heavy evaluation runs — aggregation pipelines, residual
//! filters, sorts in Rust — so that it never holds the async worker threads that answer
//! `hello`, `ping` and every other client.
//!
//! At most one job per CPU runs at a time (more wait their turn); each job runs on a
//! blocking thread with its command's [`Interrupt`] installed, so the evaluation loops stop
//! it at its deadline, when its client goes away, or at shutdown. A command's interrupt is
//! set for the task that runs it with [`scope`] (the wire dispatcher and the REST request
//! layer do), and [`run`] picks it up.
//!
//! Not for: the evaluation itself (`crate::query`) or SQL, which runs on the store's
//! connections.

use std::future::Future;
use std::sync::{Arc, LazyLock};

use tokio::sync::Semaphore;

use crate::interrupt::{Interrupt, Interruption};

/// One permit per CPU: how many evaluations run at once.
static PERMITS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    Arc::new(Semaphore::new(cpus))
});

tokio::task_local! {
    static COMMAND_INTERRUPT: Interrupt;
}

/// Runs `work` (a command or a REST request) with `interrupt` as the interrupt of every
/// evaluation it starts.
pub async fn scope<F: Future>(interrupt: Interrupt, work: F) -> F::Output {
    COMMAND_INTERRUPT.scope(interrupt, work).await
}

/// The interrupt of the command this task runs (one that never fires outside [`scope`]).
pub fn current_interrupt() -> Interrupt {
    COMMAND_INTERRUPT
        .try_with(Interrupt::clone)
        .unwrap_or_default()
}

/// Runs `with` on the interrupt of the command this task runs, if it runs one (the store
/// reports its statements and how to cancel them this way).
pub fn with_command_interrupt<R>(with: impl FnOnce(&Interrupt) -> R) -> Option<R> {
    COMMAND_INTERRUPT.try_with(with).ok()
}

/// Runs `work` on the compute pool under the current command's interrupt and answers its
/// result. An interrupt that fires while the job waits for its turn answers at once.
pub async fn run<T, E>(work: impl FnOnce() -> Result<T, E> + Send + 'static) -> Result<T, E>
where
    T: Send + 'static,
    E: From<Interruption> + Send + 'static,
{
    let interrupt = current_interrupt();
    let acquired = match interrupt.deadline() {
        Some(deadline) => tokio::select! {
            permit = PERMITS.clone().acquire_owned() => permit,
            _ = tokio::time::sleep_until(deadline.into()) => {
                return Err(Interruption::TimeLimit.into())
            }
        },
        None => PERMITS.clone().acquire_owned().await,
    };
    // The semaphore is never closed; a closed one could only mean the process is ending.
    let Ok(permit) = acquired else {
        return Err(Interruption::Shutdown.into());
    };
    let job = tokio::task::spawn_blocking(move || {
        // The permit is held for as long as the evaluation runs, even if the command that
        // waits for it is gone.
        let _permit = permit;
        interrupt.status()?;
        interrupt.install(work)
    });
    match job.await {
        Ok(result) => result,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => Err(Interruption::Shutdown.into()),
    }
}

/// Runs small `work` inline on this thread (not worth a trip to the pool) under the current
/// command's interrupt, so its checks still answer for the command.
pub fn run_inline<T, E>(work: impl FnOnce() -> Result<T, E>) -> Result<T, E>
where
    E: From<Interruption>,
{
    let interrupt = current_interrupt();
    interrupt.status()?;
    interrupt.install(work)
}
