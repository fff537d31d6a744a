//! Readers of a collection that is replaced under them, through the official Rust `mongodb`
//! driver against a real `docgate` process (on PostgreSQL with `DOCGATE_TEST_BACKEND` set
//! to a cluster URL): `$out` onto it, `renameCollection` with `dropTarget` onto it, drop and
//! re-create, `convertToCapped`.
//!
//! What a user checks (issue 17, "readers never see a half-written `$out`"): every cursor
//! sees one incarnation of the collection only — each document it returns carries the same
//! generation number, and all of them — or it ends with MongoDB's error for a cursor whose
//! collection was dropped under it (175 QueryPlanKilled; 43 CursorNotFound is accepted as
//! the other answer MongoDB gives a cursor it killed). Batches of more than 128 documents
//! are read in several statements, so the loop tests check single batches as well as
//! `getMore` across the swap. The identity `listCollections` reports (`info.uuid`) is new for
//! every collection `$out`, a rename with `dropTarget`, `convertToCapped` or a re-create
//! makes, as MongoDB's is; a rename within a database keeps it.
//!
//! Not for: `$out`'s options and errors (`aggregate_writes.rs`, and the pymongo suite).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;
mod rest_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::TestServer;
use driver_support::server_code;
use mongodb::bson::{doc, Bson, Document};
use mongodb::{Collection, Database};
use rest_support::Rest;

/// Documents of each generation: several statements' worth in one batch.
const DOCS: i32 = 600;
/// Replacements per loop test.
const ROUNDS: i32 = 40;

/// The documents of generation `generation`: `_id` 0..DOCS, each tagged.
fn generation(generation: i32) -> Vec<Document> {
    (0..DOCS)
        .map(|i| doc! {"_id": i, "gen": generation, "pad": "x".repeat(64)})
        .collect()
}

/// What one cursor saw: the generations of its documents and how many, or the server's
/// error code that ended it.
#[derive(Debug)]
enum Read {
    Documents { generations: Vec<i32>, count: usize },
    Ended(i32),
}

/// Reads the whole of `target` with one cursor of batches of `batch_size`.
async fn read_once(target: &Collection<Document>, batch_size: u32) -> Read {
    let ended = |e: mongodb::error::Error| match server_code(&e) {
        Some(code) => Read::Ended(code),
        None => panic!("a read failed without a server error: {e:?}"),
    };
    let mut cursor = match target.find(doc! {}).batch_size(batch_size).await {
        Ok(cursor) => cursor,
        Err(e) => return ended(e),
    };
    let mut generations = Vec::new();
    let mut count = 0;
    loop {
        match cursor.advance().await {
            Ok(true) => {
                let document: Document = cursor.deserialize_current().unwrap();
                let generation = document.get_i32("gen").unwrap();
                if !generations.contains(&generation) {
                    generations.push(generation);
                }
                count += 1;
            }
            Ok(false) => return Read::Documents { generations, count },
            Err(e) => return ended(e),
        }
    }
}

/// Reads `target` over and over with batches of `batch_size` until `stop`.
fn spawn_reader(
    target: Collection<Document>,
    batch_size: u32,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Vec<Read>> {
    tokio::spawn(async move {
        let mut reads = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            reads.push(read_once(&target, batch_size).await);
        }
        reads
    })
}

