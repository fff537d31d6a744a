//! Tests of the MongoDB 7.0 expression operators docgate added late ($setField/$unsetField,
//! the `…N` array forms, $zip, the statistics, string search and replace, trigonometry,
//! bitwise, data size, ISO weeks, timestamps, $toObjectId, $rand) through parsed
//! expressions, with the manual's examples as expected results where it has them.
//!
//! Not for: production code (compiled only for tests).

use crate::query::expr::Expression;
use bson::{doc, oid::ObjectId, Binary, Bson, Document, Timestamp};

fn eval(expr: Bson, d: &Document) -> Result<Bson, crate::query::error::QueryError> {
    Expression::parse(&expr)?.evaluate(d)
}

fn ok(expr: Bson, d: &Document) -> Bson {
    match eval(expr, d) {
        Ok(v) => v,
        Err(e) => panic!("unexpected error {}: {}", e.code, e.message),
    }
}

fn code(expr: Bson, d: &Document) -> i32 {
    match eval(expr, d) {
        Ok(v) => panic!("expected an error, got {v}"),
        Err(e) => e.code,
    }
}

fn regex(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(bson::Regex {
        pattern: pattern.try_into().unwrap(),
        options: options.try_into().unwrap(),
    })
}

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse().unwrap())
}

#[test]
fn set_field_and_unset_field() {
    let d = doc! {"_id": 1, "item": "sweatshirt", "price": 45.99, "qty": 300};
    assert_eq!(
        ok(
            bson::bson!({"$setField": {"field": "price.usd", "input": "$$ROOT", "value": "$price"}}),
            &d
        ),
        Bson::Document(
            doc! {"_id": 1, "item": "sweatshirt", "price": 45.99, "qty": 300, "price.usd": 45.99}
        )
    );
    let dollar = doc! {"_id": 1, "$price": 45.99, "qty": 300};
    assert_eq!(
        ok(
            bson::bson!({"$setField": {"field": {"$literal": "$price"}, "input": "$$ROOT", "value": "$$REMOVE"}}),
            &dollar
        ),
        Bson::Document(doc! {"_id": 1, "qty": 300})
    );
    assert_eq!(
        ok(
            bson::bson!({"$unsetField": {"field": {"$literal": "$price"}, "input": "$$ROOT"}}),
            &dollar
        ),
        Bson::Document(doc! {"_id": 1, "qty": 300})
    );
    // Replacing keeps the field's position; null input gives null.
    assert_eq!(
        ok(
            bson::bson!({"$setField": {"field": "qty", "input": {"qty": 1, "b": 2}, "value": 5}}),
            &d
        ),
        Bson::Document(doc! {"qty": 5, "b": 2})
    );
    assert_eq!(
        ok(
            bson::bson!({"$setField": {"field": "a", "input": null, "value": 1}}),
            &d
        ),
        Bson::Null
    );
    // MongoDB's errors: a field path as field, a non-string, a missing part, non-object input.
    assert_eq!(
        code(
            bson::bson!({"$setField": {"field": "$price", "input": "$$ROOT", "value": 1}}),
            &d
        ),
        4161108
    );
    assert_eq!(
        code(
            bson::bson!({"$setField": {"field": true, "input": {}, "value": 1}}),
            &d
        ),
        4161107
    );
    assert_eq!(
        code(
            bson::bson!({"$setField": {"field": {"$concat": ["a", "b"]}, "input": {}, "value": 1}}),
            &d
        ),
        4161106
    );
    assert_eq!(
        code(bson::bson!({"$setField": {"field": "a", "input": {}}}), &d),
        4161103
    );
    assert_eq!(
        code(bson::bson!({"$setField": {"field": "a", "value": 1}}), &d),
        4161109
    );
    assert_eq!(
        code(
            bson::bson!({"$unsetField": {"field": "a", "input": {}, "value": 1}}),
            &d
        ),
        4161101
    );
    assert_eq!(
        code(
            bson::bson!({"$setField": {"field": "a", "input": 3, "value": 1}}),
            &d
        ),
        4161105
    );
}

