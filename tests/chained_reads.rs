//! `aggregate` pipelines of per-document stages and blocking ones (`$sort` with the
//! `$skip`/`$limit` after it, a leading `$sort` no index serves, `$group`, `$bucket`,
//! `$bucketAuto`, `$count`, `$setWindowFields`, `$sample`, `$densify`, `$unionWith`, `$facet`,
//! `$skip`/`$limit` after a per-document stage), checked with the Rust `mongodb` driver
//! against the real `docgate` binary on SQLite and — with `DOCGATE_TEST_BACKEND` set to a
//! `postgres://` URL — on PostgreSQL, under a 40 KB `--blocking-stage-memory-limit-bytes`,
//! on cursors drained in batches of 50:
//!
//! - the windows are MongoDB's (running sums, ranks, shifts, partition totals, ranges over
//!   partitions), and so are the sorts, skips, limits and groups after a `$set`, computed
//!   here from the seeded documents;
//! - past the limit the input goes through temporary files and a window partition past it
//!   is spooled (`serverStatus.metrics.query.docgateSpill.files` grows), also the partitions
//!   the `getMore`s window; an output that reads whole documents (`$$ROOT`) holds its
//!   partition in memory, with the same answer;
//! - the cursor drains the last blocking stage as it is asked: an error on the last
//!   document in its order comes with a `getMore`, after earlier batches were answered;
//! - with `allowDiskUse: false` the same pipelines answer 292;
//! - samples are distinct documents in no fixed order, unions come in input order then the
//!   other collection's, auto buckets, densified ranges (5897900 past 500,000 generated
//!   documents) and facets are MongoDB's, and `explain` says which stages a pipeline chains,
//!   streams or holds (`docgate.pipeline`; a `count` of a view: held);
//! - under a case-insensitive collation a chain groups, sorts and matches with the collator.
//!
//! Not for: the window functions one by one (`cargo test --lib window`), a leading `$sort`
//! followed by per-document stages only (`rest_documents.rs`, `snapshot_reads.rs`) or
//! pymongo's `test_spill.py`.
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

/// A server holding at most 40 KB per blocking stage, spilling under `temp`.
fn limited_server(temp: &tempfile::TempDir) -> TestServer {
    TestServer::start_with_args(&[
        "--blocking-stage-memory-limit-bytes",
        "40000",
        "--temp-dir",
        temp.path().to_str().expect("utf-8 temp dir"),
    ])
}

