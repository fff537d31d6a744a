//! The accept loop: a bounded number of connections (`--max-connections`; more wait in the
//! kernel's accept queue), one task per connection, the idle-cursor reaper, and graceful
//! shutdown — on the shutdown signal the loop stops accepting, each connection finishes the
//! command it is running and closes, and `serve` returns once they are all gone.
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
use super::cursors::CURSOR_IDLE_TIMEOUT;
use super::tls::{ClientStream, ListenerTls};
use super::MongoServer;

/// How often idle cursors are looked for.
const REAPER_INTERVAL: Duration = Duration::from_secs(30);
/// How long shutdown waits for connections to finish their command before giving up.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

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
        let mut ticker = tokio::time::interval(REAPER_INTERVAL);
        loop {
            tokio::select! {
                _ = ticker.tick() => {
                    let closed = reaper_server.cursors.reap_idle(CURSOR_IDLE_TIMEOUT);
                    if closed > 0 {
                        tracing::info!(closed, "closed idle cursors");
                    }
                }
                _ = reaper_shutdown.changed() => break,
            }
        }
    });

    loop {
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
        tracker.spawn(async move {
            match connection_tls.secure(stream).await {
                Ok(ClientStream::Plain(stream)) => {
                    handle_connection(connection_server, stream, peer, connection_shutdown).await
                }
                Ok(ClientStream::Tls(stream)) => {
                    handle_connection(connection_server, stream, peer, connection_shutdown).await
                }
                Err(error) => tracing::debug!(%peer, %error, "TLS negotiation failed; closing"),
            }
            drop(permit);
        });
    }

    tracker.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, tracker.wait())
        .await
        .is_err()
    {
        tracing::warn!("connections still busy after {SHUTDOWN_GRACE:?}; exiting anyway");
    }
}
