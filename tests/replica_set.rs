//! The replica-set face against a real `docgate` process: the Rust driver discovers the
//! one-member set from `?replicaSet=docgate` (no `directConnection`) and reads and writes;
//! `hello`'s replica-set fields and `--advertise`; `--topology standalone`; `$clusterTime` and
//! `operationTime` on every reply and the client's gossip moving the clock; replSetGetStatus,
//! replSetGetConfig, replSetInitiate and replSetReconfig; load-balanced `hello` with and
//! without `--load-balanced`; and the `failCommand` fail point of `--enable-test-commands`
//! (modes, errorCode and errorLabels, closeConnection, blockConnection, appName,
//! writeConcernError).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;
mod raw_wire;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::TestServer;
use driver_support::{assert_ok, expect_command_error, num};
use mongodb::bson::{doc, Bson, Document, Timestamp};
use raw_wire::{command, connect, op_msg, read_outcome, send, Outcome};

/// A client that discovers the set: no directConnection.
async fn replica_set_client(server: &TestServer, options: &str) -> mongodb::Client {
    let uri = format!(
        "mongodb://127.0.0.1:{}/?replicaSet=docgate&serverSelectionTimeoutMS=10000{options}",
        server.port()
    );
    server.client_with_uri(&uri).await
}

/// Runs `cmd` on `admin` over a raw connection and answers the reply body.
fn raw(stream: &mut TcpStream, cmd: Document) -> Document {
    let mut cmd = cmd;
    if !cmd.contains_key("$db") {
        cmd.insert("$db", "admin");
    }
    command(stream, 1, &cmd).body
}

fn code_of(reply: &Document) -> Option<i32> {
    reply.get_i32("code").ok()
}

fn cluster_time_of(reply: &Document) -> Timestamp {
    reply
        .get_document("$clusterTime")
        .and_then(|gossip| gossip.get_timestamp("clusterTime"))
        .unwrap_or_else(|_| panic!("no $clusterTime in {reply}"))
}

fn operation_time_of(reply: &Document) -> Timestamp {
    reply
        .get_timestamp("operationTime")
        .unwrap_or_else(|_| panic!("no operationTime in {reply}"))
}

#[tokio::test]
async fn a_replica_set_client_discovers_the_primary_and_reads_and_writes() {
    let server = TestServer::start();
    let client = replica_set_client(&server, "").await;
    let coll = client.database("rs").collection::<Document>("things");
    coll.insert_one(doc! {"_id": 1, "x": "one"})
        .await
        .expect("insert through the replica set");
    coll.insert_many(vec![doc! {"_id": 2}, doc! {"_id": 3}])
        .await
        .expect("insert_many through the replica set (retryable writes send txnNumber)");
    let found = coll
        .find_one(doc! {"_id": 1})
        .await
        .expect("find")
        .expect("found");
    assert_eq!(found.get_str("x").ok(), Some("one"));
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 3);

    let hello = client
        .database("admin")
        .run_command(doc! {"hello": 1})
        .await
        .expect("hello");
    let me = format!("127.0.0.1:{}", server.port());
    assert_eq!(hello.get_str("setName").ok(), Some("docgate"), "{hello}");
    assert_eq!(
        hello.get_array("hosts").ok(),
        Some(&vec![Bson::String(me.clone())]),
        "{hello}"
    );
    assert_eq!(hello.get_str("primary").ok(), Some(me.as_str()), "{hello}");
    assert_eq!(hello.get_str("me").ok(), Some(me.as_str()), "{hello}");
    assert_eq!(hello.get_bool("isWritablePrimary").ok(), Some(true));
    assert_eq!(hello.get_bool("secondary").ok(), Some(false));
    assert_eq!(num(&hello, "setVersion"), 1.0);
    assert!(hello.get_object_id("electionId").is_ok(), "{hello}");
    let version = hello
        .get_document("topologyVersion")
        .expect("topologyVersion");
    assert!(version.get_object_id("processId").is_ok(), "{version}");
    assert_eq!(version.get_i64("counter").ok(), Some(0));
    let last_write = hello.get_document("lastWrite").expect("lastWrite");
    for field in ["opTime", "majorityOpTime"] {
        let op_time = last_write.get_document(field).expect(field);
        assert!(op_time.get_timestamp("ts").is_ok(), "{last_write}");
    }
    for field in ["lastWriteDate", "majorityWriteDate"] {
        assert!(last_write.get_datetime(field).is_ok(), "{last_write}");
    }
    // Legacy isMaster answers the same face.
    let is_master = client
        .database("admin")
        .run_command(doc! {"isMaster": 1})
        .await
        .expect("isMaster");
    assert_eq!(is_master.get_bool("ismaster").ok(), Some(true));
    assert_eq!(is_master.get_str("setName").ok(), Some("docgate"));

    // The log line names the topology.
    assert!(
        server.stderr_log().contains("topology=replicaset(docgate)"),
        "{}",
        server.stderr_log()
    );
}

