//! Cursor stream (issue 15): how soon the first batch of a large `find({})` arrives and how
//! long the whole result takes to drain, docgate against the same rows read with raw SQL,
//! and how much memory docgate needs for it.
//!
//! A collection of `DOCGATE_BENCH_DOCS` (1,000,000) documents of ~200 bytes
//! (`common::sample_doc`), loaded through docgate with `insert_many` in batches of 10,000
//! (progress and load time printed). The server is then restarted on the same data, so its
//! peak RSS (`VmHWM`) covers the reads only. Every round times each side once, in rotating
//! order, over `DOCGATE_BENCH_ROUNDS` (3) rounds:
//!
//! - (a) the `mongodb` driver: `find({})` with the default batch size (101), then every
//!   `getMore` (no `batchSize`: up to 16 MiB each) as the cursor is iterated; first = until
//!   the driver has the first batch, drain = until the cursor is exhausted;
//! - (a') the thin wire client (`common::wire_client`, replies stay bytes): the same `find`
//!   and `getMore` commands;
//! - (c) raw SQL on docgate's table in docgate's natural order (SQLite `ORDER BY rowid`,
//!   PostgreSQL `ORDER BY n`, as `src/store/*/sql.rs` order a `find` without a sort),
//!   `SELECT doc FROM <table> ORDER BY …` streamed row by row (rusqlite steps, tokio-postgres
//!   `query_raw`); first = the first row, drain = the last row.
//!
//! Printed per backend: mean and best milliseconds to the first batch / row and to drain,
//! documents per second of the drain, the ratios a/c and a'/c, docgate's RSS before the
//! reads and its peak RSS after all drains. Nothing is asserted but the answers (every side
//! returns every document).
//!
//! Run: `cargo bench --bench cursor_stream` (`DOCGATE_BENCH_PG=0` for SQLite only;
//! `DOCGATE_BENCH_DOCS=100000` for a quick run).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use bson::{doc, Document, RawDocument};
use common::wire_client::WireClient;
use common::{
    backends, connect_pg, env_usize, load_with_progress, ms, open_sqlite, pg_table, print_table,
    proc_status_kib, ratio, sqlite_table, Backend, Server, BENCH_PASSWORD, BENCH_USER,
};
use futures_util::TryStreamExt;

const DB: &str = "bench";
const COLL: &str = "cursor_stream";
const LOAD_BATCH: usize = 10_000;
const SIDES: [&str; 3] = [
    "(a) docgate, mongodb driver",
    "(a') docgate, thin wire client",
    "(c) raw SQL, streamed",
];

/// Time to the first batch (or row) and to the end of one read, and the documents read.
#[derive(Clone, Copy, Debug)]
struct Read {
    first: Duration,
    drain: Duration,
    docs: usize,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let docs = env_usize("DOCGATE_BENCH_DOCS", 1_000_000);
    let rounds = env_usize("DOCGATE_BENCH_ROUNDS", 3).max(1);
    let dir = tempfile::Builder::new()
        .prefix("docgate-bench-stream-")
        .tempdir()
        .expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!(
        "cursor_stream: find({{}}) over {docs} documents of ~200 bytes, default batch size, {rounds} round(s)"
    );
    for backend in &backends {
        run(backend, dir.path(), docs, rounds).await;
    }
}

async fn run(backend: &Backend, dir: &Path, docs: usize, rounds: usize) {
    load(backend, dir, docs).await;

    // A fresh process on the loaded data: its VmHWM is the reads' peak.
    let server = Server::start(backend, dir, &[]);
    let client = server.client().await;
    let coll = client.database(DB).collection::<Document>(COLL);
    let mut wire = WireClient::connect_as(server.port, BENCH_USER, BENCH_PASSWORD).await;
    let raw = RawScan::open(backend).await;
    let rss_before = proc_status_kib(server.pid(), "VmRSS:");

    let mut reads: [Vec<Read>; 3] = Default::default();
    for round in 0..rounds {
        for step in 0..SIDES.len() {
            let side = (round + step) % SIDES.len();
            let read = match side {
                0 => driver_read(&coll).await,
                1 => wire_read(&mut wire).await,
                _ => raw.read().await,
            };
            assert_eq!(read.docs, docs, "{} read another result", SIDES[side]);
            reads[side].push(read);
        }
    }
    let peak = proc_status_kib(server.pid(), "VmHWM:");

    let mean = |rs: &[Read], f: fn(&Read) -> Duration| {
        rs.iter().map(f).sum::<Duration>() / rs.len() as u32
    };
    let best = |rs: &[Read], f: fn(&Read) -> Duration| rs.iter().map(f).min().unwrap_or_default();
    let first = |r: &Read| r.first;
    let drain = |r: &Read| r.drain;
    let mut rows = Vec::new();
    for (label, rs) in SIDES.iter().zip(&reads) {
        rows.push(vec![
            label.to_string(),
            ms(mean(rs, first)),
            ms(best(rs, first)),
            ms(mean(rs, drain)),
            ms(best(rs, drain)),
            format!("{:.0}", docs as f64 / mean(rs, drain).as_secs_f64()),
        ]);
    }
    for (label, side) in [("ratio a/c", 0), ("ratio a'/c", 1)] {
        rows.push(vec![
            label.to_string(),
            ratio(mean(&reads[side], first), mean(&reads[2], first)),
            ratio(best(&reads[side], first), best(&reads[2], first)),
            ratio(mean(&reads[side], drain), mean(&reads[2], drain)),
            ratio(best(&reads[side], drain), best(&reads[2], drain)),
            String::new(),
        ]);
    }
    println!();
    println!("backend: {}", backend.name());
    print_table(
        &[
            "side",
            "first ms",
            "first best",
            "drain ms",
            "drain best",
            "docs/s",
        ],
        &rows,
    );
    println!(
        "docgate RSS before the reads: {} MB; peak RSS (VmHWM) after {} drains: {} MB",
        rss_before / 1024,
        rounds * 2,
        peak / 1024
    );
    client.shutdown().await;
    drop(server);
}

