//! `$out` and `$merge` after pipelines that stream, with the Rust `mongodb` driver against
//! the real `docgate` binary on SQLite and — with `DOCGATE_TEST_BACKEND` set to a
//! `postgres://` URL — on PostgreSQL, under a 40 KB `--blocking-stage-memory-limit-bytes`,
//! over 2,000 documents (~300 KB, and more than one write chunk of 1,000):
//!
//! - the result is spooled through temporary files past the limit and written whole, also
//!   with `allowDiskUse: false` (MongoDB writes as it goes and has nothing to refuse);
//! - `$out` keeps the target's indexes, maintained as it writes: a unique one the new
//!   content breaks is E11000 and the old content stays, an array makes one multikey;
//! - `$merge` into the collection the pipeline reads merges each document once;
//! - `explain` says the stages before the write stream or chain.
//!
//! Not for: the modes and errors of `$out`/`$merge` (`aggregate_writes.rs` and pymongo's
//! `test_aggregate_writes.py`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod chain_support;
mod common;
mod driver_support;

use chain_support::*;
use common::query_metric;
use driver_support::{collect, server_code};
use mongodb::bson::{doc, Document};
use mongodb::options::{Hint, IndexOptions};
use mongodb::{Collection, IndexModel};

/// Runs `pipeline` (ending in `$out`/`$merge`) on `coll` with `allowDiskUse` as given.
async fn write(
    coll: &Collection<Document>,
    pipeline: Vec<Document>,
    allow_disk_use: bool,
) -> mongodb::error::Result<()> {
    let cursor = coll
        .aggregate(pipeline)
        .allow_disk_use(allow_disk_use)
        .await?;
    assert!(
        collect(cursor).await.is_empty(),
        "a write answers no documents"
    );
    Ok(())
}

/// `coll`'s documents by `_id`.
async fn by_id(coll: &Collection<Document>) -> Vec<Document> {
    collect(coll.find(doc! {}).sort(doc! {"_id": 1}).await.unwrap()).await
}

#[tokio::test]
async fn out_spools_a_streamed_result_and_keeps_the_targets_indexes() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = limited_server(&temp);
    let client = server.client().await;
    let db = client.database("streamed_out");
    let items: Collection<Document> = db.collection("items");
    items.insert_many(seeded()).await.expect("seed");
    let target: Collection<Document> = db.collection("target");
    target.insert_one(doc! {"_id": "old"}).await.unwrap();
    let unique = IndexOptions::builder().unique(true).build();
    let unique_index = |keys| IndexModel::builder().keys(keys).options(unique.clone());
    target
        .create_index(unique_index(doc! {"k": 1}).build())
        .await
        .unwrap();
    target
        .create_index(IndexModel::builder().keys(doc! {"tags": 1}).build())
        .await
        .unwrap();

    let computed = doc! {"$set": {"w": {"$multiply": ["$v", 2]}, "tags": ["$g", "$v"]}};
    let per_document = vec![computed.clone(), doc! {"$out": "target"}];
    assert_eq!(
        execution(&items, per_document.clone()).await,
        mode("streamed")
    );
    let files = query_metric(&client, "docgateSpill", "files").await;
    write(&items, per_document, false).await.expect("$out");
    assert!(
        query_metric(&client, "docgateSpill", "files").await > files,
        "~300 KB written through a 40 KB limit: no temporary files"
    );
    let written = by_id(&target).await;
    assert_eq!(written.len() as i64, COUNT, "the old content is gone");
    for (document, seed) in written.iter().zip(seeded()) {
        assert_eq!(int(document, "_id"), int(&seed, "_id"));
        assert_eq!(int(document, "w"), 2 * int(&seed, "v"));
    }
    // The indexes were kept and serve queries; `tags` is an array: the index is multikey.
    let names = target.list_index_names().await.unwrap();
    assert!(names.contains(&"k_1".to_string()) && names.contains(&"tags_1".to_string()));
    let tagged = collect(target.find(doc! {"tags": 100}).await.unwrap()).await;
    let expected = seeded().iter().filter(|d| int(d, "v") == 100).count();
    assert!(expected > 0);
    assert_eq!(tagged.len(), expected, "find by an element of tags");
    // A walk of `tags_1` in order would meet each document twice: the index must know it
    // is multikey, so the sort by `tags` is not served by it.
    let by_tags = target
        .find(doc! {})
        .sort(doc! {"tags": 1})
        .hint(Hint::Keys(doc! {"tags": 1}));
    let by_tags = collect(by_tags.await.unwrap()).await;
    let mut ids: Vec<i64> = by_tags.iter().map(|d| int(d, "_id")).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!((by_tags.len(), ids.len()), (COUNT as usize, COUNT as usize));

    // A chain of blocking stages into `$out`, past the limit through temporary files.
    let sorted = vec![
        computed.clone(),
        doc! {"$sort": {"w": -1, "_id": 1}},
        doc! {"$group": {"_id": "$g", "n": {"$sum": 1}, "top": {"$first": "$_id"}}},
        doc! {"$out": "groups"},
    ];
    assert_eq!(
        execution(&items, sorted.clone()).await.0,
        "chained",
        "{sorted:?}"
    );
    write(&items, sorted, true)
        .await
        .expect("a chain into $out");
    let groups = by_id(&db.collection("groups")).await;
    assert_eq!(groups.len(), 4);
    assert_eq!(groups.iter().map(|g| int(g, "n")).sum::<i64>(), COUNT);

    // The new content breaks the unique index on `k` after the first write chunk (1,000
    // documents): E11000, and the target keeps what it had.
    let colliding = vec![
        doc! {"$set": {"k": {"$cond": [{"$eq": ["$_id", 1500]}, 0, "$k"]}}},
        doc! {"$out": "target"},
    ];
    let error = write(&items, colliding, true).await.expect_err("E11000");
    assert_eq!(server_code(&error), Some(11000), "{error}");
    assert!(error.to_string().contains("k_1"), "{error}");
    assert_eq!(
        by_id(&target).await,
        written,
        "a failed $out changed its target"
    );
    let temporary = db.list_collection_names().await.unwrap();
    assert!(
        temporary
            .iter()
            .all(|name| !name.starts_with("tmp.agg_out")),
        "{temporary:?}"
    );
}

