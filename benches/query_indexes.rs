//! Query indexes: indexed equality, range and `_id` lookups over
//! `DOCGATE_BENCH_QUERY_DOCS` (1,000,000) small documents `{_id: i, a: i % 1000, b: i, s: "x<i>"}`
//! vs the same query on a collection without secondary indexes, and vs the same read run
//! directly on the backend, SQLite and PostgreSQL side by side.
//!
//! Two collections are loaded through docgate (`insert_many` in batches of 10,000, progress and
//! load time printed): `indexed`, which then gets `createIndexes` on `{a: 1}` and `{b: 1}` (built
//! after the load), and `plain`, which has only its `_id` key. Three queries, each four ways:
//!
//! - `_id`: `find_one({_id: r})` (random `r`);
//! - equality: `find({a: k}).limit(10)` (random `k`; 1 in 1,000 documents match, so without
//!   the index the natural-order scan stops after about `k + 9,000` rows);
//! - range: `find({b: {$gte: x, $lt: x + 10}})` (random `x`; 10 documents; without the index
//!   this reads the whole table).
//!
//! Sides: (a) docgate over the wire on `indexed`; (b) direct on `indexed`; (c) docgate over the
//! wire on `plain`; (d) direct on `plain`. "Direct" is the read docgate's `find` runs, done
//! in-process without the wire protocol or command layer: the filter parsed with
//! `docgate::query::Filter::parse`, planned with `docgate::query::planner::ReadPlan::new`
//! over the collection's indexes from `docgate::catalog::Catalog::collection_info` (so it pushes
//! the same `Predicate`, index range and limit to the store), and executed with
//! `docgate::ops::read::execute` on a `docgate::store` session (the store's own SQL on
//! rusqlite / tokio-postgres, pooled). It is not hand-written SQL; `find_by_id` compares the
//! `_id` lookup with a hand-written prepared `SELECT` as well.
//!
//! Rounds are interleaved: each of `DOCGATE_BENCH_QUERY_LOOKUPS` (300) rounds (+100 warm-up)
//! times (a) and (b) of every query, rotating which goes first; every
//! `LOOKUPS / DOCGATE_BENCH_QUERY_SCANS` (10) rounds also (c) and (d), which scan. Printed per
//! backend and query: p50/p95/mean in microseconds, and the ratios a/c (indexed vs unindexed,
//! over the wire), a/b and c/d (docgate vs direct). Every answer is checked (ids and counts).
//! Nothing is asserted about speed.
//!
//! Duration: loading takes seconds (SQLite ~8 s per collection at 1,000,000 documents,
//! PostgreSQL ~17 s); nearly all of the query time is the unindexed sides (c) and (d), which
//! scan: at 100,000 documents on SQLite an unindexed range took ~70 ms against ~0.3 ms
//! through `b_1` (the two bounds are one index range), and the scans grow with the document
//! count. Lower `DOCGATE_BENCH_QUERY_DOCS` or `DOCGATE_BENCH_QUERY_LOOKUPS` for a quicker run.
//!
//! Run: `cargo bench --bench query_indexes` (`DOCGATE_BENCH_PG=0` for SQLite only;
//! `DOCGATE_BENCH_PG_URL` to use an existing PostgreSQL, see `common/mod.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use common::{
    backends, env_usize, print_table, ratio, summarize, us, Backend, Rng, Server, Summary,
};
use docgate::catalog::MetadataCacheSettings;
use docgate::catalog::{Catalog, CollectionInfo};
use docgate::ops::read;
use docgate::query::planner::ReadPlan;
use docgate::query::Filter;
use docgate::store::postgres::{PostgresOptions, PostgresStore};
use docgate::store::sqlite::{SqliteOptions, SqliteStore};
use docgate::store::Store;
use futures_util::TryStreamExt;

const DB: &str = "bench";
const INDEXED: &str = "indexed";
const PLAIN: &str = "plain";
const WARMUP: usize = 100;
const BATCH: usize = 10_000;
const QUERIES: [&str; 3] = ["_id", "equality a", "range b"];

fn small_doc(i: i64) -> Document {
    doc! { "_id": i, "a": i % 1000, "b": i, "s": format!("x{i}") }
}

/// The filter and limit of query `q` for the random number `r`.
fn query(q: usize, r: i64) -> (Document, Option<i64>) {
    match q {
        0 => (doc! { "_id": r }, Some(1)),
        1 => (doc! { "a": r % 1000 }, Some(10)),
        _ => (doc! { "b": { "$gte": r, "$lt": r + 10 } }, None),
    }
}

