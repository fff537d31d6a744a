//! The Stable API through the official Rust `mongodb` driver against a real `docgate`
//! process: a strict V1 client (`ServerApi`, as the Node driver's `serverApi: {version: '1',
//! strict: true}`) is held to API Version 1 — commands, command fields, stages and the
//! expression operators MongoDB 7.0 keeps out of V1 answer 323 APIStrictError — while a
//! client without `strict` may run anything.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;

use common::TestServer;
use driver_support::server_code;
use mongodb::bson::{doc, Bson, Document};

/// The Stable API: a strict V1 client (the driver's `ServerApi`, as the Node driver's
/// `serverApi: {version: '1', strict: true}`) runs CRUD and is refused commands outside API V1
/// with 323 APIStrictError; an unknown version is 322 APIVersionError, and the flags without a
/// version are 72 InvalidOptions. A non-strict V1 client may run anything.
#[tokio::test]
async fn stable_api_strict_clients_are_held_to_version_1() {
    let server = TestServer::start();
    let with_api = |strict: bool| stable_api_client(server.uri(), strict);
    let strict = with_api(true).await;
    let db = strict.database("apidb");
    let coll = db.collection::<Document>("items");
    coll.insert_one(doc! {"_id": 1, "a": "x"})
        .await
        .expect("insert is V1");
    let found = coll.find_one(doc! {"_id": 1}).await.expect("find is V1");
    assert!(found.is_some());
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 1);
    for command in [
        doc! {"distinct": "items", "key": "a"},
        doc! {"serverStatus": 1},
        doc! {"dbStats": 1},
    ] {
        let error = db
            .run_command(command.clone())
            .await
            .expect_err("outside V1");
        assert_eq!(server_code(&error), Some(323), "{command}: {error}");
    }
    // Inside V1 commands: the options and stages MongoDB keeps outside API V1.
    for command in [
        doc! {"find": "items", "tailable": true},
        doc! {"find": "items", "showRecordId": true},
        doc! {"aggregate": "items", "pipeline": [], "explain": true},
        doc! {"aggregate": "items", "pipeline": [{"$indexStats": {}}], "cursor": {}},
        doc! {"aggregate": "items", "pipeline": [{"$collStats": {"storageStats": {}}}], "cursor": {}},
        doc! {"create": "capped", "capped": true, "size": 4096},
        doc! {"createIndexes": "items", "indexes": [{"key": {"a": 1}, "name": "a_1", "sparse": true}]},
    ] {
        let error = db
            .run_command(command.clone())
            .await
            .expect_err("outside V1");
        assert_eq!(server_code(&error), Some(323), "{command}: {error}");
    }
    // The unified test's "aggregate on database": `$listLocalSessions` is not in V1.
    let error = strict
        .database("admin")
        .aggregate(vec![doc! {"$listLocalSessions": {}}, doc! {"$limit": 1}])
        .await
        .expect_err("$listLocalSessions is outside V1");
    assert_eq!(server_code(&error), Some(323), "{error}");
    // estimatedDocumentCount's `$collStats: {count: {}}` form and transactions are V1.
    let count = db
        .run_command(doc! {"aggregate": "items", "pipeline": [{"$collStats": {"count": {}}}, {"$group": {"_id": 1, "n": {"$sum": "$count"}}}], "cursor": {}})
        .await
        .expect("$collStats with count is V1");
    let first = count
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .expect("a batch");
    assert_eq!(first.len(), 1, "{count}");
    let mut session = strict.start_session().await.expect("session");
    session.start_transaction().await.expect("start");
    coll.insert_one(doc! {"_id": 2, "a": "y"})
        .session(&mut session)
        .await
        .expect("insert in a transaction");
    session
        .commit_transaction()
        .await
        .expect("commitTransaction is V1");
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 2);

    let lenient = with_api(false).await;
    lenient
        .database("apidb")
        .run_command(doc! {"distinct": "items", "key": "a"})
        .await
        .expect("a non-strict client may run distinct");

    let plain = server.client().await;
    let plain_db = plain.database("apidb");
    let cases = [
        (doc! {"ping": 1, "apiVersion": "2"}, 322),
        (doc! {"ping": 1, "apiStrict": true}, 72),
        (doc! {"ping": 1, "apiVersion": "1", "apiStrict": "yes"}, 14),
    ];
    for (command, code) in cases {
        let error = plain_db
            .run_command(command.clone())
            .await
            .expect_err("refused");
        assert_eq!(server_code(&error), Some(code), "{command}: {error}");
    }
}

