//! Hostile bind values against metadata-defined REST handlers, through real HTTP against the
//! real binary: a value bound from the URI, the query string or the body never changes the
//! shape of a handler's query. In a filter it is an equality (`{$eq: v}`), so an Extended
//! JSON regex or an operator document selects nothing extra (or is refused); in an
//! expression it is a literal, so `$$ROOT` or `$secret` are strings, not the document or
//! another field; SQL written into a bound value or a SODA `q=` filter (quotes, `;`, `--`)
//! is data, and a refusal names no SQL; non-data types are refused; and a placeholder where
//! no value may stand (a field name, an `$unwind` path) fails the module definition.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod rest_support;

use common::TestServer;
use mongodb::bson::{doc, Document};
use rest_support::{encode, Rest};
use serde_json::{json, Value};

const ADMIN: &str = "/ords/app/_/modules";
const BASE: &str = "/ords/app/hostile/v1";

fn hostile_module() -> Value {
    json!({
        "base_path": "/hostile/v1/",
        "templates": [
            {"uri_template": "people/", "handlers": [
                {"method": "GET", "source_type": "query",
                 "source": {"collection": "people", "filter": {"name": ":name"}, "sort": {"_id": 1}}},
                {"method": "POST", "source_type": "query",
                 "source": {"collection": "people", "filter": {"name": ":name"}, "sort": {"_id": 1}}},
                {"method": "DELETE", "source_type": "dml",
                 "source": {"collection": "people", "delete": {"name": ":name"}}}
            ]},
            {"uri_template": "people/by-name/:name", "handlers": [
                {"method": "GET", "source_type": "query",
                 "source": {"collection": "people", "filter": {"$or": [{"name": ":name"}, {"nick": ":name"}]}}},
                {"method": "PATCH", "source_type": "dml",
                 "source": {"collection": "people", "update": {"filter": {"name": ":name"}, "update": {"$set": {"note": ":note"}}}}}
            ]},
            {"uri_template": "people/:id", "handlers": [
                {"method": "GET", "source_type": "collection_item", "source": "people"}
            ]},
            {"uri_template": "echo", "handlers": [
                {"method": "GET", "source_type": "pipeline",
                 "source": {"collection": "people", "pipeline": [
                     {"$match": {"name": "ada"}},
                     {"$addFields": {"echo": ":v"}},
                     {"$project": {"_id": 0, "echo": 1, "shown": ":v"}}]}},
                {"method": "POST", "source_type": "pipeline",
                 "source": {"collection": "people", "pipeline": [
                     {"$match": {"name": ":name"}}, {"$project": {"_id": 1}}]}}
            ]},
            {"uri_template": "expr", "handlers": [
                {"method": "GET", "source_type": "query",
                 "source": {"collection": "people", "filter": {"$expr": {"$eq": ["$name", ":v"]}}}}
            ]}
        ]
    })
}

async fn seed(server: &TestServer) -> mongodb::Collection<Document> {
    let people = server
        .client()
        .await
        .database("app")
        .collection::<Document>("people");
    people
        .insert_many([
            doc! {"_id": 1, "name": "ada", "nick": "countess", "secret": "s-ada"},
            doc! {"_id": 2, "name": "bob", "secret": "s-bob"},
            doc! {"_id": 3, "name": "cy", "secret": "s-cy"},
            doc! {"_id": 4, "name": "$$ROOT", "secret": "s-root"},
            doc! {"_id": 5, "name": "dee", "secret": "s-dee"},
        ])
        .await
        .expect("seed people");
    people
}

async fn served(server: &TestServer) -> Rest {
    let rest = Rest::new(server.rest_base());
    rest.put(&format!("{ADMIN}/hostile"), &hostile_module())
        .await
        .expect(201);
    rest
}

fn ids(page: &Value) -> Vec<i64> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["_id"].as_i64().unwrap_or(-1))
        .collect()
}

const REGEX_BODY: &str = r#"{"name": {"$regularExpression": {"pattern": ".", "options": ""}}}"#;

