//! CRUD and administration through the official Rust `mongodb` driver against a real
//! `docgate` process: what an application using the driver would check, with the
//! results MongoDB's manual documents (error codes, write errors, cursor batching,
//! `_id` type rules, query and update operators, indexes, listings, a little
//! aggregation, and single-document atomicity under concurrent writers).
//!
//! Not for malformed wire input (see `bad_input.rs`) or durability (see
//! `crash_recovery.rs`).

mod common;

use std::collections::HashSet;

use common::TestServer;
use mongodb::bson::{doc, oid::ObjectId, spec::BinarySubtype, Binary, Bson, DateTime, Document};
use mongodb::error::{Error, ErrorKind, WriteFailure};
use mongodb::{Collection, Cursor, Database};

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------

/// A numeric field of a reply as f64, whatever numeric BSON type the server chose.
fn num(d: &Document, key: &str) -> f64 {
    match d.get(key) {
        Some(Bson::Int32(v)) => f64::from(*v),
        Some(Bson::Int64(v)) => *v as f64,
        Some(Bson::Double(v)) => *v,
        other => panic!("field {key:?} is not a number in {d}: {other:?}"),
    }
}

fn assert_ok(reply: &Document) {
    assert_eq!(num(reply, "ok"), 1.0, "reply is not ok: 1: {reply}");
}

/// The server's error code carried by a driver error, if it is a server error.
fn server_code(err: &Error) -> Option<i32> {
    match &*err.kind {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
        _ => None,
    }
}

fn expect_command_error(result: mongodb::error::Result<Document>, code: i32, code_name: &str) {
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

async fn collect(mut cursor: Cursor<Document>) -> Vec<Document> {
    let mut out = Vec::new();
    while cursor.advance().await.expect("cursor advance") {
        out.push(cursor.deserialize_current().expect("deserialize document"));
    }
    out
}

async fn collect_result(mut cursor: Cursor<Document>) -> mongodb::error::Result<Vec<Document>> {
    let mut out = Vec::new();
    while cursor.advance().await? {
        out.push(cursor.deserialize_current()?);
    }
    Ok(out)
}

/// The `_id`s (all Int32 in these fixtures) of the documents matching `filter`, sorted.
async fn ids(coll: &Collection<Document>, filter: Document) -> Vec<i32> {
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
async fn seed_inventory(coll: &Collection<Document>) {
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

async fn fresh(server: &TestServer, db: &str, coll: &str) -> (Database, Collection<Document>) {
    let client = server.client().await;
    let db = client.database(db);
    let coll = db.collection::<Document>(coll);
    (db, coll)
}

// ---------------------------------------------------------------------------
// handshake
// ---------------------------------------------------------------------------

#[tokio::test]
async fn hello_and_ping() {
    let server = TestServer::start();
    let client = server.client().await;
    let admin = client.database("admin");

    let hello = admin.run_command(doc! { "hello": 1 }).await.expect("hello");
    assert_ok(&hello);
    assert_eq!(
        hello.get_bool("isWritablePrimary").ok(),
        Some(true),
        "{hello}"
    );
    assert_eq!(num(&hello, "maxBsonObjectSize"), 16_777_216.0, "{hello}");
    assert_eq!(num(&hello, "maxMessageSizeBytes"), 48_000_000.0, "{hello}");
    assert!(num(&hello, "maxWireVersion") >= 9.0, "{hello}");
    assert!(num(&hello, "minWireVersion") <= num(&hello, "maxWireVersion"));

    let ping = admin.run_command(doc! { "ping": 1 }).await.expect("ping");
    assert_ok(&ping);
}

// ---------------------------------------------------------------------------
// insert
// ---------------------------------------------------------------------------

#[tokio::test]
async fn insert_one_and_many_return_generated_object_ids() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "people").await;

    let one = coll
        .insert_one(doc! { "name": "Ada", "born": 1815 })
        .await
        .expect("insert_one");
    let Bson::ObjectId(id) = one.inserted_id else {
        panic!("inserted_id is not an ObjectId: {:?}", one.inserted_id);
    };
    let found = coll
        .find_one(doc! { "_id": id })
        .await
        .expect("find_one")
        .expect("inserted document is found by its generated _id");
    assert_eq!(found, doc! { "_id": id, "name": "Ada", "born": 1815 });

    let many = coll
        .insert_many(vec![
            doc! { "name": "Grace" },
            doc! { "name": "Edsger" },
            doc! { "name": "Barbara" },
        ])
        .await
        .expect("insert_many");
    assert_eq!(many.inserted_ids.len(), 3);
    let mut seen = HashSet::new();
    for i in 0..3 {
        match many.inserted_ids.get(&i) {
            Some(Bson::ObjectId(oid)) => assert!(seen.insert(*oid), "duplicate generated id"),
            other => panic!("inserted_ids[{i}] is not an ObjectId: {other:?}"),
        }
    }
    assert!(!seen.contains(&id));
    let grace_id = many.inserted_ids[&0].clone();
    let grace = coll
        .find_one(doc! { "_id": grace_id.clone() })
        .await
        .expect("find_one")
        .expect("Grace found by generated _id");
    assert_eq!(grace, doc! { "_id": grace_id, "name": "Grace" });
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 4);
}

// ---------------------------------------------------------------------------
// queries
// ---------------------------------------------------------------------------

#[tokio::test]
async fn find_with_comparison_logical_and_dotted_filters() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "inventory").await;
    seed_inventory(&coll).await;

    assert_eq!(ids(&coll, doc! {}).await, vec![1, 2, 3, 4, 5]);
    assert_eq!(ids(&coll, doc! { "item": "paper" }).await, vec![3]);
    assert_eq!(ids(&coll, doc! { "status": "A" }).await, vec![1, 2, 5]);
    assert_eq!(
        ids(&coll, doc! { "item": "nothing" }).await,
        Vec::<i32>::new()
    );
    assert_eq!(ids(&coll, doc! { "qty": { "$gt": 50 } }).await, vec![3, 4]);
    assert_eq!(ids(&coll, doc! { "qty": { "$lt": 50 } }).await, vec![1, 5]);
    assert_eq!(
        ids(&coll, doc! { "qty": { "$gte": 45, "$lte": 75 } }).await,
        vec![2, 4, 5]
    );
    assert_eq!(
        ids(
            &coll,
            doc! { "item": { "$in": ["paper", "planner", "absent"] } }
        )
        .await,
        vec![3, 4]
    );
    assert_eq!(
        ids(
            &coll,
            doc! { "$and": [ { "status": "A" }, { "qty": { "$lt": 30 } } ] }
        )
        .await,
        vec![1]
    );
    assert_eq!(
        ids(
            &coll,
            doc! { "$or": [ { "status": "D" }, { "qty": { "$lt": 30 } } ] }
        )
        .await,
        vec![1, 3, 4]
    );
    assert_eq!(
        ids(&coll, doc! { "note": { "$exists": true } }).await,
        vec![5]
    );
    assert_eq!(
        ids(&coll, doc! { "note": { "$exists": false } }).await,
        vec![1, 2, 3, 4]
    );
    // Dotted paths into embedded documents.
    assert_eq!(ids(&coll, doc! { "size.uom": "in" }).await, vec![2, 3]);
    assert_eq!(
        ids(&coll, doc! { "size.h": { "$gt": 10 } }).await,
        vec![1, 4]
    );
    assert_eq!(
        ids(&coll, doc! { "size.uom": "cm", "size.w": { "$lt": 25 } }).await,
        vec![1, 5]
    );
    // Equality against an array field matches any element.
    assert_eq!(ids(&coll, doc! { "tags": "plain" }).await, vec![3]);
    // Numbers compare across numeric types: 8.5 (double) vs 11 (int).
    assert_eq!(ids(&coll, doc! { "size.w": 11.0 }).await, vec![2, 3]);
}

#[tokio::test]
async fn projection_includes_and_excludes_fields() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "inventory").await;
    seed_inventory(&coll).await;

    let inc = coll
        .find_one(doc! { "_id": 1 })
        .projection(doc! { "item": 1, "qty": 1 })
        .await
        .expect("find_one")
        .expect("doc 1");
    assert_eq!(inc, doc! { "_id": 1, "item": "journal", "qty": 25 });

    let no_id = coll
        .find_one(doc! { "_id": 1 })
        .projection(doc! { "_id": 0, "size.uom": 1 })
        .await
        .expect("find_one")
        .expect("doc 1");
    assert_eq!(no_id, doc! { "size": { "uom": "cm" } });

    let exc = coll
        .find_one(doc! { "_id": 5 })
        .projection(doc! { "size": 0, "tags": 0, "note": 0 })
        .await
        .expect("find_one")
        .expect("doc 5");
    assert_eq!(
        exc,
        doc! { "_id": 5, "item": "postcard", "qty": 45, "status": "A" }
    );
}

