//! `$toHashedIndexKey`: the 64-bit key MongoDB's hashed indexes store for a value — the
//! first eight bytes (little-endian) of an MD5 over a zero seed and the value, where every
//! element contributes its canonical type (numbers share one, squashed to a 64-bit
//! integer), documents and arrays their elements with field names, and any other value its
//! BSON bytes. The manual's example (`"string to hash"` → 763543691661428748) is a test.
//!
//! Not for: hashed indexes themselves (docgate has none) or `$bsonSize` (`value_parts.rs`).

use crate::query::error::QueryError;
use crate::query::value::number::Number;
use bson::{Bson, Document};
use md5::{Digest, Md5};

/// The hashed index key of a value; missing hashes as null, as a hashed index keys it.
pub(super) fn hashed_index_key(value: Option<&Bson>) -> Result<i64, QueryError> {
    let mut md5 = Md5::new();
    md5.update(0i32.to_le_bytes());
    hash_element(&mut md5, None, value.unwrap_or(&Bson::Null))?;
    let digest = md5.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    Ok(i64::from_le_bytes(first))
}

fn hash_element(md5: &mut Md5, name: Option<&str>, value: &Bson) -> Result<(), QueryError> {
    md5.update(canonical_type(value).to_le_bytes());
    if let Some(name) = name {
        md5.update(name.as_bytes());
        md5.update([0u8]);
    }
    match value {
        Bson::Document(d) => {
            for (k, v) in d {
                hash_element(md5, Some(k), v)?;
            }
        }
        Bson::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                hash_element(md5, Some(&i.to_string()), v)?;
            }
        }
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
            md5.update(safe_number_long(value).to_le_bytes());
        }
        other => md5.update(value_bytes(other)?),
    }
    Ok(())
}

/// MongoDB's `safeNumberLong`: integral values as they are, doubles truncated toward zero
/// and saturated, NaN as 0.
fn safe_number_long(value: &Bson) -> i64 {
    let Some(n) = Number::from_bson(value) else {
        return 0;
    };
    n.to_exact_i64()
        .unwrap_or_else(|| n.to_f64().trunc() as i64)
}

/// The BSON encoding of a scalar's value (without type byte and name).
fn value_bytes(value: &Bson) -> Result<Vec<u8>, QueryError> {
    let mut holder = Document::new();
    holder.insert("", value.clone());
    let bytes = holder
        .to_vec()
        .map_err(|e| QueryError::bad_value(format!("$toHashedIndexKey: {e}")))?;
    // length (4), type byte (1), empty name's NUL (1) … value … document NUL (1).
    Ok(bytes
        .get(6..bytes.len().saturating_sub(1))
        .unwrap_or_default()
        .to_vec())
}

/// MongoDB's `canonicalizeBSONType`: the order class of a type.
fn canonical_type(value: &Bson) -> i32 {
    match value {
        Bson::MinKey => -1,
        Bson::Undefined => 0,
        Bson::Null => 5,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => 10,
        Bson::String(_) | Bson::Symbol(_) => 15,
        Bson::Document(_) => 20,
        Bson::Array(_) => 25,
        Bson::Binary(_) => 30,
        Bson::ObjectId(_) => 35,
        Bson::Boolean(_) => 40,
        Bson::DateTime(_) => 45,
        Bson::Timestamp(_) => 47,
        Bson::RegularExpression(_) => 50,
        Bson::DbPointer(_) => 55,
        Bson::JavaScriptCode(_) => 60,
        Bson::JavaScriptCodeWithScope(_) => 65,
        Bson::MaxKey => 127,
    }
}
