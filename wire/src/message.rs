//! The in-memory shapes of wire messages: [`Message`], its [`Op`] variants, `OP_MSG` flags
//! and sections, and the [`Compressor`] ids.
//!
//! These are plain data types with small constructors; parsing lives in `decode`, writing in
//! `encode`. Not for command semantics: a body is just a `bson::Document` here (or BSON
//! bytes, for a reply that is encoded already: [`RawOpMsg`]).

use bson::{Document, RawDocumentBuf};

use crate::error::WireError;
use crate::op_code;

/// A wire compression algorithm (`OP_COMPRESSED` compressor id). Id 0 ("noop") is accepted
/// by the decoder but has no variant: a noop-compressed message decodes with
/// `compressor: None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compressor {
    /// Raw snappy (no framing), id 1.
    Snappy,
    /// zlib format (RFC 1950), id 2.
    Zlib,
    /// zstd frame, id 3.
    Zstd,
}

impl Compressor {
    /// All compressors, in the order the server prefers them.
    pub const ALL: [Compressor; 3] = [Compressor::Zstd, Compressor::Snappy, Compressor::Zlib];

    /// The compressor id written in `OP_COMPRESSED`.
    pub fn id(self) -> u8 {
        match self {
            Compressor::Snappy => 1,
            Compressor::Zlib => 2,
            Compressor::Zstd => 3,
        }
    }

    /// The compressor for an id; `None` for 0 (noop, handled by the decoder) and 4-255.
    pub fn from_id(id: u8) -> Option<Compressor> {
        match id {
            1 => Some(Compressor::Snappy),
            2 => Some(Compressor::Zlib),
            3 => Some(Compressor::Zstd),
            _ => None,
        }
    }

    /// The name used in the handshake's `compression` array.
    pub fn name(self) -> &'static str {
        match self {
            Compressor::Snappy => "snappy",
            Compressor::Zlib => "zlib",
            Compressor::Zstd => "zstd",
        }
    }

    /// The compressor for a handshake name (exact, lowercase as drivers send it).
    pub fn from_name(name: &str) -> Option<Compressor> {
        match name {
            "snappy" => Some(Compressor::Snappy),
            "zlib" => Some(Compressor::Zlib),
            "zstd" => Some(Compressor::Zstd),
            _ => None,
        }
    }
}

/// `OP_MSG` `flagBits`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsgFlags(pub u32);

impl MsgFlags {
    /// Bit 0: the message ends with a CRC-32C checksum.
    pub const CHECKSUM_PRESENT: u32 = 1;
    /// Bit 1: the sender will send another message without waiting; no reply to requests.
    pub const MORE_TO_COME: u32 = 2;
    /// Bit 16: the client accepts several replies (`moreToCome`) to this request.
    pub const EXHAUST_ALLOWED: u32 = 1 << 16;
    /// The required bits (0-15) this implementation understands.
    pub const KNOWN_REQUIRED: u32 = Self::CHECKSUM_PRESENT | Self::MORE_TO_COME;
    /// Mask of the required bits: a parser must reject unknown bits set here.
    pub const REQUIRED_MASK: u32 = 0xFFFF;

    /// Whether `checksumPresent` is set.
    pub fn checksum_present(self) -> bool {
        self.0 & Self::CHECKSUM_PRESENT != 0
    }

    /// Whether `moreToCome` is set.
    pub fn more_to_come(self) -> bool {
        self.0 & Self::MORE_TO_COME != 0
    }

    /// Whether `exhaustAllowed` is set.
    pub fn exhaust_allowed(self) -> bool {
        self.0 & Self::EXHAUST_ALLOWED != 0
    }

    /// Required bits that are set but unknown (non-zero means the message must be rejected).
    pub fn unknown_required_bits(self) -> u32 {
        self.0 & Self::REQUIRED_MASK & !Self::KNOWN_REQUIRED
    }
}

/// An `OP_MSG` kind 1 section: documents that belong to the body field named `identifier`.
#[derive(Clone, Debug, PartialEq)]
pub struct DocumentSequence {
    /// The body field these documents stand for (e.g. `documents`, `updates`, `deletes`).
    pub identifier: String,
    /// The documents, in wire order.
    pub documents: Vec<Document>,
}

/// An `OP_MSG`: flags, exactly one body (kind 0) and any number of document sequences.
#[derive(Clone, Debug, PartialEq)]
pub struct OpMsg {
    /// `flagBits` as received or to be sent.
    pub flags: MsgFlags,
    /// The kind 0 body section.
    pub body: Document,
    /// The kind 1 sections, in wire order.
    pub sequences: Vec<DocumentSequence>,
}

impl OpMsg {
    /// A reply: flags 0, the given body, no sequences.
    pub fn reply(body: Document) -> OpMsg {
        OpMsg {
            flags: MsgFlags::default(),
            body,
            sequences: Vec::new(),
        }
    }

    /// The sequence with this identifier, if any.
    pub fn sequence(&self, identifier: &str) -> Option<&DocumentSequence> {
        self.sequences.iter().find(|s| s.identifier == identifier)
    }
}

