//! The catalog change listener: a background task with one dedicated connection (outside
//! the pool) that runs `LISTEN docgate_catalog` and broadcasts the version carried by each
//! notification, so every docgate process drops stale metadata as soon as any of them
//! commits a catalog change.
//!
//! When the connection drops (PostgreSQL restarted, network trouble) the task reconnects
//! with exponential backoff (100 ms up to 5 s) and, once listening again, broadcasts the
//! current catalog version: notifications sent while it was away are lost, and receivers
//! must re-check. The task ends when the store is dropped.
//!
//! Not for: reading the catalog (`catalog.rs`); the broadcast carries only versions.

use std::future::poll_fn;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_postgres::{AsyncMessage, Config, NoTls};

use super::catalog_row::CHANNEL;

const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Starts the listener; it runs until `stop` is dropped or fired. The returned receiver
/// fires once the first `LISTEN` is in place.
pub(super) fn spawn(
    config: Config,
    changes: broadcast::Sender<i64>,
    stop: oneshot::Receiver<()>,
) -> oneshot::Receiver<()> {
    let (ready, listening) = oneshot::channel();
    tokio::spawn(async move {
        tokio::select! {
            () = listen_forever(config, changes, ready) => {}
            _ = stop => {}
        }
    });
    listening
}

async fn listen_forever(
    config: Config,
    changes: broadcast::Sender<i64>,
    ready: oneshot::Sender<()>,
) {
    let mut backoff = FIRST_BACKOFF;
    let mut reconnecting = false;
    let mut ready = Some(ready);
    loop {
        // A failed attempt keeps the grown backoff; a connection that listened resets it.
        let _ = listen_once(&config, &changes, reconnecting, &mut backoff, &mut ready).await;
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
        reconnecting = true;
    }
}

/// One connection's life: connect, LISTEN, forward notifications until it ends.
async fn listen_once(
    config: &Config,
    changes: &broadcast::Sender<i64>,
    reconnecting: bool,
    backoff: &mut Duration,
    ready: &mut Option<oneshot::Sender<()>>,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(NoTls).await?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    if tx.send(n.payload().to_owned()).is_err() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    let setup = async {
        client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
        if reconnecting {
            let row = client
                .query_one("SELECT version FROM docgate.catalog WHERE id = 1", &[])
                .await?;
            let version: i64 = row.try_get(0)?;
            let _ = changes.send(version);
        }
        Ok::<(), tokio_postgres::Error>(())
    };
    if let Err(e) = setup.await {
        driver.abort();
        return Err(e);
    }
    *backoff = FIRST_BACKOFF;
    if let Some(ready) = ready.take() {
        let _ = ready.send(());
    }
    while let Some(payload) = rx.recv().await {
        if let Ok(version) = payload.parse::<i64>() {
            // No receivers is fine: nobody is caching yet.
            let _ = changes.send(version);
        }
    }
    drop(client);
    Ok(())
}