#[tokio::test]
async fn sort_skip_and_limit() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "inventory").await;
    seed_inventory(&coll).await;

    let by_qty_desc: Vec<i32> = collect(
        coll.find(doc! {})
            .sort(doc! { "qty": -1 })
            .await
            .expect("find"),
    )
    .await
    .iter()
    .map(|d| d.get_i32("_id").expect("_id"))
    .collect();
    assert_eq!(by_qty_desc, vec![3, 4, 2, 5, 1]);

    let page: Vec<i32> = collect(
        coll.find(doc! {})
            .sort(doc! { "qty": -1 })
            .skip(1)
            .limit(2)
            .await
            .expect("find"),
    )
    .await
    .iter()
    .map(|d| d.get_i32("_id").expect("_id"))
    .collect();
    assert_eq!(page, vec![4, 2]);

    // Compound sort: status ascending, then qty ascending.
    let compound: Vec<i32> = collect(
        coll.find(doc! {})
            .sort(doc! { "status": 1, "qty": 1 })
            .await
            .expect("find"),
    )
    .await
    .iter()
    .map(|d| d.get_i32("_id").expect("_id"))
    .collect();
    assert_eq!(compound, vec![1, 5, 2, 4, 3]);

    // Sort on a dotted path, descending, with a filter.
    let dotted: Vec<i32> = collect(
        coll.find(doc! { "size.uom": "cm" })
            .sort(doc! { "size.h": -1 })
            .await
            .expect("find"),
    )
    .await
    .iter()
    .map(|d| d.get_i32("_id").expect("_id"))
    .collect();
    assert_eq!(dotted, vec![4, 1, 5]);

    let skipped_all = collect(coll.find(doc! {}).skip(10).await.expect("find")).await;
    assert!(skipped_all.is_empty());
}

// ---------------------------------------------------------------------------
// cursors
// ---------------------------------------------------------------------------

#[tokio::test]
async fn cursor_returns_all_documents_over_several_batches() {
    let server = TestServer::start();
    let (db, coll) = fresh(&server, "crud", "hundred").await;
    let docs: Vec<Document> = (0..100).map(|i| doc! { "_id": i, "n": i * 2 }).collect();
    coll.insert_many(docs).await.expect("insert_many");

    // Through the driver: batch_size 7 forces getMore round trips.
    let mut cursor = coll
        .find(doc! {})
        .sort(doc! { "_id": 1 })
        .batch_size(7)
        .await
        .expect("find");
    let mut got = Vec::new();
    while cursor.advance().await.expect("advance") {
        let d = cursor.deserialize_current().expect("doc");
        got.push((d.get_i32("_id").expect("_id"), d.get_i32("n").expect("n")));
    }
    let expected: Vec<(i32, i32)> = (0..100).map(|i| (i, i * 2)).collect();
    assert_eq!(got, expected);
    assert!(!cursor.advance().await.expect("advance after end"));

    // The same by hand: each batch holds at most 7, the first exactly 7, the cursor id
    // stays the same until the server reports it exhausted with id 0.
    let first = db
        .run_command(doc! { "find": "hundred", "filter": {}, "sort": { "_id": 1 }, "batchSize": 7 })
        .await
        .expect("find command");
    assert_ok(&first);
    let cur = first.get_document("cursor").expect("cursor");
    assert_eq!(cur.get_str("ns").ok(), Some("crud.hundred"));
    let mut batch = cur.get_array("firstBatch").expect("firstBatch").clone();
    assert_eq!(batch.len(), 7);
    let id = cur.get_i64("id").expect("cursor id is an int64");
    assert_ne!(id, 0, "cursor must stay open after the first batch");
    let mut all: Vec<Bson> = std::mem::take(&mut batch);
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(rounds < 50, "getMore never exhausted the cursor");
        let more = db
            .run_command(doc! { "getMore": id, "collection": "hundred", "batchSize": 7 })
            .await
            .expect("getMore");
        assert_ok(&more);
        let cur = more.get_document("cursor").expect("cursor");
        let next = cur.get_array("nextBatch").expect("nextBatch");
        assert!(
            next.len() <= 7,
            "batch of {} exceeds batchSize 7",
            next.len()
        );
        all.extend(next.iter().cloned());
        let next_id = cur.get_i64("id").expect("cursor id");
        if next_id == 0 {
            break;
        }
        assert_eq!(next_id, id, "cursor id changed between batches");
    }
    let got_ids: Vec<i32> = all
        .iter()
        .map(|b| {
            b.as_document()
                .and_then(|d| d.get_i32("_id").ok())
                .expect("_id")
        })
        .collect();
    assert_eq!(got_ids, (0..100).collect::<Vec<i32>>());

    // An exhausted cursor is gone: getMore on it is CursorNotFound.
    expect_command_error(
        db.run_command(doc! { "getMore": id, "collection": "hundred" })
            .await,
        43,
        "CursorNotFound",
    );
}

#[tokio::test]
async fn get_more_on_killed_cursor_is_cursor_not_found() {
    let server = TestServer::start();
    let (db, coll) = fresh(&server, "crud", "tokill").await;
    let docs: Vec<Document> = (0..10).map(|i| doc! { "_id": i }).collect();
    coll.insert_many(docs).await.expect("insert_many");

    let first = db
        .run_command(doc! { "find": "tokill", "filter": {}, "batchSize": 2 })
        .await
        .expect("find");
    let id = first
        .get_document("cursor")
        .and_then(|c| c.get_i64("id"))
        .expect("cursor id");
    assert_ne!(id, 0);

    let killed = db
        .run_command(doc! { "killCursors": "tokill", "cursors": [id] })
        .await
        .expect("killCursors");
    assert_ok(&killed);
    assert_eq!(
        killed.get_array("cursorsKilled").expect("cursorsKilled"),
        &vec![Bson::Int64(id)]
    );

    expect_command_error(
        db.run_command(doc! { "getMore": id, "collection": "tokill" })
            .await,
        43,
        "CursorNotFound",
    );

    // A cursor id that never existed is CursorNotFound too, and killCursors reports it.
    expect_command_error(
        db.run_command(doc! { "getMore": 123_456_789_i64, "collection": "tokill" })
            .await,
        43,
        "CursorNotFound",
    );
    let unknown = db
        .run_command(doc! { "killCursors": "tokill", "cursors": [123_456_789_i64] })
        .await
        .expect("killCursors of unknown id");
    assert_eq!(
        unknown
            .get_array("cursorsNotFound")
            .expect("cursorsNotFound"),
        &vec![Bson::Int64(123_456_789)]
    );
}

// ---------------------------------------------------------------------------
// updates, replace, upsert, delete
// ---------------------------------------------------------------------------

#[tokio::test]
async fn update_one_and_many_with_set_unset_inc() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "inventory").await;
    seed_inventory(&coll).await;

    let r = coll
        .update_one(
            doc! { "_id": 1 },
            doc! { "$set": { "status": "X", "size.uom": "mm" }, "$inc": { "qty": 5 } },
        )
        .await
        .expect("update_one");
    assert_eq!((r.matched_count, r.modified_count), (1, 1));
    assert_eq!(r.upserted_id, None);
    let d = coll.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(d.get_str("status").ok(), Some("X"));
    assert_eq!(d.get_i32("qty").ok(), Some(30));
    assert_eq!(
        d.get_document("size").unwrap(),
        &doc! { "h": 14, "w": 21, "uom": "mm" }
    );

    let r = coll
        .update_one(doc! { "_id": 5 }, doc! { "$unset": { "note": "" } })
        .await
        .expect("update_one $unset");
    assert_eq!((r.matched_count, r.modified_count), (1, 1));
    let d = coll.find_one(doc! { "_id": 5 }).await.unwrap().unwrap();
    assert!(!d.contains_key("note"), "note still present: {d}");

    // A no-op update matches but does not modify.
    let r = coll
        .update_one(doc! { "_id": 5 }, doc! { "$set": { "status": "A" } })
        .await
        .expect("no-op update");
    assert_eq!((r.matched_count, r.modified_count), (1, 0));

    // No match: nothing matched, nothing upserted.
    let r = coll
        .update_one(doc! { "_id": 99 }, doc! { "$set": { "x": 1 } })
        .await
        .expect("update of missing doc");
    assert_eq!((r.matched_count, r.modified_count), (0, 0));
    assert_eq!(r.upserted_id, None);
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 5);

    let r = coll
        .update_many(
            doc! { "status": "D" },
            doc! { "$inc": { "qty": -10 }, "$set": { "checked": true } },
        )
        .await
        .expect("update_many");
    assert_eq!((r.matched_count, r.modified_count), (2, 2));
    assert_eq!(ids(&coll, doc! { "checked": true }).await, vec![3, 4]);
    let d3 = coll.find_one(doc! { "_id": 3 }).await.unwrap().unwrap();
    assert_eq!(d3.get_i32("qty").ok(), Some(90));
    let d4 = coll.find_one(doc! { "_id": 4 }).await.unwrap().unwrap();
    assert_eq!(d4.get_i32("qty").ok(), Some(65));
    // Untouched documents stay untouched.
    let d2 = coll.find_one(doc! { "_id": 2 }).await.unwrap().unwrap();
    assert!(!d2.contains_key("checked"));
    assert_eq!(d2.get_i32("qty").ok(), Some(50));

    // $inc on a missing field creates it.
    coll.update_one(doc! { "_id": 2 }, doc! { "$inc": { "views": 1 } })
        .await
        .expect("$inc missing field");
    let d2 = coll.find_one(doc! { "_id": 2 }).await.unwrap().unwrap();
    assert_eq!(d2.get_i32("views").ok(), Some(1));
}

