//! Document tests on every backend: inserts with conflicts, lossless round trip, scans and
//! their pushdown predicates, count, replace, delete. Where PostgreSQL's jsonpath pushdown is
//! tighter than SQLite's (arrays along the path are traversed, not returned wholesale; `true`
//! is not `1`; quoted components are escaped), its expected sets are smaller but still
//! contain every true match.

use bson::spec::BinarySubtype;
use bson::{doc, oid::ObjectId, Binary, Bson, DateTime, Decimal128, Regex, Timestamp};

use super::super::{KeyOrder, PathValue, Predicate, ScanRequest, StoredDocument};
use super::{backends, create, keys_of, ok, stored, BackendKind};

fn scan_req(filter: Predicate) -> ScanRequest {
    ScanRequest {
        filter,
        ..ScanRequest::all()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_unordered_reports_every_conflict() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        ok(s.insert(&coll, &[stored("b", doc! {"v": "old"})], false)
            .await);
        let batch = [
            stored("a", doc! {"v": 0}),
            stored("b", doc! {"v": 1}), // exists
            stored("c", doc! {"v": 2}),
            stored("a", doc! {"v": 3}), // repeats index 0
            stored("d", doc! {"v": 4}),
        ];
        let out = ok(s.insert(&coll, &batch, false).await);
        assert_eq!(out.conflicts, vec![1, 3]);
        assert_eq!(out.inserted, 3);
        let all = ok(s.scan(&coll, &ScanRequest::all()).await);
        assert_eq!(keys_of(&all), ["b", "a", "c", "d"]);
        // The first occurrence of "a" won, and "b" kept its old body.
        assert_eq!(all[1], batch[0].bson);
        assert_eq!(all[0], stored("b", doc! {"v": "old"}).bson);
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_ordered_stops_at_first_conflict() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "c").await;
        ok(s.insert(&coll, &[stored("x", doc! {})], true).await);
        let batch = [
            stored("a", doc! {}),
            stored("b", doc! {}),
            stored("x", doc! {}),
            stored("c", doc! {}),
        ];
        let out = ok(s.insert(&coll, &batch, true).await);
        assert_eq!((out.conflicts, out.inserted), (vec![2], 2));
        assert_eq!(
            keys_of(&ok(s.scan(&coll, &ScanRequest::all()).await)),
            ["x", "a", "b"]
        );

        // A repeat inside the batch, and a conflict at index 0.
        let batch = [
            stored("d", doc! {}),
            stored("d", doc! {}),
            stored("e", doc! {}),
        ];
        let out = ok(s.insert(&coll, &batch, true).await);
        assert_eq!((out.conflicts, out.inserted), (vec![1], 1));
        let out = ok(s
            .insert(&coll, &[stored("a", doc! {}), stored("f", doc! {})], true)
            .await);
        assert_eq!((out.conflicts, out.inserted), (vec![0], 0));
        assert_eq!(
            keys_of(&ok(s.scan(&coll, &ScanRequest::all()).await)),
            ["x", "a", "b", "d"]
        );
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_batches_span_several_statements() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "big").await;
        let mut docs: Vec<StoredDocument> = (0..1000)
            .map(|i| stored(&format!("k{i:05}"), doc! {"i": i}))
            .collect();
        docs[700] = stored("k00003", doc! {}); // repeats index 3, in a later chunk
        let out = ok(s.insert(&coll, &docs, false).await);
        assert_eq!((out.conflicts.clone(), out.inserted), (vec![700], 999));
        let mut more: Vec<StoredDocument> = (1000..1600)
            .map(|i| stored(&format!("k{i:05}"), doc! {"i": i}))
            .collect();
        more[550] = stored("k00010", doc! {});
        let out = ok(s.insert(&coll, &more, true).await);
        assert_eq!((out.conflicts, out.inserted), (vec![550], 550));
        assert_eq!(ok(s.count(&coll, &Predicate::True).await), 999 + 550);
        // Many keys: KeyIn above the inline limit, and delete across chunks.
        let keys: Vec<Vec<u8>> = (0..1600).map(|i| format!("k{i:05}").into_bytes()).collect();
        let found = ok(s
            .scan(&coll, &scan_req(Predicate::KeyIn(keys[600..800].to_vec())))
            .await);
        assert_eq!(found.len(), 199); // k00700 was a conflict
        assert_eq!(ok(s.delete(&coll, &keys).await), 999 + 550);
        assert_eq!(ok(s.count(&coll, &Predicate::True).await), 0);
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bson_type_round_trips_byte_for_byte() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "types").await;
        let dec: Decimal128 = ok("1234.5678E-3".parse());
        let body = doc! {
            "z_first": 1, "oid": ObjectId::from_bytes([7; 12]),
            "date": DateTime::from_millis(-1_234_567), "i32": -5, "i64": i64::MIN, "dbl": 5.0,
            "negzero": -0.0, "nan": f64::NAN, "inf": f64::INFINITY, "ninf": f64::NEG_INFINITY,
            "dec": dec,
            "bin0": Binary { subtype: BinarySubtype::Generic, bytes: vec![0, 1, 2] },
            "uuid": Binary { subtype: BinarySubtype::Uuid, bytes: vec![9; 16] },
            "user": Binary { subtype: BinarySubtype::UserDefined(0x80), bytes: vec![] },
            "re": Regex { pattern: ok("^a.*b$".try_into()), options: ok("im".try_into()) },
            "ts": Timestamp { time: 7, increment: 9 },
            "min": Bson::MinKey, "max": Bson::MaxKey, "null": Bson::Null, "undef": Bson::Undefined,
            "code": Bson::JavaScriptCode("x()".into()), "sym": Bson::Symbol("s".into()),
            "nested": [[1, [2, [3]]], {"b": 1, "a": 2}, []], "a_last": "é\u{0}\"\\",
            "with.dot": 1, "$dollar": 2, "": 3,
        };
        let doc = stored("t", body);
        ok(s.insert(&coll, std::slice::from_ref(&doc), true).await);
        let back = ok(s
            .scan(&coll, &scan_req(Predicate::KeyEquals(b"t".to_vec())))
            .await);
        assert_eq!(back, vec![doc.bson.clone()]);
        // And after a replace with another body.
        let doc2 = stored(
            "t",
            doc! {"nan": f64::NAN, "neg": -0.0, "k": {"y": 1, "x": 2}},
        );
        assert_eq!(ok(s.replace(&coll, std::slice::from_ref(&doc2)).await), 1);
        assert_eq!(
            ok(s.scan(&coll, &ScanRequest::all()).await),
            vec![doc2.bson]
        );
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_predicates_orders_and_paging() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "keys").await;
        let docs: Vec<_> = ["c", "a", "e", "b", "d"]
            .iter()
            .map(|k| stored(k, doc! {}))
            .collect();
        ok(s.insert(&coll, &docs, true).await);
        let scan = |filter, order, skip, limit| ScanRequest {
            order_index: None,
            filter,
            order,
            skip,
            limit,
        };
        let got = ok(s.scan(&coll, &scan(Predicate::True, None, 0, None)).await);
        assert_eq!(keys_of(&got), ["c", "a", "e", "b", "d"]);
        let asc = Some(KeyOrder::Ascending);
        let desc = Some(KeyOrder::Descending);
        assert_eq!(
            keys_of(&ok(s
                .scan(&coll, &scan(Predicate::True, asc, 1, Some(2)))
                .await)),
            ["b", "c"]
        );
        assert_eq!(
            keys_of(&ok(s
                .scan(&coll, &scan(Predicate::True, desc, 0, Some(2)))
                .await)),
            ["e", "d"]
        );
        assert_eq!(
            keys_of(&ok(s
                .scan(&coll, &scan(Predicate::True, None, 3, None))
                .await)),
            ["b", "d"]
        );
        let k = |s: &str| s.as_bytes().to_vec();
        let one = scan(Predicate::KeyEquals(k("e")), None, 0, None);
        assert_eq!(keys_of(&ok(s.scan(&coll, &one).await)), ["e"]);
        let missing = scan(Predicate::KeyEquals(k("zz")), None, 0, None);
        assert!(ok(s.scan(&coll, &missing).await).is_empty());
        let some = scan(
            Predicate::KeyIn(vec![k("d"), k("a"), k("zz"), k("a")]),
            None,
            0,
            None,
        );
        assert_eq!(keys_of(&ok(s.scan(&coll, &some).await)), ["a", "d"]);
        assert_eq!(ok(s.count(&coll, &Predicate::KeyIn(vec![])).await), 0);
        let either = Predicate::Or(vec![
            Predicate::KeyEquals(k("b")),
            Predicate::KeyEquals(k("c")),
        ]);
        assert_eq!(ok(s.count(&coll, &either).await), 2);
        let both = Predicate::And(vec![either, Predicate::KeyIn(vec![k("c"), k("d")])]);
        assert_eq!(
            keys_of(&ok(s.scan(&coll, &scan(both, None, 0, None)).await)),
            ["c"]
        );
        assert_eq!(ok(s.count(&coll, &Predicate::And(vec![])).await), 5);
        assert_eq!(ok(s.count(&coll, &Predicate::Or(vec![])).await), 0);
        drop((s, store));
        backend.finish().await;
    }
}

