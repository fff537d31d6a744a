//! Hostile and malformed input against `MessageCodec`: bad lengths (without allocation),
//! bad BSON and section kinds (stream stays in sync), deep nesting (no stack overflow),
//! unknown opcodes, flag bits and compressors, and zip-bomb-like `OP_COMPRESSED` frames.
//!
//! Not for well-formed round trips (see `roundtrip.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use bson::doc;
use bytes::BytesMut;
use docgate_wire::{
    op_code, Incoming, Message, MessageCodec, MsgFlags, Op, OpMsg, WireError,
    MAX_BSON_NESTING_DEPTH, MAX_MESSAGE_SIZE_BYTES,
};
use tokio_util::codec::{Decoder, Encoder};

fn header(len: usize, request_id: i32, op: i32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&(len as i32).to_le_bytes());
    v.extend_from_slice(&request_id.to_le_bytes());
    v.extend_from_slice(&0i32.to_le_bytes());
    v.extend_from_slice(&op.to_le_bytes());
    v
}

/// An OP_MSG frame with flags and raw section bytes.
fn op_msg_frame(request_id: i32, flags: u32, sections: &[u8]) -> Vec<u8> {
    let mut v = header(16 + 4 + sections.len(), request_id, op_code::OP_MSG);
    v.extend_from_slice(&flags.to_le_bytes());
    v.extend_from_slice(sections);
    v
}

fn kind0(doc_bytes: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8];
    v.extend_from_slice(doc_bytes);
    v
}

fn good_frame(request_id: i32) -> Vec<u8> {
    let mut buf = BytesMut::new();
    MessageCodec::new()
        .encode(
            Message::new(request_id, 0, Op::Msg(OpMsg::reply(doc! {"ping": 1}))),
            &mut buf,
        )
        .unwrap();
    buf.to_vec()
}

/// Decodes `bad` followed by a good frame from one buffer; returns the first result's error
/// and op code, and checks that the good frame still decodes.
fn malformed_then_good(bad: &[u8]) -> (i32, i32, WireError) {
    let mut buf = BytesMut::from(bad);
    buf.extend_from_slice(&good_frame(99));
    let mut codec = MessageCodec::new();
    let first = codec.decode(&mut buf).unwrap().unwrap();
    let second = codec.decode(&mut buf).unwrap().unwrap();
    match second {
        Incoming::Message(m) => assert_eq!(m.request_id, 99),
        other => panic!("next frame did not decode: {other:?}"),
    }
    assert!(buf.is_empty());
    match first {
        Incoming::Malformed {
            request_id,
            op_code,
            error,
        } => (request_id, op_code, error),
        Incoming::Message(m) => panic!("expected malformed, got {m:?}"),
    }
}

#[test]
fn length_below_header_is_fatal() {
    for len in [0i32, 4, 15, -1, i32::MIN] {
        let mut buf = BytesMut::from(&len.to_le_bytes()[..]);
        match MessageCodec::new().decode(&mut buf) {
            Err(WireError::MessageTooShort(n)) => assert_eq!(n, i64::from(len)),
            other => panic!("len {len}: {other:?}"),
        }
    }
}