#[tokio::test]
async fn replace_one_keeps_id_and_drops_old_fields() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "inventory").await;
    seed_inventory(&coll).await;

    let r = coll
        .replace_one(doc! { "item": "paper" }, doc! { "item": "paper", "qty": 1 })
        .await
        .expect("replace_one");
    assert_eq!((r.matched_count, r.modified_count), (1, 1));
    let d = coll
        .find_one(doc! { "_id": 3 })
        .await
        .unwrap()
        .expect("doc 3");
    assert_eq!(d, doc! { "_id": 3, "item": "paper", "qty": 1 });
}

#[tokio::test]
async fn upsert_inserts_and_reports_upserted_id() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "inventory").await;
    seed_inventory(&coll).await;

    let r = coll
        .update_one(doc! { "item": "stapler" }, doc! { "$set": { "qty": 3 } })
        .upsert(true)
        .await
        .expect("upsert");
    assert_eq!((r.matched_count, r.modified_count), (0, 0));
    let Some(Bson::ObjectId(new_id)) = r.upserted_id else {
        panic!(
            "upserted_id is not a generated ObjectId: {:?}",
            r.upserted_id
        );
    };
    let d = coll
        .find_one(doc! { "_id": new_id })
        .await
        .unwrap()
        .expect("upserted doc found by upserted_id");
    // The equality fields of the filter become fields of the new document.
    assert_eq!(d.get_str("item").ok(), Some("stapler"));
    assert_eq!(d.get_i32("qty").ok(), Some(3));

    // Upsert with an explicit _id in the filter uses that _id.
    let r = coll
        .update_one(doc! { "_id": 42 }, doc! { "$set": { "item": "tape" } })
        .upsert(true)
        .await
        .expect("upsert with _id");
    assert_eq!(r.upserted_id, Some(Bson::Int32(42)));

    // When the filter matches, upsert updates and reports no upserted_id.
    let r = coll
        .update_one(doc! { "item": "stapler" }, doc! { "$set": { "qty": 4 } })
        .upsert(true)
        .await
        .expect("upsert that matches");
    assert_eq!((r.matched_count, r.modified_count), (1, 1));
    assert_eq!(r.upserted_id, None);

    let r = coll
        .replace_one(doc! { "_id": 43 }, doc! { "item": "glue" })
        .upsert(true)
        .await
        .expect("replace upsert");
    assert_eq!(r.upserted_id, Some(Bson::Int32(43)));
    assert_eq!(
        coll.find_one(doc! { "_id": 43 }).await.unwrap(),
        Some(doc! { "_id": 43, "item": "glue" })
    );
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 8);
}

#[tokio::test]
async fn delete_one_and_many() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "inventory").await;
    seed_inventory(&coll).await;

    let r = coll
        .delete_one(doc! { "status": "D" })
        .await
        .expect("delete_one");
    assert_eq!(r.deleted_count, 1);
    assert_eq!(
        coll.count_documents(doc! { "status": "D" }).await.unwrap(),
        1
    );

    let r = coll
        .delete_many(doc! { "status": "A" })
        .await
        .expect("delete_many");
    assert_eq!(r.deleted_count, 3);

    let r = coll
        .delete_many(doc! { "status": "A" })
        .await
        .expect("delete_many of nothing");
    assert_eq!(r.deleted_count, 0);
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);

    let r = coll.delete_many(doc! {}).await.expect("delete all");
    assert_eq!(r.deleted_count, 1);
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 0);
}

// ---------------------------------------------------------------------------
// counting and distinct
// ---------------------------------------------------------------------------

#[tokio::test]
async fn count_estimated_count_and_distinct() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "inventory").await;
    seed_inventory(&coll).await;

    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 5);
    assert_eq!(
        coll.count_documents(doc! { "qty": { "$gte": 50 } })
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        coll.count_documents(doc! { "item": "nothing" })
            .await
            .unwrap(),
        0
    );
    assert_eq!(coll.estimated_document_count().await.unwrap(), 5);
    let missing = server
        .client()
        .await
        .database("crud")
        .collection::<Document>("missing");
    assert_eq!(missing.estimated_document_count().await.unwrap(), 0);

    let mut status: Vec<String> = coll
        .distinct("status", doc! {})
        .await
        .expect("distinct")
        .into_iter()
        .map(|b| b.as_str().expect("status is a string").to_string())
        .collect();
    status.sort();
    assert_eq!(status, vec!["A", "D"]);

    let mut uoms: Vec<String> = coll
        .distinct("size.uom", doc! { "qty": { "$lt": 60 } })
        .await
        .expect("distinct with filter")
        .into_iter()
        .map(|b| b.as_str().expect("uom").to_string())
        .collect();
    uoms.sort();
    assert_eq!(uoms, vec!["cm", "in"]);

    // Distinct over an array field returns each element once.
    let mut tags: Vec<String> = coll
        .distinct("tags", doc! {})
        .await
        .expect("distinct tags")
        .into_iter()
        .map(|b| b.as_str().expect("tag").to_string())
        .collect();
    tags.sort();
    assert_eq!(tags, vec!["blank", "blue", "plain", "red"]);
}

// ---------------------------------------------------------------------------
// duplicate keys and bulk semantics
// ---------------------------------------------------------------------------

#[tokio::test]
async fn duplicate_id_is_error_11000_with_key_pattern_and_value() {
    let server = TestServer::start();
    let (db, coll) = fresh(&server, "crud", "dups").await;
    coll.insert_one(doc! { "_id": 1, "v": "first" })
        .await
        .expect("first insert");

    let err = coll
        .insert_one(doc! { "_id": 1, "v": "second" })
        .await
        .expect_err("second insert of _id 1 must fail");
    match &*err.kind {
        ErrorKind::Write(WriteFailure::WriteError(w)) => {
            assert_eq!(w.code, 11000, "{err:?}");
            assert!(w.message.contains("duplicate key"), "errmsg: {}", w.message);
        }
        _ => panic!("expected a write error, got {err:?}"),
    }
    // Nothing was overwritten.
    assert_eq!(
        coll.find_one(doc! { "_id": 1 }).await.unwrap(),
        Some(doc! { "_id": 1, "v": "first" })
    );

    // The raw reply: ok 1, n 0, one write error naming the index key and the value.
    let reply = db
        .run_command(doc! { "insert": "dups", "documents": [ { "_id": 1, "v": "third" } ] })
        .await
        .expect("insert command");
    assert_ok(&reply);
    assert_eq!(num(&reply, "n"), 0.0, "{reply}");
    let errors = reply.get_array("writeErrors").expect("writeErrors");
    assert_eq!(errors.len(), 1, "{reply}");
    let we = errors[0].as_document().expect("write error document");
    assert_eq!(num(we, "index"), 0.0, "{we}");
    assert_eq!(num(we, "code"), 11000.0, "{we}");
    assert_eq!(
        we.get_document("keyPattern").expect("keyPattern"),
        &doc! { "_id": 1 }
    );
    assert_eq!(
        we.get_document("keyValue").expect("keyValue"),
        &doc! { "_id": 1 }
    );
    assert!(
        we.get_str("errmsg").expect("errmsg").contains("E11000"),
        "{we}"
    );
}

#[tokio::test]
async fn unordered_insert_many_skips_only_the_duplicate() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "bulk").await;
    coll.insert_one(doc! { "_id": 3 }).await.expect("seed");

    let err = coll
        .insert_many(vec![
            doc! { "_id": 1 },
            doc! { "_id": 2 },
            doc! { "_id": 3 },
            doc! { "_id": 4 },
            doc! { "_id": 5 },
        ])
        .ordered(false)
        .await
        .expect_err("duplicate _id 3 must be reported");
    let ErrorKind::InsertMany(im) = &*err.kind else {
        panic!("expected an InsertMany error, got {err:?}");
    };
    let we = im.write_errors.as_ref().expect("write_errors");
    assert_eq!(we.len(), 1, "{we:?}");
    assert_eq!(we[0].index, 2, "{we:?}");
    assert_eq!(we[0].code, 11000, "{we:?}");
    assert_eq!(ids(&coll, doc! {}).await, vec![1, 2, 3, 4, 5]);
}

#[tokio::test]
async fn ordered_insert_many_stops_at_the_duplicate() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "bulk").await;
    coll.insert_one(doc! { "_id": 3 }).await.expect("seed");

    let err = coll
        .insert_many(vec![
            doc! { "_id": 1 },
            doc! { "_id": 2 },
            doc! { "_id": 3 },
            doc! { "_id": 4 },
        ])
        .await
        .expect_err("duplicate _id 3 must be reported");
    let ErrorKind::InsertMany(im) = &*err.kind else {
        panic!("expected an InsertMany error, got {err:?}");
    };
    let we = im.write_errors.as_ref().expect("write_errors");
    assert_eq!(we.len(), 1, "{we:?}");
    assert_eq!(we[0].index, 2, "{we:?}");
    assert_eq!(we[0].code, 11000, "{we:?}");
    // Documents before the error are inserted, documents after it are not.
    assert_eq!(ids(&coll, doc! {}).await, vec![1, 2, 3]);
}