#[tokio::test]
async fn a_regex_or_an_operator_in_the_body_deletes_and_reads_nothing_extra() {
    let server = TestServer::start();
    let people = seed(&server).await;
    let rest = served(&server).await;

    // The attack of the report: a regex value through a dml delete handler.
    let refused = rest
        .send(
            reqwest::Method::DELETE,
            &format!("{BASE}/people/"),
            Some(REGEX_BODY.into()),
        )
        .await
        .expect_error(400);
    assert!(refused.contains("regex"), "{refused}");
    for operator in [
        json!({"name": {"$ne": null}}),
        json!({"name": {"$gt": ""}}),
        json!({"name": {"$minKey": 1}}),
        json!({"name": {"$code": "1"}}),
    ] {
        rest.send(
            reqwest::Method::DELETE,
            &format!("{BASE}/people/"),
            Some(operator.to_string()),
        )
        .await
        .expect_error(400);
    }
    assert_eq!(people.count_documents(doc! {}).await.unwrap(), 5);

    // The same through a query handler: refused, not "every document".
    rest.post_raw(&format!("{BASE}/people/"), REGEX_BODY)
        .await
        .expect_error(400);
    // A plain value is an equality, and only that.
    let deleted = rest
        .send(
            reqwest::Method::DELETE,
            &format!("{BASE}/people/"),
            Some(json!({"name": "bob"}).to_string()),
        )
        .await
        .expect(200);
    assert_eq!(deleted["itemsDeleted"], json!(1));
    assert_eq!(people.count_documents(doc! {}).await.unwrap(), 4);
    // A document value is compared whole, never read as conditions.
    let page = rest
        .post(
            &format!("{BASE}/people/"),
            &json!({"name": {"first": "ada"}}),
        )
        .await
        .expect(200);
    assert_eq!(ids(&page), Vec::<i64>::new());
}

#[tokio::test]
async fn query_string_and_uri_values_are_equalities() {
    let server = TestServer::start();
    seed(&server).await;
    let rest = served(&server).await;

    for hostile in [r#"{"$ne":null}"#, r#"{"$regex":"."}"#, "/./", ".*"] {
        let page = rest
            .get(&format!("{BASE}/people/?name={}", encode(hostile)))
            .await
            .expect(200);
        assert_eq!(ids(&page), Vec::<i64>::new(), "?name={hostile}");
    }
    let page = rest
        .get(&format!("{BASE}/people/?name={}", encode("$$ROOT")))
        .await
        .expect(200);
    assert_eq!(ids(&page), [4], "a $-string is a value to compare");

    // Template segments, in a filter and as a document id.
    for hostile in [r#"{"$gt":""}"#, "$$ROOT", ".*"] {
        let page = rest
            .get(&format!("{BASE}/people/by-name/{}", encode(hostile)))
            .await
            .expect(200);
        let expected: Vec<i64> = if hostile == "$$ROOT" { vec![4] } else { vec![] };
        assert_eq!(ids(&page), expected, "segment {hostile}");
        rest.get(&format!("{BASE}/people/{}", encode(hostile)))
            .await
            .expect_error(404);
    }
    let by_nick = rest
        .get(&format!("{BASE}/people/by-name/countess"))
        .await
        .expect(200);
    assert_eq!(ids(&by_nick), [1]);

    // A bound update value is data: `$secret` is stored as the string it is.
    rest.patch(
        &format!("{BASE}/people/by-name/ada"),
        &json!({"note": "$secret"}),
    )
    .await
    .expect(200);
    let people = server
        .client()
        .await
        .database("app")
        .collection::<Document>("people");
    let ada = people.find_one(doc! {"_id": 1}).await.unwrap().unwrap();
    assert_eq!(ada.get_str("note").unwrap(), "$secret");
}

#[tokio::test]
async fn expression_values_are_literals() {
    let server = TestServer::start();
    seed(&server).await;
    let rest = served(&server).await;

    for hostile in ["$$ROOT", "$secret", "$$CURRENT.secret", "$name"] {
        let page = rest
            .get(&format!("{BASE}/echo?v={}", encode(hostile)))
            .await
            .expect(200);
        assert_eq!(
            page["items"],
            json!([{"echo": hostile, "shown": hostile}]),
            "?v={hostile}"
        );
    }
    // `$expr: {$eq: ["$name", ":v"]}` with `v=$name` compares with the string "$name".
    let page = rest
        .get(&format!("{BASE}/expr?v={}", encode("$name")))
        .await
        .expect(200);
    assert_eq!(ids(&page), Vec::<i64>::new());
    let page = rest
        .get(&format!("{BASE}/expr?v={}", encode("$$ROOT")))
        .await
        .expect(200);
    assert_eq!(ids(&page), [4]);
    // `$match` in a pipeline is a filter: the body's regex is refused.
    rest.post_raw(&format!("{BASE}/echo"), REGEX_BODY)
        .await
        .expect_error(400);
    let matched = rest
        .post(&format!("{BASE}/echo"), &json!({"name": "cy"}))
        .await
        .expect(200);
    assert_eq!(ids(&matched), [3]);
}

