//! `aggregate` pipelines of per-document stages and blocking ones (`$sort` with the
//! `$skip`/`$limit` after it, a leading `$sort` no index serves, `$group`, `$bucket`,
//! `$count`, `$setWindowFields`, `$skip`/`$limit` after a per-document stage), checked with the Rust `mongodb` driver
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
//! - with `allowDiskUse: false` the same pipelines answer 292.
//!
//! Not for: the window functions one by one (`cargo test --lib window`), a leading `$sort`
//! followed by per-document stages only (`rest_documents.rs`, `snapshot_reads.rs`) or
//! pymongo's `test_spill.py`; the other blocking stages and collations
//! (`chained_stages.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod chain_support;
mod common;
mod driver_support;

use chain_support::*;
use common::query_metric;
use driver_support::collect;
use mongodb::bson::{doc, Document};
use mongodb::Collection;

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