#[tokio::test]
async fn an_awaitable_hello_waits_while_the_topology_is_unchanged() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    let hello = raw(&mut stream, doc! {"hello": 1});
    let version = hello
        .get_document("topologyVersion")
        .expect("topologyVersion")
        .clone();
    // The client knows this process's topology: the reply waits out maxAwaitTimeMS.
    let started = Instant::now();
    let awaited = raw(
        &mut stream,
        doc! {"hello": 1, "topologyVersion": version.clone(), "maxAwaitTimeMS": 600_i64},
    );
    assert_ok(&awaited);
    assert!(
        started.elapsed() >= Duration::from_millis(600),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(awaited.get_document("topologyVersion").ok(), Some(&version));
    // Another process's topology version (a restarted server): answered at once.
    let stale = doc! {"processId": mongodb::bson::oid::ObjectId::new(), "counter": 0_i64};
    let started = Instant::now();
    assert_ok(&raw(
        &mut stream,
        doc! {"hello": 1, "topologyVersion": stale, "maxAwaitTimeMS": 5000_i64},
    ));
    assert!(started.elapsed() < Duration::from_millis(2000));

    // A default time limit shortens the wait instead of failing the monitor's hello.
    let limited = TestServer::start_with_args(&["--default-max-time-ms", "300"]);
    let mut stream = connect(&limited);
    let hello = raw(&mut stream, doc! {"hello": 1});
    let version = hello
        .get_document("topologyVersion")
        .expect("topologyVersion")
        .clone();
    let started = Instant::now();
    let awaited = raw(
        &mut stream,
        doc! {"hello": 1, "topologyVersion": version, "maxAwaitTimeMS": 3000_i64},
    );
    assert_ok(&awaited);
    assert!(
        started.elapsed() < Duration::from_millis(2000),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn advertise_and_replica_set_name_are_honoured() {
    let server = TestServer::start_with_args(&[
        "--advertise",
        "db.example.internal:27999",
        "--replica-set",
        "rs7",
    ]);
    let mut stream = connect(&server);
    let hello = raw(&mut stream, doc! {"hello": 1});
    assert_eq!(hello.get_str("setName").ok(), Some("rs7"), "{hello}");
    assert_eq!(
        hello.get_array("hosts").ok(),
        Some(&vec![Bson::String("db.example.internal:27999".into())])
    );
    assert_eq!(hello.get_str("me").ok(), Some("db.example.internal:27999"));
    let status = raw(&mut stream, doc! {"replSetGetStatus": 1});
    assert_eq!(status.get_str("set").ok(), Some("rs7"), "{status}");
}

#[tokio::test]
async fn standalone_topology_keeps_the_standalone_face() {
    let server = TestServer::start_with_args(&["--topology", "standalone"]);
    let mut stream = connect(&server);
    let hello = raw(&mut stream, doc! {"hello": 1});
    assert_eq!(hello.get_bool("isWritablePrimary").ok(), Some(true));
    for field in [
        "setName",
        "hosts",
        "topologyVersion",
        "$clusterTime",
        "operationTime",
    ] {
        assert!(!hello.contains_key(field), "{field} in {hello}");
    }
    let status = raw(&mut stream, doc! {"replSetGetStatus": 1});
    assert_eq!(code_of(&status), Some(76), "{status}");
    assert_eq!(
        status.get_str("codeName").ok(),
        Some("NoReplicationEnabled")
    );
    assert_eq!(
        status.get_str("errmsg").ok(),
        Some("not running with --replSet")
    );
    let initiate = raw(&mut stream, doc! {"replSetInitiate": {}});
    assert_eq!(code_of(&initiate), Some(76), "{initiate}");
    let config = raw(&mut stream, doc! {"replSetGetConfig": 1});
    assert_eq!(code_of(&config), Some(76), "{config}");
    let status = raw(&mut stream, doc! {"serverStatus": 1});
    assert!(
        !status.contains_key("repl"),
        "no repl section on a standalone"
    );

    // A driver still works against it directly.
    let client = server.client().await;
    let coll = client.database("sa").collection::<Document>("c");
    coll.insert_one(doc! {"a": 1}).await.expect("insert");
    assert!(server.stderr_log().contains("topology=standalone"));
}

#[tokio::test]
async fn replies_carry_a_cluster_time_that_only_moves_forward() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    let mut last = Timestamp {
        time: 0,
        increment: 0,
    };
    for cmd in [
        doc! {"ping": 1},
        doc! {"insert": "c", "documents": [{"a": 1}], "$db": "ct"},
        doc! {"find": "c", "$db": "ct"},
        doc! {"noSuchCommand": 1},
        doc! {"find": 5, "$db": "ct"},
        doc! {"hello": 1},
    ] {
        let reply = raw(&mut stream, cmd.clone());
        let cluster_time = cluster_time_of(&reply);
        let operation_time = operation_time_of(&reply);
        assert!(cluster_time >= last, "{cmd}: {cluster_time:?} < {last:?}");
        assert!(operation_time <= cluster_time, "{reply}");
        let signature = reply
            .get_document("$clusterTime")
            .and_then(|gossip| gossip.get_document("signature"))
            .expect("signature");
        assert_eq!(signature.get_i64("keyId").ok(), Some(0), "{signature}");
        assert_eq!(
            signature.get_binary_generic("hash").ok().map(Vec::len),
            Some(20)
        );
        last = cluster_time;
    }
    // An error reply carries it too.
    let error = raw(&mut stream, doc! {"noSuchCommand": 1});
    assert_eq!(code_of(&error), Some(59));
    cluster_time_of(&error);

    // A client's later $clusterTime moves the server's forward.
    let ahead = Timestamp {
        time: last.time + 3600,
        increment: 42,
    };
    let gossip = doc! {
        "clusterTime": ahead,
        "signature": {"hash": Bson::Binary(mongodb::bson::Binary {
            subtype: mongodb::bson::spec::BinarySubtype::Generic, bytes: vec![0; 20] }),
            "keyId": 0_i64},
    };
    let reply = raw(&mut stream, doc! {"ping": 1, "$clusterTime": gossip});
    assert!(cluster_time_of(&reply) >= ahead, "{reply}");
    // ... and it stays there for every other client.
    let mut other = connect(&server);
    let reply = raw(&mut other, doc! {"ping": 1});
    assert!(cluster_time_of(&reply) >= ahead, "{reply}");
    // An earlier one does not move it back.
    let behind = doc! {"clusterTime": Timestamp { time: 1, increment: 0 }, "signature": {}};
    let reply = raw(&mut other, doc! {"ping": 1, "$clusterTime": behind});
    assert!(cluster_time_of(&reply) >= ahead, "{reply}");

    // A time more than a year ahead of the wall clock is refused and moves nothing.
    let far = doc! {"clusterTime": Timestamp { time: u32::MAX, increment: 0 }, "signature": {}};
    let reply = raw(&mut other, doc! {"ping": 1, "$clusterTime": far});
    assert_eq!(code_of(&reply), Some(209), "{reply}");
    assert_eq!(
        reply.get_str("codeName").ok(),
        Some("ClusterTimeFailsRateLimiter")
    );
    assert!(cluster_time_of(&reply).time < u32::MAX);

    // The driver sees them on run_command replies as well.
    let client = replica_set_client(&server, "").await;
    let reply = client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .expect("ping");
    assert!(operation_time_of(&reply) <= cluster_time_of(&reply));
}

#[tokio::test]
async fn repl_set_commands_answer_for_the_one_member_set() {
    let server = TestServer::start();
    let client = replica_set_client(&server, "").await;
    let admin = client.database("admin");
    let me = format!("127.0.0.1:{}", server.port());

    let status = admin
        .run_command(doc! {"replSetGetStatus": 1})
        .await
        .expect("replSetGetStatus");
    assert_ok(&status);
    assert_eq!(status.get_str("set").ok(), Some("docgate"));
    assert_eq!(num(&status, "myState"), 1.0);
    let members = status.get_array("members").expect("members");
    assert_eq!(members.len(), 1);
    let member = members[0].as_document().expect("member");
    assert_eq!(member.get_str("stateStr").ok(), Some("PRIMARY"), "{member}");
    assert_eq!(member.get_str("name").ok(), Some(me.as_str()));
    assert_eq!(member.get_bool("self").ok(), Some(true));

    let config = admin
        .run_command(doc! {"replSetGetConfig": 1})
        .await
        .expect("replSetGetConfig");
    let config = config.get_document("config").expect("config");
    assert_eq!(config.get_str("_id").ok(), Some("docgate"));
    let members = config.get_array("members").expect("members");
    assert_eq!(
        members[0]
            .as_document()
            .and_then(|m| m.get_str("host").ok()),
        Some(me.as_str())
    );

    expect_command_error(
        admin.run_command(doc! {"replSetInitiate": {}}).await,
        23,
        "AlreadyInitialized",
    );
    expect_command_error(
        admin
            .run_command(doc! {"replSetReconfig": {"_id": "docgate", "version": 2, "members": []}})
            .await,
        103,
        "NewReplicaSetConfigurationIncompatible",
    );
    // Against another database: refused as MongoDB does (admin only).
    expect_command_error(
        client
            .database("other")
            .run_command(doc! {"replSetGetStatus": 1})
            .await,
        13,
        "Unauthorized",
    );
}

#[tokio::test]
async fn load_balanced_hello_needs_load_balanced_mode() {
    // Without --load-balanced: the normal hello, no serviceId, and a loadBalanced driver
    // refuses the server.
    let server = TestServer::start();
    let mut stream = connect(&server);
    let hello = raw(&mut stream, doc! {"hello": 1, "loadBalanced": true});
    assert_ok(&hello);
    assert!(!hello.contains_key("serviceId"), "{hello}");
    let uri = format!(
        "mongodb://127.0.0.1:{}/?loadBalanced=true&serverSelectionTimeoutMS=5000",
        server.port()
    );
    let client = server.client_with_uri(&uri).await;
    let refused = client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .expect_err("a loadBalanced driver must refuse a server without serviceId");
    assert!(
        refused.to_string().to_lowercase().contains("load balanc"),
        "{refused}"
    );

    // With --load-balanced: a serviceId, fixed per process, and the driver works.
    let balanced = TestServer::start_with_args(&["--load-balanced"]);
    let mut stream = connect(&balanced);
    let first = raw(&mut stream, doc! {"hello": 1, "loadBalanced": true});
    let service_id = first.get_object_id("serviceId").expect("serviceId");
    let mut other = connect(&balanced);
    let second = raw(&mut other, doc! {"hello": 1, "loadBalanced": true});
    assert_eq!(second.get_object_id("serviceId").ok(), Some(service_id));
    let plain = raw(&mut other, doc! {"hello": 1});
    assert!(!plain.contains_key("serviceId"), "{plain}");
    let uri = format!(
        "mongodb://127.0.0.1:{}/?loadBalanced=true&serverSelectionTimeoutMS=10000",
        balanced.port()
    );
    let client = balanced.client_with_uri(&uri).await;
    let coll = client.database("lb").collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.expect("insert");
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 1);
    assert!(balanced.stderr_log().contains("+load-balanced"));
}

