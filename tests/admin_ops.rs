//! The admin commands people type first, through the Rust `mongodb` driver against a real
//! `docgate` (SQLite, or PostgreSQL with `DOCGATE_TEST_BACKEND`): `currentOp` listing a long
//! aggregate with its namespace, command and SQL, `killOp` ending it with 11601, the
//! profiler's levels, `slowms` and filter with `system.profile` read by `find`, `count` and
//! `aggregate`, `getLog` with the redacted "Slow query" line, `fsync` and its refusals, and
//! passwords shown nowhere.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;

use std::time::{Duration, Instant};

use common::TestServer;
use driver_support::{assert_ok, expect_command_error, num, server_code};
use mongodb::bson::{doc, Bson, Document};

/// A `$match` that costs a lot per document: a sum over 50,000 numbers.
fn expensive_match() -> Document {
    doc! {"$match": {"$expr": {"$gte": [
        {"$reduce": {"input": {"$range": [0, 50_000]}, "initialValue": 0, "in": {"$add": ["$$value", "$$this"]}}},
        0
    ]}}}
}

/// `inprog` of `currentOp` with `filter`.
async fn in_progress(admin: &mongodb::Database, filter: Document) -> Vec<Document> {
    let mut command = doc! {"currentOp": 1};
    command.extend(filter);
    let reply = admin.run_command(command).await.expect("currentOp");
    reply
        .get_array("inprog")
        .expect("inprog")
        .iter()
        .filter_map(|entry| entry.as_document().cloned())
        .collect()
}

/// Starts the slow aggregate on `coll` (seeded with 3000 documents).
fn start_slow_aggregate(
    coll: &mongodb::Collection<Document>,
) -> tokio::task::JoinHandle<mongodb::error::Result<()>> {
    let coll = coll.clone();
    tokio::spawn(async move {
        let pipeline = vec![expensive_match(), doc! {"$count": "n"}];
        coll.aggregate(pipeline).await.map(|_| ())
    })
}

async fn seed(coll: &mongodb::Collection<Document>) {
    let docs: Vec<Document> = (0..3000).map(|i| doc! {"_id": i, "x": i}).collect();
    coll.insert_many(docs).await.expect("seed");
}

/// The `inprog` entry of the operation on `ns`, once it has run SQL (as `admin` lists it
/// with `filter`).
async fn wait_listed(admin: &mongodb::Database, ns: &str, filter: Document) -> Document {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut wanted = filter.clone();
        wanted.insert("ns", ns);
        let listed = in_progress(admin, wanted).await;
        if let Some(entry) = listed.into_iter().find(|entry| {
            entry
                .get_document("docgate")
                .is_ok_and(|d| d.get_str("sql").is_ok())
        }) {
            return entry;
        }
        assert!(Instant::now() < deadline, "{ns} never showed with its SQL");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The error code a killed aggregate ended with.
async fn ended_with(running: tokio::task::JoinHandle<mongodb::error::Result<()>>) -> Option<i32> {
    let result = tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("the killed aggregate ends")
        .expect("task");
    server_code(&result.expect_err("a killed aggregate fails"))
}

#[tokio::test]
async fn a_long_aggregate_is_listed_with_its_sql_and_killop_ends_it() {
    let server = TestServer::start();
    let client = server.client().await;
    let coll = client.database("ops_kill").collection::<Document>("slow");
    seed(&coll).await;
    let running = start_slow_aggregate(&coll);
    let admin = client.database("admin");
    let entry = wait_listed(&admin, "ops_kill.slow", doc! {}).await;
    assert!(
        !running.is_finished(),
        "the aggregate ended before it was killed"
    );
    assert_eq!(entry.get_str("op").ok(), Some("command"), "{entry}");
    assert_eq!(entry.get_bool("active").ok(), Some(true), "{entry}");
    assert_eq!(entry.get_bool("killPending").ok(), Some(false), "{entry}");
    let command = entry.get_document("command").expect("command");
    assert_eq!(command.get_str("aggregate").ok(), Some("slow"), "{entry}");
    assert!(command.get_array("pipeline").is_ok(), "{entry}");
    let sql = entry
        .get_document("docgate")
        .unwrap()
        .get_str("sql")
        .unwrap();
    assert!(sql.to_uppercase().contains("SELECT"), "{sql}");
    assert!(
        !sql.contains("20000"),
        "values are bound, not spelled: {sql}"
    );
    assert!(num(&entry, "microsecs_running") > 0.0, "{entry}");
    assert!(
        entry
            .get_str("client")
            .is_ok_and(|c| c.starts_with("127.0.0.1:")),
        "{entry}"
    );
    let opid = entry.get("opid").cloned().expect("opid");

    let killed = admin
        .run_command(doc! {"killOp": 1, "op": opid.clone()})
        .await
        .expect("killOp");
    assert_eq!(killed.get_str("info").ok(), Some("attempting to kill op"));
    assert_eq!(ended_with(running).await, Some(11601));
    assert!(
        in_progress(&admin, doc! {"opid": opid.clone()})
            .await
            .is_empty(),
        "a finished operation is no longer listed"
    );
    // Killing it again (or any unknown opid) answers as MongoDB does.
    let again = admin
        .run_command(doc! {"killOp": 1, "op": opid})
        .await
        .expect("killOp of a finished op");
    assert_ok(&again);
    // The connection and the server carry on.
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 3000);
}