/// `pipeline` drained 50 documents per batch: the first batch comes, and the error its
/// stages make on the last document in the blocking stage's order comes with a `getMore`,
/// after earlier batches (a pipeline computed whole would fail the `aggregate` itself).
async fn assert_late_error_comes_with_a_get_more(
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

/// How `explain` says the stages of `pipeline` over `coll` after its read run
/// (`docgate.pipeline`): its mode, and the blocking stages of a chain.
async fn execution(coll: &Collection<Document>, pipeline: Vec<Document>) -> (String, Vec<String>) {
    let db = coll.client().database(coll.namespace().db.as_str());
    let reply = db
        .run_command(
            doc! {"explain": {"aggregate": coll.name(), "pipeline": pipeline, "cursor": {}}},
        )
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

fn chained(stages: &[&str]) -> (String, Vec<String>) {
    let names = stages.iter().map(|name| name.to_string()).collect();
    ("chained".to_string(), names)
}

fn mode(mode: &str) -> (String, Vec<String>) {
    (mode.to_string(), Vec::new())
}

/// `pipeline` with `allowDiskUse: false`: 292, as MongoDB answers past the limit.
async fn assert_refused_without_disk_use(coll: &Collection<Document>, pipeline: Vec<Document>) {
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

#[tokio::test]
async fn windows_between_per_document_stages_stream_and_spill_past_the_limit() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = limited_server(&temp);
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

    // The cursor windows partitions as it is drained.
    let last_k = COUNT - 1;
    assert_late_error_comes_with_a_get_more(
        &coll,
        vec![
            doc! {"$setWindowFields": {"sortBy": {"k": 1}, "output": {"n": {"$documentNumber": {}}}}},
            doc! {"$set": {"inverse": {"$divide": [1, {"$subtract": ["$k", last_k]}]}}},
        ],
    )
    .await;

    assert_refused_without_disk_use(
        &coll,
        vec![doc! {"$setWindowFields": {"sortBy": {"k": 1}, "output": {"n": {"$count": {}}}}}],
    )
    .await;
}

#[tokio::test]
async fn sorts_and_groups_after_per_document_stages_stream_and_spill_past_the_limit() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = limited_server(&temp);
    let client = server.client().await;
    let coll: Collection<Document> = client.database("chains").collection("items");
    let docs = seeded();
    coll.insert_many(docs.clone()).await.expect("seed");

    // A `$sort` on a field a `$set` made, with a `$skip` and a `$limit` after it.
    let files = query_metric(&client, "docgateSpill", "files").await;
    let page = run(
        &coll,
        vec![
            doc! {"$set": {"rank": {"$subtract": [0, "$v"]}}},
            doc! {"$sort": {"rank": 1, "_id": 1}},
            doc! {"$skip": 10},
            doc! {"$limit": 600},
            doc! {"$project": {"pad": 0}},
        ],
    )
    .await;
    let mut by_rank = docs.clone();
    by_rank.sort_by_key(|d| (-int(d, "v"), int(d, "_id")));
    let expected: Vec<i64> = by_rank[10..610].iter().map(|d| int(d, "_id")).collect();
    let got: Vec<i64> = page.iter().map(|d| int(d, "_id")).collect();
    assert_eq!(got, expected, "sorted page");
    assert!(page
        .iter()
        .all(|d| !d.contains_key("pad") && d.contains_key("rank")));
    let spilled = query_metric(&client, "docgateSpill", "files").await;
    assert!(
        spilled > files,
        "600 kept documents of ~150 bytes stayed in 40 KB"
    );

    // A `$group` taking the `$first` of a sorted input, then a `$sort` of the groups.
    let groups = run(
        &coll,
        vec![
            doc! {"$set": {"w": {"$add": ["$v", 1]}}},
            doc! {"$sort": {"k": -1}},
            doc! {"$group": {"_id": "$g", "top": {"$first": "$_id"}, "n": {"$sum": 1}, "w": {"$sum": "$w"}}},
            doc! {"$sort": {"_id": 1}},
        ],
    )
    .await;
    let mut by_k_descending = docs.clone();
    by_k_descending.sort_by_key(|d| -int(d, "k"));
    assert_eq!(groups.len(), 4);
    for (g, group) in groups.iter().enumerate() {
        let members: Vec<&Document> = by_k_descending
            .iter()
            .filter(|d| int(d, "g") == g as i64)
            .collect();
        assert_eq!(int(group, "_id"), g as i64);
        assert_eq!(group.get("top"), members[0].get("_id"), "group {g} $first");
        assert_eq!(int(group, "n"), members.len() as i64);
        let w: i64 = members.iter().map(|d| int(d, "v") + 1).sum();
        assert_eq!(int(group, "w"), w, "group {g} $sum");
    }

    // The same groups from a leading `$sort` no index serves: the sort is the chain's first
    // blocking stage, and the groups come out as the cursor asks (an error on the last one
    // comes with a `getMore`).
    let from_leading_sort = run(
        &coll,
        vec![
            doc! {"$sort": {"k": -1}},
            doc! {"$group": {"_id": "$g", "top": {"$first": "$_id"}, "n": {"$sum": 1}, "w": {"$sum": {"$add": ["$v", 1]}}}},
            doc! {"$sort": {"_id": 1}},
        ],
    )
    .await;
    assert_eq!(from_leading_sort, groups);
    let last_k = COUNT - 1;
    assert_late_error_comes_with_a_get_more(
        &coll,
        vec![
            doc! {"$sort": {"k": 1}},
            doc! {"$group": {"_id": "$k", "n": {"$sum": 1}}},
            doc! {"$set": {"inverse": {"$divide": [1, {"$subtract": ["$_id", last_k]}]}}},
        ],
    )
    .await;

    // Ties of a leading `$sort` come in `_id` order, whatever the storage order: of five
    // equal keys stored in descending `_id` order, the `$limit` keeps the lowest `_id`.
    let ties: Collection<Document> = client.database("chains").collection("ties");
    let stored: Vec<Document> = (1..=5).rev().map(|i| doc! {"_id": i, "a": 1}).collect();
    ties.insert_many(stored).await.expect("seed ties");
    let kept = run(
        &ties,
        vec![
            doc! {"$sort": {"a": 1}},
            doc! {"$limit": 1},
            doc! {"$group": {"_id": "$_id"}},
        ],
    )
    .await;
    assert_eq!(kept, vec![doc! {"_id": 1}], "tie order");

    // `$skip` and `$limit` after a per-document stage: a slice of the read, in natural
    // order, handed out as the cursor asks.
    let slice = run(
        &coll,
        vec![
            doc! {"$set": {"w": 1}},
            doc! {"$skip": 3},
            doc! {"$limit": 5},
        ],
    )
    .await;
    let slice_ids: Vec<i64> = slice.iter().map(|d| int(d, "_id")).collect();
    assert_eq!(slice_ids, vec![3, 4, 5, 6, 7]);
    assert_late_error_comes_with_a_get_more(
        &coll,
        vec![
            doc! {"$set": {"w": 1}},
            doc! {"$limit": COUNT},
            doc! {"$set": {"inverse": {"$divide": [1, {"$subtract": ["$_id", last_k]}]}}},
        ],
    )
    .await;

    // A `$count` after per-document stages counts what they leave, and answers nothing for
    // nothing, as MongoDB does.
    let counted = run(
        &coll,
        vec![
            doc! {"$unwind": {"path": "$missing", "preserveNullAndEmptyArrays": true}},
            doc! {"$match": {"g": 1}},
            doc! {"$count": "n"},
        ],
    )
    .await;
    assert_eq!(counted, vec![doc! {"n": (COUNT / 4) as i32}]);
    let none = run(
        &coll,
        vec![
            doc! {"$set": {"w": 1}},
            doc! {"$match": {"w": 2}},
            doc! {"$count": "n"},
        ],
    )
    .await;
    assert!(none.is_empty(), "{none:?}");

    // A `$bucket` after a per-document stage: the counts per boundary, in boundary order.
    let buckets = run(
        &coll,
        vec![
            doc! {"$set": {"w": "$v"}},
            doc! {"$bucket": {"groupBy": "$w", "boundaries": [0, 25, 50, 101], "output": {"n": {"$sum": 1}}}},
        ],
    )
    .await;
    let bucket_counts: Vec<(i64, i64)> = buckets
        .iter()
        .map(|d| (int(d, "_id"), int(d, "n")))
        .collect();
    let count_in = |low: i64, high: i64| {
        docs.iter()
            .filter(|d| (low..high).contains(&int(d, "v")))
            .count() as i64
    };
    assert_eq!(
        bucket_counts,
        vec![
            (0, count_in(0, 25)),
            (25, count_in(25, 50)),
            (50, count_in(50, 101))
        ]
    );

    // An `$unwind` after the sort makes seven documents of each: batches keep their size,
    // the rest of a document's seven wait for the next batch.
    let db = client.database("chains");
    let reply = db
        .run_command(doc! {"aggregate": "items", "pipeline": [
            {"$set": {"t": [1, 2, 3, 4, 5, 6, 7]}},
            {"$sort": {"k": 1}},
            {"$unwind": "$t"},
            {"$project": {"k": 1, "t": 1}},
        ], "cursor": {"batchSize": 3}})
        .await
        .expect("unwound after a sort");
    let first_batch = reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .expect("firstBatch");
    assert_eq!(first_batch.len(), 3, "{reply}");
    let unwound = run(
        &coll,
        vec![
            doc! {"$set": {"t": [1, 2, 3, 4, 5, 6, 7]}},
            doc! {"$sort": {"k": 1}},
            doc! {"$unwind": "$t"},
        ],
    )
    .await;
    let pairs: Vec<(i64, i64)> = unwound.iter().map(|d| (int(d, "k"), int(d, "t"))).collect();
    let expected: Vec<(i64, i64)> = (0..COUNT)
        .flat_map(|k| (1..=7).map(move |t| (k, t)))
        .collect();
    assert_eq!(pairs, expected, "unwound in sorted order");

    // The cursor drains the sort as it is asked.
    assert_late_error_comes_with_a_get_more(
        &coll,
        vec![
            doc! {"$set": {"key": "$k"}},
            doc! {"$sort": {"key": 1}},
            doc! {"$set": {"inverse": {"$divide": [1, {"$subtract": ["$key", last_k]}]}}},
        ],
    )
    .await;
    assert_refused_without_disk_use(
        &coll,
        vec![doc! {"$set": {"key": "$k"}}, doc! {"$sort": {"key": 1}}],
    )
    .await;
}

#[tokio::test]
async fn samples_unions_auto_buckets_graph_lookups_and_redacts_stream_past_the_limit() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = limited_server(&temp);
    let client = server.client().await;
    let db = client.database("more");
    let coll: Collection<Document> = db.collection("items");
    coll.insert_many(seeded()).await.expect("seed");
    let last_k = int(&seeded()[COUNT as usize - 1], "k");

    // `explain` says which stages are chained, and that those looking at one document at a
    // time stream; a pipeline written out by `$out` runs over held documents.
    let set = doc! {"$set": {"w": 1}};
    let cases = [
        (
            vec![set.clone(), doc! {"$sample": {"size": 3}}],
            chained(&["$sample"]),
        ),
        (
            vec![doc! {"$unionWith": "others"}, doc! {"$limit": 3}],
            chained(&["$unionWith", "$limit"]),
        ),
        (
            vec![doc! {"$bucketAuto": {"groupBy": "$k", "buckets": 2}}],
            chained(&["$bucketAuto"]),
        ),
        (
            vec![
                set.clone(),
                doc! {"$sort": {"w": 1}},
                doc! {"$group": {"_id": "$g"}},
            ],
            chained(&["$sort", "$group"]),
        ),
        (
            vec![
                doc! {"$redact": "$$KEEP"},
                doc! {"$graphLookup": {"from": "others", "startWith": "$g",
                "connectFromField": "k", "connectToField": "k", "as": "r"}},
            ],
            mode("streamed"),
        ),
        (
            vec![
                set.clone(),
                doc! {"$group": {"_id": "$g"}},
                doc! {"$sort": {"_id": 1}},
            ],
            mode("grouped"),
        ),
        (
            vec![doc! {"$densify": {"field": "k", "range": {"step": 1, "bounds": "full"}}}],
            chained(&["$densify"]),
        ),
        (vec![set.clone(), doc! {"$out": "elsewhere"}], mode("held")),
    ];
    for (pipeline, expected) in cases {
        assert_eq!(
            execution(&coll, pipeline.clone()).await,
            expected,
            "{pipeline:?}"
        );
    }

    // `$sample` after a `$set`: a top-k sort by a random key, spilled past the limit.
    let files = query_metric(&client, "docgateSpill", "files").await;
    let size: i64 = 1_500;
    let sampled = run(
        &coll,
        vec![doc! {"$set": {"w": 1}}, doc! {"$sample": {"size": size}}],
    )
    .await;
    let mut ids: Vec<i64> = sampled.iter().map(|d| int(d, "_id")).collect();
    assert_eq!(ids.len() as i64, size);
    assert!(
        sampled.iter().all(|d| int(d, "w") == 1),
        "the $set ran first"
    );
    assert!(!ids.is_sorted(), "a sample of 1,500 came in _id order");
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len() as i64, size, "a document sampled twice");
    assert!(ids.iter().all(|id| (0..COUNT).contains(id)));
    let spilled = query_metric(&client, "docgateSpill", "files").await;
    assert!(
        spilled > files,
        "the sample held past the limit: no temporary files"
    );
    assert_refused_without_disk_use(
        &coll,
        vec![doc! {"$set": {"w": 1}}, doc! {"$sample": {"size": size}}],
    )
    .await;

    // `$unionWith` after a `$set`: the input in its order, then the other collection's
    // documents through its pipeline, then the stages after it over both.
    let others: Collection<Document> = db.collection("others");
    let other_docs: Vec<Document> = (0..10).map(|i| doc! {"_id": 10_000 + i, "k": -i}).collect();
    others.insert_many(other_docs).await.expect("seed others");
    let union = vec![
        doc! {"$set": {"from": "items"}},
        doc! {"$unionWith": {"coll": "others", "pipeline": [{"$set": {"from": "others"}}]}},
        doc! {"$project": {"pad": 0}},
    ];
    let united = run(&coll, union.clone()).await;
    assert_eq!(united.len(), COUNT as usize + 10);
    let order: Vec<i64> = united.iter().map(|d| int(d, "_id")).collect();
    let expected: Vec<i64> = (0..COUNT).chain(10_000..10_010).collect();
    assert_eq!(
        order, expected,
        "the input first, then the union's documents"
    );
    assert!(united[..COUNT as usize]
        .iter()
        .all(|d| d.get_str("from").ok() == Some("items")));
    assert!(united[COUNT as usize..]
        .iter()
        .all(|d| d.get_str("from").ok() == Some("others")));
    assert!(united.iter().all(|d| !d.contains_key("pad")));
    // The cursor hands the union out as it is asked: an error on the last of the other
    // collection's documents comes with a `getMore`.
    let mut failing = union;
    failing.push(doc! {"$set": {"inverse": {"$divide": [1, {"$add": ["$k", 9]}]}}});
    let mut cursor = coll
        .aggregate(failing)
        .batch_size(50)
        .await
        .expect("first batch");
    let mut answered = 0;
    while let Some(next) = futures_util::StreamExt::next(&mut cursor).await {
        match next {
            Ok(_) => answered += 1,
            Err(error) => {
                assert!(server_code(&error).is_some(), "{error}");
                break;
            }
        }
    }
    assert_eq!(
        answered, COUNT,
        "batches before the one reaching the failing document"
    );

    // `$bucketAuto` after a `$redact`: seven buckets of the 2,000 distinct `k`s, each of
    // round(2000 / 7) = 286 but the last, sorted through runs past the limit.
    let files = query_metric(&client, "docgateSpill", "files").await;
    let buckets = run(
        &coll,
        vec![
            doc! {"$redact": {"$cond": [{"$lt": ["$k", 1_999]}, "$$KEEP", "$$PRUNE"]}},
            doc! {"$bucketAuto": {"groupBy": "$k", "buckets": 7, "output": {
                "n": {"$sum": 1}, "top": {"$max": "$k"},
            }}},
        ],
    )
    .await;
    let spilled = query_metric(&client, "docgateSpill", "files").await;
    assert!(spilled > files, "the buckets' sort held past the limit");
    let counts: Vec<i64> = buckets.iter().map(|d| int(d, "n")).collect();
    assert_eq!(counts, vec![286, 286, 286, 286, 286, 286, 283]);
    for (at, bucket) in buckets.iter().enumerate() {
        let id = bucket.get_document("_id").expect("bucket _id");
        let min = at as i64 * 286;
        assert_eq!(int(id, "min"), min, "bucket {at}");
        let top = if at == 6 { 1_998 } else { min + 285 };
        assert_eq!(int(bucket, "top"), top, "bucket {at}");
        // Each bucket's max is the next one's min; the last one's is its largest value.
        assert_eq!(int(id, "max"), if at == 6 { 1_998 } else { min + 286 });
    }
    assert_refused_without_disk_use(
        &coll,
        vec![doc! {"$bucketAuto": {"groupBy": "$k", "buckets": 7}}],
    )
    .await;

    // `$graphLookup` and `$redact` look at one document at a time: their pipeline streams
    // like a `find`, and an error on the last document comes with a `getMore`.
    let chained = run(
        &coll,
        vec![
            doc! {"$graphLookup": {"from": "others", "startWith": "$g", "connectFromField": "k",
            "connectToField": "k", "as": "reached", "maxDepth": 0}},
            doc! {"$redact": "$$DESCEND"},
            doc! {"$sort": {"k": -1}},
            doc! {"$limit": 3},
        ],
    )
    .await;
    // `others` holds one document with each `k` of 0, -1, …, -9: starting from `g` (0 to
    // 3) at depth 0, a document reaches one when its `g` is 0, none otherwise.
    let reached: Vec<(i64, usize)> = chained
        .iter()
        .map(|d| {
            let found = d.get_array("reached").expect("as").len();
            assert_eq!(found, usize::from(int(d, "g") == 0), "{d}");
            (int(d, "k"), found)
        })
        .collect();
    assert_eq!(
        reached.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
        vec![1_999, 1_998, 1_997]
    );
    assert_late_error_comes_with_a_get_more(
        &coll,
        vec![
            doc! {"$graphLookup": {"from": "others", "startWith": "$g", "connectFromField": "k",
            "connectToField": "k", "as": "reached"}},
            doc! {"$redact": "$$DESCEND"},
            doc! {"$set": {"inverse": {"$divide": [1, {"$subtract": ["$k", last_k]}]}}},
        ],
    )
    .await;
}

