//! `$densify` and `$fill` with the manual's examples (weather, coffee, restaurant reviews).

use crate::query::aggregate::Pipeline;
use bson::{doc, Bson, DateTime, Document};

fn date(s: &str) -> Bson {
    Bson::DateTime(DateTime::parse_rfc3339_str(s).unwrap())
}

fn run(stage: Document, docs: Vec<Document>) -> Result<Vec<Document>, crate::query::QueryError> {
    Pipeline::parse(&[stage])?.run(docs)
}

fn coffee() -> Vec<Document> {
    vec![
        doc! {"altitude": 600, "variety": "Arabica Typica", "score": 68.3},
        doc! {"altitude": 750, "variety": "Arabica Typica", "score": 69.5},
        doc! {"altitude": 950, "variety": "Arabica Typica", "score": 70.5},
        doc! {"altitude": 1250, "variety": "Gesha", "score": 88.15},
        doc! {"altitude": 1700, "variety": "Gesha", "score": 95.5, "price": 1029},
    ]
}

fn by_variety(docs: &[Document]) -> Vec<(String, i32)> {
    let mut v: Vec<(String, i32)> = docs
        .iter()
        .map(|d| {
            (
                d.get_str("variety").unwrap().to_string(),
                d.get_i32("altitude").unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn densify_hours_within_explicit_bounds() {
    let hours = [0, 4, 8, 12];
    let docs: Vec<Document> = hours
        .iter()
        .map(|h| doc! {"timestamp": date(&format!("2021-05-18T{h:02}:00:00Z")), "temp": 12})
        .collect();
    let out = run(
        doc! {"$densify": {"field": "timestamp", "range": {"step": 1, "unit": "hour",
        "bounds": [date("2021-05-18T00:00:00Z"), date("2021-05-18T08:00:00Z")]}}},
        docs,
    )
    .unwrap();
    let got: Vec<(Bson, bool)> = out
        .iter()
        .map(|d| (d.get("timestamp").cloned().unwrap(), d.contains_key("temp")))
        .collect();
    let mut expected = Vec::new();
    for h in 0..=8 {
        expected.push((date(&format!("2021-05-18T{h:02}:00:00Z")), h % 4 == 0));
    }
    expected.push((date("2021-05-18T12:00:00Z"), true));
    assert_eq!(got, expected);
}

#[test]
fn densify_full_and_partition_ranges() {
    let out = run(
        doc! {"$densify": {"field": "altitude", "partitionByFields": ["variety"], "range": {"bounds": "full", "step": 200}}},
        coffee(),
    )
    .unwrap();
    let a = "Arabica Typica".to_string();
    let g = "Gesha".to_string();
    assert_eq!(
        by_variety(&out),
        [
            (&a, 600),
            (&a, 750),
            (&a, 800),
            (&a, 950),
            (&a, 1000),
            (&a, 1200),
            (&a, 1400),
            (&a, 1600),
            (&g, 600),
            (&g, 800),
            (&g, 1000),
            (&g, 1200),
            (&g, 1250),
            (&g, 1400),
            (&g, 1600),
            (&g, 1700)
        ]
        .iter()
        .map(|(s, v)| ((*s).clone(), *v))
        .collect::<Vec<_>>()
    );
    assert!(out.contains(&doc! {"variety": "Gesha", "altitude": 800}));
    let out = run(
        doc! {"$densify": {"field": "altitude", "partitionByFields": ["variety"], "range": {"bounds": "partition", "step": 200}}},
        coffee(),
    )
    .unwrap();
    assert_eq!(
        by_variety(&out),
        [
            (&a, 600),
            (&a, 750),
            (&a, 800),
            (&a, 950),
            (&g, 1250),
            (&g, 1450),
            (&g, 1650),
            (&g, 1700)
        ]
        .iter()
        .map(|(s, v)| ((*s).clone(), *v))
        .collect::<Vec<_>>()
    );
}

#[test]
fn densify_errors() {
    let code = |range: Document| {
        Pipeline::parse(&[doc! {"$densify": {"field": "a", "range": range}}])
            .unwrap_err()
            .code
    };
    assert_eq!(code(doc! {"step": 0, "bounds": "full"}), 5733401);
    assert_eq!(code(doc! {"step": 1, "bounds": "partition"}), 5733408);
    assert_eq!(code(doc! {"step": 1, "bounds": [5, 1]}), 5733402);
    assert_eq!(
        code(doc! {"step": 1, "bounds": [1, 5], "unit": "hour"}),
        5733409
    );
    assert_eq!(
        code(
            doc! {"step": 1, "bounds": [date("2021-01-01T00:00:00Z"), date("2021-01-02T00:00:00Z")]}
        ),
        5733410
    );
    assert_eq!(code(doc! {"step": 1, "bounds": "everything"}), 5946802);
    assert_eq!(code(doc! {"step": 1.5, "bounds": [1, 5]}), 5876900);
    let err = run(
        doc! {"$densify": {"field": "a", "range": {"step": 1, "bounds": "full"}}},
        vec![doc! {"a": "x"}],
    )
    .unwrap_err();
    assert_eq!(err.code, 5733201);
    // MongoDB generates at most 500,000 documents (`internalQueryMaxAllowedDensifyDocs`).
    let up_to = |upper: i32| {
        let stage = doc! {"$densify": {"field": "a", "range": {"step": 1, "bounds": [0, upper]}}};
        run(stage, vec![doc! {"a": 0}])
    };
    assert_eq!(up_to(500_001).map(|docs| docs.len()).ok(), Some(500_001));
    assert_eq!(up_to(500_002).unwrap_err().code, 5897900);
}

#[test]
fn fill_with_values_and_methods() {
    let reviews = vec![
        doc! {"_id": 1, "date": date("2021-03-08T00:00:00Z"), "score": 90, "bootsSold": 10, "sandalsSold": 20},
        doc! {"_id": 2, "date": date("2021-03-09T00:00:00Z"), "bootsSold": 5, "sandalsSold": 10},
        doc! {"_id": 3, "date": date("2021-03-10T00:00:00Z"), "score": 80, "sneakersSold": 12},
        doc! {"_id": 4, "date": date("2021-03-11T00:00:00Z"), "bootsSold": 16, "sandalsSold": 20, "sneakersSold": 16},
    ];
    let out = run(
        doc! {"$fill": {"sortBy": {"date": 1}, "output": {
            "score": {"method": "locf"}, "bootsSold": {"value": 0}, "sandalsSold": {"value": 0}, "sneakersSold": {"value": 0}}}},
        reviews,
    )
    .unwrap();
    let fields = |d: &Document| {
        ["score", "bootsSold", "sandalsSold", "sneakersSold"]
            .iter()
            .map(|f| d.get_i32(f).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        out.iter().map(fields).collect::<Vec<_>>(),
        vec![
            vec![90, 10, 20, 0],
            vec![90, 5, 10, 0],
            vec![80, 0, 0, 12],
            vec![80, 16, 20, 16]
        ]
    );
    let prices = vec![
        doc! {"_id": 1, "t": 1, "price": 20},
        doc! {"_id": 2, "t": 2},
        doc! {"_id": 3, "t": 3, "price": 26},
    ];
    let out = run(
        doc! {"$fill": {"sortBy": {"t": 1}, "output": {"price": {"method": "linear"}}}},
        prices,
    )
    .unwrap();
    assert_eq!(out[1].get("price"), Some(&Bson::Double(23.0)));
    let code = |spec: Document| Pipeline::parse(&[doc! {"$fill": spec}]).unwrap_err().code;
    assert_eq!(code(doc! {"output": {"a": {"method": "mean"}}}), 6050201);
    assert_eq!(
        code(doc! {"output": {"a": {"method": "locf", "value": 1}}}),
        6050202
    );
    assert_eq!(
        code(doc! {"partitionBy": "$p", "partitionByFields": ["p"], "output": {"a": {"value": 1}}}),
        6050204
    );
    assert_eq!(code(doc! {"output": {"a": {"method": "linear"}}}), 605001);
}

#[test]
fn densify_keeps_a_missing_partition_field_apart_from_a_null_one() {
    // MongoDB keys a partition by the object of its fields: `{}` without the field, `{a:
    // null}` with it null. Each partition gets its own grid, and what it generates carries
    // the partition's fields as they are (none for `{}`).
    let docs = vec![doc! {"a": Bson::Null, "v": 1}, doc! {"v": 3}];
    let within = |bounds: Bson| {
        doc! {"$densify": {"field": "v", "partitionByFields": ["a"],
        "range": {"step": 1, "bounds": bounds}}}
    };
    let own = run(within("partition".into()), docs.clone()).unwrap();
    assert_eq!(
        own.len(),
        2,
        "nothing between 1 and 3 in one partition: {own:?}"
    );
    let explicit = run(within(vec![Bson::Int32(0), Bson::Int32(3)].into()), docs).unwrap();
    let mut got: Vec<(Option<bool>, i32)> = explicit
        .iter()
        .map(|d| {
            (
                d.get("a").map(|a| a == &Bson::Null),
                d.get_i32("v").unwrap(),
            )
        })
        .collect();
    got.sort();
    let expected = vec![
        (None, 0),
        (None, 1),
        (None, 2),
        (None, 3),
        (Some(true), 0),
        (Some(true), 1),
        (Some(true), 2),
    ];
    assert_eq!(got, expected);
}

#[test]
fn fill_keeps_a_missing_partition_field_apart_from_a_null_one() {
    // `$fill`'s `partitionByFields` partitions by the object of those fields, as `$densify`'s:
    // nothing is carried from the null partition into the missing one, whose only value is
    // missing, which `locf` makes null (MongoDB's manual).
    let docs = vec![doc! {"a": Bson::Null, "v": 1, "x": 5}, doc! {"v": 2}];
    let out = run(
        doc! {"$fill": {"sortBy": {"v": 1}, "partitionByFields": ["a"],
        "output": {"x": {"method": "locf"}}}},
        docs,
    )
    .unwrap();
    let filled: Vec<(i32, Option<Bson>)> = out
        .iter()
        .map(|d| (d.get_i32("v").unwrap(), d.get("x").cloned()))
        .collect();
    let carried = filled.iter().find(|(v, _)| *v == 2).cloned();
    assert_eq!(carried, Some((2, Some(Bson::Null))), "{filled:?}");
}
