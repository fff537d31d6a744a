//! `aggregate` pipelines with a `$setWindowFields` between per-document stages, checked with
//! the Rust `mongodb` driver against the real `docgate` binary on SQLite and — with
//! `DOCGATE_TEST_BACKEND` set to a `postgres://` URL — on PostgreSQL, under a 40 KB
//! `--blocking-stage-memory-limit-bytes`:
//!
//! - the windows are MongoDB's (running sums, ranks, shifts, partition totals, ranges over
//!   partitions), computed here from the seeded documents, on a cursor drained in batches
//!   of 50;
//! - past the limit the input goes through temporary files and a partition past it is
//!   spooled (`serverStatus.metrics.query.docgateSpill.files` grows), also the partitions
//!   the `getMore`s window; an output that reads whole documents (`$$ROOT`) holds its
//!   partition in memory, with the same answer;
//! - the cursor windows partitions as it is drained: an error on the last document in
//!   window order comes with a `getMore`, after earlier batches were answered;
//! - with `allowDiskUse: false` the same pipeline answers 292.
//!
//! Not for: the window functions one by one (`cargo test --lib window`) or pymongo's
//! `test_spill.py`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;

use common::{query_metric, TestServer};
use driver_support::{collect, server_code};
use mongodb::bson::{doc, Bson, Document};
use mongodb::Collection;

/// Documents seeded: ~300 KB, past the 40 KB limit; four partitions of ~75 KB each.
const COUNT: i64 = 2_000;

/// The seeded documents: a unique sort key `k`, a partition `g`, a value `v`.
fn seeded() -> Vec<Document> {
    let pad = "x".repeat(120);
    (0..COUNT)
        .map(|i| doc! {"_id": i, "k": (i * 37) % COUNT, "g": i % 4, "v": (i * 13) % 101, "pad": pad.clone()})
        .collect()
}

/// `pipeline` on `items`, drained 50 documents per batch.
async fn run(coll: &Collection<Document>, pipeline: Vec<Document>) -> Vec<Document> {
    let cursor = coll
        .aggregate(pipeline.clone())
        .batch_size(50)
        .await
        .unwrap_or_else(|e| panic!("{pipeline:?}: {e}"));
    collect(cursor).await
}

fn int(d: &Document, key: &str) -> i64 {
    match d.get(key) {
        Some(Bson::Int32(v)) => i64::from(*v),
        Some(Bson::Int64(v)) => *v,
        other => panic!("{key} in {d}: {other:?}"),
    }
}

