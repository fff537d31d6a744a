//! Writes through the official Rust `mongodb` driver against a real `docgate` process:
//! insert, update (including array, arithmetic and positional operators), replace,
//! upsert, delete, findAndModify, duplicate-key errors and ordered/unordered bulk
//! semantics, index creation and unique violations, and single-document atomicity
//! under concurrent writers.
//!
//! Reads are in `driver_queries.rs`, administration in `driver_admin.rs`;
//! durability in `crash_recovery.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;

use std::collections::HashSet;

use common::TestServer;
use driver_support::{assert_ok, fresh, ids, num, seed_inventory, server_code};
use mongodb::bson::{doc, Bson, Document};
use mongodb::error::{ErrorKind, WriteFailure};

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