#[tokio::test]
async fn configure_fail_point_is_not_found_without_test_commands() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    let reply = raw(
        &mut stream,
        doc! {"configureFailPoint": "failCommand", "mode": "alwaysOn",
        "data": {"failCommands": ["ping"], "errorCode": 2}},
    );
    assert_eq!(code_of(&reply), Some(59), "{reply}");
    assert_ok(&raw(&mut stream, doc! {"ping": 1}));
    let commands = raw(&mut stream, doc! {"listCommands": 1});
    let commands = commands.get_document("commands").expect("commands");
    assert!(!commands.contains_key("configureFailPoint"));
    assert!(commands.contains_key("replSetGetStatus"));
    let parameter = raw(
        &mut stream,
        doc! {"getParameter": 1, "enableTestCommands": 1},
    );
    assert_eq!(
        parameter.get_bool("enableTestCommands").ok(),
        Some(false),
        "{parameter}"
    );
    // serverStatus.repl describes the set, as on a replica set member.
    let status = raw(&mut stream, doc! {"serverStatus": 1});
    let repl = status.get_document("repl").expect("serverStatus.repl");
    assert_eq!(repl.get_str("setName").ok(), Some("docgate"), "{repl}");
    assert_eq!(repl.get_bool("isWritablePrimary").ok(), Some(true));
}

