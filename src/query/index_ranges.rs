//! Index key ranges for single field conditions: which bytes of an index's key space hold
//! exactly the documents a condition on the index's first field matches, for ascending and
//! descending fields.
//!
//! The ranges follow the evaluator's rules (`filter_eval.rs`): equality by key (1 == 1.0),
//! comparisons bracketed by type (`$gt: 5` never meets a string), and NaN matched by no
//! comparison (it has the lowest key among numbers, so ranges start just above it). Keys
//! of a compound index begin with the first field's component, so every range covers all
//! keys that start with the component (`[c, successor(c))`).
//!
//! Not for: choosing an index or building SQL (see `planner`).

use bson::Bson;

use super::scan::IndexBound;
use crate::query::filter::FieldPredicate;
use crate::query::index::{invert, key_component, prefix_successor, IndexDirection};
use crate::query::value::compare::type_rank;
use crate::query::value::keys::encode_key;
use crate::query::value::number::Number;

/// A half-open byte range `[lower, upper)` of index keys (None = unbounded).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyRange {
    pub lower: Option<IndexBound>,
    pub upper: Option<IndexBound>,
}

fn at_least(key: Vec<u8>) -> Option<IndexBound> {
    Some(IndexBound {
        key,
        inclusive: true,
    })
}

fn below(key: Option<Vec<u8>>) -> Option<IndexBound> {
    key.map(|key| IndexBound {
        key,
        inclusive: false,
    })
}

/// Values whose equality and ordering are decided by their key alone. Null (which also
/// matches missing fields), arrays (whole-array matching), regexes (pattern matching),
/// operator-looking documents and MinKey/MaxKey (which compare across types) stay in Rust.
pub fn is_plain_value(value: &Bson) -> bool {
    match value {
        Bson::Array(_)
        | Bson::RegularExpression(_)
        | Bson::Null
        | Bson::Undefined
        | Bson::MinKey
        | Bson::MaxKey => false,
        Bson::Document(d) => !d.keys().any(|k| k.starts_with('$')),
        _ => true,
    }
}

fn is_nan(value: &Bson) -> bool {
    Number::from_bson(value).is_some_and(Number::is_nan)
}

/// All keys that begin with the component of `value`.
fn prefix_range(component: Vec<u8>) -> KeyRange {
    let upper = prefix_successor(&component);
    KeyRange {
        lower: at_least(component),
        upper: below(upper),
    }
}

/// The range for `$eq: value` on the first field of an index.
pub fn equality_range(value: &Bson, direction: IndexDirection) -> Option<KeyRange> {
    is_plain_value(value).then(|| prefix_range(key_component(value, direction)))
}

