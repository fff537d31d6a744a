//! Find by `_id`: the latency of one lookup of a random `_id` in a collection of
//! `DOCGATE_BENCH_DOCS` (10,000) documents, measured several ways, interleaved in one run:
//!
//! - (a) docgate over the wire with the `mongodb` driver's `find_one({_id})`, against the real
//!   release binary (wire protocol, command layer with its authorization check, catalog,
//!   planner, store, backend), signed in as a user like a production application;
//! - (a') the same `find` through a thin wire client (`common::wire_client`: docgate's codec
//!   on one socket, signed in with PLAIN), which adds as little of its own as tokio-postgres
//!   does on the SQL side — (a) − (a') is what the driver itself costs;
//! - (b) the store in-process: a `docgate::store` session's `scan(KeyEquals, limit 1)` on the
//!   same table — the request the planner makes for `find_one` (pool checkout and the store's
//!   SQL, no wire protocol or command layer);
//! - (c) raw SQL: a prepared `SELECT doc FROM <table> WHERE k = ?` with rusqlite or
//!   tokio-postgres on the same table;
//! - (c') PostgreSQL only: the same raw SQL through a relay process that only passes bytes on
//!   (`common::relay`) — the floor of any proxy, docgate or another, on this machine;
//! - (d) / (d') for reference, `ping` with the driver and with the thin client: one round
//!   trip through the wire protocol and command dispatch, with no store access.
//!
//! Each of `DOCGATE_BENCH_LOOKUPS` (10,000) rounds times one lookup per side, rotating which
//! side goes first; a warm-up of 200 rounds is not counted. Printed per backend: p50/p95/mean
//! in microseconds and ratios. The ratio is a/c; a'/c is the same with thin clients
//! on both sides, c'/c what any process in the middle costs, and a'/c' docgate against that
//! floor. Nothing is asserted. SQLite always; PostgreSQL as described in `common/mod.rs`.
//!
//! Run: `cargo bench --bench find_by_id` (`DOCGATE_BENCH_PG=0` for SQLite only;
//! `DOCGATE_BENCH_SIDES=a',c` runs only the sides named, e.g. to profile one of them;
//! `DOCGATE_BENCH_CPUS=0` pins everything to one CPU, see `common/mod.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use common::raw_sql::{Param, RawSql};
use common::relay::{self, Relay};
use common::wire_client::{first_batch, WireClient};
use common::{
    backends, connect_pg, env_usize, load_sample_docs, open_sqlite, pg_table, print_table, ratio,
    sqlite_table, summarize, us, Backend, Rng, Server, BENCH_PASSWORD, BENCH_USER,
};
use docgate::query::encode_key;
use docgate::store::postgres::{PostgresOptions, PostgresStore};
use docgate::store::sqlite::{SqliteOptions, SqliteStore};
use docgate::store::{CollectionRecord, Predicate, ScanRequest, Store};

const DB: &str = "bench";
const COLL: &str = "find_by_id";
const WARMUP: usize = 200;

/// The ways one lookup is measured (see the module comment).
#[derive(Clone, Copy, PartialEq)]
enum Side {
    DriverFind,
    WireFind,
    Store,
    RawSql,
    RawSqlViaRelay,
    DriverPing,
    WirePing,
}

impl Side {
    /// The letter the module comment and `DOCGATE_BENCH_SIDES` use.
    fn letter(self) -> &'static str {
        match self {
            Side::DriverFind => "a",
            Side::WireFind => "a'",
            Side::Store => "b",
            Side::RawSql => "c",
            Side::RawSqlViaRelay => "c'",
            Side::DriverPing => "d",
            Side::WirePing => "d'",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Side::DriverFind => "(a) docgate find_one, mongodb driver",
            Side::WireFind => "(a') docgate find, thin wire client",
            Side::Store => "(b) store session scan(KeyEquals)",
            Side::RawSql => "(c) raw SQL prepared SELECT",
            Side::RawSqlViaRelay => "(c') raw SQL through a do-nothing relay",
            Side::DriverPing => "(d) docgate ping, mongodb driver",
            Side::WirePing => "(d') docgate ping, thin wire client",
        }
    }
}

