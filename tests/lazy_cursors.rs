//! Cursors that stream (issue 15), checked from the outside with the Rust `mongodb` driver
//! against the real `docgate` binary, on SQLite and — with `DOCGATE_TEST_BACKEND` set to a
//! `postgres://` URL — on PostgreSQL:
//!
//! - abandoned cursors hold a position, not a result: 200 cursors over 100,000 documents of
//!   ~1 KB, each left open after its first batch of 10 (half of them `aggregate`s of
//!   per-document stages), grow the server's RSS by < 50 MB,
//!   and `serverStatus.metrics.cursor.open.total` counts them;
//! - a full iteration (sorted by `_id`, and in natural order) under concurrent inserts,
//!   deletes and updates sees every document present throughout exactly once, no document
//!   twice, and (sorted) strictly increasing `_id`s;
//! - the limits: `--max-open-cursors` and `--max-open-cursors-per-session` refuse the next
//!   cursor with 146 ExceededMemoryLimit, and killed or exhausted cursors free their slot;
//! - the idle timeout `--cursor-timeout-ms` closes idle cursors (43 CursorNotFound,
//!   `metrics.cursor.timedOut`) and spares `noCursorTimeout` ones;
//! - results are unchanged by streaming: `batchSize`, `limit`, `skip`, negative limits,
//!   `singleBatch`, `getMore`'s own `batchSize`, sorts with ties (ties in `_id` order, with and
//!   without an index), `maxTimeMS` on `getMore` of a non-tailable cursor (2 BadValue);
//! - a cursor whose collection is dropped answers 175 QueryPlanKilled.
//!
//! Not for: the cursor basics the driver suites already cover (`driver_queries.rs`:
//! batching, the 16 MiB batch, killed cursors; `hostile_clients.rs`: cursor ownership).
//! Cursors are opened with raw `find` commands where the test needs exact control (no
//! `getMore` sent, no `killCursors` on drop) and with an explicit session wherever a
//! `getMore` follows, since a cursor belongs to its session. Helpers: `cursor_support/`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod cursor_support;
mod driver_support;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use common::TestServer;
use cursor_support::{
    cursor_batch, cursor_metric, drain, get_more, id_of, ids, insert_in_chunks, open, outcome,
    seed_small, Failures,
};
use driver_support::{expect_command_error, server_code};
use mongodb::bson::{doc, Bson, Document};
use mongodb::{Collection, IndexModel};
use tokio::sync::watch;

/// Any wait on the other task of a test gives up after this long, so a test always stops.
const WAIT_LIMIT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------
// a. memory: abandoned cursors hold a position, not a result
// ---------------------------------------------------------------------------

const BIG_DOCS: i32 = 100_000;
const ABANDONED_CURSORS: usize = 200;
const RSS_GROWTH_LIMIT: u64 = 50 * 1024 * 1024;