/// A client declaring Stable API V1 (the driver's `ServerApi`), strict or not.
async fn stable_api_client(uri: String, strict: bool) -> mongodb::Client {
    use mongodb::options::{ClientOptions, ServerApi, ServerApiVersion};
    let mut options = ClientOptions::parse(&uri).await.expect("options");
    options.server_api = Some(
        ServerApi::builder()
            .version(ServerApiVersion::V1)
            .strict(strict)
            .build(),
    );
    mongodb::Client::with_options(options).expect("client")
}

/// Under `apiStrict: true` the expression operators MongoDB 7.0 keeps outside API V1 (the
/// bitwise ones, V1 only from 7.1; `$filter`'s `limit`; `$meta: "textScore"`) answer 323 with
/// MongoDB's message wherever an expression is parsed; a non-strict V1 client runs the same
/// commands, and V1 operators and query operators of the same spelling pass under strict.
#[tokio::test]
async fn stable_api_strict_refuses_expression_operators_outside_version_1() {
    let server = TestServer::start();
    let strict = stable_api_client(server.uri(), true).await;
    let lenient = stable_api_client(server.uri(), false).await;
    let db = strict.database("apiops");
    let loose = lenient.database("apiops");
    db.collection::<Document>("bits")
        .insert_many(vec![doc! {"_id": 1, "n": 5}, doc! {"_id": 2, "n": 6}])
        .await
        .expect("insert");
    let not_allowed =
        |op: &str| format!("{op} is not allowed with 'apiStrict: true' in API Version 1");
    let window = doc! {"$setWindowFields": {"sortBy": {"_id": 1}, "output": {"s": {
    "$sum": {"$bitXor": ["$n", 1]}, "window": {"documents": ["unbounded", "current"]}}}}};
    let cases = [
        (
            doc! {"aggregate": "bits", "pipeline": [{"$project": {"x": {"$bitAnd": ["$n", 3]}}}], "cursor": {}},
            not_allowed("$bitAnd"),
        ),
        (
            doc! {"aggregate": "bits", "pipeline": [{"$group": {"_id": null, "s": {"$sum": {"$bitOr": ["$n", 1]}}}}], "cursor": {}},
            not_allowed("$bitOr"),
        ),
        (
            doc! {"aggregate": "bits", "pipeline": [window], "cursor": {}},
            not_allowed("$bitXor"),
        ),
        (
            doc! {"find": "bits", "filter": {"$expr": {"$eq": [{"$bitNot": "$n"}, -6]}}},
            not_allowed("$bitNot"),
        ),
        (
            doc! {"aggregate": "bits", "pipeline": [{"$lookup": {"from": "bits", "as": "j",
            "pipeline": [{"$match": {"$expr": {"$bitAnd": ["$n", 1]}}}]}}], "cursor": {}},
            not_allowed("$bitAnd"),
        ),
        (
            doc! {"aggregate": "bits", "pipeline": [{"$project": {"f": {"$filter": {
            "input": [1, 2, 3], "cond": true, "limit": 1}}}}], "cursor": {}},
            not_allowed("limit argument of $filter operator"),
        ),
        (
            doc! {"delete": "bits", "deletes": [{"q": {"$expr": {"$eq": [{"$bitAnd": ["$n", 8]}, 8]}}, "limit": 0}]},
            not_allowed("$bitAnd"),
        ),
        (
            doc! {"explain": {"aggregate": "bits", "pipeline": [{"$set": {"x": {"$bitNot": "$n"}}}], "cursor": {}}},
            not_allowed("$bitNot"),
        ),
    ];
    for (command, message) in cases {
        let error = db
            .run_command(command.clone())
            .await
            .expect_err("outside V1");
        match &*error.kind {
            mongodb::error::ErrorKind::Command(c) => {
                assert_eq!(
                    (c.code, c.code_name.as_str()),
                    (323, "APIStrictError"),
                    "{command}"
                );
                assert_eq!(c.message, message, "{command}");
            }
            _ => panic!("{command}: expected a command error, got {error:?}"),
        }
        loose
            .run_command(command.clone())
            .await
            .unwrap_or_else(|e| panic!("a non-strict client may run {command}: {e}"));
    }
    // An update pipeline: refused under strict (nothing changes), applied without it.
    let update = doc! {"update": "bits", "updates": [{"q": {"_id": 1}, "u": [{"$set": {"m": {"$bitAnd": ["$n", 1]}}}]}]};
    let error = db
        .run_command(update.clone())
        .await
        .expect_err("outside V1");
    assert_eq!(server_code(&error), Some(323), "{error}");
    let bits = db.collection::<Document>("bits");
    let one = bits
        .find_one(doc! {"_id": 1})
        .await
        .expect("find")
        .expect("doc");
    assert!(!one.contains_key("m"), "{one}");
    loose
        .run_command(update)
        .await
        .expect("a non-strict update");
    let one = bits
        .find_one(doc! {"_id": 1})
        .await
        .expect("find")
        .expect("doc");
    assert_eq!(one.get("m"), Some(&Bson::Int32(1)), "{one}");
    // A view defined without strict whose pipeline holds an operator outside V1: reading it
    // under strict is refused (MongoDB parses the view's pipeline with the reader's API
    // parameters), also through a view on it; a non-strict client reads it.
    loose
        .run_command(doc! {"create": "bits_view", "viewOn": "bits",
        "pipeline": [{"$set": {"b": {"$bitAnd": ["$n", 4]}}}]})
        .await
        .expect("a non-strict client defines the view");
    loose
        .run_command(doc! {"create": "bits_view2", "viewOn": "bits_view", "pipeline": []})
        .await
        .expect("a view on the view");
    for command in [
        doc! {"aggregate": "bits_view", "pipeline": [], "cursor": {}},
        doc! {"find": "bits_view", "filter": {}},
        doc! {"count": "bits_view"},
        doc! {"aggregate": "bits_view2", "pipeline": [], "cursor": {}},
    ] {
        let error = db
            .run_command(command.clone())
            .await
            .expect_err("the view's pipeline is outside V1");
        match &*error.kind {
            mongodb::error::ErrorKind::Command(c) => {
                assert_eq!(c.code, 323, "{command}");
                assert_eq!(c.message, not_allowed("$bitAnd"), "{command}");
            }
            _ => panic!("{command}: expected a command error, got {error:?}"),
        }
        loose
            .run_command(command.clone())
            .await
            .unwrap_or_else(|e| panic!("a non-strict client may run {command}: {e}"));
    }
    loose
        .run_command(
            doc! {"create": "plain_view", "viewOn": "bits", "pipeline": [{"$match": {"n": 5}}]},
        )
        .await
        .expect("a V1 view");
    let reply = db
        .run_command(doc! {"count": "plain_view"})
        .await
        .expect("a V1 view reads under strict");
    assert_eq!(reply.get("n"), Some(&Bson::Int32(1)), "{reply}");
    // V1 operators, what `$literal` holds and a query operator spelled like one pass.
    let reply = db
        .run_command(doc! {"aggregate": "bits", "pipeline": [
        {"$match": {"n": {"$bitsAllSet": 4}}},
        {"$project": {"x": {"$add": ["$n", 1]}, "l": {"$literal": {"$bitAnd": 1}}}},
        {"$sort": {"_id": 1}}], "cursor": {}})
        .await
        .expect("V1 operators under strict");
    let batch = reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .expect("a batch");
    assert_eq!(
        batch,
        &vec![
            Bson::Document(doc! {"_id": 1, "x": 6, "l": {"$bitAnd": 1}}),
            Bson::Document(doc! {"_id": 2, "x": 7, "l": {"$bitAnd": 1}}),
        ]
    );
}