/// MongoDB's own jstest for the `n` family as expressions (`n_expressions.js`).
#[test]
fn n_selections_as_mongodb_tests_them() {
    let d = doc! {"a": [1, 2, 3, 5, 7, 9], "n": 4, "diff": 2};
    let cases = [
        (
            bson::bson!({"n": 3, "input": [5, 4, 3, 2, 1]}),
            [
                bson::bson!([1, 2, 3]),
                bson::bson!([5, 4, 3]),
                bson::bson!([5, 4, 3]),
                bson::bson!([3, 2, 1]),
            ],
        ),
        (
            bson::bson!({"n": 3, "input": [null, 2, null, 1]}),
            [
                bson::bson!([1, 2]),
                bson::bson!([2, 1]),
                bson::bson!([null, 2, null]),
                bson::bson!([2, null, 1]),
            ],
        ),
        (
            bson::bson!({"n": 3, "input": "$a"}),
            [
                bson::bson!([1, 2, 3]),
                bson::bson!([9, 7, 5]),
                bson::bson!([1, 2, 3]),
                bson::bson!([5, 7, 9]),
            ],
        ),
        (
            bson::bson!({"n": "$n", "input": "$a"}),
            [
                bson::bson!([1, 2, 3, 5]),
                bson::bson!([9, 7, 5, 3]),
                bson::bson!([1, 2, 3, 5]),
                bson::bson!([3, 5, 7, 9]),
            ],
        ),
        (
            bson::bson!({"n": {"$subtract": ["$n", "$diff"]}, "input": [3, 4, 5]}),
            [
                bson::bson!([3, 4]),
                bson::bson!([5, 4]),
                bson::bson!([3, 4]),
                bson::bson!([4, 5]),
            ],
        ),
    ];
    for (args, expected) in cases {
        for (name, want) in ["$minN", "$maxN", "$firstN", "$lastN"]
            .into_iter()
            .zip(expected)
        {
            let mut expr = Document::new();
            expr.insert(name, args.clone());
            assert_eq!(ok(Bson::Document(expr), &d), want, "{name} {args}");
        }
    }
}

#[test]
fn n_selections_zip_and_statistics() {
    let d = doc! {"score": [1293, Bson::Null, 3489, 9]};
    assert_eq!(
        ok(bson::bson!({"$firstN": {"n": 3, "input": "$score"}}), &d),
        bson::bson!([1293, null, 3489])
    );
    assert_eq!(
        ok(bson::bson!({"$lastN": {"n": 3, "input": "$score"}}), &d),
        bson::bson!([null, 3489, 9])
    );
    assert_eq!(
        ok(bson::bson!({"$maxN": {"n": 2, "input": "$score"}}), &d),
        bson::bson!([3489, 1293])
    );
    assert_eq!(
        ok(bson::bson!({"$minN": {"n": 2, "input": "$score"}}), &d),
        bson::bson!([9, 1293])
    );
    assert_eq!(
        code(bson::bson!({"$firstN": {"n": 0, "input": "$score"}}), &d),
        5787908
    );
    assert_eq!(
        code(bson::bson!({"$firstN": {"n": 1.5, "input": "$score"}}), &d),
        5787903
    );
    assert_eq!(
        code(bson::bson!({"$firstN": {"n": "2", "input": "$score"}}), &d),
        5787902
    );
    assert_eq!(
        code(bson::bson!({"$firstN": {"n": 1, "input": 5}}), &d),
        5788200
    );
    assert_eq!(code(bson::bson!({"$firstN": {"input": [1]}}), &d), 5787906);

    let matrix = doc! {"matrix": [[1, 2], [2, 3], [3, 4]]};
    assert_eq!(
        ok(
            bson::bson!({"$zip": {"inputs": [
                {"$arrayElemAt": ["$matrix", 0]},
                {"$arrayElemAt": ["$matrix", 1]},
                {"$arrayElemAt": ["$matrix", 2]},
            ]}}),
            &matrix
        ),
        bson::bson!([[1, 2, 3], [2, 3, 4]])
    );
    let e = doc! {};
    assert_eq!(
        ok(
            bson::bson!({"$zip": {"inputs": [[1], [2, 3]], "useLongestLength": true, "defaults": ["a", "b"]}}),
            &e
        ),
        bson::bson!([[1, 2], ["a", 3]])
    );
    assert_eq!(
        ok(
            bson::bson!({"$zip": {"inputs": [[1], [2, 3]], "useLongestLength": true}}),
            &e
        ),
        bson::bson!([[1, 2], [null, 3]])
    );
    assert_eq!(
        ok(bson::bson!({"$zip": {"inputs": [[1], "$missing"]}}), &e),
        Bson::Null
    );
    assert_eq!(code(bson::bson!({"$zip": {"inputs": [[1], 3]}}), &e), 34468);
    assert_eq!(
        code(
            bson::bson!({"$zip": {"inputs": [[1]], "defaults": [0]}}),
            &e
        ),
        34466
    );
    assert_eq!(
        code(
            bson::bson!({"$zip": {"inputs": [[1]], "useLongestLength": true, "defaults": [0, 1]}}),
            &e
        ),
        34467
    );
    assert_eq!(code(bson::bson!({"$zip": {"inputs": []}}), &e), 34465);

    // Population deviation of [10, 5, 8]: sqrt(38/9).
    let quiz = doc! {"quizzes": [10, 5, 8]};
    assert_eq!(
        ok(bson::bson!({"$stdDevPop": "$quizzes"}), &quiz),
        Bson::Double(2.0548046676563256)
    );
    assert_eq!(
        ok(bson::bson!({"$stdDevSamp": [1, 2, 3]}), &quiz),
        Bson::Double(1.0)
    );
    assert_eq!(ok(bson::bson!({"$stdDevSamp": [1]}), &quiz), Bson::Null);
    // The manual's $percentile expression example (student 2345) and a median over fields.
    let scores = doc! {"scores": [62, 81, 80, 75, 68], "a": 62, "b": 81, "c": 78};
    assert_eq!(
        ok(
            bson::bson!({"$percentile": {"input": "$scores", "p": [0.25, 0.50, 0.75], "method": "approximate"}}),
            &scores
        ),
        bson::bson!([68.0, 75.0, 80.0])
    );
    assert_eq!(
        ok(
            bson::bson!({"$median": {"input": ["$a", "$b", "$c", "x"], "method": "approximate"}}),
            &scores
        ),
        Bson::Double(78.0)
    );
    assert_eq!(
        ok(
            bson::bson!({"$median": {"input": "$none", "method": "approximate"}}),
            &scores
        ),
        Bson::Null
    );
    assert_eq!(
        code(
            bson::bson!({"$median": {"input": [1], "method": "continuous"}}),
            &scores
        ),
        2
    );
    assert_eq!(
        code(
            bson::bson!({"$percentile": {"input": [1], "p": [1.5], "method": "approximate"}}),
            &scores
        ),
        7750303
    );
}

