//! Raw-byte validation of BSON documents before they reach the `bson` crate.
//!
//! [`check_document`] walks a document's elements with an explicit stack (no recursion), so
//! it can reject nesting deeper than [`MAX_BSON_NESTING_DEPTH`] and bad length prefixes
//! without any risk of stack overflow; [`parse_document`] then hands the checked bytes to
//! `bson` (whose conversion is recursive, hence the pre-check). It also provides the small
//! bounds-checked little-endian readers the decoder uses.
//!
//! Not for BSON semantics (comparison, type coercion) and not a full validator: value
//! contents (UTF-8, decimal128 bits, ...) are left to `bson`.

use bson::{Document, RawDocument};

use crate::error::WireError;
use crate::MAX_BSON_NESTING_DEPTH;

/// Reads a little-endian i32 at `pos`, if four bytes are there.
pub(crate) fn read_i32(bytes: &[u8], pos: usize) -> Option<i32> {
    let end = pos.checked_add(4)?;
    let b: [u8; 4] = bytes.get(pos..end)?.try_into().ok()?;
    Some(i32::from_le_bytes(b))
}

/// Reads a little-endian u32 at `pos`, if four bytes are there.
pub(crate) fn read_u32(bytes: &[u8], pos: usize) -> Option<u32> {
    read_i32(bytes, pos).map(|v| v as u32)
}

/// Reads a little-endian i64 at `pos`, if eight bytes are there.
pub(crate) fn read_i64(bytes: &[u8], pos: usize) -> Option<i64> {
    let end = pos.checked_add(8)?;
    let b: [u8; 8] = bytes.get(pos..end)?.try_into().ok()?;
    Some(i64::from_le_bytes(b))
}

/// Position of the first NUL byte in `bytes[from..limit]`.
pub(crate) fn find_nul(bytes: &[u8], from: usize, limit: usize) -> Option<usize> {
    let window = bytes.get(from..limit)?;
    window.iter().position(|&b| b == 0).map(|i| from + i)
}

fn invalid(msg: &str) -> WireError {
    WireError::bson(msg)
}

/// `pos + n` if it stays within `limit`.
fn advance(pos: usize, n: usize, limit: usize) -> Result<usize, WireError> {
    pos.checked_add(n)
        .filter(|&p| p <= limit)
        .ok_or_else(|| invalid("element extends past the end of its document"))
}

/// Length of an embedded document starting at `pos`, which must end by `limit`.
fn doc_len_at(bytes: &[u8], pos: usize, limit: usize) -> Result<usize, WireError> {
    let len = read_i32(bytes, pos).ok_or_else(|| invalid("truncated document length"))?;
    if len < 5 {
        return Err(invalid("document length below the minimum of 5"));
    }
    let len = len as usize;
    advance(pos, len, limit)?;
    Ok(len)
}

/// Skips a BSON string (int32 length including the NUL, bytes, NUL) at `pos`.
fn skip_string(bytes: &[u8], pos: usize, limit: usize) -> Result<usize, WireError> {
    let len = read_i32(bytes, pos).ok_or_else(|| invalid("truncated string length"))?;
    if len < 1 {
        return Err(invalid("string length below 1"));
    }
    let end = advance(pos, 4 + len as usize, limit)?;
    match end.checked_sub(1).and_then(|i| bytes.get(i)) {
        Some(0) => Ok(end),
        _ => Err(invalid("string not terminated by a NUL byte")),
    }
}

/// Skips a cstring at `pos` (must end before `limit`).
fn skip_cstring(bytes: &[u8], pos: usize, limit: usize) -> Result<usize, WireError> {
    find_nul(bytes, pos, limit)
        .map(|nul| nul + 1)
        .ok_or_else(|| invalid("unterminated cstring"))
}

