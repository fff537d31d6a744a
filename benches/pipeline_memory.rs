//! What the memory limit of blocking stages costs and saves: the same pipeline (and a
//! `$count` after it) on two freshly started servers, with its time and docgate's peak RSS.
//! The read and the `$set` stream into the blocking stage and the cursor drains it
//! (`explain` says `chained`; the bench checks it).
//!
//! - **limited**: each blocking stage holds at most 16 MiB and goes on through temporary
//!   files past it. A window's single partition, past the limit, is spooled, holding only
//!   the field its output reads; a `$facet` feeds each sub-pipeline as a chain of its own.
//! - **unlimited**: the limit is 64 GiB, so every blocking stage holds its input in memory,
//!   as docgate did before stages spilled (and as a pipeline over held documents did).
//!
//! Cases: a `$setWindowFields` running sum over the whole collection, a `$sort` by a field
//! the `$set` computed, and a `$facet` of a top-5 by that field and a `$group` by age.
//!
//! The collection is `DOCGATE_BENCH_WINDOW_DOCS` (500,000) `common::sample_doc` documents
//! (~200 bytes), loaded through docgate with progress. Each side runs on a server started
//! for it on the loaded data, with its `--blocking-stage-memory-limit-bytes` and a
//! temporary directory, `DOCGATE_BENCH_ROUNDS` (3) times; its peak RSS (`VmHWM`) is read
//! after its rounds. Printed per backend and case: mean and best milliseconds, peak RSS of
//! each side, the ratios unlimited / limited, and the documents each counted (which must
//! agree). Nothing is asserted about speed or memory. Run:
//! `cargo bench --bench pipeline_memory` (`DOCGATE_BENCH_PG=0` for SQLite only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use common::{
    backends, env_usize, load_with_progress, ms, print_table, proc_status_kib, ratio, Backend,
    Server,
};
use mongodb::Database;

const DB: &str = "bench";
const COLL: &str = "people";
const LOAD_BATCH: usize = 10_000;
const LIMIT_BYTES: &str = "16777216";
/// The unlimited side's limit: more than any case holds.
const UNLIMITED_BYTES: &str = "68719476736";

/// The cases: a label, the blocking stage after the `$set`, and the stages after it.
fn cases() -> Vec<(&'static str, Document, Vec<Document>)> {
    let project = vec![doc! {"$project": {"_id": 1, "weight": 1, "running": 1}}];
    vec![
        (
            "$setWindowFields running $sum",
            doc! {"$setWindowFields": {"sortBy": {"score": 1}, "output": {
                "running": {"$sum": "$weight", "window": {"documents": ["unbounded", "current"]}},
            }}},
            project.clone(),
        ),
        (
            "$sort by a computed field",
            doc! {"$sort": {"weight": -1, "_id": 1}},
            project,
        ),
        (
            "$facet: top 5 and $group",
            doc! {"$facet": {
                "top": [{"$sort": {"weight": -1, "_id": 1}}, {"$limit": 5}, {"$project": {"weight": 1}}],
                "by_age": [{"$group": {"_id": "$age", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}],
            }},
            Vec::new(),
        ),
    ]
}

/// The pipeline of a case: the `$set`, its blocking stage, the stages after it.
fn pipeline(blocking: &Document, after: &[Document]) -> Vec<Document> {
    let mut stages = vec![doc! {"$set": {"weight": {"$add": ["$age", 1]}}}];
    stages.push(blocking.clone());
    stages.extend(after.iter().cloned());
    stages
}

/// The command both sides run: the pipeline with a `$count` after it.
fn command(blocking: &Document, after: &[Document]) -> Document {
    let mut stages = pipeline(blocking, after);
    stages.push(doc! {"$count": "n"});
    doc! {"aggregate": COLL, "pipeline": stages, "cursor": {}}
}

/// How `explain` says the command runs (`docgate.pipeline.mode`).
async fn mode(db: &Database, command: Document) -> String {
    let reply = db
        .run_command(doc! {"explain": command})
        .await
        .expect("explain");
    let plan = reply
        .get_document("queryPlanner")
        .and_then(|p| p.get_document("winningPlan"));
    let docgate = plan.and_then(|p| p.get_document("docgate"));
    let execution = docgate.and_then(|d| d.get_document("pipeline"));
    execution
        .and_then(|e| e.get_str("mode"))
        .expect("docgate.pipeline.mode")
        .to_string()
}

/// The count the command makes, from its reply.
async fn count(db: &Database, command: Document) -> i64 {
    let reply = db.run_command(command).await.expect("command");
    let cursor = reply.get_document("cursor").expect("a cursor");
    let batch = cursor.get_array("firstBatch").expect("firstBatch");
    let first = batch.first().and_then(|first| first.as_document());
    match first.and_then(|first| first.get("n")) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        None => 0,
        other => panic!("a count of {other:?} after {reply}"),
    }
}

/// One side's result: its times, peak RSS in MiB and the documents it counted.
struct Side {
    times: Vec<Duration>,
    peak_mib: u64,
    documents: i64,
}

async fn run_side(
    backend: &Backend,
    dir: &Path,
    (blocking, after): (&Document, &[Document]),
    unlimited: bool,
    rounds: usize,
) -> Side {
    let temp = dir.join(if unlimited {
        "temp-unlimited"
    } else {
        "temp-limited"
    });
    std::fs::create_dir_all(&temp).expect("temp dir");
    let args = [
        "--blocking-stage-memory-limit-bytes",
        if unlimited {
            UNLIMITED_BYTES
        } else {
            LIMIT_BYTES
        },
        "--temp-dir",
        temp.to_str().expect("utf-8 path"),
    ];
    let server = Server::start(backend, dir, &args);
    let client = server.client().await;
    let db = client.database(DB);
    let command = command(blocking, after);
    assert_eq!(mode(&db, command.clone()).await, "chained", "{command}");
    let mut times = Vec::new();
    let mut documents = 0;
    for _ in 0..rounds {
        let started = Instant::now();
        documents = count(&db, command.clone()).await;
        times.push(started.elapsed());
    }
    let peak_mib = proc_status_kib(server.pid(), "VmHWM:") / 1024;
    client.shutdown().await;
    drop(server);
    Side {
        times,
        peak_mib,
        documents,
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
    for (label, blocking, after) in cases() {
        let case = (&blocking, after.as_slice());
        let limited = run_side(backend, dir, case, false, rounds).await;
        let unlimited = run_side(backend, dir, case, true, rounds).await;
        assert_eq!(
            limited.documents, unlimited.documents,
            "{label}: the sides disagree"
        );
        let mean = |t: &[Duration]| t.iter().sum::<Duration>() / t.len() as u32;
        let best = |t: &[Duration]| t.iter().min().copied().unwrap_or_default();
        rows.push(vec![
            label.to_string(),
            ms(mean(&limited.times)),
            ms(best(&limited.times)),
            ms(mean(&unlimited.times)),
            ms(best(&unlimited.times)),
            ratio(mean(&unlimited.times), mean(&limited.times)),
            limited.peak_mib.to_string(),
            unlimited.peak_mib.to_string(),
            format!(
                "{:.2}x",
                unlimited.peak_mib as f64 / limited.peak_mib.max(1) as f64
            ),
            limited.documents.to_string(),
        ]);
    }
    print_table(
        &[
            "case",
            "limited ms",
            "best",
            "unlimited ms",
            "best",
            "unlimited/limited",
            "limited RSS MiB",
            "unlimited RSS MiB",
            "unlimited/limited",
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
