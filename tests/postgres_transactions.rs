//! Transactions across two docgate instances on one PostgreSQL database (issue 16), through the
//! official Rust `mongodb` driver against real `docgate` processes:
//!
//! - a transaction on A and one on B write the same document: the one that wrote first
//!   commits, the other gets 112 WriteConflict labelled `TransientTransactionError` (at once,
//!   as MongoDB answers, not after waiting for the first to finish), and only the committed
//!   write is there;
//! - a retryable write applied by A and retried on B (as after a fail-over behind a load
//!   balancer) is not applied again: B answers the first reply's `n` from the shared record;
//! - causal consistency across instances: a write acknowledged by A with `operationTime` T,
//!   then a read on B with `readConcern: {afterClusterTime: T}`, sees it (and so does a causally
//!   consistent session whose operation time was advanced to T).
//!
//! The test creates a fresh database on the PostgreSQL named by env `DOCGATE_TEST_PG_URL`
//! (dropped when the test passes); `DOCGATE_SKIP_POSTGRES=1` makes it return early with a note.
//! Shared helpers live in `postgres_support/`.
//!
//! Not for: transactions on one instance (`transactions.rs`, which runs on PostgreSQL too with
//! `DOCGATE_TEST_BACKEND`), metadata freshness across instances (`postgres_instances.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod postgres_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use mongodb::bson::{doc, Bson, Document, Uuid};

use postgres_support::*;

/// The second writer must be told without waiting for the first transaction to end.
const FAIL_FAST: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_on_two_instances_writing_one_document_conflict() {
    let Some(db) = TestDb::create().await else {
        return;
    };
    tokio::time::timeout(TEST_TIMEOUT, conflict_body(&db.url))
        .await
        .expect("the two-instance conflict test did not finish in time");
    db.drop_db().await;
}

