//! Hostile load against the real binary: a query built to burn CPU, clients that never log
//! in sending huge or endless messages, and idle sockets held open on both listeners. Each
//! test checks what the other users would notice: `hello` still answers, the time limit
//! stops the query, SIGTERM stops the server, memory stays bounded, a new client gets in.
//!
//! Runs on SQLite, and on PostgreSQL when `DOCGATE_TEST_BACKEND` names one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;
mod raw_wire;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::TestServer;
use driver_support::server_code;
use mongodb::bson::{doc, Document};
use mongodb::Client;

/// A `$project` whose expression takes a noticeable time per document: the union of two
/// ranges of `elements` numbers, half of them shared.
fn heavy_stage(elements: i32) -> Document {
    doc! {"$project": {"n": {"$size": {"$setUnion": [
        {"$range": [0, elements]}, {"$range": [elements / 2, elements + elements / 2]}
    ]}}}}
}

/// `count` small documents in `load.heavy`, for the heavy stage to run over.
async fn heavy_collection(client: &Client, count: i32) {
    let docs: Vec<Document> = (0..count).map(|i| doc! {"_id": i}).collect();
    client
        .database("load")
        .collection::<Document>("heavy")
        .insert_many(docs)
        .await
        .expect("insert the documents the heavy query reads");
}

/// Runs the heavy aggregate (with `maxTimeMS` when given) and answers its outcome.
async fn heavy_aggregate(
    client: &Client,
    max_time_ms: Option<i64>,
) -> mongodb::error::Result<Document> {
    let mut command = doc! {
        "aggregate": "heavy", "pipeline": [heavy_stage(200_000)], "cursor": {}
    };
    if let Some(ms) = max_time_ms {
        command.insert("maxTimeMS", ms);
    }
    client.database("load").run_command(command).await
}