// ---------------------------------------------------------------------------
// databases and collections
// ---------------------------------------------------------------------------

#[tokio::test]
async fn create_list_and_drop_collections_and_databases() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("catalog_test");

    db.create_collection("alpha").await.expect("create alpha");
    // Creating it again with different options is NamespaceExists (48).
    expect_command_error(
        db.run_command(doc! { "create": "alpha", "validationAction": "warn" })
            .await,
        48,
        "NamespaceExists",
    );
    // Inserting creates a collection implicitly.
    db.collection::<Document>("beta")
        .insert_one(doc! { "x": 1 })
        .await
        .expect("insert into beta");

    let mut names = db.list_collection_names().await.expect("list collections");
    names.sort();
    assert_eq!(names, vec!["alpha", "beta"]);
    let dbs = client.list_database_names().await.expect("list databases");
    assert!(dbs.contains(&"catalog_test".to_string()), "{dbs:?}");

    db.collection::<Document>("alpha")
        .drop()
        .await
        .expect("drop alpha");
    assert_eq!(
        db.list_collection_names().await.expect("list collections"),
        vec!["beta"]
    );
    assert_eq!(
        db.collection::<Document>("beta")
            .count_documents(doc! {})
            .await
            .unwrap(),
        1
    );

    db.drop().await.expect("drop database");
    let dbs = client.list_database_names().await.expect("list databases");
    assert!(!dbs.contains(&"catalog_test".to_string()), "{dbs:?}");
    assert!(db
        .list_collection_names()
        .await
        .expect("list collections of dropped db")
        .is_empty());
    assert_eq!(
        db.collection::<Document>("beta")
            .count_documents(doc! {})
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn rename_collection_through_admin() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("ren");
    let src = db.collection::<Document>("src");
    src.insert_many(vec![doc! { "_id": 1 }, doc! { "_id": 2 }])
        .await
        .expect("insert");
    db.collection::<Document>("other")
        .insert_one(doc! { "_id": 9 })
        .await
        .expect("insert other");

    let admin = client.database("admin");
    let reply = admin
        .run_command(doc! { "renameCollection": "ren.src", "to": "ren.dst" })
        .await
        .expect("renameCollection");
    assert_ok(&reply);

    let mut names = db.list_collection_names().await.unwrap();
    names.sort();
    assert_eq!(names, vec!["dst", "other"]);
    let dst = db.collection::<Document>("dst");
    assert_eq!(ids(&dst, doc! {}).await, vec![1, 2]);
    assert_eq!(src.count_documents(doc! {}).await.unwrap(), 0);

    // Renaming onto an existing collection without dropTarget is NamespaceExists.
    expect_command_error(
        admin
            .run_command(doc! { "renameCollection": "ren.dst", "to": "ren.other" })
            .await,
        48,
        "NamespaceExists",
    );
    // With dropTarget the target is replaced.
    let reply = admin
        .run_command(doc! { "renameCollection": "ren.dst", "to": "ren.other", "dropTarget": true })
        .await
        .expect("renameCollection with dropTarget");
    assert_ok(&reply);
    assert_eq!(
        ids(&db.collection::<Document>("other"), doc! {}).await,
        vec![1, 2]
    );
    assert_eq!(db.list_collection_names().await.unwrap(), vec!["other"]);
}

#[tokio::test]
async fn coll_stats_db_stats_and_validate() {
    let server = TestServer::start();
    let (db, coll) = fresh(&server, "statsdb", "inventory").await;
    seed_inventory(&coll).await;

    let cs = db
        .run_command(doc! { "collStats": "inventory" })
        .await
        .expect("collStats");
    assert_ok(&cs);
    assert_eq!(cs.get_str("ns").ok(), Some("statsdb.inventory"), "{cs}");
    assert_eq!(num(&cs, "count"), 5.0, "{cs}");
    assert!(num(&cs, "size") > 0.0, "{cs}");
    assert!(num(&cs, "nindexes") >= 1.0, "{cs}");

    let ds = db
        .run_command(doc! { "dbStats": 1 })
        .await
        .expect("dbStats");
    assert_ok(&ds);
    assert_eq!(ds.get_str("db").ok(), Some("statsdb"), "{ds}");
    assert_eq!(num(&ds, "collections"), 1.0, "{ds}");
    assert_eq!(num(&ds, "objects"), 5.0, "{ds}");
    assert!(num(&ds, "dataSize") > 0.0, "{ds}");

    let v = db
        .run_command(doc! { "validate": "inventory" })
        .await
        .expect("validate");
    assert_ok(&v);
    assert_eq!(v.get_str("ns").ok(), Some("statsdb.inventory"), "{v}");
    assert_eq!(v.get_bool("valid").ok(), Some(true), "{v}");
    assert_eq!(num(&v, "nrecords"), 5.0, "{v}");
}

#[tokio::test]
async fn unknown_command_is_command_not_found() {
    let server = TestServer::start();
    let client = server.client().await;
    expect_command_error(
        client
            .database("admin")
            .run_command(doc! { "thisCommandDoesNotExist": 1 })
            .await,
        59,
        "CommandNotFound",
    );
    // The connection is still usable.
    assert_ok(
        &client
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await
            .expect("ping after unknown command"),
    );
}

// ---------------------------------------------------------------------------
// _id types
// ---------------------------------------------------------------------------

#[tokio::test]
async fn every_allowed_id_type_round_trips() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "ids").await;

    let oid = ObjectId::new();
    let decimal: mongodb::bson::Decimal128 = "1234.5678".parse().expect("decimal");
    let ids: Vec<Bson> = vec![
        Bson::ObjectId(oid),
        Bson::String("a string id".into()),
        Bson::String(String::new()),
        Bson::Int32(7),
        Bson::Int64(8_000_000_000),
        Bson::Double(2.5),
        Bson::Decimal128(decimal),
        Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: vec![0, 1, 2, 255],
        }),
        Bson::Binary(Binary {
            subtype: BinarySubtype::Uuid,
            bytes: (0u8..16).collect(),
        }),
        Bson::DateTime(DateTime::from_millis(1_700_000_000_123)),
        Bson::Document(doc! { "a": 1, "b": "two" }),
        Bson::Boolean(true),
    ];
    for (i, id) in ids.iter().enumerate() {
        coll.insert_one(doc! { "_id": id.clone(), "i": i as i32 })
            .await
            .unwrap_or_else(|e| panic!("insert _id {id:?}: {e}"));
    }
    assert_eq!(
        coll.count_documents(doc! {}).await.unwrap(),
        ids.len() as u64
    );
    for (i, id) in ids.iter().enumerate() {
        let found = coll
            .find_one(doc! { "_id": id.clone() })
            .await
            .unwrap_or_else(|e| panic!("find _id {id:?}: {e}"));
        assert_eq!(
            found,
            Some(doc! { "_id": id.clone(), "i": i as i32 }),
            "lookup by _id {id:?}"
        );
    }
    // An embedded-document _id matches only with the same field order.
    assert_eq!(
        coll.find_one(doc! { "_id": { "b": "two", "a": 1 } })
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn numerically_equal_ids_of_different_types_collide() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "numids").await;
    coll.insert_one(doc! { "_id": 1_i32, "v": "int32" })
        .await
        .expect("insert 1i32");

    let one_decimal: mongodb::bson::Decimal128 = "1".parse().expect("decimal");
    for dup in [
        Bson::Int64(1),
        Bson::Double(1.0),
        Bson::Decimal128(one_decimal),
    ] {
        let err = coll
            .insert_one(doc! { "_id": dup.clone(), "v": "dup" })
            .await
            .expect_err("numerically equal _id must be a duplicate");
        assert_eq!(server_code(&err), Some(11000), "_id {dup:?}: {err:?}");
    }
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);

    // And any numeric type finds the stored document, which keeps its original type.
    for key in [Bson::Int32(1), Bson::Int64(1), Bson::Double(1.0)] {
        let d = coll
            .find_one(doc! { "_id": key.clone() })
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("_id {key:?} finds the int32 1 document"));
        assert_eq!(d, doc! { "_id": 1_i32, "v": "int32" });
    }
    // A different number is not a duplicate.
    coll.insert_one(doc! { "_id": 1.5 })
        .await
        .expect("insert 1.5");
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 2);
}

// ---------------------------------------------------------------------------
// errors for unknown operators, lossless storage
// ---------------------------------------------------------------------------

#[tokio::test]
async fn unknown_query_and_update_operators_are_errors() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "inventory").await;
    seed_inventory(&coll).await;

    // MongoDB: "unknown operator: $foo" and "unknown top level operator: $foo",
    // both BadValue (2).
    for filter in [
        doc! { "qty": { "$foo": 1 } },
        doc! { "$foo": [ { "qty": 1 } ] },
    ] {
        let err = match coll.find(filter.clone()).await {
            Ok(cursor) => match collect_result(cursor).await {
                Ok(docs) => panic!("filter {filter} was accepted and returned {docs:?}"),
                Err(e) => e,
            },
            Err(e) => e,
        };
        assert_eq!(server_code(&err), Some(2), "filter {filter}: {err:?}");
    }

    // MongoDB: "Unknown modifier: $foo", FailedToParse (9); nothing is changed.
    let err = coll
        .update_one(doc! { "_id": 1 }, doc! { "$foo": { "qty": 1 } })
        .await
        .expect_err("unknown update modifier must fail");
    assert_eq!(server_code(&err), Some(9), "{err:?}");
    let d = coll.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(d.get_i32("qty").ok(), Some(25));
    assert!(!d.contains_key("$foo"));
}

