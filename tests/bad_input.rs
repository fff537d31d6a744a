//! Malformed and hostile input on the MongoDB wire protocol, sent as hand-built bytes
//! over a raw TCP socket: truncated and oversized frames, bad BSON, wrong checksums,
//! unknown opcodes and commands, over-deep documents. Each must get a MongoDB-style
//! error reply or a clean close — never a hang (reads have timeouts) — and the
//! process must keep serving new connections. Also checks OP_MSG checksums both ways.
//!
//! Not for driver-level behaviour (see `driver_crud.rs`).

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use common::TestServer;
use mongodb::bson::{doc, Bson, Document};

const OP_REPLY: i32 = 1;
const OP_MSG: i32 = 2013;
const CHECKSUM_PRESENT: u32 = 1;
/// Longest any single read may block before the test calls it a hang.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------
// raw wire helpers
// ---------------------------------------------------------------------------

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as OP_MSG checksums use.
fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0x82F6_3B78 & mask);
        }
    }
    !crc
}

fn header(len: i32, request_id: i32, response_to: i32, opcode: i32) -> Vec<u8> {
    let mut h = Vec::with_capacity(16);
    h.extend_from_slice(&len.to_le_bytes());
    h.extend_from_slice(&request_id.to_le_bytes());
    h.extend_from_slice(&response_to.to_le_bytes());
    h.extend_from_slice(&opcode.to_le_bytes());
    h
}

/// An OP_MSG with one kind-0 section holding `body` (already BSON bytes).
/// With `checksum`, sets checksumPresent and appends the CRC-32C; `corrupt_crc`
/// then flips bits of the appended value.
fn op_msg_raw(request_id: i32, body: &[u8], checksum: bool, corrupt_crc: bool) -> Vec<u8> {
    let flags: u32 = if checksum { CHECKSUM_PRESENT } else { 0 };
    let len = 16 + 4 + 1 + body.len() + if checksum { 4 } else { 0 };
    let mut msg = header(len as i32, request_id, 0, OP_MSG);
    msg.extend_from_slice(&flags.to_le_bytes());
    msg.push(0);
    msg.extend_from_slice(body);
    if checksum {
        let mut crc = crc32c(&msg);
        if corrupt_crc {
            crc ^= 0xDEAD_BEEF;
        }
        msg.extend_from_slice(&crc.to_le_bytes());
    }
    assert_eq!(msg.len(), len);
    msg
}

fn op_msg(request_id: i32, body: &Document) -> Vec<u8> {
    op_msg_raw(
        request_id,
        &body.to_vec().expect("encode BSON"),
        false,
        false,
    )
}

fn connect(server: &TestServer) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
    stream
        .set_read_timeout(Some(READ_TIMEOUT))
        .expect("set read timeout");
    stream
        .set_write_timeout(Some(READ_TIMEOUT))
        .expect("set write timeout");
    stream
}

/// What the server did after a request.
#[derive(Debug)]
enum Outcome {
    /// The server closed the connection (EOF or reset) without a (complete) reply.
    Closed,
    /// A complete reply message.
    Reply(Reply),
}

#[derive(Debug)]
struct Reply {
    response_to: i32,
    opcode: i32,
    /// OP_MSG flag bits (0 for OP_REPLY).
    flags: u32,
    /// The reply document (OP_MSG kind-0 section, or the first OP_REPLY document).
    body: Document,
    /// The whole message, header included.
    raw: Vec<u8>,
}

fn is_closed(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::UnexpectedEof
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
    )
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Reads one reply, or notices a close. Panics if the server neither answers nor
/// closes within the read timeout (a hang), or if the reply is not well formed.
fn read_outcome(stream: &mut TcpStream, what: &str) -> Outcome {
    let mut head = [0u8; 16];
    if let Err(e) = stream.read_exact(&mut head) {
        if is_closed(&e) {
            return Outcome::Closed;
        }
        if is_timeout(&e) {
            panic!("{what}: server neither replied nor closed within {READ_TIMEOUT:?}");
        }
        panic!("{what}: reading reply header: {e}");
    }
    let int = |i: usize| i32::from_le_bytes(head[i..i + 4].try_into().expect("4 bytes"));
    let len = int(0);
    assert!(
        (16..=48_000_000).contains(&len),
        "{what}: reply length {len} out of range"
    );
    let mut rest = vec![0u8; len as usize - 16];
    if let Err(e) = stream.read_exact(&mut rest) {
        if is_closed(&e) {
            panic!("{what}: server closed in the middle of a reply");
        }
        panic!("{what}: reading reply body: {e}");
    }
    let mut raw = head.to_vec();
    raw.extend_from_slice(&rest);
    let opcode = int(12);
    let (flags, body) = match opcode {
        OP_MSG => {
            let flags = u32::from_le_bytes(rest[0..4].try_into().expect("flags"));
            assert_eq!(rest[4], 0, "{what}: reply's first section is not kind 0");
            let body = Document::from_reader(&rest[5..]).expect("reply BSON");
            (flags, body)
        }
        OP_REPLY => {
            // responseFlags i32, cursorID i64, startingFrom i32, numberReturned i32, docs.
            let body = Document::from_reader(&rest[20..]).expect("OP_REPLY BSON");
            (0, body)
        }
        other => panic!("{what}: reply has unexpected opcode {other}"),
    };
    Outcome::Reply(Reply {
        response_to: int(8),
        opcode,
        flags,
        body,
        raw,
    })
}

fn ok_of(body: &Document) -> f64 {
    match body.get("ok") {
        Some(Bson::Int32(v)) => f64::from(*v),
        Some(Bson::Int64(v)) => *v as f64,
        Some(Bson::Double(v)) => *v,
        other => panic!("reply has no numeric ok: {body} ({other:?})"),
    }
}

