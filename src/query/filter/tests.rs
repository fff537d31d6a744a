//! Tests of filter parsing and matching: the planner-facing AST shapes, MongoDB's null,
//! array and type-bracketing rules, the cases of MongoDB's own null-semantics test and the
//! examples of the manual's query pages.
//!
//! Not for: production code (compiled only for tests).

mod parsing_and_matching {
    use crate::query::filter::{equality_fields, upsert_seed, FieldPredicate, Filter};
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
    fn let_variables() {
        use crate::query::expr::{bind_variables, parse_with_variables};
        let bound = bind_variables(&doc! {"limit": 5, "name": "$$limit"}).unwrap();
        let parse = |filter: Document| parse_with_variables(&bound, || Filter::parse(&filter));
        let f = parse(doc! {"$expr": {"$gt": ["$a", "$$limit"]}}).unwrap();
        assert!(f.matches(&doc! {"a": 6}));
        assert!(!f.matches(&doc! {"a": 5}));
        // Outside `$expr` a "$$" string is a plain value, and `$literal` keeps it as text.
        let f = parse(doc! {"a": "$$limit"}).unwrap();
        assert!(f.matches(&doc! {"a": "$$limit"}));
        let f = parse(doc! {"$expr": {"$eq": ["$a", {"$literal": "$$limit"}]}}).unwrap();
        assert!(f.matches(&doc! {"a": "$$limit"}));
        // A later variable sees an earlier one.
        let f = parse(doc! {"$expr": {"$eq": ["$a", "$$name"]}}).unwrap();
        assert!(f.matches(&doc! {"a": 5}));
        // An inner `$let`, `$map`, `$filter` or `$reduce` variable shadows the command's.
        let f = parse(
            doc! {"$expr": {"$let": {"vars": {"limit": 1}, "in": {"$eq": ["$a", "$$limit"]}}}},
        )
        .unwrap();
        assert!(f.matches(&doc! {"a": 1}) && !f.matches(&doc! {"a": 5}));
        let f = parse(doc! {"$expr": {"$in": [2, {"$map": {"input": "$xs", "as": "limit", "in": {"$add": ["$$limit", 1]}}}]}})
            .unwrap();
        assert!(f.matches(&doc! {"xs": [1]}));
        // The variables are gone once the parse is over.
        let outside = Filter::parse(&doc! {"$expr": {"$eq": ["$a", "$$limit"]}});
        assert_eq!(outside.unwrap_err().code, 17276);
        assert_eq!(bind_variables(&doc! {"Bad": 1}).unwrap_err().code, 16867);
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
        assert_eq!(Filter::parse(&doc! {"$where": "1"}).unwrap_err().code, 115);
        assert_eq!(
            Filter::parse(&doc! {"a": {"$near": [0, 0]}})
                .unwrap_err()
                .code,
            115
        );
        // Not an operator under a field: MongoDB's "unknown operator".
        assert_eq!(
            Filter::parse(&doc! {"a": {"$where": "1"}})
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
mod null_semantics {
    use crate::query::filter::Filter;
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

/// The examples of the manual's "Query an Array" and "Query an Array of Embedded Documents"
/// pages, with the documents each query returns there.
mod manual_examples {
    use crate::query::filter::Filter;
    use bson::{doc, Document};

    fn inventory() -> Vec<Document> {
        vec![
            doc! {"item": "journal", "qty": 25, "tags": ["blank", "red"], "dim_cm": [14, 21],
            "instock": [{"warehouse": "A", "qty": 5}, {"warehouse": "C", "qty": 15}]},
            doc! {"item": "notebook", "qty": 50, "tags": ["red", "blank"], "dim_cm": [14, 21],
            "instock": [{"warehouse": "C", "qty": 5}]},
            doc! {"item": "paper", "qty": 100, "tags": ["red", "blank", "plain"], "dim_cm": [14, 21],
            "instock": [{"warehouse": "A", "qty": 60}, {"warehouse": "B", "qty": 15}]},
            doc! {"item": "planner", "qty": 75, "tags": ["blank", "red"], "dim_cm": [22.85, 30],
            "instock": [{"warehouse": "A", "qty": 40}, {"warehouse": "B", "qty": 5}]},
            doc! {"item": "postcard", "qty": 45, "tags": ["blue"], "dim_cm": [10, 15.25],
            "instock": [{"warehouse": "B", "qty": 15}, {"warehouse": "C", "qty": 35}]},
        ]
    }

    fn items(filter: Document) -> Vec<String> {
        let f = Filter::parse(&filter).unwrap();
        inventory()
            .into_iter()
            .filter(|d| f.matches(d))
            .map(|d| d.get_str("item").unwrap().to_string())
            .collect()
    }

    #[test]
    fn query_an_array() {
        assert_eq!(items(doc! {"tags": ["red", "blank"]}), ["notebook"]);
        assert_eq!(
            items(doc! {"tags": {"$all": ["red", "blank"]}}),
            ["journal", "notebook", "paper", "planner"]
        );
        assert_eq!(
            items(doc! {"tags": "red"}),
            ["journal", "notebook", "paper", "planner"]
        );
        assert_eq!(items(doc! {"dim_cm": {"$gt": 25}}), ["planner"]);
        assert_eq!(
            items(doc! {"dim_cm": {"$gt": 15, "$lt": 20}}),
            ["journal", "notebook", "paper", "postcard"]
        );
        assert_eq!(
            items(doc! {"dim_cm": {"$elemMatch": {"$gt": 22, "$lt": 30}}}),
            ["planner"]
        );
        assert_eq!(items(doc! {"dim_cm.1": {"$gt": 25}}), ["planner"]);
        assert_eq!(items(doc! {"tags": {"$size": 3}}), ["paper"]);
    }

    #[test]
    fn query_an_array_of_embedded_documents() {
        assert_eq!(
            items(doc! {"instock": {"warehouse": "A", "qty": 5}}),
            ["journal"]
        );
        assert!(items(doc! {"instock": {"qty": 5, "warehouse": "A"}}).is_empty());
        assert_eq!(
            items(doc! {"instock.0.qty": {"$lte": 20}}),
            ["journal", "notebook", "postcard"]
        );
        assert_eq!(
            items(doc! {"instock.qty": {"$lte": 20}}),
            ["journal", "notebook", "paper", "planner", "postcard"]
        );
        assert_eq!(
            items(doc! {"instock": {"$elemMatch": {"qty": 5, "warehouse": "A"}}}),
            ["journal"]
        );
        assert_eq!(
            items(doc! {"instock": {"$elemMatch": {"qty": {"$gt": 10, "$lte": 20}}}}),
            ["journal", "paper", "postcard"]
        );
        assert_eq!(
            items(doc! {"instock.qty": {"$gt": 10, "$lte": 20}}),
            ["journal", "paper", "planner", "postcard"]
        );
        assert_eq!(
            items(doc! {"instock.qty": 5, "instock.warehouse": "A"}),
            ["journal", "planner"]
        );
    }
}
