//! Multi-document transactions, logical sessions and retryable writes (issue 16), checked from
//! the outside against the real `docgate` binary with the Rust `mongodb` driver and raw OP_MSG
//! commands, on SQLite and — with `DOCGATE_TEST_BACKEND` set to a `postgres://` URL — on
//! PostgreSQL. The expected behaviour is MongoDB's (manual, driver specifications):
//!
//! - commit makes every write of the transaction visible at once, abort leaves nothing, and
//!   nothing is visible to another client before the commit;
//! - a second transaction writing a document the first has written fails at once with 112
//!   WriteConflict labelled `TransientTransactionError`; writes of other documents (plain, or
//!   in another transaction) are not held up by an open transaction;
//! - a transaction older than `--transaction-lifetime-limit-seconds` is aborted by the server:
//!   its next statement gets 251 NoSuchTransaction and its writes are gone; one idle for less
//!   lives on;
//! - 251 NoSuchTransaction (labelled `TransientTransactionError`) for a transaction the server
//!   never saw;
//! - a retryable write (`lsid` + `txnNumber`, no `autocommit`) sent twice is applied once and
//!   the retry's answer repeats the first (`n`, `nModified`), on the same connection or a new
//!   one; a retry with a `txnNumber` lower than one the session has used is 225
//!   TransactionTooOld;
//! - idle transactions that fill the connection pool do not starve other clients;
//! - a transaction outlives the connection that started it (drivers retry commitTransaction
//!   on a new connection after a network error);
//!
//! Not for: retryable writes and abandoned transactions (`session_lifecycle.rs`), the pymongo
//! and Node views of the same features (tests/clients), or two docgate instances on one
//! PostgreSQL (`postgres_transactions.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;
mod raw_wire;
mod session_support;

use std::time::{Duration, Instant};

use common::TestServer;
use driver_support::{num, server_code};
use mongodb::bson::{doc, Bson, Document};
use mongodb::error::Error;
use mongodb::Collection;
use session_support::{assert_raw_error, assert_raw_ok, current_open, labels, new_lsid, raw, sub};

/// A step the server must answer without waiting on another transaction.
const FAIL_FAST: Duration = Duration::from_secs(5);
/// Longest any single driver call may take before the test calls it a hang.
const OP_TIMEOUT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------

async fn bounded<T>(what: &str, call: impl std::future::IntoFuture<Output = T>) -> T {
    match tokio::time::timeout(OP_TIMEOUT, call.into_future()).await {
        Ok(value) => value,
        Err(_) => panic!("{what}: no answer within {OP_TIMEOUT:?} (hang)"),
    }
}

/// Code, labels and message of a driver error, in one line.
fn brief(e: &Error) -> String {
    format!("code {:?} labels {:?}: {e}", server_code(e), e.labels())
}

fn assert_write_conflict(what: &str, e: &Error) {
    assert_eq!(
        server_code(e),
        Some(112),
        "{what}: expected 112 WriteConflict, got {}",
        brief(e)
    );
    assert!(
        e.contains_label("TransientTransactionError"),
        "{what}: WriteConflict without the TransientTransactionError label: {}",
        brief(e)
    );
}

async fn all_docs(coll: &Collection<Document>) -> Vec<Document> {
    let mut cursor = bounded("find", coll.find(doc! {}).sort(doc! {"_id": 1}))
        .await
        .expect("find");
    let mut out = Vec::new();
    while bounded("advance", cursor.advance()).await.expect("advance") {
        out.push(cursor.deserialize_current().expect("document"));
    }
    out
}

