//! The differential suite (DESIGN.md invariant 2: pushdown may over-select, never
//! under-select): the same filter/sort/skip/limit/projection cases run through a real
//! `docgate` against a collection with secondary indexes (single, compound, descending,
//! sparse, multikey — index ranges, pushed sorts and `_id` lookups in play) and against an
//! identical collection without indexes (only the inexact field-equality pushdown), and
//! both answers are compared with the pure-Rust reference computed here from the same
//! corpus with `Filter::matches`, `SortSpec` and `Projection` — byte for byte.
//!
//! Cases: hundreds of hand-written and table-driven ones over mixed-type documents (ints,
//! longs, doubles with NaN/-0.0/±inf, decimals, numeric-looking strings, null, missing
//! fields, nested documents, arrays of scalars and of documents, empty arrays, dates,
//! ObjectIds, booleans), `count` for each hand-written filter, proptest-generated filters
//! with sorts, skips and limits, and MongoDB's documented answers for the subtle rules
//! (null vs missing, arrays, numeric equality across types, type bracketing, NaN, sort
//! order) as expected `_id` lists.
//!
//! Not for: which index the server picks (see `index_use.rs`) or write semantics.

mod common;

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::str::FromStr;

use common::TestServer;
use docgate::query::filter::Filter;
use docgate::query::keys::encode_key;
use docgate::query::projection::Projection;
use docgate::query::sort::SortSpec;
use futures_util::StreamExt;
use mongodb::bson::{
    doc, oid::ObjectId, spec::BinarySubtype, Binary, Bson, DateTime, Decimal128, Document, Regex,
    Timestamp,
};
use mongodb::{Collection, Database};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

// ---------------------------------------------------------------------------
// values and the corpus
// ---------------------------------------------------------------------------

fn dec(s: &str) -> Bson {
    Bson::Decimal128(Decimal128::from_str(s).unwrap_or_else(|e| panic!("decimal {s}: {e:?}")))
}

fn oid(n: u8) -> Bson {
    Bson::ObjectId(ObjectId::from_bytes([n; 12]))
}

fn date(ms: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(ms))
}

fn arr(items: Vec<Bson>) -> Bson {
    Bson::Array(items)
}

fn re(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(Regex {
        pattern: pattern.to_string().try_into().expect("regex pattern"),
        options: options.to_string().try_into().expect("regex options"),
    })
}