fn path_eq(path: &[&str], value: PathValue) -> Predicate {
    Predicate::PathEquals {
        path: path.iter().map(|p| p.to_string()).collect(),
        value,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_equals_returns_a_superset_of_matches() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "paths").await;
        let docs = [
            stored("str", doc! {"a": "x"}),
            stored("str_other", doc! {"a": "y"}),
            stored("int5", doc! {"a": 5}),
            stored("dbl5", doc! {"a": 5.0}),
            stored("long5", doc! {"a": 5i64}),
            stored("dec5", doc! {"a": Bson::Decimal128(ok("5.00".parse()))}),
            stored("str5", doc! {"a": "5"}),
            stored("six", doc! {"a": 6}),
            stored("nested", doc! {"a": {"b": {"c": "deep"}}}),
            stored("nested_other", doc! {"a": {"b": {"c": "shallow"}}}),
            stored("arr_mid", doc! {"a": [{"b": {"c": "deep"}}]}),
            stored("arr_end", doc! {"a": {"b": {"c": ["deep"]}}}),
            stored("arr_top", doc! {"a": [5, 6]}),
            stored("bool", doc! {"a": true}),
            stored("oid", doc! {"a": ObjectId::from_bytes([5; 12])}),
            stored("quote", doc! {"it's": "q"}),
        ];
        ok(s.insert(&coll, &docs, true).await);
        let find = |p| scan_req(p);
        let got = keys_of(&ok(s
            .scan(&coll, &find(path_eq(&["a"], PathValue::String("x".into()))))
            .await));
        // Oracle's lax SQL/JSON paths traverse arrays like PostgreSQL's jsonpath.
        let pg = backend.kind != BackendKind::Sqlite;
        if pg {
            assert_eq!(got, ["str"]);
        } else {
            assert_eq!(got, ["str", "arr_mid", "arr_top"]);
        }
        // 5, 5.0, 5L and decimal 5.00 compare numerically; [5, 6] contains 5.
        let got = keys_of(&ok(s
            .scan(&coll, &find(path_eq(&["a"], PathValue::Number(5.0))))
            .await));
        if pg {
            assert_eq!(got, ["int5", "dbl5", "long5", "dec5", "arr_top"]);
        } else {
            assert_eq!(got, ["int5", "dbl5", "long5", "dec5", "arr_mid", "arr_top"]);
        }
        // Arrays anywhere along the path are traversed (PostgreSQL) or returned (SQLite).
        let deep = path_eq(&["a", "b", "c"], PathValue::String("deep".into()));
        let got = keys_of(&ok(s.scan(&coll, &find(deep.clone())).await));
        if pg {
            assert_eq!(got, ["nested", "arr_mid", "arr_end"]);
            assert_eq!(ok(s.count(&coll, &deep).await), 3);
        } else {
            assert_eq!(got, ["nested", "arr_mid", "arr_end", "arr_top"]);
            assert_eq!(ok(s.count(&coll, &deep).await), 4);
        }
        let got = keys_of(&ok(s
            .scan(&coll, &find(path_eq(&["a"], PathValue::Bool(true))))
            .await));
        if pg {
            assert_eq!(got, ["bool"]);
        } else {
            assert_eq!(got, ["arr_mid", "arr_top", "bool"]);
        }
        let got = keys_of(&ok(s
            .scan(
                &coll,
                &find(path_eq(&["it's"], PathValue::String("q".into()))),
            )
            .await));
        assert_eq!(got, ["quote"]);
        // Quotes and backslashes in components are escaped in PostgreSQL's jsonpath and
        // select everything on SQLite; non-finite numbers select everything.
        let all = docs.len();
        let quoted = ok(s
            .scan(&coll, &find(path_eq(&["a\"b"], PathValue::Number(1.0))))
            .await);
        if pg {
            assert!(quoted.is_empty());
        } else {
            assert_eq!(quoted.len(), all);
        }
        assert_eq!(
            ok(
                s.scan(&coll, &find(path_eq(&["a"], PathValue::Number(f64::NAN))))
                    .await
            )
            .len(),
            all
        );
        // The object image of an ObjectId never equals its hex string.
        let hex = ObjectId::from_bytes([5; 12]).to_hex();
        let got = keys_of(&ok(s
            .scan(&coll, &find(path_eq(&["a"], PathValue::String(hex))))
            .await));
        if pg {
            assert!(got.is_empty(), "{got:?}");
        } else {
            assert_eq!(got, ["arr_mid", "arr_top"]);
        }
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_and_delete_by_key() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "rd").await;
        ok(s.insert(
            &coll,
            &[stored("a", doc! {"v": 1}), stored("b", doc! {"v": 1})],
            true,
        )
        .await);
        let new_a = stored("a", doc! {"v": 2});
        let written = ok(s
            .replace(&coll, &[new_a.clone(), stored("zz", doc! {})])
            .await);
        assert_eq!(written, 1);
        let by_v = path_eq(&["v"], PathValue::Number(2.0));
        assert_eq!(ok(s.scan(&coll, &scan_req(by_v)).await), vec![new_a.bson]);
        // Natural order is unchanged by a replace.
        assert_eq!(
            keys_of(&ok(s.scan(&coll, &ScanRequest::all()).await)),
            ["a", "b"]
        );
        assert_eq!(
            ok(s.delete(&coll, &[b"a".to_vec(), b"zz".to_vec()]).await),
            1
        );
        assert_eq!(ok(s.delete(&coll, &[]).await), 0);
        assert_eq!(
            keys_of(&ok(s.scan(&coll, &ScanRequest::all()).await)),
            ["b"]
        );
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_bson_is_refused_and_writes_nothing() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "bad").await;
        let bad = StoredDocument {
            index_keys: Vec::new(),
            key: b"bad".to_vec(),
            bson: vec![9, 0, 0, 0, 2, 0],
        };
        assert!(s
            .insert(&coll, &[stored("ok", doc! {}), bad], false)
            .await
            .is_err());
        assert_eq!(ok(s.count(&coll, &Predicate::True).await), 0);
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_equals_edge_cases() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "edges").await;
        let big = (1i64 << 53) + 1;
        let docs = [
            stored("big", doc! {"n": big}),
            stored("min", doc! {"n": i64::MIN}),
            stored("negzero", doc! {"n": -0.0}),
            stored(
                "odd_keys",
                doc! {"é t": {"a.b": "v", "x[0]": "w", "$d": "z"}},
            ),
            stored("nan", doc! {"n": f64::NAN}),
            stored("nul", doc! {"z": "a\u{0}b"}),
        ];
        ok(s.insert(&coll, &docs, true).await);
        let n = |v: f64| scan_req(path_eq(&["n"], PathValue::Number(v)));
        // Beyond 2^53 the planner's double and the image's double round alike.
        assert_eq!(keys_of(&ok(s.scan(&coll, &n(big as f64)).await)), ["big"]);
        assert_eq!(
            keys_of(&ok(s.scan(&coll, &n(i64::MIN as f64)).await)),
            ["min"]
        );
        assert_eq!(keys_of(&ok(s.scan(&coll, &n(0.0)).await)), ["negzero"]);
        for (field, value) in [("a.b", "v"), ("x[0]", "w"), ("$d", "z")] {
            let p = path_eq(&["é t", field], PathValue::String(value.into()));
            assert_eq!(
                keys_of(&ok(s.scan(&coll, &scan_req(p)).await)),
                ["odd_keys"],
                "{field}"
            );
        }
        let p = path_eq(&["é t", "a.b"], PathValue::String("w".into()));
        assert!(ok(s.scan(&coll, &scan_req(p)).await).is_empty());
        // U+0000 cannot be in jsonb; strings holding it are still found.
        let p = path_eq(&["z"], PathValue::String("a\u{0}b".into()));
        assert_eq!(keys_of(&ok(s.scan(&coll, &scan_req(p)).await)), ["nul"]);
        // Empty path: nothing to compare, everything is returned.
        assert_eq!(
            ok(s.count(&coll, &path_eq(&[], PathValue::Bool(true))).await),
            6
        );
        drop((s, store));
        backend.finish().await;
    }
}

