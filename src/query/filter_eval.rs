//! Matching documents against a parsed [`Filter`]: MongoDB's implicit array traversal, type
//! bracketing of comparisons, null-matches-missing, NaN rules and the `$not`/`$ne`/`$nin`
//! negations over arrays.
//!
//! Not for: parsing (`filter.rs`) or telling the planner what SQL may evaluate.

use super::compare::{compare_values, type_rank, values_equal};
use super::error::QueryError;
use super::filter::{BitTest, ElemMatch, FieldPredicate, Filter, TypeSelector};
use super::number::Number;
use super::path::{candidates, Candidate};
use super::regex_match::bson_regex_matches;
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
            .map(super::expr::truthy)
            .unwrap_or(false),
        Filter::AlwaysTrue => true,
        Filter::AlwaysFalse => false,
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

fn has_type(v: &Bson, selector: TypeSelector) -> bool {
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

#[cfg(test)]
mod tests {
    use super::super::filter::{equality_fields, upsert_seed, FieldPredicate, Filter};
    use bson::{doc, Bson, Document};

    fn m(filter: Document, d: Document) -> bool {
        Filter::parse(&filter).unwrap().matches(&d)
    }

    #[test]
    fn ast_shapes_for_the_planner() {
        assert_eq!(
            Filter::parse(&doc! {"a": 5}).unwrap(),
            Filter::Field {
                path: "a".into(),
                predicates: vec![FieldPredicate::Eq(Bson::Int32(5))]
            }
        );
        assert!(
            matches!(Filter::parse(&doc! {"a": 5, "b": 1}).unwrap(), Filter::And(v) if v.len() == 2)
        );
        assert_eq!(Filter::parse(&doc! {}).unwrap(), Filter::And(vec![]));
        assert_eq!(
            Filter::parse(&doc! {"a": {"$eq": 5}}).unwrap(),
            Filter::parse(&doc! {"a": 5}).unwrap()
        );
    }

    #[test]
    fn null_matches_missing_and_null_elements() {
        let f = doc! {"a": null};
        assert!(m(f.clone(), doc! {}));
        assert!(m(f.clone(), doc! {"a": null}));
        assert!(m(f.clone(), doc! {"a": [1, null]}));
        assert!(!m(f.clone(), doc! {"a": 0}));
        assert!(!m(f.clone(), doc! {"a": []}));
        let ne = doc! {"a": {"$ne": null}};
        assert!(!m(ne.clone(), doc! {}));
        assert!(!m(ne.clone(), doc! {"a": null}));
        assert!(!m(ne.clone(), doc! {"a": [1, null]}));
        assert!(m(ne, doc! {"a": 1}));
        assert!(m(doc! {"a.b": null}, doc! {"a": [{"b": 1}, {"c": 1}]}));
        assert!(m(doc! {"a.b": null}, doc! {"a": 5}));
        assert!(m(doc! {"a": {"$in": [null, 3]}}, doc! {}));
        assert!(m(doc! {"a": {"$gte": null}}, doc! {}));
        assert!(!m(doc! {"a": {"$gt": null}}, doc! {"a": null}));
    }

    #[test]
    fn equality_across_numeric_types_and_arrays() {
        let f = doc! {"a": 5};
        for d in [
            doc! {"a": [1, 5]},
            doc! {"a": 5.0},
            doc! {"a": 5i64},
            doc! {"a": Bson::Decimal128("5".parse().unwrap())},
        ] {
            assert!(m(f.clone(), d.clone()), "{d}");
        }
        assert!(!m(f, doc! {"a": "5"}));
        assert!(m(doc! {"a": [1, 5]}, doc! {"a": [1, 5]}));
        assert!(!m(doc! {"a": [1, 5]}, doc! {"a": [5, 1]}));
        assert!(m(doc! {"a": [1, 5]}, doc! {"a": [[1, 5], 2]}));
        assert!(m(doc! {"a.b": 1}, doc! {"a": [{"b": 1}, {"b": 2}]}));
        assert!(m(doc! {"a.1": 7}, doc! {"a": [6, 7]}));
        assert!(m(doc! {"a.b": {"c": 1}}, doc! {"a": {"b": {"c": 1}}}));
        assert!(!m(
            doc! {"a.b": {"c": 1}},
            doc! {"a": {"b": {"c": 1, "d": 2}}}
        ));
    }

    #[test]
    fn comparisons_bracket_types_and_traverse_arrays() {
        let gt = doc! {"a": {"$gt": 5}};
        assert!(!m(gt.clone(), doc! {"a": "z"}));
        assert!(m(gt.clone(), doc! {"a": [1, "x", 6]}));
        assert!(!m(gt.clone(), doc! {"a": [1, 2]}));
        assert!(m(gt.clone(), doc! {"a": 5.5}));
        assert!(!m(gt, doc! {"a": f64::NAN}));
        assert!(m(doc! {"a": {"$gte": f64::NAN}}, doc! {"a": f64::NAN}));
        assert!(!m(doc! {"a": {"$lt": 5}}, doc! {"a": f64::NAN}));
        assert!(m(doc! {"a": {"$gt": 1, "$lt": 5}}, doc! {"a": [0, 10]}));
        assert!(m(
            doc! {"a": {"$elemMatch": {"$gt": 1, "$lt": 5}}},
            doc! {"a": [0, 3]}
        ));
        assert!(!m(
            doc! {"a": {"$elemMatch": {"$gt": 1, "$lt": 5}}},
            doc! {"a": [0, 10]}
        ));
        assert!(m(doc! {"a": {"$lt": "b"}}, doc! {"a": "a"}));
        assert!(m(doc! {"a": {"$lt": bson::Bson::MaxKey}}, doc! {"a": "a"}));
    }

    #[test]
    fn negations_and_in() {
        assert!(!m(doc! {"a": {"$ne": 5}}, doc! {"a": [1, 5]}));
        assert!(m(doc! {"a": {"$ne": 5}}, doc! {}));
        assert!(!m(doc! {"a": {"$nin": [5, 6]}}, doc! {"a": [1, 6]}));
        assert!(m(doc! {"a": {"$nin": [5, 6]}}, doc! {"a": [1, 2]}));
        assert!(m(doc! {"a": {"$in": [5, 6]}}, doc! {"a": [1, 6]}));
        assert!(m(doc! {"a": {"$not": {"$gt": 5}}}, doc! {"a": 3}));
        assert!(m(doc! {"a": {"$not": {"$gt": 5}}}, doc! {}));
        assert!(m(doc! {"a": {"$exists": false}}, doc! {"b": 1}));
        assert!(!m(doc! {"a": {"$exists": false}}, doc! {"a": null}));
        assert!(m(
            doc! {"a.b": {"$exists": true}},
            doc! {"a": [{"c": 1}, {"b": null}]}
        ));
        assert!(m(doc! {"$or": [{"a": 1}, {"b": 2}]}, doc! {"b": 2}));
        assert!(!m(doc! {"$nor": [{"a": 1}, {"b": 2}]}, doc! {"b": 2}));
        assert!(m(
            doc! {"$and": [{"a": 1}, {"b": 2}]},
            doc! {"a": 1, "b": 2}
        ));
    }

    #[test]
    fn type_regex_size_all_mod_bits() {
        assert!(m(doc! {"a": {"$type": "string"}}, doc! {"a": ["x", 1]}));
        assert!(m(doc! {"a": {"$type": "number"}}, doc! {"a": 1i64}));
        assert!(m(doc! {"a": {"$type": ["array"]}}, doc! {"a": []}));
        assert!(m(doc! {"a": {"$type": 10}}, doc! {"a": null}));
        assert!(m(
            doc! {"a": {"$regex": "^AB", "$options": "i"}},
            doc! {"a": "abc"}
        ));
        assert!(m(
            doc! {"a": bson::Regex { pattern: "b".try_into().unwrap(), options: "".try_into().unwrap() }},
            doc! {"a": ["x", "abc"]}
        ));
        assert!(m(
            doc! {"a": {"$in": [bson::Regex { pattern: "^x".try_into().unwrap(), options: "".try_into().unwrap() }]}},
            doc! {"a": "xy"}
        ));
        assert!(m(
            doc! {"a": {"$not": bson::Regex { pattern: "^x".try_into().unwrap(), options: "".try_into().unwrap() }}},
            doc! {"a": "y"}
        ));
        assert!(m(doc! {"a": {"$size": 2}}, doc! {"a": [1, [2, 3]]}));
        assert!(!m(doc! {"a": {"$size": 2}}, doc! {"a": [[2, 3]]}));
        assert!(m(doc! {"a": {"$all": [1, 2]}}, doc! {"a": [2, 3, 1]}));
        assert!(!m(doc! {"a": {"$all": []}}, doc! {"a": [1]}));
        assert!(m(
            doc! {"a": {"$all": [{"$elemMatch": {"b": 1}}]}},
            doc! {"a": [{"b": 1}]}
        ));
        assert!(m(doc! {"a": {"$mod": [4, 1]}}, doc! {"a": 5.7}));
        assert!(m(doc! {"a": {"$bitsAllSet": [0, 2]}}, doc! {"a": 5}));
        assert!(m(doc! {"a": {"$bitsAnyClear": 3}}, doc! {"a": 5}));
        assert!(!m(doc! {"a": {"$bitsAllSet": 3}}, doc! {"a": 5}));
        assert!(m(
            doc! {"a": {"$elemMatch": {"b": 1, "c": {"$gt": 1}}}},
            doc! {"a": [{"b": 1, "c": 0}, {"b": 1, "c": 2}]}
        ));
        assert!(!m(
            doc! {"a": {"$elemMatch": {"b": 1, "c": {"$gt": 1}}}},
            doc! {"a": [{"b": 1, "c": 0}, {"b": 2, "c": 2}]}
        ));
    }

    #[test]
    fn expr_and_comment() {
        assert!(m(
            doc! {"$expr": {"$gt": ["$a", "$b"]}, "$comment": "x"},
            doc! {"a": 2, "b": 1}
        ));
        assert!(!m(
            doc! {"$expr": {"$gt": ["$a", "$b"]}},
            doc! {"a": 1, "b": 1}
        ));
    }

    #[test]
    fn parse_errors() {
        let e = Filter::parse(&doc! {"$foo": 1}).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (2, "unknown top level operator: $foo")
        );
        let e = Filter::parse(&doc! {"a": {"$foo": 1}}).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (2, "unknown operator: $foo"));
        assert_eq!(Filter::parse(&doc! {"$or": []}).unwrap_err().code, 2);
        assert_eq!(Filter::parse(&doc! {"a": {"$in": 5}}).unwrap_err().code, 2);
        assert_eq!(Filter::parse(&doc! {"$where": "1"}).unwrap_err().code, 2);
        assert_eq!(
            Filter::parse(&doc! {"a": {"$near": [0, 0]}})
                .unwrap_err()
                .code,
            2
        );
        assert_eq!(
            Filter::parse(&doc! {"a": {"$mod": [0, 1]}})
                .unwrap_err()
                .code,
            2
        );
        assert_eq!(
            Filter::parse(&doc! {"a": {"$size": -1}}).unwrap_err().code,
            2
        );
    }

    #[test]
    fn upsert_seed_from_equalities() {
        let f = Filter::parse(
            &doc! {"_id": 7, "a.b": 1, "c": {"$gt": 1}, "$and": [{"d": "x"}, {"e": {"$eq": 2}}]},
        )
        .unwrap();
        assert_eq!(
            equality_fields(&f),
            doc! {"_id": 7, "a": {"b": 1}, "d": "x", "e": 2}
        );
        // Cases of MongoDB's upsert tests: single-clause $or counts, multi-clause does not.
        let seed = |f: Document| upsert_seed(&Filter::parse(&f).unwrap());
        assert_eq!(
            seed(doc! {"_id": 1, "$and": [{"c": 1}, {"d": 1}], "a": 12}).unwrap(),
            doc! {"_id": 1, "c": 1, "d": 1, "a": 12}
        );
        assert_eq!(
            seed(doc! {"$and": [{"c": 1}, {"d": 1}, {"$or": [{"x": 1}]}]}).unwrap(),
            doc! {"c": 1, "d": 1, "x": 1}
        );
        assert_eq!(
            seed(doc! {"r": {"$gt": 3}, "$and": [{"c": 1}, {"d": 1}], "$or": [{"x": 1}, {"x": 2}]})
                .unwrap(),
            doc! {"c": 1, "d": 1}
        );
        assert_eq!(
            seed(doc! {"c": 2, "$and": [{"c": 1}, {"d": 1}]})
                .unwrap_err()
                .code,
            54
        );
        assert_eq!(
            seed(doc! {"a.b": 1, "a": {"a": 1, "b": 1}})
                .unwrap_err()
                .code,
            54
        );
    }
}

