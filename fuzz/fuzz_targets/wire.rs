//! The wire decoder: arbitrary bytes as a TCP stream through `MessageCodec`, and as one frame
//! through `decode_frame`; a message that decodes encodes again, and that encoding decodes to
//! a message that encodes to the same bytes.
#![no_main]

use bytes::BytesMut;
use docgate_wire::{decode_frame, encode_message, Incoming, MessageCodec, MAX_MESSAGE_SIZE_BYTES};
use libfuzzer_sys::fuzz_target;
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let mut codec = MessageCodec::new();
    let mut stream = BytesMut::from(data);
    while let Ok(Some(_)) = codec.decode(&mut stream) {}

    let Incoming::Message(message) = decode_frame(data, MAX_MESSAGE_SIZE_BYTES) else {
        return;
    };
    let Ok(encoded) = encode_message(&message, MAX_MESSAGE_SIZE_BYTES) else {
        return;
    };
    match decode_frame(&encoded, MAX_MESSAGE_SIZE_BYTES) {
        Incoming::Message(again) => {
            let reencoded = encode_message(&again, MAX_MESSAGE_SIZE_BYTES);
            assert_eq!(
                reencoded.as_ref().ok(),
                Some(&encoded),
                "{again:?} encodes differently from {message:?}"
            );
        }
        Incoming::Malformed { error, .. } => {
            panic!("docgate's own encoding of {message:?} is malformed: {error}")
        }
    }
});
