//! Connect latency, like the k6 script Oracle used for its fast verification path: N
//! sequential iterations (`DOCGATE_BENCH_CONNECTIONS`, default 100), each a new
//! `mongodb::Client` that connects, authenticates and runs one `find` up to its first batch.
//! The sides are interleaved round by round in one run:
//!
//! - no auth: a server started with `--auth off`;
//! - SCRAM-SHA-256 and SCRAM-SHA-1 (the driver uses speculative authentication in `hello`);
//! - PLAIN with the fast path off (`--auth-cache-enabled false`: PBKDF2 on every login, what
//!   a server without the fast path pays);
//! - PLAIN with the fast path on (the default: PBKDF2 once, then a keyed-hash cache hit).
//!
//! With the Rust driver a new client is two TCP connections (the monitor's `hello`, then the
//! pooled connection's `hello` + authentication) before the `find`; each client is shut down,
//! untimed, before the next. Printed per backend: avg, min, med, max, p90, p95 in
//! microseconds, then the ratios the targets are about (PLAIN with the fast path vs no auth
//! at the median, within 1.10; its max vs its median, under 3; PLAIN vs SCRAM-SHA-256).
//! Nothing is asserted.
//!
//! Run: `cargo bench --bench connect_latency` (`DOCGATE_BENCH_PG=0` for SQLite only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use bson::{doc, Document};
use common::{
    backends, env_usize, print_table, ratio, sample_doc, summarize, us, Backend, Server,
    BENCH_PASSWORD, BENCH_USER,
};

const DB: &str = "bench";
const COLL: &str = "connect";
const DOCS: i64 = 10;
const WARMUP: usize = 5;

/// One measured way of connecting.
struct Side {
    label: &'static str,
    /// Index into the servers: 0 = auth off, 1 = auth on, 2 = auth on without the fast path.
    server: usize,
    /// URI options (`authMechanism=…`), None for no credentials.
    auth: Option<&'static str>,
}

const SIDES: &[Side] = &[
    Side {
        label: "no auth",
        server: 0,
        auth: None,
    },
    Side {
        label: "SCRAM-SHA-256",
        server: 1,
        auth: Some("authMechanism=SCRAM-SHA-256&authSource=admin"),
    },
    Side {
        label: "SCRAM-SHA-1",
        server: 1,
        auth: Some("authMechanism=SCRAM-SHA-1&authSource=admin"),
    },
    Side {
        label: "PLAIN, fast path off",
        server: 2,
        auth: Some("authMechanism=PLAIN&authSource=%24external"),
    },
    Side {
        label: "PLAIN, fast path on",
        server: 1,
        auth: Some("authMechanism=PLAIN&authSource=%24external"),
    },
];

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let iterations = env_usize("DOCGATE_BENCH_CONNECTIONS", 100).max(1);
    let dir = tempfile::Builder::new()
        .prefix("docgate-bench-connect-")
        .tempdir()
        .expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!(
        "connect_latency: {iterations} sequential iterations per side (+{WARMUP} warm-up), each a new client that connects, authenticates and finds {DOCS} documents"
    );
    for backend in &backends {
        run(backend, dir.path(), iterations).await;
    }
}

/// The storage of server `n`: its own SQLite directory (one process per SQLite file), or the
/// shared PostgreSQL database (several instances on one database is how docgate scales).
fn storage_for(backend: &Backend, n: usize) -> Backend {
    match backend {
        Backend::Sqlite { dir } => {
            let dir = dir.join(format!("server-{n}"));
            std::fs::create_dir_all(&dir).expect("server data dir");
            Backend::Sqlite { dir }
        }
        Backend::Postgres { .. } => backend.clone(),
    }
}

async fn run(backend: &Backend, dir: &Path, iterations: usize) {
    let flags: [&[&str]; 3] = [&["--auth", "off"], &[], &["--auth-cache-enabled", "false"]];
    let servers: Vec<Server> = flags
        .iter()
        .enumerate()
        .map(|(n, flags)| Server::start(&storage_for(backend, n), dir, flags))
        .collect();
    for server in &servers {
        prepare(server).await;
    }
    let uris: Vec<String> = SIDES
        .iter()
        .map(|side| {
            let server = &servers[side.server];
            match side.auth {
                None => server.uri(""),
                Some(options) => server.uri_as(BENCH_USER, BENCH_PASSWORD, options),
            }
        })
        .collect();

    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); SIDES.len()];
    for round in 0..WARMUP + iterations {
        for step in 0..SIDES.len() {
            let side = (round + step) % SIDES.len();
            let took = connect_and_find(&uris[side]).await;
            if round >= WARMUP {
                samples[side].push(took);
            }
        }
    }

    let summaries: Vec<_> = samples.iter().map(|s| summarize(s)).collect();
    let rows: Vec<Vec<String>> = SIDES
        .iter()
        .zip(&summaries)
        .map(|(side, s)| {
            vec![
                side.label.to_string(),
                us(s.mean),
                us(s.min),
                us(s.p50),
                us(s.max),
                us(s.p90),
                us(s.p95),
            ]
        })
        .collect();
    println!();
    println!("backend: {}", backend.name());
    print_table(
        &[
            "side", "avg us", "min us", "med us", "max us", "p90 us", "p95 us",
        ],
        &rows,
    );
    let (none, scram256, plain_fast) = (summaries[0], summaries[1], summaries[4]);
    let plain_slow = summaries[3];
    println!(
        "PLAIN fast path vs no auth (med): {} (target <= 1.10); vs no auth (p95): {}",
        ratio(plain_fast.p50, none.p50),
        ratio(plain_fast.p95, none.p95)
    );
    println!(
        "PLAIN fast path max vs its med: {} (target < 3); PLAIN fast path vs SCRAM-SHA-256 (med): {}; PLAIN without vs with the fast path (med): {}",
        ratio(plain_fast.max, plain_fast.p50),
        ratio(plain_fast.p50, scram256.p50),
        ratio(plain_slow.p50, plain_fast.p50)
    );
}

/// Creates the user (through the localhost exception; on a shared PostgreSQL database the
/// second server finds the user already there) and loads the documents.
async fn prepare(server: &Server) {
    let client = server.client().await;
    let coll = client.database(DB).collection::<Document>(COLL);
    coll.drop().await.expect("drop");
    coll.insert_many((0..DOCS).map(sample_doc))
        .await
        .expect("load");
    client.shutdown().await;
}

/// A new driver client, authenticated if the URI has credentials, and its first `find`
/// batch; the client is shut down untimed.
async fn connect_and_find(uri: &str) -> Duration {
    let started = Instant::now();
    let client = mongodb::Client::with_uri_str(uri).await.expect("client");
    let mut cursor = client
        .database(DB)
        .collection::<Document>(COLL)
        .find(doc! {})
        .await
        .expect("find");
    assert!(cursor.advance().await.expect("first batch"), "no documents");
    let took = started.elapsed();
    drop(cursor);
    client.shutdown().await;
    took
}
