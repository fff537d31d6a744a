//! Malformed and unusual OP_MSG messages and connection behaviour on the MongoDB wire
//! protocol, sent as hand-built bytes over a raw TCP socket: bad section structure,
//! kind-1 document sequences, moreToCome, pipelining and byte-at-a-time requests,
//! garbage OP_COMPRESSED, the legacy OP_QUERY handshake, stalled and many
//! simultaneous connections. Each must get a MongoDB-style error reply, a correct
//! answer or a clean close — never a hang — and the process must keep serving.
//!
//! Not for framing, BSON, checksum, opcode or command errors (see `bad_input.rs`), the
//! frame builders (see `raw_wire/mod.rs`) or driver-level behaviour (see
//! `driver_crud.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod raw_wire;

use std::net::TcpStream;
use std::time::Duration;

use common::TestServer;
use mongodb::bson::doc;
use raw_wire::*;

// ---------------------------------------------------------------------------
// OP_MSG structure
// ---------------------------------------------------------------------------

#[test]
fn malformed_op_msg_structure_is_refused() {
    let server = TestServer::start();
    let ping = doc! { "ping": 1, "$db": "admin" };
    let insert = doc! { "insert": "c", "$db": "test" };
    let docs = [doc! { "_id": 1 }];

    let mut unknown_kind = vec![5u8];
    unknown_kind.extend_from_slice(&ping.to_vec().expect("bson"));

    let mut both_bodies = kind0(&ping);
    both_bodies.extend_from_slice(&kind0(&ping));

    let mut overrunning_seq = kind0(&insert);
    let seq = kind1("documents", &docs);
    let mut bad_seq = seq.clone();
    bad_seq[1..5].copy_from_slice(&(seq.len() as i32 + 100).to_le_bytes());
    overrunning_seq.extend_from_slice(&bad_seq);

    let mut short_seq = kind0(&insert);
    let mut bad_seq = seq.clone();
    bad_seq[1..5].copy_from_slice(&2i32.to_le_bytes());
    short_seq.extend_from_slice(&bad_seq);

    let mut trailing = kind0(&ping);
    trailing.extend_from_slice(&[0xAB, 0xCD]);

    let cases: Vec<(&str, u32, Vec<u8>)> = vec![
        ("unknown section kind 5", 0, unknown_kind),
        ("no sections at all", 0, Vec::new()),
        (
            "only a kind-1 section, no body",
            0,
            kind1("documents", &docs),
        ),
        ("two kind-0 sections", 0, both_bodies),
        ("kind-1 size runs past the message", 0, overrunning_seq),
        ("kind-1 size smaller than its own header", 0, short_seq),
        ("garbage after the body section", 0, trailing),
        // Bits 0-15 are required: an unknown one must not be ignored.
        ("unknown required flag bit 3", 1 << 3, kind0(&ping)),
    ];
    for (i, (what, flags, sections)) in cases.into_iter().enumerate() {
        let mut stream = connect(&server);
        send(
            &mut stream,
            &op_msg_sections(300 + i as i32, flags, &sections),
        );
        assert_error_or_close(&mut stream, what);
    }
    assert_still_serving(&server, "malformed OP_MSG structures");

    // Nothing from the malformed inserts was written.
    let mut stream = connect(&server);
    let found = command(
        &mut stream,
        399,
        &doc! { "find": "c", "filter": {}, "$db": "test" },
    );
    let batch_len = found
        .body
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .map(|b| b.len())
        .unwrap_or_else(|_| panic!("find reply without a cursor: {}", found.body));
    assert_eq!(batch_len, 0, "{}", found.body);
}

#[test]
fn bad_command_documents_get_error_replies() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    let cases = [
        ("empty command document", doc! {}),
        ("command without $db", doc! { "ping": 1 }),
        ("$db that is not a string", doc! { "ping": 1, "$db": 5 }),
        (
            "insert whose documents is not an array",
            doc! { "insert": "c", "documents": 5, "$db": "test" },
        ),
        (
            "find whose filter is not a document",
            doc! { "find": "c", "filter": "x", "$db": "test" },
        ),
    ];
    for (i, (what, cmd)) in cases.into_iter().enumerate() {
        let reply = command(&mut stream, 400 + i as i32, &cmd);
        assert_error_reply(&reply.body, what);
    }
    // The same connection still works.
    let ping = command(&mut stream, 499, &doc! { "ping": 1, "$db": "admin" });
    assert_eq!(ok_of(&ping.body), 1.0);
}

