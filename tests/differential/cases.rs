//! The differential suite's cases: the `Case` type (one read), the hand-written filters,
//! the field × operator × operand table, the sorted/skipped/limited/projected shapes, the
//! proptest strategies for generated cases, and MongoDB's documented answers as expected
//! `_id` lists.

use mongodb::bson::{doc, Bson, Document};
use proptest::prelude::*;

use super::corpus::{arr, date, dec, oid, pool, re, scalars};

// ---------------------------------------------------------------------------
// the case type
// ---------------------------------------------------------------------------

/// One read.
#[derive(Clone, Debug, Default)]
pub struct Case {
    pub filter: Document,
    pub sort: Option<Document>,
    pub skip: u64,
    pub limit: Option<i64>,
    pub projection: Option<Document>,
}

impl Case {
    pub fn filter(filter: Document) -> Case {
        Case {
            filter,
            ..Case::default()
        }
    }

    pub fn sorted(filter: Document, sort: Document, skip: u64, limit: Option<i64>) -> Case {
        Case {
            filter,
            sort: Some(sort),
            skip,
            limit,
            projection: None,
        }
    }

    pub fn projected(mut self, projection: Document) -> Case {
        self.projection = Some(projection);
        self
    }
}

// ---------------------------------------------------------------------------
// hand-written cases
// ---------------------------------------------------------------------------

