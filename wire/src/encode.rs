//! Serialisation of a [`Message`] into wire bytes.
//!
//! Writes the header with the computed `messageLength`, the `OP_MSG` sections (the kind 0
//! body first, then each kind 1 sequence), a CRC-32C when `checksumPresent` is set, `OP_REPLY`
//! and `OP_QUERY`; when `Message::compressor` is set, the whole thing is wrapped in
//! `OP_COMPRESSED`. The checksum of a compressed `OP_MSG` is computed over the uncompressed
//! message (its own header with the original opcode and uncompressed length, then the body),
//! which is what a receiver reconstructs after decompression; it is compressed along with the
//! body. Not for deciding what to send (compression negotiation, `moreToCome` replies).

use bytes::{BufMut, BytesMut};

use crate::compression;
use crate::error::WireError;
use crate::message::{Message, MsgFlags, Op, OpMsg, OpQuery, OpReply, RawOpMsg};
use crate::{op_code, HEADER_LEN};

/// Encodes `message` into a fresh buffer. Fails when a document cannot be encoded, a name
/// contains a NUL byte, or the message (or its uncompressed form) exceeds `max_message_size`.
pub fn encode_message(message: &Message, max_message_size: usize) -> Result<Vec<u8>, WireError> {
    let mut out = BytesMut::new();
    encode_message_into(message, max_message_size, &mut out)?;
    Ok(out.to_vec())
}

/// Appends the encoding of `message` to `dst`. On error `dst` is left as it was.
pub fn encode_message_into(
    message: &Message,
    max_message_size: usize,
    dst: &mut BytesMut,
) -> Result<(), WireError> {
    let start = dst.len();
    let result = match message.compressor {
        None => write_plain(message, max_message_size, dst),
        Some(compressor) => {
            let mut inner = BytesMut::new();
            write_plain(message, max_message_size, &mut inner).and_then(|()| {
                let payload = inner.get(HEADER_LEN..).unwrap_or_default();
                let packed = compression::compress(compressor, payload)?;
                let total = HEADER_LEN + 9 + packed.len();
                check_len(total, max_message_size)?;
                dst.reserve(total);
                put_header(dst, total, message, op_code::OP_COMPRESSED)?;
                dst.put_i32_le(message.op.op_code());
                dst.put_i32_le(to_i32(payload.len())?);
                dst.put_u8(compressor.id());
                dst.extend_from_slice(&packed);
                Ok(())
            })
        }
    };
    if result.is_err() {
        dst.truncate(start);
    }
    result
}

fn check_len(length: usize, max: usize) -> Result<(), WireError> {
    if length > max || length > i32::MAX as usize {
        Err(WireError::MessageTooLarge { length, max })
    } else {
        Ok(())
    }
}

fn to_i32(n: usize) -> Result<i32, WireError> {
    i32::try_from(n).map_err(|_| WireError::MessageTooLarge {
        length: n,
        max: i32::MAX as usize,
    })
}

fn put_header(
    dst: &mut BytesMut,
    length: usize,
    message: &Message,
    op_code: i32,
) -> Result<(), WireError> {
    dst.put_i32_le(to_i32(length)?);
    dst.put_i32_le(message.request_id);
    dst.put_i32_le(message.response_to);
    dst.put_i32_le(op_code);
    Ok(())
}

/// Overwrites the little-endian i32 at `pos`.
fn patch_i32(dst: &mut BytesMut, pos: usize, value: i32) -> Result<(), WireError> {
    let slot = pos
        .checked_add(4)
        .and_then(|end| dst.get_mut(pos..end))
        .ok_or_else(|| WireError::malformed("internal: length slot out of range"))?;
    slot.copy_from_slice(&value.to_le_bytes());
    Ok(())
}