#[tokio::test]
async fn facets_run_their_sub_pipelines_as_chains_past_the_limit() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = limited_server(&temp);
    let client = server.client().await;
    let coll: Collection<Document> = client.database("facets").collection("items");
    let docs = seeded();
    coll.insert_many(docs.clone()).await.expect("seed");

    // Four sub-pipelines over the same input after a `$set`: a sort past the limit with a
    // slice after a per-document stage, a group, a count, and per-document stages alone.
    let files = query_metric(&client, "docgateSpill", "files").await;
    let pipeline = vec![
        doc! {"$set": {"w": {"$mod": ["$v", 7]}}},
        doc! {"$facet": {
            "lowest": [{"$sort": {"k": 1}}, {"$project": {"k": 1}}, {"$skip": 10}, {"$limit": 3}],
            "by_g": [{"$group": {"_id": "$g", "w": {"$sum": "$w"}}}, {"$sort": {"_id": 1}}],
            "counted": [{"$match": {"g": 1}}, {"$count": "n"}],
            "few": [{"$match": {"k": {"$lt": 3}}}, {"$project": {"k": 1}}],
        }},
    ];
    let faceted = run(&coll, pipeline.clone()).await;
    assert_eq!(execution(&coll, pipeline).await, chained(&["$facet"]));
    let spilled = query_metric(&client, "docgateSpill", "files").await;
    assert!(
        spilled > files,
        "the sub-pipeline's sort held past the limit"
    );
    assert_eq!(faceted.len(), 1);
    let facets = &faceted[0];
    let ks = |name: &str| -> Vec<i64> {
        let outputs = facets
            .get_array(name)
            .unwrap_or_else(|_| panic!("{name} in {facets}"));
        outputs
            .iter()
            .map(|d| int(d.as_document().expect("a document"), "k"))
            .collect()
    };
    assert_eq!(ks("lowest"), vec![10, 11, 12]);
    let mut few = ks("few");
    few.sort_unstable();
    assert_eq!(few, vec![0, 1, 2]);
    let by_g: Vec<(i64, i64)> = facets
        .get_array("by_g")
        .expect("by_g")
        .iter()
        .map(|d| {
            let d = d.as_document().expect("a group");
            (int(d, "_id"), int(d, "w"))
        })
        .collect();
    let expected: Vec<(i64, i64)> = (0..4)
        .map(|g| {
            let w = docs
                .iter()
                .filter(|d| int(d, "g") == g)
                .map(|d| int(d, "v") % 7)
                .sum();
            (g, w)
        })
        .collect();
    assert_eq!(by_g, expected);
    let counted = facets.get_array("counted").expect("counted");
    assert_eq!(counted.len(), 1);
    assert_eq!(
        int(counted[0].as_document().expect("count"), "n"),
        COUNT / 4
    );

    // A view read by `find` runs as the aggregate on the collection it reads; a `count` of
    // it runs its pipeline over held documents.
    let db = client.database("facets");
    db.create_collection("sorted_view")
        .view_on("items".to_string())
        .pipeline(vec![doc! {"$set": {"w": 1}}, doc! {"$sort": {"w": 1}}])
        .await
        .expect("create view");
    let explain_of = |command: Document| {
        let db = db.clone();
        async move {
            let reply = db
                .run_command(doc! {"explain": command})
                .await
                .expect("explain");
            let plan = reply
                .get_document("queryPlanner")
                .and_then(|p| p.get_document("winningPlan"));
            let docgate = plan
                .and_then(|p| p.get_document("docgate"))
                .expect("docgate");
            docgate
                .get_document("pipeline")
                .expect("pipeline")
                .get_str("mode")
                .expect("mode")
                .to_string()
        }
    };
    assert_eq!(
        explain_of(doc! {"find": "sorted_view", "filter": {}}).await,
        "chained"
    );
    assert_eq!(explain_of(doc! {"count": "sorted_view"}).await, "held");

    // The document a `$facet` builds is held: past the limit it is 4031700, as MongoDB
    // answers past its own; with `allowDiskUse: false` a sort past the limit is 292.
    let whole = coll
        .aggregate(vec![doc! {"$facet": {"all": [{"$match": {}}]}}])
        .await
        .map(|_| ())
        .expect_err("a $facet output past the limit");
    assert_eq!(server_code(&whole), Some(4031700), "{whole}");
    assert_refused_without_disk_use(
        &coll,
        vec![
            doc! {"$facet": {"sorted": [{"$sort": {"k": 1}}, {"$limit": 1_500}, {"$count": "n"}]}},
        ],
    )
    .await;
}

