//! Helpers of `lazy_cursors.rs`: raw `find` / `getMore` with an explicit session, reading
//! cursor replies and `serverStatus.metrics.cursor`, draining a cursor batch by batch,
//! loading documents in chunks, and a list of failed checks that lets a test report every
//! difference of one run.
//!
//! Not the server harness (`tests/common/mod.rs`) nor the driver suites' helpers
//! (`tests/driver_support/mod.rs`, used here for error codes).

#![allow(dead_code)]

use crate::driver_support::{assert_ok, num, server_code};
use mongodb::bson::{doc, Bson, Document};
use mongodb::{ClientSession, Collection, Database};

/// A document's integer `_id`, whatever integer type it came back as.
pub fn id_of(d: &Document) -> i64 {
    match d.get("_id") {
        Some(Bson::Int32(v)) => i64::from(*v),
        Some(Bson::Int64(v)) => *v,
        other => panic!("_id is not an integer in {d}: {other:?}"),
    }
}

/// The cursor id and the documents of a `find` (`firstBatch`) or `getMore` (`nextBatch`)
/// reply.
pub fn cursor_batch(reply: &Document) -> (i64, Vec<Document>) {
    assert_ok(reply);
    let cursor = reply
        .get_document("cursor")
        .unwrap_or_else(|_| panic!("no cursor in {reply}"));
    let id = cursor
        .get_i64("id")
        .unwrap_or_else(|_| panic!("cursor id is not an int64 in {reply}"));
    let batch = cursor
        .get_array("firstBatch")
        .or_else(|_| cursor.get_array("nextBatch"))
        .unwrap_or_else(|_| panic!("no batch in {reply}"));
    let docs = batch
        .iter()
        .map(|b| b.as_document().expect("a document in the batch").clone())
        .collect();
    (id, docs)
}

/// A command's outcome in a few words: its error code, or that it succeeded.
pub fn outcome(result: &mongodb::error::Result<Document>) -> String {
    match result {
        Ok(reply) => match reply.get_document("cursor") {
            Ok(_) => {
                let (id, batch) = cursor_batch(reply);
                format!("ok with {} documents, cursor id {id}", batch.len())
            }
            Err(_) => format!("ok: {reply}"),
        },
        Err(e) => match server_code(e) {
            Some(code) => format!("error {code}: {e}"),
            None => format!("{e}"),
        },
    }
}

pub fn ids(docs: &[Document]) -> Vec<i64> {
    docs.iter().map(id_of).collect()
}

/// `serverStatus.metrics.cursor.<path>` as a number, None when the server does not report it.
pub async fn cursor_metric(client: &mongodb::Client, path: &[&str]) -> Option<f64> {
    let status = client
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .expect("serverStatus");
    let mut at = status
        .get_document("metrics")
        .and_then(|m| m.get_document("cursor"))
        .ok()?;
    let (last, parents) = path.split_last().expect("a metric path");
    for key in parents {
        at = at.get_document(key).ok()?;
    }
    at.get(last)?;
    Some(num(at, last))
}

/// Opens a cursor with a raw `find` in `session` (or an implicit one) and returns the reply.
pub async fn open(
    db: &Database,
    command: Document,
    session: Option<&mut ClientSession>,
) -> mongodb::error::Result<Document> {
    match session {
        Some(session) => db.run_command(command).session(session).await,
        None => db.run_command(command).await,
    }
}

/// `getMore` on `id` of `collection` in `session`, with an optional `batchSize`.
pub async fn get_more(
    db: &Database,
    collection: &str,
    id: i64,
    batch_size: Option<i64>,
    session: &mut ClientSession,
) -> mongodb::error::Result<Document> {
    let mut command = doc! {"getMore": id, "collection": collection};
    if let Some(n) = batch_size {
        command.insert("batchSize", n);
    }
    db.run_command(command).session(session).await
}

/// Runs `find` in `session`, then `getMore` (with `batch_size`) until the cursor is
/// exhausted; the size of every batch and the `_id`s in the order they came.
pub async fn drain(
    db: &Database,
    find: Document,
    batch_size: Option<i64>,
    session: &mut ClientSession,
) -> (Vec<usize>, Vec<i64>) {
    let collection = find
        .get_str("find")
        .expect("find names a collection")
        .to_string();
    let reply = db
        .run_command(find.clone())
        .session(&mut *session)
        .await
        .unwrap_or_else(|e| panic!("{find}: {e}"));
    let (mut id, docs) = cursor_batch(&reply);
    let mut sizes = vec![docs.len()];
    let mut seen = ids(&docs);
    let mut rounds = 0;
    while id != 0 {
        rounds += 1;
        assert!(rounds < 10_000, "{find}: the cursor never ends");
        let reply = get_more(db, &collection, id, batch_size, session)
            .await
            .unwrap_or_else(|e| panic!("getMore after {find}: {e}"));
        let (next, docs) = cursor_batch(&reply);
        assert!(
            next == 0 || next == id,
            "cursor id changed from {id} to {next}"
        );
        id = next;
        sizes.push(docs.len());
        seen.extend(ids(&docs));
    }
    (sizes, seen)
}

/// The failed checks of a test that goes on after a failure, so that one run reports all of
/// them; `finish` panics with the list.
#[derive(Default)]
pub struct Failures(Vec<String>);

impl Failures {
    pub fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.0.push(what());
        }
    }

    /// `got` must equal `expected`; a difference is described by the lengths and the first
    /// position where they differ.
    pub fn same(&mut self, what: &str, got: &[i64], expected: &[i64]) {
        if got == expected {
            return;
        }
        let at = got
            .iter()
            .zip(expected)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(expected.len()));
        let around = |v: &[i64]| v[at..v.len().min(at + 8)].to_vec();
        self.0.push(format!(
            "{what}: {} _ids, expected {}; first difference at position {at}: {:?} instead of {:?}",
            got.len(),
            expected.len(),
            around(got),
            around(expected)
        ));
    }

    pub fn finish(self, test: &str) {
        assert!(
            self.0.is_empty(),
            "{test}: {} checks failed:\n- {}",
            self.0.len(),
            self.0.join("\n- ")
        );
    }
}

/// `insert_many` in chunks of `chunk`.
pub async fn insert_in_chunks(coll: &Collection<Document>, docs: Vec<Document>, chunk: usize) {
    for part in docs.chunks(chunk) {
        coll.insert_many(part.to_vec()).await.expect("insert_many");
    }
}

/// `n` documents `{_id: i, n: i}`.
pub async fn seed_small(coll: &Collection<Document>, n: i32) {
    let docs: Vec<Document> = (0..n).map(|i| doc! {"_id": i, "n": i}).collect();
    insert_in_chunks(coll, docs, 1000).await;
}