#[tokio::test]
async fn hello_answers_while_two_huge_set_unions_run() {
    let server = TestServer::start();
    let client = server.client().await;
    heavy_collection(&client, 50).await;
    let queries: Vec<_> = (0..2)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { heavy_aggregate(&client, Some(4_000)).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Another application's client, with its own connections.
    let other = server.client().await;
    let mut latencies = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        other
            .database("admin")
            .run_command(doc! {"hello": 1})
            .await
            .expect("hello while the heavy queries run");
        latencies.push(started.elapsed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The heavy queries were running all along: they end at their time limit.
    for query in queries {
        let outcome = query.await.expect("query task");
        assert_eq!(
            outcome.err().as_ref().and_then(server_code),
            Some(50),
            "the heavy query should still be running when hello was measured"
        );
    }
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    let slowest = latencies[latencies.len() - 1];
    assert!(
        median < Duration::from_millis(100) && slowest < Duration::from_secs(1),
        "hello took {latencies:?} while two heavy queries ran"
    );
}

#[tokio::test]
async fn max_time_ms_stops_a_long_evaluation_with_max_time_ms_expired() {
    let server = TestServer::start();
    let client = server.client().await;
    heavy_collection(&client, 50).await;
    let started = Instant::now();
    let error = heavy_aggregate(&client, Some(500))
        .await
        .expect_err("a 500 ms limit stops a query of many seconds");
    let took = started.elapsed();
    assert_eq!(server_code(&error), Some(50), "{error}");
    assert!(
        took < Duration::from_millis(1_500),
        "maxTimeMS 500 answered after {took:?}"
    );
    // The server's default applies to commands that set none.
    drop(server);
    let server = TestServer::start_with_args(&["--default-max-time-ms", "300"]);
    let client = server.client().await;
    heavy_collection(&client, 50).await;
    let error = heavy_aggregate(&client, None)
        .await
        .expect_err("--default-max-time-ms stops a query without maxTimeMS");
    assert_eq!(server_code(&error), Some(50), "{error}");
    // A bad maxTimeMS is a BadValue, not ignored.
    let bad = client
        .database("load")
        .run_command(doc! {"find": "heavy", "maxTimeMS": -1})
        .await
        .expect_err("negative maxTimeMS");
    assert_eq!(server_code(&bad), Some(2), "{bad}");
}

#[tokio::test]
async fn a_client_that_goes_away_stops_its_query() {
    let server = TestServer::start();
    let client = server.client().await;
    heavy_collection(&client, 200).await;
    // Two clients each send the heavy query (no time limit) and hang up at once: one job
    // per CPU of the compute pool would be theirs for minutes if their queries went on.
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    for request_id in 0..cpus as i32 {
        let mut stream = raw_wire::connect(&server);
        let message = raw_wire::op_msg(
            request_id + 1,
            &doc! {"aggregate": "heavy", "pipeline": [heavy_stage(200_000)], "cursor": {}, "$db": "load"},
        );
        stream.write_all(&message).expect("send the heavy query");
        drop(stream);
    }
    // Their queries stop: the server does not go on burning the CPUs for them.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = server.cpu_seconds();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let busy = server.cpu_seconds() - before;
    assert!(
        busy < 0.5,
        "the server used {busy:.2} CPU seconds in 2 s after its clients went away"
    );
    // And a pipeline of someone else gets its turn on the compute pool at once.
    let small = client
        .database("load")
        .collection::<Document>("heavy")
        .aggregate([doc! {"$match": {"_id": {"$lt": 3}}}, doc! {"$count": "n"}])
        .await
        .expect("a small aggregate after the heavy ones were abandoned");
    drop(small);
}

#[tokio::test]
async fn sigterm_stops_the_server_within_the_grace_period_during_a_heavy_query() {
    let mut server = TestServer::start_with_args(&["--shutdown-grace", "1s"]);
    let client = server.client().await;
    heavy_collection(&client, 200).await;
    let query = tokio::spawn(async move { heavy_aggregate(&client, None).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let status = server.terminate();
    let took = started.elapsed();
    assert!(status.success(), "docgate exited with {status}");
    // The grace period, the time interrupted commands get to answer, and a margin.
    assert!(took < Duration::from_secs(5), "SIGTERM took {took:?}");
    let outcome = query.await.expect("query task");
    assert!(
        outcome.is_err(),
        "the interrupted query cannot have succeeded"
    );
    assert!(server.stderr_log().contains("interrupting them"));
}

/// A server that requires authentication (a `root` user exists).
async fn server_with_root(args: &[&str]) -> TestServer {
    let server = TestServer::start_with_args(args);
    server
        .client()
        .await
        .database("admin")
        .run_command(doc! {"createUser": "root", "pwd": "rootpw", "roles": ["root"]})
        .await
        .expect("createUser through the localhost exception");
    server
}

/// A client logged in as `user` of `admin` with SCRAM-SHA-256.
async fn login(server: &TestServer, user: &str, password: &str) -> Client {
    let uri = format!(
        "mongodb://{user}:{password}@127.0.0.1:{}/?directConnection=true&authSource=admin&serverSelectionTimeoutMS=10000",
        server.port(),
    );
    server.client_with_uri(&uri).await
}

/// Sends `bytes` to a fresh raw connection as far as the server takes them; answers the
/// connection (the server may close it part way).
fn send_from_stranger(server: &TestServer, bytes: &[u8]) -> TcpStream {
    let mut stream = raw_wire::connect(server);
    for chunk in bytes.chunks(1 << 20) {
        if stream.write_all(chunk).is_err() {
            break;
        }
    }
    stream
}

#[tokio::test]
async fn strangers_sending_huge_frames_and_zlib_bombs_do_not_take_the_memory() {
    let server = server_with_root(&[]).await;
    let before = server.rss_bytes();
    // 50 connections that never logged in, each sending 8 MB of a frame that declares 48 MB.
    let declared = docgate_wire::MAX_MESSAGE_SIZE_BYTES;
    let mut partial = raw_wire::header(declared as i32, 1, 0, docgate_wire::op_code::OP_MSG);
    partial.resize(8 << 20, b'x');
    let mut held = Vec::new();
    for _ in 0..50 {
        held.push(send_from_stranger(&server, &partial));
    }
    // 40 zlib bombs: 47 MB of zeros compress to tens of kilobytes.
    let bomb = docgate_wire::encode_message(
        &docgate_wire::Message {
            request_id: 2,
            response_to: 0,
            op: docgate_wire::Op::Msg(docgate_wire::OpMsg {
                flags: Default::default(),
                body: doc! {"ping": 1, "pad": "0".repeat(47_000_000), "$db": "admin"},
                sequences: Vec::new(),
            }),
            compressor: Some(docgate_wire::Compressor::Zlib),
        },
        docgate_wire::MAX_MESSAGE_SIZE_BYTES,
    )
    .expect("encode the zlib bomb");
    assert!(
        bomb.len() < 1 << 20,
        "the bomb is small: {} bytes",
        bomb.len()
    );
    for _ in 0..40 {
        held.push(send_from_stranger(&server, &bomb));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let during = server.rss_bytes();
    let grown = during.saturating_sub(before);
    assert!(
        grown < 64 << 20,
        "RSS grew by {} MB (from {} MB) with 90 hostile connections",
        grown >> 20,
        before >> 20
    );
    // The strangers were turned away; the administrator is served.
    for mut stream in held {
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("read timeout");
        let mut byte = [0u8; 1];
        assert!(
            matches!(stream.read(&mut byte), Ok(0) | Err(_)),
            "a stranger's oversized message must close its connection"
        );
    }
    let admin = login(&server, "root", "rootpw").await;
    admin
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .expect("the administrator is still served");
}

#[tokio::test]
async fn idle_and_half_sent_connections_are_closed_and_free_their_slots() {
    let server = server_with_root(&[
        "--max-connections",
        "8",
        "--unauthenticated-idle-timeout",
        "1s",
        "--message-timeout",
        "1s",
    ])
    .await;
    // Eight strangers take every slot: four idle, four sending half a header.
    let mut held = Vec::new();
    for i in 0..8 {
        let mut stream = raw_wire::connect(&server);
        if i % 2 == 1 {
            stream.write_all(&[64, 0, 0, 0, 1]).expect("half a header");
        }
        held.push(stream);
    }
    let started = Instant::now();
    for mut stream in held {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("read timeout");
        let mut byte = [0u8; 1];
        let closed = matches!(stream.read(&mut byte), Ok(0) | Err(_));
        assert!(closed, "the server closes idle and half-sent connections");
    }
    assert!(started.elapsed() < Duration::from_secs(8));
    // Their slots are free again: the administrator gets in.
    let admin = login(&server, "root", "rootpw").await;
    admin
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .expect("a new client is served once the idle ones were closed");
}

#[tokio::test]
async fn rest_answers_401_to_a_stranger_before_reading_the_body() {
    let server = server_with_root(&[]).await;
    let before = server.rss_bytes();
    let head = "POST /ords/app/soda/latest/things HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                Content-Type: application/json\r\nContent-Length: 47000000\r\n\r\n";
    let mut streams = Vec::new();
    for _ in 0..10 {
        let mut stream =
            TcpStream::connect(("127.0.0.1", server.rest_port())).expect("connect to REST");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("read timeout");
        stream.write_all(head.as_bytes()).expect("send the head");
        stream.write_all(&[b' '; 4096]).expect("send a little body");
        streams.push(stream);
    }
    for mut stream in streams {
        let mut answer = [0u8; 12];
        stream
            .read_exact(&mut answer)
            .expect("an answer without the body having been sent");
        assert_eq!(
            &answer,
            b"HTTP/1.1 401",
            "{}",
            String::from_utf8_lossy(&answer)
        );
    }
    let grown = server.rss_bytes().saturating_sub(before);
    assert!(grown < 64 << 20, "RSS grew by {} MB", grown >> 20);
}

#[tokio::test]
async fn a_thousand_idle_rest_sockets_do_not_stop_a_mongodb_client() {
    // Few descriptors, as on a small host: the REST limit keeps the rest for the wire
    // listener and the database.
    let server = TestServer::start_with_open_file_limit(
        &["--max-connections", "64", "--rest-idle-timeout", "3s"],
        Some(1_400),
    );
    let mut idle = Vec::new();
    for _ in 0..1_300 {
        match TcpStream::connect(("127.0.0.1", server.rest_port())) {
            Ok(stream) => idle.push(stream),
            Err(error) => panic!("connect idle socket {}: {error}", idle.len()),
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let client = server.client().await;
    client
        .database("load")
        .collection::<Document>("still")
        .insert_one(doc! {"served": true})
        .await
        .expect("a MongoDB client is served while 1,300 REST sockets sit idle");
    // The idle REST connections are closed after --rest-idle-timeout; REST serves again.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let response = reqwest::get(format!("{}/ords/load/soda/latest", server.rest_base()))
        .await
        .expect("REST answers once the idle sockets were closed");
    assert!(response.status().as_u16() < 500, "{}", response.status());
    drop(idle);
}

#[tokio::test]
async fn a_heavy_rest_filter_stops_at_the_rest_request_timeout() {
    let server = TestServer::start_with_args(&["--rest-request-timeout", "1s"]);
    let client = server.client().await;
    heavy_collection(&client, 200).await;
    let filter = doc! {"$expr": {"$gt": [{"$size": {"$setUnion": [
        {"$range": [0, 200_000]}, {"$range": [100_000, 300_000]}
    ]}}, 0]}};
    let started = Instant::now();
    let response = reqwest::Client::new()
        .get(format!(
            "{}/ords/load/soda/latest/heavy",
            server.rest_base()
        ))
        .query(&[("q", filter.to_string())])
        .send()
        .await
        .expect("the REST request answers");
    let took = started.elapsed();
    assert_eq!(
        response.status().as_u16(),
        504,
        "{:?}",
        response.text().await
    );
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    // The server goes on serving.
    client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .expect("ping after the timed-out REST request");
}
