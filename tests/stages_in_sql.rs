//! The stage right after a read, run by the store in the read's statement, checked the way
//! a user would: every pipeline answers the same BSON bytes pushed and with pushdown off (the
//! same pipeline behind a no-op `$unset`, which runs every stage in Rust), and `explain`
//! names the stage among those run as SQL.
//!
//! - A `$group`: SQLite feeds docgate's grouping inside its statement, PostgreSQL runs it as
//!   SQL (`GROUP BY` over the image).
//! - A `$project` of plain fields: SQLite projects each row inside its statement
//!   (`docgate_project`), also for a `find`'s projection; PostgreSQL does not (it would be
//!   slower than Rust: `benches/sql/project_in_postgres.sql`), and its `explain` says so.
//!
//! On PostgreSQL, `/metrics` also shows which way each planned SQL `$group` was answered:
//! by the SQL, or by Rust when a value is one the SQL cannot handle exactly (a Decimal128, an
//! Int64 past 2^53, NaN, a double with bits below 2^-74, a string holding U+0000, a path
//! through an array, a row written before the number-types column existed). Both ways must
//! give the same bytes; the exact data must be answered by the SQL.
//!
//! Runs on the backend the harness picks from `DOCGATE_TEST_BACKEND`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;

use common::{TestBackend, TestServer};
use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Decimal128, Document};
use mongodb::{Collection, Database};
use rand::{Rng, SeedableRng};

const NO_PUSHDOWN: &str = "no_such_field";
const ANSWERED_SQL: &str = r#"docgate_sql_groups_total{answered="sql"}"#;
const ANSWERED_RUST: &str = r#"docgate_sql_groups_total{answered="rust"}"#;

fn on_postgres(server: &TestServer) -> bool {
    matches!(server.backend(), TestBackend::Postgres { .. })
}

/// The documents of `pipeline` as BSON bytes.
async fn run(coll: &Collection<Document>, pipeline: &[Document]) -> Vec<Vec<u8>> {
    let docs: Vec<Document> = coll
        .aggregate(pipeline.to_vec())
        .await
        .unwrap_or_else(|e| panic!("{pipeline:?}: {e}"))
        .try_collect()
        .await
        .expect("results");
    docs.iter().map(|d| d.to_vec().expect("bson")).collect()
}

/// `pipeline` pushed and with pushdown off: the same bytes, and something to compare.
async fn same_both_ways(coll: &Collection<Document>, pipeline: &[Document]) -> Vec<Document> {
    let pushed = run(coll, pipeline).await;
    let mut off = vec![doc! {"$unset": NO_PUSHDOWN}];
    off.extend(pipeline.iter().cloned());
    let in_rust = run(coll, &off).await;
    assert_eq!(pushed, in_rust, "{pipeline:?}");
    pushed
        .iter()
        .map(|bytes| Document::from_reader(bytes.as_slice()).expect("document"))
        .collect()
}

/// The stages `explain` says run as SQL.
async fn stages_in_sql(db: &Database, coll: &str, pipeline: &[Document]) -> Vec<String> {
    let plan = db
        .run_command(
            doc! {"explain": {"aggregate": coll, "pipeline": pipeline.to_vec(), "cursor": {}}},
        )
        .await
        .expect("explain");
    plan.get_document("queryPlanner")
        .and_then(|q| q.get_document("winningPlan"))
        .and_then(|w| w.get_document("docgate"))
        .and_then(|d| d.get_array("stagesInSql"))
        .expect("stagesInSql")
        .iter()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// The value of a `/metrics` series (0 when it has not moved yet).
async fn metric(server: &TestServer, series: &str) -> f64 {
    let text = reqwest::get(format!("{}/metrics", server.admin_base()))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|n| n.trim().parse().expect("a number"))
        .unwrap_or(0.0)
}

/// How many planned SQL groups were answered by the SQL and by Rust while `work` ran.
async fn answered_during<F: std::future::Future<Output = ()>>(
    server: &TestServer,
    work: F,
) -> (f64, f64) {
    let (sql, rust) = (
        metric(server, ANSWERED_SQL).await,
        metric(server, ANSWERED_RUST).await,
    );
    work.await;
    (
        metric(server, ANSWERED_SQL).await - sql,
        metric(server, ANSWERED_RUST).await - rust,
    )
}

