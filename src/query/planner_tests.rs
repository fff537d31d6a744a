//! Tests of the planner: which reads become which scans, orders and residual filters.

use super::*;
use bson::{doc, Document};

/// An index as the catalog would hand it to the planner.
struct TestIndex {
    spec: IndexSpec,
    table: String,
    multikey: bool,
}

impl IndexCandidate for TestIndex {
    fn spec(&self) -> &IndexSpec {
        &self.spec
    }
    fn entries_table(&self) -> &str {
        &self.table
    }
    fn is_multikey(&self) -> bool {
        self.multikey
    }
}

/// No secondary index.
const NONE: &[TestIndex] = &[];

fn plan(filter: Document) -> (Predicate, bool) {
    pushdown(&Filter::parse(&filter).unwrap(), NONE).into_parts()
}

#[test]
fn id_equality_is_exact() {
    let (predicate, exact) = plan(doc! {"_id": 5});
    assert_eq!(predicate, Predicate::KeyEquals(encode_key(&Bson::Int32(5))));
    assert!(exact);
    let (predicate, exact) = plan(doc! {"_id": {"$in": [1, 2, 1.0]}});
    assert!(matches!(predicate, Predicate::KeyIn(ref keys) if keys.len() == 2));
    assert!(exact);
}

#[test]
fn id_comparisons_are_one_exact_key_range() {
    let bound = |value: Bson, inclusive: bool| IndexBound {
        key: encode_key(&value),
        inclusive,
    };
    let (predicate, exact) = plan(doc! {"_id": {"$gte": 10, "$lt": 20, "$gt": 5}});
    assert!(exact);
    assert_eq!(
        predicate,
        Predicate::KeyRange {
            lower: Some(bound(Bson::Int32(10), true)),
            upper: Some(bound(Bson::Int32(20), false)),
        }
    );
    // Type bracketing: `$gt: 5` starts after 5's key and stops before the first key of
    // the next type (strings).
    let (predicate, _) = plan(doc! {"_id": {"$gt": 5}});
    let Predicate::KeyRange {
        lower: Some(lower),
        upper: Some(upper),
    } = predicate
    else {
        panic!("not a bounded key range: {predicate:?}");
    };
    assert!(lower.key > encode_key(&Bson::Int32(5)));
    assert!(lower.key <= encode_key(&Bson::Double(5.000001)));
    assert!(upper.key <= encode_key(&Bson::String(String::new())));
    assert!(upper.key > encode_key(&Bson::Double(f64::INFINITY)));
    // With other conditions on `_id`, both are pushed.
    let (predicate, exact) = plan(doc! {"_id": {"$gt": 5, "$in": [7, 9]}});
    assert!(exact);
    assert!(
        matches!(&predicate, Predicate::And(parts) if parts.len() == 2),
        "{predicate:?}"
    );
    // NaN is matched by no comparison; left to Rust.
    assert!(!plan(doc! {"_id": {"$gt": f64::NAN}}).1);
}

#[test]
fn field_equality_is_pushed_but_rechecked() {
    let (predicate, exact) = plan(doc! {"a.b": "x", "_id": 1});
    assert!(!exact);
    assert!(matches!(predicate, Predicate::And(ref parts) if parts.len() == 2));
}

#[test]
fn unpushable_parts_over_select() {
    let (predicate, exact) = plan(doc! {"a": {"$gt": "x"}});
    assert_eq!((predicate, exact), (Predicate::True, false));
    let (predicate, exact) = plan(doc! {"$or": [{"a": 1}, {"b": {"$regex": "^x"}}]});
    assert_eq!((predicate, exact), (Predicate::True, false));
    let (_, exact) = plan(doc! {"_id": null});
    assert!(!exact);
}

#[test]
fn numeric_and_date_ranges_are_pushed_inclusive_and_rechecked() {
    let path = vec!["a".to_string(), "b".to_string()];
    let (predicate, exact) = plan(doc! {"a.b": {"$gt": 1}});
    assert!(!exact);
    let at_least_one = Predicate::PathRange {
        path: path.clone(),
        side: RangeSide::AtLeast,
        value: RangeValue::Number(1.0),
    };
    assert_eq!(predicate, at_least_one);
    let (predicate, _) = plan(doc! {"a.b": {"$gte": 1, "$lt": 2.5}});
    let below = Predicate::PathRange {
        path: path.clone(),
        side: RangeSide::AtMost,
        value: RangeValue::Number(2.5),
    };
    assert_eq!(predicate, Predicate::And(vec![at_least_one, below]));
    let (predicate, _) = plan(doc! {"d": {"$lte": bson::DateTime::from_millis(7)}});
    assert_eq!(
        predicate,
        Predicate::PathRange {
            path: vec!["d".to_string()],
            side: RangeSide::AtMost,
            value: RangeValue::Date(7),
        }
    );
    // Operands an image number cannot hold exactly, and numeric path components, stay in
    // Rust.
    for filter in [
        doc! {"a": {"$gt": (1i64 << 53) + 1}},
        doc! {"a": {"$lt": f64::NAN}},
        doc! {"a": {"$gt": bson::Decimal128::from_bytes([0; 16])}},
        doc! {"a.0": {"$gt": 1}},
    ] {
        assert_eq!(plan(filter.clone()).0, Predicate::True, "{filter}");
    }
}

