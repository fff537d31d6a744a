//! Reads through the official Rust `mongodb` driver against a real `docgate` process:
//! find with comparison, logical, element, array and regex filters, projection, sort,
//! skip and limit, cursor batching (including the 16 MiB batch limit and killed
//! cursors), count and distinct, a little aggregation, BSON cross-type comparison
//! and sort order, exact comparison of large integers and strings, and unusual
//! field names.
//!
//! Writes are in `driver_writes.rs`, administration and `_id` rules in
//! `driver_admin.rs`; malformed wire input in `bad_input.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;

use common::TestServer;
use driver_support::{assert_ok, collect, expect_command_error, fresh, ids, num, seed_inventory};
use mongodb::bson::{doc, Bson, Document};

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

/// `distinct` folds its documents into their values as they stream: many documents with
/// few values, values equal under the collation once, and past 16 MB of values MongoDB's
/// 17217.
#[tokio::test]
async fn distinct_streams_and_caps_its_values() {
    let server = TestServer::start();
    let (db, coll) = fresh(&server, "crud", "many").await;
    let docs: Vec<Document> = (0..10_000)
        .map(|i| doc! {"_id": i, "v": i % 50, "name": if i % 2 == 0 { "ada" } else { "ADA" }})
        .collect();
    coll.insert_many(docs).await.unwrap();
    let values = coll
        .distinct("v", doc! {"_id": {"$gte": 100}})
        .await
        .unwrap();
    let expected: Vec<Bson> = (0..50).map(Bson::Int32).collect();
    assert_eq!(values, expected);
    let caseless = mongodb::options::Collation::builder()
        .locale("en")
        .strength(mongodb::options::CollationStrength::Secondary)
        .build();
    let names = coll.distinct("name", doc! {}).collation(caseless).await;
    assert_eq!(names.unwrap().len(), 1, "ada and ADA are one value");

    let big = db.collection::<Document>("big");
    let megabyte = |i: i32| format!("{i:02}{}", "x".repeat(1 << 20));
    for i in 0..17 {
        big.insert_one(doc! {"_id": i, "s": megabyte(i)})
            .await
            .unwrap();
    }
    let fifteen = big.distinct("s", doc! {"_id": {"$lt": 15}}).await.unwrap();
    assert_eq!(fifteen.len(), 15);
    let error = big
        .distinct("s", doc! {})
        .await
        .expect_err("17 MB of values");
    assert!(error.to_string().contains("distinct too big"), "{error}");
    assert!(
        matches!(*error.kind, mongodb::error::ErrorKind::Command(ref c) if c.code == 17217),
        "{error}"
    );
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
