//! Snapshot reads outside a transaction (`readConcern: {level: "snapshot"}` on `find` and
//! `aggregate`), checked with the Rust `mongodb` driver against the real `docgate` binary on
//! SQLite and — with `DOCGATE_TEST_BACKEND` set to a `postgres://` URL — on PostgreSQL:
//!
//! - every batch of the cursor comes from the snapshot the command read in: deletes,
//!   updates and inserts another client makes between the first batch and the `getMore`s
//!   are not seen, and every document of the snapshot comes exactly once, in order;
//! - a result past `--blocking-stage-memory-limit-bytes` is not held: it is spooled to
//!   temporary files under `--temp-dir` (`serverStatus.metrics.query.docgateSpill.files`
//!   grows, and the sort counter does not for a read that is not sorted), also with
//!   `allowDiskUse: false`: the spool stands in for a cursor MongoDB holds nothing of.
//!
//! Not for: snapshot reads inside transactions (`transactions.rs` and the pymongo suite) or
//! spilling sorts (`rest_documents.rs`, pymongo's `test_spill.py`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod cursor_support;
mod driver_support;

use common::{query_metric, TestServer};
use cursor_support::{cursor_batch, get_more};
use mongodb::bson::{doc, Document};
use mongodb::{Collection, Database};

/// Documents in the collection: ~160 KB, past the 40 KB limit the server runs with.
const COUNT: i64 = 1_000;

async fn seed(coll: &Collection<Document>) {
    coll.drop().await.expect("drop");
    let pad = "x".repeat(120);
    let docs: Vec<Document> = (0..COUNT)
        .map(|i| doc! {"_id": i, "v": i, "pad": pad.clone()})
        .collect();
    coll.insert_many(docs).await.expect("seed");
}

/// What another client does while the snapshot cursor is open: deletes, updates, inserts.
async fn write_meanwhile(coll: &Collection<Document>) {
    coll.delete_many(doc! {"v": {"$lt": COUNT / 2}})
        .await
        .expect("delete");
    coll.update_many(doc! {}, doc! {"$inc": {"v": 1_000_000}})
        .await
        .expect("update");
    let late: Vec<Document> = (COUNT..COUNT + 50)
        .map(|i| doc! {"_id": i, "v": i})
        .collect();
    coll.insert_many(late).await.expect("insert");
}

/// Opens `command` (a `find` or `aggregate` on `items` with `batchSize` 40) in a session,
/// lets another client write, then drains the cursor; every document it answered.
async fn read_through_writes(
    db: &Database,
    writer: &Collection<Document>,
    command: Document,
) -> Vec<Document> {
    let client = db.client();
    let mut session = client.start_session().await.expect("session");
    let reply = db
        .run_command(command.clone())
        .session(&mut session)
        .await
        .unwrap_or_else(|e| panic!("{command}: {e}"));
    let (mut id, mut seen) = cursor_batch(&reply);
    assert_ne!(id, 0, "{command}: the first batch holds the whole result");
    write_meanwhile(writer).await;
    let mut rounds = 0;
    while id != 0 {
        rounds += 1;
        assert!(rounds < 1_000, "{command}: the cursor never ends");
        let reply = get_more(db, "items", id, None, &mut session)
            .await
            .unwrap_or_else(|e| panic!("getMore after {command}: {e}"));
        let (next, docs) = cursor_batch(&reply);
        id = next;
        seen.extend(docs);
    }
    seen
}

/// `(_id, v)` of each document, as the snapshot held them.
fn pairs(docs: &[Document]) -> Vec<(i64, i64)> {
    docs.iter()
        .map(|d| (d.get_i64("_id").unwrap(), d.get_i64("v").unwrap()))
        .collect()
}

#[tokio::test]
async fn snapshot_reads_answer_their_snapshot_and_spool_past_the_limit() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = TestServer::start_limited(&temp);
    let client = server.client().await;
    let db = client.database("snap");
    let writer = server.client().await.database("snap").collection("items");
    let snapshot = doc! {"level": "snapshot"};
    let ascending: Vec<(i64, i64)> = (0..COUNT).map(|i| (i, i)).collect();
    let descending: Vec<(i64, i64)> = ascending.iter().rev().copied().collect();
    let cases = [
        (
            "find in natural order",
            doc! {"find": "items", "batchSize": 40, "readConcern": snapshot.clone()},
            ascending.clone(),
            true,
        ),
        (
            "find sorted by _id, refusing disk use",
            doc! {"find": "items", "sort": {"_id": 1}, "batchSize": 40,
            "allowDiskUse": false, "readConcern": snapshot.clone()},
            ascending.clone(),
            true,
        ),
        (
            "find sorted in Rust",
            doc! {"find": "items", "sort": {"v": -1}, "batchSize": 40,
            "readConcern": snapshot.clone()},
            descending.clone(),
            true,
        ),
        (
            "aggregate of per-document stages",
            doc! {"aggregate": "items",
            "pipeline": [{"$match": {"v": {"$gte": 0}}}, {"$set": {"twice": {"$multiply": ["$v", 2]}}}],
            "cursor": {"batchSize": 40}, "readConcern": snapshot.clone()},
            ascending.clone(),
            true,
        ),
        (
            "aggregate with a $sort",
            doc! {"aggregate": "items", "pipeline": [{"$sort": {"v": -1}}, {"$project": {"pad": 0}}],
            "cursor": {"batchSize": 40}, "readConcern": snapshot.clone()},
            descending.clone(),
            true,
        ),
    ];
    for (what, command, expected, spills) in cases {
        seed(&writer).await;
        let files = query_metric(&client, "docgateSpill", "files").await;
        let sorts = query_metric(&client, "sort", "spillToDisk").await;
        let seen = read_through_writes(&db, &writer, command).await;
        assert_eq!(
            pairs(&seen),
            expected,
            "{what}: not the snapshot's documents"
        );
        if what.starts_with("aggregate of") {
            assert!(
                seen.iter()
                    .all(|d| d.get_i64("twice").ok() == Some(2 * d.get_i64("v").unwrap())),
                "{what}: the stages did not run on every document"
            );
        }
        let files_after = query_metric(&client, "docgateSpill", "files").await;
        assert_eq!(
            files_after > files,
            spills,
            "{what}: temporary files {files} → {files_after}"
        );
        if what.starts_with("find in natural") || what.starts_with("aggregate of") {
            // A spool is not a sort.
            let sorts_after = query_metric(&client, "sort", "spillToDisk").await;
            assert_eq!(sorts_after, sorts, "{what}: counted as a spilled sort");
        }
        // The writes happened: a plain read sees them.
        assert_eq!(
            writer.count_documents(doc! {}).await.unwrap(),
            (COUNT / 2 + 50) as u64,
            "{what}"
        );
    }
    // A `$group` in a snapshot read is run as the store can (in SQL where it is pushed).
    let grouped = db
        .run_command(doc! {"aggregate": "items",
        "pipeline": [{"$group": {"_id": null, "n": {"$sum": 1}, "total": {"$sum": "$v"}}}],
        "cursor": {}, "readConcern": snapshot})
        .await
        .expect("a $group at snapshot");
    let (_, groups) = cursor_batch(&grouped);
    let late: i64 = (COUNT..COUNT + 50).sum();
    let kept: i64 = (COUNT / 2..COUNT).map(|v| v + 1_000_000).sum();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].get_i32("n").unwrap(), (COUNT / 2 + 50) as i32);
    assert_eq!(groups[0].get_i64("total").unwrap(), kept + late);
}
