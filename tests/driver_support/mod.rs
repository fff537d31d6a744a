//! Helpers shared by the `driver_*` integration tests (queries, writes, admin):
//! reading numeric reply fields, checking `ok: 1` and server error codes, draining
//! cursors, the inventory fixture, and a fresh database/collection per test.
//!
//! Not the server harness: that is `tests/common/mod.rs`.

#![allow(dead_code)]

use crate::common::TestServer;
use mongodb::bson::{doc, Bson, Document};
use mongodb::error::{Error, ErrorKind, WriteFailure};
use mongodb::{Collection, Cursor, Database};

/// A numeric field of a reply as f64, whatever numeric BSON type the server chose.
pub fn num(d: &Document, key: &str) -> f64 {
    match d.get(key) {
        Some(Bson::Int32(v)) => f64::from(*v),
        Some(Bson::Int64(v)) => *v as f64,
        Some(Bson::Double(v)) => *v,
        other => panic!("field {key:?} is not a number in {d}: {other:?}"),
    }
}

pub fn assert_ok(reply: &Document) {
    assert_eq!(num(reply, "ok"), 1.0, "reply is not ok: 1: {reply}");
}

/// The server's error code carried by a driver error, if it is a server error.
pub fn server_code(err: &Error) -> Option<i32> {
    match &*err.kind {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
        _ => None,
    }
}

pub fn expect_command_error(result: mongodb::error::Result<Document>, code: i32, code_name: &str) {
    let err = match result {
        Ok(reply) => panic!("expected error {code} ({code_name}), got reply {reply}"),
        Err(e) => e,
    };
    match &*err.kind {
        ErrorKind::Command(c) => {
            assert_eq!(c.code, code, "unexpected code in {err:?}");
            assert_eq!(c.code_name, code_name, "unexpected codeName in {err:?}");
            assert!(!c.message.is_empty(), "errmsg is empty in {err:?}");
        }
        _ => panic!("expected a command error {code} ({code_name}), got {err:?}"),
    }
}

pub async fn collect(mut cursor: Cursor<Document>) -> Vec<Document> {
    let mut out = Vec::new();
    while cursor.advance().await.expect("cursor advance") {
        out.push(cursor.deserialize_current().expect("deserialize document"));
    }
    out
}

/// The `_id`s (all Int32 in these fixtures) of the documents matching `filter`, sorted.
pub async fn ids(coll: &Collection<Document>, filter: Document) -> Vec<i32> {
    let docs = collect(coll.find(filter.clone()).await.expect("find")).await;
    let mut ids: Vec<i32> = docs
        .iter()
        .map(|d| {
            d.get_i32("_id")
                .unwrap_or_else(|_| panic!("_id not i32: {d}"))
        })
        .collect();
    ids.sort_unstable();
    ids
}

/// Five inventory documents used by the query tests.
pub async fn seed_inventory(coll: &Collection<Document>) {
    let docs = vec![
        doc! { "_id": 1, "item": "journal", "qty": 25, "tags": ["blank", "red"],
        "size": { "h": 14, "w": 21, "uom": "cm" }, "status": "A" },
        doc! { "_id": 2, "item": "notebook", "qty": 50, "tags": ["red", "blank"],
        "size": { "h": 8.5, "w": 11, "uom": "in" }, "status": "A" },
        doc! { "_id": 3, "item": "paper", "qty": 100, "tags": ["red", "blank", "plain"],
        "size": { "h": 8.5, "w": 11, "uom": "in" }, "status": "D" },
        doc! { "_id": 4, "item": "planner", "qty": 75, "tags": ["blank", "red"],
        "size": { "h": 22.85, "w": 30, "uom": "cm" }, "status": "D" },
        doc! { "_id": 5, "item": "postcard", "qty": 45, "tags": ["blue"],
        "size": { "h": 10, "w": 15.25, "uom": "cm" }, "status": "A", "note": "x" },
    ];
    let res = coll.insert_many(docs).await.expect("seed insert_many");
    assert_eq!(res.inserted_ids.len(), 5);
}

pub async fn fresh(server: &TestServer, db: &str, coll: &str) -> (Database, Collection<Document>) {
    let client = server.client().await;
    let db = client.database(db);
    let coll = db.collection::<Document>(coll);
    (db, coll)
}
