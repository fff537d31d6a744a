//! `$setWindowFields` with the manual's examples (cakeSales, stock prices) and its errors.

use crate::query::aggregate::Pipeline;
use bson::{doc, Bson, DateTime, Document};

fn date(s: &str) -> Bson {
    Bson::DateTime(DateTime::parse_rfc3339_str(s).unwrap())
}

fn cake_sales() -> Vec<Document> {
    vec![
        doc! {"_id": 0, "type": "chocolate", "orderDate": date("2020-05-18T14:10:30Z"), "state": "CA", "price": 13, "quantity": 120},
        doc! {"_id": 1, "type": "chocolate", "orderDate": date("2021-03-20T11:30:05Z"), "state": "WA", "price": 14, "quantity": 140},
        doc! {"_id": 2, "type": "vanilla", "orderDate": date("2021-01-11T06:31:15Z"), "state": "CA", "price": 12, "quantity": 145},
        doc! {"_id": 3, "type": "vanilla", "orderDate": date("2020-02-08T13:13:23Z"), "state": "WA", "price": 13, "quantity": 104},
        doc! {"_id": 4, "type": "strawberry", "orderDate": date("2019-05-18T16:09:01Z"), "state": "CA", "price": 41, "quantity": 162},
        doc! {"_id": 5, "type": "strawberry", "orderDate": date("2019-01-08T06:12:03Z"), "state": "WA", "price": 43, "quantity": 134},
    ]
}

fn run(stage: Document, docs: Vec<Document>) -> Result<Vec<Document>, crate::query::QueryError> {
    Pipeline::parse(&[doc! {"$setWindowFields": stage}])?.run(docs)
}

fn column(docs: &[Document], field: &str) -> Vec<(Bson, Bson)> {
    docs.iter()
        .map(|d| {
            (
                d.get("_id").cloned().unwrap_or(Bson::Null),
                d.get(field).cloned().unwrap_or(Bson::Null),
            )
        })
        .collect()
}

fn pairs(items: &[(i32, Bson)]) -> Vec<(Bson, Bson)> {
    items
        .iter()
        .map(|(i, v)| (Bson::Int32(*i), v.clone()))
        .collect()
}

