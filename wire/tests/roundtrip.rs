//! Round-trip tests of the public codec API: every op, every compressor, document
//! sequences, flags and checksums, encoded with `MessageCodec` and decoded back.
//!
//! Not for hostile input (see `hostile.rs`) and not for property tests (see `prop.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use bson::doc;
use bytes::BytesMut;
use docgate_wire::{
    op_code, Compressor, DocumentSequence, Incoming, Message, MessageCodec, MsgFlags, Op, OpMsg,
    OpQuery, OpReply, RawOpMsg, WireError,
};
use tokio_util::codec::{Decoder, Encoder};

fn encode(msg: &Message) -> BytesMut {
    let mut buf = BytesMut::new();
    MessageCodec::new().encode(msg.clone(), &mut buf).unwrap();
    buf
}

fn decode_one(buf: &mut BytesMut) -> Incoming {
    MessageCodec::new().decode(buf).unwrap().unwrap()
}

fn round_trip(msg: &Message) -> Message {
    let mut buf = encode(msg);
    match decode_one(&mut buf) {
        Incoming::Message(m) => {
            assert!(buf.is_empty(), "frame not fully consumed");
            m
        }
        Incoming::Malformed { error, .. } => panic!("malformed: {error}"),
    }
}

fn msg_with_sequences(flags: u32) -> Message {
    Message::new(
        7,
        0,
        Op::Msg(OpMsg {
            flags: MsgFlags(flags),
            body: doc! {"insert": "coll", "$db": "test", "ordered": true},
            sequences: vec![
                DocumentSequence {
                    identifier: "documents".into(),
                    documents: vec![doc! {"_id": 1, "x": "a"}, doc! {"_id": 2, "y": [1, 2, 3]}],
                },
                DocumentSequence {
                    identifier: "empty".into(),
                    documents: vec![],
                },
            ],
        }),
    )
}

fn query() -> Message {
    Message::new(
        1,
        0,
        Op::Query(OpQuery {
            flags: 4,
            full_collection_name: "admin.$cmd".into(),
            number_to_skip: 0,
            number_to_return: -1,
            query: doc! {"isMaster": 1, "client": {"driver": {"name": "x"}}, "compression": ["zstd", "snappy"]},
            return_fields_selector: None,
        }),
    )
}

fn all_ops() -> Vec<Message> {
    let mut with_selector = query();
    if let Op::Query(q) = &mut with_selector.op {
        q.return_fields_selector = Some(doc! {"a": 1});
    }
    vec![
        Message::new(
            3,
            0,
            Op::Msg(OpMsg::reply(doc! {"ping": 1, "$db": "admin"})),
        ),
        msg_with_sequences(0),
        msg_with_sequences(MsgFlags::CHECKSUM_PRESENT),
        query(),
        with_selector,
        Message::new(
            9,
            1,
            Op::Reply(OpReply::single(doc! {"ismaster": true, "ok": 1.0})),
        ),
        Message::new(
            10,
            2,
            Op::Reply(OpReply {
                response_flags: 0,
                cursor_id: 1234567890123,
                starting_from: 5,
                documents: vec![doc! {"a": 1}, doc! {"b": 2}, doc! {}],
            }),
        ),
        Message::new(
            11,
            2,
            Op::Reply(OpReply {
                response_flags: 0,
                cursor_id: 0,
                starting_from: 0,
                documents: vec![],
            }),
        ),
    ]
}

#[test]
fn every_op_round_trips_uncompressed() {
    for msg in all_ops() {
        assert_eq!(round_trip(&msg), msg);
    }
}

#[test]
fn every_op_round_trips_with_every_compressor() {
    for c in [Compressor::Snappy, Compressor::Zlib, Compressor::Zstd] {
        for msg in all_ops() {
            let msg = msg.with_compressor(Some(c));
            let buf = encode(&msg);
            assert_eq!(
                i32::from_le_bytes(buf[12..16].try_into().unwrap()),
                op_code::OP_COMPRESSED
            );
            assert_eq!(buf[24], c.id());
            assert_eq!(round_trip(&msg), msg);
        }
    }
}

#[test]
fn header_fields_and_length() {
    let msg = Message::new(0x0102_0304, -5, Op::Msg(OpMsg::reply(doc! {"ok": 1.0})));
    let buf = encode(&msg);
    assert_eq!(
        i32::from_le_bytes(buf[0..4].try_into().unwrap()) as usize,
        buf.len()
    );
    assert_eq!(
        i32::from_le_bytes(buf[4..8].try_into().unwrap()),
        0x0102_0304
    );
    assert_eq!(i32::from_le_bytes(buf[8..12].try_into().unwrap()), -5);
    assert_eq!(
        i32::from_le_bytes(buf[12..16].try_into().unwrap()),
        op_code::OP_MSG
    );
    // flagBits, kind 0, then the document.
    assert_eq!(&buf[16..21], &[0, 0, 0, 0, 0]);
    assert_eq!(&buf[21..], &doc! {"ok": 1.0}.to_vec().unwrap()[..]);
}

