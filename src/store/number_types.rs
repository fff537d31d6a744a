//! The number types of a document's image: JSON text stored next to the image (PostgreSQL's
//! `nt` column) that says which BSON type each number of the image was, where the image
//! cannot (`image.rs` writes an Int32, an Int64, a Double and a Decimal128 alike as JSON
//! numbers).
//!
//! Shape: an object that follows the document's embedded documents (never into arrays) and
//! holds, at the place of every number that is not an Int32, its BSON type byte — 1 Double
//! (NaN and ±Inf included), 18 Int64, 19 Decimal128 — and 2 at a string holding U+0000 (the
//! image shows it as U+FFFD, like a string holding U+FFFD). An Int32 and other strings have
//! no entry; a document without such values outside arrays is `{}`. So `{a: 1, b: 2.5, c:
//! {d: NumberLong(3)}, e: [1.5], s: "x"}` is `{"b":1,"c":{"d":18}}`.
//!
//! What reads it: a `$group` run as SQL (`postgres/grouping.rs`), which needs each summed
//! number's type for the total's type, and a row whose `nt` is NULL (written before the
//! column existed) is one it cannot use.
//!
//! Not for: the image itself (`image.rs`), or anything inside arrays.

use std::fmt::Write as _;

use bson::raw::{RawBsonRef, RawDocument};

use super::image::write_string;
use super::StoreError;

/// BSON type bytes recorded here.
pub(super) const DOUBLE: u8 = 1;
pub(super) const STRING_WITH_NUL: u8 = 2;
pub(super) const INT64: u8 = 18;
pub(super) const DECIMAL: u8 = 19;

/// JSON text of the number types of the BSON document `bson`.
pub(super) fn number_types(bson: &[u8]) -> Result<String, StoreError> {
    let doc = RawDocument::from_bytes(bson).map_err(invalid)?;
    let mut out = String::with_capacity(16);
    write_document(doc, &mut out)?;
    Ok(out)
}

fn invalid(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("document is not valid BSON: {e}"))
}

/// Writes the entries of `doc` as an object (`{}` when none), and answers whether it wrote any.
fn write_document(doc: &RawDocument, out: &mut String) -> Result<bool, StoreError> {
    out.push('{');
    let mut any = false;
    for element in doc.iter() {
        let (key, value) = element.map_err(invalid)?;
        let mark = out.len();
        if any {
            out.push(',');
        }
        write_key(key.as_str(), out);
        let wrote = match value {
            RawBsonRef::Double(_) => write_type(DOUBLE, out),
            RawBsonRef::Int64(_) => write_type(INT64, out),
            RawBsonRef::Decimal128(_) => write_type(DECIMAL, out),
            RawBsonRef::String(s) if s.contains('\0') => write_type(STRING_WITH_NUL, out),
            RawBsonRef::Document(inner) => write_document(inner, out)?,
            _ => false,
        };
        if wrote {
            any = true;
        } else {
            out.truncate(mark);
        }
    }
    out.push('}');
    Ok(any)
}

fn write_type(type_byte: u8, out: &mut String) -> bool {
    let _ = write!(out, "{type_byte}");
    true
}

/// A JSON object key and its colon, escaped as the image escapes strings.
fn write_key(s: &str, out: &mut String) {
    write_string(s, out, true);
    out.push(':');
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, Bson, Decimal128};

    fn types(d: bson::Document) -> String {
        match d.to_vec().map_err(invalid).and_then(|b| number_types(&b)) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn only_numbers_other_than_int32_outside_arrays() {
        let dec: Decimal128 = match "0.1".parse() {
            Ok(d) => d,
            Err(e) => panic!("{e:?}"),
        };
        assert_eq!(
            types(doc! {
                "i": 1, "d": 2.5, "l": 3i64, "dec": dec, "nan": f64::NAN, "s": "x",
                "o": {"i": 1, "l": 4i64, "empty": {"s": "y"}}, "a": [1.5, {"d": 2.5}],
                "q\"\\": 1.0, "n": Bson::Null, "z": "a\u{0}b", "o2": {"z": "\u{0}"},
            }),
            r#"{"d":1,"l":18,"dec":19,"nan":1,"o":{"l":18},"q\"\\":1,"z":2,"o2":{"z":2}}"#
        );
        assert_eq!(types(doc! {"i": 1, "o": {"s": "x"}}), "{}");
    }

    #[test]
    fn the_text_is_json() {
        let text = types(doc! {"a\u{1}b": 1.5, "c": {"d": 2i64}});
        let parsed: serde_json::Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => panic!("{e}: {text}"),
        };
        assert_eq!(parsed["a\u{1}b"], 1);
        assert_eq!(parsed["c"]["d"], 18);
    }
}