#[tokio::test]
async fn current_op_and_kill_op_answer_mongodb_errors() {
    let server = TestServer::start();
    let client = server.client().await;
    let admin = client.database("admin");
    // currentOp lists itself, with the generic arguments not taken as a filter.
    let own = in_progress(&admin, doc! {"command.currentOp": {"$exists": true}}).await;
    assert_eq!(own.len(), 1, "{own:?}");
    assert_eq!(own[0].get_str("ns").ok(), Some("admin.$cmd"));
    let db = client.database("ops_errors");
    expect_command_error(
        db.run_command(doc! {"currentOp": 1}).await,
        13,
        "Unauthorized",
    );
    expect_command_error(
        db.run_command(doc! {"killOp": 1, "op": 1}).await,
        13,
        "Unauthorized",
    );
    expect_command_error(
        admin.run_command(doc! {"currentOp": 1, "$all": true}).await,
        115,
        "CommandNotSupported",
    );
    expect_command_error(admin.run_command(doc! {"killOp": 1}).await, 2, "BadValue");
    expect_command_error(
        admin.run_command(doc! {"killOp": 1, "op": "x"}).await,
        14,
        "TypeMismatch",
    );
}

#[tokio::test]
async fn the_profiler_records_by_level_and_system_profile_reads_with_find() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("ops_profile");
    let coll = db.collection::<Document>("items");
    coll.insert_many((0..5).map(|i| doc! {"_id": i, "x": i}))
        .await
        .expect("seed");
    let profile = db.collection::<Document>("system.profile");

    let status = db.run_command(doc! {"profile": -1}).await.expect("read");
    assert_eq!(
        (
            num(&status, "was"),
            num(&status, "slowms"),
            num(&status, "sampleRate")
        ),
        (0.0, 100.0, 1.0),
        "{status}"
    );
    let was = db.run_command(doc! {"profile": 2}).await.expect("level 2");
    assert_eq!(num(&was, "was"), 0.0);
    coll.find_one(doc! {"x": 3}).await.expect("find");
    let entries = driver_support::collect(
        profile
            .find(doc! {"op": "query", "ns": "ops_profile.items"})
            .await
            .expect("find system.profile"),
    )
    .await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    let command = entry.get_document("command").expect("command");
    assert_eq!(command.get_str("find").ok(), Some("items"), "{entry}");
    assert_eq!(
        command.get_document("filter").ok(),
        Some(&doc! {"x": 3}),
        "{entry}"
    );
    assert_eq!(num(entry, "nreturned"), 1.0, "{entry}");
    assert!(entry.get_datetime("ts").is_ok(), "{entry}");
    assert!(entry.get("millis").is_some(), "{entry}");
    assert!(
        entry
            .get_document("docgate")
            .unwrap()
            .get_str("sql")
            .is_ok(),
        "{entry}"
    );
    // Newest first with $natural, and count and aggregate read it too.
    let newest = profile
        .find_one(doc! {})
        .sort(doc! {"$natural": -1})
        .await
        .expect("find")
        .expect("an entry");
    assert_eq!(newest.get_str("op").ok(), Some("query"), "{newest}");
    assert!(
        profile
            .count_documents(doc! {"op": "insert"})
            .await
            .unwrap()
            == 0
    );
    let grouped = driver_support::collect(
        profile
            .aggregate(vec![doc! {"$group": {"_id": "$op", "n": {"$sum": 1}}}])
            .await
            .expect("aggregate"),
    )
    .await;
    assert!(
        grouped
            .iter()
            .any(|g| g.get_str("_id").ok() == Some("query")),
        "{grouped:?}"
    );

    // Level 1: only what is slower than slowms.
    let was = db
        .run_command(doc! {"profile": 1, "slowms": 100_000})
        .await
        .expect("level 1");
    assert_eq!((num(&was, "was"), num(&was, "slowms")), (2.0, 100.0));
    let before = profile.count_documents(doc! {}).await.unwrap();
    coll.find_one(doc! {"x": 4}).await.expect("fast find");
    assert_eq!(profile.count_documents(doc! {}).await.unwrap(), before);
    db.run_command(doc! {"profile": 1, "slowms": 0})
        .await
        .expect("slowms 0");
    coll.find_one(doc! {"x": 2})
        .await
        .expect("slow enough find");
    assert_eq!(
        profile
            .count_documents(doc! {"command.filter.x": 2})
            .await
            .unwrap(),
        1
    );
    // A filter decides instead of slowms.
    let was = db
        .run_command(doc! {"profile": 1, "slowms": 100_000, "filter": {"op": "insert"}})
        .await
        .expect("filter");
    assert!(was.get("filter").is_none(), "{was}");
    coll.find_one(doc! {"x": 1}).await.expect("find");
    coll.insert_one(doc! {"_id": 100}).await.expect("insert");
    assert_eq!(
        profile
            .count_documents(doc! {"command.filter.x": 1})
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        profile
            .count_documents(doc! {"op": "insert"})
            .await
            .unwrap(),
        1
    );
    let was = db
        .run_command(doc! {"profile": 0, "filter": "unset"})
        .await
        .expect("unset");
    assert_eq!(
        was.get_document("filter").ok(),
        Some(&doc! {"op": "insert"}),
        "{was}"
    );
    assert!(was.get_str("note").is_ok(), "{was}");
    db.run_command(doc! {"profile": 0, "slowms": 100})
        .await
        .unwrap();

    expect_command_error(db.run_command(doc! {"profile": 3}).await, 2, "BadValue");
    expect_command_error(
        db.run_command(doc! {"profile": 1, "sampleRate": 1.5}).await,
        2,
        "BadValue",
    );
    expect_command_error(
        db.run_command(doc! {"profile": 1, "frequency": 2}).await,
        40415,
        "Location40415",
    );
}

