//! The documents the differential suite runs on: value helpers, the scalar and composite
//! value pools, the fixed pseudo-random main corpus with the indexes of its indexed
//! collection, and the small corpus for MongoDB's documented answers.

use std::str::FromStr;

use mongodb::bson::{
    doc, oid::ObjectId, spec::BinarySubtype, Binary, Bson, DateTime, Decimal128, Document, Regex,
    Timestamp,
};

// ---------------------------------------------------------------------------
// values and the corpus
// ---------------------------------------------------------------------------

pub fn dec(s: &str) -> Bson {
    Bson::Decimal128(Decimal128::from_str(s).unwrap_or_else(|e| panic!("decimal {s}: {e:?}")))
}

pub fn oid(n: u8) -> Bson {
    Bson::ObjectId(ObjectId::from_bytes([n; 12]))
}

pub fn date(ms: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(ms))
}

pub fn arr(items: Vec<Bson>) -> Bson {
    Bson::Array(items)
}

pub fn re(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(Regex {
        pattern: pattern.to_string().try_into().expect("regex pattern"),
        options: options.to_string().try_into().expect("regex options"),
    })
}

/// Scalars of every queried type, with the numeric corner cases.
pub fn scalars() -> Vec<Bson> {
    vec![
        Bson::Int32(0),
        Bson::Int32(1),
        Bson::Int32(-1),
        Bson::Int32(2),
        Bson::Int32(7),
        Bson::Int32(42),
        Bson::Int32(i32::MAX),
        Bson::Int32(i32::MIN),
        Bson::Int64(1),
        Bson::Int64(2),
        Bson::Int64(1 << 40),
        Bson::Int64(9_007_199_254_740_993),
        Bson::Int64(-9_007_199_254_740_993),
        Bson::Int64(i64::MAX),
        Bson::Double(1.0),
        Bson::Double(2.5),
        Bson::Double(-0.0),
        Bson::Double(0.0),
        Bson::Double(f64::NAN),
        Bson::Double(f64::INFINITY),
        Bson::Double(f64::NEG_INFINITY),
        Bson::Double(1e300),
        Bson::Double(0.1),
        Bson::Double(9_007_199_254_740_992.0),
        Bson::Double(1.000_000_000_000_000_2),
        Bson::Double(9_223_372_036_854_775_808.0),
        Bson::Double(-5e-324),
        dec("1"),
        dec("1.0"),
        dec("2.5"),
        dec("-0"),
        dec("0.1"),
        dec("NaN"),
        dec("-Infinity"),
        dec("9007199254740993"),
        dec("1.0000000000000000000000000000001"),
        dec("0.99999999999999999999999999999999"),
        dec("9223372036854775807"),
        dec("1E+400"),
        Bson::String(String::new()),
        Bson::String("1".into()),
        Bson::String("10".into()),
        Bson::String("2".into()),
        Bson::String("1.0".into()),
        Bson::String("abc".into()),
        Bson::String("abd".into()),
        Bson::String("ABC".into()),
        Bson::String("a".into()),
        Bson::String("b".into()),
        Bson::String("z".into()),
        Bson::String("héllo".into()),
        Bson::String("null".into()),
        Bson::String("true".into()),
        Bson::String("a\u{0}b".into()),
        Bson::String("a\u{FFFD}b".into()),
        Bson::String("q\"uote".into()),
        Bson::String("back\\slash".into()),
        Bson::String("$.x".into()),
        Bson::String("e\u{301}".into()),
        Bson::Null,
        Bson::Boolean(true),
        Bson::Boolean(false),
        date(0),
        date(1_700_000_000_000),
        date(-1000),
        oid(1),
        oid(2),
        Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: vec![1, 2, 3],
        }),
        Bson::Timestamp(Timestamp {
            time: 5,
            increment: 1,
        }),
        Bson::MinKey,
        Bson::MaxKey,
    ]
}

/// Documents and arrays, including the ones whose matching rules are subtle.
fn composites() -> Vec<Bson> {
    vec![
        Bson::Document(doc! {"x": 1}),
        Bson::Document(doc! {}),
        Bson::Document(doc! {"x": 1, "y": 2}),
        Bson::Document(doc! {"y": 2, "x": 1}),
        Bson::Document(doc! {"x": 1.0}),
        arr(vec![]),
        arr(vec![Bson::Int32(1), Bson::Int32(2)]),
        arr(vec![Bson::Int32(2), Bson::Int32(1)]),
        arr(vec![Bson::Null]),
        arr(vec![Bson::Null, Bson::Int32(2)]),
        arr(vec![arr(vec![Bson::Int32(1), Bson::Int32(2)])]),
        arr(vec![Bson::Int32(1), Bson::String("1".into())]),
        arr(vec![
            Bson::Document(doc! {"x": 1}),
            Bson::Document(doc! {"x": 2}),
        ]),
        arr(vec![
            Bson::Double(1.0),
            Bson::Double(2.5),
            Bson::Double(f64::NAN),
        ]),
        arr(vec![Bson::String("abc".into()), Bson::String("b".into())]),
    ]
}