#[tokio::test]
async fn densify_streams_its_sort_and_what_it_generates() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = limited_server(&temp);
    let client = server.client().await;
    let coll: Collection<Document> = client.database("densify").collection("items");
    coll.insert_many(seeded()).await.expect("seed");

    // Each of the four partitions by `g` holds 500 of the 2,000 `k`s: over the full range
    // each gets the 1,500 it lacks, and the answer comes by `k` alone, partitions
    // interleaved, as MongoDB answers a full-range densify with partitions.
    let files = query_metric(&client, "docgateSpill", "files").await;
    let pipeline = vec![
        doc! {"$set": {"w": 1}},
        doc! {"$densify": {"field": "k", "partitionByFields": ["g"], "range": {"step": 1, "bounds": "full"}}},
    ];
    assert_eq!(
        execution(&coll, pipeline.clone()).await,
        chained(&["$densify"])
    );
    let densified = run(&coll, pipeline).await;
    let spilled = query_metric(&client, "docgateSpill", "files").await;
    assert!(spilled > files, "the densify's sort held past the limit");
    assert_eq!(densified.len(), 4 * COUNT as usize);
    let mut seen = std::collections::HashSet::new();
    for (at, document) in densified.iter().enumerate() {
        let (k, g) = (int(document, "k"), int(document, "g"));
        assert_eq!(k, at as i64 / 4, "by k at {at}");
        assert!(seen.insert((k, g)), "({k}, {g}) twice");
        // A generated document holds the field and the partition only.
        let generated = !document.contains_key("_id");
        assert_eq!(generated, !document.contains_key("w"), "{document}");
        if generated {
            assert_eq!(document.len(), 2, "{document}");
        }
    }
    let originals = densified.iter().filter(|d| d.contains_key("_id")).count();
    assert_eq!(originals, COUNT as usize);

    // Each partition's own range, in steps of 7, after a `$match`: one partition, in `k`
    // order, a document at every step from its smallest `k` that none holds.
    let own = run(
        &coll,
        vec![
            doc! {"$match": {"g": 2}},
            doc! {"$densify": {"field": "k", "partitionByFields": ["g"], "range": {"step": 7, "bounds": "partition"}}},
        ],
    )
    .await;
    let mut ks: Vec<i64> = seeded()
        .iter()
        .filter(|d| int(d, "g") == 2)
        .map(|d| int(d, "k"))
        .collect();
    ks.sort_unstable();
    let (low, high) = (ks[0], ks[ks.len() - 1]);
    let mut expected: Vec<i64> = ks.clone();
    expected.extend((low..=high).step_by(7).filter(|k| !ks.contains(k)));
    expected.sort_unstable();
    let got: Vec<i64> = own.iter().map(|d| int(d, "k")).collect();
    assert_eq!(got, expected);

    // It generates as the cursor asks: MongoDB's limit of 500,000 generated documents is
    // 5897900, and a `$count` after it drains it without a cursor.
    let too_many = coll
        .aggregate(vec![
            doc! {"$densify": {"field": "k", "range": {"step": 1, "bounds": [0, 600_000]}}},
            doc! {"$count": "n"},
        ])
        .await
        .map(|_| ())
        .expect_err("past the generated documents' limit");
    assert_eq!(server_code(&too_many), Some(5897900), "{too_many}");
    assert_refused_without_disk_use(
        &coll,
        vec![doc! {"$densify": {"field": "k", "range": {"step": 1, "bounds": "full"}}}],
    )
    .await;
}