fn fail_point(stream: &mut TcpStream, mode: Bson, data: Document) -> Document {
    let reply = raw(
        stream,
        doc! {"configureFailPoint": "failCommand", "mode": mode, "data": data},
    );
    assert_ok(&reply);
    reply
}

#[tokio::test]
async fn fail_command_modes_error_codes_and_labels() {
    let server = TestServer::start_with_args(&["--enable-test-commands"]);
    assert!(server.stderr_log().contains("TEST COMMANDS ENABLED"));
    let mut stream = connect(&server);
    let commands = raw(&mut stream, doc! {"listCommands": 1});
    assert!(commands
        .get_document("commands")
        .expect("commands")
        .contains_key("configureFailPoint"));
    let parameter = raw(
        &mut stream,
        doc! {"getParameter": 1, "enableTestCommands": 1},
    );
    assert_eq!(parameter.get_bool("enableTestCommands").ok(), Some(true));
    let find = || doc! {"find": "c", "$db": "fp"};

    // {times: 2}: the next two finds fail, then the fail point is off.
    fail_point(
        &mut stream,
        doc! {"times": 2}.into(),
        doc! {"failCommands": ["find"], "errorCode": 2},
    );
    assert_ok(&raw(&mut stream, doc! {"ping": 1}));
    for _ in 0..2 {
        let reply = raw(&mut stream, find());
        assert_eq!(code_of(&reply), Some(2), "{reply}");
        assert_eq!(reply.get_str("codeName").ok(), Some("BadValue"));
        cluster_time_of(&reply);
    }
    assert_ok(&raw(&mut stream, find()));

    // {skip: 1}: the first passes, every later one fails until turned off.
    let configured = fail_point(
        &mut stream,
        doc! {"skip": 1}.into(),
        doc! {"failCommands": ["find"], "errorCode": 91},
    );
    assert_eq!(num(&configured, "count"), 2.0, "entered twice so far");
    assert_ok(&raw(&mut stream, find()));
    for _ in 0..3 {
        let reply = raw(&mut stream, find());
        assert_eq!(code_of(&reply), Some(91), "{reply}");
        assert_eq!(reply.get_str("codeName").ok(), Some("ShutdownInProgress"));
    }
    let off = raw(
        &mut stream,
        doc! {"configureFailPoint": "failCommand", "mode": "off"},
    );
    assert_ok(&off);
    assert_ok(&raw(&mut stream, find()));

    // alwaysOn with errorLabels: the labels given replace the server's own.
    fail_point(
        &mut stream,
        "alwaysOn".into(),
        doc! {"failCommands": ["insert", "count"], "errorCode": 11600,
        "errorLabels": ["RetryableWriteError", "Custom"]},
    );
    for _ in 0..3 {
        let reply = raw(
            &mut stream,
            doc! {"insert": "c", "documents": [{"a": 1}], "$db": "fp"},
        );
        assert_eq!(code_of(&reply), Some(11600), "{reply}");
        assert_eq!(
            reply.get_array("errorLabels").ok(),
            Some(&vec![
                Bson::String("RetryableWriteError".into()),
                Bson::String("Custom".into())
            ])
        );
    }
    raw(
        &mut stream,
        doc! {"configureFailPoint": "failCommand", "mode": "off"},
    );
    // Nothing was inserted while the fail point answered.
    let count = raw(&mut stream, doc! {"count": "c", "$db": "fp"});
    assert_eq!(num(&count, "n"), 0.0, "{count}");

    // A retryable write failing with a retryable code gets RetryableWriteError.
    fail_point(
        &mut stream,
        doc! {"times": 1}.into(),
        doc! {"failCommands": ["insert"], "errorCode": 189},
    );
    let reply = raw(
        &mut stream,
        doc! {"insert": "c", "documents": [{"a": 1}], "$db": "fp",
        "lsid": {"id": mongodb::bson::Uuid::new()}, "txnNumber": 1_i64},
    );
    assert_eq!(code_of(&reply), Some(189), "{reply}");
    assert_eq!(
        reply.get_array("errorLabels").ok(),
        Some(&vec![Bson::String("RetryableWriteError".into())])
    );

    // configureFailPoint itself is never failed, and bad modes are refused.
    fail_point(
        &mut stream,
        "alwaysOn".into(),
        doc! {"failCommands": ["configureFailPoint", "ping"], "errorCode": 2},
    );
    assert_eq!(code_of(&raw(&mut stream, doc! {"ping": 1})), Some(2));
    for bad in [
        doc! {"configureFailPoint": "failCommand", "mode": {"activationProbability": 0.5}, "data": {"failCommands": ["ping"]}},
        doc! {"configureFailPoint": "failCommand", "mode": "sometimes", "data": {"failCommands": ["ping"]}},
        doc! {"configureFailPoint": "noSuchFailPoint", "mode": "off"},
        doc! {"configureFailPoint": "failCommand", "mode": "alwaysOn", "data": {"failCommands": ["ping"], "threadName": "x"}},
    ] {
        let reply = raw(&mut stream, bad.clone());
        assert_eq!(code_of(&reply), Some(2), "{bad}: {reply}");
    }
    assert_ok(&raw(
        &mut stream,
        doc! {"configureFailPoint": "failCommand", "mode": "off"},
    ));
    // Only against admin.
    let reply = raw(
        &mut stream,
        doc! {"configureFailPoint": "failCommand", "mode": "off", "$db": "fp"},
    );
    assert_eq!(code_of(&reply), Some(13), "{reply}");
}

