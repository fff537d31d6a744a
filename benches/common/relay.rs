//! A TCP relay that does nothing but pass bytes on, in a process of its own: the floor of
//! any proxy. A client → relay → database round trip costs what the second network hop and
//! the second process cost on this machine, with no protocol work at all, so comparing
//! docgate with it tells docgate's own cost apart from the cost of being in the middle.
//!
//! The relay is the benchmark binary itself, started again with `DOCGATE_BENCH_RELAY_TO`
//! set: such a process calls [`serve_if_asked`] first thing in `main`, prints the port it
//! listens on (127.0.0.1 only), relays every connection to the target on a multi-threaded
//! tokio runtime (the kind docgate runs on) and exits when its parent goes away (stdin
//! closes) or is dropped.
//!
//! Not for: anything but loopback benchmarks.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};

const TARGET_VAR: &str = "DOCGATE_BENCH_RELAY_TO";

/// A running relay process; killed on drop.
pub struct Relay {
    child: Child,
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
}

impl Relay {
    /// Starts a relay to `target` (`host:port`).
    pub fn start(target: &str) -> Relay {
        let exe = std::env::current_exe().expect("the benchmark's own executable");
        let mut child = Command::new(exe)
            .env(TARGET_VAR, target)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the relay process");
        let stdout = child.stdout.take().expect("relay stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("relay port");
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("relay did not print its port: {line:?}"));
        Relay { child, port }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// In a process started by [`Relay::start`]: serves as the relay and never returns.
/// Anywhere else: returns at once.
pub fn serve_if_asked() {
    let Ok(target) = std::env::var(TARGET_VAR) else {
        return;
    };
    // The parent holds our stdin; when it exits, the read ends and so do we.
    std::thread::spawn(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        std::process::exit(0);
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("relay runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("relay listen");
        println!("{}", listener.local_addr().expect("relay address").port());
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                continue;
            };
            let target = target.clone();
            tokio::spawn(async move {
                let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await else {
                    return;
                };
                let _ = inbound.set_nodelay(true);
                let _ = outbound.set_nodelay(true);
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            });
        }
    });
    std::process::exit(0);
}