/// Everything a field of the corpus, or an operand, may be.
pub fn pool() -> Vec<Bson> {
    let mut all = scalars();
    all.extend(composites());
    all
}

/// A tiny deterministic generator, so the corpus is the same on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}

fn strings() -> Vec<Bson> {
    scalars()
        .into_iter()
        .filter(|v| matches!(v, Bson::String(_)))
        .collect()
}

fn numbers() -> Vec<Bson> {
    scalars()
        .into_iter()
        .filter(|v| {
            matches!(
                v,
                Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
            )
        })
        .collect()
}

/// The fixed corpus: ~150 documents. Fields and their indexes in the indexed collection:
/// `a` any value incl. arrays (`a_1`, multikey); `b` scalars and documents (`b_-1`);
/// `c`/`d` numbers and strings / scalars (`c_1_d_-1`); `e` scalars (`e_-1_a_1`); `s`
/// strings, null or missing (`s_1`); `tags` arrays of scalars (`tags_1`, multikey); `n.x`
/// through a document that is never an array (`n.x_1`); `arr.k` through arrays of documents
/// (`arr.k_1`, multikey); `sp` (`sp_1`, sparse); `dt` dates (`dt_1`); `u` and `w`
/// unindexed.
pub fn corpus() -> Vec<Document> {
    let mut rng = Lcg(0x5eed_d0c5);
    let any = pool();
    let scalar = scalars();
    let num = numbers();
    let text = strings();
    let mut docs = Vec::new();
    // Hand-placed documents for the corners.
    let corners: Vec<Document> = vec![
        doc! {"_id": 0, "a": 1, "b": 1, "c": 1, "d": 1, "s": "abc", "tags": ["x", "y"], "n": {"x": 1}, "arr": [{"k": 1}, {"k": 2}], "u": 1},
        doc! {"_id": 1, "a": Bson::Int64(1), "b": Bson::Int64(1), "c": Bson::Int64(1), "n": {"x": Bson::Int64(1)}, "arr": [{"k": Bson::Int64(1)}], "u": Bson::Int64(1)},
        doc! {"_id": 2, "a": 1.0, "b": 1.0, "c": 1.0, "n": {"x": 1.0}, "arr": [{"k": 1.0}], "u": 1.0},
        doc! {"_id": 3, "a": dec("1"), "b": dec("1"), "c": dec("1"), "n": {"x": dec("1.00")}, "arr": [{"k": dec("1")}], "u": dec("1")},
        doc! {"_id": 4, "a": "1", "b": "1", "c": "1", "s": "1", "n": {"x": "1"}, "arr": [{"k": "1"}], "u": "1"},
        doc! {"_id": 5, "a": Bson::Null, "b": Bson::Null, "c": Bson::Null, "s": Bson::Null, "n": {"x": Bson::Null}, "arr": [{"k": Bson::Null}], "u": Bson::Null, "sp": Bson::Null},
        doc! {"_id": 6},
        doc! {"_id": 7, "a": [], "tags": [], "arr": [], "n": {}, "u": []},
        doc! {"_id": 8, "a": [1, 2], "tags": [1, 2], "arr": [{"k": [1, 2]}], "u": [1, 2]},
        doc! {"_id": 9, "a": [[1, 2]], "tags": [[1, 2]], "arr": [{"k": [[1, 2]]}], "u": [[1, 2]]},
        doc! {"_id": 10, "a": [Bson::Null, 3], "tags": [Bson::Null], "arr": [{"m": 1}, {"k": 3}], "u": [Bson::Null]},
        doc! {"_id": 11, "a": f64::NAN, "b": f64::NAN, "c": f64::NAN, "n": {"x": f64::NAN}, "arr": [{"k": f64::NAN}], "u": f64::NAN},
        doc! {"_id": 12, "a": -0.0, "b": -0.0, "c": -0.0, "n": {"x": -0.0}, "arr": [{"k": -0.0}], "u": -0.0},
        doc! {"_id": 13, "a": 0, "b": 0, "c": 0, "n": {"x": 0}, "arr": [{"k": 0}], "u": 0},
        doc! {"_id": 14, "a": f64::INFINITY, "b": f64::NEG_INFINITY, "c": f64::INFINITY, "n": {"x": f64::NEG_INFINITY}, "u": f64::INFINITY},
        doc! {"_id": 15, "a": {"x": 1}, "b": {"x": 1}, "n": 5, "arr": {"k": 1}, "u": {"x": 1}},
        doc! {"_id": 16, "a": [{"x": 1}, {"x": 2}], "arr": [{"k": 1}, {"k": "1"}], "u": [{"x": 1}]},
        doc! {"_id": 17, "a": true, "b": false, "c": "abc", "d": true, "s": "ABC", "u": true},
        doc! {"_id": 18, "a": date(0), "b": date(0), "dt": date(0), "u": date(0)},
        doc! {"_id": 19, "a": oid(1), "b": oid(1), "u": oid(1), "sp": 1},
        doc! {"_id": 20, "a": Bson::Int64(9_007_199_254_740_993), "b": Bson::Int64(9_007_199_254_740_993), "c": 9_007_199_254_740_992.0, "u": Bson::Int64(9_007_199_254_740_993)},
        doc! {"_id": 21, "a": 9_007_199_254_740_992.0, "b": 9_007_199_254_740_992.0, "c": Bson::Int64(9_007_199_254_740_993), "u": 9_007_199_254_740_992.0},
        doc! {"_id": 22, "a": dec("0.1"), "b": 0.1, "c": dec("0.1"), "u": 0.1},
        doc! {"_id": 23, "a": "", "s": "", "tags": [""], "u": ""},
        doc! {"_id": 24, "a": [1, "1", 1.0], "tags": ["1", 1], "u": [1, "1"]},
        doc! {"_id": 25, "a": [2, 1], "tags": [2, 1], "u": [2, 1]},
        doc! {"_id": 26, "a": {"x": 1, "y": 2}, "u": {"y": 2, "x": 1}},
        doc! {"_id": 27, "a": [{"x": 1, "y": 2}], "arr": [{"k": 1, "m": 2}, {"k": 2, "m": 1}]},
        doc! {"_id": 28, "a": Bson::MinKey, "b": Bson::MaxKey, "u": Bson::MinKey},
        doc! {"_id": 29, "a": [f64::NAN, 5], "tags": [f64::NAN], "u": [f64::NAN]},
        // A few non-Int32 `_id`s: ordered and equal by value, like everything else.
        doc! {"_id": Bson::Int64(1000), "a": 3, "b": 3},
        doc! {"_id": 1000.5, "a": 4, "b": 4},
        doc! {"_id": "id-a", "a": "abc", "b": "abc"},
        doc! {"_id": oid(9), "a": "abd", "b": "abd"},
        doc! {"_id": {"k": 1}, "a": 5, "b": 5},
        // Field names and strings that need escaping in SQL and JSON paths.
        doc! {"_id": 30, "q\"k": 1, "sp ace": "a\u{0}b", "a": "a\u{0}b", "u": "q\"uote", "n": {"x'y": 2}},
        doc! {"_id": 31, "q\"k": "1", "sp ace": "a\u{FFFD}b", "a": "a\u{FFFD}b", "u": "back\\slash", "n": {"x'y": "2"}},
        doc! {"_id": 32, "a": Bson::Int64(i64::MAX), "b": 9_223_372_036_854_775_808.0, "c": dec("9223372036854775807"), "u": Bson::Int64(i64::MAX)},
        doc! {"_id": 33, "a": dec("1.0000000000000000000000000000001"), "b": 1.000_000_000_000_000_2, "c": dec("0.99999999999999999999999999999999"), "u": dec("1.0000000000000000000000000000001")},
    ];
    docs.extend(corners);
    for id in 100..220 {
        let mut d = doc! {"_id": id};
        if rng.chance(85) {
            d.insert("a", rng.pick(&any));
        }
        if rng.chance(80) {
            let v = if rng.chance(10) {
                Bson::Document(doc! {"x": rng.pick(&num)})
            } else {
                rng.pick(&scalar)
            };
            d.insert("b", v);
        }
        if rng.chance(85) {
            let v = if rng.chance(60) {
                rng.pick(&num)
            } else {
                rng.pick(&text)
            };
            d.insert("c", v);
            if rng.chance(70) {
                d.insert("d", rng.pick(&scalar));
            }
        }
        if rng.chance(70) {
            d.insert("e", rng.pick(&scalar));
        }
        if rng.chance(75) {
            let v = if rng.chance(90) {
                rng.pick(&text)
            } else {
                Bson::Null
            };
            d.insert("s", v);
        }
        if rng.chance(70) {
            let v = match rng.below(5) {
                0 => rng.pick(&scalar),
                1 => arr(vec![]),
                _ => {
                    let len = 1 + rng.below(4);
                    arr((0..len)
                        .map(|_| {
                            if rng.chance(50) {
                                rng.pick(&text)
                            } else {
                                rng.pick(&num)
                            }
                        })
                        .collect())
                }
            };
            d.insert("tags", v);
        }
        if rng.chance(75) {
            let v = match rng.below(6) {
                0 => rng.pick(&scalar),
                1 => Bson::Document(doc! {}),
                2 => Bson::Document(doc! {"y": rng.pick(&scalar)}),
                _ => Bson::Document(doc! {"x": rng.pick(&scalar), "y": rng.pick(&num)}),
            };
            d.insert("n", v);
        }
        if rng.chance(70) {
            let v = match rng.below(5) {
                0 => Bson::Document(doc! {"k": rng.pick(&scalar)}),
                1 => arr(vec![]),
                _ => {
                    let len = 1 + rng.below(3);
                    arr((0..len)
                        .map(|_| {
                            if rng.chance(15) {
                                Bson::Document(doc! {"m": rng.pick(&num)})
                            } else if rng.chance(10) {
                                Bson::Document(doc! {"k": [rng.pick(&num), rng.pick(&num)]})
                            } else {
                                Bson::Document(doc! {"k": rng.pick(&scalar), "m": rng.pick(&num)})
                            }
                        })
                        .collect())
                }
            };
            d.insert("arr", v);
        }
        if rng.chance(30) {
            d.insert("sp", rng.pick(&scalar));
        }
        if rng.chance(40) {
            d.insert(
                "dt",
                date(1_600_000_000_000 + (rng.below(1000) as i64) * 86_400_000),
            );
        }
        if rng.chance(80) {
            d.insert("u", rng.pick(&any));
        }
        if rng.chance(50) {
            d.insert("w", rng.pick(&num));
        }
        docs.push(d);
    }
    docs
}