#[tokio::test]
async fn every_bson_type_round_trips_byte_for_byte() {
    use mongodb::bson::{RawDocumentBuf, Regex, Timestamp};

    let server = TestServer::start();
    let (db, coll) = fresh(&server, "crud", "lossless").await;
    let decimal = |s: &str| -> Bson {
        Bson::Decimal128(s.parse::<mongodb::bson::Decimal128>().expect("decimal"))
    };
    let original = doc! {
        "_id": 1,
        "double": 1.5,
        "neg_zero": -0.0_f64,
        "nan": f64::NAN,
        "inf": f64::INFINITY,
        "neg_inf": f64::NEG_INFINITY,
        "tiny": 5e-324_f64,
        "string": "h\u{e9}llo \u{2713} \u{1F600}",
        "empty_string": "",
        "embedded": { "z": 1, "a": 2, "m": { "deep": [1, 2] } },
        "empty_doc": {},
        "array": [1, "two", [3, [4, []]], { "x": Bson::Null }],
        "empty_array": [],
        "bin_generic": Binary { subtype: BinarySubtype::Generic, bytes: vec![0, 1, 2, 255] },
        "bin_uuid": Binary { subtype: BinarySubtype::Uuid, bytes: (0u8..16).collect() },
        "bin_user": Binary { subtype: BinarySubtype::UserDefined(0x80), bytes: vec![9; 5] },
        "oid": ObjectId::parse_str("64b7f0c2a1b2c3d4e5f60718").expect("oid"),
        "true": true,
        "false": false,
        "date": DateTime::from_millis(1_700_000_000_123),
        "date_before_1970": DateTime::from_millis(-86_400_000_123),
        "null": Bson::Null,
        "regex": Regex { pattern: "^a.*b$".try_into().expect("cstring"), options: "im".try_into().expect("cstring") },
        "js": Bson::JavaScriptCode("function () { return 1; }".to_string()),
        "int32_min": i32::MIN,
        "int64_max": i64::MAX,
        "int64_small": 5_i64,
        "timestamp": Timestamp { time: 1_700_000_000, increment: 7 },
        "dec": decimal("1234.5678"),
        "dec_neg_zero": decimal("-0"),
        "dec_exp": decimal("1.000E+10"),
        "min": Bson::MinKey,
        "max": Bson::MaxKey,
        "$price": 50.0,
        "location": { "$db": "novels", "$ref": "2007042768", "$inc": true, "a.b": 1 },
    };
    coll.insert_one(original.clone()).await.expect("insert");

    let raw_coll = db.collection::<RawDocumentBuf>("lossless");
    let stored = raw_coll
        .find_one(doc! { "_id": 1 })
        .await
        .expect("find_one")
        .expect("document found");
    let expected = original.to_vec().expect("encode");
    if stored.as_bytes() != expected.as_slice() {
        let back = Document::try_from(&*stored).expect("stored decodes");
        for (k, v) in &original {
            assert_eq!(
                format!("{:?}", back.get(k)),
                format!("{:?}", Some(v)),
                "field {k:?} changed"
            );
        }
        panic!(
            "stored bytes differ from the inserted document (key order or extra fields): {back}"
        );
    }
}

// ---------------------------------------------------------------------------
// indexes, findAndModify, more update operators
// ---------------------------------------------------------------------------

#[tokio::test]
async fn indexes_create_list_drop_and_unique_violations() {
    use mongodb::options::IndexOptions;
    use mongodb::IndexModel;

    let server = TestServer::start();
    let (db, coll) = fresh(&server, "crud", "skus").await;
    coll.insert_many(vec![
        doc! { "_id": 1, "sku": "a", "qty": 1 },
        doc! { "_id": 2, "sku": "b", "qty": 1 },
    ])
    .await
    .expect("seed");

    let created = coll
        .create_index(
            IndexModel::builder()
                .keys(doc! { "sku": 1 })
                .options(IndexOptions::builder().unique(true).build())
                .build(),
        )
        .await
        .expect("create unique index");
    assert_eq!(created.index_name, "sku_1");
    coll.create_index(IndexModel::builder().keys(doc! { "qty": -1 }).build())
        .await
        .expect("create index on qty");
    let mut names = coll.list_index_names().await.expect("list indexes");
    names.sort();
    assert_eq!(names, vec!["_id_", "qty_-1", "sku_1"]);

    // A duplicate under the unique index: 11000 naming that index's key.
    let err = coll
        .insert_one(doc! { "_id": 3, "sku": "a" })
        .await
        .expect_err("duplicate sku must fail");
    assert_eq!(server_code(&err), Some(11000), "{err:?}");
    let reply = db
        .run_command(doc! { "insert": "skus", "documents": [ { "_id": 4, "sku": "b" } ] })
        .await
        .expect("insert command");
    let we = reply
        .get_array("writeErrors")
        .ok()
        .and_then(|e| e.first())
        .and_then(Bson::as_document)
        .unwrap_or_else(|| panic!("no write error in {reply}"));
    assert_eq!(num(we, "code"), 11000.0, "{we}");
    assert_eq!(we.get_document("keyPattern").ok(), Some(&doc! { "sku": 1 }));
    assert_eq!(we.get_document("keyValue").ok(), Some(&doc! { "sku": "b" }));
    // An update that would create a duplicate fails too, and changes nothing.
    let err = coll
        .update_one(doc! { "_id": 2 }, doc! { "$set": { "sku": "a" } })
        .await
        .expect_err("update to a duplicate sku must fail");
    assert_eq!(server_code(&err), Some(11000), "{err:?}");
    assert_eq!(ids(&coll, doc! { "sku": "b" }).await, vec![2]);

    // A unique index cannot be built over existing duplicates.
    let err = coll
        .create_index(
            IndexModel::builder()
                .keys(doc! { "qty": 1 })
                .options(IndexOptions::builder().unique(true).build())
                .build(),
        )
        .await
        .expect_err("unique index over duplicate qty values must fail");
    assert_eq!(server_code(&err), Some(11000), "{err:?}");

    coll.drop_index("sku_1").await.expect("drop index");
    let mut names = coll.list_index_names().await.expect("list indexes");
    names.sort();
    assert_eq!(names, vec!["_id_", "qty_-1"]);
    coll.insert_one(doc! { "_id": 5, "sku": "a" })
        .await
        .expect("duplicate sku allowed once the unique index is gone");

    // The _id index cannot be dropped (InvalidOptions, 72).
    let err = coll
        .drop_index("_id_")
        .await
        .expect_err("dropping _id_ must fail");
    assert_eq!(server_code(&err), Some(72), "{err:?}");
    // Dropping an index that does not exist is IndexNotFound (27).
    let err = coll
        .drop_index("nope_1")
        .await
        .expect_err("dropping a missing index must fail");
    assert_eq!(server_code(&err), Some(27), "{err:?}");
}

#[tokio::test]
async fn find_one_and_update_replace_delete() {
    use mongodb::options::ReturnDocument;

    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "inventory").await;
    seed_inventory(&coll).await;

    let before = coll
        .find_one_and_update(doc! { "_id": 2 }, doc! { "$inc": { "qty": 1 } })
        .await
        .expect("find_one_and_update")
        .expect("matched");
    assert_eq!(
        before.get_i32("qty").ok(),
        Some(50),
        "default returns the old document"
    );
    let after = coll
        .find_one_and_update(doc! { "_id": 2 }, doc! { "$inc": { "qty": 1 } })
        .return_document(ReturnDocument::After)
        .projection(doc! { "qty": 1 })
        .await
        .expect("find_one_and_update after")
        .expect("matched");
    assert_eq!(after, doc! { "_id": 2, "qty": 52 });

    // With a sort, the first document in that order is the one modified.
    let lowest = coll
        .find_one_and_update(doc! {}, doc! { "$set": { "picked": true } })
        .sort(doc! { "qty": 1 })
        .return_document(ReturnDocument::After)
        .await
        .expect("sorted find_one_and_update")
        .expect("matched");
    assert_eq!(lowest.get_i32("_id").ok(), Some(1));

    let none = coll
        .find_one_and_update(doc! { "_id": 99 }, doc! { "$set": { "x": 1 } })
        .await
        .expect("no match");
    assert_eq!(none, None);
    let upserted = coll
        .find_one_and_update(doc! { "_id": 99 }, doc! { "$set": { "x": 1 } })
        .upsert(true)
        .return_document(ReturnDocument::After)
        .await
        .expect("upsert")
        .expect("upsert returns the new document");
    assert_eq!(upserted, doc! { "_id": 99, "x": 1 });

    let replaced = coll
        .find_one_and_replace(doc! { "_id": 99 }, doc! { "y": 2 })
        .return_document(ReturnDocument::After)
        .await
        .expect("find_one_and_replace")
        .expect("matched");
    assert_eq!(replaced, doc! { "_id": 99, "y": 2 });

    let deleted = coll
        .find_one_and_delete(doc! { "status": "D" })
        .sort(doc! { "qty": -1 })
        .await
        .expect("find_one_and_delete")
        .expect("matched");
    assert_eq!(deleted.get_i32("_id").ok(), Some(3));
    assert_eq!(coll.find_one(doc! { "_id": 3 }).await.unwrap(), None);
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 5);
}