#[tokio::test]
async fn abandoned_cursors_hold_no_result() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("lazy");
    let coll = db.collection::<Document>("big");

    let loading = Instant::now();
    let pad = "x".repeat(1000);
    let docs: Vec<Document> = (0..BIG_DOCS)
        .map(|i| doc! {"_id": i, "n": i, "pad": format!("{i:08}{pad}")})
        .collect();
    insert_in_chunks(&coll, docs, 5000).await;
    eprintln!(
        "loaded {BIG_DOCS} documents of ~1 KB in {:.1} s",
        loading.elapsed().as_secs_f64()
    );

    let before = server.rss_bytes();
    let opening = Instant::now();
    let mut open_ids = Vec::with_capacity(ABANDONED_CURSORS);
    // One session per cursor, all kept alive, as 200 clients would: a per-session cursor
    // limit has no say here.
    let mut sessions = Vec::with_capacity(ABANDONED_CURSORS);
    for n in 1..=ABANDONED_CURSORS {
        let mut session = client.start_session().await.expect("session");
        // A raw find (or, every other time, an aggregate whose stages look at one document
        // at a time) and never a getMore: the cursor stays open on the server after its
        // first batch, as an abandoned driver cursor would.
        let command = if n % 2 == 0 {
            doc! {"find": "big", "batchSize": 10}
        } else {
            doc! {
                "aggregate": "big",
                "pipeline": [{"$match": {"n": {"$gte": 0}}}, {"$set": {"m": {"$add": ["$n", 1]}}}],
                "cursor": {"batchSize": 10},
            }
        };
        let reply = open(&db, command, Some(&mut session))
            .await
            .expect("find or aggregate");
        sessions.push(session);
        let (id, batch) = cursor_batch(&reply);
        assert_eq!(batch.len(), 10, "first batch of cursor {n}");
        assert_ne!(id, 0, "cursor {n} must stay open after its first batch");
        open_ids.push(id);
        // Checked after every cursor, so a server that keeps whole results fails here
        // (after one or two cursors of ~100 MB) instead of exhausting the machine's memory.
        let grown = server.rss_bytes().saturating_sub(before);
        assert!(
            grown < RSS_GROWTH_LIMIT,
            "server RSS grew by {} MB (from {} MB) after {n} of {ABANDONED_CURSORS} cursors \
             abandoned after one batch of 10: more than 50 MB, the cursors hold their results",
            grown / (1024 * 1024),
            before / (1024 * 1024)
        );
    }
    let after = server.rss_bytes();
    eprintln!(
        "{ABANDONED_CURSORS} cursors opened in {:.1} s; RSS {} MB -> {} MB",
        opening.elapsed().as_secs_f64(),
        before / (1024 * 1024),
        after / (1024 * 1024)
    );

    let open_total = cursor_metric(&client, &["open", "total"]).await;
    assert!(
        open_total.is_some_and(|n| n >= ABANDONED_CURSORS as f64),
        "serverStatus.metrics.cursor.open.total is {open_total:?}, expected >= {ABANDONED_CURSORS}"
    );

    let killed = db
        .run_command(doc! {"killCursors": "big", "cursors": open_ids.clone()})
        .await
        .expect("killCursors");
    assert_eq!(
        killed.get_array("cursorsKilled").map(Vec::len).ok(),
        Some(ABANDONED_CURSORS),
        "{killed}"
    );
}

// ---------------------------------------------------------------------------
// b. a full iteration under concurrent writes
// ---------------------------------------------------------------------------

const LIVE_DOCS: i32 = 20_000;
const ITERATION_BATCH: u32 = 100;
/// One writer step per batch of the iteration.
const WRITER_STEPS: i32 = LIVE_DOCS / ITERATION_BATCH as i32;
const NEW_ID_BASE: i32 = 1_000_000;
const NEW_PER_STEP: i32 = 10;
/// The reader has finished (the value of the progress channel).
const DONE: usize = usize::MAX;

/// The `_id`s below `LIVE_DOCS` that are multiples of `every`, whose position among them
/// is `step` modulo `WRITER_STEPS`: each step's share spreads over the whole range, so some
/// are behind the cursor and some ahead of it.
fn share(every: i32, step: i32) -> Vec<i32> {
    (0..LIVE_DOCS)
        .filter(|i| i % every == 0 && (i / every) % WRITER_STEPS == step)
        .collect()
}

/// What the writer did: the `_id`s it deleted and inserted, and how many steps it ran.
struct Writes {
    deleted: HashSet<i64>,
    inserted: HashSet<i64>,
    steps: i32,
}