/// The indexes of the indexed collection (see [`corpus`]).
pub fn index_specs() -> Vec<Document> {
    vec![
        doc! {"key": {"a": 1}, "name": "a_1"},
        doc! {"key": {"b": -1}, "name": "b_-1"},
        doc! {"key": {"c": 1, "d": -1}, "name": "c_1_d_-1"},
        doc! {"key": {"e": -1, "a": 1}, "name": "e_-1_a_1"},
        doc! {"key": {"s": 1}, "name": "s_1"},
        doc! {"key": {"tags": 1}, "name": "tags_1"},
        doc! {"key": {"n.x": 1}, "name": "n.x_1"},
        doc! {"key": {"arr.k": 1}, "name": "arr.k_1"},
        doc! {"key": {"sp": 1}, "name": "sp_1", "sparse": true},
        doc! {"key": {"dt": 1}, "name": "dt_1"},
    ]
}

// ---------------------------------------------------------------------------
// MongoDB's documented answers
// ---------------------------------------------------------------------------

/// A small collection for the rules the manual spells out ("Query for Null or Missing
/// Fields", "Query an Array", "Comparison/Sort Order", type bracketing, NaN).
pub fn subtle_corpus() -> Vec<Document> {
    vec![
        doc! {"_id": 1, "item": Bson::Null},
        doc! {"_id": 2},
        doc! {"_id": 3, "item": 1},
        doc! {"_id": 4, "item": Bson::Int64(1)},
        doc! {"_id": 5, "item": 1.0},
        doc! {"_id": 6, "item": dec("1")},
        doc! {"_id": 7, "item": dec("1.0")},
        doc! {"_id": 8, "item": "1"},
        doc! {"_id": 9, "item": [1, 5]},
        doc! {"_id": 10, "item": [Bson::Null, 2]},
        doc! {"_id": 11, "item": []},
        doc! {"_id": 12, "item": [[1, 5]]},
        doc! {"_id": 13, "item": f64::NAN},
        doc! {"_id": 14, "item": -0.0},
        doc! {"_id": 15, "item": 0},
        doc! {"_id": 16, "item": {"sub": 1}},
        doc! {"_id": 17, "item": [{"sub": 1}, {"other": 2}]},
        doc! {"_id": 18, "item": true},
        doc! {"_id": 19, "item": "abc"},
        doc! {"_id": 20, "item": 2},
        doc! {"_id": 21, "item": f64::INFINITY},
        doc! {"_id": 22, "item": date(0)},
    ]
}