#[tokio::test]
async fn array_and_arithmetic_update_operators() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "ops").await;
    coll.insert_one(
        doc! { "_id": 1, "tags": ["a", "b"], "n": 10, "price": 2.5, "old": "x", "lo": 5, "hi": 5 },
    )
    .await
    .expect("seed");

    let r = coll
        .update_one(
            doc! { "_id": 1 },
            doc! {
                "$push": { "tags": { "$each": ["c", "d"] } },
                "$mul": { "price": 4 },
                "$rename": { "old": "new" },
                "$min": { "lo": 3 },
                "$max": { "hi": 9 },
            },
        )
        .await
        .expect("update");
    assert_eq!(r.modified_count, 1);
    let d = coll.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(
        d,
        doc! { "_id": 1, "tags": ["a", "b", "c", "d"], "n": 10, "price": 10.0, "lo": 3, "hi": 9, "new": "x" }
    );

    let err = coll
        .update_one(
            doc! { "_id": 1 },
            doc! { "$addToSet": { "tags": "a" }, "$pull": { "tags": "b" }, "$pop": { "tags": 1 } },
        )
        .await
        .expect_err("conflicting updates to the same path must fail");
    assert_eq!(
        server_code(&err),
        Some(40),
        "ConflictingUpdateOperators: {err:?}"
    );
    coll.update_one(
        doc! { "_id": 1 },
        doc! { "$addToSet": { "tags": { "$each": ["a", "e"] } } },
    )
    .await
    .expect("$addToSet");
    coll.update_one(doc! { "_id": 1 }, doc! { "$pull": { "tags": "b" } })
        .await
        .expect("$pull");
    coll.update_one(doc! { "_id": 1 }, doc! { "$pop": { "tags": -1 } })
        .await
        .expect("$pop");
    let d = coll.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(
        d.get_array("tags").unwrap(),
        &vec![Bson::from("c"), Bson::from("d"), Bson::from("e")]
    );

    // $setOnInsert applies only when the upsert inserts.
    coll.update_one(
        doc! { "_id": 2 },
        doc! { "$set": { "a": 1 }, "$setOnInsert": { "created": true } },
    )
    .upsert(true)
    .await
    .expect("upsert insert");
    coll.update_one(
        doc! { "_id": 1 },
        doc! { "$set": { "a": 1 }, "$setOnInsert": { "created": true } },
    )
    .upsert(true)
    .await
    .expect("upsert update");
    assert_eq!(ids(&coll, doc! { "created": true }).await, vec![2]);

    // $inc on a string is an error (TypeMismatch, 14) and changes nothing.
    let err = coll
        .update_one(doc! { "_id": 1 }, doc! { "$inc": { "new": 1 } })
        .await
        .expect_err("$inc on a string must fail");
    assert_eq!(server_code(&err), Some(14), "{err:?}");
    let d = coll.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(d.get_str("new").ok(), Some("x"));

    // The _id of a document cannot be changed (ImmutableField, 66).
    let err = coll
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "_id": 5 } })
        .await
        .expect_err("changing _id must fail");
    assert_eq!(server_code(&err), Some(66), "{err:?}");
}

// ---------------------------------------------------------------------------
// cross-type comparison and sort order
// ---------------------------------------------------------------------------

#[tokio::test]
async fn comparison_and_sort_follow_bson_type_order() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "mixed").await;
    coll.insert_many(vec![
        doc! { "_id": 1, "a": 10 },
        doc! { "_id": 2, "a": "20" },
        doc! { "_id": 3, "a": Bson::Null },
        doc! { "_id": 4 },
        doc! { "_id": 5, "a": [1, 7] },
        doc! { "_id": 6, "a": { "x": 1 } },
        doc! { "_id": 7, "a": true },
        doc! { "_id": 8, "a": 5.5 },
    ])
    .await
    .expect("seed");

    // Range operators stay within one type bracket; an array matches by element.
    assert_eq!(ids(&coll, doc! { "a": { "$gt": 5 } }).await, vec![1, 5, 8]);
    assert_eq!(ids(&coll, doc! { "a": { "$lt": "3" } }).await, vec![2]);
    // null matches null and missing.
    assert_eq!(ids(&coll, doc! { "a": Bson::Null }).await, vec![3, 4]);
    assert_eq!(
        ids(&coll, doc! { "a": { "$ne": Bson::Null } }).await,
        vec![1, 2, 5, 6, 7, 8]
    );
    assert_eq!(
        ids(&coll, doc! { "a": { "$in": [7, "20"] } }).await,
        vec![2, 5]
    );

    let order = |sort: Document| {
        let coll = coll.clone();
        async move {
            collect(coll.find(doc! {}).sort(sort).await.expect("find"))
                .await
                .iter()
                .map(|d| d.get_i32("_id").expect("_id"))
                .collect::<Vec<i32>>()
        }
    };
    // Ascending: null/missing, numbers (an array by its smallest element), strings,
    // objects, booleans.
    assert_eq!(
        order(doc! { "a": 1, "_id": 1 }).await,
        vec![3, 4, 5, 8, 1, 2, 6, 7]
    );
    // Descending: an array by its largest element.
    assert_eq!(
        order(doc! { "a": -1, "_id": 1 }).await,
        vec![7, 6, 2, 1, 5, 8, 3, 4]
    );
}

// ---------------------------------------------------------------------------
// batching limits, names and _id validation
// ---------------------------------------------------------------------------

#[tokio::test]
async fn large_results_are_split_into_batches_under_16_mib() {
    let server = TestServer::start();
    let (db, coll) = fresh(&server, "crud", "large").await;
    let blob = "z".repeat(1024 * 1024);
    for i in 0..20 {
        coll.insert_one(doc! { "_id": i, "blob": blob.as_str() })
            .await
            .expect("insert 1 MiB document");
    }
    let all = collect(
        coll.find(doc! {})
            .sort(doc! { "_id": 1 })
            .await
            .expect("find"),
    )
    .await;
    assert_eq!(all.len(), 20);
    for (i, d) in all.iter().enumerate() {
        assert_eq!(d.get_i32("_id").ok(), Some(i as i32));
        assert_eq!(d.get_str("blob").map(str::len).ok(), Some(blob.len()));
    }

    // 20 MiB cannot come back in one reply: the first batch stops below 16 MiB.
    let first = db
        .run_command(doc! { "find": "large", "filter": {}, "projection": { "_id": 1, "blob": 1 } })
        .await
        .expect("find command");
    let cur = first.get_document("cursor").expect("cursor");
    let n = cur.get_array("firstBatch").expect("firstBatch").len();
    assert!(
        n > 0 && n < 20,
        "first batch holds {n} of 20 one-MiB documents"
    );
    assert_ne!(cur.get_i64("id").ok(), Some(0), "cursor must stay open");
    assert!(first.to_vec().expect("encode").len() <= 16 * 1024 * 1024 + 16 * 1024);

    // limit and batchSize together: exactly `limit` documents, in batches.
    let limited = collect(
        coll.find(doc! {})
            .sort(doc! { "_id": 1 })
            .projection(doc! { "_id": 1 })
            .limit(10)
            .batch_size(3)
            .await
            .expect("find"),
    )
    .await;
    assert_eq!(
        limited,
        (0..10).map(|i| doc! { "_id": i }).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn invalid_namespaces_and_ids_are_rejected() {
    let server = TestServer::start();
    let client = server.client().await;

    // InvalidNamespace (73): an empty collection name, a database name with a dot,
    // a collection name with '$'.
    for (db, coll) in [("crud", ""), ("bad.db", "c"), ("crud", "a$b")] {
        let err = client
            .database(db)
            .collection::<Document>(coll)
            .insert_one(doc! { "x": 1 })
            .await
            .expect_err("insert into an invalid namespace must fail");
        assert_eq!(server_code(&err), Some(73), "{db}.{coll}: {err:?}");
    }
    let dbs = client.list_database_names().await.expect("list databases");
    assert!(!dbs.contains(&"bad.db".to_string()), "{dbs:?}");

    // _id may be any type but an array, a regex or undefined.
    let coll = client.database("crud").collection::<Document>("badids");
    let regex = mongodb::bson::Regex {
        pattern: "a".try_into().expect("cstring"),
        options: "".try_into().expect("cstring"),
    };
    for bad in [
        Bson::Array(vec![Bson::Int32(1)]),
        Bson::RegularExpression(regex),
        Bson::Undefined,
    ] {
        let err = coll
            .insert_one(doc! { "_id": bad.clone() })
            .await
            .expect_err("invalid _id must be rejected");
        assert!(server_code(&err).is_some(), "_id {bad:?}: {err:?}");
    }
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 0);
}

#[tokio::test]
async fn positional_update_sets_the_matched_array_element() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "positional").await;
    coll.insert_many(vec![
        doc! { "_id": 1, "tags": ["c", "d", "e"] },
        doc! { "_id": 2, "grades": [ { "g": 80, "ok": false }, { "g": 95, "ok": false } ] },
    ])
    .await
    .expect("seed");

    // `tags.$` is the first element of `tags` that the filter matched.
    coll.update_one(
        doc! { "_id": 1, "tags": "d" },
        doc! { "$set": { "tags.$": "D" } },
    )
    .await
    .expect("positional $set");
    let d = coll.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(d, doc! { "_id": 1, "tags": ["c", "D", "e"] });

    // With a range condition and a nested field of the matched element.
    coll.update_one(
        doc! { "grades.g": { "$gt": 90 } },
        doc! { "$set": { "grades.$.ok": true } },
    )
    .await
    .expect("positional $set of a nested field");
    let d = coll.find_one(doc! { "_id": 2 }).await.unwrap().unwrap();
    assert_eq!(
        d,
        doc! { "_id": 2, "grades": [ { "g": 80, "ok": false }, { "g": 95, "ok": true } ] }
    );

    // Without a condition on the array, `$` has nothing to refer to (BadValue, 2).
    let err = coll
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "tags.$": "Z" } })
        .await
        .expect_err("positional $ without an array condition must fail");
    assert_eq!(server_code(&err), Some(2), "{err:?}");
}

