//! Parsing of one complete frame (header included) into an [`Incoming`].
//!
//! The codec has already checked the length prefix and split the frame off the stream;
//! everything here works on a bounded byte slice and reports content problems as
//! [`Incoming::Malformed`] so the connection stays in sync. Handles `OP_MSG` (sections,
//! required flag bits, CRC-32C), `OP_QUERY`, `OP_REPLY` and `OP_COMPRESSED` (bounded
//! decompression, then the inner opcode). Not for framing a stream (see `codec`) or for
//! interpreting commands.

use bson::Document;

use crate::bson_check::{find_nul, parse_document, read_i32, read_i64, read_u32};
use crate::compression;
use crate::error::WireError;
use crate::message::{DocumentSequence, Incoming, Message, MsgFlags, Op, OpMsg, OpQuery, OpReply};
use crate::{op_code, HEADER_LEN};

/// The four header fields.
#[derive(Clone, Copy, Debug)]
struct Header {
    request_id: i32,
    response_to: i32,
    op_code: i32,
}

impl Header {
    /// The 16 header bytes for a message whose total length is `length`.
    fn bytes(&self, length: usize) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        let fields = [
            length as i32,
            self.request_id,
            self.response_to,
            self.op_code,
        ];
        for (chunk, v) in out.chunks_exact_mut(4).zip(fields) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        out
    }
}

/// Parses one frame: `frame` is the whole message, its length prefix equal to `frame.len()`
/// (the codec guarantees this; a mismatch is reported as malformed). `max_message_size`
/// bounds the uncompressed size of `OP_COMPRESSED` payloads (header included).
pub fn decode_frame(frame: &[u8], max_message_size: usize) -> Incoming {
    let header = match (
        read_i32(frame, 0),
        read_i32(frame, 4),
        read_i32(frame, 8),
        read_i32(frame, 12),
    ) {
        (Some(len), Some(request_id), Some(response_to), Some(op_code)) => {
            let header = Header {
                request_id,
                response_to,
                op_code,
            };
            if len < 0 || len as usize != frame.len() {
                return malformed(
                    header,
                    op_code,
                    WireError::malformed(format!(
                        "length prefix {len} does not match the frame size {}",
                        frame.len()
                    )),
                );
            }
            header
        }
        _ => {
            return Incoming::Malformed {
                request_id: read_i32(frame, 4).unwrap_or(0),
                op_code: read_i32(frame, 12).unwrap_or(0),
                error: WireError::MessageTooShort(frame.len() as i64),
            }
        }
    };
    let body = frame.get(HEADER_LEN..).unwrap_or_default();
    if header.op_code == op_code::OP_COMPRESSED {
        return decode_compressed(header, body, max_message_size);
    }
    match decode_op(header, body) {
        Ok(op) => Incoming::Message(Message {
            request_id: header.request_id,
            response_to: header.response_to,
            op,
            compressor: None,
        }),
        Err(error) => malformed(header, header.op_code, error),
    }
}

fn malformed(header: Header, op_code: i32, error: WireError) -> Incoming {
    Incoming::Malformed {
        request_id: header.request_id,
        op_code,
        error,
    }
}

/// Parses the part after the header of an uncompressed opcode.
fn decode_op(header: Header, body: &[u8]) -> Result<Op, WireError> {
    match header.op_code {
        op_code::OP_MSG => decode_op_msg(header, body).map(Op::Msg),
        op_code::OP_QUERY => decode_op_query(body).map(Op::Query),
        op_code::OP_REPLY => decode_op_reply(body).map(Op::Reply),
        other => Err(WireError::UnknownOpCode(other)),
    }
}