/// Sales: a city (a few missing, some null), an Int32 quantity, a Double price with cents,
/// an Int64 id of the clerk, and a nested store with a name and a floor.
fn sales(n: i64) -> Vec<Document> {
    let cities = ["Oslo", "Åre", "oslo", "Zürich", "Bergen"];
    (0..n)
        .map(|i| {
            let mut d = doc! {
                "_id": i,
                "qty": (i * 7 % 23) as i32 - 5,
                "price": (i * 37 % 1000) as f64 / 100.0 + 0.1,
                "clerk": Bson::Int64(i % 9 + 1_000_000_000_000),
                "store": {"name": format!("s{}", i % 4), "floor": (i % 3) as i32},
                "tags": ["a", "b"],
            };
            match i % 17 {
                0 => {}
                1 => {
                    d.insert("city", Bson::Null);
                }
                _ => {
                    d.insert("city", cities[(i % 5) as usize]);
                }
            }
            d
        })
        .collect()
}

fn pipelines() -> Vec<Vec<Document>> {
    vec![
        vec![
            doc! {"$group": {"_id": "$city", "n": {"$sum": 1}, "q": {"$sum": "$qty"},
            "p": {"$sum": "$price"}, "avg": {"$avg": "$price"}, "c": {"$count": {}}}},
        ],
        vec![
            doc! {"$group": {"_id": "$store.name", "lo": {"$min": "$price"}, "hi": {"$max": "$qty"},
            "first": {"$first": "$clerk"}, "last": {"$last": {"q": "$qty", "c": "$city"}},
            "clerks": {"$sum": "$clerk"}, "clerkAvg": {"$avg": "$clerk"}}},
        ],
        vec![
            doc! {"$match": {"store.floor": 1}},
            doc! {"$group": {"_id": {"c": "$city", "s": "$store.name"}, "n": {"$sum": 1},
            "cmin": {"$min": "$city"}, "cmax": {"$max": "$city"}, "qavg": {"$avg": "$qty"}}},
        ],
        vec![
            doc! {"$group": {"_id": null, "p": {"$sum": "$price"}, "a": {"$avg": "$qty"},
            "big": {"$sum": 2_147_483_647}, "long": {"$sum": Bson::Int64(3)},
            "text": {"$sum": "x"}, "k": {"$max": "constant"}}},
        ],
        vec![doc! {"$group": {"_id": "$qty", "n": {"$sum": 1}, "p": {"$sum": "$price"}}}],
        vec![doc! {"$group": {"_id": "$price", "n": {"$sum": 1}}}],
        vec![
            doc! {"$match": {"qty": {"$gt": 100}}},
            doc! {"$group": {"_id": "$city", "n": {"$sum": 1}}},
        ],
        vec![
            doc! {"$group": {"_id": "$store.floor", "p": {"$sum": "$price"}}},
            doc! {"$sort": {"p": -1}},
            doc! {"$limit": 2},
        ],
        // Equalities the SQL only narrows to (arrays, lossy numbers), confirmed row by row.
        vec![
            doc! {"$match": {"city": "Oslo"}},
            doc! {"$group": {"_id": "$store.name", "p": {"$sum": "$price"}, "n": {"$sum": 1}}},
        ],
        vec![
            doc! {"$match": {"store.name": "s1", "store.floor": 2, "clerk": Bson::Int64(1_000_000_000_003)}},
            doc! {"$group": {"_id": "$city", "q": {"$avg": "$qty"}}},
        ],
        vec![
            doc! {"$match": {"$and": [{"price": 3.8}, {"qty": {"$eq": 9}}]}},
            doc! {"$group": {"_id": null, "n": {"$sum": 1}, "f": {"$first": "$_id"}}},
        ],
        // Numeric ranges the SQL narrows to (bounds pushed inclusive), decided row by row:
        // a row on a strict bound, or of another type, is left out.
        vec![
            doc! {"$match": {"qty": {"$gt": 5, "$lte": 12}}},
            doc! {"$group": {"_id": "$city", "n": {"$sum": 1}, "p": {"$sum": "$price"}}},
        ],
        vec![
            doc! {"$match": {"price": {"$gte": 2.5, "$lt": 7.5}, "city": "Oslo"}},
            doc! {"$group": {"_id": "$store.name", "q": {"$sum": "$qty"}, "lo": {"$min": "$price"}}},
        ],
        vec![
            doc! {"$match": {"store.floor": {"$lt": 2}, "clerk": {"$gte": Bson::Int64(1_000_000_000_004)}}},
            doc! {"$group": {"_id": "$store.floor", "n": {"$sum": 1}, "last": {"$last": "$_id"}}},
        ],
        vec![
            doc! {"$match": {"city": {"$gt": 1}}},
            doc! {"$group": {"_id": null, "n": {"$sum": 1}}},
        ],
    ]
}