#[test]
fn sort_on_id_with_limit_is_pushed_when_exact() {
    let filter = Filter::parse(&doc! {}).unwrap();
    let sort = SortSpec::parse(&doc! {"_id": -1}).unwrap();
    let read = ReadPlan::new(filter, Some(sort), 2, Some(3), NONE);
    assert_eq!(read.scan.order, Some(KeyOrder::Descending));
    assert_eq!((read.scan.skip, read.scan.limit), (2, Some(3)));
    assert!(read.is_fully_pushed());
}

#[test]
fn a_sort_the_store_produces_is_pushed_under_a_residual_filter() {
    let filter = Filter::parse(&doc! {"a": {"$exists": true}}).unwrap();
    let sort = SortSpec::parse(&doc! {"_id": 1}).unwrap();
    let read = ReadPlan::new(filter, Some(sort), 2, Some(3), NONE);
    assert_eq!(read.scan.order, Some(KeyOrder::Ascending));
    assert!(read.residual.is_some() && read.sort.is_none());
    // Skip and limit count matches, so they stay in Rust.
    assert_eq!((read.scan.skip, read.scan.limit), (0, None));
    assert_eq!((read.skip, read.limit), (2, Some(3)));
}

#[test]
fn other_sorts_stay_in_rust() {
    let filter = Filter::parse(&doc! {}).unwrap();
    let sort = SortSpec::parse(&doc! {"a": 1}).unwrap();
    let read = ReadPlan::new(filter, Some(sort), 1, Some(1), NONE);
    assert!(read.scan.limit.is_none() && read.sort.is_some() && read.limit == Some(1));
}

fn index(name: &str, key: Document, multikey: bool) -> TestIndex {
    let spec = crate::query::index::IndexSpec::parse(&doc! {"key": key, "name": name}).unwrap();
    TestIndex {
        spec,
        table: format!("t_{name}"),
        multikey,
    }
}

#[test]
fn text_search_binds_to_the_text_index_and_asks_its_engine() {
    let filter = Filter::parse(&doc! {"$text": {"$search": "coffee -tea"}, "n": 1}).unwrap();
    let indexes = [
        index("n_1", doc! {"n": 1}, false),
        index("s_text", doc! {"s": "text"}, false),
    ];
    let sort = SortSpec::parse(&doc! {"score": {"$meta": "textScore"}}).unwrap();
    let read = ReadPlan::new(filter, Some(sort), 0, Some(5), &indexes);
    let Predicate::And(parts) = &read.scan.filter else {
        panic!("{:?}", read.scan.filter)
    };
    assert!(parts.contains(&Predicate::TextTerms {
        table: "t_s_text".into(),
        tokens: vec![crate::query::text::tokenize::engine_token("coffe")],
    }));
    // The engine over-selects (negations, phrases): the $text is re-checked, the sort by
    // score and the limit stay in Rust.
    let residual = read.residual.as_ref().unwrap();
    assert!(residual.matches(&doc! {"s": "Coffee", "n": 1}));
    assert!(!residual.matches(&doc! {"s": "coffee and tea", "n": 1}));
    assert!(read.sort.is_some() && read.limit == Some(5));
    assert!(read.scan.order_index.is_none());
}

#[test]
fn text_search_without_a_text_index_pushes_nothing_and_matches_nothing() {
    let filter = Filter::parse(&doc! {"$text": {"$search": "coffee"}}).unwrap();
    let read = ReadPlan::new(filter, None, 0, None, &[index("s_1", doc! {"s": 1}, false)]);
    assert_eq!(read.scan.filter, Predicate::True);
    assert!(!read.residual.unwrap().matches(&doc! {"s": "coffee"}));
}

#[test]
fn two_bounds_on_a_single_key_index_are_one_range() {
    let filter = Filter::parse(&doc! {"b": {"$gte": 5, "$lt": 10}}).unwrap();
    let (predicate, exact) = pushdown(&filter, &[index("b_1", doc! {"b": 1}, false)]).into_parts();
    assert!(exact);
    assert!(
        matches!(
            predicate,
            Predicate::IndexRange {
                lower: Some(_),
                upper: Some(_),
                ..
            }
        ),
        "{predicate:?}"
    );
}

