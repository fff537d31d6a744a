//! The error type of the wire codec.
//!
//! Some variants are fatal for a connection when the decoder returns them as `Err` (the
//! length prefix itself was unusable: [`WireError::MessageTooShort`],
//! [`WireError::MessageTooLarge`], [`WireError::Io`]); all the others describe bad content
//! inside an intact frame and reach the server wrapped in `Incoming::Malformed`.
//! This is not for command-level errors (MongoDB error codes live in the server).

/// Everything that can go wrong while framing, parsing or encoding a wire message.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The underlying transport failed.
    #[error("io error: {0}")]
    Io(#[from] std::io::Error),
    /// A length (message, or uncompressed size) exceeds the configured maximum.
    #[error("message length {length} exceeds maxMessageSizeBytes {max}")]
    MessageTooLarge {
        /// The length that was claimed or produced.
        length: usize,
        /// The limit in force.
        max: usize,
    },
    /// The length prefix is smaller than the 16-byte header (possibly negative).
    #[error("message length {0} is shorter than a message header")]
    MessageTooShort(i64),
    /// The opcode is not one this crate understands.
    #[error("unknown opcode {0}")]
    UnknownOpCode(i32),
    /// A document is not valid BSON (or a document could not be encoded).
    #[error("invalid BSON: {0}")]
    InvalidBson(String),
    /// The CRC-32C at the end of an `OP_MSG` does not match its contents.
    #[error("OP_MSG checksum mismatch")]
    ChecksumMismatch,
    /// `OP_COMPRESSED` names a compressor id that is not 0 (noop), 1, 2 or 3.
    #[error("unknown compressor id {0}")]
    UnknownCompressor(u8),
    /// Decompression failed or produced a size other than the declared one.
    #[error("decompression failed: {0}")]
    Decompression(String),
    /// A document nests deeper than the limit.
    #[error("BSON nesting exceeds {0} levels")]
    NestingTooDeep(usize),
    /// Any other structural problem inside a frame.
    #[error("malformed message: {0}")]
    Malformed(String),
}

impl WireError {
    /// Shorthand for [`WireError::Malformed`].
    pub(crate) fn malformed(msg: impl Into<String>) -> Self {
        WireError::Malformed(msg.into())
    }

    /// Shorthand for [`WireError::InvalidBson`].
    pub(crate) fn bson(msg: impl Into<String>) -> Self {
        WireError::InvalidBson(msg.into())
    }

    /// True for errors after which the byte stream can no longer be trusted to be in sync
    /// (the server should close the connection rather than answer).
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            WireError::Io(_) | WireError::MessageTooLarge { .. } | WireError::MessageTooShort(_)
        )
    }
}
