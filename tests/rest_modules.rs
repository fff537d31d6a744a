//! Metadata-defined REST handlers through real HTTP against the real binary: modules PUT,
//! listed, read and deleted through `/ords/{db}/_/modules`, served at once (caching on) and
//! after an edit behind docgate's back (direct SQL) within `cache.metadata.timeout`; every
//! source type (`collection_feed`, `collection_item`, `query`, `dml`, `pipeline`) with binds
//! from the URI, the query string, the body and `:current_user`; unpublished modules and
//! unknown routes 404; privileges 401/403 with HTTP Basic; the OpenAPI catalog.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod rest_support;

use std::time::{Duration, Instant};

use common::TestServer;
use mongodb::bson::doc;
use rest_support::Rest;
use serde_json::{json, Value};

const ADMIN: &str = "/ords/concert/_/modules";

fn events_module(feed_filter: Value) -> Value {
    json!({
        "base_path": "/concert/authuser/v1/",
        "items_per_page": 2,
        "templates": [
            {"uri_template": "events/", "handlers": [
                {"method": "GET", "source_type": "collection_feed",
                 "source": {"collection": "events", "filter": feed_filter, "sort": {"_id": 1}}},
                {"method": "POST", "source_type": "dml",
                 "source": {"collection": "events", "insert": {"title": ":title", "venue": ":venue", "by": ":current_user"}}}
            ]},
            {"uri_template": "events/:id", "handlers": [
                {"method": "GET", "source_type": "collection_item", "source": "events"},
                {"method": "PATCH", "source_type": "dml",
                 "source": {"collection": "events", "update": {"filter": {"_id": ":id"}, "update": {"$set": {"title": ":title"}}}}},
                {"method": "DELETE", "source_type": "dml",
                 "source": {"collection": "events", "delete": {"_id": ":id"}}}
            ]},
            {"uri_template": "venues/:venue/events", "handlers": [
                {"method": "GET", "source_type": "query",
                 "source": "{\"collection\": \"events\", \"filter\": {\"venue\": \":venue\", \"year\": {\"$gte\": \":from\"}}, \"projection\": {\"title\": 1, \"_id\": 0}}"}
            ]},
            {"uri_template": "stats", "handlers": [
                {"method": "GET", "source_type": "pipeline",
                 "source": {"collection": "events", "pipeline": [
                     {"$group": {"_id": "$venue", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]}}
            ]}
        ]
    })
}

async fn seed_events(server: &TestServer) {
    let client = server.client().await;
    client
        .database("concert")
        .collection::<mongodb::bson::Document>("events")
        .insert_many([
            doc! {"_id": 1, "title": "Opening", "venue": "hall", "year": 2025},
            doc! {"_id": 2, "title": "Jazz", "venue": "club", "year": 2026},
            doc! {"_id": 3, "title": "Strings", "venue": "hall", "year": 2026},
        ])
        .await
        .expect("seed events");
}

fn titles(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["title"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn every_source_type_runs_with_binds() {
    let server = TestServer::start();
    seed_events(&server).await;
    let rest = Rest::new(server.rest_base());
    rest.put(&format!("{ADMIN}/concert"), &events_module(json!({})))
        .await
        .expect(201);
    let base = "/ords/concert/concert/authuser/v1";

    let feed = rest.get(&format!("{base}/events/")).await.expect(200);
    assert_eq!(titles(&feed), ["Opening", "Jazz"]);
    assert_eq!(feed["hasMore"], json!(true));
    let second = rest
        .get(&format!("{base}/events/?offset=2"))
        .await
        .expect(200);
    assert_eq!(titles(&second), ["Strings"]);

    let one = rest.get(&format!("{base}/events/2")).await.expect(200);
    assert_eq!(one["title"], json!("Jazz"));
    rest.get(&format!("{base}/events/99"))
        .await
        .expect_error(404);

    let at_hall = rest
        .get(&format!("{base}/venues/hall/events?from=2026"))
        .await
        .expect(200);
    assert_eq!(at_hall["items"], json!([{"title": "Strings"}]));
    rest.get(&format!("{base}/venues/hall/events"))
        .await
        .expect_error(400);

    let stats = rest.get(&format!("{base}/stats")).await.expect(200);
    assert_eq!(
        stats["items"],
        json!([{"_id": "club", "n": 1}, {"_id": "hall", "n": 2}])
    );

    let created = rest
        .post(
            &format!("{base}/events/"),
            &json!({"title": "Late", "venue": "club"}),
        )
        .await
        .expect(201);
    let id = created["items"][0]["id"].as_str().expect("id").to_string();
    let late = rest.get(&format!("{base}/events/{id}")).await.expect(200);
    assert_eq!(late["by"], Value::Null, "anonymous :current_user is null");
    assert_eq!(late["venue"], json!("club"));

    // An operator smuggled in through a bind value is refused.
    rest.post(
        &format!("{base}/events/"),
        &json!({"title": {"$ne": null}, "venue": "x"}),
    )
    .await
    .expect_error(400);

    let renamed = rest
        .patch(&format!("{base}/events/2"), &json!({"title": "Jazz Night"}))
        .await
        .expect(200);
    assert_eq!(renamed["title"], json!("Jazz Night"));
    let deleted = rest.delete(&format!("{base}/events/3")).await.expect(200);
    assert_eq!(deleted["itemsDeleted"], json!(1));

    rest.get(&format!("{base}/nothing")).await.expect_error(404);

    let openapi = rest
        .get("/ords/concert/open-api-catalog/")
        .await
        .expect(200);
    assert_eq!(openapi["openapi"], json!("3.0.0"));
    let paths = openapi["paths"].as_object().expect("paths");
    let mut names: Vec<&String> = paths.keys().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "/ords/concert/concert/authuser/v1/events/",
            "/ords/concert/concert/authuser/v1/events/{id}",
            "/ords/concert/concert/authuser/v1/stats",
            "/ords/concert/concert/authuser/v1/venues/{venue}/events",
        ]
    );
    let item = &paths["/ords/concert/concert/authuser/v1/events/{id}"];
    let methods: Vec<&String> = item.as_object().expect("methods").keys().collect();
    assert_eq!(methods, ["get", "patch", "delete"]);
    rest.send(reqwest::Method::PUT, &format!("{base}/stats"), None)
        .await
        .expect_error(405);
}

#[tokio::test]
async fn modules_are_managed_and_changes_are_served_on_the_next_request() {
    let server = TestServer::start();
    seed_events(&server).await;
    let rest = Rest::new(server.rest_base());
    let feed = "/ords/concert/concert/authuser/v1/events/";
    rest.get(feed).await.expect_error(404);

    rest.put(
        &format!("{ADMIN}/concert"),
        &events_module(json!({"venue": "hall"})),
    )
    .await
    .expect(201);
    assert_eq!(
        titles(&rest.get(feed).await.expect(200)),
        ["Opening", "Strings"]
    );

    // Edited through docgate: served on the very next request, cache on.
    rest.put(
        &format!("{ADMIN}/concert"),
        &events_module(json!({"venue": "club"})),
    )
    .await
    .expect(200);
    assert_eq!(titles(&rest.get(feed).await.expect(200)), ["Jazz"]);

    let stored = rest.get(&format!("{ADMIN}/concert")).await.expect(200);
    assert_eq!(stored["name"], json!("concert"));
    assert_eq!(stored["base_path"], json!("/concert/authuser/v1/"));
    let listing = rest.get(ADMIN).await.expect(200);
    assert_eq!(listing["count"], json!(1));

    let mut unpublished = events_module(json!({}));
    unpublished["status"] = json!("unpublished");
    rest.put(&format!("{ADMIN}/concert"), &unpublished)
        .await
        .expect(200);
    rest.get(feed).await.expect_error(404);

    rest.put(
        &format!("{ADMIN}/concert"),
        &json!({"base_path": "/x/", "bogus": 1}),
    )
    .await
    .expect_error(400);
    rest.put(
        &format!("{ADMIN}/other"),
        &json!({"name": "concert", "base_path": "/x/"}),
    )
    .await
    .expect_error(400);

    rest.delete(&format!("{ADMIN}/concert")).await.expect(200);
    rest.delete(&format!("{ADMIN}/concert"))
        .await
        .expect_error(404);
    rest.get(&format!("{ADMIN}/concert"))
        .await
        .expect_error(404);
}

#[tokio::test]
async fn a_module_edited_by_direct_sql_is_served_within_the_cache_timeout() {
    let server = TestServer::start_with_args(&["--cache-metadata-timeout", "1s"]);
    seed_events(&server).await;
    let rest = Rest::new(server.rest_base());
    let feed = "/ords/concert/concert/authuser/v1/events/";
    rest.put(
        &format!("{ADMIN}/concert"),
        &events_module(json!({"venue": "hall"})),
    )
    .await
    .expect(201);
    assert_eq!(
        titles(&rest.get(feed).await.expect(200)),
        ["Opening", "Strings"]
    );

    let mut edited = events_module(json!({"venue": "club"}));
    edited["name"] = json!("concert");
    let body = edited.to_string().replace('\'', "''");
    let sql = match server.backend() {
        common::TestBackend::Sqlite { .. } => format!(
            "UPDATE dg_meta SET body = '{body}' WHERE kind = 'rest_module' AND db = 'concert' AND name = 'concert'"
        ),
        common::TestBackend::Postgres { .. } => format!(
            "UPDATE docgate.meta SET body = '{body}'::jsonb WHERE kind = 'rest_module' AND db = 'concert' AND name = 'concert'"
        ),
        // Oracle keeps meta keys with a `~` prefix (it has no empty strings).
        common::TestBackend::Oracle { .. } => format!(
            "UPDATE dg_meta SET body = '{body}' WHERE kind = '~rest_module' AND db = '~concert' AND name = '~concert'"
        ),
    };
    let edited_at = Instant::now();
    server.run_backend_sql(&sql);
    loop {
        let page = rest.get(feed).await.expect(200);
        if titles(&page) == ["Jazz"] {
            break;
        }
        assert!(
            edited_at.elapsed() < Duration::from_millis(2500),
            "still served the old handler after {:?}: {page}",
            edited_at.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn privileges_answer_401_and_403_with_basic_credentials() {
    let server = TestServer::start();
    seed_events(&server).await;
    // The first user through the localhost exception, the others as that user.
    server
        .client()
        .await
        .database("admin")
        .run_command(doc! {"createUser": "boss", "pwd": "boss-pw", "roles": ["root"]})
        .await
        .expect("createUser boss");
    let client = server
        .client_with_uri(&format!(
            "mongodb://boss:boss-pw@127.0.0.1:{}/?directConnection=true&authSource=admin",
            server.port()
        ))
        .await;
    let concert = client.database("concert");
    concert
        .run_command(doc! {"createRole": "concert_user", "privileges": [], "roles": []})
        .await
        .expect("createRole");
    concert
        .run_command(doc! {"createUser": "fan", "pwd": "fan-pw", "roles": ["concert_user"]})
        .await
        .expect("createUser fan");
    concert
        .run_command(doc! {"createUser": "other", "pwd": "other-pw", "roles": ["read"]})
        .await
        .expect("createUser other");

    let anonymous = Rest::new(server.rest_base());
    let boss = anonymous.with_authorization(&basic("boss", "boss-pw"));
    let mut module = events_module(json!({}));
    module["privileges"] =
        json!([{"name": "concert_priv", "roles": ["concert_user"], "patterns": ["/events/*"]}]);
    // Users exist now: the admin endpoints need an administrator.
    let refused = anonymous.put(&format!("{ADMIN}/concert"), &module).await;
    assert!(refused.headers.contains_key("www-authenticate"));
    refused.expect_error(401);
    anonymous
        .with_authorization(&basic("other", "other-pw"))
        .put(&format!("{ADMIN}/concert"), &module)
        .await
        .expect_error(403);
    boss.put(&format!("{ADMIN}/concert"), &module)
        .await
        .expect(201);

    let feed = "/ords/concert/concert/authuser/v1/events/";
    let missing = anonymous.get(feed).await;
    assert_eq!(
        missing
            .headers
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok()),
        Some("Basic realm=\"docgate\", Bearer realm=\"docgate\"")
    );
    missing.expect_error(401);
    anonymous
        .with_authorization(&basic("fan", "wrong"))
        .get(feed)
        .await
        .expect_error(401);
    anonymous
        .with_authorization(&basic("other", "other-pw"))
        .get(feed)
        .await
        .expect_error(403);
    let fan = anonymous.with_authorization(&basic("fan", "fan-pw"));
    assert_eq!(
        titles(&fan.get(feed).await.expect(200)),
        ["Opening", "Jazz"]
    );
    // :current_user is the authenticated user.
    let created = fan
        .post(feed, &json!({"title": "Fan night", "venue": "club"}))
        .await
        .expect(201);
    let id = created["items"][0]["id"].as_str().expect("id").to_string();
    let mine = fan.get(&format!("{feed}{id}")).await.expect(200);
    assert_eq!(mine["by"], json!("fan"));
    // Paths no privilege covers stay public; the document API needs a role that allows it.
    anonymous
        .get("/ords/concert/concert/authuser/v1/stats")
        .await
        .expect(200);
    anonymous
        .get("/ords/concert/soda/latest/events")
        .await
        .expect_error(401);
    fan.get("/ords/concert/soda/latest/events")
        .await
        .expect_error(403);
    anonymous
        .with_authorization(&basic("other", "other-pw"))
        .get("/ords/concert/soda/latest/events")
        .await
        .expect(200);
}

/// Every document of `collection`, in `_id` order.
async fn by_id(
    collection: &mongodb::Collection<mongodb::bson::Document>,
) -> Vec<mongodb::bson::Document> {
    let mut cursor = collection
        .find(doc! {})
        .sort(doc! {"_id": 1})
        .await
        .expect("find");
    let mut all = Vec::new();
    while cursor.advance().await.expect("advance") {
        all.push(cursor.deserialize_current().expect("document"));
    }
    all
}

fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

/// A `pipeline` handler ending in `$out` or `$merge` writes its result, as the wire's
/// `aggregate` does, and answers an empty page; the caller needs MongoDB's privileges for the
/// write (`$out`: insert and remove, `$merge`: insert and update on the handler's database)
/// beyond the handler's own privilege, an anonymous caller is refused once users exist, and a
/// target in another database is refused (403).
#[tokio::test]
async fn pipeline_handlers_write_with_out_and_merge() {
    let server = TestServer::start();
    seed_events(&server).await;
    let module = json!({
        "base_path": "/concert/reports/",
        "templates": [
            {"uri_template": "rebuild", "handlers": [
                {"method": "POST", "source_type": "pipeline",
                 "source": {"collection": "events", "pipeline": [
                     {"$match": {"year": {"$gte": ":from"}}},
                     {"$group": {"_id": "$venue", "n": {"$sum": 1}}},
                     {"$out": "venue_counts"}]}}
            ]},
            {"uri_template": "tally", "handlers": [
                {"method": "POST", "source_type": "pipeline",
                 "source": {"collection": "events", "pipeline": [
                     {"$project": {"_id": "$venue", "seen": {"$literal": true}}},
                     {"$merge": {"into": "venue_counts", "whenMatched": "merge", "whenNotMatched": "insert"}}]}}
            ]},
            {"uri_template": "elsewhere", "handlers": [
                {"method": "POST", "source_type": "pipeline",
                 "source": {"collection": "events", "pipeline": [
                     {"$out": {"db": "other", "coll": "copy"}}]}}
            ]}
        ]
    });
    let rest = Rest::new(server.rest_base());
    rest.put(&format!("{ADMIN}/reports"), &module)
        .await
        .expect(201);
    let base = "/ords/concert/concert/reports";
    let written = rest
        .post(&format!("{base}/rebuild?from=2026"), &json!({}))
        .await
        .expect(200);
    assert_eq!(written["items"], json!([]));
    let client = server.client().await;
    let counts = client
        .database("concert")
        .collection::<mongodb::bson::Document>("venue_counts");
    let mut found = by_id(&counts).await;
    assert_eq!(
        found,
        vec![doc! {"_id": "club", "n": 1}, doc! {"_id": "hall", "n": 1}]
    );
    rest.post(&format!("{base}/tally"), &json!({}))
        .await
        .expect(200);
    found = by_id(&counts).await;
    assert_eq!(
        found,
        vec![
            doc! {"_id": "club", "n": 1, "seen": true},
            doc! {"_id": "hall", "n": 1, "seen": true}
        ]
    );
    rest.post(&format!("{base}/elsewhere"), &json!({}))
        .await
        .expect_error(403);

    // With users: the caller's roles decide, as for the wire's $out.
    client
        .database("admin")
        .run_command(doc! {"createUser": "boss", "pwd": "boss-pw", "roles": ["root"]})
        .await
        .expect("createUser boss");
    let admin = server
        .client_with_uri(&format!(
            "mongodb://boss:boss-pw@127.0.0.1:{}/?directConnection=true&authSource=admin",
            server.port()
        ))
        .await;
    admin
        .database("concert")
        .run_command(doc! {"createUser": "reader", "pwd": "reader-pw", "roles": ["read"]})
        .await
        .expect("createUser reader");
    admin
        .database("concert")
        .run_command(doc! {"createUser": "writer", "pwd": "writer-pw", "roles": ["readWrite"]})
        .await
        .expect("createUser writer");
    rest.post(&format!("{base}/rebuild?from=2025"), &json!({}))
        .await
        .expect_error(401);
    rest.with_authorization(&basic("reader", "reader-pw"))
        .post(&format!("{base}/rebuild?from=2025"), &json!({}))
        .await
        .expect_error(403);
    rest.with_authorization(&basic("writer", "writer-pw"))
        .post(&format!("{base}/rebuild?from=2025"), &json!({}))
        .await
        .expect(200);
    let hall = admin
        .database("concert")
        .collection::<mongodb::bson::Document>("venue_counts")
        .find_one(doc! {"_id": "hall"})
        .await
        .expect("find")
        .expect("hall");
    assert_eq!(hall, doc! {"_id": "hall", "n": 2});
}

/// A `pipeline` handler runs as the wire's `aggregate` does: its blocking stages stream
/// under the memory limit (through temporary files past it), and a `$out` spools what the
/// stages before it make.
#[tokio::test]
async fn pipeline_handlers_stream_past_the_memory_limit() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = TestServer::start_limited(&temp);
    let client = server.client().await;
    let items = client
        .database("concert")
        .collection::<mongodb::bson::Document>("items");
    // ~300 KB: past the 40 KB limit.
    let pad = "x".repeat(120);
    let seeded = (0..2_000).map(|i| doc! {"_id": i, "g": i % 4, "v": (i * 13) % 101, "pad": &pad});
    items.insert_many(seeded).await.expect("seed");
    let module = json!({
        "base_path": "/concert/big/",
        "templates": [
            {"uri_template": "firsts", "handlers": [
                {"method": "GET", "source_type": "pipeline",
                 "source": {"collection": "items", "pipeline": [
                     {"$set": {"w": {"$multiply": ["$v", 2]}}},
                     {"$sort": {"w": -1, "_id": 1}},
                     {"$group": {"_id": "$g", "first": {"$first": "$_id"}, "n": {"$sum": 1}}},
                     {"$sort": {"_id": 1}}]}}
            ]},
            {"uri_template": "copy", "handlers": [
                {"method": "POST", "source_type": "pipeline",
                 "source": {"collection": "items", "pipeline": [
                     {"$set": {"w": {"$multiply": ["$v", 2]}}},
                     {"$out": "copy"}]}}
            ]}
        ]
    });
    let rest = Rest::new(server.rest_base());
    rest.put(&format!("{ADMIN}/big"), &module).await.expect(201);
    let base = "/ords/concert/concert/big";
    let files = common::query_metric(&client, "docgateSpill", "files").await;
    let firsts = rest.get(&format!("{base}/firsts")).await.expect(200);
    // The largest v (100) first in each group: the first _id of each g whose v is 100.
    let expected: Vec<Value> = (0..4)
        .map(|g| {
            let first = (0..2_000)
                .filter(|i| i % 4 == g && (i * 13) % 101 == 100)
                .min()
                .expect("a v of 100 in each group");
            json!({"_id": g, "first": first, "n": 500})
        })
        .collect();
    assert_eq!(firsts["items"], json!(expected));
    let sorted = common::query_metric(&client, "docgateSpill", "files").await;
    assert!(sorted > files, "the sort held ~300 KB: no temporary files");
    rest.post(&format!("{base}/copy"), &json!({}))
        .await
        .expect(200);
    let copy = client
        .database("concert")
        .collection::<mongodb::bson::Document>("copy");
    assert_eq!(
        copy.count_documents(doc! {"w": {"$gte": 0}}).await.unwrap(),
        2_000
    );
    assert!(common::query_metric(&client, "docgateSpill", "files").await > sorted);
}