#[test]
fn string_search_and_replace() {
    let d = doc! {"s": "cafétéria", "item": "blue paint", "cat": "café"};
    assert_eq!(
        ok(bson::bson!({"$indexOfBytes": ["$s", "é"]}), &d),
        Bson::Int32(3)
    );
    assert_eq!(
        ok(bson::bson!({"$indexOfBytes": ["$s", "r", 6]}), &d),
        Bson::Int32(8)
    );
    assert_eq!(
        ok(
            bson::bson!({"$indexOfBytes": ["foo.bar.fi", ".", 5, 2]}),
            &d
        ),
        Bson::Int32(-1)
    );
    assert_eq!(
        ok(bson::bson!({"$indexOfBytes": [null, "a"]}), &d),
        Bson::Null
    );
    assert_eq!(code(bson::bson!({"$indexOfBytes": [1, "a"]}), &d), 40091);
    assert_eq!(
        code(bson::bson!({"$indexOfBytes": ["a", "a", "x"]}), &d),
        40096
    );
    assert_eq!(
        code(bson::bson!({"$indexOfBytes": ["a", "a", 0, -1]}), &d),
        40097
    );
    assert_eq!(
        ok(
            bson::bson!({"$regexFind": {"input": "$cat", "regex": "é"}}),
            &d
        ),
        Bson::Document(doc! {"match": "é", "idx": 3, "captures": []})
    );
    assert_eq!(
        ok(
            bson::bson!({"$regexFindAll": {"input": "a1b22", "regex": "([a-z])(\\d+)|(x)"}}),
            &d
        ),
        bson::bson!([
            {"match": "a1", "idx": 0, "captures": ["a", "1", null]},
            {"match": "b22", "idx": 2, "captures": ["b", "22", null]},
        ])
    );
    assert_eq!(
        ok(
            bson::bson!({"$regexFind": {"input": "ABC", "regex": regex("b", "i")}}),
            &d
        ),
        Bson::Document(doc! {"match": "B", "idx": 1, "captures": []})
    );
    assert_eq!(
        ok(
            bson::bson!({"$regexFind": {"input": "abc", "regex": "z"}}),
            &d
        ),
        Bson::Null
    );
    assert_eq!(
        ok(
            bson::bson!({"$regexFindAll": {"input": null, "regex": "z"}}),
            &d
        ),
        bson::bson!([])
    );
    assert_eq!(
        code(bson::bson!({"$regexFind": {"input": 1, "regex": "z"}}), &d),
        51104
    );
    assert_eq!(code(bson::bson!({"$regexFind": "x"}), &d), 51103);
    assert_eq!(
        code(bson::bson!({"$regexFindAll": {"input": "x"}}), &d),
        31023
    );
    assert_eq!(
        code(bson::bson!({"$regexMatch": {"regex": "x"}}), &d),
        31022
    );
    assert_eq!(
        code(
            bson::bson!({"$regexFind": {"input": "x", "regex": "x", "y": 1}}),
            &d
        ),
        31024
    );
    assert_eq!(
        code(
            bson::bson!({"$regexFind": {"input": "a", "regex": regex("a", "i"), "options": "m"}}),
            &d
        ),
        51107
    );
    assert_eq!(
        ok(
            bson::bson!({"$replaceOne": {"input": "blue paint blue", "find": "blue", "replacement": "red"}}),
            &d
        ),
        Bson::String("red paint blue".into())
    );
    assert_eq!(
        ok(
            bson::bson!({"$replaceAll": {"input": "blue paint blue", "find": "blue", "replacement": "red"}}),
            &d
        ),
        Bson::String("red paint red".into())
    );
    assert_eq!(
        ok(
            bson::bson!({"$replaceAll": {"input": "$nothing", "find": "a", "replacement": "b"}}),
            &d
        ),
        Bson::Null
    );
    assert_eq!(
        code(
            bson::bson!({"$replaceAll": {"input": "a", "find": 1, "replacement": "b"}}),
            &d
        ),
        51745
    );
    assert_eq!(
        code(
            bson::bson!({"$replaceOne": {"input": "a", "find": "a"}}),
            &d
        ),
        51747
    );
}