fn decode_compressed(header: Header, body: &[u8], max_message_size: usize) -> Incoming {
    let (original, uncompressed_size, compressor_id) =
        match (read_i32(body, 0), read_i32(body, 4), body.get(8)) {
            (Some(o), Some(u), Some(&c)) => (o, u, c),
            _ => {
                return malformed(
                    header,
                    read_i32(body, 0).unwrap_or(op_code::OP_COMPRESSED),
                    WireError::malformed("OP_COMPRESSED header is truncated"),
                )
            }
        };
    let fail = |error| malformed(header, original, error);
    if original == op_code::OP_COMPRESSED {
        return fail(WireError::malformed(
            "OP_COMPRESSED cannot wrap another OP_COMPRESSED",
        ));
    }
    if uncompressed_size < 0 {
        return fail(WireError::malformed(format!(
            "negative uncompressedSize {uncompressed_size}"
        )));
    }
    let expected = uncompressed_size as usize;
    let total = expected.saturating_add(HEADER_LEN);
    if total > max_message_size {
        return fail(WireError::MessageTooLarge {
            length: total,
            max: max_message_size,
        });
    }
    let compressed = body.get(9..).unwrap_or_default();
    let (compressor, payload) = match compression::decompress(compressor_id, compressed, expected) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let inner = Header {
        op_code: original,
        ..header
    };
    match decode_op(inner, &payload) {
        Ok(op) => Incoming::Message(Message {
            request_id: header.request_id,
            response_to: header.response_to,
            op,
            compressor,
        }),
        Err(e) => fail(e),
    }
}

/// `OP_MSG` after the header. `header` is the (possibly reconstructed, for compressed
/// messages) header of the uncompressed message; the checksum covers it and the body.
fn decode_op_msg(header: Header, body: &[u8]) -> Result<OpMsg, WireError> {
    let flags = MsgFlags(
        read_u32(body, 0).ok_or_else(|| WireError::malformed("OP_MSG is missing flagBits"))?,
    );
    let unknown = flags.unknown_required_bits();
    if unknown != 0 {
        return Err(WireError::Malformed(format!(
            "OP_MSG has unknown required flag bits 0x{unknown:x}"
        )));
    }
    let mut end = body.len();
    if flags.checksum_present() {
        end = end
            .checked_sub(4)
            .filter(|&e| e >= 4)
            .ok_or_else(|| WireError::malformed("OP_MSG too short for its checksum"))?;
        let stored = read_u32(body, end)
            .ok_or_else(|| WireError::malformed("OP_MSG too short for its checksum"))?;
        let covered = body
            .get(..end)
            .ok_or_else(|| WireError::malformed("OP_MSG too short for its checksum"))?;
        let head = header.bytes(HEADER_LEN + body.len());
        let computed = crc32c::crc32c_append(crc32c::crc32c(&head), covered);
        if computed != stored {
            return Err(WireError::ChecksumMismatch);
        }
    }
    let sections = body
        .get(4..end)
        .ok_or_else(|| WireError::malformed("OP_MSG is missing flagBits"))?;
    let (body_doc, sequences) = decode_sections(sections)?;
    Ok(OpMsg {
        flags,
        body: body_doc,
        sequences,
    })
}

fn decode_sections(bytes: &[u8]) -> Result<(Document, Vec<DocumentSequence>), WireError> {
    let mut body: Option<Document> = None;
    let mut sequences: Vec<DocumentSequence> = Vec::new();
    let mut pos = 0usize;
    while let Some(&kind) = bytes.get(pos) {
        pos += 1;
        let rest = bytes.get(pos..).unwrap_or_default();
        match kind {
            0 => {
                if body.is_some() {
                    return Err(WireError::malformed(
                        "OP_MSG has more than one body (kind 0) section",
                    ));
                }
                let (doc, used) = parse_document(rest)?;
                body = Some(doc);
                pos += used;
            }
            1 => {
                let (seq, used) = decode_sequence(rest)?;
                if sequences.iter().any(|s| s.identifier == seq.identifier) {
                    return Err(WireError::Malformed(format!(
                        "duplicate document sequence identifier {:?}",
                        seq.identifier
                    )));
                }
                sequences.push(seq);
                pos += used;
            }
            other => {
                return Err(WireError::Malformed(format!(
                    "unknown OP_MSG section kind {other}"
                )))
            }
        }
    }
    let body = body.ok_or_else(|| WireError::malformed("OP_MSG has no body (kind 0) section"))?;
    Ok((body, sequences))
}