#[tokio::test]
async fn get_log_has_the_slow_query_line_with_values_redacted() {
    let server = TestServer::start_with_args(&["--slow-op-threshold", "0ms"]);
    let client = server.client().await;
    let coll = client.database("ops_log").collection::<Document>("c");
    coll.insert_one(doc! {"name": "visible-in-data"})
        .await
        .expect("insert");
    coll.find_one(doc! {"name": "secret-filter-value"})
        .await
        .expect("find");
    let admin = client.database("admin");
    let log = admin
        .run_command(doc! {"getLog": "global"})
        .await
        .expect("getLog");
    assert!(num(&log, "totalLinesWritten") >= 1.0, "{log}");
    let lines: Vec<String> = log
        .get_array("log")
        .expect("log")
        .iter()
        .filter_map(|line| line.as_str().map(str::to_string))
        .collect();
    for line in &lines {
        let parsed: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        for field in ["t", "s", "c", "ctx", "msg"] {
            assert!(parsed.get(field).is_some(), "{field} in {line}");
        }
        assert!(!line.contains("secret-filter-value"), "{line}");
    }
    let slow: Vec<serde_json::Value> = lines
        .iter()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|line| line["msg"] == "Slow query" && line["attr"]["ns"] == "ops_log.c")
        .collect();
    let find = slow
        .iter()
        .find(|line| line["attr"]["command"]["find"].is_string())
        .unwrap_or_else(|| panic!("a slow find line in {lines:?}"));
    assert_eq!(find["attr"]["command"]["find"], "###", "{find}");
    assert_eq!(find["attr"]["command"]["filter"]["name"], "###", "{find}");
    assert!(
        find["attr"]["sql"]
            .as_str()
            .is_some_and(|sql| !sql.is_empty()),
        "{find}"
    );
    assert!(find["attr"]["durationMillis"].is_number(), "{find}");
    // The request id: the connection and the operation.
    assert!(
        find["ctx"]
            .as_str()
            .is_some_and(|ctx| ctx.starts_with("conn")),
        "{find}"
    );
    assert!(find["attr"]["opid"].is_number(), "{find}");

    let names = admin
        .run_command(doc! {"getLog": "*"})
        .await
        .expect("names");
    assert_eq!(
        names.get_array("names").unwrap(),
        &vec![Bson::from("global"), Bson::from("startupWarnings")]
    );
    let warnings = admin
        .run_command(doc! {"getLog": "startupWarnings"})
        .await
        .expect("startupWarnings");
    assert!(warnings.get_array("log").is_ok(), "{warnings}");
}

