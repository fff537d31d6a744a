//! Malformed and hostile input on the MongoDB wire protocol, sent as hand-built bytes
//! over a raw TCP socket: truncated and oversized frames, bad BSON, wrong checksums,
//! unknown opcodes and commands, over-deep and over-large documents. Each must get a
//! MongoDB-style error reply or a clean close — never a hang (reads have timeouts) —
//! and the process must keep serving new connections. Also checks OP_MSG checksums
//! both ways.
//!
//! Not for OP_MSG structure, compression, legacy opcodes or connection behaviour (see
//! `bad_input_messages.rs`), the frame builders (see `raw_wire/mod.rs`) or
//! driver-level behaviour (see `driver_crud.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod raw_wire;

use std::net::Shutdown;

use common::TestServer;
use mongodb::bson::{doc, Document};
use raw_wire::*;

// ---------------------------------------------------------------------------
// framing errors
// ---------------------------------------------------------------------------

#[test]
fn valid_op_msg_ping_is_answered() {
    // Guards the helpers above: a well-formed message gets a well-formed answer.
    let server = TestServer::start();
    let mut stream = connect(&server);
    let reply = command(&mut stream, 1, &doc! { "ping": 1, "$db": "admin" });
    assert_eq!(ok_of(&reply.body), 1.0, "{}", reply.body);
    assert_eq!(
        reply.flags & CHECKSUM_PRESENT,
        0,
        "no checksum asked, none sent"
    );
}

#[test]
fn truncated_header_then_close() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    let full = op_msg(5, &doc! { "ping": 1, "$db": "admin" });
    send(&mut stream, &full[..7]);
    stream.shutdown(Shutdown::Write).expect("half-close");
    assert_error_or_close(&mut stream, "truncated header");
    drop(stream);
    assert_still_serving(&server, "a truncated header");
}

#[test]
fn truncated_body_then_close() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    let full = op_msg(5, &doc! { "ping": 1, "$db": "admin" });
    send(&mut stream, &full[..full.len() - 3]);
    stream.shutdown(Shutdown::Write).expect("half-close");
    assert_error_or_close(&mut stream, "truncated body");
    drop(stream);
    assert_still_serving(&server, "a truncated body");
}

#[test]
fn message_length_over_48_000_000_is_refused_without_reading_it() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    // Only the header and a few bytes are sent: a server that waited for the
    // announced 48 MB would hang here, which the read timeout turns into a failure.
    let mut msg = header(48_000_001, 9, 0, OP_MSG);
    msg.extend_from_slice(&[0u8; 5]);
    send(&mut stream, &msg);
    assert_error_or_close(&mut stream, "length 48,000,001");
    drop(stream);

    let mut stream = connect(&server);
    send(&mut stream, &header(i32::MAX, 10, 0, OP_MSG));
    assert_error_or_close(&mut stream, "length i32::MAX");
    drop(stream);
    assert_still_serving(&server, "oversized message lengths");
}

#[test]
fn message_length_below_header_size_is_refused() {
    let server = TestServer::start();
    for len in [0, 10, 15, -1, i32::MIN] {
        let mut stream = connect(&server);
        let mut msg = header(len, 11, 0, OP_MSG);
        msg.extend_from_slice(&[0u8; 16]);
        send(&mut stream, &msg);
        assert_error_or_close(&mut stream, &format!("length {len}"));
    }
    assert_still_serving(&server, "message lengths below 16");
}

#[test]
fn unknown_opcode_is_refused() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    let body = doc! { "ping": 1, "$db": "admin" }.to_vec().expect("bson");
    let mut msg = header(16 + body.len() as i32, 12, 0, 9999);
    msg.extend_from_slice(&body);
    send(&mut stream, &msg);
    assert_error_or_close(&mut stream, "opcode 9999");
    drop(stream);
    assert_still_serving(&server, "an unknown opcode");
}

#[test]
fn wrong_crc32c_checksum_is_refused() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    let body = doc! { "ping": 1, "$db": "admin" }.to_vec().expect("bson");
    send(&mut stream, &op_msg_raw(13, &body, true, true));
    assert_error_or_close(&mut stream, "wrong CRC-32C");
    drop(stream);
    assert_still_serving(&server, "a wrong checksum");
}

