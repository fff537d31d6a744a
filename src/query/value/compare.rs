//! MongoDB's total order over BSON values (the "Comparison/Sort Order" of the manual): the
//! canonical type ranks and the ordering inside each type, numbers compared exactly across
//! Int32, Int64, Double and Decimal128.
//!
//! Strings compare under the collation installed on the evaluating thread
//! (`value/collation.rs`), by their bytes when none is: one order serves the simple and the
//! collated cases, down through documents and arrays.
//!
//! Not for: query-operator semantics such as type bracketing or array matching (`filter/mod.rs`),
//! the sort rule for arrays (`sort.rs`), or byte keys (`value/keys.rs`, which must agree with this).

use crate::query::value::number::{compare_numbers, Number};
use bson::{Bson, Document};
use std::cmp::Ordering;

/// Canonical type rank (lower sorts first): MinKey < Undefined < Null < numbers <
/// String/Symbol < Object < Array < BinData < ObjectId < Boolean < Date < Timestamp < Regex <
/// DBPointer < JavaScript < JavaScript with scope < MaxKey. A missing field ranks as Null.
pub fn type_rank(v: &Bson) -> u8 {
    match v {
        Bson::MinKey => 1,
        Bson::Undefined => 2,
        Bson::Null => 3,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => 4,
        Bson::String(_) | Bson::Symbol(_) => 5,
        Bson::Document(_) => 6,
        Bson::Array(_) => 7,
        Bson::Binary(_) => 8,
        Bson::ObjectId(_) => 9,
        Bson::Boolean(_) => 10,
        Bson::DateTime(_) => 11,
        Bson::Timestamp(_) => 12,
        Bson::RegularExpression(_) => 13,
        Bson::DbPointer(_) => 14,
        Bson::JavaScriptCode(_) => 15,
        Bson::JavaScriptCodeWithScope(_) => 16,
        Bson::MaxKey => 17,
    }
}

/// The text of a string or symbol.
pub fn string_value(v: &Bson) -> Option<&str> {
    match v {
        Bson::String(s) | Bson::Symbol(s) => Some(s),
        _ => None,
    }
}

/// Total order of BSON values, MongoDB's (strings under the installed collation).
pub fn compare_values(a: &Bson, b: &Bson) -> Ordering {
    let (ra, rb) = (type_rank(a), type_rank(b));
    if ra != rb {
        return ra.cmp(&rb);
    }
    match (a, b) {
        _ if ra == 4 => match (Number::from_bson(a), Number::from_bson(b)) {
            (Some(x), Some(y)) => compare_numbers(x, y),
            _ => Ordering::Equal,
        },
        _ if ra == 5 => {
            let (x, y) = (string_value(a).unwrap_or(""), string_value(b).unwrap_or(""));
            crate::query::value::collation::compare_strings(x, y)
        }
        (Bson::Document(x), Bson::Document(y)) => compare_documents(x, y),
        (Bson::Array(x), Bson::Array(y)) => compare_arrays(x, y),
        (Bson::Binary(x), Bson::Binary(y)) => x
            .bytes
            .len()
            .cmp(&y.bytes.len())
            .then_with(|| u8::from(x.subtype).cmp(&u8::from(y.subtype)))
            .then_with(|| x.bytes.cmp(&y.bytes)),
        (Bson::ObjectId(x), Bson::ObjectId(y)) => x.bytes().cmp(&y.bytes()),
        (Bson::Boolean(x), Bson::Boolean(y)) => x.cmp(y),
        (Bson::DateTime(x), Bson::DateTime(y)) => x.timestamp_millis().cmp(&y.timestamp_millis()),
        (Bson::Timestamp(x), Bson::Timestamp(y)) => {
            (x.time, x.increment).cmp(&(y.time, y.increment))
        }
        (Bson::RegularExpression(x), Bson::RegularExpression(y)) => x
            .pattern
            .as_str()
            .as_bytes()
            .cmp(y.pattern.as_str().as_bytes())
            .then_with(|| {
                x.options
                    .as_str()
                    .as_bytes()
                    .cmp(y.options.as_str().as_bytes())
            }),
        (Bson::DbPointer(x), Bson::DbPointer(y)) => {
            format!("{x:?}").as_bytes().cmp(format!("{y:?}").as_bytes())
        }
        (Bson::JavaScriptCode(x), Bson::JavaScriptCode(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Bson::JavaScriptCodeWithScope(x), Bson::JavaScriptCodeWithScope(y)) => x
            .code
            .as_bytes()
            .cmp(y.code.as_bytes())
            .then_with(|| compare_documents(&x.scope, &y.scope)),
        _ => Ordering::Equal,
    }
}

/// Documents compare element by element: type rank, then field name, then value; a document
/// that runs out of fields first is smaller.
pub fn compare_documents(a: &Document, b: &Document) -> Ordering {
    let mut left = a.iter();
    let mut right = b.iter();
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some((ka, va)), Some((kb, vb))) => {
                let order = type_rank(va)
                    .cmp(&type_rank(vb))
                    .then_with(|| ka.as_bytes().cmp(kb.as_bytes()))
                    .then_with(|| compare_values(va, vb));
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

/// Arrays compare element by element (type rank, then value); a prefix is smaller.
pub fn compare_arrays(a: &[Bson], b: &[Bson]) -> Ordering {
    for (x, y) in a.iter().zip(b.iter()) {
        let order = type_rank(x)
            .cmp(&type_rank(y))
            .then_with(|| compare_values(x, y));
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// `compare_values(a, b) == Equal`: MongoDB equality (1 == 1.0 == NumberLong(1)).
pub fn values_equal(a: &Bson, b: &Bson) -> bool {
    compare_values(a, b) == Ordering::Equal
}

/// Byte-level identity: same types and same bits all the way down (1 and 1.0 differ, NaN
/// equals NaN, -0.0 differs from 0.0). Used to decide whether an update changed a document.
pub fn identical(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Double(x), Bson::Double(y)) => x.to_bits() == y.to_bits(),
        (Bson::Document(x), Bson::Document(y)) => documents_identical(x, y),
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| identical(p, q))
        }
        _ => a == b,
    }
}

