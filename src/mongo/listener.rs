//! The accept loop: a bounded number of connections (`--max-connections`; more wait in the
//! kernel's accept queue), one task per connection, the idle-cursor reaper, and graceful
//! shutdown — on the shutdown signal the loop stops accepting, each connection finishes the
//! command it is running and closes, and `serve` returns once they are all gone; commands
//! still running after `--shutdown-grace` are interrupted (11600 InterruptedAtShutdown).
//!
//! Each connection task first secures its stream (TLS handshake or not, see `tls`), so a
//! slow handshake never holds up the accept loop.
//!
//! Not for: what happens on a connection (see `connection`).

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio_util::task::TaskTracker;

use super::connection::handle_connection;
use super::tls::{ClientStream, ListenerTls};
use super::MongoServer;

/// How often idle cursors are looked for.
const REAPER_INTERVAL: Duration = Duration::from_secs(30);
/// How long interrupted commands get to answer after the grace period, before shutdown
/// goes on without them.
pub const INTERRUPTED_ANSWER_TIME: Duration = Duration::from_secs(2);

/// Aborts transactions past their lifetime and ends sessions idle past their timeout, with
/// their cursors; now and then deletes the retryable-write records of sessions that can no
/// longer retry (written longer ago than the session timeout).
async fn reap_sessions(server: &MongoServer) {
    let ended = server.sessions.reap();
    if !ended.is_empty() {
        let ids: Vec<bson::Bson> = ended
            .iter()
            .map(|id| super::transactions::session_id_bson(id))
            .collect();
        server.cursors.kill_sessions(&ids);
        tracing::debug!(ended = ended.len(), "ended expired sessions");
    }
    let cutoff = bson::DateTime::now().timestamp_millis()
        - server.sessions.settings().idle_timeout.as_millis() as i64;
    if !server.sessions.should_purge_records() {
        return;
    }
    let purged = async {
        let mut session = server.state.store.session().await?;
        session.delete_write_records(None, cutoff).await
    };
    match purged.await {
        Ok(0) => {}
        Ok(purged) => tracing::debug!(purged, "deleted expired retryable-write records"),
        Err(error) => tracing::warn!(%error, "could not delete expired retryable-write records"),
    }
}

/// Serves connections from `listener`, secured as `tls` says, until `shutdown` turns true.
pub async fn serve(
    server: Arc<MongoServer>,
    listener: TcpListener,
    tls: ListenerTls,
    mut shutdown: watch::Receiver<bool>,
) {
    let limit = Arc::new(Semaphore::new(server.state.settings.max_connections));
    let tracker = TaskTracker::new();

    let reaper_server = server.clone();
    let mut reaper_shutdown = shutdown.clone();
    tracker.spawn(async move {
        // Often enough that a cursor outlives its timeout by at most a quarter of it.
        let every = (reaper_server.cursors.limits().idle_timeout / 4)
            .clamp(Duration::from_millis(100), REAPER_INTERVAL);
        let mut ticker = tokio::time::interval(every);
        // Transactions outlive their limits by at most a tenth of the lifetime or a quarter
        // of the write-lock idle limit (100 ms to 1 s).
        let sessions = reaper_server.sessions.settings();
        let session_every = (sessions.transaction_lifetime / 10)
            .min(sessions.write_lock_idle_limit / 4)
            .clamp(Duration::from_millis(100), Duration::from_secs(1));
        let mut session_ticker = tokio::time::interval(session_every);
        loop {
            tokio::select! {
                _ = ticker.tick() => {
                    let closed = reaper_server.cursors.reap_idle();
                    if closed > 0 {
                        tracing::info!(closed, "closed idle cursors");
                    }
                }
                _ = session_ticker.tick() => reap_sessions(&reaper_server).await,
                _ = reaper_shutdown.changed() => break,
            }
        }
    });

    loop {
        if limit.available_permits() == 0 {
            super::observe::count_connection_limit(&server);
        }
        let permit = tokio::select! {
            permit = limit.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            _ = shutdown.changed() => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.changed() => break,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(error) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let connection_server = server.clone();
        let connection_shutdown = shutdown.clone();
        let connection_tls = tls.clone();
        let handshake_timeout = server.limits.message_timeout;
        tracker.spawn(async move {
            match tokio::time::timeout(handshake_timeout, connection_tls.secure(stream)).await {
                Ok(Ok(ClientStream::Plain(stream))) => {
                    handle_connection(connection_server, stream, peer, connection_shutdown).await
                }
                Ok(Ok(ClientStream::Tls(stream))) => {
                    handle_connection(connection_server, stream, peer, connection_shutdown).await
                }
                Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS negotiation failed; closing"),
                Err(_) => tracing::debug!(%peer, "TLS negotiation not done in time; closing"),
            }
            drop(permit);
        });
    }

    server.begin_draining();
    tracker.close();
    let grace = server.state.settings.shutdown_grace;
    if tokio::time::timeout(grace, tracker.wait()).await.is_err() {
        tracing::warn!(
            "commands still running after {grace:?} (--shutdown-grace); interrupting them"
        );
        crate::interrupt::begin_shutdown();
        if tokio::time::timeout(INTERRUPTED_ANSWER_TIME, tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("connections still busy; exiting anyway");
        }
    }
}