#[tokio::test]
async fn exact_data_is_grouped_by_the_sql_with_the_same_bytes() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("group_sql");
    let coll = db.collection::<Document>("sales");
    coll.insert_many(sales(3000)).await.expect("insert");
    let mut planned = 0.0;
    for pipeline in pipelines() {
        if stages_in_sql(&db, "sales", &pipeline)
            .await
            .contains(&"$group".to_string())
        {
            planned += 1.0;
        }
    }
    // Planned in the statement: all (SQLite folds after any cheap residual filter; PostgreSQL
    // decides equalities and numeric ranges row by row).
    let all = pipelines().len() as f64;
    assert_eq!(planned, all);
    let (sql, rust) = answered_during(&server, async {
        for pipeline in pipelines() {
            same_both_ways(&coll, &pipeline).await;
        }
    })
    .await;
    if on_postgres(&server) {
        // Every one planned as SQL is answered by the SQL: the data is exact.
        assert_eq!((sql, rust), (planned, 0.0));
    }
    // What a user reads: the totals of the first pipeline, checked by hand for one city.
    let groups = same_both_ways(&coll, &pipelines()[0]).await;
    let oslo = groups
        .iter()
        .find(|g| g.get_str("_id").ok() == Some("Oslo"))
        .expect("Oslo");
    let expected: i32 = sales(3000)
        .iter()
        .filter(|d| d.get_str("city").ok() == Some("Oslo"))
        .map(|d| d.get_i32("qty").unwrap())
        .sum();
    assert_eq!(oslo.get_i32("q").ok(), Some(expected));
    assert!(matches!(oslo.get("p"), Some(Bson::Double(_))));
    // Missing and null cities are one group, whose _id is null.
    let nulls = groups
        .iter()
        .filter(|g| g.get("_id") == Some(&Bson::Null))
        .count();
    assert_eq!(nulls, 1);
}

#[tokio::test]
async fn explain_names_the_group_among_the_stages_run_as_sql() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("group_explain");
    db.collection::<Document>("sales")
        .insert_many(sales(50))
        .await
        .expect("insert");
    let explained = |pipeline: Vec<Document>| {
        let db = db.clone();
        async move { stages_in_sql(&db, "sales", &pipeline).await }
    };
    let by_city = vec![
        doc! {"$match": {"_id": {"$gte": 10}}},
        doc! {"$group": {"_id": "$city", "p": {"$sum": "$price"}}},
    ];
    let stages = explained(by_city.clone()).await;
    assert!(stages.contains(&"$group".to_string()), "{stages:?}");
    // Pushdown off, a computed key, and an accumulator SQL does not run: not in SQL.
    let mut off = vec![doc! {"$unset": NO_PUSHDOWN}];
    off.extend(by_city);
    let computed = vec![doc! {"$group": {"_id": {"$toUpper": "$city"}, "n": {"$sum": 1}}}];
    for pipeline in [off, computed] {
        let stages = explained(pipeline).await;
        assert!(!stages.contains(&"$group".to_string()), "{stages:?}");
    }
    if on_postgres(&server) {
        let pushed = vec![doc! {"$group": {"_id": "$city", "set": {"$addToSet": "$qty"}}}];
        let stages = explained(pushed).await;
        assert!(!stages.contains(&"$group".to_string()), "{stages:?}");
    }
}

/// One document per value the SQL cannot handle exactly, each in a collection of its own
/// next to ordinary documents.
fn inexact_values() -> Vec<(&'static str, Document)> {
    let decimal: Decimal128 = "0.1".parse().expect("decimal");
    vec![
        ("decimal", doc! {"k": "a", "v": decimal}),
        (
            "long past 2^53",
            doc! {"k": "a", "v": Bson::Int64((1 << 53) + 1)},
        ),
        ("NaN", doc! {"k": "a", "v": f64::NAN}),
        ("infinity", doc! {"k": "a", "v": f64::INFINITY}),
        ("tiny double", doc! {"k": "a", "v": 1e-30}),
        ("huge double", doc! {"k": "a", "v": 1e300}),
        ("NUL key", doc! {"k": "a\u{0}", "v": 1}),
        ("object key", doc! {"k": {"x": 1}, "v": 1}),
        ("array key", doc! {"k": [1, 2], "v": 1}),
        ("decimal key", doc! {"k": decimal, "v": 1}),
        ("boolean extreme", doc! {"k": "a", "v": true}),
        ("array extreme", doc! {"k": "a", "v": [0]}),
        ("array matched", doc! {"k": ["a", "z"], "v": 1}),
        ("nested array matched", doc! {"k": [["a"]], "v": 1}),
    ]
}