#[tokio::test]
async fn passwords_show_nowhere() {
    let server = TestServer::start_with_args(&["--auth", "off"]);
    let client = server.client().await;
    let db = client.database("ops_secrets");
    db.run_command(doc! {"profile": 2}).await.expect("profile");
    db.run_command(doc! {"createUser": "app", "pwd": "hunter2-password", "roles": []})
        .await
        .expect("createUser");
    let entry = db
        .collection::<Document>("system.profile")
        .find_one(doc! {"command.createUser": "app"})
        .await
        .expect("find")
        .expect("the createUser entry");
    assert_eq!(
        entry.get_document("command").unwrap().get_str("pwd").ok(),
        Some("xxx"),
        "{entry}"
    );
    let log = client
        .database("admin")
        .run_command(doc! {"getLog": "global"})
        .await
        .expect("getLog");
    assert!(!log.to_string().contains("hunter2-password"));
    assert!(!server.stderr_log().contains("hunter2-password"));
}

#[tokio::test]
async fn fsync_checkpoints_and_refuses_lock() {
    let server = TestServer::start();
    let client = server.client().await;
    client
        .database("ops_fsync")
        .collection::<Document>("c")
        .insert_one(doc! {"x": 1})
        .await
        .expect("insert");
    let admin = client.database("admin");
    let reply = admin.run_command(doc! {"fsync": 1}).await.expect("fsync");
    assert_eq!(num(&reply, "numFiles"), 1.0, "{reply}");
    expect_command_error(
        admin.run_command(doc! {"fsync": 1, "lock": true}).await,
        115,
        "CommandNotSupported",
    );
    expect_command_error(
        admin.run_command(doc! {"fsyncUnlock": 1}).await,
        20,
        "IllegalOperation",
    );
    expect_command_error(
        client
            .database("ops_fsync")
            .run_command(doc! {"fsync": 1})
            .await,
        13,
        "Unauthorized",
    );
}

async fn login(server: &TestServer, user: &str, password: &str) -> mongodb::Client {
    let uri = format!(
        "mongodb://{user}:{password}@127.0.0.1:{}/?directConnection=true&authSource=admin&serverSelectionTimeoutMS=10000",
        server.port()
    );
    server.client_with_uri(&uri).await
}