/// A kind 1 section payload at the start of `bytes`; returns it and its size.
fn decode_sequence(bytes: &[u8]) -> Result<(DocumentSequence, usize), WireError> {
    let size = read_i32(bytes, 0)
        .ok_or_else(|| WireError::malformed("truncated document sequence size"))?;
    if size < 5 {
        return Err(WireError::Malformed(format!(
            "document sequence size {size} is too small"
        )));
    }
    let size = size as usize;
    let section = bytes.get(..size).ok_or_else(|| {
        WireError::malformed("document sequence extends past the end of the message")
    })?;
    let nul = find_nul(section, 4, size)
        .ok_or_else(|| WireError::malformed("unterminated document sequence identifier"))?;
    let identifier = std::str::from_utf8(section.get(4..nul).unwrap_or_default())
        .map_err(|_| WireError::malformed("document sequence identifier is not UTF-8"))?
        .to_owned();
    let mut documents = Vec::new();
    let mut pos = nul + 1;
    while let Some(rest) = section.get(pos..).filter(|r| !r.is_empty()) {
        let (doc, used) = parse_document(rest)?;
        documents.push(doc);
        pos += used;
    }
    Ok((
        DocumentSequence {
            identifier,
            documents,
        },
        size,
    ))
}

fn decode_op_query(body: &[u8]) -> Result<OpQuery, WireError> {
    let truncated = || WireError::malformed("OP_QUERY is truncated");
    let flags = read_u32(body, 0).ok_or_else(truncated)?;
    let nul = find_nul(body, 4, body.len())
        .ok_or_else(|| WireError::malformed("unterminated fullCollectionName"))?;
    let full_collection_name = std::str::from_utf8(body.get(4..nul).unwrap_or_default())
        .map_err(|_| WireError::malformed("fullCollectionName is not UTF-8"))?
        .to_owned();
    let mut pos = nul + 1;
    let number_to_skip = read_i32(body, pos).ok_or_else(truncated)?;
    let number_to_return = read_i32(body, pos + 4).ok_or_else(truncated)?;
    pos += 8;
    let (query, used) = parse_document(body.get(pos..).unwrap_or_default())?;
    pos += used;
    let return_fields_selector = match body.get(pos..).filter(|r| !r.is_empty()) {
        Some(rest) => {
            let (sel, used) = parse_document(rest)?;
            pos += used;
            Some(sel)
        }
        None => None,
    };
    if pos != body.len() {
        return Err(WireError::malformed("trailing bytes after OP_QUERY"));
    }
    Ok(OpQuery {
        flags,
        full_collection_name,
        number_to_skip,
        number_to_return,
        query,
        return_fields_selector,
    })
}

fn decode_op_reply(body: &[u8]) -> Result<OpReply, WireError> {
    let truncated = || WireError::malformed("OP_REPLY is truncated");
    let response_flags = read_u32(body, 0).ok_or_else(truncated)?;
    let cursor_id = read_i64(body, 4).ok_or_else(truncated)?;
    let starting_from = read_i32(body, 12).ok_or_else(truncated)?;
    let number_returned = read_i32(body, 16).ok_or_else(truncated)?;
    if number_returned < 0 {
        return Err(WireError::Malformed(format!(
            "negative numberReturned {number_returned}"
        )));
    }
    let mut documents = Vec::new();
    let mut pos = 20usize;
    while let Some(rest) = body.get(pos..).filter(|r| !r.is_empty()) {
        let (doc, used) = parse_document(rest)?;
        documents.push(doc);
        pos += used;
    }
    if documents.len() != number_returned as usize {
        return Err(WireError::Malformed(format!(
            "numberReturned is {number_returned} but {} documents follow",
            documents.len()
        )));
    }
    Ok(OpReply {
        response_flags,
        cursor_id,
        starting_from,
        documents,
    })
}