#[tokio::test]
async fn values_the_sql_cannot_group_exactly_go_through_rust_with_the_same_bytes() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("group_inexact");
    let pipelines = [
        vec![
            doc! {"$group": {"_id": "$k", "s": {"$sum": "$v"}, "a": {"$avg": "$v"}, "n": {"$sum": 1}}},
        ],
        vec![doc! {"$group": {"_id": "$k", "lo": {"$min": "$v"}, "hi": {"$max": "$v"}}}],
    ];
    for (name, odd) in inexact_values() {
        let coll = db.collection::<Document>(&name.replace([' ', '^'], "_"));
        let mut docs: Vec<Document> = (0..20)
            .map(|i| doc! {"k": if i % 2 == 0 { "a" } else { "b" }, "v": i, "w": 2.5})
            .collect();
        docs.insert(7, odd.clone());
        // U+FFFD is what the image shows for U+0000: a key of its own, next to "a\0".
        docs.push(doc! {"k": "a\u{fffd}", "v": 3});
        coll.insert_many(docs).await.expect("insert");
        let (sql, rust) = answered_during(&server, async {
            for pipeline in &pipelines {
                same_both_ways(&coll, pipeline).await;
            }
        })
        .await;
        if on_postgres(&server) {
            assert!(rust >= 1.0, "{name}: none went through Rust ({sql} by SQL)");
        }
        // A filter the SQL only narrows to, met by a row through an array: Rust confirms.
        let through_array_match = vec![
            doc! {"$match": {"k": "a"}},
            doc! {"$group": {"_id": null, "n": {"$sum": 1}, "s": {"$sum": "$v"}}},
        ];
        same_both_ways(&coll, &through_array_match).await;
        // An image that equals where MongoDB does not (a decimal 0.1 is not the double 0.1).
        let lossy_match = vec![
            doc! {"$match": {"v": 0.1}},
            doc! {"$group": {"_id": null, "n": {"$sum": 1}}},
        ];
        same_both_ways(&coll, &lossy_match).await;
        // A range met only through an array, or by a lossy image: Rust decides.
        let range_matches = vec![
            doc! {"$match": {"v": {"$gte": 0.1, "$lt": 100}}},
            doc! {"$group": {"_id": "$k", "n": {"$sum": 1}, "s": {"$sum": "$w"}}},
        ];
        same_both_ways(&coll, &range_matches).await;
        // A path through an array is no value SQL reads either.
        let through_array = vec![doc! {"$group": {"_id": "$k.x", "s": {"$sum": "$w"}}}];
        same_both_ways(&coll, &through_array).await;
    }
}

#[tokio::test]
async fn random_numbers_total_exactly_as_rust_totals_them() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("group_random");
    let coll = db.collection::<Document>("numbers");
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    let docs: Vec<Document> = (0..6000)
        .map(|i| {
            // Doubles of every magnitude a split handles, with cancellation, beside integers.
            let v = match rng.random_range(0..6) {
                0 => Bson::Int32(rng.random_range(-1_000_000..1_000_000)),
                1 => Bson::Int64(rng.random_range(-(1 << 52)..(1 << 52))),
                2 => Bson::Double(rng.random_range(-1e6..1e6)),
                3 => Bson::Double(rng.random_range(-1.0..1.0) * 1e15),
                4 => Bson::Double(rng.random_range(0.0..1.0) * 1e-3),
                _ => Bson::Double(f64::from(rng.random_range(0..1000)) / 8.0),
            };
            doc! {"_id": i, "g": i % 40, "v": v}
        })
        .collect();
    coll.insert_many(docs).await.expect("insert");
    let pipeline = vec![
        doc! {"$group": {"_id": "$g", "s": {"$sum": "$v"}, "a": {"$avg": "$v"},
        "lo": {"$min": "$v"}, "hi": {"$max": "$v"}}},
    ];
    let (sql, _) = answered_during(&server, async {
        let groups = same_both_ways(&coll, &pipeline).await;
        assert_eq!(groups.len(), 40);
    })
    .await;
    if on_postgres(&server) {
        assert_eq!(sql, 1.0);
    }
}