#[tokio::test]
async fn windows_between_per_document_stages_stream_and_spill_past_the_limit() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = TestServer::start_with_args(&[
        "--blocking-stage-memory-limit-bytes",
        "40000",
        "--temp-dir",
        temp.path().to_str().expect("utf-8 temp dir"),
    ]);
    let client = server.client().await;
    let coll: Collection<Document> = client.database("windows").collection("items");
    let docs = seeded();
    coll.insert_many(docs.clone()).await.expect("seed");
    let mut by_k = docs.clone();
    by_k.sort_by_key(|d| int(d, "k"));

    // One partition in `k` order, after a `$match` and a `$set`, before a `$project`.
    let files = query_metric(&client, "docgateSpill", "files").await;
    let running = run(
        &coll,
        vec![
            doc! {"$match": {"v": {"$gte": 0}}},
            doc! {"$set": {"w": {"$mod": ["$v", 7]}}},
            doc! {"$setWindowFields": {"sortBy": {"k": 1}, "output": {
                "running": {"$sum": "$w", "window": {"documents": ["unbounded", "current"]}},
                "rank": {"$rank": {}},
                "before": {"$shift": {"output": "$_id", "by": -1, "default": -1}},
            }}},
            doc! {"$project": {"pad": 0}},
        ],
    )
    .await;
    assert_eq!(running.len(), COUNT as usize);
    let mut sum = 0;
    for (at, (got, source)) in running.iter().zip(&by_k).enumerate() {
        sum += int(source, "v") % 7;
        assert_eq!(got.get("_id"), source.get("_id"), "window order at {at}");
        assert_eq!(int(got, "running"), sum, "running sum at {at}");
        assert_eq!(int(got, "rank"), at as i64 + 1, "rank at {at}");
        let before = if at == 0 {
            -1
        } else {
            int(&by_k[at - 1], "_id")
        };
        assert_eq!(int(got, "before"), before, "shift at {at}");
        assert!(
            !got.contains_key("pad"),
            "the $project after the window ran"
        );
    }
    let spilled = query_metric(&client, "docgateSpill", "files").await;
    assert!(spilled > files, "no temporary files past the limit");

    // Four partitions by `g`, each past the limit, a range window. The first batch windows
    // the first partition; the others are windowed (and spooled) by the `getMore`s.
    let cursor = coll
        .aggregate(vec![
            doc! {"$setWindowFields": {"partitionBy": "$g", "sortBy": {"k": 1}, "output": {
                "total": {"$sum": "$v"},
                "near": {"$count": {}, "window": {"range": [0, 100]}},
            }}},
        ])
        .batch_size(50)
        .await
        .expect("windows by partition");
    let opened = query_metric(&client, "docgateSpill", "files").await;
    let partitioned = collect(cursor).await;
    let drained = query_metric(&client, "docgateSpill", "files").await;
    assert!(
        drained > opened,
        "partitions windowed by getMore were not spooled: files {opened} → {drained}"
    );
    assert_eq!(partitioned.len(), COUNT as usize);
    for g in 0..4 {
        let members: Vec<&Document> = by_k.iter().filter(|d| int(d, "g") == g).collect();
        let total: i64 = members.iter().map(|d| int(d, "v")).sum();
        let got: Vec<&Document> = partitioned.iter().filter(|d| int(d, "g") == g).collect();
        assert_eq!(got.len(), members.len());
        for (got, source) in got.iter().zip(&members) {
            assert_eq!(got.get("_id"), source.get("_id"), "partition {g} order");
            assert_eq!(int(got, "total"), total, "partition {g} total");
            let k = int(source, "k");
            let near = members
                .iter()
                .filter(|d| (k..=k + 100).contains(&int(d, "k")))
                .count();
            assert_eq!(int(got, "near"), near as i64, "range count at k {k}");
        }
    }

    // An output reading whole documents: the partition is held, the answer the same.
    let whole = run(
        &coll,
        vec![
            doc! {"$setWindowFields": {"sortBy": {"k": 1}, "output": {
                "next": {"$shift": {"output": "$$ROOT", "by": 1}},
            }}},
            doc! {"$project": {"pad": 0, "next.pad": 0}},
        ],
    )
    .await;
    for (at, got) in whole.iter().enumerate() {
        let next = got.get_document("next").ok().map(|n| int(n, "_id"));
        let expected = by_k.get(at + 1).map(|d| int(d, "_id"));
        assert_eq!(next, expected, "shift of $$ROOT at {at}");
    }

    // The cursor windows partitions as it is drained: an error in the stages after the
    // window on the last document in window order comes with a `getMore`, after the first
    // batch was answered (a pipeline computed whole would fail the `aggregate` itself).
    let last_k = COUNT - 1;
    let cursor = coll
        .aggregate(vec![
            doc! {"$setWindowFields": {"sortBy": {"k": 1}, "output": {"n": {"$documentNumber": {}}}}},
            doc! {"$set": {"inverse": {"$divide": [1, {"$subtract": ["$k", last_k]}]}}},
        ])
        .batch_size(50)
        .await
        .expect("the first batch comes before the last partition is windowed");
    let mut cursor = cursor;
    let mut answered = 0;
    let failure = loop {
        match futures_util::StreamExt::next(&mut cursor).await {
            Some(Ok(_)) => answered += 1,
            Some(Err(error)) => break error,
            None => panic!("division by zero answered"),
        }
    };
    // The batch that reaches the last document fails whole.
    assert!(
        (50..COUNT as usize).contains(&answered),
        "{answered}: {failure}"
    );
    assert!(server_code(&failure).is_some(), "{failure}");

    // Refusing disk use: 292, as MongoDB answers.
    let refused = coll
        .aggregate(vec![
            doc! {"$setWindowFields": {"sortBy": {"k": 1}, "output": {"n": {"$count": {}}}}},
        ])
        .allow_disk_use(false)
        .await;
    let code = match refused {
        Err(error) => server_code(&error),
        Ok(cursor) => collect(cursor)
            .await
            .first()
            .map(|_| panic!("answered past the limit without disk use")),
    };
    assert_eq!(code, Some(292));
}
