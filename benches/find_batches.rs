//! Find batches: the latency of reading one page of N documents by `_id` — the keyset
//! pagination query `find({_id: {$gte: r}}).sort({_id: 1}).limit(N)` with a batch of N, so one
//! round trip — from a collection of `DOCGATE_BENCH_DOCS` (10,000) documents of ~200 bytes,
//! for each N in `DOCGATE_BENCH_BATCHES` (1,10,100,1000), three ways, interleaved:
//!
//! - (a) docgate with the `mongodb` driver (which decodes every document it receives);
//! - (a') docgate with the thin wire client (`common::wire_client`: the reply stays bytes);
//! - (c) raw SQL: the prepared `SELECT doc FROM <table> WHERE k >= ? ORDER BY k LIMIT N` on
//!   the same table (rusqlite or tokio-postgres), the rows docgate reads.
//!
//! What grows with N is the work per document: docgate passes the stored bytes through
//! without decoding them, so a'/c should stay near its N = 1 value as N grows.
//!
//! `DOCGATE_BENCH_PAGES` (2,000) rounds per N, each timing every side once in rotating
//! order, after 100 warm-up rounds. Printed per backend: p50/p95/mean in microseconds,
//! documents per second, and the ratios a/c and a'/c per N. Nothing is asserted but the
//! answers (every page has its N documents, in order).
//!
//! Run: `cargo bench --bench find_batches` (`DOCGATE_BENCH_PG=0` for SQLite only;
//! `DOCGATE_BENCH_CPUS=0` pins everything to one CPU, see `common/mod.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use common::raw_sql::{Param, RawSql};
use common::wire_client::{first_batch, WireClient};
use common::{
    backends, connect_pg, env_usize, load_sample_docs, pg_table, print_table, ratio, sqlite_table,
    summarize, us, Backend, Rng, Server, BENCH_PASSWORD, BENCH_USER,
};
use docgate::query::encode_key;
use futures_util::TryStreamExt;

const DB: &str = "bench";
const COLL: &str = "find_batches";
const WARMUP: usize = 100;
const SIDES: [&str; 3] = [
    "(a) docgate, mongodb driver",
    "(a') docgate, thin wire client",
    "(c) raw SQL prepared SELECT",
];

/// `DOCGATE_BENCH_BATCHES`: comma-separated page sizes.
fn batch_sizes() -> Vec<usize> {
    let list = std::env::var("DOCGATE_BENCH_BATCHES").unwrap_or_else(|_| "1,10,100,1000".into());
    list.split(',')
        .map(|n| {
            n.trim()
                .parse()
                .unwrap_or_else(|_| panic!("DOCGATE_BENCH_BATCHES: {n:?} is not a number"))
        })
        .collect()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let docs = env_usize("DOCGATE_BENCH_DOCS", 10_000);
    let pages = env_usize("DOCGATE_BENCH_PAGES", 2_000);
    let sizes = batch_sizes();
    assert!(
        sizes.iter().all(|&n| n >= 1 && n < docs),
        "page sizes must be between 1 and the document count"
    );
    let dir = tempfile::Builder::new()
        .prefix("docgate-bench-batches-")
        .tempdir()
        .expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!(
        "find_batches: {docs} documents, pages of {sizes:?} by _id, {pages} pages per side and size (+{WARMUP} warm-up)"
    );
    for backend in &backends {
        run(backend, dir.path(), docs, pages, &sizes).await;
    }
}

async fn run(backend: &Backend, dir: &std::path::Path, docs: usize, pages: usize, sizes: &[usize]) {
    let server = Server::start(backend, dir, &[]);
    let client = server.client().await;
    let coll = client.database(DB).collection::<Document>(COLL);
    load_sample_docs(&coll, docs).await;
    let mut wire = WireClient::connect_as(server.port, BENCH_USER, BENCH_PASSWORD).await;
    let mut raw = Vec::new();
    for &n in sizes {
        raw.push(match backend {
            Backend::Sqlite { .. } => {
                let table = sqlite_table(&common::open_sqlite(&backend.sqlite_file()), DB, COLL);
                let sql = format!("SELECT doc FROM {table} WHERE k >= ?1 ORDER BY k LIMIT {n}");
                RawSql::sqlite(&backend.sqlite_file(), sql)
            }
            Backend::Postgres { url } => {
                let table = pg_table(&connect_pg(url).await, DB, COLL).await;
                let sql = format!("SELECT doc FROM {table} WHERE k >= $1 ORDER BY k LIMIT {n}");
                RawSql::postgres(&url.parse().expect("PostgreSQL URL"), &sql).await
            }
        });
    }

    let mut rng = Rng::new(0x5eed);
    let mut rows = Vec::new();
    for (&n, raw) in sizes.iter().zip(&raw) {
        let mut samples: [Vec<Duration>; 3] = Default::default();
        for round in 0..WARMUP + pages {
            let first = rng.below((docs - n) as u64) as i64;
            for step in 0..SIDES.len() {
                let side = (round + step) % SIDES.len();
                let started = Instant::now();
                let ids: Vec<i64> = match side {
                    0 => coll
                        .find(doc! {"_id": {"$gte": first}})
                        .sort(doc! {"_id": 1})
                        .limit(n as i64)
                        .batch_size(n as u32)
                        .await
                        .expect("find")
                        .try_collect::<Vec<Document>>()
                        .await
                        .expect("page")
                        .iter()
                        .map(|d| d.get_i64("_id").expect("_id"))
                        .collect(),
                    1 => {
                        let reply = wire
                            .command(doc! {
                                "find": COLL, "filter": {"_id": {"$gte": first}},
                                "sort": {"_id": 1}, "limit": n as i64, "batchSize": n as i64,
                                "singleBatch": true, "$db": DB,
                            })
                            .await;
                        first_batch(reply)
                            .iter()
                            .map(|d| d.get_i64("_id").expect("_id"))
                            .collect()
                    }
                    _ => {
                        let key = Param::Bytes(encode_key(&Bson::Int64(first)));
                        raw.docs(&key)
                            .await
                            .iter()
                            .map(|bytes| {
                                bson::RawDocument::from_bytes(bytes)
                                    .and_then(|d| d.get_i64("_id"))
                                    .expect("_id")
                            })
                            .collect()
                    }
                };
                let elapsed = started.elapsed();
                let expected: Vec<i64> = (first..first + n as i64).collect();
                assert_eq!(ids, expected, "{} answered another page", SIDES[side]);
                if round >= WARMUP {
                    samples[side].push(elapsed);
                }
            }
        }
        let stats: Vec<_> = samples.iter().map(|s| summarize(s)).collect();
        for (label, s) in SIDES.iter().zip(&stats) {
            rows.push(vec![
                format!("N={n} {label}"),
                us(s.p50),
                us(s.p95),
                us(s.mean),
                format!("{:.0}", n as f64 / s.mean.as_secs_f64()),
            ]);
        }
        for (label, over) in [("a/c", 0), ("a'/c", 1)] {
            rows.push(vec![
                format!("N={n} ratio {label}"),
                ratio(stats[over].p50, stats[2].p50),
                ratio(stats[over].p95, stats[2].p95),
                ratio(stats[over].mean, stats[2].mean),
                String::new(),
            ]);
        }
    }
    println!();
    println!("backend: {}", backend.name());
    print_table(&["side", "p50 us", "p95 us", "mean us", "docs/s"], &rows);
    client.shutdown().await;
    drop(server);
}