#[test]
fn insert_through_a_kind_1_document_sequence() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    let mut sections = kind0(&doc! { "insert": "seq", "$db": "test" });
    sections.extend_from_slice(&kind1(
        "documents",
        &[doc! { "_id": 1 }, doc! { "_id": 2 }, doc! { "_id": 3 }],
    ));
    send(&mut stream, &op_msg_sections(501, 0, &sections));
    let Outcome::Reply(reply) = read_outcome(&mut stream, "kind-1 insert") else {
        panic!("server closed the connection on a kind-1 insert");
    };
    assert_eq!(reply.response_to, 501);
    assert_eq!(ok_of(&reply.body), 1.0, "{}", reply.body);
    assert_eq!(reply.body.get_i32("n").ok(), Some(3), "{}", reply.body);
}

#[test]
fn more_to_come_request_gets_no_reply_and_is_applied() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    // moreToCome (bit 1): the server must not answer this message.
    let insert = doc! {
        "insert": "fire_and_forget",
        "documents": [ { "_id": 1 } ],
        "writeConcern": { "w": 0 },
        "$db": "test",
    };
    send(&mut stream, &op_msg_sections(601, 1 << 1, &kind0(&insert)));
    let reply = command(
        &mut stream,
        602,
        &doc! { "find": "fire_and_forget", "filter": {}, "$db": "test" },
    );
    // `command` already checked that this reply answers 602, not 601.
    let batch = reply
        .body
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .unwrap_or_else(|_| panic!("find reply without a cursor: {}", reply.body));
    assert_eq!(batch.len(), 1, "{}", reply.body);
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    let mut bytes = Vec::new();
    for id in 701..=705 {
        bytes.extend_from_slice(&op_msg(id, &doc! { "ping": 1, "$db": "admin" }));
    }
    send(&mut stream, &bytes);
    for id in 701..=705 {
        let Outcome::Reply(r) = read_outcome(&mut stream, "pipelined ping") else {
            panic!("connection closed before reply to {id}");
        };
        assert_eq!(r.response_to, id);
        assert_eq!(ok_of(&r.body), 1.0);
    }
}

#[test]
fn request_sent_one_byte_at_a_time_is_answered() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    stream.set_nodelay(true).expect("nodelay");
    for byte in op_msg(801, &doc! { "ping": 1, "$db": "admin" }) {
        send(&mut stream, &[byte]);
        std::thread::sleep(Duration::from_millis(1));
    }
    let Outcome::Reply(r) = read_outcome(&mut stream, "byte-by-byte ping") else {
        panic!("connection closed instead of answering a slowly sent ping");
    };
    assert_eq!(r.response_to, 801);
    assert_eq!(ok_of(&r.body), 1.0);
}

// ---------------------------------------------------------------------------
// OP_COMPRESSED and legacy opcodes
// ---------------------------------------------------------------------------

#[test]
fn malformed_op_compressed_is_refused() {
    let server = TestServer::start();
    // The OP_MSG body (flags + sections) that a valid message would carry.
    let inner = op_msg(0, &doc! { "ping": 1, "$db": "admin" })[16..].to_vec();
    let n = inner.len() as i32;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "snappy with garbage payload",
            op_compressed(1001, n, 1, &[0xFF; 40]),
        ),
        (
            "zlib with garbage payload",
            op_compressed(1002, n, 2, &[0xFF; 40]),
        ),
        (
            "zstd with garbage payload",
            op_compressed(1003, n, 3, &[0xFF; 40]),
        ),
        (
            "unknown compressor id 99",
            op_compressed(1004, n, 99, &inner),
        ),
        (
            "noop with uncompressedSize over 48,000,000",
            op_compressed(1005, 2_000_000_000, 0, &inner),
        ),
        (
            "noop with negative uncompressedSize",
            op_compressed(1006, -5, 0, &inner),
        ),
        (
            "noop with wrong uncompressedSize",
            op_compressed(1007, n + 10, 0, &inner),
        ),
    ];
    for (what, msg) in cases {
        let mut stream = connect(&server);
        send(&mut stream, &msg);
        assert_error_or_close(&mut stream, what);
    }
    assert_still_serving(&server, "malformed OP_COMPRESSED messages");
}