/// Filters written out one by one: every operator, dotted paths through arrays, logical
/// combinations, on indexed and unindexed fields.
pub fn hand_written_filters() -> Vec<Document> {
    vec![
        doc! {},
        // equality across numeric types, and not across strings
        doc! {"a": 1},
        doc! {"a": Bson::Int64(1)},
        doc! {"a": 1.0},
        doc! {"a": dec("1")},
        doc! {"a": dec("1.000")},
        doc! {"a": "1"},
        doc! {"b": 1},
        doc! {"b": dec("1.0")},
        doc! {"c": 1},
        doc! {"u": 1},
        doc! {"u": dec("1")},
        doc! {"n.x": 1},
        doc! {"n.x": dec("1")},
        doc! {"arr.k": 1},
        doc! {"arr.k": Bson::Int64(1)},
        doc! {"arr.k": "1"},
        doc! {"w": 1},
        // zero, NaN, infinities, large integers
        doc! {"a": 0},
        doc! {"a": -0.0},
        doc! {"b": 0},
        doc! {"b": dec("-0")},
        doc! {"a": f64::NAN},
        doc! {"b": f64::NAN},
        doc! {"u": f64::NAN},
        doc! {"a": dec("NaN")},
        doc! {"a": f64::INFINITY},
        doc! {"b": f64::NEG_INFINITY},
        doc! {"a": Bson::Int64(9_007_199_254_740_993)},
        doc! {"a": 9_007_199_254_740_992.0},
        doc! {"b": Bson::Int64(9_007_199_254_740_993)},
        doc! {"c": Bson::Int64(9_007_199_254_740_993)},
        doc! {"c": 9_007_199_254_740_992.0},
        doc! {"u": Bson::Int64(9_007_199_254_740_993)},
        doc! {"a": 0.1},
        doc! {"a": dec("0.1")},
        doc! {"b": dec("0.1")},
        // null vs missing
        doc! {"a": Bson::Null},
        doc! {"b": Bson::Null},
        doc! {"s": Bson::Null},
        doc! {"n.x": Bson::Null},
        doc! {"arr.k": Bson::Null},
        doc! {"sp": Bson::Null},
        doc! {"u": Bson::Null},
        doc! {"nope": Bson::Null},
        doc! {"a": {"$ne": Bson::Null}},
        doc! {"arr.k": {"$ne": Bson::Null}},
        doc! {"a": {"$exists": true}},
        doc! {"a": {"$exists": false}},
        doc! {"n.x": {"$exists": true}},
        doc! {"arr.k": {"$exists": false}},
        doc! {"sp": {"$exists": true}},
        doc! {"a": {"$type": "null"}},
        doc! {"a": {"$gte": Bson::Null}},
        doc! {"a": {"$lte": Bson::Null}},
        doc! {"a": {"$lt": Bson::Null}},
        doc! {"a": {"$in": [Bson::Null]}},
        doc! {"s": {"$in": [Bson::Null, "abc"]}},
        doc! {"a": {"$nin": [Bson::Null]}},
        doc! {"a": {"$eq": Bson::Undefined}},
        // arrays: element match, whole-array match, nested arrays, positions
        doc! {"a": [1, 2]},
        doc! {"a": [2, 1]},
        doc! {"a": []},
        doc! {"tags": []},
        doc! {"tags": "x"},
        doc! {"tags": 1},
        doc! {"tags": ["x", "y"]},
        doc! {"tags": [Bson::Null]},
        doc! {"a": 2},
        doc! {"a": 3},
        doc! {"a": {"x": 1}},
        doc! {"a": {"y": 2, "x": 1}},
        doc! {"a.x": 1},
        doc! {"a.x": 2},
        doc! {"a.0": 1},
        doc! {"a.1": 1},
        doc! {"a.0": [1, 2]},
        doc! {"tags.0": "x"},
        doc! {"tags.1": {"$gt": 0}},
        doc! {"arr.0.k": 1},
        doc! {"arr.1.k": 2},
        doc! {"arr.k": [1, 2]},
        doc! {"arr.k": 2},
        doc! {"arr": {"k": 1}},
        doc! {"arr": {"k": 1, "m": 2}},
        doc! {"arr.m": {"$gt": 1}},
        doc! {"n": {"x": 1}},
        doc! {"n": {}},
        doc! {"n": 5},
        // comparisons and type bracketing
        doc! {"a": {"$gt": 1}},
        doc! {"a": {"$gte": 1}},
        doc! {"a": {"$lt": 1}},
        doc! {"a": {"$lte": 1}},
        doc! {"a": {"$gt": 1, "$lt": 3}},
        doc! {"a": {"$gt": "1"}},
        doc! {"a": {"$gte": ""}},
        doc! {"a": {"$lt": "b"}},
        doc! {"a": {"$gt": f64::NEG_INFINITY}},
        doc! {"a": {"$lt": f64::INFINITY}},
        doc! {"a": {"$gte": f64::NAN}},
        doc! {"a": {"$gt": f64::NAN}},
        doc! {"a": {"$lte": dec("NaN")}},
        doc! {"a": {"$gt": {}}},
        doc! {"a": {"$gte": {"x": 1}}},
        doc! {"a": {"$gt": []}},
        doc! {"a": {"$gte": [1]}},
        doc! {"a": {"$lt": [1, 3]}},
        doc! {"a": {"$gt": false}},
        doc! {"a": {"$gte": date(0)}},
        doc! {"a": {"$gt": oid(0)}},
        doc! {"a": {"$gt": Bson::MinKey}},
        doc! {"a": {"$lt": Bson::MaxKey}},
        doc! {"b": {"$gt": 1}},
        doc! {"b": {"$gte": 1, "$lte": 2}},
        doc! {"b": {"$lt": 0}},
        doc! {"b": {"$gt": "a"}},
        doc! {"b": {"$lte": "1"}},
        doc! {"b": {"$gt": Bson::Int64(9_007_199_254_740_992)}},
        doc! {"b": {"$gte": 9_007_199_254_740_993.0}},
        doc! {"c": {"$gt": 1}},
        doc! {"c": {"$lte": dec("1")}},
        doc! {"c": {"$gt": Bson::Int64(9_007_199_254_740_992)}},
        doc! {"c": {"$gte": "abc"}},
        doc! {"e": {"$lt": 2}},
        doc! {"e": {"$gte": "a"}},
        doc! {"s": {"$gt": "a"}},
        doc! {"s": {"$lt": "a"}},
        doc! {"s": {"$gte": ""}},
        doc! {"n.x": {"$gt": 0}},
        doc! {"n.x": {"$lt": 1}},
        doc! {"arr.k": {"$gt": 1}},
        doc! {"arr.k": {"$gte": 1, "$lt": 2}},
        doc! {"tags": {"$gt": 1}},
        doc! {"tags": {"$lt": "b"}},
        doc! {"dt": {"$gt": date(1_650_000_000_000)}},
        doc! {"dt": {"$lt": date(0)}},
        doc! {"sp": {"$gt": 0}},
        doc! {"sp": {"$lt": "z"}},
        doc! {"u": {"$gt": 1}},
        doc! {"u": {"$lt": "b"}},
        doc! {"w": {"$gt": 1, "$lte": 42}},
        doc! {"_id": {"$gt": 100}},
        doc! {"_id": {"$lt": 5}},
        doc! {"_id": {"$gte": "a"}},
        // ranges on `_id` (one range of the `_id` key), bounds merged, with other conditions
        doc! {"_id": {"$gt": 5, "$lte": 50}},
        doc! {"_id": {"$gte": 10, "$gt": 10.5, "$lt": Bson::Int64(20)}},
        doc! {"_id": {"$gt": 50, "$lt": 5}},
        doc! {"_id": {"$gte": 3.0, "$lte": 3}},
        doc! {"_id": {"$gt": 5, "$ne": 10}},
        doc! {"_id": {"$gte": 1, "$in": [0, 2, 1000, "id-a"]}},
        doc! {"_id": {"$lt": "id-b"}},
        doc! {"_id": {"$gte": oid(3)}},
        doc! {"_id": {"$lt": {"k": 2}}},
        doc! {"_id": {"$gt": f64::NAN}},
        doc! {"_id": {"$lte": f64::INFINITY}},
        doc! {"_id": {"$gt": Bson::Null}},
        doc! {"$or": [{"_id": {"$lt": 3}}, {"_id": {"$gt": 990}}]},
        doc! {"_id": {"$gt": 2}, "a": {"$gte": 1}},
        // $ne, $in, $nin
        doc! {"a": {"$ne": 1}},
        doc! {"a": {"$ne": [1, 2]}},
        doc! {"tags": {"$ne": "x"}},
        doc! {"arr.k": {"$ne": 1}},
        doc! {"b": {"$ne": 1}},
        doc! {"a": {"$in": [1, "abc"]}},
        doc! {"a": {"$in": [[1, 2], 3]}},
        doc! {"a": {"$in": []}},
        doc! {"a": {"$in": [re("^a", ""), 1]}},
        doc! {"b": {"$in": [1, Bson::Int64(2), 2.5, "abc"]}},
        doc! {"b": {"$in": [f64::NAN, f64::INFINITY]}},
        doc! {"c": {"$in": [1, "1"]}},
        doc! {"s": {"$in": ["abc", "ABC", ""]}},
        doc! {"tags": {"$in": ["x", 1]}},
        doc! {"n.x": {"$in": [1, Bson::Null]}},
        doc! {"arr.k": {"$in": [1, 2]}},
        doc! {"u": {"$in": [1, "1", true]}},
        doc! {"_id": {"$in": [0, 1, 2, 1000, "id-a", 99]}},
        doc! {"_id": {"$in": [1000.0, Bson::Int64(5)]}},
        doc! {"_id": 3},
        doc! {"_id": 3.0},
        doc! {"_id": {"k": 1}},
        doc! {"_id": oid(9)},
        doc! {"_id": Bson::Null},
        doc! {"a": {"$nin": [1, "abc"]}},
        doc! {"b": {"$nin": [1, Bson::Null]}},
        doc! {"tags": {"$nin": ["x"]}},
        doc! {"arr.k": {"$nin": [1, 2]}},
        doc! {"_id": {"$nin": [0, 1]}},
        // $type
        doc! {"a": {"$type": "number"}},
        doc! {"a": {"$type": "double"}},
        doc! {"a": {"$type": "int"}},
        doc! {"a": {"$type": "long"}},
        doc! {"a": {"$type": "decimal"}},
        doc! {"a": {"$type": "string"}},
        doc! {"a": {"$type": "array"}},
        doc! {"a": {"$type": "object"}},
        doc! {"a": {"$type": ["bool", "date"]}},
        doc! {"a": {"$type": 7}},
        doc! {"a": {"$type": "minKey"}},
        doc! {"tags": {"$type": "array"}},
        doc! {"tags": {"$type": "string"}},
        doc! {"arr.k": {"$type": "number"}},
        doc! {"b": {"$type": "double"}},
        // $size, $all, $elemMatch
        doc! {"a": {"$size": 0}},
        doc! {"a": {"$size": 2}},
        doc! {"tags": {"$size": 1}},
        doc! {"arr": {"$size": 2}},
        doc! {"a": {"$all": [1, 2]}},
        doc! {"a": {"$all": [1]}},
        doc! {"a": {"$all": [[1, 2]]}},
        doc! {"tags": {"$all": ["x", "y"]}},
        doc! {"tags": {"$all": []}},
        doc! {"a": {"$all": [{"$elemMatch": {"x": 1}}]}},
        doc! {"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}},
        doc! {"a": {"$elemMatch": {"$gte": 1}}},
        doc! {"a": {"$elemMatch": {"x": 1}}},
        doc! {"a": {"$elemMatch": {"x": 1, "y": 2}}},
        doc! {"arr": {"$elemMatch": {"k": 1, "m": 2}}},
        doc! {"arr": {"$elemMatch": {"k": {"$gte": 1}}}},
        doc! {"arr": {"$elemMatch": {"k": {"$exists": false}}}},
        doc! {"tags": {"$elemMatch": {"$eq": "x"}}},
        doc! {"tags": {"$elemMatch": {"$type": "number"}}},
        // $regex
        doc! {"s": {"$regex": "^a"}},
        doc! {"s": {"$regex": "^a", "$options": "i"}},
        doc! {"s": re("b", "")},
        doc! {"s": {"$regex": "^$"}},
        doc! {"a": {"$regex": "1"}},
        doc! {"tags": {"$regex": "^x"}},
        doc! {"arr.k": {"$regex": "1"}},
        doc! {"u": {"$regex": "^a"}},
        doc! {"s": {"$not": re("^a", "")}},
        doc! {"s": {"$in": [re("^A", ""), "b"]}},
        doc! {"s": {"$nin": [re("^a", "i")]}},
        // $not, $and, $or, $nor
        doc! {"a": {"$not": {"$gt": 1}}},
        doc! {"a": {"$not": {"$type": "number"}}},
        doc! {"b": {"$not": {"$gte": 1, "$lte": 2}}},
        doc! {"arr.k": {"$not": {"$eq": 1}}},
        doc! {"$and": [{"a": {"$gt": 0}}, {"a": {"$lt": 2}}]},
        doc! {"$and": [{"b": 1}, {"c": 1}]},
        doc! {"$and": [{"a": {"$exists": true}}, {"a": {"$ne": Bson::Null}}]},
        doc! {"$or": [{"a": 1}, {"b": "abc"}]},
        doc! {"$or": [{"a": 1}, {"u": 1}]},
        doc! {"$or": [{"a": {"$gt": 5}}, {"b": {"$lt": 0}}]},
        doc! {"$or": [{"_id": 1}, {"_id": 2}, {"a": Bson::Null}]},
        doc! {"$or": [{"s": "abc"}, {"tags": "x"}]},
        doc! {"$or": [{"a": 1}]},
        doc! {"$nor": [{"a": 1}, {"b": 1}]},
        doc! {"$nor": [{"a": {"$exists": true}}]},
        doc! {"$nor": [{"a": Bson::Null}]},
        doc! {"a": 1, "b": 1},
        doc! {"a": 1, "u": 1},
        doc! {"c": 1, "d": 1},
        doc! {"c": {"$gte": 0}, "d": {"$exists": true}},
        doc! {"e": {"$gt": 0}, "a": {"$lt": 10}},
        doc! {"a": {"$gt": 0}, "$or": [{"b": 1}, {"c": 1}]},
        doc! {"$and": [{"$or": [{"a": 1}, {"a": 2}]}, {"$or": [{"b": 1}, {"b": Bson::Null}]}]},
        // escaping and precision
        doc! {"q\"k": 1},
        doc! {"q\"k": "1"},
        doc! {"sp ace": "a\u{0}b"},
        doc! {"sp ace": "a\u{FFFD}b"},
        doc! {"a": "a\u{0}b"},
        doc! {"a": "a\u{FFFD}b"},
        doc! {"a": {"$gt": "a\u{0}"}},
        doc! {"u": "q\"uote"},
        doc! {"u": "back\\slash"},
        doc! {"n.x'y": 2},
        doc! {"n.x'y": "2"},
        doc! {"a": Bson::Int64(i64::MAX)},
        doc! {"a": 9_223_372_036_854_775_808.0},
        doc! {"a": {"$gte": 9_223_372_036_854_775_808.0}},
        doc! {"b": Bson::Int64(i64::MAX)},
        doc! {"b": {"$lt": 9_223_372_036_854_775_808.0}},
        doc! {"c": Bson::Int64(i64::MAX)},
        doc! {"c": {"$gte": Bson::Int64(i64::MAX)}},
        doc! {"a": 1.000_000_000_000_000_2},
        doc! {"a": {"$gt": 1}},
        doc! {"a": {"$gt": 1.000_000_000_000_000_2}},
        doc! {"b": {"$gt": 1}, "$comment": "the double just above 1"},
        doc! {"c": {"$lt": 1}},
        doc! {"c": {"$gt": dec("0.99999999999999999999999999999999")}},
        doc! {"u": dec("1.0000000000000000000000000000001")},
        doc! {"u": 1},
        // others
        doc! {"a": {"$mod": [2, 0]}},
        doc! {"w": {"$mod": [3, 1]}},
        doc! {"$expr": {"$eq": ["$a", "$b"]}},
        doc! {"$expr": {"$gt": ["$c", 1]}},
        // errors both sides must report
        doc! {"a": {"$size": -1}},
        doc! {"a": {"$bogus": 1}},
        doc! {"$or": []},
    ]
}

/// Fields × operators × operands, written as a table.
pub fn table_cases() -> Vec<Document> {
    let fields = [
        "a", "b", "c", "e", "s", "tags", "n.x", "arr.k", "sp", "u", "_id", "a.0", "arr.0.k",
    ];
    let operators = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"];
    let operands = vec![
        Bson::Int32(1),
        Bson::Int64(1),
        Bson::Double(1.0),
        dec("1"),
        Bson::String("1".into()),
        Bson::String("abc".into()),
        Bson::Null,
        Bson::Double(f64::NAN),
        Bson::Double(-0.0),
        Bson::Double(f64::INFINITY),
        Bson::Boolean(true),
        date(0),
        arr(vec![Bson::Int32(1), Bson::Int32(2)]),
        Bson::Document(doc! {"x": 1}),
        Bson::Int64(9_007_199_254_740_993),
    ];
    let mut out = Vec::new();
    for field in fields {
        for op in operators {
            for operand in &operands {
                out.push(doc! {field: {op: operand.clone()}});
            }
        }
        out.push(doc! {field: {"$in": operands[..7].to_vec()}});
        out.push(doc! {field: {"$nin": operands[4..9].to_vec()}});
        out.push(doc! {field: {"$exists": true}});
        out.push(doc! {field: {"$exists": false}});
    }
    out
}

/// Sorts, skips, limits and projections over a few filters.
pub fn shaped_cases() -> Vec<Case> {
    let filters = [
        doc! {},
        doc! {"a": {"$gte": 1}},
        doc! {"b": {"$in": [1, "abc", Bson::Null]}},
        doc! {"s": {"$gt": ""}},
        doc! {"c": {"$lt": 10}},
        doc! {"_id": {"$gte": 100}},
        doc! {"_id": {"$gt": 10, "$lt": 900}},
        doc! {"n.x": {"$exists": true}},
    ];
    let sorts = [
        doc! {"a": 1},
        doc! {"a": -1},
        doc! {"b": 1},
        doc! {"b": -1},
        doc! {"c": 1},
        doc! {"c": -1, "d": 1},
        doc! {"e": -1},
        doc! {"s": 1},
        doc! {"s": -1},
        doc! {"tags": 1},
        doc! {"tags": -1},
        doc! {"n.x": 1},
        doc! {"arr.k": -1},
        doc! {"sp": 1},
        doc! {"dt": -1},
        doc! {"u": 1},
        doc! {"_id": 1},
        doc! {"_id": -1},
        doc! {"a": 1, "_id": 1},
        doc! {"b": -1, "_id": -1},
        doc! {"s": 1, "_id": 1},
        doc! {"tags": 1, "_id": 1},
        doc! {"u": -1, "_id": 1},
    ];
    let windows = [
        (0, None),
        (0, Some(5)),
        (3, Some(7)),
        (10, None),
        (0, Some(1)),
    ];
    let mut out = Vec::new();
    for (fi, filter) in filters.iter().enumerate() {
        for (si, sort) in sorts.iter().enumerate() {
            // Every sort with the empty filter; a rotating selection with the others.
            if fi > 0 && (si + fi) % 3 != 0 {
                continue;
            }
            let (skip, limit) = windows[(fi + si) % windows.len()];
            out.push(Case::sorted(filter.clone(), sort.clone(), skip, limit));
        }
    }
    let projections = [
        doc! {"a": 1},
        doc! {"a": 0},
        doc! {"n.x": 1, "tags": 1},
        doc! {"arr.k": 1},
        doc! {"arr": 0, "u": 0},
        doc! {"a": {"$slice": 1}},
        doc! {"tags": {"$elemMatch": {"$gt": 0}}},
        doc! {"_id": 0, "b": 1},
    ];
    for (i, projection) in projections.iter().enumerate() {
        out.push(Case::filter(filters[i % filters.len()].clone()).projected(projection.clone()));
        out.push(
            Case::sorted(doc! {}, doc! {"b": -1, "_id": 1}, 2, Some(20))
                .projected(projection.clone()),
        );
    }
    out
}

// ---------------------------------------------------------------------------
// generated cases
// ---------------------------------------------------------------------------

const FIELDS: &[&str] = &[
    "a", "b", "c", "d", "e", "s", "tags", "n.x", "n", "arr.k", "arr", "sp", "dt", "u", "w", "_id",
    "tags.0", "arr.0.k", "a.x", "nope",
];

fn operand() -> impl Strategy<Value = Bson> {
    let values = pool();
    let mut with_ids = values.clone();
    with_ids.extend([Bson::Int32(3), Bson::Int32(150), Bson::Int32(200)]);
    proptest::sample::select(with_ids)
}

fn scalar_operand() -> impl Strategy<Value = Bson> {
    proptest::sample::select(scalars())
}

fn leaf() -> impl Strategy<Value = Document> {
    let field = proptest::sample::select(FIELDS.to_vec());
    let type_names = vec![
        Bson::String("number".into()),
        Bson::String("string".into()),
        Bson::String("double".into()),
        Bson::String("int".into()),
        Bson::String("long".into()),
        Bson::String("decimal".into()),
        Bson::String("null".into()),
        Bson::String("array".into()),
        Bson::String("object".into()),
        Bson::String("bool".into()),
        Bson::String("date".into()),
        Bson::String("objectId".into()),
        Bson::Int32(16),
        Bson::Int32(2),
    ];
    let patterns = vec![
        ("^a", ""),
        ("^a", "i"),
        ("b", ""),
        ("^1", ""),
        ("^$", ""),
        ("c$", ""),
        ("^[0-9]+$", ""),
    ];
    let op = prop_oneof![
        operand().prop_map(|v| doc! {"$eq": v}),
        operand().prop_map(|v| doc! {"$ne": v}),
        operand().prop_map(|v| doc! {"$gt": v}),
        operand().prop_map(|v| doc! {"$gte": v}),
        operand().prop_map(|v| doc! {"$lt": v}),
        operand().prop_map(|v| doc! {"$lte": v}),
        (scalar_operand(), scalar_operand()).prop_map(|(lo, hi)| doc! {"$gte": lo, "$lt": hi}),
        proptest::collection::vec(operand(), 0..4).prop_map(|v| doc! {"$in": v}),
        proptest::collection::vec(operand(), 0..3).prop_map(|v| doc! {"$nin": v}),
        any::<bool>().prop_map(|b| doc! {"$exists": b}),
        proptest::sample::select(type_names).prop_map(|t| doc! {"$type": t}),
        (0..4i32).prop_map(|n| doc! {"$size": n}),
        proptest::collection::vec(scalar_operand(), 1..3).prop_map(|v| doc! {"$all": v}),
        scalar_operand().prop_map(|v| doc! {"$elemMatch": {"$gte": v}}),
        scalar_operand().prop_map(|v| doc! {"$elemMatch": {"k": v}}),
        scalar_operand().prop_map(|v| doc! {"$not": {"$gt": v}}),
        proptest::sample::select(patterns).prop_map(|(p, o)| doc! {"$regex": p, "$options": o}),
    ];
    (field, op, any::<bool>()).prop_map(|(field, op, implicit)| {
        // `{f: v}` instead of `{f: {$eq: v}}` when the operand is not itself an
        // operator-looking document.
        match (implicit, op.get("$eq")) {
            (true, Some(v)) if !matches!(v, Bson::Document(_)) => doc! {field: v.clone()},
            _ => doc! {field: op},
        }
    })
}

fn generated_filter() -> impl Strategy<Value = Document> {
    let leaves = proptest::collection::vec(leaf(), 1..4);
    (leaves, 0..5u8).prop_map(|(leaves, shape)| {
        let as_bson: Vec<Bson> = leaves.iter().cloned().map(Bson::Document).collect();
        match shape {
            0 if leaves.len() > 1 => doc! {"$or": as_bson},
            1 if leaves.len() > 1 => doc! {"$and": as_bson},
            2 => doc! {"$nor": as_bson},
            3 if leaves.len() > 1 => {
                doc! {"$or": [leaves[0].clone(), {"$and": as_bson[1..].to_vec()}]}
            }
            _ => {
                // Implicit AND of distinct fields.
                let mut merged = Document::new();
                for leaf in leaves {
                    for (k, v) in leaf {
                        merged.entry(k).or_insert(v);
                    }
                }
                merged
            }
        }
    })
}

pub fn generated_case() -> impl Strategy<Value = Case> {
    let sort_field = proptest::sample::select(vec![
        "a", "b", "c", "e", "s", "tags", "n.x", "arr.k", "sp", "dt", "u", "_id",
    ]);
    let sort = proptest::option::of((sort_field, any::<bool>(), any::<bool>()).prop_map(
        |(field, descending, tiebreak)| {
            let direction = if descending { -1 } else { 1 };
            if tiebreak && field != "_id" {
                doc! {field: direction, "_id": 1}
            } else {
                doc! {field: direction}
            }
        },
    ));
    let projection = proptest::option::of(proptest::sample::select(vec![
        doc! {"a": 1},
        doc! {"b": 0, "u": 0},
        doc! {"n.x": 1, "arr.k": 1},
    ]));
    (
        generated_filter(),
        sort,
        0..6u64,
        proptest::option::of(1..25i64),
        projection,
    )
        .prop_map(|(filter, sort, skip, limit, projection)| {
            // Skip and limit only with a sort: without one the order is unspecified.
            let (skip, limit) = if sort.is_some() {
                (skip, limit)
            } else {
                (0, None)
            };
            Case {
                filter,
                sort,
                skip,
                limit,
                projection,
            }
        })
}

// ---------------------------------------------------------------------------
// MongoDB's documented answers
// ---------------------------------------------------------------------------

/// (filter, sort, the `_id`s MongoDB returns — in order when there is a sort).
pub fn documented_cases() -> Vec<(Document, Option<Document>, Vec<i32>)> {
    let all_but =
        |excluded: &[i32]| -> Vec<i32> { (1..=22).filter(|id| !excluded.contains(id)).collect() };
    vec![
        // Query for Null or Missing Fields: equality to null matches null and missing (and an
        // array holding null); $type: "null" only null values; $exists: false only missing.
        (doc! {"item": Bson::Null}, None, vec![1, 2, 10]),
        (doc! {"item": {"$type": "null"}}, None, vec![1, 10]),
        (doc! {"item": {"$type": 10}}, None, vec![1, 10]),
        (doc! {"item": {"$exists": false}}, None, vec![2]),
        (doc! {"item": {"$exists": true}}, None, all_but(&[2])),
        (
            doc! {"item": {"$ne": Bson::Null}},
            None,
            all_but(&[1, 2, 10]),
        ),
        (
            doc! {"item": {"$in": [Bson::Null, "abc"]}},
            None,
            vec![1, 2, 10, 19],
        ),
        (
            doc! {"item": {"$nin": [Bson::Null, 1]}},
            None,
            all_but(&[1, 2, 3, 4, 5, 6, 7, 9, 10]),
        ),
        // Numeric types compare by value: 1 == NumberLong(1) == 1.0 == Decimal("1") ==
        // Decimal("1.0"), never the string "1"; an array matches when an element does,
        // a nested array only as a whole.
        (doc! {"item": 1}, None, vec![3, 4, 5, 6, 7, 9]),
        (doc! {"item": Bson::Int64(1)}, None, vec![3, 4, 5, 6, 7, 9]),
        (doc! {"item": 1.0}, None, vec![3, 4, 5, 6, 7, 9]),
        (doc! {"item": dec("1")}, None, vec![3, 4, 5, 6, 7, 9]),
        (doc! {"item": dec("1.00")}, None, vec![3, 4, 5, 6, 7, 9]),
        (doc! {"item": "1"}, None, vec![8]),
        (doc! {"item": 0}, None, vec![14, 15]),
        (doc! {"item": -0.0}, None, vec![14, 15]),
        // Query an Array: an exact array (order matters), or an element that is that array.
        (doc! {"item": [1, 5]}, None, vec![9, 12]),
        (doc! {"item": [5, 1]}, None, vec![]),
        (doc! {"item": []}, None, vec![11]),
        (doc! {"item": {"$all": [1, 5]}}, None, vec![9]),
        (doc! {"item": {"$all": [[1, 5]]}}, None, vec![9, 12]),
        (doc! {"item": {"$size": 2}}, None, vec![9, 10, 17]),
        (doc! {"item": {"$size": 0}}, None, vec![11]),
        // Conditions on array elements: in some combination without $elemMatch, by one
        // element with it.
        (doc! {"item": {"$gt": 1, "$lt": 3}}, None, vec![9, 10, 20]),
        (
            doc! {"item": {"$elemMatch": {"$gt": 1, "$lt": 3}}},
            None,
            vec![10],
        ),
        (doc! {"item.1": {"$gt": 4}}, None, vec![9]),
        (doc! {"item.sub": 1}, None, vec![16, 17]),
        (doc! {"item": {"sub": 1}}, None, vec![16, 17]),
        // Type bracketing: a comparison only meets values of the operand's type.
        (doc! {"item": {"$gt": 1}}, None, vec![9, 10, 20, 21]),
        (
            doc! {"item": {"$gte": 1}},
            None,
            vec![3, 4, 5, 6, 7, 9, 10, 20, 21],
        ),
        (doc! {"item": {"$lt": 1}}, None, vec![14, 15]),
        (doc! {"item": {"$gt": "0"}}, None, vec![8, 19]),
        (doc! {"item": {"$lt": "b"}}, None, vec![8, 19]),
        (doc! {"item": {"$gte": false}}, None, vec![18]),
        (doc! {"item": {"$gt": date(-1)}}, None, vec![22]),
        (
            doc! {"item": {"$type": "number"}},
            None,
            vec![3, 4, 5, 6, 7, 9, 10, 13, 14, 15, 20, 21],
        ),
        (
            doc! {"item": {"$type": "array"}},
            None,
            vec![9, 10, 11, 12, 17],
        ),
        (
            doc! {"item": {"$not": {"$gt": 1}}},
            None,
            all_but(&[9, 10, 20, 21]),
        ),
        // NaN equals NaN and meets no other comparison (not even with ±inf).
        (doc! {"item": f64::NAN}, None, vec![13]),
        (doc! {"item": dec("NaN")}, None, vec![13]),
        (doc! {"item": {"$gte": f64::NAN}}, None, vec![13]),
        (doc! {"item": {"$gt": f64::NAN}}, None, vec![]),
        (doc! {"item": {"$lt": f64::NAN}}, None, vec![]),
        (
            doc! {"item": {"$gt": f64::NEG_INFINITY}},
            None,
            vec![3, 4, 5, 6, 7, 9, 10, 14, 15, 20, 21],
        ),
        (
            doc! {"item": {"$lt": f64::INFINITY}},
            None,
            vec![3, 4, 5, 6, 7, 9, 10, 14, 15, 20],
        ),
        // Comparison/Sort Order: MinKey < null (missing sorts as null) < numbers (NaN first)
        // < strings < objects < arrays < ... < booleans < dates; an array sorts by its
        // smallest element ascending, its largest descending; an empty array before null.
        (
            doc! {},
            Some(doc! {"item": 1, "_id": 1}),
            vec![
                11, 1, 2, 10, 13, 14, 15, 3, 4, 5, 6, 7, 9, 20, 21, 8, 19, 17, 16, 12, 18, 22,
            ],
        ),
        (
            doc! {},
            Some(doc! {"item": -1, "_id": 1}),
            vec![
                22, 18, 12, 16, 17, 19, 8, 21, 9, 10, 20, 3, 4, 5, 6, 7, 14, 15, 13, 1, 2, 11,
            ],
        ),
    ]
}
