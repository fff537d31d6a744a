//! `docgate-wire`: the MongoDB wire protocol as bytes on a socket.
//!
//! This crate turns a TCP byte stream into [`Incoming`] messages and [`Message`]s back into
//! bytes: the 16-byte message header, `OP_MSG` (kind 0 body and kind 1 document-sequence
//! sections, optional CRC-32C checksum), the legacy `OP_QUERY` / `OP_REPLY` pair that drivers
//! still use for the connection handshake, and `OP_COMPRESSED` with snappy, zlib and zstd.
//! It enforces the size limits (`maxMessageSizeBytes`, the uncompressed size of a compressed
//! message) and a BSON nesting limit that is checked on the raw bytes before any recursive
//! parsing happens. [`MessageCodec`] plugs all of it into `tokio_util::codec::Framed`.
//!
//! It is not for commands, storage, authentication or cursors: it does not look inside a
//! body document beyond checking that it is well-formed BSON. Whether a message should have
//! been compressed (e.g. `hello`, `saslStart`) is the server's business, not this crate's.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod bson_check;
mod codec;
mod compression;
mod decode;
mod encode;
mod error;
mod message;

pub use bson_check::{check_document, parse_document};
pub use codec::MessageCodec;
pub use decode::decode_frame;
pub use encode::{encode_message, encode_message_into};
pub use error::WireError;
pub use message::{
    Compressor, DocumentSequence, Incoming, Message, MsgFlags, Op, OpMsg, OpQuery, OpReply,
    RawOpMsg,
};

/// Largest message (header included) this crate accepts or produces by default; the value
/// MongoDB reports as `maxMessageSizeBytes` in `hello`.
pub const MAX_MESSAGE_SIZE_BYTES: usize = 48_000_000;

/// Deepest nesting of BSON documents/arrays accepted in any document of a message (the
/// top-level document counts as level 1). Checked iteratively on the raw bytes before the
/// `bson` crate parses anything, so hostile input cannot overflow the stack.
pub const MAX_BSON_NESTING_DEPTH: usize = 200;

/// Size of the standard message header (`messageLength`, `requestID`, `responseTo`, `opCode`).
pub const HEADER_LEN: usize = 16;

/// Wire protocol operation codes understood by this crate.
pub mod op_code {
    /// Reply to an `OP_QUERY` (legacy; used only for the handshake nowadays).
    pub const OP_REPLY: i32 = 1;
    /// Legacy query; drivers send the first `hello`/`isMaster` this way.
    pub const OP_QUERY: i32 = 2004;
    /// A compressed wrapper around another opcode.
    pub const OP_COMPRESSED: i32 = 2012;
    /// The extensible message format used for everything since MongoDB 3.6.
    pub const OP_MSG: i32 = 2013;
}