async fn conflict_body(backend: &str) {
    let a = Docgate::start("A", backend, &[]);
    let b = Docgate::start("B", backend, &[]);
    let (client_a, client_b) = (a.client().await, b.client().await);
    let coll_a = client_a.database("app").collection::<Document>("stock");
    let coll_b = client_b.database("app").collection::<Document>("stock");
    insert("seed", &coll_a, doc! {"_id": 1, "qty": 10}).await;
    insert("seed", &coll_a, doc! {"_id": 2, "qty": 10}).await;
    // B knows the collection too before its transaction starts.
    assert_eq!(find_all("B: seed visible", &coll_b, doc! {}).await.len(), 2);

    let mut sa = ok("A: session", client_a.start_session().await);
    let mut sb = ok("B: session", client_b.start_session().await);
    ok(
        "A: start",
        bounded("A: start", sa.start_transaction()).await,
    );
    ok(
        "A: first write",
        bounded(
            "A: first write",
            coll_a
                .update_one(doc! {"_id": 1}, doc! {"$inc": {"qty": -1}})
                .session(&mut sa),
        )
        .await,
    );
    ok(
        "B: start",
        bounded("B: start", sb.start_transaction()).await,
    );
    // A write of B's own to another document does not conflict.
    ok(
        "B: other document",
        bounded(
            "B: other document",
            coll_b
                .update_one(doc! {"_id": 2}, doc! {"$inc": {"qty": -5}})
                .session(&mut sb),
        )
        .await,
    );

    // B's write of the document A holds runs in a task of its own, so that a B that waits for
    // A's row lock does not stop the test from committing A.
    let coll_b2 = coll_b.clone();
    let started = Instant::now();
    let second = tokio::spawn(async move {
        let result = coll_b2
            .update_one(doc! {"_id": 1}, doc! {"$inc": {"qty": -3}})
            .session(&mut sb)
            .await;
        (result, started.elapsed(), sb)
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let answered_before_commit = tokio::time::timeout(FAIL_FAST, async {
        while !second.is_finished() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .is_ok();
    if !answered_before_commit {
        eprintln!(
            "B's conflicting write had no answer {FAIL_FAST:?} into A's transaction; committing A"
        );
    }
    ok(
        "A: commit",
        bounded("A: commit", sa.commit_transaction()).await,
    );
    let (result, took, mut sb) = bounded("B: conflicting write", second).await.expect("task");
    let err = match result {
        Ok(r) => panic!("B's write of the document A's transaction wrote succeeded: {r:?}"),
        Err(e) => e,
    };
    assert_eq!(
        server_code(&err),
        Some(112),
        "B: expected 112 WriteConflict, got {}",
        brief(&err)
    );
    assert!(
        err.contains_label("TransientTransactionError"),
        "B: WriteConflict without TransientTransactionError: {}",
        brief(&err)
    );
    let _ = bounded("B: abort", sb.abort_transaction()).await;
    assert!(
        answered_before_commit,
        "B's WriteConflict came only after A committed ({took:?}): MongoDB answers it at once"
    );

    // Only A's write is there; B's whole transaction (its other document too) is gone.
    assert_eq!(
        find_all("A: after", &coll_a, doc! {}).await,
        vec![doc! {"_id": 1, "qty": 9}, doc! {"_id": 2, "qty": 10}]
    );
    assert_eq!(
        find_all("B: after", &coll_b, doc! {}).await,
        vec![doc! {"_id": 1, "qty": 9}, doc! {"_id": 2, "qty": 10}]
    );

    // The other order: B writes first and commits, A's write conflicts.
    ok(
        "B: start again",
        bounded("B: start", sb.start_transaction()).await,
    );
    ok(
        "B: write first",
        bounded(
            "B: write first",
            coll_b
                .update_one(doc! {"_id": 2}, doc! {"$inc": {"qty": -2}})
                .session(&mut sb),
        )
        .await,
    );
    ok(
        "A: start again",
        bounded("A: start", sa.start_transaction()).await,
    );
    let started = Instant::now();
    let late = tokio::time::timeout(
        FAIL_FAST,
        coll_a
            .update_one(doc! {"_id": 2}, doc! {"$inc": {"qty": -7}})
            .session(&mut sa),
    )
    .await;
    match late {
        Err(_) => panic!(
            "A's conflicting write had no answer within {FAIL_FAST:?} (it waits for B's row lock)"
        ),
        Ok(Ok(r)) => panic!("A's write of the document B's transaction wrote succeeded: {r:?}"),
        Ok(Err(e)) => {
            assert_eq!(
                server_code(&e),
                Some(112),
                "A: {} after {:?}",
                brief(&e),
                started.elapsed()
            );
            assert!(
                e.contains_label("TransientTransactionError"),
                "A: {}",
                brief(&e)
            );
        }
    }
    let _ = bounded("A: abort", sa.abort_transaction()).await;
    ok(
        "B: commit",
        bounded("B: commit", sb.commit_transaction()).await,
    );
    assert_eq!(
        find_all("A: final", &coll_a, doc! {"_id": 2}).await,
        vec![doc! {"_id": 2, "qty": 8}]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_after_the_cluster_time_of_a_write_on_another_instance_sees_it() {
    let Some(db) = TestDb::create().await else {
        return;
    };
    tokio::time::timeout(TEST_TIMEOUT, causal_body(&db.url))
        .await
        .expect("the afterClusterTime test did not finish in time");
    db.drop_db().await;
}

async fn causal_body(backend: &str) {
    let a = Docgate::start("A", backend, &[]);
    let b = Docgate::start("B", backend, &[]);
    let (client_a, client_b) = (a.client().await, b.client().await);
    let (app_a, app_b) = (client_a.database("app"), client_b.database("app"));
    insert("seed", &app_a.collection("events"), doc! {"_id": 0}).await;
    assert_eq!(
        find_all("B: seed", &app_b.collection("events"), doc! {})
            .await
            .len(),
        1
    );

    for i in 1..=20 {
        let reply = ok(
            "A: insert",
            bounded(
                "A: insert",
                app_a.run_command(doc! {"insert": "events", "documents": [{"_id": i}]}),
            )
            .await,
        );
        assert_eq!(reply.get_i32("n").ok(), Some(1), "{reply}");
        let time = match reply.get("operationTime") {
            Some(Bson::Timestamp(t)) => *t,
            other => panic!(
                "A's acknowledged insert has no operationTime Timestamp ({other:?}): {reply}"
            ),
        };
        let found = ok(
            "B: find afterClusterTime",
            bounded(
                "B: find afterClusterTime",
                app_b.run_command(doc! {
                    "find": "events", "filter": {"_id": i},
                    "readConcern": {"afterClusterTime": Bson::Timestamp(time)},
                }),
            )
            .await,
        );
        let batch = found
            .get_document("cursor")
            .and_then(|c| c.get_array("firstBatch"))
            .unwrap_or_else(|_| panic!("B's find reply has no firstBatch: {found}"));
        assert_eq!(
            batch,
            &vec![Bson::Document(doc! {"_id": i})],
            "round {i}: B's read after A's operationTime {time:?} did not see A's write"
        );
        // B's reply carries an operationTime no earlier than the cluster time it read after.
        if let Some(Bson::Timestamp(b_time)) = found.get("operationTime") {
            assert!(
                (b_time.time, b_time.increment) >= (time.time, time.increment),
                "B's operationTime {b_time:?} is before A's {time:?}"
            );
        }

        // The same through a causally consistent session that learned A's operation time.
        let mut session = ok(
            "B: session",
            client_b.start_session().causal_consistency(true).await,
        );
        session.advance_operation_time(time);
        let seen = ok(
            "B: session find",
            bounded(
                "B: session find",
                app_b
                    .collection::<Document>("events")
                    .find_one(doc! {"_id": i})
                    .session(&mut session),
            )
            .await,
        );
        assert_eq!(
            seen,
            Some(doc! {"_id": i}),
            "round {i}: B's causal session missed A's write"
        );
    }
}

/// One OP_MSG command on a raw connection (its body carries `$db`), and the reply's body.
fn raw_command(stream: &mut TcpStream, request_id: i32, cmd: &Document) -> Document {
    let body = cmd.to_vec().expect("encode BSON");
    let len = (16 + 4 + 1 + body.len()) as i32;
    let mut msg = Vec::with_capacity(len as usize);
    for field in [len, request_id, 0, 2013] {
        msg.extend_from_slice(&field.to_le_bytes());
    }
    msg.extend_from_slice(&0u32.to_le_bytes());
    msg.push(0);
    msg.extend_from_slice(&body);
    stream.write_all(&msg).expect("send command");
    let mut head = [0u8; 16];
    stream.read_exact(&mut head).expect("reply header");
    let reply_len = i32::from_le_bytes(head[0..4].try_into().expect("4 bytes")) as usize;
    let mut rest = vec![0u8; reply_len - 16];
    stream.read_exact(&mut rest).expect("reply body");
    Document::from_reader(&rest[5..]).expect("reply BSON")
}

fn raw_connect(instance: &Docgate) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", instance.port())).expect("connect");
    stream
        .set_read_timeout(Some(OP_TIMEOUT))
        .expect("read timeout");
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retryable_write_retried_on_the_other_instance_is_not_applied_again() {
    let Some(db) = TestDb::create().await else {
        return;
    };
    let url = db.url.clone();
    tokio::time::timeout(
        TEST_TIMEOUT,
        tokio::task::spawn_blocking(move || retry_elsewhere_body(&url)),
    )
    .await
    .expect("the cross-instance retry test did not finish in time")
    .expect("test body");
    db.drop_db().await;
}

fn retry_elsewhere_body(backend: &str) {
    let a = Docgate::start("A", backend, &[]);
    let b = Docgate::start("B", backend, &[]);
    let (mut to_a, mut to_b) = (raw_connect(&a), raw_connect(&b));
    let lsid = doc! {"id": Uuid::new()};
    let ok_of = |reply: &Document| {
        reply
            .get_f64("ok")
            .or_else(|_| reply.get_i32("ok").map(f64::from))
            .unwrap_or(0.0)
    };

    let insert = doc! {
        "insert": "orders", "documents": [{"_id": 1, "item": "a"}, {"_id": 2, "item": "b"}],
        "lsid": lsid.clone(), "txnNumber": 1i64, "$db": "app",
    };
    let first = raw_command(&mut to_a, 1, &insert);
    assert_eq!(ok_of(&first), 1.0, "A: {first}");
    let retried = raw_command(&mut to_b, 2, &insert);
    assert_eq!(
        ok_of(&retried),
        1.0,
        "B: the retry of A's insert: {retried}"
    );
    assert_eq!(
        retried.get("n"),
        first.get("n"),
        "B's retry answers another n: {first} vs {retried}"
    );
    assert!(
        !retried.contains_key("writeErrors"),
        "B ran the insert again: {retried}"
    );

    let update = doc! {
        "update": "orders", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"qty": 1}}}],
        "lsid": lsid.clone(), "txnNumber": 2i64, "$db": "app",
    };
    let first = raw_command(&mut to_a, 3, &update);
    assert_eq!(ok_of(&first), 1.0, "A: {first}");
    let retried = raw_command(&mut to_b, 4, &update);
    assert_eq!(ok_of(&retried), 1.0, "B: {retried}");
    assert_eq!(
        retried.get("nModified"),
        first.get("nModified"),
        "{first} vs {retried}"
    );

    let found = raw_command(
        &mut to_b,
        5,
        &doc! {"find": "orders", "filter": {}, "sort": {"_id": 1}, "$db": "app"},
    );
    let batch = found
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .unwrap_or_else(|_| panic!("no firstBatch: {found}"));
    assert_eq!(
        batch,
        &vec![
            Bson::Document(doc! {"_id": 1, "item": "a", "qty": 1}),
            Bson::Document(doc! {"_id": 2, "item": "b"}),
        ],
        "a retry on B was applied again"
    );
    // An older txnNumber on B, after A saw a newer one.
    let newer = raw_command(
        &mut to_a,
        6,
        &doc! {"insert": "orders", "documents": [{"_id": 3}], "lsid": lsid.clone(), "txnNumber": 5i64, "$db": "app"},
    );
    assert_eq!(ok_of(&newer), 1.0, "A: {newer}");
    let old = raw_command(&mut to_b, 7, &update);
    assert_eq!(
        old.get_i32("code").ok(),
        Some(225),
        "B: txnNumber 2 after A ran 5: {old}"
    );
}