/// Loads `docs` sample documents through a server of its own, printing progress.
async fn load(backend: &Backend, dir: &Path, docs: usize) {
    let server = Server::start(backend, dir, &[]);
    let client = server.client().await;
    let coll = client.database(DB).collection::<Document>(COLL);
    let elapsed = load_with_progress(&coll, docs, LOAD_BATCH, backend.name()).await;
    println!(
        "{}: loaded {docs} documents in {:.1} s",
        backend.name(),
        elapsed.as_secs_f64()
    );
    client.shutdown().await;
    drop(server);
}

/// (a): the driver iterates the whole cursor, looking at each document's bytes.
async fn driver_read(coll: &mongodb::Collection<Document>) -> Read {
    let started = Instant::now();
    let mut cursor = coll.find(doc! {}).await.expect("find");
    let first = started.elapsed();
    let mut docs = 0;
    let mut bytes = 0;
    while cursor.advance().await.expect("advance") {
        bytes += cursor.current().as_bytes().len();
        docs += 1;
    }
    assert!(bytes > docs, "documents have bytes");
    Read {
        first,
        drain: started.elapsed(),
        docs,
    }
}

/// (a'): `find` and `getMore` commands on the thin client; the batches stay bytes.
async fn wire_read(wire: &mut WireClient) -> Read {
    let started = Instant::now();
    let reply = wire.command(doc! {"find": COLL, "$db": DB}).await;
    let (mut id, mut docs) = batch_of(reply, "firstBatch");
    let first = started.elapsed();
    while id != 0 {
        let reply = wire
            .command(doc! {"getMore": id, "collection": COLL, "$db": DB})
            .await;
        let (next, n) = batch_of(reply, "nextBatch");
        id = next;
        docs += n;
    }
    Read {
        first,
        drain: started.elapsed(),
        docs,
    }
}

/// The cursor id and the number of documents of a cursor reply's `key` batch.
fn batch_of(reply: &RawDocument, key: &str) -> (i64, usize) {
    let cursor = reply.get_document("cursor").expect("cursor");
    let id = cursor.get_i64("id").expect("cursor id");
    let n = cursor.get_array(key).expect("batch").into_iter().count();
    (id, n)
}

/// (c): the natural-order scan of docgate's table with the backend's own client.
enum RawScan {
    Sqlite {
        conn: rusqlite::Connection,
        sql: String,
    },
    Postgres {
        client: tokio_postgres::Client,
        stmt: tokio_postgres::Statement,
    },
}

impl RawScan {
    async fn open(backend: &Backend) -> RawScan {
        match backend {
            Backend::Sqlite { .. } => {
                let conn = open_sqlite(&backend.sqlite_file());
                let table = sqlite_table(&conn, DB, COLL);
                let sql = format!("SELECT doc FROM {table} ORDER BY rowid");
                conn.prepare_cached(&sql).expect("prepare");
                RawScan::Sqlite { conn, sql }
            }
            Backend::Postgres { url } => {
                let client = connect_pg(url).await;
                let table = pg_table(&client, DB, COLL).await;
                let stmt = client
                    .prepare(&format!("SELECT doc FROM {table} ORDER BY n"))
                    .await
                    .expect("prepare");
                RawScan::Postgres { client, stmt }
            }
        }
    }

    /// Reads every row, looking at each `doc`'s bytes.
    async fn read(&self) -> Read {
        let started = Instant::now();
        let mut first = None;
        let mut docs = 0;
        let mut bytes = 0;
        match self {
            RawScan::Sqlite { conn, sql } => {
                let mut stmt = conn.prepare_cached(sql).expect("prepare");
                let mut rows = stmt.query([]).expect("query");
                while let Some(row) = rows.next().expect("row") {
                    first.get_or_insert_with(|| started.elapsed());
                    bytes += row.get_ref(0).expect("doc").as_blob().expect("blob").len();
                    docs += 1;
                }
            }
            RawScan::Postgres { client, stmt } => {
                let rows = client
                    .query_raw(stmt, std::iter::empty::<i32>())
                    .await
                    .expect("query");
                let mut rows = std::pin::pin!(rows);
                while let Some(row) = rows.try_next().await.expect("row") {
                    first.get_or_insert_with(|| started.elapsed());
                    bytes += row.get::<_, &[u8]>(0).len();
                    docs += 1;
                }
            }
        }
        assert!(bytes > docs, "rows have bytes");
        Read {
            first: first.unwrap_or_else(|| started.elapsed()),
            drain: started.elapsed(),
            docs,
        }
    }
}
