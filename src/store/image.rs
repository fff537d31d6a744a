//! The queryable image of a document: JSON text built from its raw BSON, stored next to the
//! lossless `doc` column in the `j` column of every backend (SQLite: `jsonb(?)`, PostgreSQL:
//! `jsonb`). Shared by the backends so that pushdown means the same everywhere.
//!
//! The image is lossy on purpose and only ever used to narrow scans (pushdown may
//! over-select, never under-select). Mapping:
//! - string and symbol → JSON string (MongoDB compares symbols like strings);
//! - finite double, int32, decimal128 → JSON number; int64 → JSON integer when |n| ≤ 2^53,
//!   else the nearest double (the planner rounds query numbers the same way, so equal values
//!   stay equal); a decimal128 is its nearest double, so equality can only over-select;
//! - bool, null → JSON true/false/null; document → object (key order kept); array → array;
//! - every other value (NaN/±Inf, ObjectId, Date, Binary, Regex, Timestamp, MinKey, MaxKey,
//!   undefined, code, DBPointer) → an object `{"$t": <BSON type byte>}`, plus `"v"` with the
//!   hex ObjectId or the Date's milliseconds, for later range pushdown. An object is never
//!   equal to a scalar in SQL.
//! - PostgreSQL's `jsonb` (and `jsonpath`) cannot hold U+0000: `json_image_without_nul` maps
//!   it to U+FFFD in strings, and the PostgreSQL backend maps query strings the same way
//!   (`nul_free`). Equal strings stay equal, so this can only over-select.
//!
//! Not for: anything that must be exact; the `doc` column is the document.

use std::fmt::Write as _;

use bson::raw::{RawArray, RawBsonRef, RawDocument};

use super::StoreError;

/// Deeper documents are refused (MongoDB allows 100 levels, SQLite's JSON parser 1000).
const MAX_DEPTH: usize = 200;

/// JSON text of the image of the BSON document `bson`.
pub(super) fn json_image(bson: &[u8]) -> Result<String, StoreError> {
    build(bson, false)
}

/// Like `json_image`, with U+0000 in strings replaced by U+FFFD (for PostgreSQL's `jsonb`).
pub(super) fn json_image_without_nul(bson: &[u8]) -> Result<String, StoreError> {
    build(bson, true)
}

