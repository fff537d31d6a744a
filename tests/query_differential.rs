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
//!
//! Layout: the test functions are here; the fixture is in `differential/mod.rs`, the
//! corpus in `differential/corpus.rs`, the cases in `differential/cases.rs` and the
//! comparison with the reference in `differential/compare.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod differential;

use differential::cases::{
    documented_cases, generated_case, hand_written_filters, shaped_cases, table_cases, Case,
};
use differential::compare::{count_differential, differential, reference_matches, report, run};
use differential::corpus::{date, subtle_corpus};
use differential::{fixture, main_fixture, planned_index, runtime};
use futures_util::StreamExt;
use mongodb::bson::{doc, Document};
use proptest::test_runner::{Config, TestCaseError, TestRunner};

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
            (doc! {"_id": {"$gt": 3, "$lt": 30}}, None, "_id_"),
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
