//! Range filters on a field no index serves: what pushing `$gt`/`$gte`/`$lt`/`$lte` into SQL
//! as a test on the JSON image (`Predicate::PathRange`) saves, measured against the same
//! question asked through `$expr`, which the planner does not push — so its read is the one
//! every range made before: every row crosses from the store and Rust keeps the matches.
//!
//! The collection is `DOCGATE_BENCH_RANGE_DOCS` (200,000) `common::sample_doc` documents
//! (`score` = i / 4, unique), loaded through docgate with progress and no secondary index.
//! Each of `DOCGATE_BENCH_ROUNDS` (5) rounds runs, on a fresh window of 1% of the scores and
//! in rotating order:
//!
//! 1. `find({score: {$gte: x, $lt: y}})` against `find({$expr: {$and: [{$gte: ["$score", x]},
//!    {$lt: ["$score", y]}]}})`;
//! 2. the same two filters as a `$match` followed by a `$group` by `address.city` with a
//!    count and a `$sum` of `age` (on PostgreSQL the pushed one is a `GROUP BY`).
//!
//! Printed per backend and case: mean and best milliseconds of each side, the ratio
//! `$expr` / pushed, and the documents each returned (which must agree). Nothing is asserted
//! about speed. Run: `cargo bench --bench range_filters` (`DOCGATE_BENCH_PG=0` for SQLite
//! only; `DOCGATE_BENCH_PG_URL` to use an existing PostgreSQL, see `common/mod.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use common::{backends, env_usize, load_with_progress, ms, print_table, ratio, Backend, Server};
use futures_util::TryStreamExt;

const DB: &str = "bench";
const COLL: &str = "ranges";
const LOAD_BATCH: usize = 10_000;

/// One side of a case: the filter of a `find`, or the pipeline of an `aggregate`.
enum Read {
    Find(Document),
    Aggregate(Vec<Document>),
}

/// The two sides of case `case` over the scores `[low, high)`: pushed, then `$expr`.
fn sides(case: usize, low: f64, high: f64) -> [Read; 2] {
    let pushed = doc! {"score": {"$gte": low, "$lt": high}};
    let expr = doc! {"$expr": {"$and": [{"$gte": ["$score", low]}, {"$lt": ["$score", high]}]}};
    let group =
        doc! {"$group": {"_id": "$address.city", "n": {"$sum": 1}, "ages": {"$sum": "$age"}}};
    match case {
        0 => [Read::Find(pushed), Read::Find(expr)],
        _ => [
            Read::Aggregate(vec![doc! {"$match": pushed}, group.clone()]),
            Read::Aggregate(vec![doc! {"$match": expr}, group]),
        ],
    }
}

/// Runs `read` to its end; the time and a digest of the answer (documents, and the sum of
/// the group counts for an aggregate).
async fn run(coll: &mongodb::Collection<Document>, read: &Read) -> (Duration, (usize, i64)) {
    let started = Instant::now();
    let docs: Vec<Document> = match read {
        Read::Find(filter) => coll
            .find(filter.clone())
            .await
            .expect("find")
            .try_collect()
            .await
            .expect("find batches"),
        Read::Aggregate(pipeline) => coll
            .aggregate(pipeline.clone())
            .await
            .expect("aggregate")
            .try_collect()
            .await
            .expect("aggregate batches"),
    };
    let took = started.elapsed();
    let counted = match read {
        Read::Find(_) => docs.len() as i64,
        Read::Aggregate(_) => docs
            .iter()
            .map(|d| match d.get("n") {
                Some(Bson::Int32(n)) => i64::from(*n),
                Some(Bson::Int64(n)) => *n,
                other => panic!("a group without its count: {other:?}"),
            })
            .sum(),
    };
    (took, (docs.len(), counted))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let docs = env_usize("DOCGATE_BENCH_RANGE_DOCS", 200_000);
    let rounds = env_usize("DOCGATE_BENCH_ROUNDS", 5).max(1);
    let dir = tempfile::Builder::new()
        .prefix("docgate-bench-ranges-")
        .tempdir()
        .expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!("range_filters: {docs} documents, {rounds} rounds, 1% of them in each range");
    for backend in &backends {
        bench(backend, dir.path(), docs, rounds).await;
    }
}

async fn bench(backend: &Backend, dir: &std::path::Path, docs: usize, rounds: usize) {
    let server = Server::start(backend, dir, &[]);
    let client = server.client().await;
    let coll = client.database(DB).collection::<Document>(COLL);
    let loaded = load_with_progress(&coll, docs, LOAD_BATCH, backend.name()).await;
    println!(
        "{}: loaded {docs} documents in {:.1} s",
        backend.name(),
        loaded.as_secs_f64()
    );
    let width = docs as f64 * 0.25 / 100.0;
    let labels = ["find", "$match + $group"];
    // Per case and side: the times, and the answer's digest (checked equal across sides).
    let mut times = vec![[Vec::new(), Vec::new()]; labels.len()];
    let mut answers = vec![(0, 0); labels.len()];
    for round in 0..rounds {
        let low = (round as f64 * 17.0 % 90.0) * width;
        for (case, case_times) in times.iter_mut().enumerate() {
            let reads = sides(case, low, low + width);
            let mut digests = [(0, 0); 2];
            for step in 0..2 {
                let side = (step + round) % 2;
                let (took, digest) = run(&coll, &reads[side]).await;
                case_times[side].push(took);
                digests[side] = digest;
            }
            assert_eq!(
                digests[0], digests[1],
                "{}: the sides disagree",
                labels[case]
            );
            answers[case] = digests[0];
        }
    }
    let mean = |samples: &[Duration]| samples.iter().sum::<Duration>() / samples.len() as u32;
    let best = |samples: &[Duration]| samples.iter().min().copied().unwrap_or_default();
    let rows: Vec<Vec<String>> = labels
        .iter()
        .zip(&times)
        .zip(&answers)
        .map(|((label, [pushed, expr]), (returned, counted))| {
            vec![
                label.to_string(),
                ms(mean(pushed)),
                ms(best(pushed)),
                ms(mean(expr)),
                ms(best(expr)),
                ratio(mean(expr), mean(pushed)),
                format!("{returned} ({counted} matched)"),
            ]
        })
        .collect();
    println!("backend: {}", backend.name());
    print_table(
        &[
            "case",
            "pushed ms",
            "best",
            "$expr ms",
            "best",
            "$expr/pushed",
            "answer",
        ],
        &rows,
    );
    client.shutdown().await;
    drop(server);
}