/// Step `k` waits until the reader has consumed `k + 1` batches, then inserts new
/// documents, deletes every 7th and updates every 5th document of its share, and reports
/// `k + 1` steps done; it stops when the reader is done.
async fn write_while_reading(
    coll: Collection<Document>,
    mut progress: watch::Receiver<usize>,
    steps_done: watch::Sender<i32>,
) -> Writes {
    let mut writes = Writes {
        deleted: HashSet::new(),
        inserted: HashSet::new(),
        steps: 0,
    };
    for k in 0..WRITER_STEPS {
        let wanted = (k as usize + 1) * ITERATION_BATCH as usize;
        let seen = tokio::time::timeout(WAIT_LIMIT, progress.wait_for(|&p| p >= wanted))
            .await
            .expect("the reader stalled")
            .map(|p| *p)
            .unwrap_or(DONE);
        if seen == DONE {
            break;
        }
        let new: Vec<Document> = (0..NEW_PER_STEP)
            .map(|j| NEW_ID_BASE + k * NEW_PER_STEP + j)
            .map(|id| doc! {"_id": id, "pad": "new"})
            .collect();
        writes.inserted.extend(new.iter().map(id_of));
        coll.insert_many(new).await.expect("concurrent insert");
        let doomed = share(7, k);
        writes.deleted.extend(doomed.iter().map(|&i| i64::from(i)));
        coll.delete_many(doc! {"_id": {"$in": doomed}})
            .await
            .expect("concurrent delete");
        coll.update_many(
            doc! {"_id": {"$in": share(5, k)}},
            doc! {"$set": {"touched": true}},
        )
        .await
        .expect("concurrent update");
        writes.steps = k + 1;
        let _ = steps_done.send(k + 1);
    }
    writes
}