/// The cases of MongoDB's own null-semantics test (jstests/core/null_query_semantics.js, 8.0
/// behaviour), run against this evaluator.
#[cfg(test)]
mod null_semantics_tests {
    use super::super::filter::Filter;
    use bson::{doc, Bson, Document};

    fn collection() -> Vec<Document> {
        vec![
            doc! {"_id": "a_empty_subobject", "a": {}},
            doc! {"_id": "a_null", "a": null},
            doc! {"_id": "a_number", "a": 4},
            doc! {"_id": "a_subobject_b_not_null", "a": {"b": "hi"}},
            doc! {"_id": "a_subobject_b_null", "a": {"b": null}},
            doc! {"_id": "a_subobject_b_undefined", "a": {"b": Bson::Undefined}},
            doc! {"_id": "a_undefined", "a": Bson::Undefined},
            doc! {"_id": "no_a"},
            doc! {"_id": "a_double_array", "a": [[]]},
            doc! {"_id": "a_empty_array", "a": []},
            doc! {"_id": "a_object_array_b_mix_null_undefined_missing",
            "a": [{"b": null}, {"b": Bson::Undefined}, {"b": null}, {}]},
            doc! {"_id": "a_object_array_no_b_nulls", "a": [{"b": 1}, {"b": 3}, {"b": "string"}]},
            doc! {"_id": "a_object_array_some_b_nulls", "a": [{"b": null}, {"b": 3}, {"b": null}]},
            doc! {"_id": "a_object_array_some_b_undefined", "a": [{"b": Bson::Undefined}, {"b": 3}]},
            doc! {"_id": "a_object_array_some_b_missing", "a": [{"b": 3}, {}]},
            doc! {"_id": "a_value_array_all_nulls", "a": [null, null]},
            doc! {"_id": "a_value_array_no_nulls", "a": [1, "string", 4]},
            doc! {"_id": "a_value_array_with_null", "a": [1, "string", null, 4]},
            doc! {"_id": "a_value_array_with_undefined", "a": [1, "string", Bson::Undefined, 4]},
        ]
    }

