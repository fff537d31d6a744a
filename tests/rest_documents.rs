//! The REST document API (`/ords/{db}/soda/latest/…`) through real HTTP against the real
//! binary: collection create/list/drop, insert with server-assigned ids, pages in ORDS's
//! envelope with `limit`/`offset`/`q`, bulk `action=query|insert|delete`, one document by
//! id (GET, PUT, PATCH, DELETE), JSON errors — and data written over REST read over the
//! wire with the Rust driver, and the other way round; and the `/livez`/`/readyz` probes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod rest_support;

use common::TestServer;
use mongodb::bson::{doc, oid::ObjectId, Bson, DateTime};
use rest_support::{encode, Rest};
use serde_json::{json, Value};

const SODA: &str = "/ords/shop/soda/latest";

fn rest(server: &TestServer) -> Rest {
    Rest::new(server.rest_base())
}

fn names(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn collections_are_created_listed_and_dropped() {
    let server = TestServer::start();
    let rest = rest(&server);
    rest.put_empty(&format!("{SODA}/orders")).await.expect(201);
    rest.put_empty(&format!("{SODA}/orders")).await.expect(200);
    rest.put_empty(&format!("{SODA}/items")).await.expect(201);
    let listing = rest.get(&format!("{SODA}/")).await.expect(200);
    assert_eq!(names(&listing), ["items", "orders"]);
    assert_eq!(listing["hasMore"], json!(false));

    // The wire sees the collections REST created.
    let client = server.client().await;
    let mut on_wire = client
        .database("shop")
        .list_collection_names()
        .await
        .expect("list");
    on_wire.sort();
    assert_eq!(on_wire, ["items", "orders"]);

    rest.delete(&format!("{SODA}/orders")).await.expect(200);
    rest.delete(&format!("{SODA}/orders"))
        .await
        .expect_error(404);
    let message = rest.get(&format!("{SODA}/orders")).await.expect_error(404);
    assert!(message.contains("shop.orders"), "{message}");
    let bad_name = rest.put_empty(&format!("{SODA}/bad$name")).await;
    bad_name.expect_error(400);
}

#[tokio::test]
async fn rest_inserts_are_read_over_the_wire_and_wire_inserts_over_rest() {
    let server = TestServer::start();
    let rest = rest(&server);
    let reply = rest
        .post(
            &format!("{SODA}/orders"),
            &json!({"item": "pen", "qty": 3, "when": {"$date": "2026-01-02T03:04:05Z"}}),
        )
        .await;
    let location = reply
        .headers
        .get("location")
        .and_then(|l| l.to_str().ok())
        .map(str::to_string)
        .expect("Location header");
    let body = reply.expect(201);
    let id_hex = body["items"][0]["id"].as_str().expect("id").to_string();
    assert_eq!(body["items"][0]["_id"], json!({"$oid": id_hex}));
    assert!(
        location.ends_with(&format!("{SODA}/orders/{id_hex}")),
        "{location}"
    );

    let client = server.client().await;
    let orders = client
        .database("shop")
        .collection::<mongodb::bson::Document>("orders");
    let oid = ObjectId::parse_str(&id_hex).expect("hex id");
    let stored = orders
        .find_one(doc! {"_id": oid})
        .await
        .expect("find")
        .expect("the REST insert is visible over the wire");
    assert_eq!(
        stored,
        doc! {
            "_id": oid,
            "item": "pen",
            "qty": 3,
            "when": DateTime::parse_rfc3339_str("2026-01-02T03:04:05Z").expect("date"),
        }
    );

    orders
        .insert_one(doc! {"_id": "wire-1", "big": 1i64 << 40, "half": 0.5, "tags": ["a", "b"]})
        .await
        .expect("insert over the wire");
    let fetched = rest.get(&format!("{SODA}/orders/wire-1")).await.expect(200);
    assert_eq!(
        fetched,
        json!({"_id": "wire-1", "big": 1i64 << 40, "half": 0.5, "tags": ["a", "b"]})
    );
    let by_hex = rest
        .get(&format!("{SODA}/orders/{id_hex}"))
        .await
        .expect(200);
    assert_eq!(by_hex["item"], json!("pen"));
    assert_eq!(by_hex["when"], json!({"$date": "2026-01-02T03:04:05Z"}));
}

#[tokio::test]
async fn pages_follow_the_ords_envelope_and_q_filters() {
    let server = TestServer::start();
    let rest = rest(&server);
    let documents: Vec<Value> = (0..30).map(|i| json!({"_id": i, "price": i})).collect();
    let inserted = rest
        .post(
            &format!("{SODA}/goods?action=insert"),
            &Value::Array(documents),
        )
        .await
        .expect(200);
    assert_eq!(inserted["count"], json!(30));

    let first = rest.get(&format!("{SODA}/goods")).await.expect(200);
    assert_eq!(first["count"], json!(25));
    assert_eq!(first["limit"], json!(25));
    assert_eq!(first["offset"], json!(0));
    assert_eq!(first["hasMore"], json!(true));
    let next = first["links"]
        .as_array()
        .expect("links")
        .iter()
        .find(|link| link["rel"] == "next")
        .and_then(|link| link["href"].as_str())
        .expect("next link")
        .to_string();
    let path = next.trim_start_matches(&rest.base).to_string();
    let second = rest.get(&path).await.expect(200);
    assert_eq!(second["count"], json!(5));
    assert_eq!(second["hasMore"], json!(false));
    assert_eq!(second["items"][0]["_id"], json!(25));

    let q = encode(r#"{"price":{"$gt":5,"$lte":9}}"#);
    let filtered = rest
        .get(&format!("{SODA}/goods?q={q}&limit=2&offset=1"))
        .await
        .expect(200);
    let prices: Vec<i64> = filtered["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|d| d["price"].as_i64().unwrap_or(-1))
        .collect();
    assert_eq!(prices, [7, 8]);
    assert_eq!(filtered["hasMore"], json!(true));

    let sorted = rest
        .get(&format!(
            "{SODA}/goods?sort={}&limit=1",
            encode(r#"{"price":-1}"#)
        ))
        .await
        .expect(200);
    assert_eq!(sorted["items"][0]["price"], json!(29));

    let queried = rest
        .post(
            &format!("{SODA}/goods?action=query"),
            &json!({"price": {"$in": [1, 2]}}),
        )
        .await
        .expect(200);
    assert_eq!(queried["count"], json!(2));

    let deleted = rest
        .post(
            &format!("{SODA}/goods?action=delete"),
            &json!({"price": {"$gte": 20}}),
        )
        .await
        .expect(200);
    assert_eq!(deleted["itemsDeleted"], json!(10));
    let client = server.client().await;
    let left = client
        .database("shop")
        .collection::<mongodb::bson::Document>("goods")
        .count_documents(doc! {})
        .await
        .expect("count");
    assert_eq!(left, 20);
}

/// The `next` link of a page carries where it ended (`after`); following the links reads
/// every document once, in order, while documents ahead are deleted and new ones arrive
/// between pages — an offset would skip or repeat documents then.
#[tokio::test]
async fn next_links_resume_where_the_page_ended() {
    let server = TestServer::start();
    let rest = rest(&server);
    let documents: Vec<Value> = (0..100).map(|i| json!({"_id": i, "n": i})).collect();
    rest.post(
        &format!("{SODA}/stream?action=insert"),
        &Value::Array(documents),
    )
    .await
    .expect(200);
    let next_of = |page: &Value| {
        page["links"]
            .as_array()
            .expect("links")
            .iter()
            .find(|link| link["rel"] == "next")
            .and_then(|link| link["href"].as_str())
            .map(|href| href.trim_start_matches(&rest.base).to_string())
    };
    for order in ["", "&sort=%7B%22_id%22%3A1%7D"] {
        let mut path = Some(format!("{SODA}/stream?limit=10{order}"));
        let mut seen: Vec<i64> = Vec::new();
        let mut pages = 0;
        while let Some(at) = path {
            let page = rest.get(&at).await.expect(200);
            if pages == 0 {
                let next = next_of(&page).expect("a next link");
                assert!(next.contains("after="), "{next}");
                // Ahead of the reader: ten documents go, five arrive after the last.
                let gone = (50..60).collect::<Vec<i64>>();
                rest.post(
                    &format!("{SODA}/stream?action=delete"),
                    &json!({"_id": {"$in": gone}}),
                )
                .await
                .expect(200);
                let arriving: Vec<Value> =
                    (1000..1005).map(|i| json!({"_id": i, "n": i})).collect();
                rest.post(
                    &format!("{SODA}/stream?action=insert"),
                    &Value::Array(arriving),
                )
                .await
                .expect(200);
            }
            seen.extend(
                page["items"]
                    .as_array()
                    .expect("items")
                    .iter()
                    .map(|d| d["_id"].as_i64().unwrap_or(-1)),
            );
            pages += 1;
            path = next_of(&page);
        }
        let expected: Vec<i64> = (0..50).chain(60..100).chain(1000..1005).collect();
        assert_eq!(seen, expected, "order {order:?}");
        assert!(pages >= 9, "{pages} pages");
        // Put the collection back for the next order.
        rest.post(
            &format!("{SODA}/stream?action=delete"),
            &json!({"_id": {"$gte": 1000}}),
        )
        .await
        .expect(200);
        let back: Vec<Value> = (50..60).map(|i| json!({"_id": i, "n": i})).collect();
        rest.post(&format!("{SODA}/stream?action=insert"), &Value::Array(back))
            .await
            .expect(200);
    }
    let bad = rest
        .get(&format!("{SODA}/stream?after=zz"))
        .await
        .expect(400);
    assert!(
        bad["message"].as_str().unwrap_or("").contains("after"),
        "{bad}"
    );
}

#[tokio::test]
async fn bad_input_is_a_json_error_with_mongodb_text() {
    let server = TestServer::start();
    let rest = rest(&server);
    rest.put_empty(&format!("{SODA}/goods")).await.expect(201);
    rest.get(&format!("{SODA}/goods?q={}", encode("{not json")))
        .await
        .expect_error(400);
    let message = rest
        .get(&format!("{SODA}/goods?q={}", encode(r#"{"$bogus":1}"#)))
        .await
        .expect_error(400);
    assert!(message.contains("unknown top level operator"), "{message}");
    rest.get(&format!("{SODA}/goods?limit=minus"))
        .await
        .expect_error(400);
    rest.post_raw(&format!("{SODA}/goods"), "{\"a\":")
        .await
        .expect_error(400);
    rest.post(&format!("{SODA}/goods"), &json!([{"a": 1}]))
        .await
        .expect_error(400);
    rest.post(&format!("{SODA}/goods?action=explode"), &json!({}))
        .await
        .expect_error(400);
    rest.get("/ords/shop/nothing/here").await.expect_error(404);
    rest.send(reqwest::Method::PATCH, &format!("{SODA}/goods"), None)
        .await
        .expect_error(405);

    // A duplicate in a bulk insert writes nothing.
    rest.post(&format!("{SODA}/goods"), &json!({"_id": 1}))
        .await
        .expect(201);
    let message = rest
        .post(
            &format!("{SODA}/goods?action=insert"),
            &json!([{"_id": 2}, {"_id": 1}, {"_id": 3}]),
        )
        .await
        .expect_error(409);
    assert!(message.contains("E11000"), "{message}");
    let all = rest.get(&format!("{SODA}/goods")).await.expect(200);
    assert_eq!(all["count"], json!(1));
}

#[tokio::test]
async fn one_document_is_read_replaced_patched_and_deleted_by_id() {
    let server = TestServer::start();
    let rest = rest(&server);
    let item = format!("{SODA}/people/ada");
    rest.get(&item).await.expect_error(404);
    let created = rest.put(&item, &json!({"name": "Ada", "born": 1815})).await;
    created.expect(201);
    rest.put(&item, &json!({"name": "Ada Lovelace", "born": 1815}))
        .await
        .expect(200);
    let patched = rest
        .patch(
            &item,
            &json!({"$inc": {"born": 1}, "$set": {"field": "maths"}}),
        )
        .await
        .expect(200);
    assert_eq!(
        patched,
        json!({"_id": "ada", "name": "Ada Lovelace", "born": 1816, "field": "maths"})
    );
    rest.patch(&item, &json!({"name": "no operators"}))
        .await
        .expect_error(400);
    rest.put(&item, &json!({"_id": "someone-else"}))
        .await
        .expect_error(400);
    rest.patch(&format!("{SODA}/people/nobody"), &json!({"$set": {"a": 1}}))
        .await
        .expect_error(404);

    let client = server.client().await;
    let on_wire = client
        .database("shop")
        .collection::<mongodb::bson::Document>("people")
        .find_one(doc! {"_id": "ada"})
        .await
        .expect("find")
        .expect("present");
    assert_eq!(on_wire.get("born"), Some(&Bson::Int32(1816)));

    let deleted = rest.delete(&item).await.expect(200);
    assert_eq!(deleted["itemsDeleted"], json!(1));
    rest.delete(&item).await.expect_error(404);
}

/// Bodies beyond axum's 2 MB default are accepted up to MongoDB's message size: a bulk
/// insert of about 4 MB lands whole.
#[tokio::test]
async fn large_bulk_inserts_are_accepted() {
    let server = TestServer::start();
    let rest = rest(&server);
    let filler = "x".repeat(4_000);
    let documents: Vec<Value> = (0..1_000)
        .map(|i| json!({"_id": i, "filler": filler}))
        .collect();
    let inserted = rest
        .post(
            &format!("{SODA}/bulky?action=insert"),
            &Value::Array(documents),
        )
        .await
        .expect(200);
    assert_eq!(inserted["count"], json!(1_000));
    let client = server.client().await;
    let stored = client
        .database("shop")
        .collection::<mongodb::bson::Document>("bulky")
        .count_documents(doc! {})
        .await
        .expect("count");
    assert_eq!(stored, 1_000);
}

#[tokio::test]
async fn health_probes_answer_without_credentials() {
    let server = TestServer::start();
    let rest = rest(&server);
    let live = rest.get("/livez").await.expect(200);
    assert_eq!(live["status"], json!("ok"), "{live}");
    let ready = rest.get("/readyz").await.expect(200);
    assert_eq!(ready["status"], json!("ok"), "{ready}");
    let backend = ready["backend"].as_str().unwrap_or_default();
    assert!(
        backend == "sqlite" || backend == "postgres",
        "/readyz names the backend it reached: {ready}"
    );
    rest.send(reqwest::Method::POST, "/readyz", None)
        .await
        .expect_error(405);
}

/// A REST listing sorted on a field no index serves sorts in memory under the same limit
/// as the wire's commands: past `--blocking-stage-memory-limit-bytes` it writes sorted runs
/// under `--temp-dir` (REST has no `allowDiskUse`; it may always spill, as MongoDB's
/// `allowDiskUseByDefault`) instead of holding the whole collection, and the page is the
/// same. The files are gone once the page is answered.
#[tokio::test]
async fn a_sorted_listing_past_the_memory_limit_spills_and_keeps_its_order() {
    let temp = tempfile::tempdir().expect("temp dir");
    let temp_dir = temp.path().to_str().expect("utf-8 temp dir");
    let server = TestServer::start_with_args(&[
        "--blocking-stage-memory-limit-bytes",
        "64000",
        "--temp-dir",
        temp_dir,
    ]);
    let rest = rest(&server);
    let pad = "x".repeat(1000);
    let documents: Vec<Value> = (0..600)
        .map(|i| json!({"_id": i, "n": (i * 7919) % 97, "pad": pad}))
        .collect();
    rest.post(
        &format!("{SODA}/big?action=insert"),
        &Value::Array(documents),
    )
    .await
    .expect(200);
    let client = server.client().await;
    let spilled_sorts = || common::query_metric(&client, "sort", "spillToDisk");
    let before = spilled_sorts().await;

    let page = rest
        .get(&format!(
            "{SODA}/big?sort={}&offset=580&limit=20",
            encode(r#"{"n":-1,"_id":1}"#)
        ))
        .await
        .expect(200);
    let got: Vec<i64> = page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["_id"].as_i64().expect("_id"))
        .collect();
    let mut expected: Vec<(i64, i64)> = (0..600).map(|i| ((i * 7919) % 97, i)).collect();
    expected.sort_by_key(|&(n, id)| (-n, id));
    let expected: Vec<i64> = expected[580..].iter().map(|&(_, id)| id).collect();
    assert_eq!(got, expected);
    assert!(
        spilled_sorts().await > before,
        "600 KB sorted under 64 KB spills"
    );
    let left: Vec<_> = std::fs::read_dir(temp.path())
        .expect("read temp dir")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert!(left.is_empty(), "spill files left behind: {left:?}");
}