#[tokio::test]
async fn privileges_decide_whose_operations_one_sees_and_kills() {
    let server = TestServer::start();
    let open = server.client().await;
    open.database("admin")
        .run_command(doc! {"createUser": "root", "pwd": "rootpw", "roles": ["root"]})
        .await
        .expect("createUser root");
    let root = login(&server, "root", "rootpw").await;
    let admin = root.database("admin");
    for (user, roles) in [
        ("reader", vec![doc! {"role": "read", "db": "ops_priv"}]),
        (
            "monitor",
            vec![doc! {"role": "clusterMonitor", "db": "admin"}],
        ),
    ] {
        admin
            .run_command(doc! {"createUser": user, "pwd": "pw", "roles": roles})
            .await
            .expect("createUser");
    }
    seed(&root.database("ops_priv").collection("slow")).await;
    let reader = login(&server, "reader", "pw").await;
    let reader_admin = reader.database("admin");
    let monitor = login(&server, "monitor", "pw").await;

    // Without inprog only one's own operations, and only when asking for them.
    expect_command_error(
        reader_admin.run_command(doc! {"currentOp": 1}).await,
        13,
        "Unauthorized",
    );
    let own = in_progress(&reader_admin, doc! {"$ownOps": true}).await;
    assert!(!own.is_empty(), "its own currentOp is listed");
    for entry in &own {
        let users = entry.get_array("effectiveUsers").expect("effectiveUsers");
        assert_eq!(users.len(), 1, "{entry}");
        assert_eq!(
            users[0].as_document().unwrap().get_str("user").ok(),
            Some("reader")
        );
    }

    // The reader's long aggregate: seen by the monitor, killed neither by the monitor (no
    // killop) but by the reader itself on another connection.
    let running = start_slow_aggregate(&reader.database("ops_priv").collection("slow"));
    let entry = wait_listed(&monitor.database("admin"), "ops_priv.slow", doc! {}).await;
    let opid = entry.get("opid").cloned().unwrap();
    expect_command_error(
        monitor
            .database("admin")
            .run_command(doc! {"killOp": 1, "op": opid.clone()})
            .await,
        13,
        "Unauthorized",
    );
    let reader_again = login(&server, "reader", "pw").await;
    reader_again
        .database("admin")
        .run_command(doc! {"killOp": 1, "op": opid})
        .await
        .expect("killOp of one's own operation");
    assert_eq!(ended_with(running).await, Some(11601));

    // root's operation: the reader may neither see nor kill it; root may.
    let running = start_slow_aggregate(&root.database("ops_priv").collection("slow"));
    let entry = wait_listed(&admin, "ops_priv.slow", doc! {}).await;
    let opid = entry.get("opid").cloned().unwrap();
    let own = in_progress(&reader_admin, doc! {"$ownOps": true, "ns": "ops_priv.slow"}).await;
    assert!(own.is_empty(), "{own:?}");
    expect_command_error(
        reader_admin
            .run_command(doc! {"killOp": 1, "op": opid.clone()})
            .await,
        13,
        "Unauthorized",
    );
    admin
        .run_command(doc! {"killOp": 1, "op": opid})
        .await
        .expect("root kills");
    assert_eq!(ended_with(running).await, Some(11601));
}