/// An `OP_MSG` reply whose body is BSON bytes already: a cursor batch of stored documents
/// passes through without being decoded and encoded again. Encoded exactly like an
/// [`OpMsg`] with no sequences; the decoder never produces it (it yields [`OpMsg`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RawOpMsg {
    /// `flagBits` to be sent.
    pub flags: MsgFlags,
    /// The kind 0 body section, as BSON bytes.
    pub body: RawDocumentBuf,
}

/// A legacy `OP_QUERY` (drivers use it for the first `hello`/`isMaster` on `admin.$cmd`).
#[derive(Clone, Debug, PartialEq)]
pub struct OpQuery {
    /// Query flag bits (tailable, secondaryOk, ...).
    pub flags: u32,
    /// `"db.collection"`, `"admin.$cmd"` for commands.
    pub full_collection_name: String,
    /// Documents to skip.
    pub number_to_skip: i32,
    /// Documents to return in the first batch (commands use -1 or 1).
    pub number_to_return: i32,
    /// The query (or command) document.
    pub query: Document,
    /// Optional projection.
    pub return_fields_selector: Option<Document>,
}

impl OpQuery {
    /// The database part of `full_collection_name` (before the first dot).
    pub fn database(&self) -> &str {
        match self.full_collection_name.split_once('.') {
            Some((db, _)) => db,
            None => &self.full_collection_name,
        }
    }

    /// The collection part of `full_collection_name` (after the first dot), `$cmd` for commands.
    pub fn collection(&self) -> &str {
        match self.full_collection_name.split_once('.') {
            Some((_, coll)) => coll,
            None => "",
        }
    }
}

/// A legacy `OP_REPLY`.
#[derive(Clone, Debug, PartialEq)]
pub struct OpReply {
    /// Response flag bits (see the `OpReply::*` constants).
    pub response_flags: u32,
    /// Cursor id, 0 when the result fits in this reply.
    pub cursor_id: i64,
    /// Position of the first document in the cursor.
    pub starting_from: i32,
    /// The documents (`numberReturned` is derived from this on encode).
    pub documents: Vec<Document>,
}

impl OpReply {
    /// Bit 0: `getMore` on an unknown cursor.
    pub const CURSOR_NOT_FOUND: u32 = 1;
    /// Bit 1: the query failed; the single document has `$err`.
    pub const QUERY_FAILURE: u32 = 2;
    /// Bit 2: mongos-only, drivers ignore it.
    pub const SHARD_CONFIG_STALE: u32 = 4;
    /// Bit 3: the server supports AwaitData; every mongod since 1.6 always sets it.
    pub const AWAIT_CAPABLE: u32 = 8;

    /// A one-document reply with no cursor, flagged `AwaitCapable` as mongod does.
    pub fn single(doc: Document) -> OpReply {
        OpReply {
            response_flags: Self::AWAIT_CAPABLE,
            cursor_id: 0,
            starting_from: 0,
            documents: vec![doc],
        }
    }
}

/// The operation carried by a message.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `OP_MSG` (2013).
    Msg(OpMsg),
    /// `OP_MSG` (2013) with an encoded body; only ever sent.
    RawMsg(RawOpMsg),
    /// `OP_QUERY` (2004).
    Query(OpQuery),
    /// `OP_REPLY` (1).
    Reply(OpReply),
}

impl Op {
    /// The opcode of this operation (never `OP_COMPRESSED`).
    pub fn op_code(&self) -> i32 {
        match self {
            Op::Msg(_) | Op::RawMsg(_) => op_code::OP_MSG,
            Op::Query(_) => op_code::OP_QUERY,
            Op::Reply(_) => op_code::OP_REPLY,
        }
    }
}

/// One wire message: header ids, the operation, and the compressor it came in / goes out with.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// `requestID` of this message.
    pub request_id: i32,
    /// `responseTo`: the `requestID` this message answers (0 for requests).
    pub response_to: i32,
    /// The operation.
    pub op: Op,
    /// Some when it arrived inside OP_COMPRESSED (the server answers with the same compressor);
    /// when encoding, Some means "wrap in OP_COMPRESSED with this compressor".
    pub compressor: Option<Compressor>,
}

impl Message {
    /// An uncompressed message.
    pub fn new(request_id: i32, response_to: i32, op: Op) -> Message {
        Message {
            request_id,
            response_to,
            op,
            compressor: None,
        }
    }

    /// The same message, to be sent compressed with `compressor` (or not, for `None`).
    pub fn with_compressor(mut self, compressor: Option<Compressor>) -> Message {
        self.compressor = compressor;
        self
    }
}

/// What the decoder yields for each frame whose length prefix was sane.
#[derive(Debug)]
pub enum Incoming {
    /// A well-formed message.
    Message(Message),
    /// The frame boundaries were intact but its content was bad (bad BSON, bad section kind,
    /// checksum mismatch, unknown compressor, failed decompression, nesting too deep, unknown
    /// opcode...). The frame was consumed; the server replies with an error (for OP_MSG /
    /// OP_QUERY op_codes) or closes (other op_codes). op_code is the original (inner) opcode if known.
    Malformed {
        /// `requestID` from the frame header (answer with `responseTo` = this).
        request_id: i32,
        /// The opcode: the inner one for `OP_COMPRESSED` when it could be read.
        op_code: i32,
        /// What was wrong.
        error: WireError,
    },
}
