//! The REST document API writes through the core like the wire does, so a collection's
//! validator (created over the wire) refuses invalid documents posted, bulk-inserted, put or
//! patched over REST: HTTP 400 with MongoDB's "Document failed validation", nothing written.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod rest_support;

use common::TestServer;
use mongodb::bson::{doc, Document};
use rest_support::Rest;
use serde_json::json;

const SODA: &str = "/ords/shop/soda/latest";

#[tokio::test]
async fn rest_writes_meet_the_collection_validator() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("shop");
    db.run_command(doc! {
        "create": "products",
        "validator": {"$jsonSchema": {
            "required": ["sku"],
            "properties": {"sku": {"bsonType": "string"}, "price": {"bsonType": "number", "minimum": 0}},
        }},
    })
    .await
    .expect("create with a validator");
    let products = db.collection::<Document>("products");
    let rest = Rest::new(server.rest_base());
    let coll = format!("{SODA}/products");

    let refused = rest
        .post(&coll, &json!({"price": 3}))
        .await
        .expect_error(400);
    assert!(refused.contains("Document failed validation"), "{refused}");
    let refused = rest
        .post(
            &format!("{coll}?action=insert"),
            &json!([{"sku": "a"}, {"sku": 1}]),
        )
        .await
        .expect_error(400);
    assert!(refused.contains("Document failed validation"), "{refused}");
    assert_eq!(products.count_documents(doc! {}).await.expect("count"), 0);

    rest.post(&coll, &json!({"_id": "p1", "sku": "a", "price": 3}))
        .await
        .expect(201);
    rest.put(&format!("{coll}/p1"), &json!({"price": 4}))
        .await
        .expect_error(400);
    rest.patch(&format!("{coll}/p1"), &json!({"$set": {"price": -1}}))
        .await
        .expect_error(400);
    rest.patch(&format!("{coll}/p1"), &json!({"$set": {"price": 5}}))
        .await
        .expect(200);
    assert_eq!(
        products.find_one(doc! {"_id": "p1"}).await.expect("find"),
        Some(doc! {"_id": "p1", "sku": "a", "price": 5})
    );
}
