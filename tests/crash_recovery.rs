//! Durability of acknowledged writes: a client writes with the default (acknowledged)
//! write concern while the server is killed with SIGKILL; after a restart on the same
//! data directory every acknowledged write is there, intact, nothing appears that was
//! never sent, a multi-document command killed mid-flight is all or nothing
//! (docgate's "one command, one transaction" invariant), and on SQLite the file left
//! behind passes `PRAGMA integrity_check`.
//!
//! Not for graceful shutdown or for what happens to unacknowledged writes beyond
//! "at most the one in flight".
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{TestBackend, TestServer};
use mongodb::bson::{doc, Document};
use mongodb::Client;

/// A client that fails fast once the server is gone: no retries, short selection timeout.
async fn fast_failing_client(server: &TestServer) -> Client {
    server
        .client_with_uri(
            &server.uri_with_options("retryWrites=false&serverSelectionTimeoutMS=2000"),
        )
        .await
}

/// Waits ~300 ms and until `progress` shows at least one acknowledged write, then kills
/// the server with SIGKILL.
async fn kill_after_progress(server: &mut TestServer, progress: &AtomicUsize) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while progress.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "no write was acknowledged within 20 s\n{}",
            server.stderr_log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();
}

/// After a SIGKILL: on SQLite, `PRAGMA integrity_check` of the file left behind is "ok";
/// then the server starts again on the same data.
fn restart_after_integrity_check(server: &mut TestServer) {
    if let TestBackend::Sqlite { dir } = server.backend() {
        assert_eq!(common::sqlite_integrity_check(dir), "ok", "after SIGKILL");
    }
    server.restart_same_data();
}

