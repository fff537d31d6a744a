//! Matching documents against a parsed [`Filter`]: MongoDB's implicit array traversal, type
//! bracketing of comparisons, null-matches-missing, NaN rules and the `$not`/`$ne`/`$nin`
//! negations over arrays.
//!
//! Not for: parsing (`filter/mod.rs`) or telling the planner what SQL may evaluate.

use crate::query::error::QueryError;
use crate::query::filter::{BitTest, ElemMatch, FieldPredicate, Filter, TypeSelector};
use crate::query::value::compare::{compare_values, type_rank, values_equal};
use crate::query::value::number::Number;
use crate::query::value::path::{candidates, Candidate};
use crate::query::value::regex_match::bson_regex_matches;
use bson::{Bson, Document};
use std::cmp::Ordering;

/// Whether `doc` matches `filter`; an `$expr` that fails to evaluate does not match
/// (use [`try_matches`] to surface the error as MongoDB does).
pub fn matches(filter: &Filter, doc: &Document) -> bool {
    try_matches(filter, doc).unwrap_or(false)
}

/// Whether `doc` matches `filter`, with the errors of `$expr` evaluation (e.g. `$divide` by
/// zero) reported.
pub fn try_matches(filter: &Filter, doc: &Document) -> Result<bool, QueryError> {
    Ok(match filter {
        Filter::And(children) => {
            for child in children {
                if !try_matches(child, doc)? {
                    return Ok(false);
                }
            }
            true
        }
        Filter::Or(children) => {
            for child in children {
                if try_matches(child, doc)? {
                    return Ok(true);
                }
            }
            false
        }
        Filter::Nor(children) => {
            for child in children {
                if try_matches(child, doc)? {
                    return Ok(false);
                }
            }
            true
        }
        Filter::Field { path, predicates } => {
            let found = candidates(doc, path);
            predicates.iter().all(|p| predicate_holds(p, &found))
        }
        Filter::Expr(expression) => expression
            .evaluate_optional(doc)?
            .as_ref()
            .map(crate::query::value::truthy::truthy)
            .unwrap_or(false),
        Filter::JsonSchema(schema) => schema.matches_document(doc),
        Filter::AlwaysTrue => true,
        Filter::AlwaysFalse => false,
        Filter::Text(search) => search.matches(doc),
    })
}

/// Whether one predicate holds over the candidates found at its path.
pub fn predicate_holds(predicate: &FieldPredicate, found: &[Candidate<'_>]) -> bool {
    match predicate {
        FieldPredicate::Eq(v) => equality_holds(v, found),
        FieldPredicate::Ne(v) => !equality_holds(v, found),
        FieldPredicate::Gt(v) => comparison_holds(v, found, |o| o == Ordering::Greater, false),
        FieldPredicate::Gte(v) => comparison_holds(v, found, |o| o != Ordering::Less, true),
        FieldPredicate::Lt(v) => comparison_holds(v, found, |o| o == Ordering::Less, false),
        FieldPredicate::Lte(v) => comparison_holds(v, found, |o| o != Ordering::Greater, true),
        FieldPredicate::In(values) => in_holds(values, found),
        FieldPredicate::Nin(values) => !in_holds(values, found),
        FieldPredicate::Exists(wanted) => found.iter().any(|c| c.value.is_some()) == *wanted,
        FieldPredicate::Type(types) => found
            .iter()
            .filter_map(|c| c.value)
            .any(|v| types.iter().any(|t| has_type(v, *t))),
        FieldPredicate::Regex(re) => found
            .iter()
            .filter_map(|c| c.value)
            .any(|v| re.matches_value(v)),
        FieldPredicate::Size(n) => whole_arrays(found).any(|items| items.len() == *n),
        FieldPredicate::All(parts) => {
            !parts.is_empty() && parts.iter().all(|p| predicate_holds(p, found))
        }
        FieldPredicate::ElemMatch(elem) => {
            whole_arrays(found).any(|items| items.iter().any(|item| element_matches(elem, item)))
        }
        FieldPredicate::Mod { divisor, remainder } => found
            .iter()
            .filter_map(|c| c.value)
            .any(|v| mod_holds(v, *divisor, *remainder)),
        FieldPredicate::Not(inner) => !inner.iter().all(|p| predicate_holds(p, found)),
        FieldPredicate::Bits { test, positions } => found
            .iter()
            .filter_map(|c| c.value)
            .any(|v| bits_hold(v, *test, positions)),
    }
}

/// Whether a single value (an array element, not a document path) satisfies a predicate:
/// the value is judged as it is, an array value is not expanded into its elements. Used by
/// `$elemMatch` on values, the `$elemMatch` projection and `$pull` conditions.
pub fn value_satisfies(predicate: &FieldPredicate, value: &Bson) -> bool {
    let found = [Candidate {
        value: Some(value),
        from_leaf_array: false,
    }];
    predicate_holds(predicate, &found)
}

fn whole_arrays<'a, 'b>(found: &'b [Candidate<'a>]) -> impl Iterator<Item = &'a Vec<Bson>> + 'b {
    found.iter().filter_map(|c| match c.value {
        Some(Bson::Array(items)) if !c.from_leaf_array => Some(items),
        _ => None,
    })
}