#[test]
fn trigonometry() {
    let d = doc! {};
    assert_eq!(ok(bson::bson!({"$sin": 0}), &d), Bson::Double(0.0));
    assert_eq!(ok(bson::bson!({"$cos": 0}), &d), Bson::Double(1.0));
    assert_eq!(
        ok(bson::bson!({"$atan2": [1, 1]}), &d),
        Bson::Double(std::f64::consts::FRAC_PI_4)
    );
    assert_eq!(ok(bson::bson!({"$sin": null}), &d), Bson::Null);
    assert_eq!(code(bson::bson!({"$sin": f64::INFINITY}), &d), 50989);
    assert_eq!(code(bson::bson!({"$acos": 2}), &d), 50989);
    assert_eq!(code(bson::bson!({"$acosh": 0.5}), &d), 50989);
    assert_eq!(code(bson::bson!({"$sin": "x"}), &d), 28765);
    assert!(matches!(ok(bson::bson!({"$asin": f64::NAN}), &d), Bson::Double(x) if x.is_nan()));
    assert_eq!(ok(bson::bson!({"$tanh": 0}), &d), Bson::Double(0.0));
    assert_eq!(
        ok(bson::bson!({"$degreesToRadians": 180}), &d),
        Bson::Double(std::f64::consts::PI)
    );
    assert_eq!(
        ok(bson::bson!({"$radiansToDegrees": std::f64::consts::PI}), &d),
        Bson::Double(180.0)
    );
    // Decimal128: exact where MongoDB's 34-digit constants suffice, refused where not.
    assert_eq!(
        ok(bson::bson!({"$degreesToRadians": dec("1")}), &d),
        dec("0.01745329251994329576923690768488613")
    );
    assert_eq!(code(bson::bson!({"$sin": dec("1")}), &d), 115);
}

#[test]
fn bitwise() {
    let d = doc! {"a": 0, "b": 127, "c": 3i64};
    assert_eq!(ok(bson::bson!({"$bitAnd": [3, 5]}), &d), Bson::Int32(1));
    assert_eq!(ok(bson::bson!({"$bitOr": [3, 5]}), &d), Bson::Int32(7));
    assert_eq!(ok(bson::bson!({"$bitXor": [3, 5]}), &d), Bson::Int32(6));
    assert_eq!(
        ok(bson::bson!({"$bitAnd": ["$b", "$c"]}), &d),
        Bson::Int64(3)
    );
    assert_eq!(ok(bson::bson!({"$bitNot": "$a"}), &d), Bson::Int32(-1));
    assert_eq!(ok(bson::bson!({"$bitNot": "$c"}), &d), Bson::Int64(-4));
    assert_eq!(ok(bson::bson!({"$bitOr": [1, null]}), &d), Bson::Null);
    assert_eq!(code(bson::bson!({"$bitAnd": [1, 1.5]}), &d), 14);
    assert_eq!(code(bson::bson!({"$bitNot": 1.5}), &d), 14);
    assert_eq!(code(bson::bson!({"$bitNot": "x"}), &d), 28765);
}

