//! [`MessageCodec`]: the tokio-util `Decoder`/`Encoder` that frames a MongoDB connection.
//!
//! The decoder reads the 4-byte length prefix and rejects lengths below the header size or
//! above the limit *before* reserving any memory for the body (these are fatal `Err`s: the
//! stream cannot be resynchronised). Otherwise it waits for the whole frame, reserving at
//! most that frame, splits it off and parses it; content problems come back as
//! `Ok(Some(Incoming::Malformed { .. }))` so the next frame still decodes.
//! Not for connection handling, timeouts or replies to malformed input (the server's job).

use bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};

use crate::bson_check::read_i32;
use crate::decode::decode_frame;
use crate::encode::encode_message_into;
use crate::error::WireError;
use crate::message::{Incoming, Message};
use crate::{HEADER_LEN, MAX_MESSAGE_SIZE_BYTES};

/// Frames MongoDB wire messages; see the module documentation.
#[derive(Clone, Debug)]
pub struct MessageCodec {
    max_message_size: usize,
}

impl MessageCodec {
    /// A codec with the default limit [`MAX_MESSAGE_SIZE_BYTES`].
    pub fn new() -> Self {
        Self::with_max_message_size(MAX_MESSAGE_SIZE_BYTES)
    }

    /// A codec accepting and producing messages of at most `max` bytes (header included).
    /// This also bounds the uncompressed size of `OP_COMPRESSED` payloads.
    pub fn with_max_message_size(max: usize) -> Self {
        MessageCodec {
            max_message_size: max,
        }
    }

    /// The limit in force.
    pub fn max_message_size(&self) -> usize {
        self.max_message_size
    }
}

impl Default for MessageCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder for MessageCodec {
    type Item = Incoming;
    type Error = WireError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Incoming>, WireError> {
        let Some(length) = read_i32(src, 0) else {
            return Ok(None);
        };
        if length < HEADER_LEN as i32 {
            return Err(WireError::MessageTooShort(i64::from(length)));
        }
        let length = length as usize;
        if length > self.max_message_size {
            return Err(WireError::MessageTooLarge {
                length,
                max: self.max_message_size,
            });
        }
        if src.len() < length {
            // Reserve for this frame only; never more than the (bounded) frame length.
            src.reserve(length - src.len());
            return Ok(None);
        }
        let frame = src.split_to(length);
        Ok(Some(decode_frame(&frame, self.max_message_size)))
    }
}

impl Encoder<Message> for MessageCodec {
    type Error = WireError;

    fn encode(&mut self, item: Message, dst: &mut BytesMut) -> Result<(), WireError> {
        encode_message_into(&item, self.max_message_size, dst)
    }
}

impl Encoder<&Message> for MessageCodec {
    type Error = WireError;

    fn encode(&mut self, item: &Message, dst: &mut BytesMut) -> Result<(), WireError> {
        encode_message_into(item, self.max_message_size, dst)
    }
}