/// Rows written before the number-types column existed: the migration of a format-1 catalog
/// adds the column, those rows' numbers go through Rust, and rows written since are grouped
/// by the SQL again.
#[tokio::test]
async fn rows_from_before_the_number_types_column_are_grouped_in_rust() {
    let mut server = TestServer::start();
    if !on_postgres(&server) {
        return;
    }
    let client = server.client().await;
    let db: Database = client.database("group_legacy");
    let coll = db.collection::<Document>("old");
    coll.insert_many(sales(200)).await.expect("insert");
    let pipeline =
        vec![doc! {"$group": {"_id": "$city", "p": {"$sum": "$price"}, "q": {"$sum": "$qty"}}}];
    let before = same_both_ways(&coll, &pipeline).await;
    drop(client);
    // The catalog as docgate before the column wrote it.
    server.run_backend_sql(
        "DO $$ DECLARE t text; BEGIN
             SELECT format('%I.%I', schema_name, table_name) INTO t FROM docgate.collections
              WHERE db = 'group_legacy' AND name = 'old';
             EXECUTE 'ALTER TABLE ' || t || ' DROP COLUMN nt';
             UPDATE docgate.catalog SET format = 1;
         END $$;",
    );
    server.restart_same_data();
    let client = server.client().await;
    let coll = client
        .database("group_legacy")
        .collection::<Document>("old");
    let (sql, rust) = answered_during(&server, async {
        assert_eq!(same_both_ways(&coll, &pipeline).await, before);
    })
    .await;
    assert_eq!((sql, rust), (0.0, 1.0));
    // Rewriting the rows (any update writes the column) brings the SQL back.
    coll.update_many(doc! {}, doc! {"$set": {"touched": true}})
        .await
        .expect("update");
    let (sql, rust) = answered_during(&server, async {
        assert_eq!(same_both_ways(&coll, &pipeline).await, before);
    })
    .await;
    assert_eq!((sql, rust), (1.0, 0.0));
}

/// Many groups: the documents the SQL would send back for them stop at the blocking-stage
/// memory limit, and the grouping runs in Rust, which spills past it — the same answer.
#[tokio::test]
async fn groups_past_the_memory_limit_are_grouped_in_rust() {
    let server = TestServer::start_with_args(&["--blocking-stage-memory-limit-bytes", "50000"]);
    let client = server.client().await;
    let coll = client
        .database("group_budget")
        .collection::<Document>("sales");
    coll.insert_many(sales(2000)).await.expect("insert");
    let by_id = vec![doc! {"$group": {"_id": "$_id", "p": {"$sum": "$price"},
    "f": {"$first": "$city"}, "l": {"$last": "$store"}}}];
    let few = vec![doc! {"$group": {"_id": "$store.name", "p": {"$sum": "$price"}}}];
    let (sql, rust) = answered_during(&server, async {
        assert_eq!(same_both_ways(&coll, &by_id).await.len(), 2000);
        assert_eq!(same_both_ways(&coll, &few).await.len(), 4);
    })
    .await;
    if on_postgres(&server) {
        assert_eq!((sql, rust), (1.0, 1.0));
    }
}