/// Runs `replace(round)` ROUNDS times while two readers read `target` (one batch of up to
/// 1000 documents; batches of 150 through `getMore`), then checks every read: one
/// generation, complete (or empty when `may_be_empty`: between a drop and the re-create),
/// or ended with 175/43.
async fn replaced_while_read<F, Fut>(db: &Database, may_be_empty: bool, mut replace: F)
where
    F: FnMut(i32) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let target = db.collection::<Document>("target");
    target.insert_many(generation(0)).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let readers = [
        spawn_reader(target.clone(), 1000, Arc::clone(&stop)),
        spawn_reader(target.clone(), 150, Arc::clone(&stop)),
    ];
    for round in 1..=ROUNDS {
        replace(round).await;
    }
    stop.store(true, Ordering::SeqCst);
    let mut mixed = Vec::new();
    let mut incomplete = Vec::new();
    let mut ended = Vec::new();
    let mut whole = 0;
    let mut ended_in_one_batch = 0;
    for (index, reader) in readers.into_iter().enumerate() {
        for read in reader.await.unwrap() {
            if index == 0 && matches!(read, Read::Ended(_)) {
                ended_in_one_batch += 1;
            }
            match read {
                Read::Documents { generations, .. } if generations.len() > 1 => {
                    mixed.push(generations)
                }
                Read::Documents { count: 0, .. } if may_be_empty => {}
                Read::Documents { count, .. } if count != DOCS as usize => incomplete.push(count),
                Read::Documents { .. } => whole += 1,
                Read::Ended(code) => ended.push(code),
            }
        }
    }
    eprintln!(
        "{whole} whole reads, {} ended ({ended_in_one_batch} of them single-batch reads; codes {:?}), {} mixed, {} incomplete",
        ended.len(),
        {
            let mut codes = ended.clone();
            codes.sort_unstable();
            codes.dedup();
            codes
        },
        mixed.len(),
        incomplete.len()
    );
    assert!(
        mixed.is_empty(),
        "cursors saw documents of several generations: {mixed:?}"
    );
    assert!(
        incomplete.is_empty(),
        "cursors saw part of a generation: {incomplete:?} documents of {DOCS}"
    );
    assert!(
        ended.iter().all(|code| *code == 175 || *code == 43),
        "cursors ended with other errors than 175/43: {ended:?}"
    );
    assert!(whole > 0, "no read completed");
    let last: Vec<Document> = collect_all(&target).await;
    assert_eq!(last.len(), DOCS as usize);
    assert!(last.iter().all(|d| d.get_i32("gen").ok() == Some(ROUNDS)));
}

async fn collect_all(coll: &Collection<Document>) -> Vec<Document> {
    driver_support::collect(coll.find(doc! {}).await.unwrap()).await
}

