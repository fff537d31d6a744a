//! Evaluation growth: how the time of `$setUnion`, the `$addToSet` accumulator and `$unwind`
//! grows with the number of elements, at `DOCGATE_BENCH_SIZES` (10000,100000,1000000)
//! elements, each beside a linear reference doing the same amount of data movement:
//!
//! - `$setUnion` of `$range [0, n)` and `$range [n/2, 3n/2)` (half the values shared), beside
//!   `$concatArrays` of the same two ranges;
//! - `$group` with `$addToSet` over n documents holding n/2 distinct values (numbers of mixed
//!   types, equal across types), beside `$push` of the same field;
//! - `$unwind` of one document with an n-element array followed by `$count`, beside `$count`
//!   over n ready-made documents.
//!
//! Printed per operator and size: the best of `DOCGATE_BENCH_ROUNDS` (3) runs of each side in
//! milliseconds, nanoseconds per element, the growth from the previous size (10x the elements:
//! about 10x for linear work, about 100x for quadratic) and the ratio to the reference, which
//! stays flat when the operator is linear. The answers are checked (sizes and counts); no time
//! is asserted.
//!
//! Run: `cargo bench --bench evaluation_growth`. No server or database is involved: this is
//! the query core alone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use common::{env_usize, print_table, ratio};
use docgate::query::Pipeline;

/// One measured operator: its pipeline and input at a size, and the reference beside it.
struct Case {
    name: &'static str,
    build: fn(usize) -> (Vec<Document>, Vec<Document>),
    reference: fn(usize) -> (Vec<Document>, Vec<Document>),
    /// The answer both sides must give at a size (checked every run).
    check: fn(usize, &[Document]) -> bool,
    check_reference: fn(usize, &[Document]) -> bool,
}

fn set_union(n: usize) -> (Vec<Document>, Vec<Document>) {
    let (n, half) = (n as i64, n as i64 / 2);
    let stage = doc! {"$project": {"size": {"$size": {"$setUnion": [
        {"$range": [0_i64, n]}, {"$range": [half, n + half]}
    ]}}}};
    (vec![stage], vec![doc! {"_id": 1}])
}

fn concat_arrays(n: usize) -> (Vec<Document>, Vec<Document>) {
    let (n, half) = (n as i64, n as i64 / 2);
    let stage = doc! {"$project": {"size": {"$size": {"$concatArrays": [
        {"$range": [0_i64, n]}, {"$range": [half, n + half]}
    ]}}}};
    (vec![stage], vec![doc! {"_id": 1}])
}

/// n documents whose `v` takes n/2 distinct values, each written as an int32, an int64 or a
/// double in turn (equal numbers of different types are one set member).
fn grouped_values(n: usize) -> Vec<Document> {
    let distinct = (n / 2).max(1);
    (0..n)
        .map(|i| {
            let k = (i % distinct) as i32;
            let v = match i % 3 {
                0 => Bson::Int32(k),
                1 => Bson::Int64(k.into()),
                _ => Bson::Double(k.into()),
            };
            doc! {"_id": i as i64, "v": v}
        })
        .collect()
}

fn add_to_set(n: usize) -> (Vec<Document>, Vec<Document>) {
    let stages = vec![
        doc! {"$group": {"_id": null, "s": {"$addToSet": "$v"}}},
        doc! {"$project": {"size": {"$size": "$s"}}},
    ];
    (stages, grouped_values(n))
}

fn push(n: usize) -> (Vec<Document>, Vec<Document>) {
    let stages = vec![
        doc! {"$group": {"_id": null, "s": {"$push": "$v"}}},
        doc! {"$project": {"size": {"$size": "$s"}}},
    ];
    (stages, grouped_values(n))
}

fn unwind(n: usize) -> (Vec<Document>, Vec<Document>) {
    let items: Vec<Bson> = (0..n as i64).map(Bson::Int64).collect();
    let stages = vec![doc! {"$unwind": "$a"}, doc! {"$count": "size"}];
    (stages, vec![doc! {"_id": 1, "name": "one", "a": items}])
}

fn count_documents(n: usize) -> (Vec<Document>, Vec<Document>) {
    let docs = (0..n as i64)
        .map(|i| doc! {"_id": 1, "name": "one", "a": i})
        .collect();
    (vec![doc! {"$count": "size"}], docs)
}

fn size_is(expected: usize) -> impl Fn(&[Document]) -> bool {
    move |out| {
        out.len() == 1
            && out[0]
                .get("size")
                .and_then(|v| match v {
                    Bson::Int32(i) => Some(*i as usize),
                    Bson::Int64(i) => Some(*i as usize),
                    _ => None,
                })
                .is_some_and(|s| s == expected)
    }
}

/// Runs one side `rounds` times on a fresh copy of its input; the best time.
fn best_of(
    rounds: usize,
    n: usize,
    make: fn(usize) -> (Vec<Document>, Vec<Document>),
    check: fn(usize, &[Document]) -> bool,
) -> Duration {
    let (stages, input) = make(n);
    let pipeline = Pipeline::parse(&stages).expect("benchmark pipeline parses");
    let mut best = Duration::MAX;
    for _ in 0..rounds {
        let input = input.clone();
        let started = Instant::now();
        let out = pipeline.run(input).expect("benchmark pipeline runs");
        best = best.min(started.elapsed());
        assert!(check(n, &out), "wrong answer at {n}: {out:?}");
    }
    best
}

fn main() {
    let sizes: Vec<usize> = std::env::var("DOCGATE_BENCH_SIZES")
        .unwrap_or_else(|_| "10000,100000,1000000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("sizes are whole numbers"))
        .collect();
    let rounds = env_usize("DOCGATE_BENCH_ROUNDS", 3);
    let cases = [
        Case {
            name: "$setUnion",
            build: set_union,
            reference: concat_arrays,
            check: |n, out| size_is(n + n / 2)(out),
            check_reference: |n, out| size_is(2 * n)(out),
        },
        Case {
            name: "$addToSet",
            build: add_to_set,
            reference: push,
            check: |n, out| size_is((n / 2).max(1))(out),
            check_reference: |n, out| size_is(n)(out),
        },
        Case {
            name: "$unwind",
            build: unwind,
            reference: count_documents,
            check: |n, out| size_is(n)(out),
            check_reference: |n, out| size_is(n)(out),
        },
    ];
    let mut rows = Vec::new();
    for case in &cases {
        let mut previous: Option<Duration> = None;
        for &n in &sizes {
            let operator = best_of(rounds, n, case.build, case.check);
            let reference = best_of(rounds, n, case.reference, case.check_reference);
            rows.push(vec![
                case.name.to_string(),
                n.to_string(),
                format!("{:.1}", operator.as_secs_f64() * 1e3),
                format!("{:.0}", operator.as_secs_f64() * 1e9 / n as f64),
                previous.map_or("-".into(), |p| ratio(operator, p)),
                format!("{:.1}", reference.as_secs_f64() * 1e3),
                ratio(operator, reference),
            ]);
            previous = Some(operator);
        }
    }
    println!("evaluation growth (best of {rounds}; 10x elements: ~10x linear, ~100x quadratic)");
    print_table(
        &[
            "operator",
            "elements",
            "ms",
            "ns/element",
            "growth",
            "reference ms",
            "vs reference",
        ],
        &rows,
    );
}