/// A total whose exact value lies just past a rounding midpoint, where the compensated sum
/// MongoDB (and docgate's Rust) keeps lands on the midpoint and rounds the other way: the
/// SQL's error bound sees it cannot tell, and Rust totals it — 2^52 + 0.5 + 2^-74 sums to
/// 2^52, not the nearest double 2^52 + 1.
#[tokio::test]
async fn a_total_the_compensated_sum_rounds_differently_goes_through_rust() {
    let server = TestServer::start();
    let client = server.client().await;
    let coll = client
        .database("group_midpoint")
        .collection::<Document>("numbers");
    let two_52 = 4_503_599_627_370_496.0_f64;
    let tiny = f64::from_bits((1023 - 74) << 52);
    assert_eq!(tiny, 2f64.powi(-74));
    coll.insert_many([
        doc! {"_id": 1, "v": two_52},
        doc! {"_id": 2, "v": 0.5},
        doc! {"_id": 3, "v": tiny},
        // A total past the doubles' range in a group of its own: Rust's +Inf, no SQL error.
        doc! {"_id": 4, "v": f64::MAX, "big": true},
        doc! {"_id": 5, "v": f64::MAX, "big": true},
    ])
    .await
    .expect("insert");
    let overflow = vec![
        doc! {"$match": {"big": true}},
        doc! {"$group": {"_id": null, "s": {"$sum": "$v"}, "a": {"$avg": "$v"}}},
    ];
    let groups = same_both_ways(&coll, &overflow).await;
    assert_eq!(groups[0].get_f64("s").ok(), Some(f64::INFINITY));
    coll.delete_many(doc! {"big": true}).await.expect("delete");
    let pipeline = vec![doc! {"$group": {"_id": null, "s": {"$sum": "$v"}}}];
    let (sql, rust) = answered_during(&server, async {
        let groups = same_both_ways(&coll, &pipeline).await;
        assert_eq!(groups[0].get_f64("s").ok(), Some(two_52));
    })
    .await;
    if on_postgres(&server) {
        assert_eq!((sql, rust), (0.0, 1.0));
    }
}

/// Paths that run through a date (whose image is `{"$t": 9, "v": <millis>}`): `a.v` is missing
/// there for MongoDB, never the milliseconds; and a path both equal to a string and
/// compared with a number.
#[tokio::test]
async fn paths_through_tagged_values_and_mixed_conditions_give_the_same_bytes() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("group_tagged");
    let coll = db.collection::<Document>("mixed");
    let mut docs: Vec<Document> = (0..30)
        .map(|i| match i % 3 {
            0 => doc! {"a": mongodb::bson::DateTime::from_millis(1_000 * i), "k": "d"},
            1 => doc! {"a": {"v": i}, "k": "n"},
            _ => doc! {"a": ["x", i], "k": "arr"},
        })
        .collect();
    docs.push(doc! {"a": "x", "k": "s"});
    coll.insert_many(docs).await.expect("insert");
    let count = doc! {"$group": {"_id": "$k", "n": {"$sum": 1}}};
    for pipeline in [
        vec![doc! {"$match": {"a.v": {"$gt": 0}}}, count.clone()],
        vec![
            doc! {"$match": {"a.v": {"$gte": 3, "$lt": 20}}},
            count.clone(),
        ],
        vec![
            doc! {"$match": {"a": {"$eq": "x", "$gt": 5}}},
            count.clone(),
        ],
        vec![
            doc! {"$match": {"$and": [{"a": "x"}, {"a": {"$lte": 10}}]}},
            count.clone(),
        ],
        vec![doc! {"$group": {"_id": "$a.v", "s": {"$sum": "$a.v"}, "n": {"$sum": 1}}}],
        vec![doc! {"$group": {"_id": null, "lo": {"$min": "$a.v"}, "hi": {"$max": "$a.v"}}}],
    ] {
        same_both_ways(&coll, &pipeline).await;
    }
    // What a user reads: only the documents whose `a` is a document count for `a.v`.
    let groups = same_both_ways(&coll, &[doc! {"$match": {"a.v": {"$gt": 0}}}, count]).await;
    assert_eq!(groups, vec![doc! {"_id": "n", "n": 10}]);
}