fn main() {
    relay::serve_if_asked();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(run_all());
}

async fn run_all() {
    let docs = env_usize("DOCGATE_BENCH_DOCS", 10_000);
    let lookups = env_usize("DOCGATE_BENCH_LOOKUPS", 10_000);
    let dir = tempfile::Builder::new()
        .prefix("docgate-bench-find-")
        .tempdir()
        .expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!(
        "find_by_id: {docs} documents, {lookups} lookups per side (+{WARMUP} warm-up), random _id"
    );
    for backend in &backends {
        run(backend, dir.path(), docs, lookups).await;
    }
}

async fn run(backend: &Backend, dir: &std::path::Path, docs: usize, lookups: usize) {
    let server = Server::start(backend, dir, &[]);
    let client = server.client().await;
    let coll = client.database(DB).collection::<Document>(COLL);
    load_sample_docs(&coll, docs).await;
    let mut wire = WireClient::connect_as(server.port, BENCH_USER, BENCH_PASSWORD).await;

    let (store, raw, relayed): (Box<dyn Store>, RawSql, Option<(RawSql, Relay)>) = match backend {
        Backend::Sqlite { dir } => {
            let store = SqliteStore::open(dir, SqliteOptions::default()).expect("open store");
            let table = sqlite_table(&open_sqlite(&backend.sqlite_file()), DB, COLL);
            let sql = format!("SELECT doc FROM {table} WHERE k = ?1");
            let raw = RawSql::sqlite(&backend.sqlite_file(), sql);
            (Box::new(store), raw, None)
        }
        Backend::Postgres { url } => {
            let store = PostgresStore::connect(url, PostgresOptions::default())
                .await
                .expect("connect store");
            let table = pg_table(&connect_pg(url).await, DB, COLL).await;
            let sql = format!("SELECT doc FROM {table} WHERE k = $1");
            let direct: tokio_postgres::Config = url.parse().expect("PostgreSQL URL");
            let relay = Relay::start(&postgres_address(&direct));
            let raw = RawSql::postgres(&direct, &sql).await;
            let relayed = RawSql::postgres(&through_relay(&direct, relay.port), &sql).await;
            (Box::new(store), raw, Some((relayed, relay)))
        }
    };
    let record: CollectionRecord = store
        .session()
        .await
        .expect("session")
        .list_collections()
        .await
        .expect("list")
        .into_iter()
        .find(|c| c.db == DB && c.name == COLL)
        .expect("collection record");

    let mut sides = vec![
        Side::DriverFind,
        Side::WireFind,
        Side::Store,
        Side::RawSql,
        Side::DriverPing,
        Side::WirePing,
    ];
    if relayed.is_some() {
        sides.insert(4, Side::RawSqlViaRelay);
    }
    if let Ok(only) = std::env::var("DOCGATE_BENCH_SIDES") {
        let only: Vec<&str> = only.split(',').map(str::trim).collect();
        sides.retain(|side| only.contains(&side.letter()));
        assert!(
            !sides.is_empty(),
            "DOCGATE_BENCH_SIDES={only:?} names no side"
        );
    }
    let mut rng = Rng::new(0x5eed);
    let admin = client.database("admin");
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(lookups); sides.len()];
    for round in 0..WARMUP + lookups {
        let id = rng.below(docs as u64) as i64;
        for step in 0..sides.len() {
            let index = (round + step) % sides.len();
            let side = sides[index];
            let started = Instant::now();
            let found_id = match side {
                Side::DriverFind => coll
                    .find_one(doc! { "_id": id })
                    .await
                    .expect("find_one")
                    .and_then(|d| d.get_i64("_id").ok()),
                Side::WireFind => {
                    let reply = wire
                        .command(doc! {
                            "find": COLL, "filter": {"_id": id}, "limit": 1,
                            "singleBatch": true, "$db": DB,
                        })
                        .await;
                    first_batch(reply)
                        .first()
                        .and_then(|d| d.get_i64("_id").ok())
                }
                Side::Store => {
                    let key = encode_key(&Bson::Int64(id));
                    let mut session = store.session().await.expect("session");
                    // What the planner asks for on `find_one` (`limit: 1`).
                    let request = ScanRequest {
                        filter: Predicate::KeyEquals(key),
                        limit: Some(1),
                        ..ScanRequest::all()
                    };
                    let rows = session.scan(&record, &request).await.expect("scan");
                    rows.first().map(|_| id)
                }
                Side::RawSql => {
                    let key = Param::Bytes(encode_key(&Bson::Int64(id)));
                    raw.docs(&key).await.first().map(|_| id)
                }
                Side::RawSqlViaRelay => {
                    let key = Param::Bytes(encode_key(&Bson::Int64(id)));
                    let (relayed, _) = relayed.as_ref().expect("relay side on PostgreSQL");
                    relayed.docs(&key).await.first().map(|_| id)
                }
                Side::DriverPing => {
                    admin.run_command(doc! { "ping": 1 }).await.expect("ping");
                    Some(id)
                }
                Side::WirePing => {
                    wire.command(doc! { "ping": 1, "$db": "admin" }).await;
                    Some(id)
                }
            };
            let elapsed = started.elapsed();
            assert_eq!(found_id, Some(id), "{} did not find _id {id}", side.label());
            if round >= WARMUP {
                samples[index].push(elapsed);
            }
        }
    }

    let stats: Vec<_> = samples.iter().map(|s| summarize(s)).collect();
    let of = |side: Side| sides.iter().position(|s| *s == side).map(|i| &stats[i]);
    let mut rows: Vec<Vec<String>> = sides
        .iter()
        .zip(&stats)
        .map(|(side, s)| {
            vec![
                side.label().to_string(),
                us(s.p50),
                us(s.p95),
                us(s.mean),
                format!("{:.0}", 1.0 / s.mean.as_secs_f64()),
            ]
        })
        .collect();
    let ratios = [
        (
            "ratio a/c (the issue's: driver vs direct SQL)",
            Side::DriverFind,
            Side::RawSql,
        ),
        (
            "ratio a'/c (thin clients on both sides)",
            Side::WireFind,
            Side::RawSql,
        ),
        (
            "ratio c'/c (any process in the middle)",
            Side::RawSqlViaRelay,
            Side::RawSql,
        ),
        (
            "ratio a'/c' (docgate vs a do-nothing relay)",
            Side::WireFind,
            Side::RawSqlViaRelay,
        ),
        (
            "ratio a'/d' (find vs ping, thin client)",
            Side::WireFind,
            Side::WirePing,
        ),
        (
            "ratio a/a' (what the driver adds)",
            Side::DriverFind,
            Side::WireFind,
        ),
    ];
    for (label, over, under) in ratios {
        if let (Some(a), Some(b)) = (of(over), of(under)) {
            rows.push(vec![
                label.to_string(),
                ratio(a.p50, b.p50),
                ratio(a.p95, b.p95),
                ratio(a.mean, b.mean),
                String::new(),
            ]);
        }
    }
    println!();
    println!("backend: {}", backend.name());
    print_table(&["side", "p50 us", "p95 us", "mean us", "ops/s"], &rows);
    client.shutdown().await;
    drop(server);
}

/// `host:port` of a PostgreSQL configuration's first TCP host.
fn postgres_address(config: &tokio_postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        _ => "127.0.0.1".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}")
}

/// `config` with its hosts replaced by the relay's `127.0.0.1:port`.
fn through_relay(config: &tokio_postgres::Config, port: u16) -> tokio_postgres::Config {
    let mut relayed = tokio_postgres::Config::new();
    relayed.host("127.0.0.1").port(port);
    if let Some(user) = config.get_user() {
        relayed.user(user);
    }
    if let Some(password) = config.get_password() {
        relayed.password(password);
    }
    if let Some(dbname) = config.get_dbname() {
        relayed.dbname(dbname);
    }
    relayed
}