#[tokio::test]
async fn placeholders_where_no_value_may_stand_fail_the_definition() {
    let server = TestServer::start();
    let rest = Rest::new(server.rest_base());
    let module = |source: Value, source_type: &str| {
        json!({"base_path": "/bad/v1/", "templates": [{"uri_template": "x", "handlers": [
            {"method": "GET", "source_type": source_type, "source": source}]}]})
    };
    let refused = [
        (
            json!({"collection": "c", "pipeline": [{"$unwind": ":path"}]}),
            "pipeline",
        ),
        (
            json!({"collection": "c", "pipeline": [{"$lookup": {"from": ":other", "as": "x", "pipeline": []}}]}),
            "pipeline",
        ),
        (json!({"collection": "c", "filter": {":field": 1}}), "query"),
        (json!({"collection": "c", "sort": {":field": 1}}), "query"),
        (json!({"collection": "c", "fliter": {"a": 1}}), "query"),
        (
            json!({"collection": "c", "delete": {}, "insert": {}}),
            "dml",
        ),
    ];
    for (source, source_type) in refused {
        rest.put(
            &format!("{ADMIN}/bad"),
            &module(source.clone(), source_type),
        )
        .await
        .expect_error(400);
    }
    // A count may be bound, and must then be an integer.
    rest.put(
        &format!("{ADMIN}/counts"),
        &json!({"base_path": "/counts/v1/", "templates": [{"uri_template": "x", "handlers": [
            {"method": "GET", "source_type": "pipeline",
             "source": {"collection": "c", "pipeline": [{"$limit": ":n"}]}}]}]}),
    )
    .await
    .expect(201);
    rest.get("/ords/app/counts/v1/x?n=2").await.expect(200);
    rest.get("/ords/app/counts/v1/x?n=two")
        .await
        .expect_error(400);
}

/// SQL written into values: quotes, statement separators and comments.
const SQL_STRINGS: &[&str] = &[
    "x'); DROP TABLE people; --",
    "\" OR 1=1 --",
    "' OR '1'='1",
    "a;b",
    "ünï☃'--",
];

#[tokio::test]
async fn sql_in_bind_values_and_q_filters_is_data_and_errors_name_no_sql() {
    let server = TestServer::start();
    let people = seed(&server).await;
    let rest = served(&server).await;
    people
        .insert_one(doc! {"_id": 6, "name": SQL_STRINGS[0], "nick": SQL_STRINGS[1]})
        .await
        .expect("seed the person with the SQL name");

    for hostile in SQL_STRINGS {
        let expected: Vec<i64> = if *hostile == SQL_STRINGS[0] {
            vec![6]
        } else {
            vec![]
        };
        let page = rest
            .get(&format!("{BASE}/people/?name={}", encode(hostile)))
            .await
            .expect(200);
        assert_eq!(ids(&page), expected, "?name={hostile}");
        let by_segment: Vec<i64> = if *hostile == SQL_STRINGS[1] {
            vec![6]
        } else {
            expected.clone()
        };
        let page = rest
            .get(&format!("{BASE}/people/by-name/{}", encode(hostile)))
            .await
            .expect(200);
        assert_eq!(ids(&page), by_segment, "segment {hostile}");

        // The same strings inside a SODA `q=` filter: an equality on data.
        let q = encode(&serde_json::to_string(&json!({"name": hostile})).unwrap());
        let page = rest
            .get(&format!("/ords/app/soda/latest/people?q={q}"))
            .await
            .expect(200);
        assert_eq!(ids(&page), expected, "q= name {hostile}");
        // As a field name in `q=`: nothing matches, or a MongoDB-worded refusal.
        let q = encode(&serde_json::to_string(&json!({*hostile: 1})).unwrap());
        let reply = rest
            .get(&format!("/ords/app/soda/latest/people?q={q}"))
            .await;
        if reply.status == 200 {
            assert_eq!(
                ids(&reply.expect(200)),
                Vec::<i64>::new(),
                "q= field {hostile}"
            );
        } else {
            let message = reply.expect_error(400).to_lowercase();
            for leak in ["sqlite", "postgres", "syntax error", "select ", "/tmp"] {
                assert!(!message.contains(leak), "q= field {hostile}: {message}");
            }
        }
    }
    assert_eq!(
        people.count_documents(doc! {}).await.expect("count"),
        6,
        "every person is still there"
    );
}