/// Scalars of every queried type, with the numeric corner cases.
fn scalars() -> Vec<Bson> {
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
fn pool() -> Vec<Bson> {
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
fn corpus() -> Vec<Document> {
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
fn index_specs() -> Vec<Document> {
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
// the fixture
// ---------------------------------------------------------------------------

/// One server, the corpus loaded into several collections (with and without indexes).
struct Fixture {
    /// (name, collection) pairs, each holding the whole corpus.
    collections: Vec<(String, Collection<Document>)>,
    db: Database,
    corpus: Vec<Document>,
    // Last, so the server outlives the driver handles above.
    _server: TestServer,
}

async fn load(db: &Database, name: &str, docs: &[Document], indexes: &[Document]) {
    if !indexes.is_empty() {
        db.run_command(doc! {"createIndexes": name, "indexes": indexes.to_vec()})
            .await
            .unwrap_or_else(|e| panic!("createIndexes on {name}: {e}"));
    }
    db.collection::<Document>(name)
        .insert_many(docs.to_vec())
        .await
        .unwrap_or_else(|e| panic!("insert into {name}: {e}"));
}

/// Starts a server and loads `corpus` into one collection per `(name, indexes)`.
async fn fixture(corpus: Vec<Document>, layouts: &[(&str, Vec<Document>)]) -> Fixture {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("differential");
    let mut collections = Vec::new();
    for (name, indexes) in layouts {
        load(&db, name, &corpus, indexes).await;
        collections.push((name.to_string(), db.collection(name)));
    }
    Fixture {
        collections,
        db,
        corpus,
        _server: server,
    }
}

/// The main corpus with all its indexes, and without any.
async fn main_fixture() -> Fixture {
    fixture(
        corpus(),
        &[("indexed", index_specs()), ("plain", Vec::new())],
    )
    .await
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

// ---------------------------------------------------------------------------
// cases and their comparison
// ---------------------------------------------------------------------------

/// One read.
#[derive(Clone, Debug, Default)]
struct Case {
    filter: Document,
    sort: Option<Document>,
    skip: u64,
    limit: Option<i64>,
    projection: Option<Document>,
}

impl Case {
    fn filter(filter: Document) -> Case {
        Case {
            filter,
            ..Case::default()
        }
    }

    fn sorted(filter: Document, sort: Document, skip: u64, limit: Option<i64>) -> Case {
        Case {
            filter,
            sort: Some(sort),
            skip,
            limit,
            projection: None,
        }
    }

    fn projected(mut self, projection: Document) -> Case {
        self.projection = Some(projection);
        self
    }
}

fn bytes(d: &Document) -> Vec<u8> {
    let mut out = Vec::new();
    d.to_writer(&mut out).expect("serialize document");
    out
}

fn id_key(d: &Document) -> Vec<u8> {
    encode_key(d.get("_id").unwrap_or(&Bson::Null))
}

/// What the reference evaluator says: the matching documents, sorted (unprojected, before
/// skip and limit), or the error a bad case must produce.
fn reference_matches(corpus: &[Document], case: &Case) -> Result<Vec<Document>, String> {
    let filter = Filter::parse(&case.filter).map_err(|e| format!("{e:?}"))?;
    let mut docs: Vec<Document> = Vec::new();
    for d in corpus {
        if filter.try_matches(d).map_err(|e| format!("{e:?}"))? {
            docs.push(d.clone());
        }
    }
    if let Some(sort) = &case.sort {
        SortSpec::parse(sort)
            .map_err(|e| format!("{e:?}"))?
            .sort(&mut docs);
    }
    if let Some(p) = &case.projection {
        Projection::parse(p).map_err(|e| format!("{e:?}"))?;
    }
    Ok(docs)
}

/// Runs the case on the server: raw bytes of each returned document, in order.
async fn run(coll: &Collection<Document>, case: &Case) -> Result<Vec<Vec<u8>>, String> {
    let mut find = coll.find(case.filter.clone());
    if let Some(sort) = &case.sort {
        find = find.sort(sort.clone());
    }
    if case.skip > 0 {
        find = find.skip(case.skip);
    }
    if let Some(limit) = case.limit {
        find = find.limit(limit);
    }
    if let Some(p) = &case.projection {
        find = find.projection(p.clone());
    }
    let mut cursor = find.await.map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while cursor.advance().await.map_err(|e| e.to_string())? {
        out.push(cursor.current().as_bytes().to_vec());
    }
    Ok(out)
}

fn show(raw: &[u8]) -> String {
    Document::from_reader(raw)
        .map(|d| d.to_string())
        .unwrap_or_else(|e| format!("<undecodable: {e}>"))
}

fn show_ids(docs: &[Vec<u8>]) -> String {
    let ids: Vec<String> = docs
        .iter()
        .map(|raw| match Document::from_reader(raw.as_slice()) {
            Ok(d) => d
                .get("_id")
                .map(|id| id.to_string())
                .unwrap_or_else(|| d.to_string()),
            Err(e) => format!("<{e}>"),
        })
        .collect();
    format!("[{}]", ids.join(", "))
}

/// The document with its value types spelled out (Int64(1), Double(1.0), Decimal128(…)).
fn exact(d: &Document) -> String {
    format!("{d:?}")
}

/// Whether a sort ends with `_id` (a total order over the corpus).
fn total_order(sort: &Document) -> bool {
    sort.keys().last().is_some_and(|k| k == "_id")
}

/// Checks one server answer against the reference. `Ok` when they agree.
fn check(
    corpus: &[Document],
    case: &Case,
    got: Result<Vec<Vec<u8>>, String>,
) -> Result<(), String> {
    let expected = match reference_matches(corpus, case) {
        Ok(docs) => docs,
        Err(reference_error) => {
            return match got {
                Err(_) => Ok(()),
                Ok(docs) => Err(format!(
                    "the reference rejects the case ({reference_error}) but the server returned {}",
                    show_ids(&docs)
                )),
            };
        }
    };
    let got = got.map_err(|e| format!("the server failed: {e}"))?;
    let projection = case
        .projection
        .as_ref()
        .map(|p| Projection::parse(p).expect("parsed above"));
    let project = |d: &Document| -> Document {
        match &projection {
            Some(p) => p.apply(d).expect("reference projection"),
            None => d.clone(),
        }
    };
    let skip = usize::try_from(case.skip).unwrap_or(usize::MAX);
    let limit = case
        .limit
        .map(|l| usize::try_from(l.unsigned_abs()).unwrap_or(usize::MAX))
        .filter(|&l| l > 0)
        .unwrap_or(usize::MAX);
    let window: Vec<&Document> = expected.iter().skip(skip).take(limit).collect();
    let expected_bytes: Vec<Vec<u8>> = window.iter().map(|d| bytes(&project(d))).collect();
    let mismatch = |why: String| {
        Err(format!(
            "{why}\n  expected {}\n  got      {}",
            show_ids(&expected_bytes),
            show_ids(&got)
        ))
    };
    if got.len() != window.len() {
        return mismatch(format!(
            "expected {} documents, got {}",
            window.len(),
            got.len()
        ));
    }
    let id_excluded = case
        .projection
        .as_ref()
        .is_some_and(|p| matches!(p.get("_id"), Some(Bson::Int32(0) | Bson::Boolean(false))));
    match &case.sort {
        // Unordered: compare as sets keyed by `_id`.
        None => {
            let key_of = |raw: &Vec<u8>| -> Vec<u8> {
                Document::from_reader(raw.as_slice())
                    .map(|d| id_key(&d))
                    .unwrap_or_default()
            };
            let mut want = expected_bytes.clone();
            let mut have = got.clone();
            if id_excluded {
                want.sort();
                have.sort();
            } else {
                want.sort_by_key(key_of);
                have.sort_by_key(key_of);
            }
            if want != have {
                let first = want
                    .iter()
                    .zip(&have)
                    .find(|(w, h)| w != h)
                    .map(|(w, h)| format!("first difference: want {} have {}", show(w), show(h)))
                    .unwrap_or_default();
                return mismatch(format!("different documents ({first})"));
            }
        }
        // Fully ordered (or `_id` projected away): exact order.
        Some(sort) if total_order(sort) || id_excluded => {
            if let Some(i) = (0..got.len()).find(|&i| got[i] != expected_bytes[i]) {
                return mismatch(format!(
                    "position {i}: want {} have {}",
                    show(&expected_bytes[i]),
                    show(&got[i])
                ));
            }
        }
        // Ties allowed: every returned document is a distinct match whose sort key equals
        // the reference's at the same position, and comes back as the projection of the
        // stored document.
        Some(sort) => {
            let spec = SortSpec::parse(sort).expect("parsed above");
            let by_id: BTreeMap<Vec<u8>, &Document> =
                corpus.iter().map(|d| (id_key(d), d)).collect();
            let matching: HashSet<Vec<u8>> = expected.iter().map(id_key).collect();
            let mut seen = HashSet::new();
            for (i, raw) in got.iter().enumerate() {
                let returned = Document::from_reader(raw.as_slice())
                    .map_err(|e| format!("undecodable document: {e}"))?;
                let key = id_key(&returned);
                let Some(stored) = by_id.get(&key) else {
                    return mismatch(format!("position {i}: unknown document {returned}"));
                };
                if !matching.contains(&key) || !seen.insert(key) {
                    return mismatch(format!(
                        "position {i}: {returned} does not match or is repeated"
                    ));
                }
                if spec.compare(stored, window[i]) != Ordering::Equal {
                    return mismatch(format!(
                        "position {i}: sort key of {stored} differs from the expected {}",
                        window[i]
                    ));
                }
                if bytes(&project(stored)) != *raw {
                    return mismatch(format!(
                        "position {i}: want {} have {returned}",
                        project(stored)
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Runs a case on both collections; the description of every disagreement.
async fn differential(fx: &Fixture, case: &Case) -> Vec<String> {
    let mut failures = Vec::new();
    for (name, coll) in &fx.collections {
        let got = run(coll, case).await;
        if let Err(why) = check(&fx.corpus, case, got) {
            failures.push(format!(
                "[{name}] filter {} sort {:?} skip {} limit {:?} projection {:?}: {why}",
                exact(&case.filter),
                case.sort.as_ref().map(exact),
                case.skip,
                case.limit,
                case.projection.as_ref().map(exact)
            ));
        }
    }
    failures
}

/// `count` (the command, which the planner turns into a SQL `COUNT` when it can) on both
/// collections against the reference.
async fn count_differential(fx: &Fixture, filter: &Document) -> Vec<String> {
    let Ok(expected) = reference_matches(&fx.corpus, &Case::filter(filter.clone())) else {
        return Vec::new();
    };
    let mut failures = Vec::new();
    for (name, _) in &fx.collections {
        let reply = fx
            .db
            .run_command(doc! {"count": name, "query": filter.clone()})
            .await;
        let n = match reply {
            Ok(reply) => match reply.get("n") {
                Some(Bson::Int32(n)) => i64::from(*n),
                Some(Bson::Int64(n)) => *n,
                other => {
                    failures.push(format!("[{name}] count {}: n is {other:?}", exact(filter)));
                    continue;
                }
            },
            Err(e) => {
                failures.push(format!("[{name}] count {}: {e}", exact(filter)));
                continue;
            }
        };
        if n != expected.len() as i64 {
            failures.push(format!(
                "[{name}] count {}: expected {}, got {n}",
                exact(filter),
                expected.len()
            ));
        }
    }
    failures
}

fn report(failures: &[String], total: usize) {
    assert!(
        failures.is_empty(),
        "{} of {total} checks disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------
// hand-written cases
// ---------------------------------------------------------------------------

/// Filters written out one by one: every operator, dotted paths through arrays, logical
/// combinations, on indexed and unindexed fields.
fn hand_written_filters() -> Vec<Document> {
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
fn table_cases() -> Vec<Document> {
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
fn shaped_cases() -> Vec<Case> {
    let filters = [
        doc! {},
        doc! {"a": {"$gte": 1}},
        doc! {"b": {"$in": [1, "abc", Bson::Null]}},
        doc! {"s": {"$gt": ""}},
        doc! {"c": {"$lt": 10}},
        doc! {"_id": {"$gte": 100}},
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

/// The index a `find` is explained to scan on `collection` (None for a COLLSCAN), and
/// whether the sort was pushed.
async fn planned_index(
    fx: &Fixture,
    collection: &str,
    filter: &Document,
    sort: Option<&Document>,
) -> (Option<String>, bool) {
    let mut find = doc! {"find": collection, "filter": filter.clone()};
    if let Some(sort) = sort {
        find.insert("sort", sort.clone());
        find.insert("limit", 5);
    }
    let reply = fx
        .db
        .run_command(doc! {"explain": find, "verbosity": "queryPlanner"})
        .await
        .expect("explain");
    let plan = reply
        .get_document("queryPlanner")
        .and_then(|q| q.get_document("winningPlan"))
        .expect("winningPlan")
        .clone();
    let pushed_sort = plan
        .get_document("docgate")
        .and_then(|d| d.get_bool("pushedSort"))
        .unwrap_or(false);
    let mut stage = Some(plan);
    while let Some(s) = stage {
        if s.get_str("stage").ok() == Some("IXSCAN") {
            return (s.get_str("indexName").ok().map(str::to_string), pushed_sort);
        }
        stage = s.get_document("inputStage").ok().cloned();
    }
    (None, pushed_sort)
}

/// The comparison is only worth something if the indexed collection really answers through
/// its indexes and the plain one does not.
#[test]
fn the_indexed_collection_is_read_through_its_indexes() {
    let rt = runtime();
    rt.block_on(async {
        let fx = main_fixture().await;
        let cases = [
            (doc! {"a": {"$gt": 1}}, None, "a_1"),
            (doc! {"b": 1}, None, "b_-1"),
            (doc! {"b": {"$in": [1, "abc"]}}, None, "b_-1"),
            (doc! {"c": {"$gte": 0}}, None, "c_1_d_-1"),
            (doc! {"e": {"$lt": "z"}}, None, "e_-1_a_1"),
            (doc! {"s": {"$lt": "b"}}, None, "s_1"),
            (doc! {"tags": "x"}, None, "tags_1"),
            (doc! {"n.x": 1}, None, "n.x_1"),
            (doc! {"arr.k": {"$in": [1, 2]}}, None, "arr.k_1"),
            (doc! {"sp": 1}, None, "sp_1"),
            (doc! {"dt": {"$gt": date(0)}}, None, "dt_1"),
            (doc! {"_id": 3}, None, "_id_"),
            (doc! {}, Some(doc! {"s": 1}), "s_1"),
            (doc! {}, Some(doc! {"b": 1}), "b_-1"),
            (doc! {"n.x": {"$gt": 0}}, Some(doc! {"n.x": -1}), "n.x_1"),
        ];
        for (filter, sort, index) in &cases {
            let (used, pushed) = planned_index(&fx, "indexed", filter, sort.as_ref()).await;
            assert_eq!(
                used.as_deref(),
                Some(*index),
                "indexed: {filter} sort {sort:?}"
            );
            if sort.is_some() {
                assert!(pushed, "indexed: sort {sort:?} not pushed");
            }
            if *index != "_id_" {
                let (used, _) = planned_index(&fx, "plain", filter, sort.as_ref()).await;
                assert_eq!(used, None, "plain: {filter} sort {sort:?}");
            }
        }
    });
}

#[test]
fn hand_written_cases_agree_with_the_reference() {
    let rt = runtime();
    rt.block_on(async {
        let fx = main_fixture().await;
        let filters = hand_written_filters();
        let mut cases: Vec<Case> = filters.iter().cloned().map(Case::filter).collect();
        cases.extend(table_cases().into_iter().map(Case::filter));
        cases.extend(shaped_cases());
        // The corpus must make the cases meaningful: most select something, not everything.
        let sizes: Vec<Option<usize>> = cases
            .iter()
            .map(|c| reference_matches(&fx.corpus, c).ok().map(|d| d.len()))
            .collect();
        let selective = sizes
            .iter()
            .filter(|n| n.is_some_and(|n| n > 0 && n < fx.corpus.len()))
            .count();
        let rejected = sizes.iter().filter(|n| n.is_none()).count();
        eprintln!(
            "{} cases ({} hand-written filters, also counted): {selective} select some but \
             not all documents, {rejected} are errors",
            cases.len(),
            filters.len()
        );
        assert!(
            selective * 2 > cases.len(),
            "the corpus makes too many cases trivial"
        );
        let finds = futures_util::stream::iter(cases.iter())
            .map(|case| differential(&fx, case))
            .buffer_unordered(4)
            .collect::<Vec<_>>();
        let counts = futures_util::stream::iter(filters.iter())
            .map(|filter| count_differential(&fx, filter))
            .buffer_unordered(2)
            .collect::<Vec<_>>();
        let (finds, counts) = tokio::join!(finds, counts);
        let failures: Vec<String> = finds.into_iter().chain(counts).flatten().collect();
        report(&failures, cases.len() + filters.len());
    });
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

fn generated_case() -> impl Strategy<Value = Case> {
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

#[test]
fn generated_cases_agree_with_the_reference() {
    let rt = runtime();
    let fx = rt.block_on(main_fixture());
    // DIFFERENTIAL_CASES raises the number of cases for a longer hunt.
    let cases = std::env::var("DIFFERENTIAL_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 200,
        ..Config::default()
    });
    let result = runner.run(&generated_case(), |case| {
        let failures = rt.block_on(differential(&fx, &case));
        if failures.is_empty() {
            Ok(())
        } else {
            Err(TestCaseError::fail(failures.join("\n")))
        }
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    drop(fx);
}

// ---------------------------------------------------------------------------
// MongoDB's documented answers
// ---------------------------------------------------------------------------

/// A small collection for the rules the manual spells out ("Query for Null or Missing
/// Fields", "Query an Array", "Comparison/Sort Order", type bracketing, NaN).
fn subtle_corpus() -> Vec<Document> {
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

/// (filter, sort, the `_id`s MongoDB returns — in order when there is a sort).
fn documented_cases() -> Vec<(Document, Option<Document>, Vec<i32>)> {
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

#[test]
fn documented_behaviour_of_subtle_cases() {
    let rt = runtime();
    rt.block_on(async {
        let fx = fixture(
            subtle_corpus(),
            &[
                ("ascending", vec![doc! {"key": {"item": 1}, "name": "item_1"}]),
                ("descending", vec![doc! {"key": {"item": -1, "_id": 1}, "name": "item_-1__id_1"}]),
                ("plain", Vec::new()),
            ],
        )
        .await;
        let mut failures = Vec::new();
        let cases = documented_cases();
        for (filter, sort, want) in &cases {
            let case = Case {
                filter: filter.clone(),
                sort: sort.clone(),
                ..Case::default()
            };
            let ids_of = |docs: Vec<Document>| -> Vec<i32> {
                let mut ids: Vec<i32> = docs
                    .iter()
                    .map(|d| d.get_i32("_id").expect("int _id"))
                    .collect();
                if sort.is_none() {
                    ids.sort_unstable();
                }
                ids
            };
            match reference_matches(&fx.corpus, &case) {
                Ok(docs) => {
                    let got = ids_of(docs);
                    if &got != want {
                        failures.push(format!(
                            "[reference] {filter} sort {sort:?}: MongoDB returns {want:?}, the reference {got:?}"
                        ));
                    }
                }
                Err(e) => failures.push(format!("[reference] {filter}: {e}")),
            }
            for (name, coll) in &fx.collections {
                match run(coll, &case).await {
                    Ok(raw) => {
                        let docs: Vec<Document> = raw
                            .iter()
                            .map(|r| Document::from_reader(r.as_slice()).expect("decode"))
                            .collect();
                        let got = ids_of(docs);
                        if &got != want {
                            failures.push(format!(
                                "[{name}] {filter} sort {sort:?}: MongoDB returns {want:?}, docgate {got:?}"
                            ));
                        }
                    }
                    Err(e) => failures.push(format!("[{name}] {filter}: {e}")),
                }
            }
        }
        report(&failures, cases.len() * (1 + fx.collections.len()));
    });
}
