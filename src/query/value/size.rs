//! The size of a BSON value as encoded, computed without encoding it: what the memory limit
//! of blocking stages counts (`crate::query::memory`) and what an accumulator's collected
//! values hold.
//!
//! Not for: limits or encoding itself.

use bson::{Bson, Document};

/// The exact BSON size of a document: length, elements, terminator.
pub fn document_size(document: &Document) -> usize {
    4 + document
        .iter()
        .map(|(key, value)| 1 + key.len() + 1 + value_size(value))
        .sum::<usize>()
        + 1
}

/// The bytes of a value's BSON encoding (without its type byte and name).
pub fn value_size(value: &Bson) -> usize {
    match value {
        Bson::Double(_) | Bson::Int64(_) | Bson::DateTime(_) | Bson::Timestamp(_) => 8,
        Bson::String(s) | Bson::Symbol(s) | Bson::JavaScriptCode(s) => 4 + s.len() + 1,
        Bson::Document(d) => document_size(d),
        Bson::Array(items) => {
            let elements: usize = items
                .iter()
                .enumerate()
                .map(|(i, item)| 1 + i.to_string().len() + 1 + value_size(item))
                .sum();
            4 + elements + 1
        }
        Bson::Binary(b) => 4 + 1 + b.bytes.len(),
        Bson::ObjectId(_) => 12,
        Bson::Boolean(_) => 1,
        Bson::Null | Bson::Undefined | Bson::MinKey | Bson::MaxKey => 0,
        Bson::RegularExpression(r) => r.pattern.as_str().len() + 1 + r.options.as_str().len() + 1,
        Bson::JavaScriptCodeWithScope(c) => 4 + 4 + c.code.len() + 1 + document_size(&c.scope),
        Bson::Int32(_) => 4,
        Bson::Decimal128(_) => 16,
        Bson::DbPointer(_) => 4 + 12 + 12,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn sizes_are_those_of_the_encoding() {
        let document = doc! {
            "a": 1, "b": 2.5, "s": "text", "n": null, "arr": [1, "x", {"y": true}],
            "d": {"e": bson::DateTime::now(), "o": bson::oid::ObjectId::new()},
            "r": bson::Regex { pattern: "^a".try_into().unwrap(), options: "i".try_into().unwrap() },
            "l": 7i64, "dec": bson::Decimal128::from_bytes([0; 16]),
            "bin": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1, 2, 3] },
        };
        assert_eq!(document_size(&document), document.to_vec().unwrap().len());
    }
}
