//! Connect latency: the time from "no connection" to the first `find` result, over
//! `DOCGATE_BENCH_CONNECTIONS` (200) fresh connections per side, interleaved in one run:
//!
//! - docgate: a new `mongodb::Client` (directConnection), then `find({})` on a 10-document
//!   collection up to its first batch. With the Rust driver this is two TCP connections and
//!   two handshakes (the monitor's `hello`, then the pooled connection's `hello`) before the
//!   `find` itself — what an application that opens a client pays. Each client is shut down
//!   (untimed) before the next.
//! - backend direct: a new connection to the same backend and the same rows read with SQL
//!   (SQLite: `rusqlite::Connection::open` + `SELECT doc FROM t`; PostgreSQL:
//!   `tokio_postgres::connect` + `SELECT doc FROM t ORDER BY n`).
//!
//! Printed per backend: p50/p95/mean in microseconds and the ratio docgate/direct. Auth is
//! off: docgate has no authentication yet, so only the "auth off" column is measured; the
//! SCRAM-SHA-256 / PLAIN columns come with the auth capability. Nothing is asserted.
//!
//! Run: `cargo bench --bench connect_latency` (`DOCGATE_BENCH_PG=0` for SQLite only).

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use bson::{doc, Document};
use common::{
    backends, env_usize, pg_table, print_table, ratio, sample_doc, sqlite_table, summarize, us,
    Backend, Server,
};

const DB: &str = "bench";
const COLL: &str = "connect";
const DOCS: i64 = 10;
const WARMUP: usize = 10;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let connections = env_usize("DOCGATE_BENCH_CONNECTIONS", 200).max(1);
    let dir = tempfile::Builder::new()
        .prefix("docgate-bench-connect-")
        .tempdir()
        .expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!(
        "connect_latency: {connections} new connections per side (+{WARMUP} warm-up), first find of {DOCS} documents"
    );
    println!(
        "note: auth off only; docgate has no authentication yet. The SCRAM-SHA-256 and PLAIN \
         (auth on) columns come with the auth capability."
    );
    for backend in &backends {
        run(backend, dir.path(), connections).await;
    }
}

async fn run(backend: &Backend, dir: &std::path::Path, connections: usize) {
    let server = Server::start(backend, dir, &[]);
    let uri = server.uri("");
    {
        let client = server.client().await;
        let coll = client.database(DB).collection::<Document>(COLL);
        coll.drop().await.expect("drop");
        coll.insert_many((0..DOCS).map(sample_doc))
            .await
            .expect("load");
        client.shutdown().await;
    }
    let table = match backend {
        Backend::Sqlite { .. } => {
            let conn = rusqlite::Connection::open(backend.sqlite_file()).expect("open");
            sqlite_table(&conn, DB, COLL)
        }
        Backend::Postgres { url } => {
            let client = common::connect_pg(url).await;
            pg_table(&client, DB, COLL).await
        }
    };

    let mut samples: [Vec<Duration>; 2] = Default::default();
    for round in 0..WARMUP + connections {
        for step in 0..2 {
            let side = (round + step) % 2;
            let took = if side == 0 {
                docgate_once(&uri).await
            } else {
                direct_once(backend, &table).await
            };
            if round >= WARMUP {
                samples[side].push(took);
            }
        }
    }

    let wire = summarize(&samples[0]);
    let direct = summarize(&samples[1]);
    let rows = vec![
        vec![
            "docgate: new client + hello + find (auth off)".to_string(),
            us(wire.p50),
            us(wire.p95),
            us(wire.mean),
        ],
        vec![
            format!("{} direct: connect + SELECT", backend.name()),
            us(direct.p50),
            us(direct.p95),
            us(direct.mean),
        ],
        vec![
            "ratio docgate/direct".to_string(),
            ratio(wire.p50, direct.p50),
            ratio(wire.p95, direct.p95),
            ratio(wire.mean, direct.mean),
        ],
    ];
    println!();
    println!("backend: {}", backend.name());
    print_table(&["side", "p50 us", "p95 us", "mean us"], &rows);
    drop(server);
}

/// A new driver client and its first `find` batch; the client is shut down untimed.
async fn docgate_once(uri: &str) -> Duration {
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

/// A new backend connection and the same rows read with SQL.
async fn direct_once(backend: &Backend, table: &str) -> Duration {
    match backend {
        Backend::Sqlite { .. } => {
            let file = backend.sqlite_file();
            let started = Instant::now();
            let conn = rusqlite::Connection::open(&file).expect("open");
            let rows: Vec<Vec<u8>> = {
                let mut stmt = conn
                    .prepare(&format!("SELECT doc FROM {table}"))
                    .expect("prepare");
                let rows = stmt.query_map([], |r| r.get(0)).expect("select");
                rows.collect::<Result<_, _>>().expect("rows")
            };
            let took = started.elapsed();
            assert_eq!(rows.len() as i64, DOCS);
            took
        }
        Backend::Postgres { url } => {
            let started = Instant::now();
            let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                .await
                .expect("connect");
            let driver = tokio::spawn(connection);
            let rows = client
                .query(&format!("SELECT doc FROM {table} ORDER BY n"), &[])
                .await
                .expect("select");
            let took = started.elapsed();
            assert_eq!(rows.len() as i64, DOCS);
            drop(client);
            let _ = driver.await;
            took
        }
    }
}