#[test]
fn huge_length_is_fatal_before_any_allocation() {
    let mut buf = BytesMut::with_capacity(16);
    buf.extend_from_slice(&header(2_000_000_000, 1, op_code::OP_MSG));
    let cap_before = buf.capacity();
    match MessageCodec::new().decode(&mut buf) {
        Err(WireError::MessageTooLarge { length, max }) => {
            assert_eq!(length, 2_000_000_000);
            assert_eq!(max, MAX_MESSAGE_SIZE_BYTES);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(buf.capacity(), cap_before);
    assert!(buf.capacity() < 1024);
}

#[test]
fn custom_limit_applies_and_reservation_is_bounded() {
    let mut codec = MessageCodec::with_max_message_size(1000);
    let mut buf = BytesMut::from(&header(1001, 1, op_code::OP_MSG)[..]);
    assert!(matches!(
        codec.decode(&mut buf),
        Err(WireError::MessageTooLarge {
            length: 1001,
            max: 1000
        })
    ));
    // A legal but incomplete frame reserves at most its own size.
    let mut buf = BytesMut::from(&header(900, 1, op_code::OP_MSG)[..]);
    assert!(codec.decode(&mut buf).unwrap().is_none());
    assert!(buf.capacity() >= 900);
    assert!(buf.capacity() < 4096, "capacity {}", buf.capacity());
}

#[test]
fn bad_bson_is_malformed_and_stream_stays_in_sync() {
    // Body document claims 100 bytes but the frame holds fewer.
    let mut doc = doc! {"a": 1}.to_vec().unwrap();
    doc[0] = 100;
    let (rid, op, err) = malformed_then_good(&op_msg_frame(5, 0, &kind0(&doc)));
    assert_eq!((rid, op), (5, op_code::OP_MSG));
    assert!(matches!(err, WireError::InvalidBson(_)), "{err:?}");

    // Unknown element type inside a valid frame.
    let bad_elem = [9u8, 0, 0, 0, 0x42, b'x', 0, 1, 0];
    let (_, _, err) = malformed_then_good(&op_msg_frame(6, 0, &kind0(&bad_elem)));
    assert!(matches!(err, WireError::InvalidBson(_)), "{err:?}");

    // Invalid UTF-8 in a string value (caught by bson after the structural check).
    let mut s = doc! {"s": "ab"}.to_vec().unwrap();
    let a_pos = s.len() - 4; // ... 'a' 'b' NUL (string end) NUL (document end)
    assert_eq!(s[a_pos], b'a');
    s[a_pos] = 0xff;
    let (_, _, err) = malformed_then_good(&op_msg_frame(7, 0, &kind0(&s)));
    assert!(matches!(err, WireError::InvalidBson(_)), "{err:?}");
}

#[test]
fn section_problems_are_malformed() {
    let body = doc! {"ping": 1}.to_vec().unwrap();
    // Unknown section kind.
    let mut sections = kind0(&body);
    sections.push(2);
    sections.extend_from_slice(&body);
    let (_, _, err) = malformed_then_good(&op_msg_frame(1, 0, &sections));
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
    // Two bodies.
    let mut two = kind0(&body);
    two.extend_from_slice(&kind0(&body));
    let (_, _, err) = malformed_then_good(&op_msg_frame(2, 0, &two));
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
    // No body at all (only a sequence).
    let mut seq = vec![1u8];
    seq.extend_from_slice(&((4 + 2 + body.len()) as i32).to_le_bytes());
    seq.extend_from_slice(b"d\0");
    seq.extend_from_slice(&body);
    let (_, _, err) = malformed_then_good(&op_msg_frame(3, 0, &seq));
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
    // Sequence whose size exceeds the message.
    let mut long = kind0(&body);
    long.push(1);
    long.extend_from_slice(&1000i32.to_le_bytes());
    long.extend_from_slice(b"d\0");
    let (_, _, err) = malformed_then_good(&op_msg_frame(4, 0, &long));
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
    // Sequence whose document overruns the sequence size.
    let mut over = kind0(&body);
    over.push(1);
    over.extend_from_slice(&((4 + 2 + body.len() - 1) as i32).to_le_bytes());
    over.extend_from_slice(b"d\0");
    over.extend_from_slice(&body[..body.len() - 1]);
    let (_, _, err) = malformed_then_good(&op_msg_frame(5, 0, &over));
    assert!(matches!(err, WireError::InvalidBson(_)), "{err:?}");
    // Duplicate identifiers.
    let mut dup = kind0(&body);
    for _ in 0..2 {
        dup.push(1);
        dup.extend_from_slice(&6i32.to_le_bytes());
        dup.extend_from_slice(b"d\0");
    }
    let (_, _, err) = malformed_then_good(&op_msg_frame(6, 0, &dup));
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
    // Empty message (flags only).
    let (_, _, err) = malformed_then_good(&op_msg_frame(7, 0, &[]));
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
}

#[test]
fn sequence_may_precede_body() {
    let body = doc! {"insert": "c", "$db": "d"}.to_vec().unwrap();
    let d = doc! {"_id": 1}.to_vec().unwrap();
    let mut sections = vec![1u8];
    sections.extend_from_slice(&((4 + 10 + d.len()) as i32).to_le_bytes());
    sections.extend_from_slice(b"documents\0");
    sections.extend_from_slice(&d);
    sections.extend_from_slice(&kind0(&body));
    let mut buf = BytesMut::from(&op_msg_frame(1, 0, &sections)[..]);
    match MessageCodec::new().decode(&mut buf).unwrap().unwrap() {
        Incoming::Message(m) => {
            let Op::Msg(msg) = m.op else { panic!() };
            assert_eq!(msg.body, doc! {"insert": "c", "$db": "d"});
            let seq = msg.sequence("documents").unwrap();
            assert_eq!(seq.documents, vec![doc! {"_id": 1}]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_required_flag_bits_are_malformed() {
    let body = kind0(&doc! {"ping": 1}.to_vec().unwrap());
    for bit in [2u32, 3, 8, 15] {
        let (_, _, err) = malformed_then_good(&op_msg_frame(1, 1 << bit, &body));
        assert!(matches!(err, WireError::Malformed(_)), "bit {bit}: {err:?}");
    }
    // Optional bits are ignored.
    let mut buf = BytesMut::from(&op_msg_frame(1, 1 << 31, &body)[..]);
    assert!(matches!(
        MessageCodec::new().decode(&mut buf).unwrap().unwrap(),
        Incoming::Message(_)
    ));
}

#[test]
fn checksum_flag_without_room_is_malformed() {
    let (_, _, err) = malformed_then_good(&op_msg_frame(1, MsgFlags::CHECKSUM_PRESENT, &[1, 2]));
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
}

/// `levels` nested documents built directly as bytes (no recursion, no bson crate).
fn nested(levels: usize) -> Vec<u8> {
    // Layout: for each level, len(4) tag(1) "a\0"(2) ... then innermost empty doc, then NULs.
    let mut out = Vec::with_capacity(levels * 8);
    let total = 5 + (levels - 1) * 8;
    for i in 0..levels - 1 {
        let len = total - i * 8;
        out.extend_from_slice(&(len as i32).to_le_bytes());
        out.push(0x03);
        out.extend_from_slice(b"a\0");
    }
    out.extend_from_slice(&[5, 0, 0, 0, 0]);
    out.extend(std::iter::repeat_n(0u8, levels - 1));
    assert_eq!(out.len(), total);
    out
}

#[test]
fn deep_nesting_is_malformed_without_stack_overflow() {
    let deep = nested(10_000);
    let (rid, _, err) = malformed_then_good(&op_msg_frame(42, 0, &kind0(&deep)));
    assert_eq!(rid, 42);
    assert!(
        matches!(err, WireError::NestingTooDeep(MAX_BSON_NESTING_DEPTH)),
        "{err:?}"
    );
    // Exactly at the limit is fine.
    let ok = nested(MAX_BSON_NESTING_DEPTH);
    let mut buf = BytesMut::from(&op_msg_frame(1, 0, &kind0(&ok))[..]);
    assert!(matches!(
        MessageCodec::new().decode(&mut buf).unwrap().unwrap(),
        Incoming::Message(_)
    ));
    // Arrays count too, and so do documents in a kind 1 sequence.
    let mut arr = nested(MAX_BSON_NESTING_DEPTH + 1);
    arr[4] = 0x04;
    let mut seq = kind0(&doc! {"insert": "c"}.to_vec().unwrap());
    seq.push(1);
    seq.extend_from_slice(&((4 + 2 + arr.len()) as i32).to_le_bytes());
    seq.extend_from_slice(b"d\0");
    seq.extend_from_slice(&arr);
    let (_, _, err) = malformed_then_good(&op_msg_frame(2, 0, &seq));
    assert!(matches!(err, WireError::NestingTooDeep(_)), "{err:?}");
}

#[test]
fn deep_nesting_in_op_query_is_malformed() {
    let deep = nested(1000);
    let mut frame_body = Vec::new();
    frame_body.extend_from_slice(&0u32.to_le_bytes());
    frame_body.extend_from_slice(b"admin.$cmd\0");
    frame_body.extend_from_slice(&0i32.to_le_bytes());
    frame_body.extend_from_slice(&(-1i32).to_le_bytes());
    frame_body.extend_from_slice(&deep);
    let mut frame = header(16 + frame_body.len(), 8, op_code::OP_QUERY);
    frame.extend_from_slice(&frame_body);
    let (rid, op, err) = malformed_then_good(&frame);
    assert_eq!((rid, op), (8, op_code::OP_QUERY));
    assert!(matches!(err, WireError::NestingTooDeep(_)), "{err:?}");
}

#[test]
fn unknown_opcode_is_malformed() {
    for op in [2001, 2005, 2010, 0, -7] {
        let mut frame = header(20, 3, op);
        frame.extend_from_slice(&[1, 2, 3, 4]);
        let (rid, got_op, err) = malformed_then_good(&frame);
        assert_eq!((rid, got_op), (3, op));
        assert!(
            matches!(err, WireError::UnknownOpCode(o) if o == op),
            "{err:?}"
        );
    }
}

#[test]
fn truncated_legacy_ops_are_malformed() {
    for op in [op_code::OP_QUERY, op_code::OP_REPLY] {
        let mut frame = header(22, 3, op);
        frame.extend_from_slice(&[0, 0, 0, 0, b'a', 0]);
        let (_, got_op, err) = malformed_then_good(&frame);
        assert_eq!(got_op, op);
        assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
    }
    // OP_REPLY whose numberReturned disagrees with the documents.
    let d = doc! {"ok": 1}.to_vec().unwrap();
    let mut body = Vec::new();
    body.extend_from_slice(&0u32.to_le_bytes());
    body.extend_from_slice(&0i64.to_le_bytes());
    body.extend_from_slice(&0i32.to_le_bytes());
    body.extend_from_slice(&2i32.to_le_bytes());
    body.extend_from_slice(&d);
    let mut frame = header(16 + body.len(), 4, op_code::OP_REPLY);
    frame.extend_from_slice(&body);
    let (_, _, err) = malformed_then_good(&frame);
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
}

fn compressed(request_id: i32, original: i32, id: u8, declared: i32, packed: &[u8]) -> Vec<u8> {
    let mut v = header(25 + packed.len(), request_id, op_code::OP_COMPRESSED);
    v.extend_from_slice(&original.to_le_bytes());
    v.extend_from_slice(&declared.to_le_bytes());
    v.push(id);
    v.extend_from_slice(packed);
    v
}

#[test]
fn unknown_compressor_is_malformed_with_inner_opcode() {
    let (rid, op, err) = malformed_then_good(&compressed(11, op_code::OP_MSG, 7, 10, &[0; 10]));
    assert_eq!((rid, op), (11, op_code::OP_MSG));
    assert!(matches!(err, WireError::UnknownCompressor(7)), "{err:?}");
}

#[test]
fn compressed_size_claims_are_checked_before_decompressing() {
    // Claims more than the limit.
    let (_, op, err) = malformed_then_good(&compressed(1, op_code::OP_MSG, 1, i32::MAX, &[0; 4]));
    assert_eq!(op, op_code::OP_MSG);
    assert!(matches!(err, WireError::MessageTooLarge { .. }), "{err:?}");
    // Negative size.
    let (_, _, err) = malformed_then_good(&compressed(1, op_code::OP_MSG, 1, -1, &[0; 4]));
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
    // Truncated OP_COMPRESSED header.
    let mut short = header(20, 1, op_code::OP_COMPRESSED);
    short.extend_from_slice(&op_code::OP_MSG.to_le_bytes());
    let (_, _, err) = malformed_then_good(&short);
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
    // Nested OP_COMPRESSED.
    let (_, _, err) = malformed_then_good(&compressed(1, op_code::OP_COMPRESSED, 0, 4, &[0; 4]));
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
}

#[test]
fn zip_bomb_is_malformed_for_every_compressor() {
    // 8 MB of zeros compresses to a few KB; declare only 1 KB uncompressed.
    let bomb = vec![0u8; 8 << 20];
    let packs: Vec<(u8, Vec<u8>)> = vec![
        (1, snap::raw::Encoder::new().compress_vec(&bomb).unwrap()),
        (2, {
            use std::io::Write;
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
            e.write_all(&bomb).unwrap();
            e.finish().unwrap()
        }),
        (3, zstd::bulk::compress(&bomb, 19).unwrap()),
    ];
    for (id, packed) in packs {
        assert!(packed.len() < 500_000, "compressor {id}: {}", packed.len());
        let (rid, op, err) =
            malformed_then_good(&compressed(77, op_code::OP_MSG, id, 1024, &packed));
        assert_eq!((rid, op), (77, op_code::OP_MSG));
        assert!(
            matches!(err, WireError::Decompression(_)),
            "compressor {id}: {err:?}"
        );
    }
}

#[test]
fn compressed_garbage_is_malformed() {
    for id in 1..=3u8 {
        let (_, _, err) = malformed_then_good(&compressed(
            1,
            op_code::OP_MSG,
            id,
            64,
            b"definitely not packed",
        ));
        assert!(
            matches!(err, WireError::Decompression(_)),
            "id {id}: {err:?}"
        );
    }
    // Decompresses fine but the inner message is bad BSON.
    let inner = [0u8, 0, 0, 0, 0, 50, 0, 0, 0, 0];
    let packed = snap::raw::Encoder::new().compress_vec(&inner).unwrap();
    let (_, op, err) = malformed_then_good(&compressed(1, op_code::OP_MSG, 1, 10, &packed));
    assert_eq!(op, op_code::OP_MSG);
    assert!(matches!(err, WireError::InvalidBson(_)), "{err:?}");
    // Unknown inner opcode.
    let (_, op, err) = malformed_then_good(&compressed(1, 2005, 0, 4, &[0; 4]));
    assert_eq!(op, 2005);
    assert!(matches!(err, WireError::UnknownOpCode(2005)), "{err:?}");
}

#[test]
fn fatal_errors_are_flagged() {
    assert!(WireError::MessageTooShort(3).is_fatal());
    assert!(WireError::MessageTooLarge { length: 1, max: 0 }.is_fatal());
    assert!(!WireError::ChecksumMismatch.is_fatal());
    assert!(!WireError::NestingTooDeep(200).is_fatal());
}
