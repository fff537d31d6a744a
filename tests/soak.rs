//! Soak test: 200 concurrent driver connections run a mixed workload (inserts with unique
//! ids, `$inc` updates, finds, deletes) against the real binary for `DOCGATE_SOAK_SECONDS`
//! (default 60) and then check what a user would: no operation failed, every acknowledged
//! write is there exactly once (the documents read back equal the clients' own bookkeeping,
//! ids and counters), and the server's resident memory stays flat after warm-up. Prints the
//! RSS samples and p50/p99 latency per operation.
//!
//! Long: returns early with a note unless `DOCGATE_LONG_TESTS=1` (tests/run_all.sh sets it).
//! Runs on SQLite, and on PostgreSQL when `DOCGATE_TEST_BACKEND` names one.
//!
//! Not for: hostile clients or single slow queries (tests/hostile_load.rs), crashes
//! (tests/crash_recovery.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::TestServer;
use mongodb::bson::{doc, Document};
use mongodb::Collection;

/// Concurrent connections (the server's default `--max-connections` is 1024; the driver
/// adds one monitoring connection).
const CONNECTIONS: usize = 200;

/// How often the server's RSS is sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(3);

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Op {
    Insert,
    Update,
    Find,
    Delete,
}

/// What one worker did: the documents it believes exist (id → counter), its latencies
/// per operation, and the errors it saw.
#[derive(Default)]
struct WorkerResult {
    live: BTreeMap<String, i64>,
    latencies: BTreeMap<Op, Vec<Duration>>,
    errors: Vec<String>,
}

/// One connection's loop until `deadline`: insert, then mostly `$inc` and find on its own
/// documents, deleting one now and then. Ids are `w<worker>-<n>`, unique across workers.
async fn worker(coll: Collection<Document>, worker: usize, deadline: Instant) -> WorkerResult {
    let mut result = WorkerResult::default();
    let mut next = 0u64;
    let mut step = 0u64;
    while Instant::now() < deadline {
        step += 1;
        // A cheap deterministic spread over this worker's live documents.
        let pick = result
            .live
            .keys()
            .nth((step.wrapping_mul(2654435761) as usize) % result.live.len().max(1))
            .cloned();
        let op = match (step % 10, &pick) {
            (_, None) | (0..=2, _) => Op::Insert,
            (3..=5, Some(_)) => Op::Update,
            (6..=8, Some(_)) => Op::Find,
            _ => Op::Delete,
        };
        let started = Instant::now();
        let outcome: Result<(), String> = match op {
            Op::Insert => {
                let id = format!("w{worker}-{next}");
                next += 1;
                match coll
                    .insert_one(doc! {"_id": &id, "worker": worker as i64, "c": 0_i64})
                    .await
                {
                    Ok(_) => {
                        result.live.insert(id, 0);
                        Ok(())
                    }
                    Err(e) => Err(format!("insert {id}: {e}")),
                }
            }
            Op::Update => {
                let id = pick.clone().unwrap_or_default();
                match coll
                    .update_one(doc! {"_id": &id}, doc! {"$inc": {"c": 1_i64}})
                    .await
                {
                    Ok(r) if r.matched_count == 1 && r.modified_count == 1 => {
                        *result.live.entry(id).or_default() += 1;
                        Ok(())
                    }
                    Ok(r) => Err(format!("update {id}: {r:?}")),
                    Err(e) => Err(format!("update {id}: {e}")),
                }
            }
            Op::Find => {
                let id = pick.clone().unwrap_or_default();
                let want = result.live.get(&id).copied();
                match coll.find_one(doc! {"_id": &id}).await {
                    Ok(Some(found)) if found.get_i64("c").ok() == want => Ok(()),
                    Ok(found) => Err(format!("find {id}: {found:?}, expected c {want:?}")),
                    Err(e) => Err(format!("find {id}: {e}")),
                }
            }
            Op::Delete => {
                let id = pick.clone().unwrap_or_default();
                match coll.delete_one(doc! {"_id": &id}).await {
                    Ok(r) if r.deleted_count == 1 => {
                        result.live.remove(&id);
                        Ok(())
                    }
                    Ok(r) => Err(format!("delete {id}: {r:?}")),
                    Err(e) => Err(format!("delete {id}: {e}")),
                }
            }
        };
        result
            .latencies
            .entry(op)
            .or_default()
            .push(started.elapsed());
        if let Err(e) = outcome {
            result.errors.push(e);
            if result.errors.len() > 5 {
                break;
            }
        }
    }
    result
}