#[test]
fn bounds_on_a_multikey_index_stay_separate() {
    let filter = Filter::parse(&doc! {"b": {"$gte": 5, "$lt": 10}}).unwrap();
    let (predicate, exact) = pushdown(&filter, &[index("b_1", doc! {"b": 1}, true)]).into_parts();
    assert!(exact);
    assert!(
        matches!(predicate, Predicate::And(ref parts) if parts.len() == 2),
        "{predicate:?}"
    );
}

/// The plan of `filter` sorted by `sort` with a limit, over `indexes`: the walked index
/// and direction, and whether the sort and limit stay in Rust.
fn sorted_plan(
    filter: Document,
    sort: Document,
    indexes: &[TestIndex],
) -> (Option<String>, Option<KeyOrder>, bool) {
    let filter = Filter::parse(&filter).unwrap();
    let sort = SortSpec::parse(&sort).unwrap();
    let read = ReadPlan::new(filter, Some(sort), 0, Some(5), indexes);
    (read.scan.order_index, read.scan.order, read.sort.is_some())
}

#[test]
fn an_equality_prefix_lets_a_compound_index_serve_the_next_fields_sort() {
    let indexes = [
        index("cat_1", doc! {"cat": 1}, false),
        index("cat_1_price_-1", doc! {"cat": 1, "price": -1}, false),
    ];
    let walked = Some("t_cat_1_price_-1".to_string());
    let (table, order, in_rust) = sorted_plan(doc! {"cat": "a"}, doc! {"price": -1}, &indexes);
    assert_eq!(
        (&table, order, in_rust),
        (&walked, Some(KeyOrder::Ascending), false)
    );
    let (table, order, in_rust) = sorted_plan(doc! {"cat": "a"}, doc! {"price": 1}, &indexes);
    assert_eq!(
        (&table, order, in_rust),
        (&walked, Some(KeyOrder::Descending), false)
    );
    // The walk is bounded by a range of the walked index, exact, so the limit is SQL's.
    let filter = Filter::parse(&doc! {"cat": "a"}).unwrap();
    let sort = SortSpec::parse(&doc! {"price": -1}).unwrap();
    let read = ReadPlan::new(filter, Some(sort), 0, Some(5), &indexes);
    assert_eq!(read.scan.limit, Some(5));
    assert!(
        matches!(&read.scan.filter, Predicate::IndexRange { table, .. } if table == "t_cat_1_price_-1"),
        "{:?}",
        read.scan.filter
    );
    // A sort on the fixed field as well, in either direction, changes nothing.
    let (table, _, in_rust) =
        sorted_plan(doc! {"cat": "a"}, doc! {"cat": -1, "price": -1}, &indexes);
    assert_eq!((&table, in_rust), (&walked, false));
    // Both index fields sorted, no filter: the index order, forwards or backwards.
    let (table, order, in_rust) = sorted_plan(doc! {}, doc! {"cat": -1, "price": 1}, &indexes);
    assert_eq!(
        (&table, order, in_rust),
        (&walked, Some(KeyOrder::Descending), false)
    );
}

#[test]
fn sorts_a_compound_index_cannot_produce_stay_in_rust() {
    let compound = [index("cat_1_price_-1", doc! {"cat": 1, "price": -1}, false)];
    // No equality on the leading field.
    assert!(sorted_plan(doc! {"cat": {"$gt": "a"}}, doc! {"price": -1}, &compound).2);
    assert!(sorted_plan(doc! {}, doc! {"price": -1}, &compound).2);
    // Mixed directions the index does not have.
    assert!(sorted_plan(doc! {}, doc! {"cat": 1, "price": 1}, &compound).2);
    // An equality under $or fixes nothing; null matches missing fields too.
    assert!(sorted_plan(doc! {"$or": [{"cat": "a"}]}, doc! {"price": -1}, &compound).2);
    assert!(sorted_plan(doc! {"cat": null}, doc! {"price": -1}, &compound).2);
    // A multikey index orders by elements, not documents.
    let multikey = [index("cat_1_price_-1", doc! {"cat": 1, "price": -1}, true)];
    assert!(sorted_plan(doc! {"cat": "a"}, doc! {"price": -1}, &multikey).2);
    // A sort key on a fixed field no index proves scalar is still sorted (arrays sort
    // by their least or greatest element).
    assert!(sorted_plan(doc! {"tags": "a"}, doc! {"tags": 1}, &compound).2);
}
