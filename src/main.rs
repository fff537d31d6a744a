//! The `docgate` binary: resolves settings, opens the backend, binds the listeners (mongo,
//! REST, admin), logs one line per listener, and serves until SIGINT/SIGTERM, then shuts
//! down gracefully (in-flight commands finish, then the process exits).
//!
//! Not for: anything a library user or a test needs (that lives in the `docgate` library).

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use docgate::auth::service::derive_credentials_blocking;
use docgate::auth::users::new_uuid;
use docgate::auth::{AuthError, AuthMode, BuiltinRole, RoleGrant, ScramMechanism, UserRecord};
use docgate::config::{Cli, Command, LogFormat, RestCommand, Settings, UserCommand};
use docgate::metrics::admin::AdminServer;
use docgate::metrics::MetricSource;
use docgate::mongo::tls::{ListenerTls, TlsSetupError};
use docgate::mongo::{listener, MongoServer};
use docgate::rest::demo::DemoError;
use docgate::state::AppState;
use docgate::store::StoreError;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Why a subcommand, or serving, failed (logged, then the process exits with status 1).
#[derive(Debug, thiserror::Error)]
enum MainError {
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    #[error("cannot open backend: {0}")]
    OpenBackend(StoreError),
    #[error("cannot listen on {address}: {source}")]
    Listen {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot listen on {address} (--rest-listen): {source}")]
    RestListen {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot listen on {address} (--admin-listen; `off` turns it off): {source}")]
    AdminListen {
        address: SocketAddr,
        source: std::io::Error,
    },
    /// A bound listener that cannot tell its own address.
    #[error(transparent)]
    LocalAddress(std::io::Error),
    /// The REST front end's token settings cannot be used (an unreadable JWKS file).
    #[error("{0}")]
    RestSetup(String),
    #[error("cannot read the password: {0}")]
    ReadPassword(std::io::Error),
    #[error("no built-in role {role}@{db}")]
    NoBuiltinRole { role: String, db: String },
    #[error(transparent)]
    Credentials(#[from] AuthError),
    #[error("user {user}@{db} already exists")]
    UserExists { user: String, db: String },
    #[error("cannot create user {user}@{db}: {source}")]
    CreateUser {
        user: String,
        db: String,
        source: StoreError,
    },
    /// `docgate rest apply` could not read or store the module file.
    #[error("{0}")]
    RestApply(String),
    #[error(transparent)]
    Demo(#[from] DemoError),
}

fn init_logging(format: LogFormat) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_env("DOCGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,tokio_postgres=warn"));
    let ansi = std::io::stderr().is_terminal();
    let text = matches!(format, LogFormat::Text).then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(ansi)
    });
    let json = matches!(format, LogFormat::Json).then(|| {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .with_ansi(ansi)
    });
    // The same lines go to stderr and, in MongoDB's structured form, to `getLog`.
    tracing_subscriber::registry()
        .with(filter)
        .with(text)
        .with(json)
        .with(docgate::diagnostic_log::RamLogLayer)
        .init();
}

