//! The server's life as an operator sees it: one clear log line per listener at start,
//! graceful shutdown on SIGTERM that finishes the command in flight (and exits 0), and the
//! bound on simultaneous connections (`--max-connections`): connections beyond it wait and
//! are served as soon as a slot frees, instead of being refused or crashing anything.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bson::{doc, Document};
use common::TestServer;

/// A minimal OP_MSG `{ping: 1, $db: "admin"}`.
fn ping_message(request_id: i32) -> Vec<u8> {
    let body = doc! {"ping": 1, "$db": "admin"}.to_vec().expect("encode");
    let length = 16 + 4 + 1 + body.len();
    let mut message = Vec::with_capacity(length);
    message.extend_from_slice(&(length as i32).to_le_bytes());
    message.extend_from_slice(&request_id.to_le_bytes());
    message.extend_from_slice(&0i32.to_le_bytes());
    message.extend_from_slice(&2013i32.to_le_bytes());
    message.extend_from_slice(&0u32.to_le_bytes());
    message.push(0);
    message.extend_from_slice(&body);
    message
}

/// Sends a ping and waits up to `wait` for the reply; true if `ok: 1` came back.
fn ping_answered(stream: &mut TcpStream, wait: Duration) -> bool {
    stream.set_read_timeout(Some(wait)).expect("timeout");
    if stream.write_all(&ping_message(7)).is_err() {
        return false;
    }
    let mut header = [0u8; 16];
    if stream.read_exact(&mut header).is_err() {
        return false;
    }
    let length = i32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let mut rest = vec![0u8; length.saturating_sub(16)];
    if stream.read_exact(&mut rest).is_err() {
        return false;
    }
    // flags (4) + section kind (1), then the body document.
    Document::from_reader(&rest[5..])
        .map(|reply| reply.get_f64("ok").ok() == Some(1.0))
        .unwrap_or(false)
}

#[test]
fn logs_one_line_per_listener_with_address_backend_and_auth() {
    let mut server = TestServer::start();
    let log = server.stderr_log();
    let line = log
        .lines()
        .find(|line| line.contains("listening"))
        .unwrap_or_else(|| panic!("no listening line in\n{log}"));
    assert!(
        line.contains(&format!("127.0.0.1:{}", server.port())),
        "{line}"
    );
    let backend = match server.backend() {
        common::TestBackend::Sqlite { .. } => "backend=sqlite",
        common::TestBackend::Postgres { .. } => "backend=postgres",
        common::TestBackend::Oracle { .. } => "backend=oracle",
    };
    assert!(line.contains(backend), "{line}");
    assert!(line.contains("auth=on (no users yet)"), "{line}");
    assert!(line.contains("tls=disabled"), "{line}");
    assert_eq!(log.matches("mongo listening").count(), 1, "{log}");
    let rest_line = log
        .lines()
        .find(|line| line.contains("rest listening"))
        .unwrap_or_else(|| panic!("no rest listening line in\n{log}"));
    assert!(
        rest_line.contains(&format!("127.0.0.1:{}", server.rest_port())),
        "{rest_line}"
    );
    assert!(rest_line.contains(backend), "{rest_line}");
    assert!(rest_line.contains("auth=on (no users yet)"), "{rest_line}");
    assert_eq!(log.matches("rest listening").count(), 1, "{log}");
    assert!(server.terminate().success());
}

/// An OP_MSG `insert` of `documents` into `db.collection`, the documents as a kind-1
/// sequence (as drivers send them).
fn insert_message(db: &str, collection: &str, documents: &[Document]) -> Vec<u8> {
    let body = doc! {"insert": collection, "ordered": true, "$db": db}
        .to_vec()
        .expect("encode");
    let mut sequence = Vec::new();
    sequence.extend_from_slice(b"documents\0");
    for document in documents {
        sequence.extend_from_slice(&document.to_vec().expect("encode"));
    }
    let sequence_length = 4 + sequence.len();
    let length = 16 + 4 + 1 + body.len() + 1 + sequence_length;
    let mut message = Vec::with_capacity(length);
    message.extend_from_slice(&(length as i32).to_le_bytes());
    message.extend_from_slice(&1i32.to_le_bytes());
    message.extend_from_slice(&0i32.to_le_bytes());
    message.extend_from_slice(&2013i32.to_le_bytes());
    message.extend_from_slice(&0u32.to_le_bytes());
    message.push(0);
    message.extend_from_slice(&body);
    message.push(1);
    message.extend_from_slice(&(sequence_length as i32).to_le_bytes());
    message.extend_from_slice(&sequence);
    message
}

/// Reads one OP_MSG reply body.
fn read_reply(stream: &mut TcpStream) -> Document {
    let mut header = [0u8; 16];
    stream.read_exact(&mut header).expect("reply header");
    let length = i32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let mut rest = vec![0u8; length - 16];
    stream.read_exact(&mut rest).expect("reply body");
    Document::from_reader(&rest[5..]).expect("reply document")
}

#[test]
fn sigterm_finishes_the_command_in_flight_then_exits_cleanly() {
    let mut server = TestServer::start();
    // One command (under maxWriteBatchSize and 48 MB) long enough to still be running when
    // the signal arrives.
    let documents: Vec<Document> = (0..100_000)
        .map(|i| doc! {"_id": i, "payload": "x".repeat(20)})
        .collect();
    let message = insert_message("life", "batch", &documents);
    let mut stream = TcpStream::connect(format!("127.0.0.1:{}", server.port())).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    stream.write_all(&message).expect("send the insert");
    std::thread::sleep(Duration::from_millis(200));
    let status = server.terminate();

    let reply = read_reply(&mut stream);
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0), "{reply}");
    assert_eq!(reply.get_i32("n").ok(), Some(100_000), "{reply}");
    assert!(
        status.success(),
        "docgate exited with {status}\n{}",
        server.stderr_log()
    );
    assert!(server.stderr_log().contains("shutting down"));

    server.restart_same_data();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let count = runtime.block_on(async {
        let client = server.client().await;
        client
            .database("life")
            .collection::<Document>("batch")
            .count_documents(doc! {})
            .await
            .expect("count")
    });
    assert_eq!(
        count, 100_000,
        "every acknowledged document is there after the restart"
    );
}

#[test]
fn connections_beyond_the_limit_wait_for_a_free_slot() {
    let server = TestServer::start_with_args(&["--max-connections", "2"]);
    let address = format!("127.0.0.1:{}", server.port());
    let mut first = TcpStream::connect(&address).expect("connect 1");
    let mut second = TcpStream::connect(&address).expect("connect 2");
    assert!(ping_answered(&mut first, Duration::from_secs(10)));
    assert!(ping_answered(&mut second, Duration::from_secs(10)));

    // The third connection is accepted by the kernel but not served while two are open.
    let mut third = TcpStream::connect(&address).expect("connect 3");
    assert!(
        !ping_answered(&mut third, Duration::from_millis(700)),
        "served beyond the limit"
    );

    // Closing one frees a slot; a new connection is then served.
    drop(first);
    drop(third);
    let mut fourth = TcpStream::connect(&address).expect("connect 4");
    assert!(
        ping_answered(&mut fourth, Duration::from_secs(10)),
        "not served after a slot freed"
    );
    assert!(
        ping_answered(&mut second, Duration::from_secs(10)),
        "existing connection still works"
    );
}