/// Date ranges before a `$group`: on PostgreSQL each row is decided in the statement (a date
/// by its milliseconds, any other type left out), an array hands the answer to Rust.
#[tokio::test]
async fn date_ranges_before_a_group_are_decided_in_the_statement() {
    use mongodb::bson::DateTime;
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("group_dates");
    let coll = db.collection::<Document>("events");
    let mut docs: Vec<Document> = (0..60_i64)
        .map(|i| doc! {"d": DateTime::from_millis(i * 86_400_000 - 5 * 86_400_000), "k": i % 4})
        .collect();
    docs.extend([
        doc! {"d": 5, "k": 0},
        doc! {"d": "2024-01-01", "k": 0},
        doc! {"d": mongodb::bson::oid::ObjectId::new(), "k": 0},
        doc! {"d": {"v": 10}, "k": 0},
        doc! {"d": Bson::Null, "k": 0},
        doc! {"k": 0},
    ]);
    coll.insert_many(docs).await.expect("insert");
    let day = |n: i64| DateTime::from_millis(n * 86_400_000);
    let pipelines = [
        vec![
            doc! {"$match": {"d": {"$gte": day(0), "$lt": day(30)}}},
            doc! {"$group": {"_id": "$k", "n": {"$sum": 1}, "first": {"$first": "$d"}}},
        ],
        vec![
            doc! {"$match": {"d": {"$lt": day(-2)}}},
            doc! {"$group": {"_id": null, "n": {"$sum": 1}, "hi": {"$max": "$k"}}},
        ],
    ];
    let (sql, rust) = answered_during(&server, async {
        for pipeline in &pipelines {
            same_both_ways(&coll, pipeline).await;
        }
    })
    .await;
    if on_postgres(&server) {
        assert_eq!((sql, rust), (2.0, 0.0));
    }
    let groups = same_both_ways(&coll, &pipelines[0]).await;
    let counted: i32 = groups.iter().map(|g| g.get_i32("n").unwrap()).sum();
    assert_eq!(counted, 30);
    // A date in an array matches through it: Rust decides, with the same bytes.
    coll.insert_one(doc! {"d": [day(3)], "k": 1})
        .await
        .expect("insert");
    let (_, rust) = answered_during(&server, async {
        same_both_ways(&coll, &pipelines[0]).await;
    })
    .await;
    if on_postgres(&server) {
        assert_eq!(rust, 1.0);
    }
}

#[tokio::test]
async fn a_project_of_plain_fields_runs_in_the_sqlite_statement_with_the_same_bytes() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("project_sql");
    let coll = db.collection::<Document>("sales");
    coll.insert_many(sales(500)).await.expect("insert");
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"qty": 1}).build())
        .await
        .expect("index");
    let projections = [
        doc! {"qty": 1, "store.name": 1},
        doc! {"city": 1, "_id": 0},
        doc! {"tags": 0, "store.floor": 0},
        doc! {"missing": 1},
        doc! {"_id": 1},
    ];
    let reads = [
        doc! {},
        doc! {"qty": {"$gte": 3}},
        doc! {"_id": {"$lt": 100}},
    ];
    for projection in &projections {
        for filter in &reads {
            let mut pipeline = vec![doc! {"$project": projection.clone()}];
            if !filter.is_empty() {
                pipeline.insert(0, doc! {"$match": filter.clone()});
            }
            let projected = same_both_ways(&coll, &pipeline).await;
            let matched = coll.count_documents(filter.clone()).await.expect("count");
            assert_eq!(projected.len() as u64, matched, "{pipeline:?}");
            let stages = stages_in_sql(&db, "sales", &pipeline).await;
            assert_eq!(
                stages.contains(&"$project".to_string()),
                !on_postgres(&server),
                "{pipeline:?}: {stages:?}"
            );
            // A find's projection is the same document, read the same way.
            let found: Vec<Vec<u8>> = coll
                .find(filter.clone())
                .projection(projection.clone())
                .batch_size(7)
                .await
                .expect("find")
                .try_collect::<Vec<Document>>()
                .await
                .expect("find batches")
                .iter()
                .map(|d| d.to_vec().expect("bson"))
                .collect();
            assert_eq!(found, run(&coll, &pipeline).await, "{filter} {projection}");
        }
    }
    // The statement SQLite ran projected the rows (the profiler keeps its SQL text).
    db.run_command(doc! {"profile": 2}).await.expect("profile");
    run(&coll, &[doc! {"$project": {"qty": 1}}]).await;
    db.run_command(doc! {"profile": 0})
        .await
        .expect("profile off");
    let entries: Vec<Document> = db
        .collection::<Document>("system.profile")
        .find(doc! {"command.aggregate": "sales"})
        .await
        .expect("system.profile")
        .try_collect()
        .await
        .expect("profile entries");
    let sql = format!("{entries:?}");
    assert_eq!(
        sql.contains("docgate_project(doc, ?)"),
        !on_postgres(&server),
        "{sql}"
    );
    // A residual filter: the rows are judged whole, then projected in Rust; same answer.
    let residual = vec![
        doc! {"$match": {"$expr": {"$gt": ["$qty", 3]}}},
        doc! {"$project": {"qty": 1}},
    ];
    let answered = same_both_ways(&coll, &residual).await;
    assert!(answered.iter().all(|d| d.keys().eq(["_id", "qty"])));
    assert!(!stages_in_sql(&db, "sales", &residual)
        .await
        .contains(&"$project".to_string()));
}
