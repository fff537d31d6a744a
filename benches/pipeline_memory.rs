//! What streaming a pipeline through its blocking stages saves: the same question asked two
//! ways, each on a freshly started server, with its time and docgate's peak RSS.
//!
//! - **streamed**: the pipeline as written. The read and the `$set` stream into the
//!   blocking stage (through temporary files past the limit) and the cursor drains it.
//!   A window's single partition, past the limit, is spooled, holding only the field its
//!   output reads; a `$facet` feeds each sub-pipeline as a chain of its own.
//! - **held**: the same pipeline and `$count` written out by `$out`. A pipeline written
//!   out runs as unchained pipelines run: over the collection's documents held in memory,
//!   stage after stage (`explain` says `held`; the bench checks it). Both sides count what
//!   the pipeline makes; the held side also writes that one document.
//!
//! Cases: a `$setWindowFields` running sum over the whole collection, a `$sort` by a field
//! the `$set` computed, and a `$facet` of a top-5 by that field and a `$group` by age.
//!
//! The collection is `DOCGATE_BENCH_WINDOW_DOCS` (500,000) `common::sample_doc` documents
//! (~200 bytes), loaded through docgate with progress. Each side runs on a server started
//! for it on the loaded data, with `--blocking-stage-memory-limit-bytes` 16 MiB and a
//! temporary directory, `DOCGATE_BENCH_ROUNDS` (3) times; its peak RSS (`VmHWM`) is read
//! after its rounds. Printed per backend and case: mean and best milliseconds, peak RSS of
//! each side, the ratios held / streamed, and the documents each counted (which must
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
/// Where the held side writes its count.
const HELD_COUNT: &str = "held_count";
const LOAD_BATCH: usize = 10_000;
const LIMIT_BYTES: &str = "16777216";

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

/// The command a side runs: the pipeline with a `$count` after it, which the held side
/// writes out with `$out` into `HELD_COUNT` (a pipeline written out runs over documents
/// held between stages).
fn command(blocking: &Document, after: &[Document], held: bool) -> Document {
    let mut stages = pipeline(blocking, after);
    stages.push(doc! {"$count": "n"});
    if held {
        stages.push(doc! {"$out": HELD_COUNT});
    }
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

/// The count a side's command makes: in its reply, or in `HELD_COUNT` for the held side.
async fn count(db: &Database, command: Document, held: bool) -> i64 {
    let reply = db.run_command(command).await.expect("command");
    let counted = if held {
        let written = db
            .collection::<Document>(HELD_COUNT)
            .find_one(doc! {})
            .await;
        let written = written.expect("the written count");
        written.and_then(|d| d.get("n").cloned())
    } else {
        let cursor = reply.get_document("cursor").expect("a cursor");
        let batch = cursor.get_array("firstBatch").expect("firstBatch");
        let first = batch.first().and_then(|first| first.as_document());
        first.and_then(|first| first.get("n").cloned())
    };
    match counted {
        Some(Bson::Int32(n)) => i64::from(n),
        Some(Bson::Int64(n)) => n,
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
    let db = client.database(DB);
    let command = command(blocking, after, held);
    let expected = if held { "held" } else { "chained" };
    assert_eq!(mode(&db, command.clone()).await, expected, "{command}");
    let mut times = Vec::new();
    let mut documents = 0;
    for _ in 0..rounds {
        let started = Instant::now();
        documents = count(&db, command.clone(), held).await;
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
        let streamed = run_side(backend, dir, case, false, rounds).await;
        let held = run_side(backend, dir, case, true, rounds).await;
        assert_eq!(
            streamed.documents, held.documents,
            "{label}: the sides disagree"
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