// ---------------------------------------------------------------------------
// commit, abort, isolation
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_makes_all_writes_visible_and_abort_leaves_nothing() {
    let server = TestServer::start();
    let client = server.client().await;
    let other = server.client().await;
    let coll = client.database("txn").collection::<Document>("accounts");
    let seen = other.database("txn").collection::<Document>("accounts");
    bounded(
        "seed",
        coll.insert_many(vec![
            doc! {"_id": "a", "bal": 100},
            doc! {"_id": "b", "bal": 0},
        ]),
    )
    .await
    .expect("seed");

    let mut session = client.start_session().await.expect("start_session");
    session
        .start_transaction()
        .await
        .expect("start_transaction");
    bounded(
        "debit",
        coll.update_one(doc! {"_id": "a"}, doc! {"$inc": {"bal": -40}})
            .session(&mut session),
    )
    .await
    .expect("debit");
    bounded(
        "credit",
        coll.update_one(doc! {"_id": "b"}, doc! {"$inc": {"bal": 40}})
            .session(&mut session),
    )
    .await
    .expect("credit");
    bounded(
        "log",
        coll.insert_one(doc! {"_id": "log1", "amount": 40})
            .session(&mut session),
    )
    .await
    .expect("log");
    bounded("commit", session.commit_transaction())
        .await
        .expect("commit");
    assert_eq!(
        all_docs(&seen).await,
        vec![
            doc! {"_id": "a", "bal": 60},
            doc! {"_id": "b", "bal": 40},
            doc! {"_id": "log1", "amount": 40},
        ]
    );

    session
        .start_transaction()
        .await
        .expect("start second transaction");
    bounded(
        "debit",
        coll.update_one(doc! {"_id": "a"}, doc! {"$inc": {"bal": -60}})
            .session(&mut session),
    )
    .await
    .expect("debit");
    bounded(
        "delete",
        coll.delete_one(doc! {"_id": "log1"}).session(&mut session),
    )
    .await
    .expect("delete");
    bounded(
        "insert",
        coll.insert_one(doc! {"_id": "log2"}).session(&mut session),
    )
    .await
    .expect("insert");
    bounded("abort", session.abort_transaction())
        .await
        .expect("abort");
    assert_eq!(
        all_docs(&seen).await,
        vec![
            doc! {"_id": "a", "bal": 60},
            doc! {"_id": "b", "bal": 40},
            doc! {"_id": "log1", "amount": 40},
        ],
        "an aborted transaction left writes behind"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_visible_to_another_client_before_commit() {
    let server = TestServer::start();
    let client = server.client().await;
    let other = server.client().await;
    let coll = client.database("txn").collection::<Document>("iso");
    let seen = other.database("txn").collection::<Document>("iso");
    bounded("seed", coll.insert_one(doc! {"_id": 0, "v": "old"}))
        .await
        .expect("seed");

    let mut session = client.start_session().await.expect("start_session");
    session
        .start_transaction()
        .await
        .expect("start_transaction");
    bounded(
        "insert",
        coll.insert_one(doc! {"_id": 1, "v": "new"})
            .session(&mut session),
    )
    .await
    .expect("insert");
    bounded(
        "update",
        coll.update_one(doc! {"_id": 0}, doc! {"$set": {"v": "changed"}})
            .session(&mut session),
    )
    .await
    .expect("update");
    // Inside: its own writes.
    let inside = bounded(
        "find inside",
        coll.find_one(doc! {"_id": 0}).session(&mut session),
    )
    .await
    .expect("find inside");
    assert_eq!(inside, Some(doc! {"_id": 0, "v": "changed"}));
    let n = bounded(
        "count inside",
        coll.count_documents(doc! {}).session(&mut session),
    )
    .await
    .expect("count inside");
    assert_eq!(n, 2);
    // Outside: the committed state, and reads of it do not wait for the transaction.
    let started = Instant::now();
    assert_eq!(all_docs(&seen).await, vec![doc! {"_id": 0, "v": "old"}]);
    assert_eq!(
        bounded("count outside", seen.count_documents(doc! {}))
            .await
            .expect("count"),
        1
    );
    assert!(
        started.elapsed() < FAIL_FAST,
        "reads outside waited {:?}",
        started.elapsed()
    );

    bounded("commit", session.commit_transaction())
        .await
        .expect("commit");
    assert_eq!(
        all_docs(&seen).await,
        vec![doc! {"_id": 0, "v": "changed"}, doc! {"_id": 1, "v": "new"}]
    );
}

// ---------------------------------------------------------------------------
// write conflicts
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_writer_of_a_document_gets_write_conflict_at_once() {
    let server = TestServer::start();
    let (c1, c2) = (server.client().await, server.client().await);
    let coll1 = c1.database("txn").collection::<Document>("wc");
    let coll2 = c2.database("txn").collection::<Document>("wc");
    bounded(
        "seed",
        coll1.insert_many(vec![doc! {"_id": 1, "n": 0}, doc! {"_id": 2, "n": 0}]),
    )
    .await
    .expect("seed");

    let mut s1 = c1.start_session().await.expect("session 1");
    let mut s2 = c2.start_session().await.expect("session 2");
    s1.start_transaction().await.expect("start 1");
    bounded(
        "first writer",
        coll1
            .update_one(doc! {"_id": 1}, doc! {"$inc": {"n": 1}})
            .session(&mut s1),
    )
    .await
    .expect("first writer");

    s2.start_transaction().await.expect("start 2");
    let started = Instant::now();
    let second = bounded(
        "second writer",
        coll2
            .update_one(doc! {"_id": 1}, doc! {"$inc": {"n": 10}})
            .session(&mut s2),
    )
    .await;
    let took = started.elapsed();
    let err =
        second.expect_err("the second writer's update succeeded while the first held the document");
    assert_write_conflict("second writer", &err);
    assert!(took < FAIL_FAST, "the WriteConflict came after {took:?}");
    let _ = bounded("abort 2", s2.abort_transaction()).await;

    bounded("commit 1", s1.commit_transaction())
        .await
        .expect("the first writer commits");
    assert_eq!(
        all_docs(&coll2).await,
        vec![doc! {"_id": 1, "n": 1}, doc! {"_id": 2, "n": 0}]
    );

    // The document is free again: a new transaction of the second client writes it.
    s2.start_transaction().await.expect("start 2 again");
    bounded(
        "retry",
        coll2
            .update_one(doc! {"_id": 1}, doc! {"$inc": {"n": 10}})
            .session(&mut s2),
    )
    .await
    .expect("the retried transaction writes");
    bounded("commit 2", s2.commit_transaction())
        .await
        .expect("commit 2");
    assert_eq!(all_docs(&coll1).await[0], doc! {"_id": 1, "n": 11});
}

/// MongoDB's concurrency control is per document: while a transaction holds one document,
/// writes outside it to other documents — of the same collection, or of another database — and
/// a second transaction writing another document go ahead at once; only the held document
/// conflicts (a plain write of it waits for the transaction to end, then applies). That is
/// what docgate on PostgreSQL does. On SQLite (one writer at a time) docgate documents a
/// different contract (README, "Transactions"): a plain write waits for the write lock until
/// the transaction has been idle 1 s holding it, then the transaction is aborted — so there the
/// test checks that contract: the plain writes are answered ok within a few seconds and the
/// idle transaction's commit is 251 NoSuchTransaction.
#[test]
fn an_open_transaction_holds_only_the_documents_it_wrote() {
    let server = TestServer::start();
    let on_sqlite = matches!(server.backend(), common::TestBackend::Sqlite { .. });
    let mut holder = raw_wire::connect(&server);
    let mut outside = raw_wire::connect(&server);
    // Long enough to see what a held-up write is finally answered (the test fails either way).
    outside
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    assert_raw_ok(
        "seed",
        &raw(
            &mut outside,
            doc! {"insert": "held", "documents": [{"_id": 1}, {"_id": 2}, {"_id": 3}], "$db": "txn"},
        ),
    );
    let lsid = new_lsid();
    let reply = raw(
        &mut holder,
        doc! {"update": "held", "updates": [{"q": {"_id": 1}, "u": {"$set": {"by": "txn"}}}],
        "lsid": lsid.clone(), "txnNumber": 1i64, "startTransaction": true, "autocommit": false, "$db": "txn"},
    );
    assert_raw_ok("the transaction writes _id 1", &reply);

    let mut slow_or_failed = Vec::new();
    for (what, cmd) in [
        (
            "an update of another document",
            doc! {"update": "held", "updates": [{"q": {"_id": 2}, "u": {"$set": {"by": "outside"}}}], "$db": "txn"},
        ),
        (
            "an insert into the same collection",
            doc! {"insert": "held", "documents": [{"_id": 4}], "$db": "txn"},
        ),
        (
            "an insert into another database",
            doc! {"insert": "elsewhere", "documents": [{"_id": 1}], "$db": "txn_other"},
        ),
    ] {
        let started = Instant::now();
        let reply = raw(&mut outside, cmd.clone());
        let took = started.elapsed();
        if raw_wire::ok_of(&reply) != 1.0 || took > FAIL_FAST {
            slow_or_failed.push(format!(
                "{what} outside the transaction: {cmd} answered after {took:?}: {reply}"
            ));
        }
    }
    // A second transaction writing another document.
    let other_lsid = new_lsid();
    let started = Instant::now();
    let reply = raw(
        &mut outside,
        doc! {"update": "held", "updates": [{"q": {"_id": 3}, "u": {"$set": {"by": "txn2"}}}],
        "lsid": other_lsid.clone(), "txnNumber": 1i64, "startTransaction": true, "autocommit": false, "$db": "txn"},
    );
    let took = started.elapsed();
    let mut second_committed = false;
    if raw_wire::ok_of(&reply) == 1.0 && took <= FAIL_FAST {
        let commit = raw(
            &mut outside,
            doc! {"commitTransaction": 1, "lsid": other_lsid, "txnNumber": 1i64, "autocommit": false, "$db": "admin"},
        );
        second_committed = raw_wire::ok_of(&commit) == 1.0;
        if !second_committed {
            slow_or_failed.push(format!("the second transaction's commit: {commit}"));
        }
    } else if !on_sqlite {
        slow_or_failed.push(format!(
            "a second transaction writing another document (_id 3) answered after {took:?}: {reply}"
        ));
    } else {
        eprintln!("SQLite: a second writing transaction answered after {took:?}: {reply}");
    }
    let commit = raw(
        &mut holder,
        doc! {"commitTransaction": 1, "lsid": lsid, "txnNumber": 1i64, "autocommit": false, "$db": "admin"},
    );
    let first_committed = raw_wire::ok_of(&commit) == 1.0;
    if on_sqlite {
        // README: the transaction idled holding SQLite's write lock while others waited.
        assert_eq!(
            num(&commit, "code"),
            251.0,
            "SQLite: the idle transaction that held the write lock was to be aborted: {commit}"
        );
    } else if !first_committed {
        slow_or_failed.push(format!("the first transaction's commit: {commit}"));
    }
    assert!(
        slow_or_failed.is_empty(),
        "writes of other documents were held up by an open transaction:\n{}",
        slow_or_failed.join("\n")
    );
    let find = raw(
        &mut outside,
        doc! {"find": "held", "filter": {}, "sort": {"_id": 1}, "$db": "txn"},
    );
    let first = if first_committed {
        doc! {"_id": 1, "by": "txn"}
    } else {
        doc! {"_id": 1}
    };
    let third = if second_committed {
        doc! {"_id": 3, "by": "txn2"}
    } else {
        doc! {"_id": 3}
    };
    assert_eq!(
        sub(&find, &["cursor"])
            .get_array("firstBatch")
            .unwrap()
            .clone(),
        vec![
            Bson::Document(first),
            Bson::Document(doc! {"_id": 2, "by": "outside"}),
            Bson::Document(third),
            Bson::Document(doc! {"_id": 4}),
        ]
    );
}

/// Open transactions must not starve everybody else. docgate gives each open transaction a
/// pooled connection of its own; with `--pool-max 4` and as many idle transactions open as it
/// allows (up to four), plain reads, writes and `serverStatus` of other clients are still
/// answered at once (MongoDB has no such limit: an idle transaction costs its cache only). A
/// transaction beyond what docgate allows is answered promptly, labelled
/// `TransientTransactionError` (so `withTransaction` retries it), never `RetryableWriteError`,
/// which MongoDB does not put on an error inside a transaction.
#[test]
fn idle_transactions_filling_the_pool_do_not_starve_other_clients() {
    const POOL: usize = 4;
    let server = TestServer::start_with_args(&["--pool-max", "4"]);
    let mut admin = raw_wire::connect(&server);
    admin
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    let docs: Vec<Bson> = (0..10).map(|i| Bson::Document(doc! {"_id": i})).collect();
    assert_raw_ok(
        "seed",
        &raw(
            &mut admin,
            doc! {"insert": "pool", "documents": docs, "$db": "txn"},
        ),
    );

    // As many idle transactions as the server lets open, up to the pool's size. docgate may
    // refuse one beyond a share of the pool: promptly, and labelled for the driver to retry.
    let mut holders = Vec::new();
    let mut refused = None;
    for i in 0..POOL {
        let mut stream = raw_wire::connect(&server);
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("read timeout");
        let lsid = new_lsid();
        let started = Instant::now();
        let reply = raw(
            &mut stream,
            doc! {"find": "pool", "filter": {"_id": i as i32}, "lsid": lsid.clone(), "txnNumber": 1i64,
            "startTransaction": true, "autocommit": false, "$db": "txn"},
        );
        if raw_wire::ok_of(&reply) == 1.0 {
            holders.push((stream, lsid));
        } else {
            refused = Some((i, started.elapsed(), reply));
            break;
        }
    }
    eprintln!(
        "{} idle transactions open; refused: {refused:?}",
        holders.len()
    );
    assert!(
        !holders.is_empty(),
        "not even one transaction could start: {refused:?}"
    );
    let mut starved = Vec::new();
    if let Some((i, took, reply)) = &refused {
        if *took > FAIL_FAST {
            starved.push(format!(
                "transaction {i}, refused, answered after {took:?}: {reply}"
            ));
        }
        if !labels(reply)
            .iter()
            .any(|l| l == "TransientTransactionError")
        {
            starved.push(format!(
                "transaction {i} was refused without TransientTransactionError: {reply}"
            ));
        }
    }
    for cmd in [
        doc! {"find": "pool", "filter": {"_id": 9}, "$db": "txn"},
        doc! {"insert": "pool", "documents": [{"_id": "plain"}], "$db": "txn"},
        doc! {"serverStatus": 1, "$db": "admin"},
    ] {
        let started = Instant::now();
        let reply = raw(&mut admin, cmd.clone());
        let took = started.elapsed();
        if raw_wire::ok_of(&reply) != 1.0 || took > FAIL_FAST {
            let mut shown = reply.clone();
            shown.remove("$clusterTime");
            starved.push(format!("{cmd} answered after {took:?}: {shown}"));
        }
    }

    let mut extra = raw_wire::connect(&server);
    extra
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    let started = Instant::now();
    let reply = raw(
        &mut extra,
        doc! {"insert": "pool", "documents": [{"_id": "extra"}], "lsid": new_lsid(), "txnNumber": 1i64,
        "startTransaction": true, "autocommit": false, "$db": "txn"},
    );
    let took = started.elapsed();
    eprintln!("one more transaction: answered after {took:?}: {reply}");
    if took > FAIL_FAST {
        starved.push(format!(
            "one more transaction answered after {took:?}: {reply}"
        ));
    }
    if raw_wire::ok_of(&reply) != 1.0 && labels(&reply).iter().any(|l| l == "RetryableWriteError") {
        starved.push(format!(
            "an error inside a transaction carries RetryableWriteError: {reply}"
        ));
    }

    for (i, (mut stream, lsid)) in holders.into_iter().enumerate() {
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("read timeout");
        let started = Instant::now();
        let reply = raw(
            &mut stream,
            doc! {"abortTransaction": 1, "lsid": lsid, "txnNumber": 1i64, "autocommit": false, "$db": "admin"},
        );
        if raw_wire::ok_of(&reply) != 1.0 || started.elapsed() > FAIL_FAST {
            starved.push(format!(
                "abortTransaction of open transaction {i} answered after {:?}: {reply}",
                started.elapsed()
            ));
        }
    }
    assert!(
        starved.is_empty(),
        "with {POOL} idle transactions open (--pool-max {POOL}):\n{}",
        starved.join("\n")
    );
}

/// A transaction belongs to its session, not to a connection: MongoDB keeps it open when the
/// connection that started it goes away, and drivers rely on that — after a network error on
/// `commitTransaction` they send it again on a new connection (the transactions
/// specification's retryable-commit test "commitTransaction succeeds after connection error"
/// expects the document committed). Here the connection is dropped after the first statement,
/// and the transaction is continued and committed from another connection.
#[test]
fn a_transaction_outlives_the_connection_that_started_it() {
    let server = TestServer::start();
    let lsid = new_lsid();
    {
        let mut first = raw_wire::connect(&server);
        let reply = raw(
            &mut first,
            doc! {"insert": "survive", "documents": [{"_id": 1}], "lsid": lsid.clone(), "txnNumber": 1i64,
            "startTransaction": true, "autocommit": false, "$db": "txn"},
        );
        assert_raw_ok("first statement", &reply);
    } // the connection is gone, as when a network error hits the driver
    std::thread::sleep(Duration::from_millis(300));
    let mut second = raw_wire::connect(&server);
    let reply = raw(
        &mut second,
        doc! {"find": "survive", "filter": {}, "lsid": lsid.clone(), "txnNumber": 1i64, "autocommit": false, "$db": "txn"},
    );
    assert_raw_ok(
        "the transaction's next statement on a new connection",
        &reply,
    );
    assert_eq!(
        sub(&reply, &["cursor"])
            .get_array("firstBatch")
            .unwrap()
            .clone(),
        vec![Bson::Document(doc! {"_id": 1})],
        "{reply}"
    );
    let reply = raw(
        &mut second,
        doc! {"commitTransaction": 1, "lsid": lsid, "txnNumber": 1i64, "autocommit": false, "$db": "admin"},
    );
    assert_raw_ok("commitTransaction on a new connection", &reply);
    let find = raw(
        &mut second,
        doc! {"find": "survive", "filter": {}, "$db": "txn"},
    );
    assert_eq!(
        sub(&find, &["cursor"])
            .get_array("firstBatch")
            .unwrap()
            .len(),
        1,
        "the committed write is not there: {find}"
    );
}

// ---------------------------------------------------------------------------
// lifetime and unknown transactions
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_past_its_lifetime_is_aborted_by_the_server() {
    let server = TestServer::start_with_args(&["--transaction-lifetime-limit-seconds", "1"]);
    let client = server.client().await;
    let coll = client.database("txn").collection::<Document>("life");
    bounded("seed", coll.insert_one(doc! {"_id": 0}))
        .await
        .expect("seed");

    let mut session = client.start_session().await.expect("start_session");
    session
        .start_transaction()
        .await
        .expect("start_transaction");
    bounded(
        "insert",
        coll.insert_one(doc! {"_id": 1}).session(&mut session),
    )
    .await
    .expect("insert");
    bounded(
        "update",
        coll.update_one(doc! {"_id": 0}, doc! {"$set": {"touched": true}})
            .session(&mut session),
    )
    .await
    .expect("update");
    tokio::time::sleep(Duration::from_millis(3500)).await;

    let late = bounded(
        "late insert",
        coll.insert_one(doc! {"_id": 2}).session(&mut session),
    )
    .await;
    let err = late.expect_err("a statement of an expired transaction succeeded");
    assert_eq!(
        server_code(&err),
        Some(251),
        "expected 251 NoSuchTransaction, got {}",
        brief(&err)
    );
    let _ = bounded("abort", session.abort_transaction()).await;

    assert_eq!(
        all_docs(&coll).await,
        vec![doc! {"_id": 0}],
        "the expired transaction's writes are still there"
    );
    // Nothing of it is held any more: the same documents can be written at once.
    bounded("insert after", coll.insert_one(doc! {"_id": 1}))
        .await
        .expect("insert after expiry");
    bounded(
        "update after",
        coll.update_one(doc! {"_id": 0}, doc! {"$set": {"v": 1}}),
    )
    .await
    .expect("update after expiry");
    let status = bounded(
        "serverStatus",
        client
            .database("admin")
            .run_command(doc! {"serverStatus": 1}),
    )
    .await
    .expect("serverStatus");
    assert_eq!(
        current_open(&status),
        0.0,
        "{}",
        sub(&status, &["transactions"])
    );
    assert!(num(sub(&status, &["transactions"]), "totalAborted") >= 1.0);
}

/// Only `--transaction-lifetime-limit-seconds` (default 60) ends an idle transaction: one that
/// has written and then waits 3 s (a user thinking, a slow service call) with nobody else
/// around continues and commits — MongoDB's behaviour, and docgate's on both backends (on
/// SQLite a transaction idle for a second holding the write lock is aborted only while
/// another writer waits for it: README, "Transactions").
#[test]
fn an_idle_transaction_lives_until_its_lifetime_limit() {
    let server = TestServer::start();
    let mut stream = raw_wire::connect(&server);
    let lsid = new_lsid();
    let txn = |extra: Document| {
        let mut cmd = extra;
        cmd.insert("lsid", lsid.clone());
        cmd.insert("txnNumber", 1i64);
        cmd.insert("autocommit", false);
        cmd
    };
    let mut first = txn(doc! {"insert": "idle", "documents": [{"_id": 1}], "$db": "txn"});
    first.insert("startTransaction", true);
    assert_raw_ok("first statement", &raw(&mut stream, first));
    std::thread::sleep(Duration::from_secs(3));
    let reply = raw(
        &mut stream,
        txn(doc! {"insert": "idle", "documents": [{"_id": 2}], "$db": "txn"}),
    );
    assert_raw_ok(
        "a statement after 3 s idle (the lifetime limit is 60 s)",
        &reply,
    );
    let reply = raw(
        &mut stream,
        txn(doc! {"commitTransaction": 1, "$db": "admin"}),
    );
    assert_raw_ok("commit after 3 s idle", &reply);
    let count = raw(&mut stream, doc! {"count": "idle", "$db": "txn"});
    assert_eq!(num(&count, "n"), 2.0, "{count}");
}

#[test]
fn an_unknown_transaction_is_no_such_transaction() {
    let server = TestServer::start();
    let mut stream = raw_wire::connect(&server);
    let lsid = new_lsid();
    for cmd in [
        doc! {"commitTransaction": 1, "lsid": lsid.clone(), "txnNumber": 5i64, "autocommit": false, "$db": "admin"},
        doc! {"abortTransaction": 1, "lsid": lsid.clone(), "txnNumber": 6i64, "autocommit": false, "$db": "admin"},
        doc! {"find": "c", "filter": {}, "lsid": lsid.clone(), "txnNumber": 7i64, "autocommit": false, "$db": "txn"},
        doc! {"insert": "c", "documents": [{"_id": 1}], "lsid": lsid.clone(), "txnNumber": 8i64, "autocommit": false, "$db": "txn"},
    ] {
        let what = format!("{cmd}");
        let is_abort = cmd.contains_key("abortTransaction");
        let reply = raw(&mut stream, cmd);
        assert_raw_error(&what, &reply, 251, "NoSuchTransaction");
        // The transactions specification's error-labels tests expect the label on statements
        // and on commitTransaction; for abortTransaction (whose errors drivers ignore) it
        // documents none, so its labels are not checked.
        assert!(
            is_abort
                || labels(&reply)
                    .iter()
                    .any(|l| l == "TransientTransactionError"),
            "{what}: 251 without TransientTransactionError: {reply}"
        );
    }
    let reply = raw(&mut stream, doc! {"find": "c", "filter": {}, "$db": "txn"});
    assert_raw_ok("find", &reply);
    assert!(
        sub(&reply, &["cursor"])
            .get_array("firstBatch")
            .unwrap()
            .is_empty(),
        "{reply}"
    );
}