#[test]
fn cumulative_quantity_for_each_state() {
    let out = run(
        doc! {"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {
            "cumulativeQuantityForState": {"$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}}}},
        cake_sales(),
    )
    .unwrap();
    assert_eq!(
        column(&out, "cumulativeQuantityForState"),
        pairs(&[
            (4, 162.into()),
            (0, 282.into()),
            (2, 427.into()),
            (5, 134.into()),
            (3, 238.into()),
            (1, 378.into())
        ])
    );
}

#[test]
fn moving_average_for_each_year() {
    let out = run(
        doc! {"partitionBy": {"$year": "$orderDate"}, "sortBy": {"orderDate": 1}, "output": {
        "averageQuantity": {"$avg": "$quantity", "window": {"documents": [-1, 0]}}}},
        cake_sales(),
    )
    .unwrap();
    assert_eq!(
        column(&out, "averageQuantity"),
        pairs(&[
            (5, 134.0.into()),
            (4, 148.0.into()),
            (3, 104.0.into()),
            (0, 112.0.into()),
            (2, 145.0.into()),
            (1, 142.5.into())
        ])
    );
}

#[test]
fn range_windows_with_a_month_unit() {
    let out = run(
        doc! {"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {
            "recentOrders": {"$push": "$orderDate", "window": {"range": ["unbounded", -10], "unit": "month"}}}},
        cake_sales(),
    )
    .unwrap();
    assert_eq!(
        column(&out, "recentOrders"),
        pairs(&[
            (4, Bson::Array(vec![])),
            (0, Bson::Array(vec![date("2019-05-18T16:09:01Z")])),
            (2, Bson::Array(vec![date("2019-05-18T16:09:01Z")])),
            (5, Bson::Array(vec![])),
            (3, Bson::Array(vec![date("2019-01-08T06:12:03Z")])),
            (
                1,
                Bson::Array(vec![
                    date("2019-01-08T06:12:03Z"),
                    date("2020-02-08T13:13:23Z")
                ])
            ),
        ])
    );
}

#[test]
fn numeric_range_windows() {
    let docs: Vec<Document> = [1, 2, 3, 5, 8]
        .iter()
        .map(|x| doc! {"_id": *x, "x": *x})
        .collect();
    let out = run(
        doc! {"sortBy": {"x": 1}, "output": {"near": {"$push": "$x", "window": {"range": [-2, 1]}}}},
        docs,
    )
    .unwrap();
    let arr = |v: &[i32]| Bson::Array(v.iter().map(|x| Bson::Int32(*x)).collect());
    assert_eq!(
        column(&out, "near"),
        pairs(&[
            (1, arr(&[1, 2])),
            (2, arr(&[1, 2, 3])),
            (3, arr(&[1, 2, 3])),
            (5, arr(&[3, 5])),
            (8, arr(&[8]))
        ])
    );
}

#[test]
fn rank_dense_rank_document_number_and_shift() {
    let out = run(
        doc! {"partitionBy": "$state", "sortBy": {"quantity": -1}, "output": {
        "rank": {"$rank": {}}, "n": {"$documentNumber": {}},
        "next": {"$shift": {"output": "$quantity", "by": 1, "default": "Not available"}}}},
        cake_sales(),
    )
    .unwrap();
    assert_eq!(
        column(&out, "rank"),
        pairs(&[
            (4, 1.into()),
            (2, 2.into()),
            (0, 3.into()),
            (1, 1.into()),
            (5, 2.into()),
            (3, 3.into())
        ])
    );
    assert_eq!(
        column(&out, "next"),
        pairs(&[
            (4, 145.into()),
            (2, 120.into()),
            (0, "Not available".into()),
            (1, 134.into()),
            (5, 104.into()),
            (3, "Not available".into())
        ])
    );
    let ties: Vec<Document> = [5, 5, 7, 9, 9, 9, 10]
        .iter()
        .enumerate()
        .map(|(i, s)| doc! {"_id": i as i32, "s": *s})
        .collect();
    let out = run(
        doc! {"sortBy": {"s": 1}, "output": {"r": {"$rank": {}}, "d": {"$denseRank": {}}}},
        ties,
    )
    .unwrap();
    let ranks: Vec<(Bson, Bson)> = out
        .iter()
        .map(|d| (d.get("r").cloned().unwrap(), d.get("d").cloned().unwrap()))
        .collect();
    let expected: Vec<(Bson, Bson)> = [(1, 1), (1, 1), (3, 2), (4, 3), (4, 3), (4, 3), (7, 4)]
        .iter()
        .map(|(r, d)| (Bson::Int32(*r), Bson::Int32(*d)))
        .collect();
    assert_eq!(ranks, expected);
}

#[test]
fn locf_linear_fill_and_exp_moving_average() {
    let hours = [
        (9, Some(20)),
        (10, None),
        (11, Some(24)),
        (12, None),
        (13, None),
        (14, Some(30)),
    ];
    let docs: Vec<Document> = hours
        .iter()
        .map(|(h, p)| {
            let mut d = doc! {"_id": *h, "time": date(&format!("2021-03-08T{h:02}:00:00Z"))};
            if let Some(p) = p {
                d.insert("price", *p);
            }
            d
        })
        .collect();
    let out = run(doc! {"sortBy": {"time": 1}, "output": {"filled": {"$linearFill": "$price"}, "carried": {"$locf": "$price"}}}, docs).unwrap();
    assert_eq!(
        column(&out, "filled"),
        pairs(&[
            (9, 20.into()),
            (10, 22.0.into()),
            (11, 24.into()),
            (12, 26.0.into()),
            (13, 28.0.into()),
            (14, 30.into())
        ])
    );
    assert_eq!(
        column(&out, "carried"),
        pairs(&[
            (9, 20.into()),
            (10, 20.into()),
            (11, 24.into()),
            (12, 24.into()),
            (13, 24.into()),
            (14, 30.into())
        ])
    );
    let prices = [13.0, 15.4, 12.0, 11.7];
    let docs: Vec<Document> = prices
        .iter()
        .enumerate()
        .map(|(i, p)| doc! {"_id": i as i32, "price": *p})
        .collect();
    let out = run(doc! {"sortBy": {"_id": 1}, "output": {"ema": {"$expMovingAvg": {"input": "$price", "N": 2}}}}, docs).unwrap();
    let ema: Vec<f64> = out.iter().map(|d| d.get_f64("ema").unwrap()).collect();
    for (got, want) in ema
        .iter()
        .zip([13.0, 14.6, 12.866666666666667, 12.088888888888889])
    {
        assert!((got - want).abs() < 1e-9, "{ema:?}");
    }
}

#[test]
fn derivative_and_integral_by_time() {
    let miles = [1295.1, 1295.63, 1296.25, 1296.76];
    let docs: Vec<Document> = miles
        .iter()
        .enumerate()
        .map(|(i, m)| doc! {"_id": i as i32, "t": Bson::DateTime(DateTime::from_millis(1_589_811_030_000 + 30_000 * i as i64)), "miles": *m})
        .collect();
    let out = run(
        doc! {"sortBy": {"t": 1}, "output": {
            "speed": {"$derivative": {"input": "$miles", "unit": "hour"}, "window": {"range": [-30, 0], "unit": "second"}},
            "area": {"$integral": {"input": "$miles", "unit": "second"}, "window": {"documents": [-1, 0]}}}},
        docs.clone(),
    )
    .unwrap();
    assert_eq!(out[0].get("speed"), Some(&Bson::Null));
    let speed = out[1].get_f64("speed").unwrap();
    assert!((speed - 63.60000000002401).abs() < 1e-6, "{speed}");
    let area = out[1].get_f64("area").unwrap();
    assert!(
        (area - 30.0 * (1295.1 + 1295.63) / 2.0).abs() < 1e-6,
        "{area}"
    );
    let err = run(doc! {"sortBy": {"t": 1}, "output": {"s": {"$derivative": {"input": "$miles"}, "window": {"documents": [-1, 0]}}}}, docs.clone()).unwrap_err();
    assert_eq!(err.code, 5624901);
    let err = run(doc! {"sortBy": {"miles": 1}, "output": {"s": {"$integral": {"input": "$miles", "unit": "hour"}}}}, docs).unwrap_err();
    assert_eq!(err.code, 5423901);
}

#[test]
fn parse_errors_match_mongodb() {
    let code = |stage: Document| {
        Pipeline::parse(&[doc! {"$setWindowFields": stage}])
            .unwrap_err()
            .code
    };
    assert_eq!(
        code(
            doc! {"sortBy": {"a": 1}, "output": {"r": {"$rank": {}, "window": {"documents": [0, 1]}}}}
        ),
        5371601
    );
    assert_eq!(code(doc! {"output": {"r": {"$rank": {}}}}), 5371602);
    assert_eq!(
        code(doc! {"sortBy": {"a": 1, "b": 1}, "output": {"r": {"$denseRank": {}}}}),
        5371602
    );
    assert_eq!(
        code(doc! {"sortBy": {"a": 1}, "output": {"r": {"$rank": 1}}}),
        5371603
    );
    assert_eq!(
        code(doc! {"output": {"s": {"$sum": "$a", "window": {"documents": [-1, 0]}}}}),
        5339901
    );
    assert_eq!(
        code(doc! {"output": {"s": {"$sum": "$a", "window": {"range": ["unbounded", "current"]}}}}),
        5339902
    );
    assert_eq!(
        code(
            doc! {"sortBy": {"a": -1}, "output": {"s": {"$sum": "$a", "window": {"range": [-1, 1]}}}}
        ),
        8947401
    );
    assert_eq!(
        code(
            doc! {"sortBy": {"a": 1}, "output": {"s": {"$sum": "$a", "window": {"documents": [1, 0]}}}}
        ),
        5339900
    );
    assert_eq!(
        code(doc! {"sortBy": {"a": 1}, "output": {"s": {"$derivative": {"input": "$a"}}}}),
        9
    );
    assert_eq!(
        code(doc! {"output": {"s": {"$shift": {"output": "$a", "by": 1}}}}),
        9
    );
    assert_eq!(
        code(
            doc! {"sortBy": {"a": 1}, "output": {"s": {"$shift": {"output": "$a", "by": 1}, "window": {"documents": [0, 1]}}}}
        ),
        9
    );
    assert_eq!(
        code(
            doc! {"sortBy": {"a": 1}, "output": {"s": {"$expMovingAvg": {"input": "$a", "N": 2, "alpha": 0.5}}}}
        ),
        9
    );
    assert_eq!(
        code(doc! {"output": {"s": {"$expMovingAvg": {"input": "$a", "N": 2}}}}),
        9
    );
    assert_eq!(code(doc! {"output": {"s": {"$linearFill": "$a"}}}), 605001);
    assert_eq!(
        code(doc! {"partitionBy": {"$literal": []}, "output": {"s": {"$sum": 1}}}),
        14
    );
    assert_eq!(code(doc! {"output": {"s": {"$sum": 1}}, "bogus": 1}), 40415);
    assert_eq!(code(doc! {"sortBy": {"a": 1}}), 40414);
    assert_eq!(code(doc! {"output": {"s": {"$nope": 1}}}), 9);
    assert_eq!(
        code(
            doc! {"sortBy": {"a": 1}, "output": {"s": {"$shift": {"output": "$a", "by": 1, "default": "$a"}}}}
        ),
        9
    );
    let err = run(
        doc! {"partitionBy": "$a", "output": {"s": {"$sum": 1}}},
        vec![doc! {"a": [1]}],
    )
    .unwrap_err();
    assert_eq!(err.code, 14);
    let err = run(
        doc! {"sortBy": {"a": 1}, "output": {"s": {"$sum": 1, "window": {"range": [0, 1]}}}},
        vec![doc! {"a": "x"}],
    )
    .unwrap_err();
    assert_eq!(err.code, 5429414);
}

#[test]
fn decimal_inputs_are_computed_in_decimal() {
    let dec = |s: &str| Bson::Decimal128(s.parse().unwrap());
    // A Decimal128 result, compared by value.
    let value = |out: &[Document], i: usize, field: &str| -> f64 {
        match out[i].get(field) {
            Some(Bson::Decimal128(d)) => crate::query::value::decimal::decimal_to_f64(d),
            other => panic!("{field} of row {i} is not a Decimal128: {other:?}"),
        }
    };
    let docs = vec![
        doc! {"_id": 1, "x": 0, "v": dec("1")},
        doc! {"_id": 2, "x": 1, "v": Bson::Null},
        doc! {"_id": 3, "x": 2, "v": dec("3")},
    ];
    let out = run(
        doc! {"sortBy": {"x": 1}, "output": {
            "ema": {"$expMovingAvg": {"input": "$v", "N": 3}},
            "d": {"$derivative": {"input": "$v"}, "window": {"documents": [-1, 0]}},
            "i": {"$integral": {"input": "$v"}, "window": {"documents": ["unbounded", "current"]}},
            "pop": {"$covariancePop": ["$x", "$v"], "window": {"documents": ["unbounded", "unbounded"]}},
            "samp": {"$covarianceSamp": ["$x", "$v"], "window": {"documents": ["unbounded", "unbounded"]}},
            "fill": {"$linearFill": "$v"},
        }},
        docs,
    )
    .unwrap();
    // alpha = 2 / (3 + 1): 1, (null), 3·0.5 + 1·0.5.
    assert_eq!(value(&out, 0, "ema"), 1.0);
    assert_eq!(out[1].get("ema"), Some(&Bson::Null));
    assert_eq!(value(&out, 2, "ema"), 2.0);
    // The area between (0, 1) and (2, 3); row 2's derivative window holds rows 1 and 2,
    // and row 1 has no number.
    assert_eq!(value(&out, 2, "i"), 4.0);
    assert_eq!(out[2].get("d"), Some(&Bson::Null));
    // Pairs (0, 1) and (2, 3): means 1 and 2, products 1 + 1.
    assert_eq!(value(&out, 0, "pop"), 1.0);
    assert_eq!(value(&out, 0, "samp"), 2.0);
    assert_eq!(value(&out, 1, "fill"), 2.0);
    // Decimal digits, not a double's: 0.1 + 0.2 stays 0.3.
    let tenths = vec![
        doc! {"x": 0, "v": dec("0.1")},
        doc! {"x": 1, "v": dec("0.2")},
        doc! {"x": 2, "v": dec("0.3")},
    ];
    let out = run(
        doc! {"sortBy": {"x": 1}, "output": {
            "d": {"$derivative": {"input": "$v"}, "window": {"documents": [-1, 0]}},
        }},
        tenths,
    )
    .unwrap();
    assert_eq!(out[1].get("d"), Some(&dec("0.1")));
    // Accumulators keep decimals exact, as $group does.
    let docs = vec![doc! {"_id": 1, "v": dec("1.5")}];
    let out = run(doc! {"output": {"s": {"$sum": "$v"}}}, docs).unwrap();
    assert_eq!(out[0].get("s"), Some(&dec("1.5")));
}

#[test]
fn windows_past_the_limit_are_computed_partition_by_partition_from_runs() {
    use crate::interrupt::{BlockingMemory, Interrupt};
    use crate::query::aggregate::Pipeline;
    use bson::{doc, Document};
    let dir = tempfile::tempdir().unwrap();
    let docs: Vec<Document> = (0..240_i32)
        .map(|i| doc! {"_id": i, "p": i % 12, "v": (i * 31) % 17, "pad": "p".repeat(40)})
        .collect();
    let stage = doc! {"$setWindowFields": {
        "partitionBy": "$p",
        "sortBy": {"v": 1},
        "output": {
            "rank": {"$rank": {}},
            "running": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}},
            "around": {"$push": "$_id", "window": {"documents": [-1, 1]}},
        },
    }};
    let pipeline = Pipeline::parse(&[stage]).unwrap();
    let expected = pipeline.run(docs.clone()).unwrap();
    let under = |bytes: usize| {
        let interrupt = Interrupt::new(None);
        interrupt.limit_blocking_memory(BlockingMemory {
            bytes,
            spill_dir: Some(dir.path().into()),
            spool_dir: None,
        });
        interrupt.install(|| pipeline.run(docs.clone()))
    };
    let before = crate::query::spill::totals().sorts;
    // Each partition (20 documents of ~90 bytes) fits 3,000 bytes; the input does not.
    assert_eq!(under(3_000).unwrap(), expected);
    assert!(crate::query::spill::totals().sorts > before);
    // A partition past the limit is windowed in place, with the same result.
    assert_eq!(under(1_000).unwrap(), expected);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn one_partition_past_the_limit_gives_the_same_windows_unless_disk_use_is_refused() {
    use crate::interrupt::{BlockingMemory, Interrupt};
    use crate::query::aggregate::Pipeline;
    use bson::{doc, Document};
    let docs: Vec<Document> = (0..200_i32)
        .map(|i| doc! {"_id": i, "v": (i * 7) % 13, "pad": "p".repeat(40)})
        .collect();
    let without_order = doc! {"$setWindowFields": {
        "output": {"total": {"$sum": "$v"}, "n": {"$count": {}}},
    }};
    let sorted = doc! {"$setWindowFields": {
        "sortBy": {"v": -1},
        "output": {"running": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}}},
    }};
    let dir = tempfile::tempdir().unwrap();
    for stage in [without_order, sorted] {
        let pipeline = Pipeline::parse(&[stage]).unwrap();
        let expected = pipeline.run(docs.clone()).unwrap();
        assert_eq!(expected.len(), 200);
        let under = |spill_dir: Option<std::sync::Arc<std::path::Path>>| {
            let interrupt = Interrupt::new(None);
            interrupt.limit_blocking_memory(BlockingMemory {
                bytes: 1_000,
                spill_dir,
                spool_dir: None,
            });
            interrupt.install(|| pipeline.run(docs.clone()))
        };
        assert_eq!(under(Some(dir.path().into())).unwrap(), expected);
        assert_eq!(under(None).unwrap_err().code, 292);
    }
    let whole =
        Pipeline::parse(&[doc! {"$setWindowFields": {"output": {"total": {"$sum": "$v"}}}}])
            .unwrap()
            .run(docs.clone())
            .unwrap();
    let total: i32 = docs.iter().map(|d| d.get_i32("v").unwrap()).sum();
    assert!(whole.iter().all(|d| d.get_i32("total").ok() == Some(total)));
}