#[tokio::test]
async fn fail_command_close_connection_and_block_connection() {
    let server = TestServer::start_with_args(&["--enable-test-commands"]);
    let mut control = connect(&server);

    fail_point(
        &mut control,
        doc! {"times": 1}.into(),
        doc! {"failCommands": ["find"], "closeConnection": true},
    );
    let mut victim = connect(&server);
    send(&mut victim, &op_msg(7, &doc! {"find": "c", "$db": "fp"}));
    match read_outcome(&mut victim, "find under closeConnection") {
        Outcome::Closed => {}
        Outcome::Reply(reply) => panic!("expected EOF, got {}", reply.body),
    }
    // The server goes on; the next find (times exhausted) runs.
    let mut next = connect(&server);
    assert_ok(&raw(&mut next, doc! {"find": "c", "$db": "fp"}));

    // blockConnection delays, then the command runs (no errorCode).
    fail_point(
        &mut control,
        doc! {"times": 1}.into(),
        doc! {"failCommands": ["ping"], "blockConnection": true, "blockTimeMS": 700},
    );
    let started = Instant::now();
    assert_ok(&raw(&mut next, doc! {"ping": 1}));
    assert!(
        started.elapsed() >= Duration::from_millis(700),
        "{:?}",
        started.elapsed()
    );
    let started = Instant::now();
    assert_ok(&raw(&mut next, doc! {"ping": 1}));
    assert!(started.elapsed() < Duration::from_millis(500));

    // blockConnection with errorCode: delayed, then failed.
    fail_point(
        &mut control,
        doc! {"times": 1}.into(),
        doc! {"failCommands": ["ping"], "blockConnection": true, "blockTimeMS": 300, "errorCode": 2},
    );
    let started = Instant::now();
    let reply = raw(&mut next, doc! {"ping": 1});
    assert_eq!(code_of(&reply), Some(2));
    assert!(started.elapsed() >= Duration::from_millis(300));

    // blockConnection without blockTimeMS is refused.
    let reply = raw(
        &mut control,
        doc! {"configureFailPoint": "failCommand", "mode": "alwaysOn",
        "data": {"failCommands": ["ping"], "blockConnection": true}},
    );
    assert_eq!(code_of(&reply), Some(72), "{reply}");
}

