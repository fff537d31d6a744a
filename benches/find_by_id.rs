//! Find by `_id`: the latency of one lookup of a random `_id` in a collection of
//! `DOCGATE_BENCH_DOCS` (10,000) documents, three ways, interleaved in one run:
//!
//! - (a) docgate over the wire: the `mongodb` driver's `find_one({_id})` against the real
//!   release binary (wire protocol, command layer with its authorization check, catalog,
//!   planner, store, backend), signed in as a user like a production application;
//! - (b) the store in-process: a `docgate::store` session's `scan(KeyEquals, limit 1)` on the
//!   same table — the request the planner makes for `find_one` (pool checkout and the store's
//!   SQL, no wire protocol or command layer);
//! - (c) raw SQL: a prepared `SELECT doc FROM <table> WHERE k = ?` with rusqlite or
//!   tokio-postgres on the same table;
//! - (d) for reference, the driver's `ping` command to docgate: the floor of one round trip
//!   through the driver, the wire protocol and command dispatch, with no store access.
//!
//! Each of `DOCGATE_BENCH_LOOKUPS` (10,000) rounds times one lookup per side, rotating which
//! side goes first; a warm-up of 200 rounds is not counted. Printed per backend: p50/p95/mean
//! in microseconds and the ratios a/b and a/c. The issue target is a/c (and a/b) within
//! 1.10x; nothing is asserted. SQLite always; PostgreSQL as described in `common/mod.rs`.
//!
//! Run: `cargo bench --bench find_by_id` (`DOCGATE_BENCH_PG=0` for SQLite only).

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use common::{
    backends, connect_pg, env_usize, open_sqlite, pg_table, print_table, ratio, sample_doc,
    sqlite_table, summarize, us, Backend, Rng, Server,
};
use docgate::query::keys::encode_key;
use docgate::store::postgres::{PostgresOptions, PostgresStore};
use docgate::store::sqlite::{SqliteOptions, SqliteStore};
use docgate::store::{CollectionRecord, Predicate, ScanRequest, Store};

const DB: &str = "bench";
const COLL: &str = "find_by_id";
const WARMUP: usize = 200;

/// The raw-SQL side: one connection and its prepared lookup.
enum Raw {
    Sqlite {
        conn: rusqlite::Connection,
        sql: String,
    },
    Postgres {
        client: tokio_postgres::Client,
        stmt: tokio_postgres::Statement,
    },
}

impl Raw {
    async fn lookup(&self, key: &[u8]) -> Option<Vec<u8>> {
        match self {
            Raw::Sqlite { conn, sql } => {
                let mut stmt = conn.prepare_cached(sql).expect("prepare");
                let mut rows = stmt.query([key]).expect("query");
                rows.next().expect("row").map(|r| r.get(0).expect("doc"))
            }
            Raw::Postgres { client, stmt } => client
                .query_opt(stmt, &[&key])
                .await
                .expect("query")
                .map(|r| r.get(0)),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
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
    coll.drop().await.expect("drop");
    let all: Vec<Document> = (0..docs as i64).map(sample_doc).collect();
    for chunk in all.chunks(1000) {
        coll.insert_many(chunk.to_vec()).await.expect("load");
    }

    let (store, raw): (Box<dyn Store>, Raw) = match backend {
        Backend::Sqlite { dir } => {
            let store = SqliteStore::open(dir, SqliteOptions::default()).expect("open store");
            let conn = open_sqlite(&backend.sqlite_file());
            let table = sqlite_table(&conn, DB, COLL);
            let sql = format!("SELECT doc FROM {table} WHERE k = ?1");
            (Box::new(store), Raw::Sqlite { conn, sql })
        }
        Backend::Postgres { url } => {
            let store = PostgresStore::connect(url, PostgresOptions::default())
                .await
                .expect("connect store");
            let client = connect_pg(url).await;
            let table = pg_table(&client, DB, COLL).await;
            let stmt = client
                .prepare(&format!("SELECT doc FROM {table} WHERE k = $1"))
                .await
                .expect("prepare");
            (Box::new(store), Raw::Postgres { client, stmt })
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

    let mut rng = Rng::new(0x5eed);
    let admin = client.database("admin");
    let mut samples: [Vec<Duration>; 4] = Default::default();
    for round in 0..WARMUP + lookups {
        let id = rng.below(docs as u64) as i64;
        for step in 0..4 {
            let side = (round + step) % 4;
            let started = Instant::now();
            let found_id = match side {
                0 => coll
                    .find_one(doc! { "_id": id })
                    .await
                    .expect("find_one")
                    .and_then(|d| d.get_i64("_id").ok()),
                1 => {
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
                2 => {
                    let key = encode_key(&Bson::Int64(id));
                    raw.lookup(&key).await.map(|_| id)
                }
                _ => {
                    admin.run_command(doc! { "ping": 1 }).await.expect("ping");
                    Some(id)
                }
            };
            let elapsed = started.elapsed();
            assert_eq!(found_id, Some(id), "side {side} did not find _id {id}");
            if round >= WARMUP {
                samples[side].push(elapsed);
            }
        }
    }

    let names = [
        "(a) docgate find_one over the wire",
        "(b) store session scan(KeyEquals)",
        "(c) raw SQL prepared SELECT",
        "(d) docgate ping over the wire (floor)",
    ];
    let stats: Vec<_> = samples.iter().map(|s| summarize(s)).collect();
    let mut rows: Vec<Vec<String>> = names
        .iter()
        .zip(&stats)
        .map(|(name, s)| {
            vec![
                name.to_string(),
                us(s.p50),
                us(s.p95),
                us(s.mean),
                format!("{:.0}", 1.0 / s.mean.as_secs_f64()),
            ]
        })
        .collect();
    for (label, base) in [("ratio a/b", &stats[1]), ("ratio a/c", &stats[2])] {
        let a = &stats[0];
        rows.push(vec![
            label.to_string(),
            ratio(a.p50, base.p50),
            ratio(a.p95, base.p95),
            ratio(a.mean, base.mean),
            String::new(),
        ]);
    }
    println!();
    println!("backend: {}", backend.name());
    print_table(&["side", "p50 us", "p95 us", "mean us", "ops/s"], &rows);
    client.shutdown().await;
    drop(server);
}
