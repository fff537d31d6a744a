//! Hand-built MongoDB wire-protocol frames and raw-socket helpers for the
//! `bad_input*.rs` tests: headers, OP_MSG (kind-0 and kind-1 sections, CRC-32C
//! checksums), OP_COMPRESSED and legacy OP_QUERY builders, plus connecting with read
//! timeouts, reading a reply or noticing a close, and MongoDB-style error checks.
//!
//! Not for the server harness (see `common/mod.rs`) or for assertions of a single test.

#![allow(dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::common::TestServer;
use mongodb::bson::{doc, Bson, Document};

pub const OP_REPLY: i32 = 1;
pub const OP_MSG: i32 = 2013;
pub const CHECKSUM_PRESENT: u32 = 1;
/// Longest any single read may block before the test calls it a hang.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as OP_MSG checksums use.
pub fn crc32c(data: &[u8]) -> u32 {
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

pub fn header(len: i32, request_id: i32, response_to: i32, opcode: i32) -> Vec<u8> {
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
pub fn op_msg_raw(request_id: i32, body: &[u8], checksum: bool, corrupt_crc: bool) -> Vec<u8> {
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

pub fn op_msg(request_id: i32, body: &Document) -> Vec<u8> {
    op_msg_raw(
        request_id,
        &body.to_vec().expect("encode BSON"),
        false,
        false,
    )
}

pub fn connect(server: &TestServer) -> TcpStream {
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
pub enum Outcome {
    /// The server closed the connection (EOF or reset) without a (complete) reply.
    Closed,
    /// A complete reply message.
    Reply(Reply),
}

#[derive(Debug)]
pub struct Reply {
    pub response_to: i32,
    pub opcode: i32,
    /// OP_MSG flag bits (0 for OP_REPLY).
    pub flags: u32,
    /// The reply document (OP_MSG kind-0 section, or the first OP_REPLY document).
    pub body: Document,
    /// The whole message, header included.
    pub raw: Vec<u8>,
}

pub fn is_closed(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::UnexpectedEof
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
    )
}

pub fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Reads one reply, or notices a close. Panics if the server neither answers nor
/// closes within the read timeout (a hang), or if the reply is not well formed.
pub fn read_outcome(stream: &mut TcpStream, what: &str) -> Outcome {
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

pub fn ok_of(body: &Document) -> f64 {
    match body.get("ok") {
        Some(Bson::Int32(v)) => f64::from(*v),
        Some(Bson::Int64(v)) => *v as f64,
        Some(Bson::Double(v)) => *v,
        other => panic!("reply has no numeric ok: {body} ({other:?})"),
    }
}

/// An error reply must look like MongoDB's: ok 0, a numeric code and an errmsg.
pub fn assert_error_reply(body: &Document, what: &str) {
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
pub fn assert_error_or_close(stream: &mut TcpStream, what: &str) {
    match read_outcome(stream, what) {
        Outcome::Closed => eprintln!("{what}: connection closed"),
        Outcome::Reply(r) => {
            eprintln!("{what}: error reply {}", r.body);
            assert_error_reply(&r.body, what)
        }
    }
}

/// Sends `bytes` and tolerates the server closing before it has read all of them.
pub fn send(stream: &mut TcpStream, bytes: &[u8]) {
    if let Err(e) = stream.write_all(bytes) {
        assert!(is_closed(&e), "writing request: {e}");
    }
}

/// Sends a command over an existing connection and returns the OP_MSG reply.
pub fn command(stream: &mut TcpStream, request_id: i32, cmd: &Document) -> Reply {
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
pub fn assert_still_serving(server: &TestServer, after: &str) {
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
// OP_MSG sections, OP_COMPRESSED and OP_QUERY
// ---------------------------------------------------------------------------

/// An OP_MSG from raw flag bits and already-encoded sections (no checksum).
pub fn op_msg_sections(request_id: i32, flags: u32, sections: &[u8]) -> Vec<u8> {
    let len = 16 + 4 + sections.len();
    let mut msg = header(len as i32, request_id, 0, OP_MSG);
    msg.extend_from_slice(&flags.to_le_bytes());
    msg.extend_from_slice(sections);
    msg
}

pub fn kind0(body: &Document) -> Vec<u8> {
    let mut s = vec![0u8];
    s.extend_from_slice(&body.to_vec().expect("bson"));
    s
}

/// A kind-1 document sequence section named `id` holding `docs`.
pub fn kind1(id: &str, docs: &[Document]) -> Vec<u8> {
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

pub fn insert_one_raw(stream: &mut TcpStream, request_id: i32, d: &Document) -> Reply {
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

pub fn op_compressed(
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

pub fn op_query(request_id: i32, namespace: &str, query: &Document) -> Vec<u8> {
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