/// The `q`-quantile of sorted `samples`.
fn quantile(samples: &[Duration], q: f64) -> Duration {
    let index = ((samples.len() as f64 - 1.0) * q).round() as usize;
    samples.get(index).copied().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_connections_mixed_workload_lose_nothing_and_memory_stays_flat() {
    if std::env::var("DOCGATE_LONG_TESTS").as_deref() != Ok("1") {
        eprintln!("soak test skipped: set DOCGATE_LONG_TESTS=1 to run it");
        return;
    }
    let seconds: u64 = std::env::var("DOCGATE_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let server = TestServer::start();
    let options = format!("maxPoolSize={CONNECTIONS}&minPoolSize={CONNECTIONS}");
    let client = server
        .client_with_uri(&server.uri_with_options(&options))
        .await;
    let coll = client.database("soak").collection::<Document>("docs");
    coll.insert_one(doc! {"_id": "warm", "c": 0_i64})
        .await
        .expect("first insert");

    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let workers: Vec<_> = (0..CONNECTIONS)
        .map(|w| tokio::spawn(worker(coll.clone(), w, deadline)))
        .collect();

    // RSS samples while the workers run: (seconds since start, bytes).
    let mut samples: Vec<(u64, u64)> = Vec::new();
    while Instant::now() < deadline {
        tokio::time::sleep(SAMPLE_EVERY).await;
        samples.push((started.elapsed().as_secs(), server.rss_bytes()));
    }

    let mut expected: BTreeMap<String, i64> = BTreeMap::new();
    expected.insert("warm".into(), 0);
    let mut latencies: BTreeMap<Op, Vec<Duration>> = BTreeMap::new();
    let mut errors = Vec::new();
    for handle in workers {
        let result = handle.await.expect("worker task");
        expected.extend(result.live);
        for (op, mut l) in result.latencies {
            latencies.entry(op).or_default().append(&mut l);
        }
        errors.extend(result.errors);
    }

    eprintln!("RSS samples (s: MiB):");
    for (at, bytes) in &samples {
        eprintln!("  {at:>4}: {:.1}", *bytes as f64 / 1048576.0);
    }
    for (op, l) in &mut latencies {
        l.sort();
        eprintln!(
            "{op:?}: {} ops, p50 {:?}, p99 {:?}",
            l.len(),
            quantile(l, 0.5),
            quantile(l, 0.99)
        );
    }
    assert!(errors.is_empty(), "errors: {errors:#?}");

    // Every acknowledged write exactly once: the full set read back equals the bookkeeping.
    let mut cursor = coll.find(doc! {}).await.expect("find all");
    let mut actual: BTreeMap<String, i64> = BTreeMap::new();
    let mut duplicates = Vec::new();
    while cursor.advance().await.expect("advance") {
        let d = cursor.deserialize_current().expect("document");
        let id = d.get_str("_id").expect("string _id").to_string();
        if actual
            .insert(id.clone(), d.get_i64("c").expect("c"))
            .is_some()
        {
            duplicates.push(id);
        }
    }
    assert!(duplicates.is_empty(), "duplicated ids: {duplicates:?}");
    let count = coll.count_documents(doc! {}).await.expect("count");
    assert_eq!(count as usize, expected.len(), "count_documents");
    let sum = |m: &BTreeMap<String, i64>| m.values().sum::<i64>();
    assert_eq!(sum(&actual), sum(&expected), "sum of the counters");
    assert_eq!(actual.len(), expected.len(), "number of documents");
    let differing: Vec<_> = expected
        .iter()
        .filter(|(id, c)| actual.get(*id) != Some(c))
        .take(10)
        .collect();
    assert!(differing.is_empty(), "documents that differ: {differing:?}");

    // Memory flat after warm-up: the first sample after the first sixth of the run is the
    // baseline; the last third may not exceed 1.5x it plus 30 MiB. Measured flat to within
    // 1% over 60 s; the bound cannot flake but catches a leak of a few KiB per operation
    // (about 50 000 operations in 60 s on 2 cores).
    let warm_at = seconds / 6;
    let baseline = samples
        .iter()
        .find(|(at, _)| *at >= warm_at)
        .map(|(_, b)| *b)
        .expect("a sample after warm-up");
    let last_third = &samples[samples.len() * 2 / 3..];
    let peak = last_third.iter().map(|(_, b)| *b).max().unwrap_or(0);
    let bound = baseline + baseline / 2 + 30 * 1024 * 1024;
    assert!(
        peak <= bound,
        "RSS grew: baseline {baseline} bytes after {warm_at} s, last third's peak {peak} > {bound}"
    );
}