/// Reads pages of 500 documents of `replaced_out.target` through the REST document API
/// until `stop`: the status and the generations each page holds, and how many documents.
fn spawn_rest_reader(
    rest: Rest,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Vec<(u16, Vec<i64>, usize)>> {
    tokio::spawn(async move {
        let mut pages = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            let reply = rest
                .get("/ords/replaced_out/soda/latest/target?limit=500")
                .await;
            if reply.status.as_u16() != 200 {
                eprintln!("REST page {}: {}", reply.status, reply.body);
            }
            let items = reply.body["items"].as_array().cloned().unwrap_or_default();
            let mut generations: Vec<i64> = items
                .iter()
                .map(|item| item["gen"].as_i64().unwrap_or(-1))
                .collect();
            generations.sort_unstable();
            generations.dedup();
            pages.push((reply.status.as_u16(), generations, items.len()));
        }
        pages
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn out_never_mixes_generations_in_a_cursor() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("replaced_out");
    let stop = Arc::new(AtomicBool::new(false));
    let mut rest_reader = None;
    replaced_while_read(&db, false, |round| {
        let db = db.clone();
        if rest_reader.is_none() {
            // A REST reader too, once the first generation is there.
            let rest = Rest::new(server.rest_base());
            rest_reader = Some(spawn_rest_reader(rest, Arc::clone(&stop)));
        }
        async move {
            let pipeline = vec![
                doc! {"$documents": generation(round)},
                doc! {"$out": "target"},
            ];
            db.aggregate(pipeline).await.unwrap();
        }
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    let pages = rest_reader.expect("the REST reader ran").await.unwrap();
    eprintln!("{} REST pages", pages.len());
    assert!(!pages.is_empty());
    for (status, generations, count) in pages {
        assert_eq!(
            (status, generations.len(), count),
            (200, 1, 500),
            "a REST page of one generation: {generations:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn rename_with_drop_target_never_mixes_generations_in_a_cursor() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("replaced_rename");
    let admin = client.database("admin");
    replaced_while_read(&db, false, |round| {
        let (db, admin) = (db.clone(), admin.clone());
        async move {
            let staging = db.collection::<Document>("staging");
            staging.insert_many(generation(round)).await.unwrap();
            admin
                .run_command(doc! {
                    "renameCollection": "replaced_rename.staging",
                    "to": "replaced_rename.target",
                    "dropTarget": true,
                })
                .await
                .unwrap();
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn drop_and_recreate_never_mixes_generations_in_a_cursor() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("replaced_drop");
    replaced_while_read(&db, true, |round| {
        let db = db.clone();
        async move {
            let target = db.collection::<Document>("target");
            target.drop().await.unwrap();
            target.insert_many(generation(round)).await.unwrap();
        }
    })
    .await;
}

/// `info.uuid` of `db.name` in `listCollections`.
async fn uuid_of(db: &Database, name: &str) -> Option<Bson> {
    let reply = db
        .run_command(doc! {"listCollections": 1, "filter": {"name": name}})
        .await
        .unwrap();
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    batch.first().map(|entry| {
        entry
            .as_document()
            .unwrap()
            .get_document("info")
            .unwrap()
            .get("uuid")
            .cloned()
            .unwrap()
    })
}

/// Opens a cursor on `db.target` (10 documents of generation 0, batches of 2), reads its
/// first document, runs `replace`, and checks the cursor ends with 175 without a document
/// of the new collection, and that the new collection has another `info.uuid`.
async fn cursor_ends_when_replaced<F, Fut>(db: &Database, what: &str, replace: F)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let target = db.collection::<Document>("target");
    let old: Vec<Document> = (0..10).map(|i| doc! {"_id": i, "gen": 0}).collect();
    target.insert_many(old).await.unwrap();
    let before = uuid_of(db, "target").await.expect("target is listed");
    let mut cursor = target.find(doc! {}).batch_size(2).await.unwrap();
    assert!(cursor.advance().await.unwrap());
    assert_eq!(
        cursor.deserialize_current().unwrap(),
        doc! {"_id": 0, "gen": 0}
    );
    replace().await;
    let mut later = Vec::new();
    let error = loop {
        match cursor.advance().await {
            Ok(true) => later.push(cursor.deserialize_current().unwrap()),
            Ok(false) => panic!("{what}: the cursor ended without an error after {later:?}"),
            Err(e) => break e,
        }
    };
    // The rest of the batch already sent (one document) comes from the old collection.
    assert!(
        later.iter().all(|d| d.get_i32("gen").ok() == Some(0)),
        "{what}: the cursor returned documents of the new collection: {later:?}"
    );
    assert_eq!(server_code(&error), Some(175), "{what}: {error:?}");
    let after = uuid_of(db, "target").await.expect("target is listed");
    assert_ne!(
        before, after,
        "{what}: the new collection kept the old uuid"
    );
    db.collection::<Document>("target").drop().await.unwrap();
}

#[tokio::test]
async fn cursors_end_and_uuids_change_on_every_replacement() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("replaced_cursor");
    let admin = client.database("admin");
    let new = |gen: i32| -> Vec<Document> { (0..3).map(|i| doc! {"_id": i, "gen": gen}).collect() };

    cursor_ends_when_replaced(&db, "$out", || async {
        let pipeline = vec![doc! {"$documents": new(1)}, doc! {"$out": "target"}];
        db.aggregate(pipeline).await.unwrap();
    })
    .await;
    cursor_ends_when_replaced(&db, "renameCollection dropTarget", || async {
        db.collection::<Document>("staging")
            .insert_many(new(2))
            .await
            .unwrap();
        admin
            .run_command(doc! {
                "renameCollection": "replaced_cursor.staging",
                "to": "replaced_cursor.target",
                "dropTarget": true,
            })
            .await
            .unwrap();
    })
    .await;
    cursor_ends_when_replaced(&db, "drop and re-create", || async {
        let target = db.collection::<Document>("target");
        target.drop().await.unwrap();
        target.insert_many(new(3)).await.unwrap();
    })
    .await;
    cursor_ends_when_replaced(&db, "convertToCapped", || async {
        db.run_command(doc! {"convertToCapped": "target", "size": 1_000_000})
            .await
            .unwrap();
    })
    .await;

    // A rename within the database keeps the collection's identity (MongoDB's too); one
    // into another database makes a new collection there.
    let moving = db.collection::<Document>("moving");
    moving.insert_one(doc! {"_id": 1}).await.unwrap();
    let before = uuid_of(&db, "moving").await.unwrap();
    admin
        .run_command(
            doc! {"renameCollection": "replaced_cursor.moving", "to": "replaced_cursor.moved"},
        )
        .await
        .unwrap();
    assert_eq!(uuid_of(&db, "moved").await, Some(before.clone()));
    admin
        .run_command(
            doc! {"renameCollection": "replaced_cursor.moved", "to": "replaced_elsewhere.moved"},
        )
        .await
        .unwrap();
    let elsewhere = client.database("replaced_elsewhere");
    let after = uuid_of(&elsewhere, "moved").await.unwrap();
    assert_ne!(
        after, before,
        "a rename into another database makes a new collection"
    );
    let moved = elsewhere.collection::<Document>("moved");
    assert_eq!(collect_all(&moved).await, vec![doc! {"_id": 1}]);
}