    fn ids(filter: Document) -> Vec<String> {
        let f = Filter::parse(&filter).unwrap();
        let mut out: Vec<String> = collection()
            .into_iter()
            .filter(|d| f.matches(d))
            .map(|d| d.get_str("_id").unwrap().to_string())
            .collect();
        out.sort();
        out
    }

    fn expect(filter: Document, expected: &[&str]) {
        let mut expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        expected.sort();
        assert_eq!(ids(filter.clone()), expected, "{filter}");
    }

    fn all_but(excluded: &[&str]) -> Vec<&'static str> {
        const ALL: [&str; 19] = [
            "a_empty_subobject",
            "a_null",
            "a_number",
            "a_subobject_b_not_null",
            "a_subobject_b_null",
            "a_subobject_b_undefined",
            "a_undefined",
            "no_a",
            "a_double_array",
            "a_empty_array",
            "a_object_array_b_mix_null_undefined_missing",
            "a_object_array_no_b_nulls",
            "a_object_array_some_b_nulls",
            "a_object_array_some_b_undefined",
            "a_object_array_some_b_missing",
            "a_value_array_all_nulls",
            "a_value_array_no_nulls",
            "a_value_array_with_null",
            "a_value_array_with_undefined",
        ];
        ALL.into_iter()
            .filter(|id| !excluded.contains(id))
            .collect()
    }

    const A_NULL: [&str; 4] = [
        "a_null",
        "a_value_array_all_nulls",
        "a_value_array_with_null",
        "no_a",
    ];
    const A_B_NULL: [&str; 9] = [
        "a_empty_subobject",
        "a_null",
        "a_number",
        "a_subobject_b_null",
        "a_undefined",
        "no_a",
        "a_object_array_b_mix_null_undefined_missing",
        "a_object_array_some_b_nulls",
        "a_object_array_some_b_missing",
    ];

    #[test]
    fn equality_with_null() {
        expect(doc! {"a": {"$eq": null}}, &A_NULL);
        expect(doc! {"a": {"$ne": null}}, &all_but(&A_NULL));
        expect(doc! {"a": {"$not": {"$gte": null}}}, &all_but(&A_NULL));
        expect(doc! {"a": {"$in": [null, 75]}}, &A_NULL);
        expect(doc! {"$or": [{"a": null}, {"a": 75}]}, &A_NULL);
        expect(doc! {"a": {"$nin": [null, 75]}}, &all_but(&A_NULL));
        let mut null_or_empty = A_NULL.to_vec();
        null_or_empty.extend(["a_double_array", "a_empty_array"]);
        expect(doc! {"a": {"$nin": [null, []]}}, &all_but(&null_or_empty));
        expect(doc! {"a": {"$exists": false}}, &["no_a"]);
    }

    #[test]
    fn dotted_equality_with_null() {
        expect(doc! {"a.b": {"$eq": null}}, &A_B_NULL);
        expect(doc! {"a.b": {"$ne": null}}, &all_but(&A_B_NULL));
        expect(doc! {"a.b": {"$in": [null, 75]}}, &A_B_NULL);
        expect(doc! {"$or": [{"a.b": null}, {"a.b": 75}]}, &A_B_NULL);
        expect(doc! {"a.b": {"$nin": [null, 75]}}, &all_but(&A_B_NULL));
        let string_regex = Bson::RegularExpression(bson::Regex {
            pattern: "^str.*".try_into().unwrap(),
            options: "".try_into().unwrap(),
        });
        let mut excluded = A_B_NULL.to_vec();
        excluded.push("a_object_array_no_b_nulls");
        expect(
            doc! {"a.b": {"$nin": [null, string_regex]}},
            &all_but(&excluded),
        );
        expect(doc! {"a.b": {"$elemMatch": {"$eq": null}}}, &[]);
        expect(doc! {"a.b": {"$elemMatch": {"$ne": null}}}, &[]);
    }

    #[test]
    fn elem_match_with_null() {
        expect(
            doc! {"a": {"$elemMatch": {"$eq": null}}},
            &["a_value_array_all_nulls", "a_value_array_with_null"],
        );
        expect(
            doc! {"a": {"$elemMatch": {"$ne": null}}},
            &[
                "a_double_array",
                "a_object_array_b_mix_null_undefined_missing",
                "a_object_array_no_b_nulls",
                "a_object_array_some_b_nulls",
                "a_object_array_some_b_undefined",
                "a_object_array_some_b_missing",
                "a_value_array_no_nulls",
                "a_value_array_with_undefined",
                "a_value_array_with_null",
            ],
        );
        expect(
            doc! {"a": {"$elemMatch": {"b": {"$eq": null}}}},
            &[
                "a_double_array",
                "a_object_array_b_mix_null_undefined_missing",
                "a_object_array_some_b_nulls",
                "a_object_array_some_b_missing",
            ],
        );
        expect(
            doc! {"a": {"$elemMatch": {"b": {"$ne": null}}}},
            &[
                "a_object_array_no_b_nulls",
                "a_object_array_some_b_nulls",
                "a_object_array_some_b_undefined",
                "a_object_array_some_b_missing",
                "a_object_array_b_mix_null_undefined_missing",
            ],
        );
    }
}
