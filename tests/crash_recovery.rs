//! Durability of acknowledged writes: a client inserts documents one at a time with
//! the default (acknowledged) write concern while the server is killed with SIGKILL;
//! after a restart on the same data directory every acknowledged document is there,
//! intact, and nothing appears that was never sent.
//!
//! Not for graceful shutdown or for what happens to unacknowledged writes beyond
//! "at most the one in flight".

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::TestServer;
use mongodb::bson::{doc, Document};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_inserts_survive_sigkill() {
    let mut server = TestServer::start();
    // No retries and a short selection timeout: once the server is gone, the insert
    // loop fails fast instead of waiting for a server that will not come back.
    let uri = server.uri_with_options("retryWrites=false&serverSelectionTimeoutMS=2000");
    let client = server.client_with_uri(&uri).await;
    let coll = client.database("durable").collection::<Document>("acks");

    let acked: Arc<Mutex<Vec<i64>>> = Arc::new(Mutex::new(Vec::new()));
    let writer = {
        let acked = Arc::clone(&acked);
        tokio::spawn(async move {
            let payload = "p".repeat(200);
            let mut last_error = None;
            for i in 0..1_000_000_i64 {
                match coll
                    .insert_one(doc! { "_id": i, "n": i, "payload": payload.as_str() })
                    .await
                {
                    Ok(_) => acked.lock().expect("lock").push(i),
                    Err(e) => {
                        last_error = Some(e.to_string());
                        break;
                    }
                }
            }
            last_error
        })
    };

    // Let the writer run for ~300 ms, and in any case until something was acknowledged,
    // so the test always has acknowledged writes to check.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while acked.lock().expect("lock").is_empty() {
        assert!(
            Instant::now() < deadline,
            "no insert was acknowledged within 20 s\n{}",
            server.stderr_log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();

    let writer_error = tokio::time::timeout(Duration::from_secs(60), writer)
        .await
        .expect("insert loop did not stop after the server was killed")
        .expect("insert loop panicked");
    assert!(
        writer_error.is_some(),
        "the insert loop never saw the server die"
    );
    let acked = acked.lock().expect("lock").clone();
    assert!(!acked.is_empty());

    server.restart_same_data();
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