/// Ranges on unindexed paths (`Predicate::PathRange`) as the planner pushes them: every
/// document the MongoDB filter matches comes back, whatever its number type (longs past
/// 2^53, decimals, NaN, infinities), with arrays along the path, and for dates; strings,
/// booleans, null and missing values do not, so the scan narrows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_ranges_return_a_superset_of_matches() {
    use crate::query::planner::ReadPlan;
    use crate::query::Filter;
    let dec = |s: &str| Bson::Decimal128(ok(s.parse::<Decimal128>()));
    let docs = [
        ("three", doc! {"a": 3}),
        ("five", doc! {"a": 5}),
        ("seven", doc! {"a": 7}),
        ("five_half", doc! {"a": 5.5}),
        ("long5", doc! {"a": 5i64}),
        ("dec5", doc! {"a": dec("5.00")}),
        ("dec_huge", doc! {"a": dec("1E+400")}),
        ("dec_nan", doc! {"a": dec("NaN")}),
        ("past_2_53", doc! {"a": (1i64 << 53) + 1}),
        ("nan", doc! {"a": f64::NAN}),
        ("inf", doc! {"a": f64::INFINITY}),
        ("neg_inf", doc! {"a": f64::NEG_INFINITY}),
        ("str5", doc! {"a": "5"}),
        ("str", doc! {"a": "abc"}),
        ("bool", doc! {"a": true}),
        ("null", doc! {"a": Bson::Null}),
        ("missing", doc! {"b": 6}),
        ("array", doc! {"a": [1, 9]}),
        ("nested_array", doc! {"a": [[6]]}),
        ("array_of_docs", doc! {"a": [{"b": 6}, {"b": 2}]}),
        ("sub", doc! {"a": {"b": 6}}),
        ("early", doc! {"a": DateTime::from_millis(1_000)}),
        ("late", doc! {"a": DateTime::from_millis(5_000)}),
    ];
    let filters = [
        doc! {"a": {"$gt": 5}},
        doc! {"a": {"$gte": 5}},
        doc! {"a": {"$lt": 5}},
        doc! {"a": {"$lte": 5.0}},
        doc! {"a": {"$gt": 5, "$lt": 8}},
        doc! {"a": {"$gt": 1i64 << 53}},
        doc! {"a": {"$gt": 1e300}},
        doc! {"a": {"$lt": -1e300}},
        doc! {"a.b": {"$gte": 6}},
        doc! {"a": {"$gte": DateTime::from_millis(2_000)}},
        doc! {"a": {"$lt": DateTime::from_millis(2_000)}},
    ];
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "ranges").await;
        let stored_docs: Vec<_> = docs.iter().map(|(k, d)| stored(k, d.clone())).collect();
        ok(s.insert(&coll, &stored_docs, true).await);
        for filter in &filters {
            let parsed = ok(Filter::parse(filter));
            let plan = ReadPlan::new(parsed.clone(), None, 0, None, crate::catalog::NO_INDEXES);
            assert!(
                format!("{:?}", plan.scan.filter).contains("PathRange"),
                "{filter}: not pushed: {:?}",
                plan.scan.filter
            );
            let got = keys_of(&ok(s.scan(&coll, &plan.scan).await));
            for (key, d) in &docs {
                let mut whole = doc! {"_id": *key};
                whole.extend(d.clone());
                if parsed.matches(&whole) {
                    assert!(
                        got.iter().any(|g| g == key),
                        "{filter}: {key} missed: {got:?}"
                    );
                }
            }
            for never in ["str5", "str", "bool", "null", "missing"] {
                assert!(
                    !got.iter().any(|g| g == never),
                    "{filter}: {never} selected"
                );
            }
        }
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_or_stays_within_backend_limits() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "huge").await;
        let docs: Vec<_> = (0..100)
            .map(|i| {
                stored(
                    &format!("{i:03}"),
                    doc! {"n": i, "s": format!("v{i}"), "b": i == 7},
                )
            })
            .collect();
        ok(s.insert(&coll, &docs, true).await);
        // 31,000 operands: more than SQLite's bound-value limit and expression depth, far
        // more than PostgreSQL's stack depth allows unbalanced.
        let mut parts = Vec::new();
        for i in 0..10_000 {
            parts.push(path_eq(
                &["n"],
                PathValue::Number(f64::from(i) * 10.0 + 0.5),
            ));
            parts.push(path_eq(&["s"], PathValue::String(format!("w{i}"))));
            parts.push(Predicate::KeyEquals(format!("x{i}").into_bytes()));
            if i % 10 == 0 {
                // 1,000 operands that cannot be merged: still deeper than 1000 if unbalanced.
                parts.push(Predicate::And(vec![
                    Predicate::True,
                    Predicate::KeyEquals(vec![0]),
                ]));
            }
        }
        // The true matches: n = 3 (as 3.0), s = "v5", key "009", b = true (as 1).
        parts.push(path_eq(&["n"], PathValue::Number(3.0)));
        parts.push(path_eq(&["s"], PathValue::String("v5".into())));
        parts.push(Predicate::KeyIn(vec![b"009".to_vec()]));
        parts.push(path_eq(&["b"], PathValue::Bool(true)));
        let or = Predicate::Or(parts);
        let got = keys_of(&ok(s.scan(&coll, &scan_req(or.clone())).await));
        assert_eq!(got, ["003", "005", "007", "009"]);
        assert_eq!(ok(s.count(&coll, &or).await), 4);
        // A deep And of many operands.
        let and = Predicate::And((0..5_000).map(|_| Predicate::True).collect());
        assert_eq!(ok(s.count(&coll, &and).await), 100);
        // Strings never equal numbers through the merged IN.
        let mixed = Predicate::Or(vec![
            path_eq(&["s"], PathValue::Number(5.0)),
            path_eq(&["s"], PathValue::Bool(true)),
            path_eq(&["n"], PathValue::String("5".into())),
            path_eq(&["n"], PathValue::String("3".into())),
        ]);
        assert_eq!(ok(s.count(&coll, &mixed).await), 0);
        drop((s, store));
        backend.finish().await;
    }
}
