//! Shared harness for docgate's integration tests: start the real `docgate` binary
//! on a free loopback port over a fresh data directory, hand out driver clients,
//! kill and restart it on the same data (for crash tests), and stop it on drop.
//!
//! Not for assertions about server behaviour: those live in the test files.
//! The backend is chosen in one place, [`backend_arg`], from `DOCGATE_TEST_BACKEND`.

#![allow(dead_code)]

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// How long a freshly spawned server gets to accept its first connection.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How many times `start` retries when the chosen port was taken by someone else
/// between releasing it and the server binding it.
const START_ATTEMPTS: usize = 3;

/// The `--backend` argument for a server whose private data lives in `data_dir`.
///
/// `DOCGATE_TEST_BACKEND` unset, empty or `sqlite` gives `sqlite:<data_dir>`; any other
/// value (for example a `postgres://…` URL) is passed through unchanged.
pub fn backend_arg(data_dir: &Path) -> String {
    match std::env::var("DOCGATE_TEST_BACKEND") {
        Ok(v) if !v.trim().is_empty() && v.trim() != "sqlite" => v.trim().to_string(),
        _ => format!("sqlite:{}", data_dir.display()),
    }
}

/// A port that was free a moment ago: bind 127.0.0.1:0, read the port, release it.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}

/// A running `docgate` process with its own temporary data directory.
pub struct TestServer {
    child: Option<Child>,
    port: u16,
    /// Holds the data directory and the stderr logs; deleted on drop.
    dir: TempDir,
    /// Incremented on every spawn, so each run of the server has its own log file.
    runs: usize,
}

impl TestServer {
    /// Starts a server on a fresh, empty data directory and waits until it has logged a
    /// line containing "listening" and accepts TCP connections. Panics (with the
    /// server's stderr) if it does not within 20 s.
    pub fn start() -> TestServer {
        let dir = tempfile::Builder::new()
            .prefix("docgate-test-")
            .tempdir()
            .expect("create temp dir");
        std::fs::create_dir_all(dir.path().join("data")).expect("create data dir");
        let mut server = TestServer {
            child: None,
            port: 0,
            dir,
            runs: 0,
        };
        server.spawn_and_wait();
        server
    }

    /// Kills the server with SIGKILL (if it is running) and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the running server (SIGKILL, no chance to flush) if there is one and
    /// starts a new one on the same data directory. The new server may listen on a
    /// different port: use [`TestServer::uri`] / [`TestServer::port`] afterwards.
    pub fn restart_same_data(&mut self) {
        self.kill();
        self.spawn_and_wait();
    }

    /// The port the current server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection string for the current server (direct connection, short
    /// server-selection timeout so a dead server fails a test instead of hanging it).
    pub fn uri(&self) -> String {
        self.uri_with_options("serverSelectionTimeoutMS=10000")
    }

    /// A direct-connection string for the current server with extra URI `options`
    /// (`key=value` pairs joined by `&`).
    pub fn uri_with_options(&self, options: &str) -> String {
        format!(
            "mongodb://127.0.0.1:{}/?directConnection=true&{options}",
            self.port
        )
    }

    /// A driver client for the current server.
    pub async fn client(&self) -> mongodb::Client {
        self.client_with_uri(&self.uri()).await
    }

    /// A driver client built from `uri` (for tests that need extra URI options).
    pub async fn client_with_uri(&self, uri: &str) -> mongodb::Client {
        mongodb::Client::with_uri_str(uri)
            .await
            .unwrap_or_else(|e| panic!("client for {uri}: {e}"))
    }

    /// The data directory given to the server (meaningful for the sqlite backend).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Everything the server wrote to stderr in all its runs so far.
    pub fn stderr_log(&self) -> String {
        let mut all = String::new();
        for run in 1..=self.runs {
            let path = self.log_path(run);
            if let Ok(text) = std::fs::read_to_string(&path) {
                all.push_str(&format!("--- {} ---\n", path.display()));
                all.push_str(&text);
            }
        }
        all
    }

    fn log_path(&self, run: usize) -> PathBuf {
        self.dir.path().join(format!("docgate.{run}.stderr.log"))
    }

    fn spawn_and_wait(&mut self) {
        for attempt in 1..=START_ATTEMPTS {
            self.runs += 1;
            let port = free_port();
            let log = File::create(self.log_path(self.runs)).expect("create stderr log");
            let child = Command::new(env!("CARGO_BIN_EXE_docgate"))
                .arg("--listen")
                .arg(format!("127.0.0.1:{port}"))
                .arg("--backend")
                .arg(backend_arg(&self.data_dir()))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::from(log))
                .spawn()
                .expect("spawn docgate");
            self.child = Some(child);
            self.port = port;
            match self.wait_until_accepting() {
                Ok(()) => return,
                Err(why) => {
                    self.kill();
                    if attempt == START_ATTEMPTS {
                        panic!(
                            "docgate did not start ({why}) after {attempt} attempts\n{}",
                            self.stderr_log()
                        );
                    }
                }
            }
        }
    }

    fn wait_until_accepting(&mut self) -> Result<(), String> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("exited early with {status}"));
                }
            }
            // Our own server said it listens (so a foreign process that grabbed the port
            // in the meantime is not mistaken for it) and the port accepts.
            let announced = std::fs::read_to_string(self.log_path(self.runs))
                .map(|log| log.contains("listening"))
                .unwrap_or(false);
            if announced && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("not accepting on {addr} after {START_TIMEOUT:?}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("docgate stderr:\n{}", self.stderr_log());
        }
    }
}