/// The `_id`s query `q` must answer for `r` over `docs` documents (natural order = `_id`
/// order for both collections, which are loaded in `_id` order; compared sorted).
fn expected(q: usize, r: i64, docs: i64) -> Vec<i64> {
    match q {
        0 => vec![r],
        1 => (0..docs)
            .skip((r % 1000) as usize)
            .step_by(1000)
            .take(10)
            .collect(),
        _ => (r..(r + 10).min(docs)).collect(),
    }
}

fn ids(docs: &[Document]) -> Vec<i64> {
    let mut out: Vec<i64> = docs
        .iter()
        .map(|d| match d.get("_id") {
            Some(Bson::Int64(v)) => *v,
            Some(Bson::Int32(v)) => i64::from(*v),
            other => panic!("unexpected _id {other:?}"),
        })
        .collect();
    out.sort_unstable();
    out
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let docs = env_usize("DOCGATE_BENCH_QUERY_DOCS", 1_000_000);
    let lookups = env_usize("DOCGATE_BENCH_QUERY_LOOKUPS", 300);
    let scans = env_usize("DOCGATE_BENCH_QUERY_SCANS", 10).clamp(1, lookups.max(1));
    assert!(
        docs >= 1000,
        "DOCGATE_BENCH_QUERY_DOCS must be at least 1000"
    );
    let dir = tempfile::Builder::new()
        .prefix("docgate-bench-query-")
        .tempdir()
        .expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!(
        "query_indexes: {docs} documents per collection, {lookups} indexed lookups per side \
         (+{WARMUP} warm-up), {scans} unindexed per side"
    );
    for backend in &backends {
        run(backend, dir.path(), docs, lookups, scans).await;
    }
}