#[test]
fn correct_crc32c_checksum_is_accepted_and_reply_carries_one() {
    // Known-answer test for the checksum helper (RFC 3720 check value).
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);

    let server = TestServer::start();
    let mut stream = connect(&server);
    let body = doc! { "ping": 1, "$db": "admin" }.to_vec().expect("bson");
    send(&mut stream, &op_msg_raw(14, &body, true, false));
    let Outcome::Reply(reply) = read_outcome(&mut stream, "checksummed ping") else {
        panic!("server closed the connection on a correctly checksummed OP_MSG");
    };
    assert_eq!(reply.opcode, OP_MSG);
    assert_eq!(reply.response_to, 14);
    assert_eq!(ok_of(&reply.body), 1.0, "{}", reply.body);
    assert_eq!(
        reply.flags & CHECKSUM_PRESENT,
        CHECKSUM_PRESENT,
        "reply to a checksummed request must set checksumPresent"
    );
    let n = reply.raw.len();
    let sent_crc = u32::from_le_bytes(reply.raw[n - 4..].try_into().expect("crc"));
    assert_eq!(
        sent_crc,
        crc32c(&reply.raw[..n - 4]),
        "reply checksum does not match its bytes"
    );
    // The connection stays usable without checksums afterwards.
    let again = command(&mut stream, 15, &doc! { "ping": 1, "$db": "admin" });
    assert_eq!(ok_of(&again.body), 1.0);
}

// ---------------------------------------------------------------------------
// bad content in well-formed frames
// ---------------------------------------------------------------------------

/// Three malformed BSON bodies, each with a correct frame length.
fn bad_bson_bodies() -> Vec<(&'static str, Vec<u8>)> {
    fn with_len(mut doc: Vec<u8>) -> Vec<u8> {
        let len = doc.len() as i32;
        doc[..4].copy_from_slice(&len.to_le_bytes());
        doc
    }
    // {"a": <string claiming 1000 bytes>} — the string runs past the document.
    let string_overrun = with_len(vec![
        0, 0, 0, 0, 0x02, b'a', 0, 0xE8, 0x03, 0, 0, b'h', b'i', 0, 0,
    ]);
    // An element of type 0x55, which BSON does not define.
    let unknown_type = with_len(vec![0, 0, 0, 0, 0x55, b'a', 0, 1, 2, 3, 4, 0]);
    // A document whose length field says 200 but which is 12 bytes long.
    let mut long_claim = vec![0, 0, 0, 0, 0x10, b'a', 0, 1, 0, 0, 0, 0];
    long_claim[..4].copy_from_slice(&200i32.to_le_bytes());
    vec![
        ("string overrun", string_overrun),
        ("unknown element type", unknown_type),
        ("document length larger than the section", long_claim),
    ]
}

#[test]
fn bad_bson_gets_an_op_msg_error_and_the_connection_survives() {
    let server = TestServer::start();
    for (i, (what, body)) in bad_bson_bodies().into_iter().enumerate() {
        let request_id = 100 + i as i32;
        let mut stream = connect(&server);
        send(&mut stream, &op_msg_raw(request_id, &body, false, false));
        match read_outcome(&mut stream, what) {
            Outcome::Closed => panic!("{what}: expected an OP_MSG error reply, got a close"),
            Outcome::Reply(r) => {
                assert_eq!(r.opcode, OP_MSG, "{what}");
                assert_eq!(r.response_to, request_id, "{what}");
                assert_error_reply(&r.body, what);
            }
        }
        // The frame was well formed, so the connection is still in sync.
        let ping = command(
            &mut stream,
            200 + i as i32,
            &doc! { "ping": 1, "$db": "admin" },
        );
        assert_eq!(ok_of(&ping.body), 1.0, "ping after {what}: {}", ping.body);
    }
    assert_still_serving(&server, "bad BSON");
}

#[test]
fn unknown_command_gets_command_not_found() {
    let server = TestServer::start();
    let mut stream = connect(&server);
    let reply = command(
        &mut stream,
        21,
        &doc! { "noSuchCommandAnywhere": 1, "$db": "admin" },
    );
    assert_error_reply(&reply.body, "unknown command");
    assert_eq!(reply.body.get_i32("code").ok(), Some(59), "{}", reply.body);
    assert_eq!(
        reply.body.get_str("codeName").ok(),
        Some("CommandNotFound"),
        "{}",
        reply.body
    );
    let ping = command(&mut stream, 22, &doc! { "ping": 1, "$db": "admin" });
    assert_eq!(ok_of(&ping.body), 1.0);
    drop(stream);
    assert_still_serving(&server, "an unknown command");
}