/// Writes a complete uncompressed message (header, body, checksum if flagged) to `dst`.
fn write_plain(message: &Message, max: usize, dst: &mut BytesMut) -> Result<(), WireError> {
    let start = dst.len();
    put_header(dst, 0, message, message.op.op_code())?;
    let checksum = match &message.op {
        Op::Msg(msg) => {
            write_op_msg(msg, dst)?;
            msg.flags.checksum_present()
        }
        Op::RawMsg(msg) => {
            write_raw_op_msg(msg, dst)?;
            msg.flags.checksum_present()
        }
        Op::Query(q) => {
            write_op_query(q, dst)?;
            false
        }
        Op::Reply(r) => {
            write_op_reply(r, dst)?;
            false
        }
    };
    let length = dst.len() - start + if checksum { 4 } else { 0 };
    check_len(length, max)?;
    patch_i32(dst, start, to_i32(length)?)?;
    if checksum {
        let covered = dst.get(start..).unwrap_or_default();
        let crc = crc32c::crc32c(covered);
        dst.put_u32_le(crc);
    }
    Ok(())
}

fn put_document(dst: &mut BytesMut, doc: &bson::Document) -> Result<(), WireError> {
    let bytes = doc
        .to_vec()
        .map_err(|e| WireError::InvalidBson(e.to_string()))?;
    dst.extend_from_slice(&bytes);
    Ok(())
}

fn put_cstring(dst: &mut BytesMut, s: &str, what: &str) -> Result<(), WireError> {
    if s.as_bytes().contains(&0) {
        return Err(WireError::Malformed(format!("{what} contains a NUL byte")));
    }
    dst.extend_from_slice(s.as_bytes());
    dst.put_u8(0);
    Ok(())
}

/// Refuses flags with required bits this crate does not know.
fn check_flags(flags: MsgFlags) -> Result<(), WireError> {
    if flags.unknown_required_bits() != 0 {
        return Err(WireError::Malformed(format!(
            "OP_MSG flags 0x{:x} set unknown required bits",
            flags.0
        )));
    }
    Ok(())
}

fn write_op_msg(msg: &OpMsg, dst: &mut BytesMut) -> Result<(), WireError> {
    check_flags(msg.flags)?;
    dst.put_u32_le(msg.flags.0);
    dst.put_u8(0);
    put_document(dst, &msg.body)?;
    for seq in &msg.sequences {
        dst.put_u8(1);
        let size_pos = dst.len();
        dst.put_i32_le(0);
        put_cstring(dst, &seq.identifier, "document sequence identifier")?;
        for doc in &seq.documents {
            put_document(dst, doc)?;
        }
        let size = to_i32(dst.len() - size_pos)?;
        patch_i32(dst, size_pos, size)?;
    }
    Ok(())
}

fn write_raw_op_msg(msg: &RawOpMsg, dst: &mut BytesMut) -> Result<(), WireError> {
    check_flags(msg.flags)?;
    dst.put_u32_le(msg.flags.0);
    dst.put_u8(0);
    dst.extend_from_slice(msg.body.as_bytes());
    Ok(())
}

fn write_op_query(q: &OpQuery, dst: &mut BytesMut) -> Result<(), WireError> {
    dst.put_u32_le(q.flags);
    put_cstring(dst, &q.full_collection_name, "fullCollectionName")?;
    dst.put_i32_le(q.number_to_skip);
    dst.put_i32_le(q.number_to_return);
    put_document(dst, &q.query)?;
    if let Some(sel) = &q.return_fields_selector {
        put_document(dst, sel)?;
    }
    Ok(())
}

fn write_op_reply(r: &OpReply, dst: &mut BytesMut) -> Result<(), WireError> {
    dst.put_u32_le(r.response_flags);
    dst.put_i64_le(r.cursor_id);
    dst.put_i32_le(r.starting_from);
    dst.put_i32_le(to_i32(r.documents.len())?);
    for doc in &r.documents {
        put_document(dst, doc)?;
    }
    Ok(())
}
