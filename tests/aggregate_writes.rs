//! Aggregations that write, through the official Rust `mongodb` driver against a real
//! `docgate` process: `$out` (with the target's indexes kept), `$merge` into another
//! database, and a collection-less `aggregate: 1` with `$documents` feeding `$merge`.
//! On PostgreSQL with `DOCGATE_TEST_BACKEND` set to a cluster URL.
//!
//! The full matrix of modes and errors is the pymongo suite
//! `tests/clients/python/test_aggregate_writes.py`; this file checks what the Rust driver
//! sends and reads (`aggregate` with `$out` answers an empty cursor the driver accepts).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;

use common::TestServer;
use driver_support::{collect, fresh, server_code};
use mongodb::bson::{doc, Document};
use mongodb::IndexModel;

#[tokio::test]
async fn out_replaces_a_collection_and_keeps_its_indexes() {
    let server = TestServer::start();
    let (db, books) = fresh(&server, "aggw_out", "books").await;
    books
        .insert_many(vec![
            doc! {"_id": 8751, "title": "The Banquet", "author": "Dante", "copies": 2},
            doc! {"_id": 8752, "title": "Divine Comedy", "author": "Dante", "copies": 1},
            doc! {"_id": 8645, "title": "Eclogues", "author": "Dante", "copies": 2},
            doc! {"_id": 7000, "title": "The Odyssey", "author": "Homer", "copies": 10},
            doc! {"_id": 7020, "title": "Iliad", "author": "Homer", "copies": 10},
        ])
        .await
        .unwrap();
    let authors = db.collection::<Document>("authors");
    authors
        .insert_one(doc! {"_id": "nobody", "copies": 0})
        .await
        .unwrap();
    authors
        .create_index(IndexModel::builder().keys(doc! {"copies": 1}).build())
        .await
        .unwrap();

    let pipeline = vec![
        doc! {"$group": {"_id": "$author", "copies": {"$sum": "$copies"}}},
        doc! {"$out": "authors"},
    ];
    let written = collect(books.aggregate(pipeline).await.unwrap()).await;
    assert!(
        written.is_empty(),
        "$out answers an empty cursor: {written:?}"
    );

    let mut docs = collect(authors.find(doc! {}).await.unwrap()).await;
    docs.sort_by_key(|d| d.get_str("_id").unwrap_or_default().to_string());
    assert_eq!(
        docs,
        vec![
            doc! {"_id": "Dante", "copies": 5},
            doc! {"_id": "Homer", "copies": 20}
        ]
    );
    let names = authors.list_index_names().await.unwrap();
    assert!(names.contains(&"copies_1".to_string()), "{names:?}");
    let homer = authors.find_one(doc! {"copies": 20}).await.unwrap();
    assert_eq!(homer, Some(doc! {"_id": "Homer", "copies": 20}));

    // $out must be the last stage.
    let err = books
        .aggregate(vec![doc! {"$out": "x"}, doc! {"$match": {}}])
        .await
        .unwrap_err();
    assert_eq!(server_code(&err), Some(40601), "{err:?}");
}

#[tokio::test]
async fn merge_into_another_database_and_from_documents() {
    let server = TestServer::start();
    let (db, salaries) = fresh(&server, "aggw_merge", "salaries").await;
    let client = server.client().await;
    let reporting = client.database("aggw_merge_reporting");
    reporting.drop().await.unwrap();
    salaries
        .insert_many(vec![
            doc! {"_id": 1, "dept": "A", "salary": 100000, "fiscal_year": 2017},
            doc! {"_id": 2, "dept": "A", "salary": 120000, "fiscal_year": 2017},
            doc! {"_id": 3, "dept": "Z", "salary": 115000, "fiscal_year": 2017},
        ])
        .await
        .unwrap();
    let pipeline = vec![
        doc! {"$group": {"_id": {"fiscal_year": "$fiscal_year", "dept": "$dept"}, "salaries": {"$sum": "$salary"}}},
        doc! {"$merge": {"into": {"db": "aggw_merge_reporting", "coll": "budgets"}, "whenMatched": "replace"}},
    ];
    collect(salaries.aggregate(pipeline).await.unwrap()).await;
    let budgets = reporting.collection::<Document>("budgets");
    let mut totals: Vec<i32> = collect(budgets.find(doc! {}).await.unwrap())
        .await
        .iter()
        .map(|d| d.get_i32("salaries").unwrap())
        .collect();
    totals.sort_unstable();
    assert_eq!(totals, vec![115000, 220000]);

    // aggregate: 1 — $documents feeding $merge with whenNotMatched: fail rolls back whole.
    let err = db
        .aggregate(vec![
            doc! {"$documents": [{"_id": 1, "x": 1}]},
            doc! {"$merge": {"into": "salaries", "whenNotMatched": "fail"}},
        ])
        .await;
    assert!(err.is_ok(), "a matching document merges: {err:?}");
    assert_eq!(
        salaries.find_one(doc! {"_id": 1}).await.unwrap(),
        Some(doc! {"_id": 1, "dept": "A", "salary": 100000, "fiscal_year": 2017, "x": 1})
    );
    let err = db
        .aggregate(vec![
            doc! {"$documents": [{"_id": 2, "x": 2}, {"_id": 99}]},
            doc! {"$merge": {"into": "salaries", "whenNotMatched": "fail"}},
        ])
        .await
        .unwrap_err();
    assert_eq!(server_code(&err), Some(13113), "{err:?}");
    let second = salaries.find_one(doc! {"_id": 2}).await.unwrap().unwrap();
    assert!(
        !second.contains_key("x"),
        "nothing of a failed merge stays: {second}"
    );
    reporting.drop().await.unwrap();
}
