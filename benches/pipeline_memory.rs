//! What streaming a pipeline through its blocking stages saves: the same question asked two
//! ways, each on a freshly started server, with its time and docgate's peak RSS.
//!
//! - **streamed**: the pipeline as written. The read and the `$set` stream into the
//!   blocking stage (through temporary files past the limit) and the cursor drains it.
//!   A window's single partition, past the limit, is spooled, holding only the field its
//!   output reads.
//! - **held**: the same with a `$skip: 0` after the `$set`. A `$skip` there is not a
//!   per-document stage, so the pipeline runs as such pipelines ran before: over the
//!   collection's documents held in memory, stage after stage.
//!
//! Cases: a `$setWindowFields` running sum over the whole collection, and a `$sort` by a
//! field the `$set` computed.
//!
//! The collection is `DOCGATE_BENCH_WINDOW_DOCS` (500,000) `common::sample_doc` documents
//! (~200 bytes), loaded through docgate with progress. Each side runs on a server started
//! for it on the loaded data, with `--blocking-stage-memory-limit-bytes` 16 MiB and a
//! temporary directory, `DOCGATE_BENCH_ROUNDS` (3) times; its peak RSS (`VmHWM`) is read
//! after its rounds. Printed per backend and case: mean and best milliseconds, peak RSS of
//! each side, the ratios held / streamed, and the documents each returned (which must
//! agree, as must the last document). Nothing is asserted about speed or memory. Run:
//! `cargo bench --bench pipeline_memory` (`DOCGATE_BENCH_PG=0` for SQLite only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use bson::{doc, Document};
use common::{
    backends, env_usize, load_with_progress, ms, print_table, proc_status_kib, ratio, Backend,
    Server,
};
use futures_util::TryStreamExt;

const DB: &str = "bench";
const COLL: &str = "people";
const LOAD_BATCH: usize = 10_000;
const LIMIT_BYTES: &str = "16777216";

/// The cases: a label and the blocking stage after the `$set`.
fn cases() -> Vec<(&'static str, Document)> {
    vec![
        (
            "$setWindowFields running $sum",
            doc! {"$setWindowFields": {"sortBy": {"score": 1}, "output": {
                "running": {"$sum": "$weight", "window": {"documents": ["unbounded", "current"]}},
            }}},
        ),
        (
            "$sort by a computed field",
            doc! {"$sort": {"weight": -1, "_id": 1}},
        ),
    ]
}

/// The pipeline of a side: `held` puts a `$skip: 0` before the blocking stage.
fn pipeline(blocking: &Document, held: bool) -> Vec<Document> {
    let mut stages = vec![doc! {"$set": {"weight": {"$add": ["$age", 1]}}}];
    if held {
        stages.push(doc! {"$skip": 0});
    }
    stages.push(blocking.clone());
    stages.push(doc! {"$project": {"_id": 1, "weight": 1, "running": 1}});
    stages
}

/// One side's result: its times, peak RSS in MiB, documents and last running sum.
struct Side {
    times: Vec<Duration>,
    peak_mib: u64,
    documents: usize,
    last: Option<Document>,
}

async fn run_side(
    backend: &Backend,
    dir: &Path,
    blocking: &Document,
    held: bool,
    rounds: usize,
) -> Side {
    let temp = dir.join(if held { "temp-held" } else { "temp-streamed" });
    std::fs::create_dir_all(&temp).expect("temp dir");
    let args = [
        "--blocking-stage-memory-limit-bytes",
        LIMIT_BYTES,
        "--temp-dir",
        temp.to_str().expect("utf-8 path"),
    ];
    let server = Server::start(backend, dir, &args);
    let client = server.client().await;
    let coll = client.database(DB).collection::<Document>(COLL);
    let mut times = Vec::new();
    let mut documents = 0;
    let mut last = None;
    for _ in 0..rounds {
        let started = Instant::now();
        let docs: Vec<Document> = coll
            .aggregate(pipeline(blocking, held))
            .await
            .expect("aggregate")
            .try_collect()
            .await
            .expect("drain");
        times.push(started.elapsed());
        documents = docs.len();
        last = docs.last().cloned();
    }
    let peak_mib = proc_status_kib(server.pid(), "VmHWM:") / 1024;
    client.shutdown().await;
    drop(server);
    Side {
        times,
        peak_mib,
        documents,
        last,
    }
}

async fn bench(backend: &Backend, dir: &Path, docs: usize, rounds: usize) {
    {
        let server = Server::start(backend, dir, &[]);
        let client = server.client().await;
        let coll = client.database(DB).collection::<Document>(COLL);
        load_with_progress(&coll, docs, LOAD_BATCH, backend.name()).await;
        client.shutdown().await;
    }
    println!();
    println!("backend: {}", backend.name());
    let mut rows = Vec::new();
    for (label, blocking) in cases() {
        let streamed = run_side(backend, dir, &blocking, false, rounds).await;
        let held = run_side(backend, dir, &blocking, true, rounds).await;
        assert_eq!(
            streamed.documents, held.documents,
            "{label}: the sides disagree"
        );
        assert_eq!(
            streamed.last, held.last,
            "{label}: the last documents disagree"
        );
        let mean = |t: &[Duration]| t.iter().sum::<Duration>() / t.len() as u32;
        let best = |t: &[Duration]| t.iter().min().copied().unwrap_or_default();
        rows.push(vec![
            label.to_string(),
            ms(mean(&streamed.times)),
            ms(best(&streamed.times)),
            ms(mean(&held.times)),
            ms(best(&held.times)),
            ratio(mean(&held.times), mean(&streamed.times)),
            streamed.peak_mib.to_string(),
            held.peak_mib.to_string(),
            format!(
                "{:.2}x",
                held.peak_mib as f64 / streamed.peak_mib.max(1) as f64
            ),
            streamed.documents.to_string(),
        ]);
    }
    print_table(
        &[
            "case",
            "streamed ms",
            "best",
            "held ms",
            "best",
            "held/streamed",
            "streamed RSS MiB",
            "held RSS MiB",
            "held/streamed",
            "documents",
        ],
        &rows,
    );
}

#[tokio::main]
async fn main() {
    let docs = env_usize("DOCGATE_BENCH_WINDOW_DOCS", 500_000);
    let rounds = env_usize("DOCGATE_BENCH_ROUNDS", 3);
    let dir = tempfile::tempdir().expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!("pipelines over {docs} documents, {rounds} rounds per side, limit {LIMIT_BYTES} bytes per blocking stage");
    for backend in &backends {
        bench(backend, dir.path(), docs, rounds).await;
    }
}