/// Waits for the writer task, which must stop with an error once the server is dead.
async fn join_writer<T>(writer: tokio::task::JoinHandle<(T, Option<String>)>) -> T {
    let (result, error) = tokio::time::timeout(Duration::from_secs(60), writer)
        .await
        .expect("writer did not stop after the server was killed")
        .expect("writer panicked");
    assert!(error.is_some(), "the writer never saw the server die");
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_inserts_survive_sigkill() {
    let mut server = TestServer::start();
    let client = fast_failing_client(&server).await;
    let coll = client.database("durable").collection::<Document>("acks");

    let progress = Arc::new(AtomicUsize::new(0));
    let writer = {
        let progress = Arc::clone(&progress);
        tokio::spawn(async move {
            let payload = "p".repeat(200);
            let mut acked = Vec::new();
            for i in 0..1_000_000_i64 {
                match coll
                    .insert_one(doc! { "_id": i, "n": i, "payload": payload.as_str() })
                    .await
                {
                    Ok(_) => {
                        acked.push(i);
                        progress.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(e) => return (acked, Some(e.to_string())),
                }
            }
            (acked, None)
        })
    };
    kill_after_progress(&mut server, &progress).await;
    let acked = join_writer(writer).await;
    eprintln!("{} inserts acknowledged before SIGKILL", acked.len());
    assert!(!acked.is_empty());

    restart_after_integrity_check(&mut server);
    let client = server.client().await;
    let coll = client.database("durable").collection::<Document>("acks");

    let count = coll
        .count_documents(doc! {})
        .await
        .expect("count after restart");
    assert!(
        count >= acked.len() as u64,
        "{count} documents after restart, {} were acknowledged",
        acked.len()
    );
    // Inserts are sequential, so at most one unacknowledged insert was in flight.
    assert!(
        count <= acked.len() as u64 + 1,
        "{count} documents after restart, but only {} acknowledged + 1 in flight were sent",
        acked.len()
    );

    let mut cursor = coll.find(doc! {}).await.expect("find after restart");
    let mut present = HashSet::new();
    let expected_payload = "p".repeat(200);
    while cursor.advance().await.expect("cursor") {
        let d = cursor.deserialize_current().expect("document");
        let id = d.get_i64("_id").expect("_id is the int64 we sent");
        assert_eq!(d.get_i64("n").ok(), Some(id), "document {id} damaged: {d}");
        assert_eq!(
            d.get_str("payload").ok(),
            Some(expected_payload.as_str()),
            "document {id} damaged"
        );
        present.insert(id);
    }
    let missing: Vec<i64> = acked
        .iter()
        .copied()
        .filter(|id| !present.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged inserts lost after SIGKILL (of {}), first: {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(10)]
    );

    // The restarted server accepts writes again.
    coll.insert_one(doc! { "_id": -1_i64, "n": -1_i64, "payload": "after" })
        .await
        .expect("insert after restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_updates_and_deletes_survive_sigkill() {
    const SEEDED: i32 = 5_000;
    let mut server = TestServer::start();
    let client = fast_failing_client(&server).await;
    let coll = client.database("durable").collection::<Document>("mixed");
    coll.insert_one(doc! { "_id": "counter", "n": 0 })
        .await
        .expect("seed counter");
    let docs: Vec<Document> = (0..SEEDED).map(|i| doc! { "_id": i, "v": i }).collect();
    coll.insert_many(docs).await.expect("seed documents");

    // Each round: $inc the counter, then delete document i. Progress counts rounds
    // whose both writes were acknowledged.
    let progress = Arc::new(AtomicUsize::new(0));
    let writer = {
        let progress = Arc::clone(&progress);
        tokio::spawn(async move {
            let mut incs = 0_i32;
            let mut deleted = Vec::new();
            for i in 0..SEEDED {
                if let Err(e) = coll
                    .update_one(doc! { "_id": "counter" }, doc! { "$inc": { "n": 1 } })
                    .await
                {
                    return ((incs, deleted), Some(e.to_string()));
                }
                incs += 1;
                match coll.delete_one(doc! { "_id": i }).await {
                    Ok(r) => {
                        assert_eq!(r.deleted_count, 1, "delete of {i}");
                        deleted.push(i);
                    }
                    Err(e) => return ((incs, deleted), Some(e.to_string())),
                }
                progress.fetch_add(1, Ordering::SeqCst);
            }
            ((incs, deleted), None)
        })
    };
    kill_after_progress(&mut server, &progress).await;
    let (incs, deleted) = join_writer(writer).await;
    eprintln!(
        "{incs} increments and {} deletes acknowledged before SIGKILL",
        deleted.len()
    );

    restart_after_integrity_check(&mut server);
    let client = server.client().await;
    let coll = client.database("durable").collection::<Document>("mixed");
    let counter = coll
        .find_one(doc! { "_id": "counter" })
        .await
        .expect("find counter")
        .expect("counter survives");
    let n = counter.get_i32("n").expect("n is an int32");
    // Every acknowledged $inc is durable; at most the one in flight may also be.
    assert!(
        n >= incs && n <= incs + 1,
        "counter is {n} after restart, {incs} increments were acknowledged"
    );
    for i in &deleted {
        assert_eq!(
            coll.find_one(doc! { "_id": *i }).await.expect("find"),
            None,
            "document {i} is back although its delete was acknowledged"
        );
    }
    // Documents past the one that may have been in flight were never touched.
    let first_untouched = deleted.len() as i32 + 1;
    let remaining = coll
        .count_documents(doc! { "_id": { "$gte": first_untouched } })
        .await
        .expect("count");
    assert_eq!(remaining, (SEEDED - first_untouched).max(0) as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_many_and_update_many_are_all_or_nothing_across_sigkill() {
    const BATCH: i64 = 200;
    let mut server = TestServer::start();
    let client = fast_failing_client(&server).await;
    let db = client.database("durable");
    let inserts = db.collection::<Document>("batches");
    let updates = db.collection::<Document>("generations");
    let docs: Vec<Document> = (0..500).map(|i| doc! { "_id": i, "gen": 0_i64 }).collect();
    updates.insert_many(docs).await.expect("seed generations");

    // Each round: one insert_many of BATCH documents tagged with the round, then one
    // update_many setting `gen` of all 500 documents to the round.
    let progress = Arc::new(AtomicUsize::new(0));
    let writer = {
        let progress = Arc::clone(&progress);
        tokio::spawn(async move {
            let mut acked_batches = 0_i64;
            let mut acked_gen = 0_i64;
            for round in 1..1_000_000_i64 {
                let docs: Vec<Document> = (0..BATCH)
                    .map(|j| doc! { "_id": round * 1_000 + j, "round": round })
                    .collect();
                if let Err(e) = inserts.insert_many(docs).await {
                    return ((acked_batches, acked_gen), Some(e.to_string()));
                }
                acked_batches = round;
                match updates
                    .update_many(doc! {}, doc! { "$set": { "gen": round } })
                    .await
                {
                    Ok(r) => assert_eq!(r.matched_count, 500),
                    Err(e) => return ((acked_batches, acked_gen), Some(e.to_string())),
                }
                acked_gen = round;
                progress.fetch_add(1, Ordering::SeqCst);
            }
            ((acked_batches, acked_gen), None)
        })
    };
    kill_after_progress(&mut server, &progress).await;
    let (acked_batches, acked_gen) = join_writer(writer).await;
    eprintln!("{acked_batches} insert_many batches and {acked_gen} update_many acknowledged");

    restart_after_integrity_check(&mut server);
    let client = server.client().await;
    let db = client.database("durable");
    let inserts = db.collection::<Document>("batches");
    let updates = db.collection::<Document>("generations");

    // insert_many: every acknowledged batch complete; the batch in flight (if any)
    // entirely there or entirely absent; nothing beyond it.
    for round in 1..=acked_batches + 1 {
        let n = inserts
            .count_documents(doc! { "round": round })
            .await
            .expect("count batch");
        if round <= acked_batches {
            assert_eq!(
                n, BATCH as u64,
                "acknowledged batch {round} has {n} documents"
            );
        } else {
            assert!(
                n == 0 || n == BATCH as u64,
                "batch {round} was cut by the crash: {n} of {BATCH} documents"
            );
        }
    }
    let beyond = inserts
        .count_documents(doc! { "round": { "$gt": acked_batches + 1 } })
        .await
        .expect("count");
    assert_eq!(beyond, 0);

    // update_many: all 500 documents carry the same generation, and it is at least the
    // last acknowledged one (at most the one in flight).
    let gens = updates
        .distinct("gen", doc! {})
        .await
        .expect("distinct gen");
    assert_eq!(
        gens.len(),
        1,
        "update_many was half applied across the crash: generations {gens:?}"
    );
    let gen = gens[0].as_i64().expect("gen is an int64");
    assert!(
        gen == acked_gen || gen == acked_gen + 1,
        "generation {gen} after restart, last acknowledged {acked_gen}"
    );
    assert_eq!(updates.count_documents(doc! {}).await.unwrap(), 500);
}

#[tokio::test]
async fn catalog_changes_survive_sigkill() {
    let mut server = TestServer::start();
    let client = server.client().await;
    let db = client.database("durable_catalog");
    db.create_collection("empty").await.expect("create empty");
    db.create_collection("doomed").await.expect("create doomed");
    db.collection::<Document>("before")
        .insert_many(vec![
            doc! { "_id": 1, "email": "x@example.com" },
            doc! { "_id": 2, "email": "y@example.com" },
        ])
        .await
        .expect("insert");
    client
        .database("admin")
        .run_command(doc! {
            "renameCollection": "durable_catalog.before",
            "to": "durable_catalog.after",
        })
        .await
        .expect("rename");
    db.collection::<Document>("doomed")
        .drop()
        .await
        .expect("drop doomed");
    db.collection::<Document>("after")
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! { "email": 1 })
                .options(
                    mongodb::options::IndexOptions::builder()
                        .unique(true)
                        .build(),
                )
                .build(),
        )
        .await
        .expect("create unique index");
    client
        .database("durable_gone")
        .collection::<Document>("c")
        .insert_one(doc! { "x": 1 })
        .await
        .expect("insert into durable_gone");
    client
        .database("durable_gone")
        .drop()
        .await
        .expect("drop database");

    restart_after_integrity_check(&mut server);
    let client = server.client().await;
    let db = client.database("durable_catalog");
    let mut names = db.list_collection_names().await.expect("list collections");
    names.sort();
    assert_eq!(names, vec!["after", "empty"]);
    let after = db.collection::<Document>("after");
    assert_eq!(after.count_documents(doc! {}).await.unwrap(), 2);
    let dbs = client.list_database_names().await.expect("list databases");
    assert!(dbs.contains(&"durable_catalog".to_string()), "{dbs:?}");
    assert!(!dbs.contains(&"durable_gone".to_string()), "{dbs:?}");
    // The secondary unique index survived and is still enforced.
    let mut indexes = after.list_index_names().await.expect("list indexes");
    indexes.sort();
    assert_eq!(indexes, vec!["_id_", "email_1"]);
    after
        .insert_one(doc! { "_id": 3, "email": "a@example.com" })
        .await
        .expect("first email");
    let err = after
        .insert_one(doc! { "_id": 4, "email": "a@example.com" })
        .await
        .expect_err("duplicate email after restart");
    assert!(
        matches!(
            &*err.kind,
            mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w))
                if w.code == 11000
        ),
        "expected a duplicate key error from email_1, got {err:?}"
    );
    // The _id index of the renamed collection still enforces uniqueness.
    let err = after
        .insert_one(doc! { "_id": 1 })
        .await
        .expect_err("duplicate _id after restart");
    match &*err.kind {
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) => {
            assert_eq!(w.code, 11000)
        }
        _ => panic!("expected a duplicate key write error, got {err:?}"),
    }
}