#[tokio::test]
async fn the_current_op_stage_lists_operations_and_idle_transactions() {
    let server = TestServer::start();
    let client = server.client().await;
    let admin = client.database("admin");
    let coll = client.database("ops_stage").collection::<Document>("c");
    coll.insert_one(doc! {"_id": 0}).await.expect("create");
    let mut session = client.start_session().await.expect("session");
    session.start_transaction().await.expect("start");
    coll.insert_one(doc! {"_id": 1})
        .session(&mut session)
        .await
        .expect("insert in the transaction");

    let listed = driver_support::collect(
        admin
            .aggregate(vec![
                doc! {"$currentOp": {"allUsers": true, "idleConnections": false}},
            ])
            .await
            .expect("$currentOp"),
    )
    .await;
    let own = listed
        .iter()
        .find(|op| op.get_str("ns").ok() == Some("admin.$cmd.aggregate"))
        .unwrap_or_else(|| panic!("the aggregate itself in {listed:?}"));
    assert_eq!(own.get_str("type").ok(), Some("op"), "{own}");
    let idle = listed
        .iter()
        .find(|op| op.get_str("type").ok() == Some("idleSession"))
        .unwrap_or_else(|| panic!("the idle transaction in {listed:?}"));
    assert_eq!(idle.get_bool("active").ok(), Some(false), "{idle}");
    let parameters = idle
        .get_document("transaction")
        .and_then(|t| t.get_document("parameters"))
        .expect("transaction.parameters");
    assert_eq!(
        parameters.get_bool("autocommit").ok(),
        Some(false),
        "{idle}"
    );
    // Without idle sessions, and filtered by a following $match.
    let running = driver_support::collect(
        admin
            .aggregate(vec![
                doc! {"$currentOp": {"allUsers": true, "idleSessions": false}},
                doc! {"$match": {"type": "idleSession"}},
            ])
            .await
            .expect("$currentOp without idle sessions"),
    )
    .await;
    assert!(running.is_empty(), "{running:?}");
    session.abort_transaction().await.expect("abort");

    let refused = |pipeline: Vec<Document>, db: &str| {
        let client = client.clone();
        let db = db.to_string();
        async move {
            client
                .database(&db)
                .run_command(doc! {"aggregate": 1, "pipeline": pipeline, "cursor": {}})
                .await
        }
    };
    expect_command_error(
        refused(vec![doc! {"$currentOp": {}}], "ops_stage").await,
        73,
        "InvalidNamespace",
    );
    expect_command_error(
        refused(vec![doc! {"$match": {}}, doc! {"$currentOp": {}}], "admin").await,
        40602,
        "Location40602",
    );
    expect_command_error(
        refused(
            vec![doc! {"$currentOp": {"idleConnections": true}}],
            "admin",
        )
        .await,
        115,
        "CommandNotSupported",
    );
    expect_command_error(
        refused(vec![doc! {"$currentOp": {"everything": true}}], "admin").await,
        9,
        "FailedToParse",
    );
    expect_command_error(
        client
            .database("ops_stage")
            .run_command(doc! {"aggregate": "c", "pipeline": [{"$currentOp": {}}], "cursor": {}})
            .await,
        73,
        "InvalidNamespace",
    );
}

#[tokio::test]
async fn rest_requests_carry_a_request_id() {
    let server = TestServer::start();
    let http = reqwest::Client::new();
    let url = format!("{}/livez", server.rest_base());
    let given = http
        .get(&url)
        .header("X-Request-Id", "trace-42")
        .send()
        .await
        .expect("livez");
    assert_eq!(
        given
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok()),
        Some("trace-42")
    );
    let generated = http.get(&url).send().await.expect("livez");
    let id = generated
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(id.starts_with("rest-"), "{id}");
    // A request id that is not a plain token is replaced.
    let odd = http
        .get(&url)
        .header("X-Request-Id", "a b")
        .send()
        .await
        .expect("livez");
    assert!(odd
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|id| id.starts_with("rest-")));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_shutdown_command_stops_the_server_as_sigterm_does() {
    let mut server = TestServer::start();
    let client = server.client().await;
    client
        .database("ops_shutdown")
        .collection::<Document>("c")
        .insert_one(doc! {"x": 1})
        .await
        .expect("insert");
    expect_command_error(
        client
            .database("ops_shutdown")
            .run_command(doc! {"shutdown": 1})
            .await,
        13,
        "Unauthorized",
    );
    expect_command_error(
        client
            .database("admin")
            .run_command(doc! {"shutdown": 1, "force": true})
            .await,
        115,
        "CommandNotSupported",
    );
    // The reply, or the connection closing under it, as with MongoDB.
    let _ = client
        .database("admin")
        .run_command(doc! {"shutdown": 1})
        .await;
    let status = tokio::task::block_in_place(|| server.wait_for_exit(Duration::from_secs(30)))
        .expect("the server exits");
    assert!(status.success(), "{status:?}");
    assert!(server
        .stderr_log()
        .contains("shutdown requested by command"));
    // What was written is there after a restart.
    server.restart_same_data();
    let client = server.client().await;
    let count = client
        .database("ops_shutdown")
        .collection::<Document>("c")
        .count_documents(doc! {})
        .await
        .expect("count");
    assert_eq!(count, 1);
}
