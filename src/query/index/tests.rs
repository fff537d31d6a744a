//! Tests of `index/mod.rs`: parsing and MongoDB's errors, keys, conflicts, key order.

use super::*;
use crate::query::value::compare::compare_values;
use crate::query::value::keys::{encode_key, index_keys};
use crate::query::value::test_values::Generator;
use bson::doc;

fn spec(d: Document) -> IndexSpec {
    match IndexSpec::parse(&d) {
        Ok(s) => s,
        Err(e) => panic!("{d}: {e:?}"),
    }
}

fn fails(d: Document) -> QueryError {
    match IndexSpec::parse(&d) {
        Ok(s) => panic!("{d} parsed: {s:?}"),
        Err(e) => e,
    }
}

fn assert_error(d: Document, code: i32, text: &str) {
    let e = fails(d.clone());
    assert_eq!(e.code, code, "{d}: {e:?}");
    assert!(
        e.message.contains(text),
        "{d}: {:?} lacks {text:?}",
        e.message
    );
}

fn keys(s: &IndexSpec, d: Document) -> Vec<Vec<u8>> {
    match s.entries(&d) {
        Ok(Some(e)) => e.keys,
        other => panic!("{d}: {other:?}"),
    }
}

fn key(parts: &[(Bson, IndexDirection)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (v, dir) in parts {
        match dir {
            IndexDirection::Ascending => out.extend(encode_key(v)),
            IndexDirection::Descending => out.extend(invert(&encode_key(v))),
        }
    }
    out
}

use IndexDirection::{Ascending as Asc, Descending as Desc};

#[test]
fn collated_index_keys_order_and_equal_as_the_collation_does() {
    let index = spec(doc! {"key": {"a": 1}, "collation": {"locale": "en", "strength": 2}});
    let key = |v: &str| index.entries(&doc! {"a": v}).unwrap().unwrap().keys;
    assert_eq!(key("Ada"), key("ada"));
    assert!(key("ada") < key("Bob") && key("Bob") < key("carl"));
    let simple = spec(doc! {"key": {"a": 1}});
    let plain = |v: &str| simple.entries(&doc! {"a": v}).unwrap().unwrap().keys;
    assert_ne!(plain("Ada"), plain("ada"));
}

#[test]
fn parses_and_reports_like_list_indexes() {
    let s = spec(doc! {"key": {"a": 1, "b.c": -1.0}, "unique": true, "background": false});
    assert_eq!(s.name, "a_1_b.c_-1");
    assert_eq!(
        s.fields,
        vec![("a".to_string(), Asc), ("b.c".to_string(), Desc)]
    );
    assert!(s.unique && !s.sparse && s.partial_filter.is_none());
    assert_eq!(
        s.document,
        doc! {"v": 2, "key": {"a": 1, "b.c": -1.0}, "name": "a_1_b.c_-1", "unique": true, "background": false}
    );
    assert_eq!(s.key_pattern(), &doc! {"a": 1, "b.c": -1.0});
    let s = spec(doc! {
        "expireAfterSeconds": 3600, "name": "t", "v": 2, "key": {"t": 1},
        "ns": "db.c", "collation": {"locale": "simple"}, "hidden": true,
    });
    assert_eq!(
        s.document,
        doc! {"v": 2, "key": {"t": 1}, "name": "t", "expireAfterSeconds": 3600, "hidden": true}
    );
    assert_eq!(s.expire_after_seconds, Some(3600));
    assert!(s.hidden());
    let id = spec(doc! {"key": {"_id": 1}, "name": "_id_"});
    assert!(id.unique && id.is_id_index());
    assert_eq!(IndexSpec::default_name(&doc! {"a": 1, "b": -1}), "a_1_b_-1");
    assert_eq!(
        IndexSpec::default_name(&doc! {"a.b": 1i64, "c": 2.5}),
        "a.b_1_c_2.5"
    );
    assert_eq!(IndexSpec::default_name(&doc! {"x": 1.0}), "x_1");
}

#[test]
fn key_pattern_errors() {
    assert_error(
        doc! {"name": "x"},
        9,
        "The 'key' field is a required property",
    );
    assert_error(
        doc! {"key": 1, "name": "x"},
        14,
        "The field 'key' must be an object, but got int",
    );
    assert_error(
        doc! {"key": {}, "name": "x"},
        67,
        "Index keys cannot be empty.",
    );
    assert_error(
        doc! {"key": {"a": 0}},
        67,
        "Values in the index key pattern cannot be 0.",
    );
    assert_error(doc! {"key": {"a": f64::NAN}}, 67, "cannot be NaN");
    assert_error(doc! {"key": {"a": "foo"}}, 67, "Unknown index plugin 'foo'");
    assert_error(doc! {"key": {"a": true}}, 67, "cannot be of type bool");
    assert_error(doc! {"key": {"a": ""}}, 67, "cannot be empty strings");
    for plugin in ["2dsphere", "2d", "hashed"] {
        assert_error(doc! {"key": {"a": plugin}}, 67, "not supported by docgate");
    }
    assert_error(
        doc! {"key": {"$**": 1}},
        67,
        "'wildcard' indexes are not supported",
    );
    assert_error(
        doc! {"key": {"a.$**": 1}},
        67,
        "'wildcard' indexes are not supported",
    );
    assert_error(
        doc! {"key": {"a..b": 1}},
        67,
        "cannot contain an empty field",
    );
    assert_error(doc! {"key": {"$a": 1}}, 67, "field name starts with '$'");
    spec(doc! {"key": {"a.$id": 1}});
    let e = fails(doc! {"key": {"a": 0}, "name": "z"});
    assert_eq!(e.code_name, "CannotCreateIndex");
    assert!(e
        .message
        .starts_with("Error in specification { key: { a: 0 }, name: \"z\" } :: caused by :: "));
}

#[test]
fn option_errors() {
    assert_error(
        doc! {"key": {"a": 1}, "foo": 1},
        197,
        "The field 'foo' is not valid for an index specification. Specification: { key: { a: 1 }, foo: 1 }",
    );
    assert_eq!(
        fails(doc! {"key": {"a": 1}, "foo": 1}).code_name,
        "InvalidIndexSpecificationOption"
    );
    assert_error(
        doc! {"key": {"a": 1}, "name": ""},
        67,
        "index name cannot be empty",
    );
    assert_error(
        doc! {"key": {"a": 1}, "name": 5},
        14,
        "The field 'name' must be a string",
    );
    assert_error(
        doc! {"key": {"a": 1}, "name": "*"},
        2,
        "The index name '*' is not valid.",
    );
    assert_error(
        doc! {"key": {"a": 1}, "name": "_id_"},
        2,
        "reserved for the _id index",
    );
    assert_error(
        doc! {"key": {"a": 1}, "unique": "yes"},
        14,
        "which is not convertible to bool",
    );
    assert!(spec(doc! {"key": {"a": 1}, "unique": 1, "sparse": 0.0}).unique);
    assert_error(doc! {"key": {"a": 1}, "hidden": 1}, 14, "must be a bool");
    assert_error(
        doc! {"key": {"a": 1}, "v": 3},
        67,
        "cannot create an index with v=3",
    );
    let collated = spec(doc! {"key": {"a": 1}, "collation": {"locale": "en", "strength": 2}});
    assert_eq!(
        collated
            .document
            .get_document("collation")
            .unwrap()
            .get_i32("strength")
            .ok(),
        Some(2)
    );
    assert_error(
        doc! {"key": {"a": 1}, "collation": {"locale": "zz_nope"}},
        2,
        "Field 'locale' is invalid",
    );
    assert_error(
        doc! {"key": {"a": 1}, "collation": {}},
        2,
        "cannot be an empty object",
    );
    assert_error(
        doc! {"key": {"a": 1}, "weights": {"a": 1}},
        67,
        "not supported by docgate",
    );
    assert_error(
        doc! {"key": {"_id": 1}, "name": "_id_", "unique": true},
        197,
        "The field 'unique' is not valid for an _id index specification",
    );
    assert_error(
        doc! {"key": {"_id": 1}, "expireAfterSeconds": 5},
        197,
        "The field 'expireAfterSeconds' is not valid for an _id index specification",
    );
}

#[test]
fn ttl_rules() {
    assert_error(
        doc! {"key": {"a": 1, "b": 1}, "expireAfterSeconds": 10},
        67,
        "TTL indexes are single-field indexes, compound indexes do not support TTL",
    );
    assert_error(
        doc! {"key": {"a": 1}, "expireAfterSeconds": -1},
        67,
        "TTL index 'expireAfterSeconds' option cannot be less than 0",
    );
    assert_error(
        doc! {"key": {"a": 1}, "expireAfterSeconds": "1"},
        67,
        "must be numeric, but received a type of 'string'",
    );
    assert_error(
        doc! {"key": {"a": 1}, "expireAfterSeconds": f64::NAN},
        67,
        "must not be NaN",
    );
    assert_error(
        doc! {"key": {"a": 1}, "expireAfterSeconds": 1i64 << 40},
        67,
        "32-bit integer",
    );
    assert_eq!(
        spec(doc! {"key": {"a": 1}, "expireAfterSeconds": 0}).expire_after_seconds,
        Some(0)
    );
    let s = spec(doc! {"key": {"a": 1}, "expireAfterSeconds": 1.5});
    assert_eq!(s.expire_after_seconds, Some(1));
    assert_eq!(
        s.document.get("expireAfterSeconds"),
        Some(&Bson::Double(1.5))
    );
}

#[test]
fn partial_filter_rules() {
    for ok in [
        doc! {"a": {"$exists": true}},
        doc! {"a": {"$in": [1, 2]}},
        doc! {"a": {"$type": "string"}},
        doc! {"$or": [{"a": 1}, {"b": {"$gt": 2}}]},
        doc! {"a": {"$gte": 1, "$lt": 5}, "b": null},
        doc! {"$and": [{"a": 1}, {"b": {"$lte": 2}}]},
        doc! {"a": {"$eq": {"$regularExpression": {"pattern": "x", "options": ""}}}},
    ] {
        let s = spec(doc! {"key": {"k": 1}, "partialFilterExpression": ok.clone()});
        assert_eq!(
            s.document.get("partialFilterExpression"),
            Some(&Bson::Document(ok))
        );
    }
    for (bad, tree) in [
        (doc! {"a": {"$ne": 1}}, "$not\n    a $eq 1\n"),
        (doc! {"a": {"$nin": [1]}}, "$not\n    a $in [ 1]\n"),
        (doc! {"a": {"$exists": false}}, "$not\n    a exists\n"),
        (doc! {"$nor": [{"a": 1}]}, "$nor"),
        (doc! {"a": {"$regex": "x"}}, "a regex /x/\n"),
        (doc! {"a": {"$size": 2}}, "a $size : 2\n"),
        (doc! {"a": {"$mod": [2, 0]}}, "a mod 2 % x == 0\n"),
        (doc! {"a": {"$bitsAllSet": 1}}, "a $bitsAllSet: [0]\n"),
        (doc! {"$or": [{"a": {"$ne": 1}}]}, "$not\n    a $eq 1\n"),
        (doc! {"a": {"$elemMatch": {"$gt": 1}}}, "a $elemMatch"),
    ] {
        let e = fails(doc! {"key": {"k": 1}, "partialFilterExpression": bad.clone()});
        assert_eq!(e.code, 67, "{bad}: {e:?}");
        assert!(
            e.message.ends_with(&format!(
                ":: caused by :: Expression not supported in partial index: {tree}"
            )) || e.message.contains(&format!("partial index: {tree}")),
            "{bad}: {:?}",
            e.message
        );
    }
    let e = fails(doc! {"key": {"k": 1}, "partialFilterExpression": {"$expr": {"$eq": ["$a", 1]}}});
    assert_eq!((e.code, e.code_name), (224, "QueryFeatureNotAllowed"));
    assert!(e.message.ends_with("$expr is not allowed in this context"));
    let e = fails(doc! {"key": {"k": 1}, "partialFilterExpression": {"$where": "1"}});
    assert_eq!(e.code, 2);
    assert_error(
        doc! {"key": {"k": 1}, "partialFilterExpression": 1},
        14,
        "must be an object",
    );
    assert_error(
        doc! {"key": {"k": 1}, "partialFilterExpression": {"a": 1}, "sparse": true},
        67,
        "cannot mix \"partialFilterExpression\" and \"sparse\" options",
    );
    let deep = doc! {"$or": [{"$and": [{"$or": [{"$and": [{"a": 1}, {"b": 1}]}, {"c": 1}]}, {"d": 1}]}, {"e": 1}]};
    assert_error(
        doc! {"key": {"k": 1}, "partialFilterExpression": deep},
        67,
        "depth may not exceed 4",
    );
}

#[test]
fn entries_single_field_match_index_keys() {
    let mut g = Generator::new(0x1234_5678);
    for _ in 0..3000 {
        let mut d = Document::new();
        for _ in 0..g.below(4) {
            d.insert(g.pick(&["a", "b", "c"]), g.value(3));
        }
        let path = g.path();
        let s = spec(doc! {"key": {&path: 1}});
        let e = s.entries(&d).unwrap().unwrap();
        assert_eq!(e.keys, index_keys(&d, &path), "{d} {path}");
    }
}

#[test]
fn compound_multikey_and_parallel_arrays() {
    let s = spec(doc! {"key": {"a": 1, "b": -1}});
    let e = s
        .entries(&doc! {"a": [2, 1, 2], "b": "x"})
        .unwrap()
        .unwrap();
    assert!(e.multikey);
    let x = Bson::String("x".into());
    let mut expected = vec![
        key(&[(Bson::Int32(1), Asc), (x.clone(), Desc)]),
        key(&[(Bson::Int32(2), Asc), (x.clone(), Desc)]),
    ];
    expected.sort();
    assert_eq!(e.keys, expected);
    let e = s.entries(&doc! {"a": 1}).unwrap().unwrap();
    assert!(!e.multikey);
    assert_eq!(
        e.keys,
        vec![key(&[(Bson::Int32(1), Asc), (Bson::Null, Desc)])]
    );
    let e = s.entries(&doc! {"a": [], "b": 1}).unwrap().unwrap();
    assert!(e.multikey);
    assert_eq!(
        e.keys,
        vec![key(&[(Bson::Undefined, Asc), (Bson::Int32(1), Desc)])]
    );

    let err = s.entries(&doc! {"a": [1, 2], "b": [3]}).unwrap_err();
    assert_eq!(
        (err.code, err.code_name),
        (171, "CannotIndexParallelArrays")
    );
    assert_eq!(err.message, "cannot index parallel arrays [b] [a]");
    assert_eq!(s.entries(&doc! {"a": [1], "b": []}).unwrap_err().code, 171);
    // The same array reached by two paths is not parallel; keys are the product.
    let s = spec(doc! {"key": {"a.b": 1, "a.c": 1}});
    let e = s
        .entries(&doc! {"a": [{"b": 1, "c": 2}, {"b": 3, "c": 4}]})
        .unwrap()
        .unwrap();
    assert_eq!(e.keys.len(), 4);
    assert!(e.multikey);
    let e = s
        .entries(&doc! {"a": [{"b": [1, 2], "c": 5}]})
        .unwrap()
        .unwrap();
    assert_eq!(e.keys.len(), 2);
    let err = s
        .entries(&doc! {"a": [{"b": [1, 2], "c": [5, 6]}]})
        .unwrap_err();
    assert_eq!(err.message, "cannot index parallel arrays [c] [b]");
    let s = spec(doc! {"key": {"a.b": 1, "c": 1}});
    let err = s.entries(&doc! {"a": {"b": [1]}, "c": [2, 3]}).unwrap_err();
    assert_eq!(err.message, "cannot index parallel arrays [c] [b]");
}

#[test]
fn sparse_and_partial_exclusion() {
    let s = spec(doc! {"key": {"a": 1, "b": 1}, "sparse": true});
    assert_eq!(s.entries(&doc! {"c": 1}).unwrap(), None);
    assert_eq!(keys(&s, doc! {"b": 2}).len(), 1);
    assert_eq!(
        keys(&s, doc! {"a": null}),
        vec![key(&[(Bson::Null, Asc), (Bson::Null, Asc)])]
    );
    let s = spec(doc! {"key": {"a.c": 1}, "sparse": true});
    assert_eq!(
        keys(&s, doc! {"a": [{"b": 1}, {"c": 2}]}),
        vec![encode_key(&Bson::Int32(2))]
    );
    assert_eq!(s.entries(&doc! {"a": [{"b": 1}]}).unwrap(), None);
    let s = spec(doc! {"key": {"a": 1}, "partialFilterExpression": {"b": {"$gt": 5}}});
    assert_eq!(s.entries(&doc! {"a": 1, "b": 1}).unwrap(), None);
    assert_eq!(
        keys(&s, doc! {"a": 1, "b": 6}),
        vec![encode_key(&Bson::Int32(1))]
    );
}

#[test]
fn conflicts() {
    let a = spec(doc! {"key": {"a": 1}});
    assert!(a.same_key_pattern(&spec(doc! {"key": {"a": 1.0}, "name": "other"})));
    assert!(!a.same_key_pattern(&spec(doc! {"key": {"a": -1}})));
    assert!(a.equivalent(&spec(doc! {"key": {"a": 1}, "background": true})));
    assert_eq!(
        a.conflict_with(&spec(doc! {"key": {"a": 1}, "name": "a_1"})),
        None
    );
    assert_eq!(a.conflict_with(&spec(doc! {"key": {"b": 1}})), None);
    let e = a
        .conflict_with(&spec(doc! {"key": {"b": 1}, "name": "a_1"}))
        .unwrap();
    assert_eq!((e.code, e.code_name), (86, "IndexKeySpecsConflict"));
    assert!(e.message.contains("Requested index: { v: 2, key: { a: 1 }, name: \"a_1\" }, existing index: { v: 2, key: { b: 1 }, name: \"a_1\" }"));
    let e = a
        .conflict_with(&spec(doc! {"key": {"a": 1}, "name": "x"}))
        .unwrap();
    assert_eq!(
        (e.code, e.message.as_str()),
        (85, "Index already exists with a different name: x")
    );
    let t = spec(doc! {"key": {"t": 1}, "expireAfterSeconds": 60});
    let e = t
        .conflict_with(&spec(doc! {"key": {"t": 1}, "expireAfterSeconds": 86400}))
        .unwrap();
    assert_eq!((e.code, e.code_name), (85, "IndexOptionsConflict"));
    assert!(e.message.starts_with(
        "An equivalent index already exists with the same name but different options."
    ));
    let e = t
        .conflict_with(&spec(doc! {"key": {"t": 1}, "name": "x"}))
        .unwrap();
    assert!(e
        .message
        .starts_with("An equivalent index already exists with a different name and options."));
    let u = spec(doc! {"key": {"a": 1}, "unique": true});
    assert_eq!(u.conflict_with(&a).map(|e| e.code), Some(86));
    assert_eq!(
        u.conflict_with(&spec(doc! {"key": {"a": 1}, "name": "x"})),
        None
    );
}

#[test]
fn key_space_helpers() {
    assert_eq!(prefix_successor(&[1, 2, 0xFF, 0xFF]), Some(vec![1, 3]));
    assert_eq!(prefix_successor(&[0xFF]), None);
    assert_eq!(prefix_successor(&[]), None);
    assert_eq!(invert(&[0, 1, 0xFF]), vec![0xFF, 0xFE, 0]);
    let mut g = Generator::new(77);
    for _ in 0..2000 {
        let v = g.value(2);
        let (lo, hi) = type_bracket(&v);
        let k = encode_key(&v);
        assert!(lo <= k && k < hi, "{v:?}");
        let mut successor_input = k.clone();
        successor_input.truncate(1 + g.below(k.len() as u64) as usize);
        if let Some(next) = prefix_successor(&successor_input) {
            assert!(k < next);
        }
    }
}

/// Bytewise order of compound keys is the lexicographic order of their components
/// (compare_values per component, reversed for descending ones).
#[test]
fn compound_key_order_is_lexicographic() {
    let mut g = Generator::new(0xdead_beef);
    for _ in 0..20_000 {
        let n = 1 + g.below(3) as usize;
        let dirs: Vec<IndexDirection> = (0..n)
            .map(|_| if g.below(2) == 0 { Asc } else { Desc })
            .collect();
        let a: Vec<Bson> = (0..n).map(|_| g.value(2)).collect();
        let b: Vec<Bson> = (0..n)
            .map(|i| {
                if g.below(3) == 0 {
                    a[i].clone()
                } else {
                    g.value(2)
                }
            })
            .collect();
        let mut expected = Ordering::Equal;
        for i in 0..n {
            let c = compare_values(&a[i], &b[i]);
            let c = if dirs[i] == Desc { c.reverse() } else { c };
            if c != Ordering::Equal {
                expected = c;
                break;
            }
        }
        let ka = key(&a
            .iter()
            .cloned()
            .zip(dirs.iter().copied())
            .collect::<Vec<_>>());
        let kb = key(&b
            .iter()
            .cloned()
            .zip(dirs.iter().copied())
            .collect::<Vec<_>>());
        assert_eq!(ka.cmp(&kb), expected, "{a:?} {b:?} {dirs:?}");
    }
}

#[test]
fn entries_build_keys_with_directions() {
    let s = spec(doc! {"key": {"a": 1, "b": -1, "c": 1}});
    let e = s
        .entries(&doc! {"a": 1, "b": "x", "c": [true]})
        .unwrap()
        .unwrap();
    assert_eq!(
        e.keys,
        vec![key(&[
            (Bson::Int32(1), Asc),
            (Bson::String("x".into()), Desc),
            (Bson::Boolean(true), Asc)
        ])]
    );
}

#[test]
fn messages_carry_mongodb_context() {
    let e = fails(doc! {"key": {"a": 1}, "foo": 1});
    assert_eq!(
        e.message,
        "Error in specification { key: { a: 1 }, foo: 1 } :: caused by :: The field 'foo' is not \
         valid for an index specification. Specification: { key: { a: 1 }, foo: 1 }"
    );
    assert_eq!(
        fails(doc! {"key": {"a": 1, "b": 1}, "expireAfterSeconds": 10}).message,
        "TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: \
         { key: { a: 1, b: 1 }, expireAfterSeconds: 10, v: 2 }"
    );
    assert_eq!(
        fails(doc! {"key": {"a": 1}, "expireAfterSeconds": -1}).message,
        ". Index spec: { key: { a: 1 }, expireAfterSeconds: -1, v: 2 } :: caused by :: TTL index \
         'expireAfterSeconds' option cannot be less than 0"
    );
    assert_eq!(
        fails(doc! {"key": {"k": 1}, "partialFilterExpression": {"a": {"$ne": 1}}}).message,
        "Error in specification { key: { k: 1 }, partialFilterExpression: { a: { $ne: 1 } }, \
         v: 2 } :: caused by :: Expression not supported in partial index: $not\n    a $eq 1\n"
    );
}

#[test]
fn list_indexes_documents_parse_back_to_the_same_index() {
    for d in [
        doc! {"key": {"a": 1, "b": -1}, "unique": true},
        doc! {"key": {"t": 1}, "name": "ttl", "expireAfterSeconds": 60, "hidden": false},
        doc! {"key": {"p": 1}, "partialFilterExpression": {"q": {"$gt": 1}}, "v": 1},
        doc! {"key": {"_id": 1}, "name": "_id_"},
    ] {
        let s = spec(d);
        let again = spec(s.document.clone());
        assert_eq!(again.document, s.document);
        assert!(again.equivalent(&s) && again.name == s.name);
        assert_eq!(again.conflict_with(&s), None);
    }
}

#[test]
fn descending_type_brackets() {
    let mut g = Generator::new(99);
    for _ in 0..2000 {
        let v = g.value(2);
        let (lo, _) = type_bracket(&v);
        let k = key_component(&v, Desc);
        let low = invert(&lo);
        assert!(
            low <= k && Some(k.clone()) < prefix_successor(&low),
            "{v:?}"
        );
        assert_eq!(key_component(&v, Asc), encode_key(&v));
    }
}