/// Checks the structure of the BSON document at the start of `bytes` without recursion:
/// every length prefix fits inside its parent, every element has a known type and fits, and
/// documents/arrays nest at most `max_depth` levels (the top level being 1). Returns the
/// document's length (it may be shorter than `bytes`).
pub fn check_document(bytes: &[u8], max_depth: usize) -> Result<usize, WireError> {
    let total = doc_len_at(bytes, 0, bytes.len())?;
    if max_depth == 0 {
        return Err(WireError::NestingTooDeep(max_depth));
    }
    // Each entry is the (exclusive) end offset of an open document.
    let mut stack: Vec<usize> = Vec::with_capacity(16);
    stack.push(total);
    let mut pos = 4usize;
    while let Some(&end) = stack.last() {
        // `end >= 5` for every pushed document, and `pos <= end - 1` is an invariant.
        let terminator = end - 1;
        let tag = *bytes
            .get(pos)
            .ok_or_else(|| invalid("truncated document"))?;
        if pos == terminator {
            if tag != 0 {
                return Err(invalid("document not terminated by a NUL byte"));
            }
            stack.pop();
            pos = end;
            continue;
        }
        if tag == 0 {
            return Err(invalid("unexpected NUL before the end of a document"));
        }
        // Element name.
        pos = skip_cstring(bytes, pos + 1, terminator)?;
        let limit = terminator;
        pos = match tag {
            // double, datetime, timestamp, int64
            0x01 | 0x09 | 0x11 | 0x12 => advance(pos, 8, limit)?,
            // string, JavaScript code, symbol
            0x02 | 0x0D | 0x0E => skip_string(bytes, pos, limit)?,
            // embedded document, array
            0x03 | 0x04 => {
                let len = doc_len_at(bytes, pos, limit)?;
                stack.push(pos + len);
                if stack.len() > max_depth {
                    return Err(WireError::NestingTooDeep(max_depth));
                }
                pos + 4
            }
            // binary: int32 length, subtype byte, bytes
            0x05 => {
                let len = read_i32(bytes, pos).ok_or_else(|| invalid("truncated binary"))?;
                if len < 0 {
                    return Err(invalid("negative binary length"));
                }
                advance(pos, 5 + len as usize, limit)?
            }
            // undefined, null, min key, max key
            0x06 | 0x0A | 0xFF | 0x7F => pos,
            // ObjectId
            0x07 => advance(pos, 12, limit)?,
            // bool
            0x08 => advance(pos, 1, limit)?,
            // regex: pattern and options cstrings
            0x0B => {
                let p = skip_cstring(bytes, pos, limit)?;
                skip_cstring(bytes, p, limit)?
            }
            // DBPointer: string and ObjectId
            0x0C => advance(skip_string(bytes, pos, limit)?, 12, limit)?,
            // code with scope: int32 total, string, scope document
            0x0F => {
                let total = read_i32(bytes, pos).ok_or_else(|| invalid("truncated code_w_s"))?;
                if total < 14 {
                    return Err(invalid("code_w_s length too small"));
                }
                let cws_end = advance(pos, total as usize, limit)?;
                let scope = skip_string(bytes, pos + 4, cws_end)?;
                let scope_len = doc_len_at(bytes, scope, cws_end)?;
                if scope + scope_len != cws_end {
                    return Err(invalid("code_w_s length does not match its contents"));
                }
                stack.push(cws_end);
                if stack.len() > max_depth {
                    return Err(WireError::NestingTooDeep(max_depth));
                }
                scope + 4
            }
            // int32
            0x10 => advance(pos, 4, limit)?,
            // decimal128
            0x13 => advance(pos, 16, limit)?,
            other => {
                return Err(WireError::InvalidBson(format!(
                    "unknown element type 0x{other:02x}"
                )))
            }
        };
    }
    Ok(total)
}