#[test]
fn op_reply_single_is_await_capable_without_cursor() {
    let r = OpReply::single(doc! {"ok": 1});
    assert_eq!(r.response_flags, OpReply::AWAIT_CAPABLE);
    assert_eq!(r.response_flags, 8);
    assert_eq!(r.cursor_id, 0);
    assert_eq!(r.documents.len(), 1);
    let m = OpMsg::reply(doc! {"ok": 1});
    assert_eq!(m.flags, MsgFlags(0));
    assert!(m.sequences.is_empty());
}

#[test]
fn flags_are_parsed() {
    let flags = MsgFlags::MORE_TO_COME | MsgFlags::EXHAUST_ALLOWED | (1 << 20);
    let mut msg = msg_with_sequences(flags);
    if let Op::Msg(m) = &mut msg.op {
        m.sequences.clear();
    }
    let got = round_trip(&msg);
    let Op::Msg(m) = got.op else { panic!() };
    assert!(m.flags.more_to_come());
    assert!(m.flags.exhaust_allowed());
    assert!(!m.flags.checksum_present());
    // Unknown optional bits (16-31) are ignored, not rejected.
    assert_eq!(m.flags.0, flags);
}

#[test]
fn checksum_is_written_and_verified() {
    let msg = msg_with_sequences(MsgFlags::CHECKSUM_PRESENT);
    let buf = encode(&msg);
    let n = buf.len();
    let crc = u32::from_le_bytes(buf[n - 4..].try_into().unwrap());
    assert_eq!(crc, crc32c::crc32c(&buf[..n - 4]));
    let got = round_trip(&msg);
    let Op::Msg(m) = &got.op else { panic!() };
    assert!(m.flags.checksum_present());
    assert_eq!(got, msg);
}

#[test]
fn checksum_mismatch_is_malformed() {
    let msg = msg_with_sequences(MsgFlags::CHECKSUM_PRESENT);
    for flip_at in [20usize, 30] {
        let mut buf = encode(&msg);
        let last = buf.len() - 1;
        let at = if flip_at == 30 { last } else { flip_at };
        buf[at] ^= 0x40;
        match decode_one(&mut buf) {
            Incoming::Malformed {
                request_id,
                op_code,
                error: WireError::ChecksumMismatch,
            } => {
                assert_eq!(request_id, 7);
                assert_eq!(op_code, op_code::OP_MSG);
            }
            other => panic!("expected checksum mismatch, got {other:?}"),
        }
    }
}

#[test]
fn checksum_inside_op_compressed_covers_the_uncompressed_message() {
    for c in [Compressor::Snappy, Compressor::Zlib, Compressor::Zstd] {
        let msg = msg_with_sequences(MsgFlags::CHECKSUM_PRESENT).with_compressor(Some(c));
        assert_eq!(round_trip(&msg), msg);
        // Re-compress the same payload with a corrupted checksum.
        let plain = encode(&msg.clone().with_compressor(None));
        let mut payload = plain[16..].to_vec();
        let n = payload.len();
        payload[n - 1] ^= 1;
        let frame = compressed_frame(7, op_code::OP_MSG, c.id(), &payload, payload.len());
        let mut buf = BytesMut::from(&frame[..]);
        assert!(matches!(
            decode_one(&mut buf),
            Incoming::Malformed {
                error: WireError::ChecksumMismatch,
                op_code: op_code::OP_MSG,
                ..
            }
        ));
    }
}

/// Builds an OP_COMPRESSED frame by hand.
pub fn compressed_frame(
    request_id: i32,
    original: i32,
    compressor_id: u8,
    payload: &[u8],
    declared_size: usize,
) -> Vec<u8> {
    let packed = match compressor_id {
        0 => payload.to_vec(),
        1 => snap::raw::Encoder::new().compress_vec(payload).unwrap(),
        2 => {
            use std::io::Write;
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(payload).unwrap();
            e.finish().unwrap()
        }
        3 => zstd::bulk::compress(payload, 3).unwrap(),
        _ => payload.to_vec(),
    };
    let mut out = Vec::new();
    out.extend_from_slice(&((25 + packed.len()) as i32).to_le_bytes());
    out.extend_from_slice(&request_id.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&op_code::OP_COMPRESSED.to_le_bytes());
    out.extend_from_slice(&original.to_le_bytes());
    out.extend_from_slice(&(declared_size as i32).to_le_bytes());
    out.push(compressor_id);
    out.extend_from_slice(&packed);
    out
}