/// An error reply must look like MongoDB's: ok 0, a numeric code and an errmsg.
fn assert_error_reply(body: &Document, what: &str) {
    assert_eq!(ok_of(body), 0.0, "{what}: expected ok: 0, got {body}");
    assert!(
        matches!(body.get("code"), Some(Bson::Int32(_) | Bson::Int64(_))),
        "{what}: error reply without a numeric code: {body}"
    );
    assert!(
        body.get_str("errmsg")
            .map(|m| !m.is_empty())
            .unwrap_or(false),
        "{what}: error reply without errmsg: {body}"
    );
}

/// Either a clean close or a MongoDB-style error reply.
fn assert_error_or_close(stream: &mut TcpStream, what: &str) {
    match read_outcome(stream, what) {
        Outcome::Closed => eprintln!("{what}: connection closed"),
        Outcome::Reply(r) => {
            eprintln!("{what}: error reply {}", r.body);
            assert_error_reply(&r.body, what)
        }
    }
}

/// Sends `bytes` and tolerates the server closing before it has read all of them.
fn send(stream: &mut TcpStream, bytes: &[u8]) {
    if let Err(e) = stream.write_all(bytes) {
        assert!(is_closed(&e), "writing request: {e}");
    }
}

/// Sends a command over an existing connection and returns the OP_MSG reply.
fn command(stream: &mut TcpStream, request_id: i32, cmd: &Document) -> Reply {
    send(stream, &op_msg(request_id, cmd));
    match read_outcome(stream, &format!("command {cmd}")) {
        Outcome::Reply(r) => {
            assert_eq!(r.opcode, OP_MSG, "reply to OP_MSG must be OP_MSG");
            assert_eq!(r.response_to, request_id, "responseTo of {cmd}");
            r
        }
        Outcome::Closed => panic!("server closed the connection instead of answering {cmd}"),
    }
}

/// A brand-new connection answers `ping` with ok: 1: the process stayed up.
fn assert_still_serving(server: &TestServer, after: &str) {
    let mut stream = connect(server);
    let reply = command(&mut stream, 77, &doc! { "ping": 1, "$db": "admin" });
    assert_eq!(
        ok_of(&reply.body),
        1.0,
        "ping on a new connection after {after}: {}",
        reply.body
    );
}

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
// OP_MSG structure
// ---------------------------------------------------------------------------

/// An OP_MSG from raw flag bits and already-encoded sections (no checksum).
fn op_msg_sections(request_id: i32, flags: u32, sections: &[u8]) -> Vec<u8> {
    let len = 16 + 4 + sections.len();
    let mut msg = header(len as i32, request_id, 0, OP_MSG);
    msg.extend_from_slice(&flags.to_le_bytes());
    msg.extend_from_slice(sections);
    msg
}

fn kind0(body: &Document) -> Vec<u8> {
    let mut s = vec![0u8];
    s.extend_from_slice(&body.to_vec().expect("bson"));
    s
}

/// A kind-1 document sequence section named `id` holding `docs`.
fn kind1(id: &str, docs: &[Document]) -> Vec<u8> {
    let mut payload = Vec::new();
    payload.extend_from_slice(id.as_bytes());
    payload.push(0);
    for d in docs {
        payload.extend_from_slice(&d.to_vec().expect("bson"));
    }
    let mut s = vec![1u8];
    s.extend_from_slice(&(4 + payload.len() as i32).to_le_bytes());
    s.extend_from_slice(&payload);
    s
}

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
// document size limit
// ---------------------------------------------------------------------------

/// `{_id: id, s: "xxx…"}` whose BSON encoding is exactly `size` bytes.
fn document_of_size(id: &str, size: usize) -> Document {
    let base = doc! { "_id": id, "s": "" }.to_vec().expect("bson").len();
    let d = doc! { "_id": id, "s": "x".repeat(size - base) };
    assert_eq!(d.to_vec().expect("bson").len(), size);
    d
}

fn insert_one_raw(stream: &mut TcpStream, request_id: i32, d: &Document) -> Reply {
    let mut sections = kind0(&doc! { "insert": "big", "$db": "test" });
    sections.extend_from_slice(&kind1("documents", std::slice::from_ref(d)));
    send(stream, &op_msg_sections(request_id, 0, &sections));
    match read_outcome(stream, "insert of a large document") {
        Outcome::Reply(r) => {
            assert_eq!(r.response_to, request_id);
            r
        }
        Outcome::Closed => panic!("server closed the connection on a large insert"),
    }
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

// ---------------------------------------------------------------------------
// OP_COMPRESSED and legacy opcodes
// ---------------------------------------------------------------------------

fn op_compressed(
    request_id: i32,
    uncompressed_size: i32,
    compressor: u8,
    payload: &[u8],
) -> Vec<u8> {
    let len = 16 + 4 + 4 + 1 + payload.len();
    let mut msg = header(len as i32, request_id, 0, 2012);
    msg.extend_from_slice(&OP_MSG.to_le_bytes());
    msg.extend_from_slice(&uncompressed_size.to_le_bytes());
    msg.push(compressor);
    msg.extend_from_slice(payload);
    msg
}

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

fn op_query(request_id: i32, namespace: &str, query: &Document) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0i32.to_le_bytes()); // flags
    body.extend_from_slice(namespace.as_bytes());
    body.push(0);
    body.extend_from_slice(&0i32.to_le_bytes()); // numberToSkip
    body.extend_from_slice(&(-1i32).to_le_bytes()); // numberToReturn
    body.extend_from_slice(&query.to_vec().expect("bson"));
    let mut msg = header(16 + body.len() as i32, request_id, 0, 2004);
    msg.extend_from_slice(&body);
    msg
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
