//! The one launcher of the `docgate` binary under test, shared by the integration tests
//! (`tests/common`, `tests/postgres_support`, and the tests that run a CLI subcommand) and the
//! benches (`benches/common` includes this file with `#[path]`): the command itself
//! ([`docgate_command`]), and a server started on free loopback ports for the wire and REST
//! front ends and the admin listener (`/metrics`; never the default 9216, which several
//! servers cannot share), with its stderr in a log file, waited for until it accepts connections, and
//! started again on other ports when another process took a port first ([`Launch::start`]).
//!
//! Not here: choosing the backend or the data directory, clients, or what a test asserts —
//! each harness keeps those.

#![allow(dead_code)]

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `docgate` as Cargo built it for this test or bench, with nothing set yet (for a
/// subcommand run to completion with `.output()`).
pub fn docgate_command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_docgate"))
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}

/// How to start one serving `docgate`: `--listen 127.0.0.1:<free port> --backend <backend>
/// --rest-listen 127.0.0.1:<free port> --admin-listen 127.0.0.1:<free port> <args>` (no
/// `--admin-listen` of its own when `args` give one).
pub struct Launch<'a> {
    /// The `--backend` argument.
    pub backend: &'a str,
    /// Flags after the generated ones.
    pub args: &'a [&'a str],
    /// Extra environment variables.
    pub envs: &'a [(&'a str, &'a str)],
    /// How long one start may take until the wire port accepts.
    pub timeout: Duration,
    /// Also wait for the server's own "listening" log line (so a foreign process that grabbed
    /// the port is not mistaken for it); needs a log level that shows it.
    pub wait_for_announcement: bool,
    /// Runs the server with this `RLIMIT_NOFILE`.
    pub open_file_limit: Option<u64>,
    /// Starts (ports chosen anew each time) before giving up.
    pub attempts: usize,
}

/// A `docgate` that accepts connections.
pub struct Launched {
    pub child: Child,
    /// The wire (MongoDB) port.
    pub port: u16,
    /// The REST front end's port.
    pub rest_port: u16,
    /// The admin listener's port (`/metrics`, `/livez`, `/readyz`).
    pub admin_port: u16,
    /// Its stderr.
    pub log: PathBuf,
}

impl Launch<'_> {
    /// Defaults: no extra flags or environment, 20 s per start, wait for the announcement,
    /// three attempts.
    pub fn new(backend: &str) -> Launch<'_> {
        Launch {
            backend,
            args: &[],
            envs: &[],
            timeout: Duration::from_secs(20),
            wait_for_announcement: true,
            open_file_limit: None,
            attempts: 3,
        }
    }

    /// Starts the server, writing its stderr to `log_for(attempt)` (attempts count from 1),
    /// and waits until it accepts. After the last failed attempt, the reason and that
    /// attempt's log.
    pub fn start(&self, mut log_for: impl FnMut(usize) -> PathBuf) -> Result<Launched, String> {
        let mut last = String::new();
        for attempt in 1..=self.attempts.max(1) {
            let log = log_for(attempt);
            match self.start_once(&log) {
                Ok(launched) => return Ok(launched),
                Err(why) => {
                    last = format!(
                        "{why} (attempt {attempt})\n{}",
                        std::fs::read_to_string(&log).unwrap_or_default()
                    );
                }
            }
        }
        Err(last)
    }

    fn start_once(&self, log: &Path) -> Result<Launched, String> {
        let port = free_port();
        let rest_port = free_port();
        let admin_port = free_port();
        let stderr = File::create(log).map_err(|e| format!("create {}: {e}", log.display()))?;
        let mut command = docgate_command();
        if let Some(limit) = self.open_file_limit {
            use std::os::unix::process::CommandExt;
            let rlimit = libc::rlimit {
                rlim_cur: limit as libc::rlim_t,
                rlim_max: limit as libc::rlim_t,
            };
            // SAFETY: setrlimit is async-signal-safe and only reads its argument.
            unsafe {
                command.pre_exec(move || {
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &rlimit) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        command
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--backend")
            .arg(self.backend)
            .arg("--rest-listen")
            .arg(format!("127.0.0.1:{rest_port}"));
        if !self.args.contains(&"--admin-listen") {
            command
                .arg("--admin-listen")
                .arg(format!("127.0.0.1:{admin_port}"));
        }
        let mut child = command
            .args(self.args)
            .envs(self.envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(stderr))
            .spawn()
            .map_err(|e| format!("spawn docgate: {e}"))?;
        match self.wait_until_accepting(&mut child, port, log) {
            Ok(()) => Ok(Launched {
                child,
                port,
                rest_port,
                admin_port,
                log: log.to_path_buf(),
            }),
            Err(why) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(why)
            }
        }
    }

    fn wait_until_accepting(&self, child: &mut Child, port: u16, log: &Path) -> Result<(), String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("exited early with {status}"));
            }
            let announced = !self.wait_for_announcement
                || std::fs::read_to_string(log)
                    .map(|text| text.contains("listening"))
                    .unwrap_or(false);
            if announced && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("not accepting on {addr} after {:?}", self.timeout));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