fn nested(depth: usize) -> Document {
    let mut d = doc! { "leaf": true };
    for _ in 1..depth {
        d = doc! { "n": d };
    }
    d
}

#[test]
fn document_nested_150_levels_is_rejected_and_not_stored() {
    let server = TestServer::start();
    let mut stream = connect(&server);

    // Sanity: a modestly nested document is accepted.
    let ok = command(
        &mut stream,
        31,
        &doc! { "insert": "deep", "documents": [ { "_id": "shallow", "d": nested(20) } ], "$db": "test" },
    );
    assert_eq!(ok_of(&ok.body), 1.0, "{}", ok.body);
    assert!(!ok.body.contains_key("writeErrors"), "{}", ok.body);

    let reply = command(
        &mut stream,
        32,
        &doc! { "insert": "deep", "documents": [ { "_id": "deep", "d": nested(150) } ], "$db": "test" },
    );
    // Either the command fails (ok: 0) or it reports a write error for the document.
    if ok_of(&reply.body) == 0.0 {
        assert_error_reply(&reply.body, "150-level document");
    } else {
        let errors = reply
            .body
            .get_array("writeErrors")
            .unwrap_or_else(|_| panic!("150-level document was accepted: {}", reply.body));
        assert_eq!(errors.len(), 1, "{}", reply.body);
        let n = reply.body.get_i32("n").unwrap_or(-1);
        assert_eq!(n, 0, "{}", reply.body);
    }

    // Nothing was written.
    let found = command(
        &mut stream,
        33,
        &doc! { "find": "deep", "filter": {}, "$db": "test" },
    );
    assert_eq!(ok_of(&found.body), 1.0, "{}", found.body);
    let batch = found
        .body
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .expect("firstBatch");
    let ids: Vec<&str> = batch
        .iter()
        .filter_map(|d| d.as_document().and_then(|d| d.get_str("_id").ok()))
        .collect();
    assert_eq!(ids, vec!["shallow"], "{}", found.body);
    drop(stream);
    assert_still_serving(&server, "a 150-level document");
}

// ---------------------------------------------------------------------------
// document size limit
// ---------------------------------------------------------------------------

/// `{_id: id, s: "xxx…"}` whose BSON encoding is exactly `size` bytes.
fn document_of_size(id: &str, size: usize) -> Document {
    let base = doc! { "_id": id, "s": "" }.to_vec().expect("bson").len();
    let d = doc! { "_id": id, "s": "x".repeat(size - base) };
    assert_eq!(d.to_vec().expect("bson").len(), size);
    d
}

#[test]
fn document_over_16_mib_is_rejected_and_at_16_mib_is_stored() {
    const MAX: usize = 16 * 1024 * 1024;
    let server = TestServer::start();
    let mut stream = connect(&server);

    let too_big = insert_one_raw(&mut stream, 901, &document_of_size("too big", MAX + 1));
    if ok_of(&too_big.body) == 0.0 {
        assert_error_reply(&too_big.body, "document of 16 MiB + 1");
    } else {
        let errors = too_big
            .body
            .get_array("writeErrors")
            .unwrap_or_else(|_| panic!("16 MiB + 1 document was accepted: {}", too_big.body));
        assert_eq!(errors.len(), 1, "{}", too_big.body);
    }

    let at_limit = document_of_size("at limit", MAX);
    let ok = insert_one_raw(&mut stream, 902, &at_limit);
    assert_eq!(ok_of(&ok.body), 1.0, "{}", ok.body);
    assert!(
        !ok.body.contains_key("writeErrors"),
        "a document of exactly 16 MiB is allowed: {}",
        ok.body
    );

    let found = command(
        &mut stream,
        903,
        &doc! { "find": "big", "filter": {}, "projection": { "_id": 1 }, "$db": "test" },
    );
    let ids: Vec<&str> = found
        .body
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .expect("firstBatch")
        .iter()
        .filter_map(|d| d.as_document().and_then(|d| d.get_str("_id").ok()))
        .collect();
    assert_eq!(ids, vec!["at limit"], "{}", found.body);

    let full = command(
        &mut stream,
        904,
        &doc! { "find": "big", "filter": { "_id": "at limit" }, "$db": "test" },
    );
    let stored = full
        .body
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .expect("firstBatch");
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].as_document(), Some(&at_limit));
    drop(stream);
    assert_still_serving(&server, "a 16 MiB + 1 document");
}