#[test]
fn noop_compressor_decodes_without_compressor() {
    let msg = Message::new(5, 0, Op::Msg(OpMsg::reply(doc! {"ping": 1})));
    let plain = encode(&msg);
    let frame = compressed_frame(5, op_code::OP_MSG, 0, &plain[16..], plain.len() - 16);
    let mut buf = BytesMut::from(&frame[..]);
    match decode_one(&mut buf) {
        Incoming::Message(m) => assert_eq!(m, msg),
        other => panic!("{other:?}"),
    }
}

#[test]
fn compressor_names_and_ids() {
    for c in [Compressor::Snappy, Compressor::Zlib, Compressor::Zstd] {
        assert_eq!(Compressor::from_id(c.id()), Some(c));
        assert_eq!(Compressor::from_name(c.name()), Some(c));
    }
    assert_eq!(Compressor::Snappy.id(), 1);
    assert_eq!(Compressor::Zlib.id(), 2);
    assert_eq!(Compressor::Zstd.id(), 3);
    assert_eq!(Compressor::from_id(0), None);
    assert_eq!(Compressor::from_id(4), None);
    assert_eq!(Compressor::from_name("lz4"), None);
}

#[test]
fn several_frames_in_one_buffer_and_split_reads() {
    let msgs = all_ops();
    let mut all = BytesMut::new();
    let mut codec = MessageCodec::new();
    for m in &msgs {
        codec.encode(m.clone(), &mut all).unwrap();
    }
    // Feed the bytes 7 at a time: every message must come out once, in order.
    let bytes = all.to_vec();
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    for chunk in bytes.chunks(7) {
        buf.extend_from_slice(chunk);
        while let Some(inc) = codec.decode(&mut buf).unwrap() {
            match inc {
                Incoming::Message(m) => got.push(m),
                Incoming::Malformed { error, .. } => panic!("{error}"),
            }
        }
    }
    assert!(buf.is_empty());
    assert_eq!(got, msgs);
}

#[test]
fn truncated_frame_waits_for_more_bytes() {
    let buf_full = encode(&msg_with_sequences(0));
    let mut codec = MessageCodec::new();
    for cut in [0usize, 3, 4, 16, buf_full.len() - 1] {
        let mut buf = BytesMut::from(&buf_full[..cut]);
        assert!(codec.decode(&mut buf).unwrap().is_none(), "cut {cut}");
        assert_eq!(buf.len(), cut, "nothing consumed");
    }
}

#[test]
fn query_namespace_helpers() {
    let Op::Query(q) = query().op else { panic!() };
    assert_eq!(q.database(), "admin");
    assert_eq!(q.collection(), "$cmd");
}

#[test]
fn encoder_rejects_oversized_and_bad_names() {
    let mut codec = MessageCodec::with_max_message_size(64);
    let big = Message::new(1, 0, Op::Msg(OpMsg::reply(doc! {"s": "x".repeat(100)})));
    let mut buf = BytesMut::from(&b"keep"[..]);
    assert!(matches!(
        codec.encode(big, &mut buf),
        Err(WireError::MessageTooLarge { .. })
    ));
    assert_eq!(&buf[..], b"keep", "buffer restored after a failed encode");
    let mut bad = msg_with_sequences(0);
    if let Op::Msg(m) = &mut bad.op {
        m.sequences[0].identifier = "a\0b".into();
    }
    assert!(MessageCodec::new().encode(bad, &mut buf).is_err());
    assert_eq!(&buf[..], b"keep");
}

#[test]
fn an_encoded_body_is_sent_like_the_same_document() {
    let body = doc! {"cursor": {"firstBatch": [{"_id": 1, "x": [1, 2]}], "id": 0i64, "ns": "d.c"}, "ok": 1.0};
    let raw = bson::RawDocumentBuf::try_from(&body).unwrap();
    for flags in [0, MsgFlags::CHECKSUM_PRESENT] {
        for compressor in [None, Some(Compressor::Zstd), Some(Compressor::Snappy)] {
            let as_document = Message::new(
                0,
                9,
                Op::Msg(OpMsg {
                    flags: MsgFlags(flags),
                    body: body.clone(),
                    sequences: Vec::new(),
                }),
            )
            .with_compressor(compressor);
            let as_bytes = Message::new(
                0,
                9,
                Op::RawMsg(RawOpMsg {
                    flags: MsgFlags(flags),
                    body: raw.clone(),
                }),
            )
            .with_compressor(compressor);
            assert_eq!(encode(&as_bytes), encode(&as_document));
            // What a client decodes is the ordinary OP_MSG.
            assert_eq!(round_trip(&as_bytes), as_document);
        }
    }
}