// ---------------------------------------------------------------------------
// concurrency
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_and_readers_all_succeed() {
    const WRITERS: i32 = 8;
    const PER_WRITER: i32 = 50;
    let server = TestServer::start();
    let client = server.client().await;
    let coll = client.database("crud").collection::<Document>("concurrent");
    coll.insert_one(doc! { "_id": "counter", "n": 0 })
        .await
        .expect("seed counter");

    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let coll = coll.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..PER_WRITER {
                coll.insert_one(doc! { "_id": w * 1_000 + i, "writer": w })
                    .await
                    .unwrap_or_else(|e| panic!("writer {w} insert {i}: {e}"));
                let r = coll
                    .update_one(doc! { "_id": "counter" }, doc! { "$inc": { "n": 1 } })
                    .await
                    .unwrap_or_else(|e| panic!("writer {w} increment {i}: {e}"));
                assert_eq!(r.modified_count, 1, "writer {w} increment {i}");
                let seen = coll
                    .count_documents(doc! { "writer": w })
                    .await
                    .unwrap_or_else(|e| panic!("writer {w} count {i}: {e}"));
                // A writer always sees its own acknowledged writes.
                assert_eq!(seen, (i + 1) as u64, "writer {w} after insert {i}");
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer task");
    }
    assert_eq!(
        coll.count_documents(doc! { "writer": { "$exists": true } })
            .await
            .unwrap(),
        (WRITERS * PER_WRITER) as u64
    );
    let counter = coll
        .find_one(doc! { "_id": "counter" })
        .await
        .unwrap()
        .expect("counter");
    // No lost updates: every acknowledged $inc counted once (MongoDB's single-document
    // atomicity).
    assert_eq!(
        counter.get_i32("n").ok(),
        Some(WRITERS * PER_WRITER),
        "concurrent $inc lost updates"
    );
}

#[tokio::test]
async fn create_collection_twice_with_identical_options() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("catalog_test");
    db.create_collection("alpha").await.expect("create alpha");
    db.collection::<Document>("alpha")
        .insert_one(doc! { "_id": 1 })
        .await
        .expect("insert");

    // Since MongoDB 7.0 (wire version 21) creating it again with identical options
    // succeeds and changes nothing (SERVER-60064; the `create` manual page: "If you try
    // to create a collection or view that already exists and you provide identical
    // options ... no action is taken and success is returned"). Before 7.0 it was 48.
    let hello = client
        .database("admin")
        .run_command(doc! { "hello": 1 })
        .await
        .expect("hello");
    let again = db.create_collection("alpha").await;
    if num(&hello, "maxWireVersion") >= 21.0 {
        again.expect("identical create on MongoDB >= 7.0 succeeds");
    } else {
        let err = again.expect_err("identical create before MongoDB 7.0 fails");
        assert_eq!(server_code(&err), Some(48), "{err:?}");
    }
    // Either way the existing collection and its documents are untouched.
    assert_eq!(db.list_collection_names().await.unwrap(), vec!["alpha"]);
    assert_eq!(
        db.collection::<Document>("alpha")
            .count_documents(doc! {})
            .await
            .unwrap(),
        1
    );
}

// ---------------------------------------------------------------------------
// listings as drivers and tools read them, aggregation
// ---------------------------------------------------------------------------

#[tokio::test]
async fn list_collections_databases_and_indexes_have_mongodb_shape() {
    use mongodb::results::CollectionType;

    let server = TestServer::start();
    let (db, coll) = fresh(&server, "shapes", "inventory").await;
    seed_inventory(&coll).await;
    db.create_collection("empty").await.expect("create empty");

    // The driver deserializes each entry into a CollectionSpecification.
    let mut cursor = db.list_collections().await.expect("listCollections");
    let mut specs = Vec::new();
    while cursor.advance().await.expect("advance") {
        specs.push(
            cursor
                .deserialize_current()
                .expect("collection specification"),
        );
    }
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["empty", "inventory"]);
    for spec in &specs {
        assert!(matches!(spec.collection_type, CollectionType::Collection));
        assert!(!spec.info.read_only);
        let id_index = spec.id_index.as_ref().expect("idIndex");
        assert_eq!(id_index.get_document("key").ok(), Some(&doc! { "_id": 1 }));
        assert_eq!(id_index.get_str("name").ok(), Some("_id_"));
    }

    // A filter on the name.
    let mut filtered = db
        .list_collection_names()
        .filter(doc! { "name": "inventory" })
        .await
        .expect("filtered listCollections");
    filtered.sort();
    assert_eq!(filtered, vec!["inventory"]);

    // listDatabases: the database with its size, not empty.
    let client = server.client().await;
    let dbs = client.list_databases().await.expect("listDatabases");
    let shapes = dbs
        .iter()
        .find(|d| d.name == "shapes")
        .unwrap_or_else(|| panic!("shapes missing from {dbs:?}"));
    assert!(!shapes.empty);

    // listIndexes: the _id index as { v: 2, key: { _id: 1 }, name: "_id_" }.
    let mut cursor = coll.list_indexes().await.expect("listIndexes");
    let mut indexes = Vec::new();
    while cursor.advance().await.expect("advance") {
        indexes.push(cursor.deserialize_current().expect("index model"));
    }
    assert_eq!(indexes.len(), 1, "{indexes:?}");
    assert_eq!(indexes[0].keys, doc! { "_id": 1 });
    assert_eq!(
        indexes[0].options.as_ref().and_then(|o| o.name.as_deref()),
        Some("_id_")
    );
    // listIndexes on a missing collection is NamespaceNotFound (26).
    let err = db
        .collection::<Document>("missing")
        .list_index_names()
        .await
        .expect_err("listIndexes on a missing collection");
    assert_eq!(server_code(&err), Some(26), "{err:?}");
}