/// The range for a comparison (`$gt`, `$gte`, `$lt`, `$lte`), or None when the condition
/// is not one or its operand is not plain (or NaN).
pub fn comparison_range(predicate: &FieldPredicate, direction: IndexDirection) -> Option<KeyRange> {
    let (value, greater, inclusive) = match predicate {
        FieldPredicate::Gt(v) => (v, true, false),
        FieldPredicate::Gte(v) => (v, true, true),
        FieldPredicate::Lt(v) => (v, false, false),
        FieldPredicate::Lte(v) => (v, false, true),
        _ => return None,
    };
    if !is_plain_value(value) || is_nan(value) {
        return None;
    }
    let rank = type_rank(value);
    // The type bracket of the operand, in ascending key space: [rank, rank + 1), with NaN
    // (the lowest number, matched by no comparison) left out.
    let bracket_low = if Number::from_bson(value).is_some() {
        prefix_successor(&encode_key(&Bson::Double(f64::NAN))).unwrap_or_else(|| vec![rank])
    } else {
        vec![rank]
    };
    let bracket_high = vec![rank.saturating_add(1)];
    let component = key_component(value, IndexDirection::Ascending);
    let after_component = prefix_successor(&component);
    // Ascending key space: `greater` keeps keys after the operand (all keys starting with it
    // too when inclusive); otherwise keys before it.
    let (low, high) = match (greater, inclusive) {
        (true, true) => (Some(component), Some(bracket_high)),
        (true, false) => (after_component, Some(bracket_high)),
        (false, true) => (Some(bracket_low), after_component),
        (false, false) => (Some(bracket_low), Some(component)),
    };
    let (low, high) = (low?, high?);
    Some(match direction {
        IndexDirection::Ascending => KeyRange {
            lower: at_least(low),
            upper: below(Some(high)),
        },
        // Inverting bytes reverses the order: [low, high) becomes (invert(high), invert(low)],
        // i.e. [successor(invert(high)) .. successor(invert(low))) for prefix ranges; since
        // `high` and `low` are themselves prefix boundaries, the inverted range is
        // [invert(high) + 1-prefix, invert(low) + 1-prefix).
        IndexDirection::Descending => KeyRange {
            lower: at_least(prefix_successor(&invert(&high)).unwrap_or_else(|| invert(&high))),
            upper: below(prefix_successor(&invert(&low))),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::index::IndexSpec;
    use bson::{doc, Document};

    /// Does the document's index entry fall in the range?
    fn in_range(range: &KeyRange, spec: &IndexSpec, document: &Document) -> bool {
        let Ok(Some(entries)) = spec.entries(document) else {
            return false;
        };
        entries.keys.iter().any(|key| {
            range.lower.as_ref().is_none_or(|b| {
                if b.inclusive {
                    key >= &b.key
                } else {
                    key > &b.key
                }
            }) && range.upper.as_ref().is_none_or(|b| {
                if b.inclusive {
                    key <= &b.key
                } else {
                    key < &b.key
                }
            })
        })
    }

    fn values() -> Vec<Bson> {
        vec![
            Bson::Int32(-3),
            Bson::Int32(5),
            Bson::Int64(5),
            Bson::Double(5.0),
            Bson::Double(5.5),
            Bson::Double(f64::NAN),
            Bson::Double(f64::INFINITY),
            Bson::Double(f64::NEG_INFINITY),
            Bson::Int64(1 << 60),
            Bson::String("5".into()),
            Bson::String("abc".into()),
            Bson::String("abd".into()),
            Bson::Boolean(true),
            Bson::Null,
            Bson::Document(doc! {"x": 1}),
            Bson::Array(vec![Bson::Int32(1), Bson::Int32(9)]),
            Bson::Array(vec![]),
            Bson::DateTime(bson::DateTime::from_millis(5)),
        ]
    }

    /// Index ranges select exactly what the evaluator matches, both directions, for
    /// single-field and compound indexes, over mixed types and arrays.
    #[test]
    fn ranges_agree_with_the_evaluator() {
        let specs = [
            IndexSpec::parse(&doc! {"key": {"a": 1}, "name": "a_1"}).unwrap(),
            IndexSpec::parse(&doc! {"key": {"a": -1}, "name": "a_-1"}).unwrap(),
            IndexSpec::parse(&doc! {"key": {"a": 1, "b": -1}, "name": "ab"}).unwrap(),
            IndexSpec::parse(&doc! {"key": {"a": -1, "b": 1}, "name": "ba"}).unwrap(),
        ];
        let operands = values();
        for spec in &specs {
            let direction = spec.fields[0].1;
            for operand in &operands {
                for op in ["$eq", "$gt", "$gte", "$lt", "$lte"] {
                    let filter_doc = doc! {"a": {op: operand.clone()}};
                    let Ok(filter) = crate::query::filter::Filter::parse(&filter_doc) else {
                        continue;
                    };
                    let crate::query::filter::Filter::Field { predicates, .. } = &filter else {
                        continue;
                    };
                    let range = match &predicates[0] {
                        FieldPredicate::Eq(v) => equality_range(v, direction),
                        other => comparison_range(other, direction),
                    };
                    let Some(range) = range else { continue };
                    for value in &operands {
                        let document = doc! {"a": value.clone(), "b": 1};
                        assert_eq!(
                            in_range(&range, spec, &document),
                            filter.matches(&document),
                            "{} {filter_doc} on {document}",
                            spec.name
                        );
                    }
                }
            }
        }
    }
}