#[tokio::test]
async fn chains_compare_under_the_pipelines_collation() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = limited_server(&temp);
    let client = server.client().await;
    let db = client.database("collated");
    let coll: Collection<Document> = db.collection("items");
    // Names in three spellings of case: "Name7", "name7", "NAME7", … past the limit.
    let pad = "x".repeat(120);
    let spellings = |i: i64| match i % 3 {
        0 => format!("Name{}", i % 50),
        1 => format!("name{}", i % 50),
        _ => format!("NAME{}", i % 50),
    };
    let docs: Vec<Document> = (0..COUNT)
        .map(|i| doc! {"_id": i, "name": spellings(i), "pad": pad.clone()})
        .collect();
    coll.insert_many(docs).await.expect("seed");
    let case_insensitive = mongodb::options::Collation::builder()
        .locale("en")
        .strength(mongodb::options::CollationStrength::Secondary)
        .build();
    let collated = |pipeline: Vec<Document>| {
        let coll = coll.clone();
        let collation = case_insensitive.clone();
        async move {
            let cursor = coll
                .aggregate(pipeline.clone())
                .collation(collation)
                .batch_size(50)
                .await
                .unwrap_or_else(|e| panic!("{pipeline:?}: {e}"));
            collect(cursor).await
        }
    };

    // A `$group` after a `$set` groups the three spellings as one name: 50 groups of 40.
    let files = query_metric(&client, "docgateSpill", "files").await;
    let groups = collated(vec![
        doc! {"$set": {"key": "$name"}},
        doc! {"$group": {"_id": "$key", "n": {"$sum": 1}}},
        doc! {"$sort": {"_id": 1}},
    ])
    .await;
    assert_eq!(groups.len(), 50, "{groups:?}");
    assert!(
        groups.iter().all(|g| int(g, "n") == COUNT / 50),
        "{groups:?}"
    );

    // A `$sort` by the name after a `$set`, through runs past the limit, keeps the three
    // spellings together ("name10" after "NAME1" …), and a `$match` after it compares
    // under the collation too.
    let sorted = collated(vec![
        doc! {"$set": {"key": "$name"}},
        doc! {"$sort": {"key": 1, "_id": 1}},
        doc! {"$match": {"key": "name7"}},
        doc! {"$project": {"pad": 0}},
    ])
    .await;
    let spilled = query_metric(&client, "docgateSpill", "files").await;
    assert!(spilled > files, "the collated sort held past the limit");
    let ids: Vec<i64> = sorted.iter().map(|d| int(d, "_id")).collect();
    let expected: Vec<i64> = (0..COUNT).filter(|i| i % 50 == 7).collect();
    assert_eq!(ids, expected, "every spelling of name7, in _id order");
    let all = collated(vec![
        doc! {"$set": {"key": "$name"}},
        doc! {"$sort": {"key": 1, "_id": 1}},
    ])
    .await;
    let lowered: Vec<String> = all
        .iter()
        .map(|d| d.get_str("key").expect("key").to_lowercase())
        .collect();
    let mut expected = lowered.clone();
    expected.sort();
    assert_eq!(lowered, expected, "sorted without regard to case");

    // A group by a constant, counted in SQL: the stages after it compare under the
    // collation too.
    let counted = collated(vec![
        doc! {"$group": {"_id": "ABC", "n": {"$sum": 1}}},
        doc! {"$match": {"_id": "abc"}},
    ])
    .await;
    assert_eq!(counted.len(), 1, "{counted:?}");
    assert_eq!(int(&counted[0], "n"), COUNT);

    // `explain` says the collated pipeline is chained.
    let reply = db
        .run_command(doc! {"explain": {"aggregate": "items", "pipeline": [
            {"$set": {"key": "$name"}}, {"$sort": {"key": 1}},
        ], "cursor": {}, "collation": {"locale": "en", "strength": 2}}})
        .await
        .expect("explain");
    let mode = reply
        .get_document("queryPlanner")
        .and_then(|p| p.get_document("winningPlan"))
        .and_then(|p| p.get_document("docgate"))
        .and_then(|d| d.get_document("pipeline"))
        .and_then(|p| p.get_str("mode"))
        .expect("docgate.pipeline.mode");
    assert_eq!(mode, "chained", "{reply}");
}
