//! Tests of the aggregation expression operators of `expr/ops/more.rs` and `expr/ops/convert.rs`
//! through parsed expressions.
//!
//! Not for: production code (compiled only for tests).

mod more_operators {
    use crate::query::expr::Expression;
    use bson::{doc, Bson, Document};

    fn e(expr: Document, d: Document) -> Bson {
        Expression::parse(&Bson::Document(expr))
            .unwrap()
            .evaluate(&d)
            .unwrap()
    }

    #[test]
    fn math_string_array_object() {
        let d = doc! {"x": 2.345, "s": "  hi  ", "arr": [1, 2, 3], "o": {"a": 1}};
        assert_eq!(e(doc! {"$round": ["$x", 2]}, d.clone()), Bson::Double(2.34));
        assert_eq!(e(doc! {"$round": [2.5, 0]}, d.clone()), Bson::Double(2.0));
        assert_eq!(e(doc! {"$pow": [2, 10]}, d.clone()), Bson::Int32(1024));
        let dec = |s: &str| Bson::Decimal128(s.parse().unwrap());
        assert_eq!(
            e(doc! {"$round": [dec("1.2000"), 2]}, d.clone()),
            dec("1.20")
        );
        assert_eq!(
            e(doc! {"$round": [dec("1.2345"), 2]}, d.clone()),
            dec("1.23")
        );
        assert_eq!(e(doc! {"$round": [dec("123"), 2]}, d.clone()), dec("123"));
        assert_eq!(e(doc! {"$round": [dec("2.5"), 0]}, d.clone()), dec("2"));
        assert_eq!(e(doc! {"$sqrt": 16}, d.clone()), Bson::Double(4.0));
        assert_eq!(
            e(doc! {"$trim": {"input": "$s"}}, d.clone()),
            Bson::String("hi".into())
        );
        assert_eq!(
            e(doc! {"$ltrim": {"input": "xxhix", "chars": "x"}}, d.clone()),
            Bson::String("hix".into())
        );
        assert_eq!(
            e(doc! {"$substr": ["hello", 1, 3]}, d.clone()),
            Bson::String("ell".into())
        );
        assert_eq!(
            e(doc! {"$indexOfCP": ["hello", "l"]}, d.clone()),
            Bson::Int32(2)
        );
        assert_eq!(
            e(doc! {"$strcasecmp": ["ABC", "abc"]}, d.clone()),
            Bson::Int32(0)
        );
        assert_eq!(
            e(
                doc! {"$regexMatch": {"input": "Hello", "regex": "^h", "options": "i"}},
                d.clone()
            ),
            Bson::Boolean(true)
        );
        assert_eq!(
            e(
                doc! {"$sortArray": {"input": [3, 1, 2], "sortBy": -1}},
                d.clone()
            ),
            Bson::Array(vec![3.into(), 2.into(), 1.into()])
        );
        assert_eq!(
            e(
                doc! {"$sortArray": {"input": [{"k": 2}, {"k": 1}], "sortBy": {"k": 1}}},
                d.clone()
            ),
            Bson::Array(vec![
                Bson::Document(doc! {"k": 1}),
                Bson::Document(doc! {"k": 2})
            ])
        );
        assert_eq!(
            e(doc! {"$reverseArray": "$arr"}, d.clone()),
            Bson::Array(vec![3.into(), 2.into(), 1.into()])
        );
        assert_eq!(
            e(doc! {"$range": [0, 6, 2]}, d.clone()),
            Bson::Array(vec![0.into(), 2.into(), 4.into()])
        );
        assert_eq!(
            e(doc! {"$slice": ["$arr", -2]}, d.clone()),
            Bson::Array(vec![2.into(), 3.into()])
        );
        assert_eq!(
            e(doc! {"$slice": ["$arr", 1, 1]}, d.clone()),
            Bson::Array(vec![2.into()])
        );
        assert_eq!(
            e(doc! {"$indexOfArray": ["$arr", 3]}, d.clone()),
            Bson::Int32(2)
        );
        assert_eq!(
            e(doc! {"$setUnion": [[1, 2], [2, 3]]}, d.clone()),
            Bson::Array(vec![1.into(), 2.into(), 3.into()])
        );
        assert_eq!(
            e(doc! {"$setIntersection": [[1, 2], [2, 3]]}, d.clone()),
            Bson::Array(vec![2.into()])
        );
        assert_eq!(
            e(doc! {"$setEquals": [[1, 2], [2, 1, 1]]}, d.clone()),
            Bson::Boolean(true)
        );
        assert_eq!(
            e(doc! {"$mergeObjects": ["$o", {"b": 2}, null]}, d.clone()),
            Bson::Document(doc! {"a": 1, "b": 2})
        );
        assert_eq!(
            e(doc! {"$objectToArray": "$o"}, d.clone()),
            Bson::Array(vec![Bson::Document(doc! {"k": "a", "v": 1})])
        );
        assert_eq!(
            e(doc! {"$arrayToObject": [[["k1", 1]]]}, d.clone()),
            Bson::Document(doc! {"k1": 1})
        );
        assert_eq!(
            e(doc! {"$getField": {"field": "a", "input": "$o"}}, d.clone()),
            Bson::Int32(1)
        );
        assert_eq!(
            e(
                doc! {"$year": {"date": {"$toDate": 0}, "timezone": "UTC"}},
                d.clone()
            ),
            Bson::Int32(1970)
        );
        assert_eq!(
            e(doc! {"$convert": {"input": "12", "to": "int"}}, d.clone()),
            Bson::Int32(12)
        );
        assert_eq!(
            e(
                doc! {"$convert": {"input": "x", "to": "int", "onError": -1}},
                d.clone()
            ),
            Bson::Int32(-1)
        );
        assert_eq!(
            e(
                doc! {"$convert": {"input": "$nope", "to": "int", "onNull": 0}},
                d.clone()
            ),
            Bson::Int32(0)
        );
        assert_eq!(
            e(
                doc! {"$dateToString": {"format": "%Y/%m", "date": {"$toDate": 0}}},
                d
            ),
            Bson::String("1970/01".into())
        );
    }
}