#[tokio::test]
async fn fail_command_app_name_and_write_concern_error() {
    let server = TestServer::start_with_args(&["--enable-test-commands"]);
    let mut control = connect(&server);
    let mut app = connect(&server);
    let hello = raw(
        &mut app,
        doc! {"hello": 1, "client": {"application": {"name": "victim"},
        "driver": {"name": "raw", "version": "0"}, "os": {"type": "Linux"}}},
    );
    assert_ok(&hello);

    fail_point(
        &mut control,
        "alwaysOn".into(),
        doc! {"failCommands": ["ping"], "errorCode": 2, "appName": "victim"},
    );
    assert_ok(&raw(&mut control, doc! {"ping": 1}));
    assert_eq!(code_of(&raw(&mut app, doc! {"ping": 1})), Some(2));
    assert_eq!(code_of(&raw(&mut app, doc! {"ping": 1})), Some(2));
    assert_ok(&raw(
        &mut control,
        doc! {"configureFailPoint": "failCommand", "mode": "off"},
    ));
    assert_ok(&raw(&mut app, doc! {"ping": 1}));

    // writeConcernError: the write is applied, then the reply carries the error.
    fail_point(
        &mut control,
        doc! {"times": 1}.into(),
        doc! {"failCommands": ["insert", "find"],
        "writeConcernError": {"code": 91, "codeName": "ShutdownInProgress", "errmsg": "Replication is being shut down"},
        "errorLabels": ["RetryableWriteError"]},
    );
    // A read is not a write: no writeConcernError, and it does not use up the fail point.
    let find = raw(&mut app, doc! {"find": "w", "$db": "fp"});
    assert!(!find.contains_key("writeConcernError"), "{find}");
    let reply = raw(
        &mut app,
        doc! {"insert": "w", "documents": [{"_id": 1}], "$db": "fp"},
    );
    assert_ok(&reply);
    assert_eq!(num(&reply, "n"), 1.0, "{reply}");
    let error = reply
        .get_document("writeConcernError")
        .unwrap_or_else(|_| panic!("no writeConcernError in {reply}"));
    assert_eq!(error.get_i32("code").ok(), Some(91));
    assert_eq!(
        reply.get_array("errorLabels").ok(),
        Some(&vec![Bson::String("RetryableWriteError".into())])
    );
    let count = raw(&mut app, doc! {"count": "w", "$db": "fp"});
    assert_eq!(num(&count, "n"), 1.0, "the write was applied: {count}");
    // times: 1 is used up.
    let reply = raw(
        &mut app,
        doc! {"insert": "w", "documents": [{"_id": 2}], "$db": "fp"},
    );
    assert!(!reply.contains_key("writeConcernError"), "{reply}");

    // The driver reports it as a write concern error.
    fail_point(
        &mut control,
        doc! {"times": 1}.into(),
        doc! {"failCommands": ["insert"],
        "writeConcernError": {"code": 64, "codeName": "WriteConcernFailed", "errmsg": "waiting for replication timed out"}},
    );
    let client = replica_set_client(&server, "&retryWrites=false").await;
    let error = client
        .database("fp")
        .collection::<Document>("w")
        .insert_one(doc! {"_id": 3})
        .await
        .expect_err("writeConcernError");
    assert_eq!(driver_support::server_code(&error), Some(64), "{error:?}");
}