/// Whether one array element satisfies an `$elemMatch` body.
pub fn element_matches(elem: &ElemMatch, item: &Bson) -> bool {
    match elem {
        ElemMatch::Document(filter) => match item {
            Bson::Document(d) => matches(filter, d),
            // MongoDB treats an array element as an object keyed "0", "1", …
            Bson::Array(inner) => matches(filter, &array_as_document(inner)),
            _ => false,
        },
        ElemMatch::Value(predicates) => predicates.iter().all(|p| value_satisfies(p, item)),
    }
}

/// An array seen as the object MongoDB stores it as: fields "0", "1", ….
pub fn array_as_document(items: &[Bson]) -> Document {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| (i.to_string(), v.clone()))
        .collect()
}

fn is_nullish(v: &Bson) -> bool {
    matches!(v, Bson::Null)
}

fn is_nan(v: &Bson) -> bool {
    Number::from_bson(v).map(Number::is_nan).unwrap_or(false)
}

fn equality_holds(target: &Bson, found: &[Candidate<'_>]) -> bool {
    if is_nullish(target) {
        return found
            .iter()
            .any(|c| c.value.map(is_nullish).unwrap_or(true));
    }
    found
        .iter()
        .filter_map(|c| c.value)
        .any(|v| values_equal(v, target))
}

fn comparison_holds(
    target: &Bson,
    found: &[Candidate<'_>],
    accept: impl Fn(Ordering) -> bool,
    inclusive: bool,
) -> bool {
    if is_nullish(target) {
        return inclusive && equality_holds(target, found);
    }
    let across_types = matches!(target, Bson::MinKey | Bson::MaxKey);
    let target_nan = is_nan(target);
    found.iter().filter_map(|c| c.value).any(|v| {
        if !across_types && type_rank(v) != type_rank(target) {
            return false;
        }
        if target_nan || is_nan(v) {
            return inclusive && target_nan && is_nan(v);
        }
        accept(compare_values(v, target))
    })
}

fn in_holds(values: &[Bson], found: &[Candidate<'_>]) -> bool {
    values.iter().any(|value| match value {
        Bson::RegularExpression(re) => found
            .iter()
            .filter_map(|c| c.value)
            .any(|v| bson_regex_matches(re, v)),
        other => equality_holds(other, found),
    })
}

/// The BSON type code of a value, as `$type` and the `$type` expression number them.
pub fn type_code(v: &Bson) -> i32 {
    match v {
        Bson::Double(_) => 1,
        Bson::String(_) => 2,
        Bson::Document(_) => 3,
        Bson::Array(_) => 4,
        Bson::Binary(_) => 5,
        Bson::Undefined => 6,
        Bson::ObjectId(_) => 7,
        Bson::Boolean(_) => 8,
        Bson::DateTime(_) => 9,
        Bson::Null => 10,
        Bson::RegularExpression(_) => 11,
        Bson::DbPointer(_) => 12,
        Bson::JavaScriptCode(_) => 13,
        Bson::Symbol(_) => 14,
        Bson::JavaScriptCodeWithScope(_) => 15,
        Bson::Int32(_) => 16,
        Bson::Timestamp(_) => 17,
        Bson::Int64(_) => 18,
        Bson::Decimal128(_) => 19,
        Bson::MinKey => -1,
        Bson::MaxKey => 127,
    }
}

pub(super) fn has_type(v: &Bson, selector: TypeSelector) -> bool {
    match selector {
        TypeSelector::Number => Number::from_bson(v).is_some(),
        TypeSelector::Code(code) => type_code(v) == code,
    }
}

fn mod_holds(v: &Bson, divisor: i64, remainder: i64) -> bool {
    let Some(n) = Number::from_bson(v) else {
        return false;
    };
    let whole = match n.to_exact_i64() {
        Some(i) => i,
        None => {
            let f = n.to_f64();
            if !f.is_finite() {
                return false;
            }
            f.trunc() as i64
        }
    };
    whole.wrapping_rem(divisor) == remainder
}

fn bits_hold(v: &Bson, test: BitTest, positions: &[u32]) -> bool {
    let bit_at: Box<dyn Fn(u32) -> bool> = match v {
        Bson::Binary(b) => {
            let bytes = b.bytes.clone();
            Box::new(move |p| {
                bytes
                    .get((p / 8) as usize)
                    .map(|byte| byte & (1 << (p % 8)) != 0)
                    .unwrap_or(false)
            })
        }
        other => {
            let Some(n) = Number::from_bson(other) else {
                return false;
            };
            let Some(i) = n.to_exact_i64() else {
                return false;
            };
            Box::new(move |p| if p >= 63 { i < 0 } else { i & (1i64 << p) != 0 })
        }
    };
    match test {
        BitTest::AllSet => positions.iter().all(|p| bit_at(*p)),
        BitTest::AllClear => positions.iter().all(|p| !bit_at(*p)),
        BitTest::AnySet => positions.iter().any(|p| bit_at(*p)),
        BitTest::AnyClear => positions.iter().any(|p| !bit_at(*p)),
    }
}