/// Iterates `find({})` (sorted by `_id` or in natural order) with batches of 100 while
/// another client writes, and checks what was seen.
async fn iterate_under_writes(server: &TestServer, name: &str, sorted: bool) {
    let client = server.client().await;
    let coll = client.database("lazy").collection::<Document>(name);
    let pad = "p".repeat(200);
    let docs: Vec<Document> = (0..LIVE_DOCS)
        .map(|i| doc! {"_id": i, "pad": format!("{i:06}{pad}")})
        .collect();
    insert_in_chunks(&coll, docs, 5000).await;

    let writer_client = server.client().await;
    let writer_coll = writer_client.database("lazy").collection::<Document>(name);
    let (progress_tx, progress_rx) = watch::channel(0usize);
    let (steps_tx, mut steps_rx) = watch::channel(0i32);
    let writer = tokio::spawn(write_while_reading(writer_coll, progress_rx, steps_tx));

    let find = coll.find(doc! {}).batch_size(ITERATION_BATCH);
    let find = if sorted {
        find.sort(doc! {"_id": 1})
    } else {
        find
    };
    let mut cursor = find.await.expect("find");
    let mut seen: Vec<i64> = Vec::new();
    while cursor.advance().await.expect("advance") {
        seen.push(id_of(&cursor.deserialize_current().expect("document")));
        if seen.len() % ITERATION_BATCH as usize == 0 {
            let batches = seen.len() / ITERATION_BATCH as usize;
            let _ = progress_tx.send(seen.len());
            // Stay at most two batches ahead of the writer, so the writes spread over the
            // whole iteration (each step runs while the reader fetches the next batch).
            let behind = batches as i32 - 2;
            if behind > 0 && behind < WRITER_STEPS {
                tokio::time::timeout(WAIT_LIMIT, steps_rx.wait_for(|&s| s >= behind))
                    .await
                    .expect("the writer stalled")
                    .expect("the writer stopped");
            }
        }
    }
    let _ = progress_tx.send(DONE);
    let writes = writer.await.expect("writer task");
    let order = if sorted {
        "sorted by _id"
    } else {
        "natural order"
    };
    assert!(
        writes.steps >= WRITER_STEPS - 20,
        "{order}: only {} of {WRITER_STEPS} writer steps ran during the iteration",
        writes.steps
    );

    let mut times_seen: HashMap<i64, usize> = HashMap::new();
    for &id in &seen {
        *times_seen.entry(id).or_default() += 1;
    }
    let twice: Vec<i64> = times_seen
        .iter()
        .filter(|(_, &n)| n > 1)
        .map(|(&id, _)| id)
        .collect();
    assert!(
        twice.is_empty(),
        "{order}: {} documents seen more than once, e.g. {:?}",
        twice.len(),
        &twice[..twice.len().min(10)]
    );
    let missed: Vec<i64> = (0..i64::from(LIVE_DOCS))
        .filter(|id| !writes.deleted.contains(id) && !times_seen.contains_key(id))
        .collect();
    assert!(
        missed.is_empty(),
        "{order}: {} documents present throughout were not seen, e.g. {:?}",
        missed.len(),
        &missed[..missed.len().min(10)]
    );
    let strangers: Vec<i64> = seen
        .iter()
        .copied()
        .filter(|id| !(0..i64::from(LIVE_DOCS)).contains(id) && !writes.inserted.contains(id))
        .collect();
    assert!(strangers.is_empty(), "{order}: unknown _ids {strangers:?}");
    if sorted {
        let out_of_order = seen.windows(2).position(|w| w[0] >= w[1]);
        assert_eq!(
            out_of_order,
            None,
            "{order}: _ids not strictly increasing at position {out_of_order:?}: {:?}",
            out_of_order.map(|p| &seen[p..p + 2])
        );
    }
    eprintln!(
        "{order}: saw {} documents; the writer ran {} steps, deleted {} and inserted {}",
        seen.len(),
        writes.steps,
        writes.deleted.len(),
        writes.inserted.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_iteration_sees_each_present_document_once_under_concurrent_writes() {
    let server = TestServer::start();
    iterate_under_writes(&server, "by_id", true).await;
    iterate_under_writes(&server, "natural", false).await;
}

// ---------------------------------------------------------------------------
// c. limits on open cursors
// ---------------------------------------------------------------------------

/// A cursor that is never exhausted by its first batch: batchSize 1 over 10 documents.
fn one_of_ten() -> Document {
    doc! {"find": "ten", "batchSize": 1}
}

#[tokio::test]
async fn cursor_limits() {
    // In total.
    let server = TestServer::start_with_args(&["--max-open-cursors", "5"]);
    let client = server.client().await;
    let db = client.database("lazy");
    seed_small(&db.collection("ten"), 10).await;

    // A session of its own for every cursor (kept alive, so none is reused): only the
    // total limit applies.
    let mut sessions = Vec::new();
    for _ in 0..10 {
        sessions.push(client.start_session().await.expect("session"));
    }
    let mut ids = Vec::new();
    for (n, session) in sessions[..5].iter_mut().enumerate() {
        let (id, _) = cursor_batch(
            &open(&db, one_of_ten(), Some(session))
                .await
                .unwrap_or_else(|e| panic!("cursor {} of 5: {e}", n + 1)),
        );
        assert_ne!(id, 0);
        ids.push(id);
    }
    expect_command_error(
        open(&db, one_of_ten(), Some(&mut sessions[5])).await,
        146,
        "ExceededMemoryLimit",
    );

    // Killing one frees a slot, and only one.
    let killed = db
        .run_command(doc! {"killCursors": "ten", "cursors": [ids[4]]})
        .await
        .expect("killCursors");
    assert_eq!(
        killed.get_array("cursorsKilled").ok(),
        Some(&vec![Bson::Int64(ids[4])])
    );
    let (id, _) = cursor_batch(
        &open(&db, one_of_ten(), Some(&mut sessions[6]))
            .await
            .expect("a cursor after killCursors freed a slot"),
    );
    assert_ne!(id, 0);
    expect_command_error(
        open(&db, one_of_ten(), Some(&mut sessions[7])).await,
        146,
        "ExceededMemoryLimit",
    );

    // An exhausted cursor frees its slot.
    let (next, rest) = cursor_batch(
        &get_more(&db, "ten", ids[0], Some(100), &mut sessions[0])
            .await
            .expect("getMore to the end"),
    );
    assert_eq!(
        (next, rest.len()),
        (0, 9),
        "the cursor ends with the last 9"
    );
    let (id, _) = cursor_batch(
        &open(&db, one_of_ten(), Some(&mut sessions[8]))
            .await
            .expect("a cursor after an exhausted one freed its slot"),
    );
    assert_ne!(id, 0);
    expect_command_error(
        open(&db, one_of_ten(), Some(&mut sessions[9])).await,
        146,
        "ExceededMemoryLimit",
    );
    drop(server);

    // Per session.
    let server = TestServer::start_with_args(&["--max-open-cursors-per-session", "3"]);
    let client = server.client().await;
    let db = client.database("lazy");
    seed_small(&db.collection("ten"), 10).await;
    let mut a = client.start_session().await.expect("session a");
    let mut b = client.start_session().await.expect("session b");
    let mut of_a = Vec::new();
    for n in 1..=3 {
        let (id, _) = cursor_batch(
            &open(&db, one_of_ten(), Some(&mut a))
                .await
                .unwrap_or_else(|e| panic!("cursor {n} of 3 in session a: {e}")),
        );
        of_a.push(id);
    }
    expect_command_error(
        open(&db, one_of_ten(), Some(&mut a)).await,
        146,
        "ExceededMemoryLimit",
    );
    let (of_b, _) = cursor_batch(
        &open(&db, one_of_ten(), Some(&mut b))
            .await
            .expect("another session still opens a cursor"),
    );
    assert_ne!(of_b, 0);
    db.run_command(doc! {"killCursors": "ten", "cursors": [of_a[0]]})
        .await
        .expect("killCursors of a cursor of session a");
    let (id, _) = cursor_batch(
        &open(&db, one_of_ten(), Some(&mut a))
            .await
            .expect("session a after killing one of its cursors"),
    );
    assert_ne!(id, 0);
}

// ---------------------------------------------------------------------------
// d. the idle timeout as a setting
// ---------------------------------------------------------------------------

#[tokio::test]
async fn cursor_timeout_setting() {
    let server = TestServer::start_with_args(&["--cursor-timeout-ms", "1500"]);
    let client = server.client().await;
    let db = client.database("lazy");
    seed_small(&db.collection("ten"), 10).await;
    let mut session = client.start_session().await.expect("session");
    let (idle, _) = cursor_batch(
        &open(&db, one_of_ten(), Some(&mut session))
            .await
            .expect("idle cursor"),
    );
    let (spared, _) = cursor_batch(
        &open(
            &db,
            doc! {"find": "ten", "batchSize": 1, "noCursorTimeout": true},
            Some(&mut session),
        )
        .await
        .expect("noCursorTimeout cursor"),
    );
    assert!(idle != 0 && spared != 0);

    // Well past the timeout; then wait (up to 10 s in all) for the reaper to report it,
    // without touching the idle cursor (a getMore would make it busy again).
    let waiting = Instant::now();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut timed_out = cursor_metric(&client, &["timedOut"]).await;
    while timed_out.is_none_or(|n| n < 1.0) && waiting.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        timed_out = cursor_metric(&client, &["timedOut"]).await;
    }
    expect_command_error(
        get_more(&db, "ten", idle, Some(1), &mut session).await,
        43,
        "CursorNotFound",
    );
    // Read again: a server that notices the timeout at the getMore counts it then.
    let timed_out = cursor_metric(&client, &["timedOut"]).await;
    assert!(
        timed_out.is_some_and(|n| n >= 1.0),
        "serverStatus.metrics.cursor.timedOut is {timed_out:?} after {:.1} s, expected >= 1",
        waiting.elapsed().as_secs_f64()
    );
    let (_, batch) = cursor_batch(
        &get_more(&db, "ten", spared, Some(1), &mut session)
            .await
            .expect("the noCursorTimeout cursor survives the wait"),
    );
    assert_eq!(ids(&batch), vec![1]);
}

// ---------------------------------------------------------------------------
// e. results unchanged
// ---------------------------------------------------------------------------

const RESULT_DOCS: i64 = 1000;

/// The sort key with ties: 13 distinct values over the 1,000 documents.
fn tie_key(id: i64) -> i64 {
    (id * 7) % 13
}

#[tokio::test]
async fn get_more_results_unchanged() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("lazy");
    // Inserted in a scrambled order (7919 is prime to 1,000), so natural order is not `_id`
    // order and a tie broken by anything but `_id` shows.
    let docs: Vec<Document> = (0..RESULT_DOCS)
        .map(|i| (i * 7919) % RESULT_DOCS)
        .map(|id| doc! {"_id": id, "k": tie_key(id), "n": id})
        .collect();
    for name in ["plain", "indexed"] {
        insert_in_chunks(&db.collection(name), docs.clone(), 250).await;
    }
    db.collection::<Document>("indexed")
        .create_index(IndexModel::builder().keys(doc! {"k": 1}).build())
        .await
        .expect("index on k");
    let all: Vec<i64> = (0..RESULT_DOCS).collect();
    let mut session = client.start_session().await.expect("session");
    let mut failures = Failures::default();

    // batchSize on find and on every getMore: full batches until the last.
    let (sizes, seen) = drain(
        &db,
        doc! {"find": "plain", "sort": {"_id": 1}, "batchSize": 7},
        Some(7),
        &mut session,
    )
    .await;
    failures.same("sort _id, batchSize 7", &seen, &all);
    let (last, full) = sizes.split_last().expect("batches");
    failures.check(full.iter().all(|&n| n == 7) && *last <= 7, || {
        format!("sort _id, batchSize 7: batches {sizes:?}")
    });

    // limit ends the cursor; skip and limit together; skip near the end.
    let (sizes, seen) = drain(
        &db,
        doc! {"find": "plain", "sort": {"_id": 1}, "limit": 250, "batchSize": 60},
        None,
        &mut session,
    )
    .await;
    failures.same(
        "limit 250, batchSize 60",
        &seen,
        &(0..250).collect::<Vec<i64>>(),
    );
    failures.check(sizes[0] == 60, || {
        format!("limit 250, batchSize 60: batches {sizes:?}")
    });
    let (_, seen) = drain(
        &db,
        doc! {"find": "plain", "sort": {"_id": 1}, "skip": 100, "limit": 50, "batchSize": 20},
        Some(20),
        &mut session,
    )
    .await;
    failures.same(
        "skip 100, limit 50",
        &seen,
        &(100..150).collect::<Vec<i64>>(),
    );
    let (_, seen) = drain(
        &db,
        doc! {"find": "plain", "sort": {"_id": 1}, "skip": 990, "batchSize": 5},
        None,
        &mut session,
    )
    .await;
    failures.same("skip 990", &seen, &(990..1000).collect::<Vec<i64>>());

    // A negative limit and singleBatch: one batch, no cursor left open.
    for (find, expected) in [
        (doc! {"find": "plain", "sort": {"_id": 1}, "limit": -5}, 5),
        (
            doc! {"find": "plain", "sort": {"_id": 1}, "limit": 5, "singleBatch": true},
            5,
        ),
        (
            doc! {"find": "plain", "sort": {"_id": 1}, "batchSize": 20, "singleBatch": true},
            20,
        ),
    ] {
        let (id, batch) = cursor_batch(
            &open(&db, find.clone(), Some(&mut session))
                .await
                .expect("single batch"),
        );
        failures.check(id == 0, || format!("{find} leaves a cursor open"));
        failures.same(
            &find.to_string(),
            &ids(&batch),
            &(0..expected).collect::<Vec<i64>>(),
        );
    }

    // The driver sends a negative limit as limit and singleBatch.
    let cursor = db
        .collection::<Document>("plain")
        .find(doc! {})
        .sort(doc! {"_id": 1})
        .limit(-5)
        .await
        .expect("driver find with a negative limit");
    let got = driver_support::collect(cursor).await;
    failures.same(
        "driver limit(-5)",
        &ids(&got),
        &(0..5).collect::<Vec<i64>>(),
    );

    // getMore's own batchSize, different on each call; none takes the rest.
    let (mut id, batch) = cursor_batch(
        &open(
            &db,
            doc! {"find": "plain", "sort": {"_id": 1}, "batchSize": 10},
            Some(&mut session),
        )
        .await
        .expect("find"),
    );
    let mut sizes = vec![batch.len()];
    let mut seen = ids(&batch);
    for n in [Some(3), Some(50), None] {
        let (next, batch) = cursor_batch(
            &get_more(&db, "plain", id, n, &mut session)
                .await
                .expect("getMore"),
        );
        id = next;
        sizes.push(batch.len());
        seen.extend(ids(&batch));
    }
    failures.check(sizes == [10, 3, 50, 937], || {
        format!(
            "getMore batchSize 3, 50, none after 10: batches {sizes:?}, expected [10, 3, 50, 937]"
        )
    });
    failures.same("getMore batchSize 3, 50, none", &seen, &all);
    failures.check(id == 0, || {
        "getMore without batchSize leaves the cursor open".into()
    });

    // Ties in the sort key come back in `_id` order, with and without an index on the key,
    // across getMores, also behind a filter.
    let mut by_key = all.clone();
    by_key.sort_by_key(|&id| (tie_key(id), id));
    for name in ["plain", "indexed"] {
        let (_, seen) = drain(
            &db,
            doc! {"find": name, "sort": {"k": 1}, "batchSize": 33},
            Some(33),
            &mut session,
        )
        .await;
        failures.same(
            &format!("{name}: sort {{k: 1}} (ties in _id order)"),
            &seen,
            &by_key,
        );
        let (_, seen) = drain(
            &db,
            doc! {"find": name, "filter": {"n": {"$gte": 250}}, "sort": {"k": 1}, "skip": 10, "limit": 400, "batchSize": 45},
            Some(45),
            &mut session,
        )
        .await;
        let expected: Vec<i64> = by_key
            .iter()
            .copied()
            .filter(|&id| id >= 250)
            .skip(10)
            .take(400)
            .collect();
        failures.same(
            &format!("{name}: filter n >= 250, sort {{k: 1}}, skip 10, limit 400"),
            &seen,
            &expected,
        );
    }

    // Through the driver, as an application iterates.
    let cursor = db
        .collection::<Document>("plain")
        .find(doc! {"n": {"$lt": 600}})
        .sort(doc! {"_id": 1})
        .skip(10)
        .limit(300)
        .batch_size(7)
        .await
        .expect("driver find");
    let got = driver_support::collect(cursor).await;
    failures.same(
        "driver skip 10, limit 300, batch_size 7",
        &ids(&got),
        &(10..310).collect::<Vec<i64>>(),
    );

    // maxTimeMS on getMore is for awaitData cursors only, as in MongoDB.
    let (id, _) = cursor_batch(
        &open(
            &db,
            doc! {"find": "plain", "batchSize": 2},
            Some(&mut session),
        )
        .await
        .expect("find"),
    );
    let refused = db
        .run_command(doc! {"getMore": id, "collection": "plain", "maxTimeMS": 1000})
        .session(&mut session)
        .await;
    let code = refused.as_ref().err().and_then(server_code);
    failures.check(code == Some(2), || {
        format!(
            "getMore with maxTimeMS on a non-tailable cursor: expected error 2 BadValue, got {}",
            outcome(&refused)
        )
    });

    // A killed cursor is gone.
    db.run_command(doc! {"killCursors": "plain", "cursors": [id]})
        .await
        .expect("killCursors");
    let after_kill = get_more(&db, "plain", id, None, &mut session).await;
    let code = after_kill.as_ref().err().and_then(server_code);
    failures.check(code == Some(43), || {
        format!(
            "getMore after killCursors: expected 43 CursorNotFound, got {}",
            outcome(&after_kill)
        )
    });
    failures.finish("get_more_results_unchanged");
}

// ---------------------------------------------------------------------------
// f. the collection goes away under a cursor
// ---------------------------------------------------------------------------

#[tokio::test]
async fn collection_dropped_under_a_cursor() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("lazy");
    let coll = db.collection::<Document>("doomed");
    seed_small(&coll, 100).await;
    let mut session = client.start_session().await.expect("session");
    let (id, batch) = cursor_batch(
        &open(
            &db,
            doc! {"find": "doomed", "batchSize": 2},
            Some(&mut session),
        )
        .await
        .expect("find"),
    );
    assert_eq!(batch.len(), 2);
    assert_ne!(id, 0);

    let other = server.client().await;
    other
        .database("lazy")
        .collection::<Document>("doomed")
        .drop()
        .await
        .expect("drop");

    expect_command_error(
        get_more(&db, "doomed", id, Some(10), &mut session).await,
        175,
        "QueryPlanKilled",
    );
}
