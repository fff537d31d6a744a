//! The `docgate` binary: resolves settings, opens the backend, binds the listeners, logs one
//! line per listener, and serves until SIGINT/SIGTERM, then shuts down gracefully (in-flight
//! commands finish, then the process exits).
//!
//! Not for: anything a library user or a test needs (that lives in the `docgate` library).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use docgate::config::{Cli, LogFormat, Settings};
use docgate::mongo::tls::ListenerTls;
use docgate::mongo::{listener, MongoServer};
use docgate::state::AppState;
use tokio::net::TcpListener;
use tokio::sync::watch;

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("DOCGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,tokio_postgres=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Resolves when SIGINT or SIGTERM arrives.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate = match tokio::signal::unix::signal(
            tokio::signal::unix::SignalKind::terminate(),
        ) {
            Ok(signal) => signal,
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM; only SIGINT stops the server");
                let _ = interrupt.await;
                return;
            }
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

async fn run(settings: Settings) -> Result<(), String> {
    let tls = ListenerTls::from_settings(&settings.tls).map_err(|e| e.to_string())?;
    let state = AppState::open(settings.clone())
        .await
        .map_err(|e| format!("cannot open backend: {e}"))?;
    let listener = TcpListener::bind(settings.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", settings.listen))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    tracing::info!(
        "mongo listening on {address} backend={} ({}) auth=off max_connections={} tls={}",
        state.store.backend_name(),
        state.store.describe(),
        settings.max_connections,
        settings.tls.mode
    );
    if !address.ip().is_loopback() {
        tracing::warn!("listening beyond loopback on {address} with authentication off");
    }
    if let Some(rest) = settings.rest_listen {
        tracing::warn!(
            "--rest-listen {rest} is reserved: the REST front end is not part of this build yet"
        );
    }

    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let ttl_monitor = tokio::spawn(docgate::query::ttl::run_monitor(
        state.clone(),
        settings.ttl_monitor_interval,
        shutdown_rx.clone(),
    ));
    let server = Arc::new(MongoServer::new(state));
    let serving = tokio::spawn(listener::serve(server, listener, tls, shutdown_rx));
    shutdown_signal().await;
    tracing::info!("shutting down: finishing in-flight commands");
    let _ = shutdown_tx.send(true);
    let _ = serving.await;
    let _ = ttl_monitor.await;
    tracing::info!("stopped");
    Ok(())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let cli = Cli::parse();
    let settings = match Settings::resolve(cli, argv) {
        Ok(settings) => settings,
        Err(message) => {
            eprintln!("docgate: {message}");
            return ExitCode::from(2);
        }
    };
    init_logging(settings.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("docgate: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(settings)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            tracing::error!("{message}");
            ExitCode::FAILURE
        }
    }
}