/// Byte-level identity of two documents, including field order.
pub fn documents_identical(a: &Document, b: &Document) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b.iter())
            .all(|((ka, va), (kb, vb))| ka == kb && identical(va, vb))
}

/// MongoDB's name for a value's BSON type, as its error messages and `$type` spell it.
pub fn bson_type_name(v: &Bson) -> &'static str {
    match v {
        Bson::Double(_) => "double",
        Bson::String(_) => "string",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Binary(_) => "binData",
        Bson::Undefined => "undefined",
        Bson::ObjectId(_) => "objectId",
        Bson::Boolean(_) => "bool",
        Bson::DateTime(_) => "date",
        Bson::Null => "null",
        Bson::RegularExpression(_) => "regex",
        Bson::DbPointer(_) => "dbPointer",
        Bson::JavaScriptCode(_) => "javascript",
        Bson::Symbol(_) => "symbol",
        Bson::JavaScriptCodeWithScope(_) => "javascriptWithScope",
        Bson::Int32(_) => "int",
        Bson::Timestamp(_) => "timestamp",
        Bson::Int64(_) => "long",
        Bson::Decimal128(_) => "decimal",
        Bson::MinKey => "minKey",
        Bson::MaxKey => "maxKey",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, oid::ObjectId, Binary, DateTime, Timestamp};

    #[test]
    fn canonical_type_order() {
        let ordered = vec![
            Bson::MinKey,
            Bson::Null,
            Bson::Double(f64::NAN),
            Bson::Int32(-5),
            Bson::Double(2.5),
            Bson::Int64(3),
            Bson::String("a".into()),
            Bson::Symbol("b".into()),
            Bson::Document(doc! {}),
            Bson::Array(vec![]),
            Bson::Binary(Binary {
                subtype: bson::spec::BinarySubtype::Generic,
                bytes: vec![1],
            }),
            Bson::ObjectId(ObjectId::from_bytes([0; 12])),
            Bson::Boolean(false),
            Bson::Boolean(true),
            Bson::DateTime(DateTime::from_millis(-1)),
            Bson::DateTime(DateTime::from_millis(1)),
            Bson::Timestamp(Timestamp {
                time: 1,
                increment: 0,
            }),
            Bson::MaxKey,
        ];
        for w in ordered.windows(2) {
            assert_eq!(compare_values(&w[0], &w[1]), Ordering::Less, "{w:?}");
        }
    }

    #[test]
    fn numbers_compare_exactly() {
        assert!(values_equal(&Bson::Int32(1), &Bson::Double(1.0)));
        assert!(values_equal(
            &Bson::Int64(1),
            &Bson::Decimal128("1.0".parse().unwrap())
        ));
        assert_eq!(
            compare_values(
                &Bson::Int64(9_007_199_254_740_993),
                &Bson::Double(9_007_199_254_740_992.0)
            ),
            Ordering::Greater
        );
        assert!(values_equal(&Bson::Double(-0.0), &Bson::Int32(0)));
        assert!(values_equal(
            &Bson::Double(f64::NAN),
            &Bson::Double(f64::NAN)
        ));
    }

    #[test]
    fn documents_and_arrays() {
        let a = Bson::Document(doc! {"a": 1});
        let b = Bson::Document(doc! {"a": 1, "b": 0});
        assert_eq!(compare_values(&a, &b), Ordering::Less);
        let c = Bson::Document(doc! {"a": "x"});
        assert_eq!(compare_values(&b, &c), Ordering::Less);
        let d = Bson::Document(doc! {"b": 0});
        assert_eq!(compare_values(&a, &d), Ordering::Less);
        assert_eq!(
            compare_values(
                &Bson::Array(vec![1.into()]),
                &Bson::Array(vec![1.into(), 0.into()])
            ),
            Ordering::Less
        );
        assert!(values_equal(
            &Bson::Array(vec![1.into()]),
            &Bson::Array(vec![1.0.into()])
        ));
    }

    #[test]
    fn strings_by_bytes_and_identity() {
        assert_eq!(
            compare_values(&Bson::String("B".into()), &Bson::String("a".into())),
            Ordering::Less
        );
        assert!(!identical(&Bson::Int32(1), &Bson::Double(1.0)));
        assert!(identical(&Bson::Double(f64::NAN), &Bson::Double(f64::NAN)));
    }
}