/// Resolves when SIGINT or SIGTERM arrives. The handlers are installed when this is
/// called, not when it is first awaited, so a signal that comes right after the
/// "listening" lines (which are logged after this call) stops the server gracefully.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let handlers = signal(SignalKind::interrupt())
            .and_then(|interrupt| Ok((interrupt, signal(SignalKind::terminate())?)));
        async move {
            match handlers {
                Ok((mut interrupt, mut terminate)) => {
                    tokio::select! {
                        _ = interrupt.recv() => {}
                        _ = terminate.recv() => {}
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot listen for SIGTERM; only SIGINT stops the server");
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Descriptors kept beside the connection limits: listeners, log and data files, the
/// TLS key and certificate, the database's own files (SQLite keeps three per connection).
const SPARE_DESCRIPTORS: u64 = 64;
const DESCRIPTORS_PER_POOL_CONNECTION: u64 = 4;

/// Raises the soft open-file limit to what both listeners' connection limits and the pool
/// need together, so that no listener can take the descriptors the other or the database
/// needs; warns when the hard limit is below that.
fn raise_open_file_limit(settings: &Settings) {
    let needed = settings.app.max_connections as u64
        + settings.rest.limits.max_connections as u64
        + settings.app.pool.max as u64 * DESCRIPTORS_PER_POOL_CONNECTION
        + SPARE_DESCRIPTORS;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return;
    }
    // rlim_t is u64 on Linux.
    let (soft, hard) = (limit.rlim_cur, limit.rlim_max);
    if soft >= needed {
        return;
    }
    let raised = libc::rlimit {
        rlim_cur: needed.min(hard),
        rlim_max: limit.rlim_max,
    };
    // SAFETY: setrlimit reads the struct it is given.
    let ok = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0;
    if !ok || hard < needed {
        tracing::warn!(
            "open-file limit is {} (hard {hard}) but --max-connections, --rest-max-connections \
             and the pool need {needed}: lower them or raise `ulimit -n`",
            if ok { needed.min(hard) } else { soft }
        );
    }
}

async fn run(settings: Settings) -> Result<(), MainError> {
    raise_open_file_limit(&settings);
    let tls = ListenerTls::from_settings(&settings.tls)?;
    let state = AppState::open(settings.app.clone())
        .await
        .map_err(MainError::OpenBackend)?;
    let listener = TcpListener::bind(settings.app.listen)
        .await
        .map_err(|source| MainError::Listen {
            address: settings.app.listen,
            source,
        })?;
    let address = listener.local_addr().map_err(MainError::LocalAddress)?;
    let auth = describe_auth(&state).await;
    let stop = shutdown_signal();
    // Both listeners are bound before either is announced, so "listening" means both are.
    let rest_listener = match settings.rest_listen {
        Some(rest) => Some((
            TcpListener::bind(rest)
                .await
                .map_err(|source| MainError::RestListen {
                    address: rest,
                    source,
                })?,
            docgate::rest::RestState::new(state.clone(), &settings.rest)
                .map_err(MainError::RestSetup)?,
        )),
        None => None,
    };
    let admin_listener = match settings.admin_listen {
        Some(admin) => {
            Some(
                TcpListener::bind(admin)
                    .await
                    .map_err(|source| MainError::AdminListen {
                        address: admin,
                        source,
                    })?,
            )
        }
        None => None,
    };
    tracing::info!(
        "mongo listening on {address} backend={} ({}) auth={auth} max_connections={} tls={} topology={}{}",
        state.store.backend_name(),
        state.store.describe(),
        settings.app.max_connections,
        settings.tls.mode,
        settings.face.describe(),
        if settings.face.enable_test_commands {
            " TEST COMMANDS ENABLED"
        } else {
            ""
        }
    );
    if !address.ip().is_loopback() {
        match settings.app.auth.mode {
            AuthMode::Off => tracing::warn!(
                "AUTHENTICATION IS OFF and docgate listens beyond loopback on {address}: \
                 anyone who can reach it can read and change all data"
            ),
            AuthMode::On if auth == "on (no users yet)" => tracing::warn!(
                "no users exist yet: only loopback clients are served (create the first \
                 user from 127.0.0.1, or with `docgate user create`)"
            ),
            AuthMode::On => {}
        }
    }
    if let Some((rest, rest_state)) = &rest_listener {
        let rest_address = rest.local_addr().map_err(MainError::LocalAddress)?;
        let jwt = if rest_state.tokens.accepts_external() {
            " jwt=jwks"
        } else {
            ""
        };
        tracing::info!(
            "rest listening on {rest_address} backend={} auth={auth}{jwt}",
            state.store.backend_name(),
        );
    }
    match &admin_listener {
        Some(admin) => {
            let admin_address = admin.local_addr().map_err(MainError::LocalAddress)?;
            tracing::info!(
                "admin listening on {admin_address} (/metrics, /livez, /readyz) backend={} auth=none{}",
                state.store.backend_name(),
                if admin_address.ip().is_loopback() {
                    ""
                } else {
                    " (beyond loopback: anyone who reaches it reads the metrics)"
                }
            )
        }
        None => tracing::info!("admin listener off (--admin-listen off): no /metrics"),
    }

    docgate::diagnostic_log::startup_complete();
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let ttl_monitor = tokio::spawn(docgate::ops::ttl::run_monitor(
        state.clone(),
        settings.app.ttl_monitor_interval,
        shutdown_rx.clone(),
    ));
    let mut face = settings.face.clone();
    face.advertise.get_or_insert_with(|| address.to_string());
    let server = Arc::new(MongoServer::new(state.clone(), settings.mongo_limits, face));
    let admin_serving = admin_listener.map(|admin| {
        let mut sources: Vec<Arc<dyn MetricSource>> = vec![server.clone()];
        if let Some((_, rest_state)) = &rest_listener {
            sources.push(rest_state.clone());
        }
        let admin_server = Arc::new(AdminServer { state, sources });
        tokio::spawn(docgate::metrics::admin::serve(
            admin_server,
            admin,
            shutdown_rx.clone(),
        ))
    });
    let rest_serving = rest_listener.map(|(rest, rest_state)| {
        tokio::spawn(docgate::rest::serve(rest_state, rest, shutdown_rx.clone()))
    });
    let serving = tokio::spawn(listener::serve(server.clone(), listener, tls, shutdown_rx));
    // SIGINT, SIGTERM, or the `shutdown` command.
    tokio::select! {
        _ = stop => {}
        _ = server.shutdown_requested() => {}
    }
    drop(server);
    tracing::info!("shutting down: finishing in-flight commands");
    let _ = shutdown_tx.send(true);
    let _ = serving.await;
    if let Some(rest_serving) = rest_serving {
        let _ = rest_serving.await;
    }
    if let Some(admin_serving) = admin_serving {
        let _ = admin_serving.await;
    }
    let _ = ttl_monitor.await;
    tracing::info!("stopped");
    Ok(())
}

/// `on`, `on (no users yet)` or `off`, for the listener's log line.
async fn describe_auth(state: &AppState) -> &'static str {
    match state.settings.auth.mode {
        AuthMode::Off => "off",
        AuthMode::On => match state.auth.users_exist().await {
            Ok(true) => "on",
            _ => "on (no users yet)",
        },
    }
}

/// `docgate user create`: stores a user in the backend directly (no server needed).
async fn run_user_command(settings: Settings, command: UserCommand) -> Result<(), MainError> {
    let UserCommand::Create { user, db, roles } = command;
    let password = match std::env::var("DOCGATE_USER_PASSWORD") {
        Ok(password) => password,
        Err(_) => {
            eprintln!("password for {user}@{db} (one line on standard input):");
            let mut line = String::new();
            std::io::stdin()
                .read_line(&mut line)
                .map_err(MainError::ReadPassword)?;
            line.trim_end_matches(['\r', '\n']).to_owned()
        }
    };
    let grants = roles
        .iter()
        .map(|role| match role.split_once('@') {
            Some((role, role_db)) => RoleGrant::new(role, role_db),
            None => RoleGrant::new(role.as_str(), db.as_str()),
        })
        .collect::<Vec<_>>();
    for grant in &grants {
        match BuiltinRole::from_name(&grant.role) {
            Some(role) if !role.admin_only() || grant.db == "admin" => {}
            _ => {
                return Err(MainError::NoBuiltinRole {
                    role: grant.role.clone(),
                    db: grant.db.clone(),
                })
            }
        }
    }
    let state = AppState::open(settings.app)
        .await
        .map_err(MainError::OpenBackend)?;
    let credentials = derive_credentials_blocking(
        &user,
        &password,
        &[ScramMechanism::Sha1, ScramMechanism::Sha256],
    )
    .await?;
    let record = UserRecord {
        db: db.clone(),
        name: user.clone(),
        user_id: new_uuid(),
        credentials,
        roles: grants,
        custom_data: None,
    };
    state.auth.create_user(&record).await.map_err(|e| match e {
        StoreError::AlreadyExists(_) => MainError::UserExists {
            user: user.clone(),
            db: db.clone(),
        },
        source => MainError::CreateUser {
            user: user.clone(),
            db: db.clone(),
            source,
        },
    })?;
    eprintln!("created user {user}@{db}");
    Ok(())
}

/// `docgate rest apply FILE --db DB`: stores REST modules in the backend directly.
async fn run_rest_apply(
    settings: Settings,
    db: &str,
    file: &std::path::Path,
) -> Result<(), MainError> {
    let state = AppState::open(settings.app)
        .await
        .map_err(MainError::OpenBackend)?;
    let lines = docgate::rest::modules::admin::apply_module_file(&state, db, file)
        .await
        .map_err(MainError::RestApply)?;
    for line in lines {
        eprintln!("{line}");
    }
    Ok(())
}

/// `docgate demo`: loads the concert sample, then serves.
async fn run_demo(settings: Settings) -> Result<(), MainError> {
    {
        let state = AppState::open(settings.app.clone())
            .await
            .map_err(MainError::OpenBackend)?;
        docgate::rest::demo::load_concert_sample(&state).await?;
    }
    let (user, password) = docgate::rest::demo::DEMO_USER;
    tracing::warn!(
        "demo: loaded the concert sample into database {}; demo user {user} (password {password}) holds role {}",
        docgate::rest::demo::DEMO_DB,
        docgate::rest::demo::DEMO_ROLE
    );
    run(settings).await
}

/// Stack of every runtime thread (workers and the blocking pool, where the compute pool and
/// SQLite run). Tokio's default is 2 MiB; documents nested up to the depth limit are walked
/// recursively, under command futures that are large in debug builds, and a stack overflow
/// aborts the whole process, so the margin is generous (it is address space, committed only
/// as it is used).
const THREAD_STACK_BYTES: usize = 8 * 1024 * 1024;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let mut cli = Cli::parse();
    let command = cli.command.take();
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
        .thread_stack_size(THREAD_STACK_BYTES)
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("docgate: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = match command {
        None => runtime.block_on(run(settings)),
        Some(Command::User(user_command)) => {
            runtime.block_on(run_user_command(settings, user_command))
        }
        Some(Command::Rest(RestCommand::Apply { file, db })) => {
            runtime.block_on(run_rest_apply(settings, &db, &file))
        }
        Some(Command::Demo) => runtime.block_on(run_demo(settings)),
    };
    // Evaluation interrupted at shutdown ends at its next check; a statement the database
    // is still running is not waited for.
    runtime.shutdown_timeout(docgate::mongo::listener::INTERRUPTED_ANSWER_TIME);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            tracing::error!("{message}");
            ExitCode::FAILURE
        }
    }
}