mod set_operators {
    use crate::query::expr::ops::apply_more as apply;
    use crate::query::expr::ops::more::MoreOperator;
    use crate::query::value::compare::{identical, values_equal};
    use crate::query::value::test_values::Generator;
    use bson::{Bson, Decimal128};

    fn dec(s: &str) -> Bson {
        Bson::Decimal128(s.parse::<Decimal128>().unwrap())
    }

    fn run(op: MoreOperator, sets: &[Vec<Bson>]) -> Bson {
        let args: Vec<Option<Bson>> = sets.iter().map(|s| Some(Bson::Array(s.clone()))).collect();
        apply(op, &args).unwrap().unwrap()
    }

    /// The scan-based definitions the hashed operators must agree with.
    fn reference(op: MoreOperator, sets: &[Vec<Bson>]) -> Bson {
        let dedup = |items: &[Bson]| {
            let mut out: Vec<Bson> = Vec::new();
            for item in items {
                if !out.iter().any(|x| values_equal(x, item)) {
                    out.push(item.clone());
                }
            }
            out
        };
        let contains = |set: &[Bson], v: &Bson| set.iter().any(|x| values_equal(x, v));
        let sets: Vec<Vec<Bson>> = sets.iter().map(|s| dedup(s)).collect();
        match op {
            MoreOperator::SetUnion => Bson::Array(dedup(&sets.concat())),
            MoreOperator::SetIntersection => Bson::Array(
                sets[0]
                    .iter()
                    .filter(|v| sets.iter().all(|s| contains(s, v)))
                    .cloned()
                    .collect(),
            ),
            MoreOperator::SetDifference => Bson::Array(
                sets[0]
                    .iter()
                    .filter(|v| !contains(&sets[1], v))
                    .cloned()
                    .collect(),
            ),
            MoreOperator::SetIsSubset => {
                Bson::Boolean(sets[0].iter().all(|v| contains(&sets[1], v)))
            }
            _ => Bson::Boolean(sets.windows(2).all(|w| {
                w[0].iter().all(|v| contains(&w[1], v)) && w[1].iter().all(|v| contains(&w[0], v))
            })),
        }
    }

    #[test]
    fn numeric_equality_keeps_first_occurrence() {
        let a = vec![Bson::Int32(1), Bson::Double(2.0)];
        let b = vec![Bson::Int64(2), Bson::Int32(3)];
        assert_eq!(
            run(MoreOperator::SetUnion, &[a.clone(), b.clone()]),
            Bson::Array(vec![Bson::Int32(1), Bson::Double(2.0), Bson::Int32(3)])
        );
        assert_eq!(
            run(MoreOperator::SetIntersection, &[b.clone(), a.clone()]),
            Bson::Array(vec![Bson::Int64(2)])
        );
        assert_eq!(
            run(MoreOperator::SetDifference, &[a.clone(), b.clone()]),
            Bson::Array(vec![Bson::Int32(1)])
        );
        let zeros = vec![Bson::Double(-0.0), Bson::Double(f64::NAN), dec("1.0")];
        let others = vec![dec("NaN"), Bson::Int32(0), Bson::Int64(1), Bson::Int32(0)];
        assert_eq!(
            run(MoreOperator::SetEquals, &[zeros.clone(), others.clone()]),
            Bson::Boolean(true)
        );
        assert_eq!(
            run(MoreOperator::SetIsSubset, &[others.clone(), zeros.clone()]),
            Bson::Boolean(true)
        );
        let union = run(MoreOperator::SetUnion, &[others, zeros]);
        let expected = Bson::Array(vec![dec("NaN"), Bson::Int32(0), Bson::Int64(1)]);
        assert!(identical(&union, &expected), "{union:?}");
        assert_eq!(
            run(MoreOperator::SetIsSubset, &[a, b]),
            Bson::Boolean(false)
        );
    }

    #[test]
    fn agree_with_the_scanning_definitions() {
        let mut generator = Generator::new(0x5851_f42d_4c95_7f2d);
        let ops = [
            MoreOperator::SetUnion,
            MoreOperator::SetIntersection,
            MoreOperator::SetDifference,
            MoreOperator::SetIsSubset,
            MoreOperator::SetEquals,
        ];
        for round in 0..2_000 {
            let op = ops[round % ops.len()];
            let count = match op {
                MoreOperator::SetDifference | MoreOperator::SetIsSubset => 2,
                _ => 1 + generator.below(3) as usize,
            };
            // Few distinct leaves, so that sets overlap and the equality rules matter.
            let sets: Vec<Vec<Bson>> = (0..count)
                .map(|_| {
                    (0..generator.below(6))
                        .map(|_| generator.leaf())
                        .collect::<Vec<_>>()
                })
                .collect();
            let (got, want) = (run(op, &sets), reference(op, &sets));
            // `identical`: same values, types and order (and NaN, which is not `==` itself).
            assert!(
                identical(&got, &want),
                "{op:?} {sets:?}: {got:?} vs {want:?}"
            );
        }
    }
}
