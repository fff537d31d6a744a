//! Property tests: arbitrary `OP_MSG`s round-trip through every compressor and flag
//! combination, and arbitrary or corrupted bytes never panic the decoder nor desync it.
//!
//! Not for specific regressions (see `roundtrip.rs` and `hostile.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use bson::{doc, Bson, Document};
use bytes::BytesMut;
use docgate_wire::{
    Compressor, DocumentSequence, Incoming, Message, MessageCodec, MsgFlags, Op, OpMsg,
};
use proptest::prelude::*;
use tokio_util::codec::{Decoder, Encoder};

fn leaf() -> impl Strategy<Value = Bson> {
    prop_oneof![
        any::<i32>().prop_map(Bson::Int32),
        any::<i64>().prop_map(Bson::Int64),
        any::<bool>().prop_map(Bson::Boolean),
        "[a-z0-9 ]{0,12}".prop_map(Bson::String),
        Just(Bson::Null),
    ]
}

fn value() -> impl Strategy<Value = Bson> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Bson::Array),
            prop::collection::vec(("[a-z]{1,6}", inner), 0..4)
                .prop_map(|kv| Bson::Document(kv.into_iter().collect())),
        ]
    })
}

fn document() -> impl Strategy<Value = Document> {
    prop::collection::vec(("[a-z$]{1,8}", value()), 0..5).prop_map(|kv| kv.into_iter().collect())
}

fn op_msg() -> impl Strategy<Value = OpMsg> {
    (
        any::<(bool, bool, bool)>(),
        document(),
        prop::collection::vec(
            ("[a-z]{1,10}", prop::collection::vec(document(), 0..3)),
            0..3,
        ),
    )
        .prop_map(|((ck, more, exhaust), body, seqs)| {
            let mut flags = 0;
            if ck {
                flags |= MsgFlags::CHECKSUM_PRESENT;
            }
            if more {
                flags |= MsgFlags::MORE_TO_COME;
            }
            if exhaust {
                flags |= MsgFlags::EXHAUST_ALLOWED;
            }
            let mut sequences: Vec<DocumentSequence> = Vec::new();
            for (identifier, documents) in seqs {
                if !sequences.iter().any(|s| s.identifier == identifier) {
                    sequences.push(DocumentSequence {
                        identifier,
                        documents,
                    });
                }
            }
            OpMsg {
                flags: MsgFlags(flags),
                body,
                sequences,
            }
        })
}

fn compressor() -> impl Strategy<Value = Option<Compressor>> {
    prop_oneof![
        Just(None),
        Just(Some(Compressor::Snappy)),
        Just(Some(Compressor::Zlib)),
        Just(Some(Compressor::Zstd)),
    ]
}

fn good_frame() -> Vec<u8> {
    let mut buf = BytesMut::new();
    MessageCodec::new()
        .encode(
            Message::new(1234, 0, Op::Msg(OpMsg::reply(doc! {"ping": 1}))),
            &mut buf,
        )
        .unwrap();
    buf.to_vec()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn op_msg_round_trips(msg in op_msg(), c in compressor(), rid in any::<i32>(), rto in any::<i32>()) {
        let message = Message { request_id: rid, response_to: rto, op: Op::Msg(msg), compressor: c };
        let mut codec = MessageCodec::new();
        let mut buf = BytesMut::new();
        codec.encode(message.clone(), &mut buf).unwrap();
        match codec.decode(&mut buf).unwrap() {
            Some(Incoming::Message(got)) => prop_assert_eq!(got, message),
            other => prop_assert!(false, "unexpected {:?}", other),
        }
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn arbitrary_frame_contents_never_panic(op in prop_oneof![Just(1i32), Just(2004), Just(2012), Just(2013), any::<i32>()],
                                            body in prop::collection::vec(any::<u8>(), 0..300)) {
        let mut frame = Vec::new();
        frame.extend_from_slice(&((16 + body.len()) as i32).to_le_bytes());
        frame.extend_from_slice(&5i32.to_le_bytes());
        frame.extend_from_slice(&0i32.to_le_bytes());
        frame.extend_from_slice(&op.to_le_bytes());
        frame.extend_from_slice(&body);
        frame.extend_from_slice(&good_frame());
        let mut buf = BytesMut::from(&frame[..]);
        let mut codec = MessageCodec::new();
        prop_assert!(codec.decode(&mut buf).unwrap().is_some());
        match codec.decode(&mut buf).unwrap() {
            Some(Incoming::Message(m)) => prop_assert_eq!(m.request_id, 1234),
            other => prop_assert!(false, "desync: {:?}", other),
        }
    }

    #[test]
    fn corrupted_valid_frames_never_panic(msg in op_msg(), c in compressor(),
                                          flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4)) {
        let message = Message { request_id: 1, response_to: 0, op: Op::Msg(msg), compressor: c };
        let mut buf = BytesMut::new();
        let mut codec = MessageCodec::new();
        codec.encode(message, &mut buf).unwrap();
        // Corrupt anything but the length prefix so the frame boundary stays intact.
        let n = buf.len();
        for (idx, x) in flips {
            let at = 4 + idx.index(n - 4);
            buf[at] ^= x;
        }
        buf.extend_from_slice(&good_frame());
        prop_assert!(codec.decode(&mut buf).unwrap().is_some());
        match codec.decode(&mut buf).unwrap() {
            Some(Incoming::Message(m)) => prop_assert_eq!(m.request_id, 1234),
            other => prop_assert!(false, "desync: {:?}", other),
        }
    }
}