/// Parses the BSON document at the start of `bytes` after [`check_document`] with
/// [`MAX_BSON_NESTING_DEPTH`]. Returns the document and the number of bytes it occupied.
pub fn parse_document(bytes: &[u8]) -> Result<(Document, usize), WireError> {
    let len = check_document(bytes, MAX_BSON_NESTING_DEPTH)?;
    let slice = bytes
        .get(..len)
        .ok_or_else(|| invalid("document length exceeds the available bytes"))?;
    let raw = RawDocument::from_bytes(slice).map_err(|e| WireError::InvalidBson(e.to_string()))?;
    let doc = Document::try_from(raw).map_err(|e| WireError::InvalidBson(e.to_string()))?;
    Ok((doc, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    /// `levels` nested documents `{a: {a: ... {}}}` built directly as bytes.
    pub(crate) fn nested_bytes(levels: usize) -> Vec<u8> {
        // Innermost is an empty doc (5 bytes); each wrapper adds 4 (len) + 1 (tag) + 2 ("a\0") + 1 (NUL).
        let mut inner: Vec<u8> = vec![5, 0, 0, 0, 0];
        for _ in 1..levels {
            let len = inner.len() + 8;
            let mut outer = Vec::with_capacity(len);
            outer.extend_from_slice(&(len as i32).to_le_bytes());
            outer.push(0x03);
            outer.extend_from_slice(b"a\0");
            outer.extend_from_slice(&inner);
            outer.push(0);
            inner = outer;
        }
        inner
    }

    #[test]
    fn accepts_every_element_type() {
        let d = doc! {
            "f": 1.5, "s": "x", "d": {"a": [1, 2, {"b": null}]}, "bin": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1,2,3] },
            "oid": bson::oid::ObjectId::new(), "t": true, "dt": bson::DateTime::from_millis(5),
            "re": bson::Regex { pattern: "a.*".try_into().unwrap(), options: "i".try_into().unwrap() }, "code": bson::Bson::JavaScriptCode("f()".into()),
            "cws": bson::Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope { code: "g()".into(), scope: doc!{"x": 1} }),
            "i": 7i32, "ts": bson::Timestamp { time: 1, increment: 2 }, "l": 9i64,
            "dec": bson::Decimal128::from_bytes([0; 16]), "min": bson::Bson::MinKey, "max": bson::Bson::MaxKey,
            "undef": bson::Bson::Undefined, "sym": bson::Bson::Symbol("sym".into()),
        };
        let bytes = d.to_vec().unwrap();
        assert_eq!(check_document(&bytes, 10).unwrap(), bytes.len());
        let (parsed, used) = parse_document(&bytes).unwrap();
        assert_eq!(used, bytes.len());
        assert_eq!(parsed, d);
    }

    #[test]
    fn depth_limit_is_inclusive() {
        let ok = nested_bytes(MAX_BSON_NESTING_DEPTH);
        assert!(parse_document(&ok).is_ok());
        let deep = nested_bytes(MAX_BSON_NESTING_DEPTH + 1);
        assert!(matches!(
            parse_document(&deep),
            Err(WireError::NestingTooDeep(MAX_BSON_NESTING_DEPTH))
        ));
    }

    #[test]
    fn code_with_scope_counts_as_nesting() {
        let d = doc! {"c": bson::Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope { code: "g()".into(), scope: doc!{"x": {"y": 1}} })};
        let bytes = d.to_vec().unwrap();
        assert!(check_document(&bytes, 3).is_ok());
        assert!(matches!(
            check_document(&bytes, 2),
            Err(WireError::NestingTooDeep(2))
        ));
    }

    #[test]
    fn rejects_bad_lengths() {
        let mut bytes = doc! {"a": {"b": 1}}.to_vec().unwrap();
        assert!(check_document(&bytes[..bytes.len() - 1], 5).is_err());
        // Inner document claims more than its parent holds.
        bytes[7] = 200;
        assert!(check_document(&bytes, 5).is_err());
        assert!(check_document(&[4, 0, 0, 0], 5).is_err());
        assert!(check_document(&[255, 255, 255, 255, 0], 5).is_err());
        assert!(check_document(&[], 5).is_err());
        // Unknown element type.
        assert!(check_document(&[8, 0, 0, 0, 0x42, b'a', 0, 0], 5).is_err());
        // Missing terminator.
        assert!(check_document(&[5, 0, 0, 0, 1], 5).is_err());
    }

    #[test]
    fn trailing_bytes_are_not_part_of_the_document() {
        let mut bytes = doc! {"a": 1}.to_vec().unwrap();
        let len = bytes.len();
        bytes.extend_from_slice(&[9, 9, 9]);
        let (d, used) = parse_document(&bytes).unwrap();
        assert_eq!(used, len);
        assert_eq!(d, doc! {"a": 1});
    }
}
