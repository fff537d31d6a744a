//! A view through the REST document API, against the real binary: created over the wire
//! (`create` with `viewOn` and `pipeline`), its documents are read over REST — pages with
//! `q`, `sort`, `limit`/`offset`, one document by id, `action=query` — as the view's
//! pipeline followed by the request; every write answers 400 with MongoDB's reason (the
//! namespace is a view) and writes nothing; the view is listed and dropped like a collection.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod rest_support;

use common::TestServer;
use mongodb::bson::doc;
use rest_support::{encode, Rest};
use serde_json::{json, Value};

const SODA: &str = "/ords/shop/soda/latest";

fn ids(page: &Value) -> Vec<i64> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["_id"].as_i64().unwrap_or(-1))
        .collect()
}

#[tokio::test]
async fn a_view_is_read_over_rest_and_refuses_writes() {
    let server = TestServer::start();
    let rest = Rest::new(server.rest_base());
    let client = server.client().await;
    let shop = client.database("shop");
    let goods: Vec<_> = (0..12)
        .map(|i| doc! {"_id": i, "price": i * 10, "kind": if i % 2 == 0 { "even" } else { "odd" }})
        .collect();
    shop.collection("goods")
        .insert_many(goods)
        .await
        .expect("insert");
    // REST addresses one document by a string `_id`.
    shop.collection("goods")
        .insert_one(doc! {"_id": "s", "price": 5, "kind": "even"})
        .await
        .expect("insert");
    shop.run_command(doc! {
        "create": "even_goods",
        "viewOn": "goods",
        "pipeline": [{"$match": {"kind": "even"}}, {"$project": {"kind": 0}}],
    })
    .await
    .expect("create view");

    let page = rest
        .get(&format!("{SODA}/even_goods?limit=4"))
        .await
        .expect(200);
    assert_eq!(ids(&page), [0, 2, 4, 6]);
    assert_eq!(page["hasMore"], json!(true));
    assert_eq!(page["items"][0], json!({"_id": 0, "price": 0}));
    let second = rest
        .get(&format!("{SODA}/even_goods?limit=4&offset=4"))
        .await
        .expect(200);
    assert_eq!(ids(&second), [8, 10, -1]);
    assert_eq!(second["hasMore"], json!(false));
    let q = encode(r#"{"price":{"$gte":40}}"#);
    let sort = encode(r#"{"price":-1}"#);
    let filtered = rest
        .get(&format!("{SODA}/even_goods?q={q}&sort={sort}"))
        .await
        .expect(200);
    assert_eq!(ids(&filtered), [10, 8, 6, 4]);
    let one = rest.get(&format!("{SODA}/even_goods/s")).await.expect(200);
    assert_eq!(one, json!({"_id": "s", "price": 5}));
    rest.get(&format!("{SODA}/even_goods/t"))
        .await
        .expect_error(404);
    let queried = rest
        .post(
            &format!("{SODA}/even_goods?action=query"),
            &json!({"price": {"$in": [20, 30]}}),
        )
        .await
        .expect(200);
    assert_eq!(ids(&queried), [2]);

    // Writes: 400 with MongoDB's reason, and nothing written.
    for reply in [
        rest.post(&format!("{SODA}/even_goods"), &json!({"price": 1}))
            .await,
        rest.post(
            &format!("{SODA}/even_goods?action=insert"),
            &json!([{"price": 1}]),
        )
        .await,
        rest.put(&format!("{SODA}/even_goods/s"), &json!({"price": 1}))
            .await,
        rest.patch(
            &format!("{SODA}/even_goods/s"),
            &json!({"$set": {"price": 1}}),
        )
        .await,
        rest.delete(&format!("{SODA}/even_goods/s")).await,
        rest.post(&format!("{SODA}/even_goods?action=delete"), &json!({}))
            .await,
    ] {
        let message = reply.expect_error(400);
        assert!(message.contains("is a view, not a collection"), "{message}");
    }
    let count = shop
        .collection::<mongodb::bson::Document>("goods")
        .count_documents(doc! {})
        .await
        .expect("count");
    assert_eq!(count, 13);

    let listing = rest.get(&format!("{SODA}/")).await.expect(200);
    let names: Vec<&str> = listing["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|item| item["name"].as_str())
        .collect();
    assert_eq!(names, ["even_goods", "goods"]);
    rest.delete(&format!("{SODA}/even_goods")).await.expect(200);
    let left = shop.list_collection_names().await.expect("list");
    assert_eq!(left, ["goods"]);
}
