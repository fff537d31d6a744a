//! Helpers of the chained-pipeline suites (`chained_reads.rs`, `chained_stages.rs`): the
//! seeded collection, a server holding at most 40 KB per blocking stage, draining a
//! pipeline in batches of 50, what `explain` says of a pipeline (`docgate.pipeline`), and
//! the checks that a late error comes with a `getMore` and that `allowDiskUse: false` is
//! 292.
//!
//! Not the server harness (`tests/common/mod.rs`) nor the driver suites' helpers
//! (`tests/driver_support/mod.rs`).

#![allow(dead_code)]

use crate::common::TestServer;
use crate::driver_support::{collect, server_code};
use mongodb::bson::{doc, Bson, Document};
use mongodb::{Collection, Database};

/// Documents seeded: ~300 KB, past the 40 KB limit; four partitions of ~75 KB each.
pub const COUNT: i64 = 2_000;

/// The seeded documents: a unique sort key `k`, a partition `g`, a value `v`.
pub fn seeded() -> Vec<Document> {
    let pad = "x".repeat(120);
    (0..COUNT)
        .map(|i| doc! {"_id": i, "k": (i * 37) % COUNT, "g": i % 4, "v": (i * 13) % 101, "pad": pad.clone()})
        .collect()
}

/// `pipeline` on `items`, drained 50 documents per batch.
pub async fn run(coll: &Collection<Document>, pipeline: Vec<Document>) -> Vec<Document> {
    let cursor = coll
        .aggregate(pipeline.clone())
        .batch_size(50)
        .await
        .unwrap_or_else(|e| panic!("{pipeline:?}: {e}"));
    collect(cursor).await
}

pub fn int(d: &Document, key: &str) -> i64 {
    match d.get(key) {
        Some(Bson::Int32(v)) => i64::from(*v),
        Some(Bson::Int64(v)) => *v,
        other => panic!("{key} in {d}: {other:?}"),
    }
}

/// A server holding at most 40 KB per blocking stage, spilling under `temp`.
pub fn limited_server(temp: &tempfile::TempDir) -> TestServer {
    TestServer::start_limited(temp)
}

/// `pipeline` drained 50 documents per batch: the first batch comes, and the error its
/// stages make on the last document in the blocking stage's order comes with a `getMore`,
/// after earlier batches (a pipeline computed whole would fail the `aggregate` itself).
pub async fn assert_late_error_comes_with_a_get_more(
    coll: &Collection<Document>,
    pipeline: Vec<Document>,
) {
    let mut cursor = coll
        .aggregate(pipeline.clone())
        .batch_size(50)
        .await
        .unwrap_or_else(|e| panic!("{pipeline:?}: no first batch: {e}"));
    let mut answered = 0;
    let failure = loop {
        match futures_util::StreamExt::next(&mut cursor).await {
            Some(Ok(_)) => answered += 1,
            Some(Err(error)) => break error,
            None => panic!("{pipeline:?}: the cursor ended without the expected error"),
        }
    };
    // The batch that reaches the last document fails whole.
    assert!(
        (50..COUNT as usize).contains(&answered),
        "{pipeline:?}: {answered} documents before {failure}"
    );
    assert!(server_code(&failure).is_some(), "{failure}");
}

/// How `explain` says `command` runs its pipeline (`docgate.pipeline`): its mode, and the
/// blocking stages of a chain.
pub async fn pipeline_mode(db: &Database, command: Document) -> (String, Vec<String>) {
    let reply = db
        .run_command(doc! {"explain": command})
        .await
        .expect("explain");
    let execution = reply
        .get_document("queryPlanner")
        .and_then(|planner| planner.get_document("winningPlan"))
        .and_then(|plan| plan.get_document("docgate"))
        .and_then(|docgate| docgate.get_document("pipeline"))
        .unwrap_or_else(|_| panic!("no docgate.pipeline in {reply}"));
    let mode = execution.get_str("mode").expect("mode").to_string();
    let stages = execution
        .get_array("blockingStages")
        .map(|names| {
            names
                .iter()
                .filter_map(|n| n.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    (mode, stages)
}

/// How `explain` says the stages of `pipeline` over `coll` after its read run.
pub async fn execution(
    coll: &Collection<Document>,
    pipeline: Vec<Document>,
) -> (String, Vec<String>) {
    let db = coll.client().database(coll.namespace().db.as_str());
    let command = doc! {"aggregate": coll.name(), "pipeline": pipeline, "cursor": {}};
    pipeline_mode(&db, command).await
}

pub fn chained(stages: &[&str]) -> (String, Vec<String>) {
    let names = stages.iter().map(|name| name.to_string()).collect();
    ("chained".to_string(), names)
}

pub fn mode(mode: &str) -> (String, Vec<String>) {
    (mode.to_string(), Vec::new())
}

/// `pipeline` with `allowDiskUse: false`: 292, as MongoDB answers past the limit.
pub async fn assert_refused_without_disk_use(coll: &Collection<Document>, pipeline: Vec<Document>) {
    let refused = coll.aggregate(pipeline.clone()).allow_disk_use(false).await;
    let code = match refused {
        Err(error) => server_code(&error),
        Ok(cursor) => collect(cursor)
            .await
            .first()
            .map(|_| panic!("{pipeline:?}: answered past the limit without disk use")),
    };
    assert_eq!(code, Some(292), "{pipeline:?}");
}