#[test]
fn sizes_dates_timestamps_and_conversions() {
    let d = doc! {
        "o": {"a": 1},
        "bin": Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![1, 2, 3] },
        "ts": Timestamp { time: 1622731060, increment: 2 },
        "date": bson::DateTime::from_millis(1_451_606_400_000), // 2016-01-01, a Friday
    };
    assert_eq!(ok(bson::bson!({"$bsonSize": "$o"}), &d), Bson::Int32(12));
    assert_eq!(ok(bson::bson!({"$bsonSize": "$nothing"}), &d), Bson::Null);
    assert_eq!(code(bson::bson!({"$bsonSize": 1}), &d), 31393);
    assert_eq!(ok(bson::bson!({"$binarySize": "$bin"}), &d), Bson::Int32(3));
    assert_eq!(ok(bson::bson!({"$binarySize": "café"}), &d), Bson::Int32(5));
    assert_eq!(code(bson::bson!({"$binarySize": 1}), &d), 51276);
    assert_eq!(
        ok(bson::bson!({"$tsSecond": "$ts"}), &d),
        Bson::Int64(1622731060)
    );
    assert_eq!(ok(bson::bson!({"$tsIncrement": "$ts"}), &d), Bson::Int64(2));
    assert_eq!(code(bson::bson!({"$tsSecond": 1}), &d), 5687301);
    assert_eq!(
        ok(bson::bson!({"$isoWeekYear": "$date"}), &d),
        Bson::Int64(2015)
    );
    assert_eq!(ok(bson::bson!({"$isoWeek": "$date"}), &d), Bson::Int32(53));
    assert_eq!(
        ok(
            bson::bson!({"$isoWeek": {"date": "$date", "timezone": "UTC"}}),
            &d
        ),
        Bson::Int32(53)
    );
    let oid = ObjectId::parse_str("5ab9cbfa31c2ab715d42129e").unwrap();
    assert_eq!(
        ok(bson::bson!({"$toObjectId": "5ab9cbfa31c2ab715d42129e"}), &d),
        Bson::ObjectId(oid)
    );
    assert_eq!(ok(bson::bson!({"$toObjectId": null}), &d), Bson::Null);
    assert_eq!(code(bson::bson!({"$toObjectId": "nope"}), &d), 241);
    // The manual's example, and the numbers a hashed index treats as one key.
    assert_eq!(
        ok(bson::bson!({"$toHashedIndexKey": "string to hash"}), &d),
        Bson::Int64(763543691661428748)
    );
    assert_eq!(
        ok(bson::bson!({"$toHashedIndexKey": 1}), &d),
        ok(bson::bson!({"$toHashedIndexKey": 1.0}), &d)
    );
    assert_ne!(
        ok(bson::bson!({"$toHashedIndexKey": 1}), &d),
        ok(bson::bson!({"$toHashedIndexKey": "1"}), &d)
    );
    match ok(bson::bson!({"$rand": {}}), &d) {
        Bson::Double(x) => assert!((0.0..1.0).contains(&x)),
        other => panic!("$rand gave {other}"),
    }
    assert_eq!(code(bson::bson!({"$rand": {"a": 1}}), &d), 3040501);
    assert_eq!(code(bson::bson!({"$rand": 1}), &d), 10065);
    assert!(matches!(
        ok(bson::bson!({"$rand": []}), &d),
        Bson::Double(_)
    ));
}

#[test]
fn refused_names_answer_mongodb_errors() {
    let d = doc! {};
    assert_eq!(code(bson::bson!({"$meta": "textScore"}), &d), 40218);
    assert_eq!(code(bson::bson!({"$meta": "indexKey"}), &d), 115);
    assert_eq!(code(bson::bson!({"$meta": "bogus"}), &d), 17308);
    assert_eq!(code(bson::bson!({"$meta": 1}), &d), 17307);
    assert_eq!(
        code(
            bson::bson!({"$function": {"body": "function() {}", "args": [], "lang": "js"}}),
            &d
        ),
        31264
    );
    assert_eq!(code(bson::bson!({"$accumulator": {}}), &d), 168);
}
