//! Two docgate instances on one PostgreSQL database, each caching metadata for 10 minutes,
//! serve each other's REST module changes — a module created, edited, unpublished and
//! deleted through one instance's admin endpoint — within moments on the other (the catalog
//! version and LISTEN/NOTIFY; only invalidation can explain it with a 10-minute cache). An
//! OAuth token issued by one instance is accepted by the other (shared signing key).
//!
//! Runs when `DOCGATE_TEST_BACKEND` is a PostgreSQL URL (as `tests/run_all.sh` sets it);
//! otherwise it returns at once with a note.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod postgres_support;
mod rest_support;

use std::time::{Duration, Instant};

use common::TestBackend;
use postgres_support::Docgate;
use rest_support::Rest;
use serde_json::{json, Value};

const LONG_CACHE: &[&str] = &[
    "--cache-metadata-enabled",
    "true",
    "--cache-metadata-timeout",
    "10m",
];

/// How long a change may take to reach the other instance (the notification's trip).
const PROPAGATION: Duration = Duration::from_secs(5);

fn module(venue: &str, status: &str) -> Value {
    json!({
        "base_path": "/shows/",
        "status": status,
        "templates": [{"uri_template": "list", "handlers": [
            {"method": "GET", "source_type": "collection_feed",
             "source": {"collection": "events", "filter": {"venue": venue}}}]}],
        "privileges": [{"name": "p", "roles": ["viewer"], "patterns": ["/secret*"]}]
    })
}

/// Polls `path` on `rest` until `accept` holds for (status, body), within `PROPAGATION`.
async fn eventually(rest: &Rest, path: &str, what: &str, accept: impl Fn(u16, &Value) -> bool) {
    let started = Instant::now();
    loop {
        let reply = rest.get(path).await;
        if accept(reply.status.as_u16(), &reply.body) {
            return;
        }
        assert!(
            started.elapsed() < PROPAGATION,
            "{what}: still {} {} after {:?}",
            reply.status,
            reply.body,
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_serve_each_others_module_changes() {
    let setting = std::env::var("DOCGATE_TEST_BACKEND").unwrap_or_default();
    if !setting.starts_with("postgres") {
        eprintln!("note: DOCGATE_TEST_BACKEND is not a PostgreSQL URL; skipping");
        return;
    }
    let scratch = tempfile::tempdir().expect("temp dir");
    let backend = TestBackend::for_new_server(scratch.path());
    let url = backend.arg();
    let a = Docgate::start("A", &url, LONG_CACHE);
    let b = Docgate::start("B", &url, LONG_CACHE);
    let (rest_a, rest_b) = (Rest::new(a.rest_base()), Rest::new(b.rest_base()));
    let soda = "/ords/db1/soda/latest/events?action=insert";
    rest_a
        .post(
            soda,
            &json!([{"_id": 1, "venue": "hall"}, {"_id": 2, "venue": "club"}]),
        )
        .await
        .expect(200);
    let list = "/ords/db1/shows/list";
    // B caches "no modules in db1" for 10 minutes.
    rest_b.get(list).await.expect_error(404);

    let admin = "/ords/db1/_/modules/shows";
    rest_a
        .put(admin, &module("hall", "published"))
        .await
        .expect(201);
    eventually(&rest_b, list, "created on A", |status, body| {
        status == 200 && body["items"][0]["_id"] == json!(1)
    })
    .await;
    rest_b
        .put(admin, &module("club", "published"))
        .await
        .expect(200);
    eventually(&rest_a, list, "edited on B", |status, body| {
        status == 200 && body["items"][0]["_id"] == json!(2)
    })
    .await;
    rest_a
        .put(admin, &module("club", "unpublished"))
        .await
        .expect(200);
    eventually(&rest_b, list, "unpublished on A", |status, _| status == 404).await;
    rest_a
        .put(admin, &module("hall", "published"))
        .await
        .expect(200);
    eventually(&rest_b, list, "republished on A", |status, _| status == 200).await;
    rest_b.delete(admin).await.expect(200);
    eventually(&rest_a, list, "deleted on B", |status, _| status == 404).await;

    // A token issued by A is good on B.
    let client = rest_a
        .post(
            "/ords/db1/_/oauth/clients",
            &json!({"name": "app", "roles": ["viewer"]}),
        )
        .await
        .expect(201);
    let token = rest_a
        .http
        .post(format!("{}/ords/db1/oauth/token", rest_a.base))
        .basic_auth(
            client["client_id"].as_str().unwrap_or_default(),
            client["client_secret"].as_str(),
        )
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .expect("token")
        .json::<Value>()
        .await
        .expect("token json");
    let bearer = format!(
        "Bearer {}",
        token["access_token"].as_str().unwrap_or_default()
    );
    rest_b
        .put(admin, &module("hall", "published"))
        .await
        .expect(201);
    let mut secret_module = module("hall", "published");
    secret_module["templates"] = json!([{"uri_template": "secret", "handlers": [
        {"method": "GET", "source_type": "collection_feed", "source": "events"}]}]);
    rest_b.put(admin, &secret_module).await.expect(200);
    rest_b.get("/ords/db1/shows/secret").await.expect_error(401);
    rest_b
        .with_authorization(&bearer)
        .get("/ords/db1/shows/secret")
        .await
        .expect(200);

    drop((a, b));
    backend.release();
}