#[tokio::test]
async fn aggregate_match_group_sort_project() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "inventory").await;
    seed_inventory(&coll).await;

    let cursor = coll
        .aggregate(vec![
            doc! { "$match": { "qty": { "$gte": 25 } } },
            doc! { "$group": { "_id": "$status", "total": { "$sum": "$qty" }, "n": { "$sum": 1 } } },
            doc! { "$sort": { "total": -1 } },
            doc! { "$project": { "_id": 0, "status": "$_id", "total": 1, "n": 1 } },
        ])
        .await
        .expect("aggregate");
    let out = collect(cursor).await;
    let summary: Vec<(String, i64, i64)> = out
        .iter()
        .map(|d| {
            let as_i64 = |k: &str| num(d, k) as i64;
            (
                d.get_str("status").expect("status").to_string(),
                as_i64("total"),
                as_i64("n"),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![("D".to_string(), 175, 2), ("A".to_string(), 120, 3)]
    );

    // $sort + $skip + $limit over a dotted path, as a pipeline.
    let ids: Vec<i32> = collect(
        coll.aggregate(vec![
            doc! { "$sort": { "size.h": 1, "_id": 1 } },
            doc! { "$skip": 1 },
            doc! { "$limit": 3 },
            doc! { "$project": { "_id": 1 } },
        ])
        .await
        .expect("aggregate"),
    )
    .await
    .iter()
    .map(|d| d.get_i32("_id").expect("_id"))
    .collect();
    // size.h: 2 → 8.5, 3 → 8.5, 5 → 10, 1 → 14, 4 → 22.85
    assert_eq!(ids, vec![3, 5, 1]);
}

// ---------------------------------------------------------------------------
// more query operators end to end (SQL pushdown must never under-select)
// ---------------------------------------------------------------------------

#[tokio::test]
async fn element_array_regex_and_logical_operators() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "ops_query").await;
    coll.insert_many(vec![
        doc! { "_id": 1, "name": "John", "tags": ["a", "b"], "pts": [ { "w": 1, "s": 10 }, { "w": 2, "s": 5 } ], "n": 7 },
        doc! { "_id": 2, "name": "joan", "tags": ["b", "c", "d"], "pts": [ { "w": 1, "s": 3 } ], "n": 8.0 },
        doc! { "_id": 3, "name": "Mary", "tags": [], "pts": [], "n": "8" },
        doc! { "_id": 4, "name": "jo", "tags": ["a"], "n": 9_i64 },
        doc! { "_id": 5, "name": Bson::Null, "tags": "a" },
    ])
    .await
    .expect("seed");

    assert_eq!(
        ids(&coll, doc! { "name": { "$regex": "^jo" } }).await,
        vec![2, 4]
    );
    assert_eq!(
        ids(&coll, doc! { "name": { "$regex": "^jo", "$options": "i" } }).await,
        vec![1, 2, 4]
    );
    assert_eq!(
        ids(&coll, doc! { "name": { "$not": { "$regex": "^jo" } } }).await,
        vec![1, 3, 5]
    );
    assert_eq!(
        ids(&coll, doc! { "tags": { "$all": ["a", "b"] } }).await,
        vec![1]
    );
    assert_eq!(ids(&coll, doc! { "tags": { "$size": 0 } }).await, vec![3]);
    assert_eq!(ids(&coll, doc! { "tags": { "$size": 3 } }).await, vec![2]);
    // "tags": "a" matches the array element and the scalar alike.
    assert_eq!(ids(&coll, doc! { "tags": "a" }).await, vec![1, 4, 5]);
    // An index in the path.
    assert_eq!(ids(&coll, doc! { "tags.0": "b" }).await, vec![2]);
    // A dotted path through an array of documents matches any element.
    assert_eq!(ids(&coll, doc! { "pts.w": 2 }).await, vec![1]);
    // Without $elemMatch the two conditions may be met by different elements;
    // with it, by one element.
    assert_eq!(ids(&coll, doc! { "pts.w": 1, "pts.s": 5 }).await, vec![1]);
    assert_eq!(
        ids(&coll, doc! { "pts": { "$elemMatch": { "w": 1, "s": 5 } } }).await,
        Vec::<i32>::new()
    );
    assert_eq!(
        ids(
            &coll,
            doc! { "pts": { "$elemMatch": { "w": 1, "s": { "$gt": 4 } } } }
        )
        .await,
        vec![1]
    );
    // $type by alias and by number; "number" covers int, long, double, decimal.
    assert_eq!(
        ids(&coll, doc! { "n": { "$type": "string" } }).await,
        vec![3]
    );
    assert_eq!(
        ids(&coll, doc! { "n": { "$type": "number" } }).await,
        vec![1, 2, 4]
    );
    assert_eq!(ids(&coll, doc! { "n": { "$type": 18 } }).await, vec![4]);
    assert_eq!(
        ids(&coll, doc! { "name": { "$type": "null" } }).await,
        vec![5]
    );
    // Numbers match across numeric types, never strings.
    assert_eq!(ids(&coll, doc! { "n": 8 }).await, vec![2]);
    assert_eq!(
        ids(&coll, doc! { "n": { "$gte": 8_i64 } }).await,
        vec![2, 4]
    );
    assert_eq!(ids(&coll, doc! { "n": { "$mod": [4, 0] } }).await, vec![2]);
    assert_eq!(
        ids(&coll, doc! { "$nor": [ { "tags": "a" }, { "n": 8 } ] }).await,
        vec![3]
    );
    assert_eq!(
        ids(&coll, doc! { "n": { "$nin": [7, 8] } }).await,
        vec![3, 4, 5]
    );
}

#[tokio::test]
async fn large_integers_and_byte_order_strings_compare_exactly() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "exact").await;
    // 2^53 and 2^53 + 1 are the same as doubles but different as int64.
    let big = 9_007_199_254_740_992_i64;
    coll.insert_many(vec![
        doc! { "_id": 1, "v": big },
        doc! { "_id": 2, "v": big + 1 },
        doc! { "_id": 3, "v": i64::MAX },
        doc! { "_id": 4, "v": i64::MIN },
        doc! { "_id": 5, "s": "a" },
        doc! { "_id": 6, "s": "B" },
        doc! { "_id": 7, "s": "\u{e9}" },
        doc! { "_id": 8, "s": "Z" },
        doc! { "_id": 9, "s": "ab" },
        doc! { "_id": 10, "s": "" },
    ])
    .await
    .expect("seed");

    assert_eq!(ids(&coll, doc! { "v": big + 1 }).await, vec![2]);
    assert_eq!(ids(&coll, doc! { "v": big }).await, vec![1]);
    assert_eq!(ids(&coll, doc! { "v": { "$gt": big } }).await, vec![2, 3]);
    assert_eq!(
        ids(&coll, doc! { "v": { "$lt": i64::MIN + 1 } }).await,
        vec![4]
    );
    assert_eq!(ids(&coll, doc! { "v": i64::MAX }).await, vec![3]);
    let by_v: Vec<i32> = collect(
        coll.find(doc! { "v": { "$exists": true } })
            .sort(doc! { "v": -1 })
            .await
            .expect("find"),
    )
    .await
    .iter()
    .map(|d| d.get_i32("_id").expect("_id"))
    .collect();
    assert_eq!(by_v, vec![3, 2, 1, 4]);

    // The simple collation compares strings by UTF-8 bytes: "" < "B" < "Z" < "a" < "ab" < "é".
    let by_s: Vec<i32> = collect(
        coll.find(doc! { "s": { "$exists": true } })
            .sort(doc! { "s": 1 })
            .await
            .expect("find"),
    )
    .await
    .iter()
    .map(|d| d.get_i32("_id").expect("_id"))
    .collect();
    assert_eq!(by_s, vec![10, 6, 8, 5, 9, 7]);
    assert_eq!(
        ids(&coll, doc! { "s": { "$gt": "Z" } }).await,
        vec![5, 7, 9]
    );
    assert_eq!(
        ids(&coll, doc! { "s": { "$lt": "a" } }).await,
        vec![6, 8, 10]
    );
    // With a limit (top-k), the same order.
    let top: Vec<i32> = collect(
        coll.find(doc! { "s": { "$exists": true } })
            .sort(doc! { "s": -1 })
            .limit(2)
            .await
            .expect("find"),
    )
    .await
    .iter()
    .map(|d| d.get_i32("_id").expect("_id"))
    .collect();
    assert_eq!(top, vec![7, 9]);
}

#[tokio::test]
async fn unusual_field_names_are_stored_and_queried_safely() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "names").await;
    let names = [
        "it's",
        "double\"quote",
        "back\\slash",
        "sp ace",
        "\u{fc}n\u{ef}c\u{f6}d\u{e9}",
        "a') OR 1=1 --",
        "semi;colon",
        "[bracket]",
        "per%cent",
        "0",
    ];
    for (i, name) in names.iter().enumerate() {
        let mut d = doc! { "_id": i as i32 };
        d.insert(*name, i as i32);
        d.insert("nested", doc! { *name: i as i32 });
        coll.insert_one(d)
            .await
            .unwrap_or_else(|e| panic!("insert field {name:?}: {e}"));
    }
    for (i, name) in names.iter().enumerate() {
        let mut filter = Document::new();
        filter.insert(*name, i as i32);
        assert_eq!(ids(&coll, filter).await, vec![i as i32], "field {name:?}");
        let mut nested = Document::new();
        nested.insert(format!("nested.{name}"), doc! { "$gte": i as i32 });
        assert_eq!(ids(&coll, nested).await, vec![i as i32], "nested.{name:?}");
        let mut sorted = Document::new();
        sorted.insert(*name, -1);
        let first = coll
            .find_one(doc! {})
            .sort(sorted)
            .await
            .expect("sorted find")
            .expect("a document");
        assert_eq!(
            first.get_i32("_id").ok(),
            Some(i as i32),
            "sort by {name:?}"
        );
    }
    // Nothing was dropped or altered by the odd names.
    assert_eq!(
        coll.count_documents(doc! {}).await.unwrap(),
        names.len() as u64
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_upserts_of_one_id_create_one_document() {
    const TASKS: i32 = 8;
    const PER_TASK: i32 = 20;
    let server = TestServer::start();
    let client = server.client().await;
    let coll = client.database("crud").collection::<Document>("upserts");

    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let coll = coll.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..PER_TASK {
                // MongoDB retries an upsert whose equality on a unique index (here _id)
                // lost a race with another insert, so none of these fail.
                coll.update_one(doc! { "_id": "k" }, doc! { "$inc": { "n": 1 } })
                    .upsert(true)
                    .await
                    .unwrap_or_else(|e| panic!("task {t} upsert {i}: {e}"));
            }
        }));
    }
    for t in tasks {
        t.await.expect("upsert task");
    }
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
    let d = coll
        .find_one(doc! { "_id": "k" })
        .await
        .unwrap()
        .expect("upserted document");
    assert_eq!(
        d.get_i32("n").ok(),
        Some(TASKS * PER_TASK),
        "concurrent upserts lost increments"
    );
}