#[tokio::test]
async fn merge_streams_into_the_collection_it_reads() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = limited_server(&temp);
    let client = server.client().await;
    let db = client.database("streamed_merge");
    let items: Collection<Document> = db.collection("items");
    items.insert_many(seeded()).await.expect("seed");

    // Every document merged back into `items` once, though the read outlasts many chunks.
    let increment = vec![
        doc! {"$set": {"v": {"$add": ["$v", 1000]}, "pad": "$$REMOVE"}},
        doc! {"$merge": {"into": "items", "whenMatched": "merge", "whenNotMatched": "fail"}},
    ];
    assert_eq!(execution(&items, increment.clone()).await, mode("streamed"));
    let files = query_metric(&client, "docgateSpill", "files").await;
    write(&items, increment, false).await.expect("$merge");
    assert!(query_metric(&client, "docgateSpill", "files").await > files);
    let merged = by_id(&items).await;
    assert_eq!(merged.len() as i64, COUNT);
    for (document, seed) in merged.iter().zip(seeded()) {
        assert_eq!(int(document, "v"), int(&seed, "v") + 1000, "{document}");
        assert_eq!(document.get_str("pad").ok(), seed.get_str("pad").ok());
    }

    // A chain into `$merge` on another collection: half the keys are there already.
    let totals: Collection<Document> = db.collection("totals");
    totals
        .insert_many((0..50).map(|v| doc! {"_id": v * 2 + 1000, "old": true}))
        .await
        .unwrap();
    let grouped = vec![
        doc! {"$sort": {"k": 1}},
        doc! {"$group": {"_id": "$v", "n": {"$sum": 1}}},
        doc! {"$merge": {"into": "totals", "whenMatched": "merge", "whenNotMatched": "insert"}},
    ];
    write(&items, grouped, true)
        .await
        .expect("a chain into $merge");
    let totals = by_id(&totals).await;
    assert_eq!(totals.len(), 101, "one per value of v");
    assert_eq!(totals.iter().map(|t| int(t, "n")).sum::<i64>(), COUNT);
    assert_eq!(
        totals.iter().filter(|t| t.get_bool("old").is_ok()).count(),
        50,
        "the matched documents were merged, not replaced"
    );
}