async fn run(backend: &Backend, dir: &std::path::Path, docs: usize, lookups: usize, scans: usize) {
    println!();
    println!("backend: {}", backend.name());
    let server = Server::start(backend, dir, &[]);
    let client = server.client().await;
    let database = client.database(DB);
    let indexed = database.collection::<Document>(INDEXED);
    let plain = database.collection::<Document>(PLAIN);

    // Load both collections, then build the indexes.
    for coll in [&indexed, &plain] {
        coll.drop().await.expect("drop");
        let started = Instant::now();
        let mut next_report = Instant::now() + Duration::from_secs(5);
        for start in (0..docs).step_by(BATCH) {
            let end = (start + BATCH).min(docs);
            let batch: Vec<Document> = (start as i64..end as i64).map(small_doc).collect();
            coll.insert_many(batch).await.expect("load");
            if Instant::now() >= next_report {
                print!(
                    "  loading {}: {end}/{docs} ({:.0}s)\r",
                    coll.name(),
                    started.elapsed().as_secs_f64()
                );
                let _ = std::io::stdout().flush();
                next_report = Instant::now() + Duration::from_secs(5);
            }
        }
        let took = started.elapsed();
        println!(
            "  loaded {docs} documents into {} in {:.1}s ({:.0} docs/s)          ",
            coll.name(),
            took.as_secs_f64(),
            docs as f64 / took.as_secs_f64()
        );
    }
    let started = Instant::now();
    database
        .run_command(doc! {
            "createIndexes": INDEXED,
            "indexes": [
                { "key": { "a": 1 }, "name": "a_1" },
                { "key": { "b": 1 }, "name": "b_1" },
            ],
        })
        .await
        .expect("createIndexes");
    println!(
        "  built indexes a_1 and b_1 on {INDEXED} in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    // The direct side: the store and catalog docgate uses, in-process.
    let store: Arc<dyn Store> = match backend {
        Backend::Sqlite { dir } => {
            Arc::new(SqliteStore::open(dir, SqliteOptions::default()).expect("open store"))
        }
        Backend::Postgres { url } => Arc::new(
            PostgresStore::connect(url, PostgresOptions::default())
                .await
                .expect("connect store"),
        ),
    };
    let catalog = Catalog::new(store.clone(), &MetadataCacheSettings::default());
    let info = |name: &'static str| {
        let catalog = &catalog;
        async move {
            catalog
                .collection_info(DB, name)
                .await
                .expect("catalog")
                .expect("collection in the catalog")
        }
    };
    let infos: [std::sync::Arc<CollectionInfo>; 2] = [info(INDEXED).await, info(PLAIN).await];
    assert_eq!(infos[0].indexes.len(), 2, "indexed has a_1 and b_1");
    assert!(infos[1].indexes.is_empty(), "plain has no secondary index");
    for (q, name) in QUERIES.iter().enumerate() {
        let (filter, _) = query(q, 12_345 % docs as i64);
        let explained = database
            .run_command(doc! { "explain": { "find": INDEXED, "filter": filter }, "verbosity": "queryPlanner" })
            .await
            .expect("explain");
        let stage = explained
            .get_document("queryPlanner")
            .and_then(|p| p.get_document("winningPlan"))
            .map(|w| {
                let inner = w.get_document("inputStage").unwrap_or(w);
                format!(
                    "{} {}",
                    inner.get_str("stage").unwrap_or("?"),
                    inner.get_str("indexName").unwrap_or("")
                )
            })
            .unwrap_or_else(|_| "?".into());
        println!("  plan of {name} on {INDEXED}: {}", stage.trim());
    }

    let colls = [&indexed, &plain];
    let every = (lookups / scans).max(1);
    let mut rng = Rng::new(0x9e37);
    // samples[query][side]: a = wire/indexed, b = direct/indexed, c = wire/plain, d = direct/plain
    let mut samples: Vec<[Vec<Duration>; 4]> =
        (0..QUERIES.len()).map(|_| Default::default()).collect();
    let total = WARMUP + lookups;
    let started = Instant::now();
    let mut next_report = Instant::now() + Duration::from_secs(5);
    for round in 0..total {
        let measured = round >= WARMUP;
        let with_scans = measured && (round - WARMUP) % every == 0;
        for q in 0..QUERIES.len() {
            let r = rng.below(docs as u64) as i64;
            let (filter, limit) = query(q, r);
            let want = expected(q, r, docs as i64);
            let sides: &[usize] = if with_scans { &[0, 1, 2, 3] } else { &[0, 1] };
            for step in 0..sides.len() {
                let side = sides[(round + step) % sides.len()];
                let which = side / 2;
                let started = Instant::now();
                let found = if side % 2 == 0 {
                    let mut find = colls[which].find(filter.clone());
                    if let Some(limit) = limit {
                        find = find.limit(limit);
                    }
                    let cursor = find.await.expect("find");
                    cursor
                        .try_collect::<Vec<Document>>()
                        .await
                        .expect("results")
                } else {
                    let parsed = Filter::parse(&filter).expect("filter");
                    let plan = ReadPlan::new(
                        parsed,
                        None,
                        0,
                        limit.map(|l| l as u64),
                        &infos[which].indexes,
                    );
                    let mut session = store.session().await.expect("session");
                    read::execute(session.as_mut(), &infos[which].record, &plan)
                        .await
                        .expect("execute")
                };
                let elapsed = started.elapsed();
                assert_eq!(ids(&found), want, "{} side {side} r={r}", QUERIES[q]);
                if measured {
                    samples[q][side].push(elapsed);
                }
            }
        }
        if Instant::now() >= next_report {
            print!(
                "  querying: round {}/{total} ({:.0}s)\r",
                round + 1,
                started.elapsed().as_secs_f64()
            );
            let _ = std::io::stdout().flush();
            next_report = Instant::now() + Duration::from_secs(5);
        }
    }
    println!(
        "  queried in {:.1}s                              ",
        started.elapsed().as_secs_f64()
    );

    let mut rows: Vec<Vec<String>> = Vec::new();
    let side_names = [
        "(a) wire, indexed",
        "(b) direct, indexed",
        "(c) wire, no index",
        "(d) direct, no index",
    ];
    for (q, name) in QUERIES.iter().enumerate() {
        let stats: Vec<Summary> = samples[q].iter().map(|s| summarize(s)).collect();
        for (side, s) in stats.iter().enumerate() {
            rows.push(vec![
                format!("{name} {}", side_names[side]),
                samples[q][side].len().to_string(),
                us(s.p50),
                us(s.p95),
                us(s.mean),
            ]);
        }
        for (label, x, y) in [
            ("indexed/unindexed a/c", 0, 2),
            ("docgate/direct a/b", 0, 1),
            ("docgate/direct c/d", 2, 3),
        ] {
            rows.push(vec![
                format!("{name} {label}"),
                String::new(),
                ratio(stats[x].p50, stats[y].p50),
                ratio(stats[x].p95, stats[y].p95),
                ratio(stats[x].mean, stats[y].mean),
            ]);
        }
    }
    print_table(&["query / side", "n", "p50 us", "p95 us", "mean us"], &rows);
    client.shutdown().await;
    drop(server);
}