/// `s` with U+0000 replaced by U+FFFD, the mapping `json_image_without_nul` applies.
pub(super) fn nul_free(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\0') {
        std::borrow::Cow::Owned(s.replace('\0', "\u{fffd}"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

fn build(bson: &[u8], no_nul: bool) -> Result<String, StoreError> {
    let doc = RawDocument::from_bytes(bson).map_err(invalid)?;
    let mut out = String::with_capacity(bson.len() + 16);
    write_document(doc, &mut out, 0, no_nul)?;
    Ok(out)
}

fn invalid(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("document is not valid BSON: {e}"))
}

fn write_document(
    doc: &RawDocument,
    out: &mut String,
    depth: usize,
    no_nul: bool,
) -> Result<(), StoreError> {
    check_depth(depth)?;
    out.push('{');
    for (i, element) in doc.iter().enumerate() {
        let (key, value) = element.map_err(invalid)?;
        if i > 0 {
            out.push(',');
        }
        write_string(key.as_str(), out, no_nul);
        out.push(':');
        write_value(value, out, depth + 1, no_nul)?;
    }
    out.push('}');
    Ok(())
}

fn write_array(
    array: &RawArray,
    out: &mut String,
    depth: usize,
    no_nul: bool,
) -> Result<(), StoreError> {
    check_depth(depth)?;
    out.push('[');
    for (i, value) in array.into_iter().enumerate() {
        let value = value.map_err(invalid)?;
        if i > 0 {
            out.push(',');
        }
        write_value(value, out, depth + 1, no_nul)?;
    }
    out.push(']');
    Ok(())
}

fn check_depth(depth: usize) -> Result<(), StoreError> {
    if depth > MAX_DEPTH {
        return Err(StoreError::Database(format!(
            "document nested deeper than {MAX_DEPTH} levels"
        )));
    }
    Ok(())
}

/// Integers up to this magnitude are exact in a double.
const EXACT_INT: i64 = 1 << 53;

fn write_value(
    value: RawBsonRef<'_>,
    out: &mut String,
    depth: usize,
    no_nul: bool,
) -> Result<(), StoreError> {
    let type_byte = value.element_type() as u8;
    match value {
        RawBsonRef::String(s) | RawBsonRef::Symbol(s) => write_string(s, out, no_nul),
        RawBsonRef::Document(d) => write_document(d, out, depth, no_nul)?,
        RawBsonRef::Array(a) => write_array(a, out, depth, no_nul)?,
        RawBsonRef::Boolean(b) => out.push_str(if b { "true" } else { "false" }),
        RawBsonRef::Null => out.push_str("null"),
        RawBsonRef::Int32(n) => {
            let _ = write!(out, "{n}");
        }
        RawBsonRef::Int64(n) if (-EXACT_INT..=EXACT_INT).contains(&n) => {
            let _ = write!(out, "{n}");
        }
        RawBsonRef::Int64(n) => write_double(n as f64, type_byte, out),
        RawBsonRef::Double(d) => write_double(d, type_byte, out),
        RawBsonRef::Decimal128(d) => {
            let nearest = d.to_string().parse::<f64>().unwrap_or(f64::NAN);
            write_double(nearest, type_byte, out);
        }
        RawBsonRef::ObjectId(oid) => {
            let _ = write!(out, "{{\"$t\":{type_byte},\"v\":\"{}\"}}", oid.to_hex());
        }
        RawBsonRef::DateTime(dt) => {
            let _ = write!(
                out,
                "{{\"$t\":{type_byte},\"v\":{}}}",
                dt.timestamp_millis()
            );
        }
        _ => write_tagged(type_byte, out),
    }
    Ok(())
}

fn write_tagged(type_byte: u8, out: &mut String) {
    let _ = write!(out, "{{\"$t\":{type_byte}}}");
}

/// Finite doubles as JSON numbers (`{:?}` prints the shortest round-trip form, always with a
/// digit before any exponent, which is valid JSON); NaN and ±Inf as tagged objects.
fn write_double(d: f64, type_byte: u8, out: &mut String) {
    if d.is_finite() {
        let _ = write!(out, "{d:?}");
    } else {
        write_tagged(type_byte, out);
    }
}

/// A JSON string literal: `"` and `\` escaped, control characters as `\u00XX`; with
/// `no_nul`, U+0000 becomes U+FFFD.
pub(super) fn write_string(s: &str, out: &mut String, no_nul: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\0' if no_nul => out.push('\u{fffd}'),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, oid::ObjectId, Bson, Decimal128};

    fn image(d: bson::Document) -> String {
        match d.to_vec().map_err(invalid).and_then(|b| json_image(&b)) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn scalars_and_nesting() {
        let s = image(doc! {
            "s": "a\"b\\c\n", "i": 5, "l": 7i64, "d": 5.5, "nz": -0.0, "b": true, "n": Bson::Null,
            "o": {"x": [1, "two", [3]]},
        });
        assert_eq!(
            s,
            r#"{"s":"a\"b\\c\u000a","i":5,"l":7,"d":5.5,"nz":-0.0,"b":true,"n":null,"o":{"x":[1,"two",[3]]}}"#
        );
    }

    #[test]
    fn other_types_are_tagged_objects() {
        let oid = ObjectId::from_bytes([1; 12]);
        let dec: Decimal128 = match "5.0".parse() {
            Ok(d) => d,
            Err(e) => panic!("{e:?}"),
        };
        let s = image(doc! {
            "nan": f64::NAN, "inf": f64::INFINITY, "oid": oid, "big": (1i64 << 60),
            "dec": dec, "min": Bson::MinKey, "max": Bson::MaxKey,
        });
        assert_eq!(
            s,
            format!(
                r#"{{"nan":{{"$t":1}},"inf":{{"$t":1}},"oid":{{"$t":7,"v":"{}"}},"big":1.152921504606847e18,"dec":5.0,"min":{{"$t":255}},"max":{{"$t":127}}}}"#,
                oid.to_hex()
            )
        );
    }

    #[test]
    fn nul_is_replaced_only_when_asked() {
        let bytes = match doc! {"s": "a\u{0}b"}.to_vec() {
            Ok(b) => b,
            Err(e) => panic!("{e}"),
        };
        assert!(matches!(json_image(&bytes), Ok(s) if s == r#"{"s":"a\u0000b"}"#));
        assert!(matches!(json_image_without_nul(&bytes), Ok(s) if s == "{\"s\":\"a\u{fffd}b\"}"));
        assert_eq!(nul_free("a\u{0}b"), "a\u{fffd}b");
    }

    #[test]
    fn invalid_bson_is_an_error() {
        assert!(json_image(&[1, 2, 3]).is_err());
        assert!(json_image(&[5, 0, 0, 0, 1]).is_err());
    }
}
