//! The admin listener as an operator scrapes it: `/metrics` in Prometheus's text format,
//! whose series move when the matching thing happens — a command run, a command failing
//! with its code, a REST request by route (built-in and module template) and status, a
//! metadata cache hit, a fast-path hit of password verification, a cursor opened and
//! closed, the pool's checkouts, a limit hit — and `/livez`/`/readyz` beside it. And the
//! fault test: clients dropped mid-message, mid-command and mid-cursor leave no open
//! connection, cursor or checked-out pool connection behind, as `/metrics` shows.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod raw_wire;
mod rest_support;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::TestServer;
use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};
use rest_support::Rest;
use serde_json::json;

/// The text of `GET /metrics` on the server's admin listener.
async fn scrape(server: &TestServer) -> String {
    let response = reqwest::get(format!("{}/metrics", server.admin_base()))
        .await
        .expect("GET /metrics");
    assert_eq!(response.status(), 200);
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    response.text().await.expect("metrics text")
}

/// The value of `series` (name and labels exactly as exposed) in `text`; 0 when absent
/// (a labelled series appears once it first moves).
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|number| number.trim().parse().expect("a number"))
        .unwrap_or(0.0)
}

/// Scrapes until `done` holds for the exposition (or 30 s pass), and answers the last one.
async fn scrape_until(server: &TestServer, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = scrape(server).await;
        if done(&text) || Instant::now() > deadline {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const FIND_OK: &str = r#"docgate_commands_total{command="find",outcome="ok"}"#;
const INSERT_OK: &str = r#"docgate_commands_total{command="insert",outcome="ok"}"#;
const RENAME_ERROR: &str = r#"docgate_commands_total{command="renameCollection",outcome="error"}"#;
const NAMESPACE_NOT_FOUND: &str =
    r#"docgate_command_errors_total{code="26",code_name="NamespaceNotFound"}"#;
const CATALOG_HIT: &str = r#"docgate_metadata_cache_lookups_total{cache="catalog",result="hit"}"#;
const CURSORS_OPEN: &str = "docgate_cursors_open";
const CURSORS_OPENED: &str = "docgate_cursors_opened_total";
const POOL_CHECKOUTS: &str = r#"docgate_pool_checkouts_total{backend="#;

/// The pool series of the server's backend, e.g. `docgate_pool_connections_in_use{backend="sqlite"}`.
fn pool_series(server: &TestServer, name: &str) -> String {
    let backend = match server.backend() {
        common::TestBackend::Sqlite { .. } => "sqlite",
        common::TestBackend::Postgres { .. } => "postgres",
        common::TestBackend::Oracle { .. } => "oracle",
    };
    format!("docgate_pool_{name}{{backend=\"{backend}\"}}")
}

#[tokio::test]
async fn series_move_when_the_matching_thing_happens() {
    let server = TestServer::start();
    let before = scrape(&server).await;
    let client = server.client().await;
    let items = client.database("shop").collection::<Document>("items");

    // A command run, by name and outcome.
    items
        .insert_many((0..10).map(|i| doc! {"_id": i, "n": i}))
        .await
        .expect("insert");
    let after_insert = scrape(&server).await;
    assert!(value(&after_insert, INSERT_OK) >= value(&before, INSERT_OK) + 1.0);
    assert!(
        value(
            &after_insert,
            r#"docgate_command_duration_seconds_count{command="insert"}"#
        ) >= 1.0
    );

    // A metadata cache hit: the collection's catalog entry is served from the cache.
    items.find_one(doc! {"_id": 1}).await.expect("find");
    let hits = value(&scrape(&server).await, CATALOG_HIT);
    items.find_one(doc! {"_id": 2}).await.expect("find");
    let text = scrape(&server).await;
    assert!(value(&text, CATALOG_HIT) > hits, "{text}");
    assert!(value(&text, FIND_OK) >= 2.0);
    assert!(value(&text, &pool_series(&server, "checkouts_total")) > 0.0);
    assert!(text.contains(POOL_CHECKOUTS));
    assert!(value(&text, r#"docgate_mongo_opcounters_total{type="insert"}"#) >= 10.0);
    assert!(value(&text, r#"docgate_connections{listener="mongo"}"#) >= 1.0);

    // A failing command, by its code.
    let error = client
        .database("admin")
        .run_command(doc! {"renameCollection": "shop.nothing", "to": "shop.other"})
        .await
        .expect_err("renaming a collection that does not exist fails");
    assert!(error.to_string().contains("26") || error.to_string().contains("NamespaceNotFound"));
    let text = scrape(&server).await;
    assert!(value(&text, RENAME_ERROR) >= 1.0, "{text}");
    assert!(value(&text, NAMESPACE_NOT_FOUND) >= 1.0, "{text}");

    // A cursor opened, then closed when its last batch is read.
    let opened = value(&text, CURSORS_OPENED);
    let mut cursor = items.find(doc! {}).batch_size(3).await.expect("find");
    let first = cursor.try_next().await.expect("first").expect("a document");
    assert_eq!(first.get_i32("_id").ok(), Some(0));
    let text = scrape(&server).await;
    assert_eq!(value(&text, CURSORS_OPENED), opened + 1.0, "{text}");
    assert_eq!(value(&text, CURSORS_OPEN), 1.0, "{text}");
    // serverStatus reads the same counters.
    let status = client
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .expect("serverStatus");
    let open = status
        .get_document("metrics")
        .and_then(|m| m.get_document("cursor"))
        .and_then(|c| c.get_document("open"))
        .and_then(|o| o.get_i64("total"))
        .expect("metrics.cursor.open.total");
    assert_eq!(open, 1, "{status}");
    let checkouts = status
        .get_document("docgate")
        .and_then(|d| d.get_document("pool"))
        .and_then(|p| p.get_i64("totalCheckouts"))
        .expect("docgate.pool.totalCheckouts");
    assert!(
        checkouts as f64 >= value(&text, &pool_series(&server, "checkouts_total")),
        "{status}"
    );
    let rest_of_them: Vec<Document> = cursor.try_collect().await.expect("the rest");
    assert_eq!(rest_of_them.len(), 9);
    let text = scrape(&server).await;
    assert_eq!(value(&text, CURSORS_OPEN), 0.0, "{text}");
    assert!(
        value(
            &text,
            r#"docgate_commands_total{command="getMore",outcome="ok"}"#
        ) >= 1.0
    );

    // REST requests by route and status: a built-in route, and a module's template.
    let rest = Rest::new(server.rest_base());
    rest.get("/ords/shop/soda/latest/items").await.expect(200);
    rest.get("/ords/shop/soda/latest/items/nope")
        .await
        .expect_error(404);
    rest.put(
        "/ords/shop/_/modules/catalog",
        &json!({"base_path": "/catalog/v1/", "templates": [
            {"uri_template": "items/:id", "handlers": [
                {"method": "GET", "source_type": "collection_item", "source": "items"}]}]}),
    )
    .await
    .expect(201);
    rest.get("/ords/shop/catalog/v1/items/3").await;
    let text = scrape(&server).await;
    let route = |route: &str, method: &str, status: u16| {
        format!(
            "docgate_rest_requests_total{{module=\"\",route=\"{route}\",method=\"{method}\",status=\"{status}\"}}"
        )
    };
    assert_eq!(
        value(&text, &route("/ords/{db}/soda/latest/{coll}", "GET", 200)),
        1.0,
        "{text}"
    );
    assert_eq!(
        value(
            &text,
            &route("/ords/{db}/soda/latest/{coll}/{id}", "GET", 404)
        ),
        1.0,
        "{text}"
    );
    let module_series =
        r#"docgate_rest_requests_total{module="catalog",route="items/:id",method="GET","#;
    assert!(text.contains(module_series), "{text}");
    assert!(
        value(
            &text,
            r#"docgate_connections_opened_total{listener="rest"}"#
        ) >= 1.0
    );

    // The fast verification path: the first Basic request runs PBKDF2, the next one is a
    // hit of the cache.
    client
        .database("admin")
        .run_command(doc! {"createUser": "ops", "pwd": "ops-secret", "roles": ["root"]})
        .await
        .expect("createUser");
    let text = scrape(&server).await;
    let (hits, runs) = (
        value(
            &text,
            r#"docgate_auth_fast_path_lookups_total{result="hit"}"#,
        ),
        value(&text, "docgate_auth_pbkdf2_runs_total"),
    );
    let basic = Rest::new(server.rest_base()).with_authorization("Basic b3BzOm9wcy1zZWNyZXQ=");
    basic.get("/ords/shop/soda/latest/items").await.expect(200);
    basic.get("/ords/shop/soda/latest/items").await.expect(200);
    let text = scrape(&server).await;
    assert_eq!(
        value(&text, "docgate_auth_pbkdf2_runs_total"),
        runs + 1.0,
        "{text}"
    );
    assert_eq!(
        value(
            &text,
            r#"docgate_auth_fast_path_lookups_total{result="hit"}"#
        ),
        hits + 1.0,
        "{text}"
    );
    assert!(
        value(
            &text,
            r#"docgate_catalog_invalidations_total{source="local"}"#
        ) >= 1.0
    );

    // The limits as configured, and store statement times.
    assert_eq!(
        value(&text, r#"docgate_limit{limit="max_document_bytes"}"#),
        16.0 * 1024.0 * 1024.0
    );
    assert_eq!(
        value(&text, r#"docgate_limit{limit="rest_max_json_depth"}"#),
        100.0
    );
    assert!(value(&text, "docgate_store_statement_duration_seconds_count") > 0.0);
}

#[tokio::test]
async fn health_probes_are_served_on_the_admin_listener_too() {
    let server = TestServer::start();
    for base in [server.admin_base(), server.rest_base()] {
        let live = reqwest::get(format!("{base}/livez")).await.expect("livez");
        assert_eq!(live.status(), 200);
        let ready = reqwest::get(format!("{base}/readyz"))
            .await
            .expect("readyz");
        assert_eq!(ready.status(), 200);
        let body: serde_json::Value = ready.json().await.expect("json");
        assert_eq!(body["status"], "ok");
    }
    let missing = reqwest::get(format!("{}/nothing", server.admin_base()))
        .await
        .expect("get");
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn limits_are_settings_exported_as_gauges_and_count_their_hits() {
    let server = TestServer::start_with_args(&[
        "--rest-max-json-depth",
        "5",
        "--rest-max-body-bytes",
        "1000",
        "--max-document-bytes",
        "4096",
        "--max-nesting-depth",
        "10",
        "--max-message-bytes",
        "70000",
        "--max-open-cursors",
        "1",
    ]);
    let rest = Rest::new(server.rest_base());
    rest.put_empty("/ords/shop/soda/latest/things")
        .await
        .expect(201);
    let deep = "[".repeat(6) + &"]".repeat(6);
    let message = rest
        .post_raw(
            "/ords/shop/soda/latest/things",
            &format!("{{\"a\":{deep}}}"),
        )
        .await
        .expect_error(400);
    assert!(message.contains("deeper than 5"), "{message}");
    let big = json!({"a": "x".repeat(2000)});
    rest.post("/ords/shop/soda/latest/things", &big)
        .await
        .expect_error(413);

    // Over the wire: drivers are told the limits, and MongoDB's errors answer past them.
    let client = server.client().await;
    let hello = client
        .database("admin")
        .run_command(doc! {"hello": 1})
        .await
        .expect("hello");
    assert_eq!(
        hello.get_i32("maxBsonObjectSize").ok(),
        Some(4096),
        "{hello}"
    );
    assert_eq!(
        hello.get_i32("maxMessageSizeBytes").ok(),
        Some(70000),
        "{hello}"
    );
    let things = client.database("shop").collection::<Document>("things");
    let mut deep_document = doc! {"leaf": 1};
    for _ in 0..10 {
        deep_document = doc! {"d": deep_document};
    }
    let error = things
        .insert_one(deep_document)
        .await
        .expect_err("too deep");
    assert!(
        error.to_string().contains("nested object depth: 10"),
        "{error}"
    );
    // The driver itself refuses a document over the announced size; the server does too.
    let error = things
        .insert_one(doc! {"pad": "x".repeat(5000)})
        .await
        .expect_err("too large");
    assert!(error.to_string().contains("4096 bytes"), "{error}");
    let mut stream = raw_wire::connect(&server);
    let reply = raw_wire::command(
        &mut stream,
        5,
        &doc! {"insert": "things", "documents": [{"pad": "x".repeat(5000)}], "$db": "shop"},
    );
    let write_errors = reply.body.get_array("writeErrors").expect("writeErrors");
    let first = write_errors[0].as_document().expect("a write error");
    assert_eq!(first.get_i32("code").ok(), Some(10334), "{}", reply.body);
    things
        .insert_one(doc! {"pad": "x".repeat(3000)})
        .await
        .expect("fits");
    things
        .insert_many([doc! {"n": 1}, doc! {"n": 2}])
        .await
        .expect("insert");

    // One cursor may be open; a second is refused with 146 ExceededMemoryLimit.
    let held = things.find(doc! {}).batch_size(1).await.expect("a cursor");
    let error = things
        .find(doc! {})
        .batch_size(1)
        .await
        .expect_err("a second cursor");
    assert!(
        error.to_string().contains("too many open cursors"),
        "{error}"
    );
    drop(held);

    // A message over --max-message-bytes closes the connection before it is read.
    let mut stream = raw_wire::connect(&server);
    let mut oversized = raw_wire::header(80_000, 9, 0, raw_wire::OP_MSG);
    oversized.extend_from_slice(&[0u8; 64]);
    raw_wire::send(&mut stream, &oversized);
    raw_wire::assert_error_or_close(&mut stream, "a message over --max-message-bytes");

    let text = scrape_until(&server, |text| {
        value(
            text,
            r#"docgate_limit_hits_total{limit="max_message_bytes"}"#,
        ) >= 1.0
    })
    .await;
    for (limit, configured) in [
        ("rest_max_json_depth", 5.0),
        ("rest_max_body_bytes", 1000.0),
        ("max_document_bytes", 4096.0),
        ("max_nesting_depth", 10.0),
        ("max_message_bytes", 70000.0),
        ("max_open_cursors", 1.0),
    ] {
        assert_eq!(
            value(&text, &format!("docgate_limit{{limit=\"{limit}\"}}")),
            configured,
            "{text}"
        );
        assert_eq!(
            value(
                &text,
                &format!("docgate_limit_hits_total{{limit=\"{limit}\"}}")
            ),
            1.0,
            "{limit}: {text}"
        );
    }
}

#[tokio::test]
async fn dropped_clients_leave_no_cursors_or_pool_connections_behind() {
    let server = TestServer::start_with_args(&["--cursor-timeout-ms", "1000"]);
    let client = server.client().await;
    let items = client.database("shop").collection::<Document>("items");
    items
        .insert_many((0..50).map(|i| doc! {"_id": i, "pad": "x".repeat(100)}))
        .await
        .expect("insert");
    client.shutdown().await;

    // Mid-cursor: a raw client opens a cursor with a small first batch, then vanishes
    // without killCursors.
    let mut stream = raw_wire::connect(&server);
    let reply = raw_wire::command(
        &mut stream,
        1,
        &doc! {"find": "items", "batchSize": 2, "$db": "shop"},
    );
    assert_eq!(raw_wire::ok_of(&reply.body), 1.0, "{}", reply.body);
    let text = scrape(&server).await;
    assert_eq!(value(&text, CURSORS_OPEN), 1.0, "{text}");
    drop(stream);

    // Mid-transaction: a raw client starts a multi-document transaction (which holds a
    // pooled connection), writes in it, then vanishes without committing.
    let mut stream = raw_wire::connect(&server);
    let lsid = doc! {"id": mongodb::bson::Binary {
        subtype: mongodb::bson::spec::BinarySubtype::Uuid,
        bytes: vec![7u8; 16],
    }};
    let reply = raw_wire::command(
        &mut stream,
        4,
        &doc! {"insert": "items", "documents": [{"_id": "in-transaction"}], "lsid": lsid,
        "txnNumber": 1_i64, "startTransaction": true, "autocommit": false, "$db": "shop"},
    );
    assert_eq!(raw_wire::ok_of(&reply.body), 1.0, "{}", reply.body);
    let text = scrape(&server).await;
    assert_eq!(value(&text, "docgate_transactions_open"), 1.0, "{text}");
    assert!(
        value(&text, &pool_series(&server, "connections_in_use")) >= 1.0,
        "{text}"
    );
    drop(stream);

    // Mid-message: a header announcing 100 kB, a few bytes of it, then gone.
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
    let mut partial = raw_wire::header(100_000, 2, 0, raw_wire::OP_MSG);
    partial.extend_from_slice(&[0u8; 64]);
    stream.write_all(&partial).expect("write");
    drop(stream);

    // Mid-command: a large insert sent, the connection closed before its reply.
    let mut stream = raw_wire::connect(&server);
    let documents: Vec<Document> = (1000..21_000).map(|i| doc! {"_id": i, "v": i}).collect();
    let sections = [
        raw_wire::kind0(&doc! {"insert": "items", "$db": "shop"}),
        raw_wire::kind1("documents", &documents),
    ]
    .concat();
    raw_wire::send(&mut stream, &raw_wire::op_msg_sections(3, 0, &sections));
    drop(stream);

    // Everything is given back: no connection stays open, the cursor is closed by its
    // timeout, no pooled connection stays checked out.
    let in_use = pool_series(&server, "connections_in_use");
    let text = scrape_until(&server, |text| {
        value(text, r#"docgate_connections{listener="mongo"}"#) == 0.0
            && value(text, CURSORS_OPEN) == 0.0
            && value(text, "docgate_transactions_open") == 0.0
            && value(text, &in_use) == 0.0
    })
    .await;
    assert_eq!(
        value(&text, r#"docgate_connections{listener="mongo"}"#),
        0.0,
        "{text}"
    );
    assert_eq!(value(&text, CURSORS_OPEN), 0.0, "{text}");
    assert!(
        value(&text, "docgate_cursors_timed_out_total") >= 1.0,
        "{text}"
    );
    assert_eq!(value(&text, &in_use), 0.0, "{text}");
    assert_eq!(value(&text, "docgate_transactions_open"), 0.0, "{text}");
    assert!(
        value(&text, r#"docgate_transactions_total{outcome="aborted"}"#) >= 1.0,
        "{text}"
    );
    assert_eq!(
        value(&text, &pool_series(&server, "waiting")),
        0.0,
        "{text}"
    );

    // And the server still serves.
    raw_wire::assert_still_serving(&server, "the dropped clients");
}

#[test]
fn the_admin_listener_logs_its_line_and_can_be_turned_off() {
    let mut server = TestServer::start();
    let log = server.stderr_log();
    let line = log
        .lines()
        .find(|line| line.contains("admin listening"))
        .unwrap_or_else(|| panic!("no admin listening line in\n{log}"));
    let port = server
        .admin_base()
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(line.contains(&format!("127.0.0.1:{port}")), "{line}");
    assert!(
        line.contains("/metrics") && line.contains("auth=none"),
        "{line}"
    );
    server.kill();

    let server = TestServer::start_with_args(&["--admin-listen", "off"]);
    let log = server.stderr_log();
    assert!(
        log.contains("admin listener off (--admin-listen off)"),
        "{log}"
    );
    assert!(!log.contains("admin listening"), "{log}");
}

#[test]
fn a_taken_admin_port_stops_the_start_naming_the_flag() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = taken.local_addr().expect("address");
    let data = tempfile::tempdir().expect("temp dir");
    let output = common::launcher::docgate_command()
        .arg("--listen")
        .arg(format!("127.0.0.1:{}", common::launcher::free_port()))
        .args([
            "--rest-listen",
            "off",
            "--admin-listen",
            &address.to_string(),
        ])
        .arg("--backend")
        .arg(format!("sqlite:{}", data.path().display()))
        .output()
        .expect("run docgate");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--admin-listen"), "{stderr}");
}