#[test]
fn legacy_op_query_handshake_works_and_other_op_query_is_refused() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    send(
        &mut stream,
        &op_query(1101, "admin.$cmd", &doc! { "isMaster": 1 }),
    );
    let Outcome::Reply(r) = read_outcome(&mut stream, "OP_QUERY isMaster") else {
        panic!("server closed the connection on the legacy handshake");
    };
    assert_eq!(
        r.opcode, OP_REPLY,
        "legacy handshake is answered with OP_REPLY"
    );
    assert_eq!(r.response_to, 1101);
    assert_eq!(ok_of(&r.body), 1.0, "{}", r.body);
    assert_eq!(r.body.get_bool("ismaster").ok(), Some(true), "{}", r.body);
    // After the handshake the same connection speaks OP_MSG.
    let ping = command(&mut stream, 1102, &doc! { "ping": 1, "$db": "admin" });
    assert_eq!(ok_of(&ping.body), 1.0);
    drop(stream);

    // OP_QUERY on a collection (legacy find, removed in MongoDB 5.1) and a truncated
    // OP_QUERY are refused.
    let mut stream = connect(&server);
    send(&mut stream, &op_query(1103, "test.coll", &doc! {}));
    assert_error_or_close(&mut stream, "OP_QUERY on a collection");
    drop(stream);
    let mut stream = connect(&server);
    let mut truncated = op_query(1104, "admin.$cmd", &doc! { "isMaster": 1 });
    truncated.truncate(30);
    truncated[..4].copy_from_slice(&30i32.to_le_bytes());
    send(&mut stream, &truncated);
    assert_error_or_close(&mut stream, "truncated OP_QUERY");
    drop(stream);
    assert_still_serving(&server, "legacy OP_QUERY");
}

// ---------------------------------------------------------------------------
// stalled and many connections
// ---------------------------------------------------------------------------

#[test]
fn a_stalled_connection_does_not_block_others() {
    let server = TestServer::start();
    // One connection sends half a header and then nothing; another sends half a body.
    let mut stalled_header = connect(&server);
    send(&mut stalled_header, &[0x20, 0x00, 0x00]);
    let mut stalled_body = connect(&server);
    let full = op_msg(1201, &doc! { "ping": 1, "$db": "admin" });
    send(&mut stalled_body, &full[..full.len() / 2]);

    assert_still_serving(&server, "two stalled connections");

    // The half-sent message completes normally once the rest arrives.
    send(&mut stalled_body, &full[full.len() / 2..]);
    let Outcome::Reply(r) = read_outcome(&mut stalled_body, "completed ping") else {
        panic!("server closed a connection that was only slow");
    };
    assert_eq!(r.response_to, 1201);
    assert_eq!(ok_of(&r.body), 1.0);
    drop(stalled_header);
}

#[test]
fn many_simultaneous_connections_are_served() {
    const CONNECTIONS: i32 = 64;
    let server = TestServer::start();
    let mut streams: Vec<TcpStream> = (0..CONNECTIONS).map(|_| connect(&server)).collect();
    for (i, s) in streams.iter_mut().enumerate() {
        send(
            s,
            &op_msg(1300 + i as i32, &doc! { "ping": 1, "$db": "admin" }),
        );
    }
    for (i, s) in streams.iter_mut().enumerate() {
        let Outcome::Reply(r) = read_outcome(s, "ping on one of many connections") else {
            panic!("connection {i} of {CONNECTIONS} was closed");
        };
        assert_eq!(r.response_to, 1300 + i as i32);
        assert_eq!(ok_of(&r.body), 1.0);
    }
}
