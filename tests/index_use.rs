//! DESIGN.md invariant 3, "indexes are used", checked the way a user checks it: with the
//! `explain` command (`{explain: {find: …}, verbosity: "queryPlanner"}`) over a collection
//! of 2,000 documents with secondary indexes. A `_id` lookup, an equality, a range and an
//! `$in` on an indexed field, and a sort on an indexed field with a limit must be an
//! `IXSCAN` on the right index, and the backend's own plan (`winningPlan.docgate.sqlPlan`:
//! SQLite's `EXPLAIN QUERY PLAN`, PostgreSQL's `EXPLAIN`) must read an index too; a pushed
//! sort must not sort in memory or in SQL; `count` with an indexed equality is a SQL
//! `COUNT` (no residual left to Rust); a query on an unindexed field is a `COLLSCAN`.
//! Under a collation (a collection's default), `_id` lookups, ranges and sorts use its
//! collated `_id` index and a compound collated index serves an equality prefix with a sort
//! and a two-field sort; a read of another collation keeps off them.
//! Every explained read is also run, and its answer checked.
//!
//! Runs on the backend the harness picks from `DOCGATE_TEST_BACKEND`.
//!
//! Not for: whether the answers agree with the reference evaluator in general (see
//! `query_differential.rs`), or timings.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;

use common::TestServer;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

const DOCS: i32 = 2000;

/// The collection: `k` (50 values, `k_1`), `r` (unique, `r_-1`), `name` (unique,
/// `name_1`), `grp`/`r` (`grp_1_r_1`), `tags` (arrays, `tags_1`), `free` (no index).
async fn load(db: &Database) {
    db.run_command(doc! {
        "createIndexes": "people",
        "indexes": [
            {"key": {"k": 1}, "name": "k_1"},
            {"key": {"r": -1}, "name": "r_-1"},
            {"key": {"name": 1}, "name": "name_1"},
            {"key": {"grp": 1, "r": 1}, "name": "grp_1_r_1"},
            {"key": {"tags": 1}, "name": "tags_1"},
        ],
    })
    .await
    .expect("createIndexes");
    let docs: Vec<Document> = (0..DOCS)
        .map(|i| {
            doc! {
                "_id": i,
                "k": i % 50,
                "r": i,
                "name": format!("user{i:04}"),
                "grp": i % 10,
                "tags": [i % 3, 10 + i % 5],
                "free": i % 7,
                "pad": "x".repeat(100),
            }
        })
        .collect();
    db.collection::<Document>("people")
        .insert_many(docs)
        .await
        .expect("insert 2000 documents");
}

/// `explain` of a command at `queryPlanner` verbosity; returns `queryPlanner.winningPlan`.
async fn winning_plan(db: &Database, command: Document) -> Document {
    let reply = db
        .run_command(doc! {"explain": command.clone(), "verbosity": "queryPlanner"})
        .await
        .unwrap_or_else(|e| panic!("explain {command}: {e}"));
    reply
        .get_document("queryPlanner")
        .and_then(|q| q.get_document("winningPlan"))
        .unwrap_or_else(|e| panic!("no queryPlanner.winningPlan in {reply}: {e}"))
        .clone()
}

/// The docgate details of a winning plan.
fn details(plan: &Document) -> &Document {
    plan.get_document("docgate")
        .unwrap_or_else(|_| panic!("no winningPlan.docgate in {plan}"))
}

/// The backend's plan lines, joined.
fn sql_plan(plan: &Document) -> String {
    let lines = details(plan)
        .get_array("sqlPlan")
        .unwrap_or_else(|_| panic!("no docgate.sqlPlan in {plan}"));
    lines
        .iter()
        .map(|l| {
            l.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| l.to_string())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn backend(plan: &Document) -> String {
    details(plan)
        .get_str("backend")
        .unwrap_or_else(|_| panic!("no docgate.backend in {plan}"))
        .to_string()
}

/// The stages from the top of the plan down.
fn stages(plan: &Document) -> Vec<Document> {
    let mut out = Vec::new();
    let mut current = Some(plan.clone());
    while let Some(stage) = current {
        current = stage.get_document("inputStage").ok().cloned();
        out.push(stage);
    }
    out
}

fn stage_names(plan: &Document) -> Vec<String> {
    stages(plan)
        .iter()
        .map(|s| s.get_str("stage").unwrap_or("?").to_string())
        .collect()
}

/// The plan is a FETCH over an IXSCAN of `index`, and the backend's plan reads an index.
fn assert_index_scan(plan: &Document, index: &str) {
    assert_ixscan_stage(plan, index);
    assert_backend_reads_index(plan, index);
}

/// The plan's IXSCAN stage names `index`.
fn assert_ixscan_stage(plan: &Document, index: &str) {
    let ixscan = stages(plan)
        .into_iter()
        .find(|s| s.get_str("stage").ok() == Some("IXSCAN"))
        .unwrap_or_else(|| panic!("no IXSCAN stage (stages {:?}) in {plan}", stage_names(plan)));
    assert_eq!(
        ixscan.get_str("indexName").ok(),
        Some(index),
        "IXSCAN of the wrong index in {plan}"
    );
}

/// The lines of the backend's plan that read an index.
fn index_reads(plan: &Document) -> Vec<String> {
    let backend = backend(plan);
    if !matches!(backend.as_str(), "sqlite" | "postgres" | "oracle") {
        panic!("unexpected backend {backend}");
    }
    let sqlite = backend == "sqlite";
    sql_plan(plan)
        .lines()
        .filter(|line| {
            if backend == "oracle" {
                // DBMS_XPLAN: INDEX UNIQUE SCAN / RANGE SCAN / FULL SCAN (DESCENDING).
                line.contains("INDEX ")
            } else if sqlite {
                line.contains("USING INDEX")
                    || line.contains("USING COVERING INDEX")
                    || line.contains("PRIMARY KEY")
                    || line.trim_start().starts_with("SEARCH")
                    // A walk of an index's entries table (keyed by the index key) in order.
                    || line.contains("SCAN dgi_")
            } else {
                line.contains("Index Scan") || line.contains("Index Only Scan")
            }
        })
        .map(str::to_string)
        .collect()
}

/// The backend reads the `_id` index (`_id_`: the primary key) or a secondary index's
/// entries table (`dgi_<n>`, one per index, in both stores).
fn assert_backend_reads_index(plan: &Document, index: &str) {
    assert_backend_reads(plan, index, index != "_id_");
}

/// The backend reads an index: an entries table when `entries_table` (a secondary index, or
/// the collated `_id_` index of a collection with a default collation), else the primary
/// key.
fn assert_backend_reads(plan: &Document, index: &str, entries_table: bool) {
    let reads = index_reads(plan);
    // Entries tables are `dgi_<n>` (SQLite, PostgreSQL) or `DG_I<n>` (Oracle).
    let entries = |l: &String| l.contains("dgi_") || l.contains("DG_I");
    let ok = if entries_table {
        reads.iter().any(entries)
    } else {
        reads.iter().any(|l| !entries(l))
    };
    assert!(
        ok,
        "the {} plan does not read index {index}:\n{}",
        backend(plan),
        sql_plan(plan)
    );
}

/// No sort happens in Rust, and the backend's plan has no sort step either.
fn assert_sort_served_by_index(plan: &Document) {
    assert_sort_pushed(plan);
    let sql = sql_plan(plan);
    assert!(
        !sql.lines().any(|line| backend_sorts(plan, line)),
        "the backend sorts:\n{sql}"
    );
}

/// Whether a line of the backend's plan is a sort step.
fn backend_sorts(plan: &Document, line: &str) -> bool {
    match backend(plan).as_str() {
        // SQLite: "USE TEMP B-TREE FOR ORDER BY" (or "... FOR RIGHT PART OF ORDER BY").
        "sqlite" => line.contains("TEMP B-TREE"),
        // Oracle: a "SORT ORDER BY" operation.
        "oracle" => line.contains("SORT ORDER BY"),
        // PostgreSQL: a "Sort" or "Incremental Sort" node.
        _ => {
            let node = line.trim_start().trim_start_matches("->").trim_start();
            node.starts_with("Sort") || node.starts_with("Incremental Sort")
        }
    }
}

/// docgate sorts nothing: the store walks the index in order (no SORT stage, no sort in
/// Rust). PostgreSQL may still choose to sort a range it estimates small (a fresh table
/// without statistics) rather than walk it backwards; SQLite always walks.
fn assert_sort_pushed(plan: &Document) {
    let d = details(plan);
    assert_eq!(
        d.get_bool("pushedSort").ok(),
        Some(true),
        "sort not pushed: {plan}"
    );
    assert_eq!(
        d.get_bool("inMemorySort").ok(),
        Some(false),
        "sorted in memory: {plan}"
    );
    assert!(
        !stage_names(plan).iter().any(|s| s == "SORT"),
        "SORT stage in {plan}"
    );
    if backend(plan) == "sqlite" {
        let sql = sql_plan(plan);
        assert!(
            !sql.lines().any(|line| backend_sorts(plan, line)),
            "SQLite sorts:\n{sql}"
        );
    }
}

fn ids(docs: &[Document]) -> Vec<i32> {
    docs.iter()
        .map(|d| d.get_i32("_id").expect("int _id"))
        .collect()
}

async fn find(
    db: &Database,
    filter: Document,
    sort: Option<Document>,
    limit: Option<i64>,
) -> Vec<Document> {
    let people = db.collection::<Document>("people");
    let mut action = people.find(filter);
    if let Some(sort) = sort {
        action = action.sort(sort);
    }
    if let Some(limit) = limit {
        action = action.limit(limit);
    }
    let mut cursor = action.await.expect("find");
    let mut out = Vec::new();
    while cursor.advance().await.expect("advance") {
        out.push(cursor.deserialize_current().expect("document"));
    }
    out
}

/// One server with the collection loaded, shared by the checks of one test.
async fn setup() -> (TestServer, Database) {
    let server = TestServer::start();
    let db = server.client().await.database("planning");
    load(&db).await;
    (server, db)
}

#[tokio::test]
async fn id_lookup_uses_the_id_index() {
    let (_server, db) = setup().await;
    let plan = winning_plan(&db, doc! {"find": "people", "filter": {"_id": 1234}}).await;
    assert_index_scan(&plan, "_id_");
    assert_eq!(
        details(&plan).get_bool("pushedFilterExact").ok(),
        Some(true),
        "{plan}"
    );
    assert_eq!(
        ids(&find(&db, doc! {"_id": 1234}, None, None).await),
        vec![1234]
    );

    let plan = winning_plan(
        &db,
        doc! {"find": "people", "filter": {"_id": {"$in": [3, 1999, 5000]}}},
    )
    .await;
    assert_index_scan(&plan, "_id_");
    let mut got = ids(&find(&db, doc! {"_id": {"$in": [3, 1999, 5000]}}, None, None).await);
    got.sort_unstable();
    assert_eq!(got, vec![3, 1999]);
}

/// A range on `_id` is read from the `_id` index, also as the pages of the usual keyset
/// pagination (`{_id: {$gt: last}}` sorted by `_id` with a limit), which is then pushed
/// whole: no residual filter, no sort in memory, the limit in SQL.
#[tokio::test]
async fn a_range_on_id_and_id_pagination_use_the_id_index() {
    let (_server, db) = setup().await;
    let range = doc! {"_id": {"$gte": 100, "$lt": 110}};
    let plan = winning_plan(&db, doc! {"find": "people", "filter": range.clone()}).await;
    assert_index_scan(&plan, "_id_");
    assert_eq!(
        details(&plan).get_bool("pushedFilterExact").ok(),
        Some(true),
        "{plan}"
    );
    let mut got = ids(&find(&db, range, None, None).await);
    got.sort_unstable();
    assert_eq!(got, (100..110).collect::<Vec<_>>());

    let page = doc! {"_id": {"$gt": 1500}};
    let plan = winning_plan(
        &db,
        doc! {"find": "people", "filter": page.clone(), "sort": {"_id": 1}, "limit": 5},
    )
    .await;
    assert_index_scan(&plan, "_id_");
    assert_sort_served_by_index(&plan);
    assert_eq!(
        details(&plan).get_i64("pushedLimit").ok(),
        Some(5),
        "limit not pushed: {plan}"
    );
    let got = ids(&find(&db, page, Some(doc! {"_id": 1}), Some(5)).await);
    assert_eq!(got, vec![1501, 1502, 1503, 1504, 1505]);
}

#[tokio::test]
async fn equality_range_and_in_on_indexed_fields_use_their_index() {
    let (_server, db) = setup().await;

    // Equality.
    let plan = winning_plan(&db, doc! {"find": "people", "filter": {"k": 7}}).await;
    assert_index_scan(&plan, "k_1");
    assert_eq!(
        details(&plan).get_bool("pushedFilterExact").ok(),
        Some(true),
        "{plan}"
    );
    let got = find(&db, doc! {"k": 7}, None, None).await;
    assert_eq!(got.len(), (DOCS / 50) as usize);
    assert!(got.iter().all(|d| d.get_i32("k").ok() == Some(7)));

    // Equality with another numeric type finds the same documents through the index.
    let plan = winning_plan(&db, doc! {"find": "people", "filter": {"k": 7.0}}).await;
    assert_index_scan(&plan, "k_1");
    assert_eq!(
        find(&db, doc! {"k": Bson::Int64(7)}, None, None)
            .await
            .len(),
        got.len()
    );

    // Range on a descending index.
    let range = doc! {"r": {"$gte": 1990, "$lt": 1995}};
    let plan = winning_plan(&db, doc! {"find": "people", "filter": range.clone()}).await;
    assert_index_scan(&plan, "r_-1");
    let mut got = ids(&find(&db, range, None, None).await);
    got.sort_unstable();
    assert_eq!(got, vec![1990, 1991, 1992, 1993, 1994]);

    // One-sided range.
    let plan = winning_plan(
        &db,
        doc! {"find": "people", "filter": {"name": {"$gt": "user1997"}}},
    )
    .await;
    assert_index_scan(&plan, "name_1");
    assert_eq!(
        find(&db, doc! {"name": {"$gt": "user1997"}}, None, None)
            .await
            .len(),
        2
    );

    // $in.
    let filter = doc! {"name": {"$in": ["user0001", "user0500", "nobody"]}};
    let plan = winning_plan(&db, doc! {"find": "people", "filter": filter.clone()}).await;
    assert_index_scan(&plan, "name_1");
    let mut got = ids(&find(&db, filter, None, None).await);
    got.sort_unstable();
    assert_eq!(got, vec![1, 500]);

    // The first field of a compound index.
    let plan = winning_plan(&db, doc! {"find": "people", "filter": {"grp": 3}}).await;
    assert_index_scan(&plan, "grp_1_r_1");
    assert_eq!(
        find(&db, doc! {"grp": 3}, None, None).await.len(),
        (DOCS / 10) as usize
    );

    // A multikey index: an element of the arrays.
    let plan = winning_plan(&db, doc! {"find": "people", "filter": {"tags": 12}}).await;
    assert_index_scan(&plan, "tags_1");
    let got = find(&db, doc! {"tags": 12}, None, None).await;
    assert_eq!(got.len(), (DOCS / 5) as usize);
}

#[tokio::test]
async fn sort_on_an_indexed_field_with_a_limit_walks_the_index() {
    let (_server, db) = setup().await;
    for (direction, expected) in [
        (-1, vec![1999, 1998, 1997, 1996, 1995]),
        (1, vec![0, 1, 2, 3, 4]),
    ] {
        let plan = winning_plan(
            &db,
            doc! {"find": "people", "filter": {}, "sort": {"r": direction}, "limit": 5},
        )
        .await;
        assert_index_scan(&plan, "r_-1");
        assert_sort_served_by_index(&plan);
        assert_eq!(
            details(&plan).get("pushedLimit"),
            Some(&Bson::Int64(5)),
            "limit not pushed: {plan}"
        );
        let got = find(&db, doc! {}, Some(doc! {"r": direction}), Some(5)).await;
        assert_eq!(ids(&got), expected, "sort r: {direction}");
    }

    // Sort on `_id` with a limit: the primary key.
    let plan = winning_plan(
        &db,
        doc! {"find": "people", "filter": {}, "sort": {"_id": -1}, "limit": 2},
    )
    .await;
    assert_index_scan(&plan, "_id_");
    assert_sort_served_by_index(&plan);
    let got = find(&db, doc! {}, Some(doc! {"_id": -1}), Some(2)).await;
    assert_eq!(ids(&got), vec![1999, 1998]);
}

/// `find({grp: 3}).sort({r: ±1})` on `{grp: 1, r: 1}`: the equality fixes the leading field,
/// so the index walk within `grp: 3` is already in `r` order — forwards or backwards — with
/// the limit in SQL and no sort anywhere (before, an in-memory SORT stage).
#[tokio::test]
async fn an_equality_prefix_and_a_sort_on_the_next_field_walk_a_compound_index() {
    let (_server, db) = setup().await;
    for (direction, expected) in [
        (-1, vec![1993, 1983, 1973, 1963, 1953]),
        (1, vec![3, 13, 23, 33, 43]),
    ] {
        let plan = winning_plan(
            &db,
            doc! {"find": "people", "filter": {"grp": 3}, "sort": {"r": direction}, "limit": 5},
        )
        .await;
        assert_index_scan(&plan, "grp_1_r_1");
        assert_sort_pushed(&plan);
        assert_backend_reads_index(&plan, "grp_1_r_1");
        assert_eq!(
            details(&plan).get("pushedLimit"),
            Some(&Bson::Int64(5)),
            "limit not pushed: {plan}"
        );
        let got = find(&db, doc! {"grp": 3}, Some(doc! {"r": direction}), Some(5)).await;
        assert_eq!(ids(&got), expected, "sort r: {direction}");
    }
    // A cursor resumes the walk batch after batch: all 200 of `grp: 3`, in order.
    let people = db.collection::<Document>("people");
    let mut cursor = people
        .find(doc! {"grp": 3})
        .sort(doc! {"r": -1})
        .batch_size(7)
        .await
        .expect("find");
    let mut walked = Vec::new();
    while cursor.advance().await.expect("advance") {
        let doc: Document = cursor.deserialize_current().expect("document");
        walked.push(doc.get_i32("_id").expect("_id"));
    }
    let expected: Vec<i32> = (0..DOCS).rev().filter(|i| i % 10 == 3).collect();
    assert_eq!(walked, expected);
    // With a residual condition on another field the walk still gives the order; Rust keeps
    // the matches and the limit.
    let filter = doc! {"grp": 3, "free": 0};
    let plan = winning_plan(
        &db,
        doc! {"find": "people", "filter": filter.clone(), "sort": {"grp": 1, "r": -1}, "limit": 3},
    )
    .await;
    assert_index_scan(&plan, "grp_1_r_1");
    assert_sort_pushed(&plan);
    let got = find(&db, filter, Some(doc! {"grp": 1, "r": -1}), Some(3)).await;
    let expected: Vec<i32> = (0..DOCS)
        .rev()
        .filter(|i| i % 10 == 3 && i % 7 == 0)
        .take(3)
        .collect();
    assert_eq!(ids(&got), expected);
}

#[tokio::test]
async fn a_range_with_a_sort_on_the_same_index_walks_the_index_in_order() {
    let (_server, db) = setup().await;
    // The walk is bounded by the range itself; nothing sorts.
    let filter = doc! {"name": {"$gte": "user1000"}};
    let plan = winning_plan(
        &db,
        doc! {"find": "people", "filter": filter.clone(), "sort": {"name": 1}, "limit": 3},
    )
    .await;
    assert_index_scan(&plan, "name_1");
    assert_sort_served_by_index(&plan);
    let got = find(&db, filter, Some(doc! {"name": 1}), Some(3)).await;
    assert_eq!(ids(&got), vec![1000, 1001, 1002]);
}

#[tokio::test]
async fn count_with_an_indexed_equality_is_a_sql_count() {
    let (_server, db) = setup().await;
    let plan = winning_plan(&db, doc! {"count": "people", "query": {"k": 7}}).await;
    assert_index_scan(&plan, "k_1");
    let d = details(&plan);
    assert_eq!(d.get_bool("pushedFilterExact").ok(), Some(true), "{plan}");
    assert_eq!(d.get("residualFilter"), Some(&Bson::Null), "{plan}");
    assert_eq!(d.get_bool("inMemorySort").ok(), Some(false), "{plan}");
    let reply = db
        .run_command(doc! {"count": "people", "query": {"k": 7}})
        .await
        .expect("count");
    let n = match reply.get("n") {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        other => panic!("count n is {other:?} in {reply}"),
    };
    assert_eq!(n, i64::from(DOCS / 50));
}

#[tokio::test]
async fn a_query_on_an_unindexed_field_is_a_collection_scan() {
    let (_server, db) = setup().await;
    let plan = winning_plan(&db, doc! {"find": "people", "filter": {"free": {"$gt": 5}}}).await;
    assert_eq!(plan.get_str("stage").ok(), Some("COLLSCAN"), "{plan}");
    assert!(
        !stage_names(&plan).iter().any(|s| s == "IXSCAN"),
        "an IXSCAN for an unindexed field: {plan}"
    );
    assert!(
        !sql_plan(&plan).contains("dgi_"),
        "the backend reads an index's entries:\n{}",
        sql_plan(&plan)
    );
    let got = find(&db, doc! {"free": {"$gt": 5}}, None, None).await;
    assert_eq!(got.len(), (0..DOCS).filter(|i| i % 7 > 5).count());
}

/// A collection created with `{locale: "en", strength: 2}`: `_id`s `User0000`…`User1999`,
/// `grp` `G0`…`G9`, `name` `Name0000`…; index `{grp: 1, name: -1}` (inheriting the
/// collation). Queries spell the strings in another case.
async fn load_collated(db: &Database) {
    db.run_command(doc! {
        "create": "names",
        "collation": {"locale": "en", "strength": 2},
    })
    .await
    .expect("create with a collation");
    db.run_command(doc! {
        "createIndexes": "names",
        "indexes": [{"key": {"grp": 1, "name": -1}, "name": "grp_1_name_-1"}],
    })
    .await
    .expect("createIndexes");
    let docs: Vec<Document> = (0..DOCS)
        .map(|i| {
            doc! {
                "_id": format!("User{i:04}"),
                "grp": format!("G{}", i % 10),
                "name": format!("Name{i:04}"),
                "pad": "x".repeat(100),
            }
        })
        .collect();
    db.collection::<Document>("names")
        .insert_many(docs)
        .await
        .expect("insert 2000 documents");
}

/// The `_id`s a `find` command answers in its first batch.
async fn found_ids(db: &Database, find: Document) -> Vec<String> {
    let reply = db.run_command(find.clone()).await.expect("find");
    reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .unwrap_or_else(|e| panic!("no firstBatch in {reply} for {find}: {e}"))
        .iter()
        .map(|d| {
            d.as_document()
                .and_then(|d| d.get_str("_id").ok())
                .expect("string _id")
                .to_string()
        })
        .collect()
}

/// The collated `_id` index of a collection with a default collation serves equality, `$in`,
/// ranges and a sort with a limit under that collation (read from its entries table); a
/// simple read keeps the byte-exact primary key.
#[tokio::test]
async fn id_reads_under_a_collection_collation_use_its_collated_id_index() {
    let server = TestServer::start();
    let db = server.client().await.database("collated_planning");
    load_collated(&db).await;

    let lookup = doc! {"find": "names", "filter": {"_id": "user0042"}};
    let plan = winning_plan(&db, lookup.clone()).await;
    assert_ixscan_stage(&plan, "_id_");
    assert_backend_reads(&plan, "_id_", true);
    assert_eq!(
        details(&plan).get_bool("pushedFilterExact").ok(),
        Some(true),
        "{plan}"
    );
    assert_eq!(found_ids(&db, lookup).await, vec!["User0042"]);

    let several = doc! {"find": "names", "filter": {"_id": {"$in": ["USER0001", "user1999", "x"]}}};
    let plan = winning_plan(&db, several.clone()).await;
    assert_ixscan_stage(&plan, "_id_");
    assert_backend_reads(&plan, "_id_", true);
    let mut got = found_ids(&db, several).await;
    got.sort();
    assert_eq!(got, vec!["User0001", "User1999"]);

    let range = doc! {"find": "names", "filter": {"_id": {"$gt": "user1996"}}};
    let plan = winning_plan(&db, range.clone()).await;
    assert_ixscan_stage(&plan, "_id_");
    assert_eq!(found_ids(&db, range).await.len(), 3);

    let last = doc! {"find": "names", "filter": {}, "sort": {"_id": -1}, "limit": 3};
    let plan = winning_plan(&db, last.clone()).await;
    assert_ixscan_stage(&plan, "_id_");
    assert_sort_served_by_index(&plan);
    assert_eq!(
        found_ids(&db, last).await,
        vec!["User1999", "User1998", "User1997"]
    );

    // `simple`: the primary key, by bytes ("user0042" is not "User0042").
    let simple = doc! {
        "find": "names", "filter": {"_id": "user0042"}, "collation": {"locale": "simple"},
    };
    let plan = winning_plan(&db, simple.clone()).await;
    assert_index_scan(&plan, "_id_");
    assert_eq!(
        details(&plan).get_bool("pushedFilterExact").ok(),
        Some(true),
        "{plan}"
    );
    assert!(found_ids(&db, simple).await.is_empty());
    // Another collation: neither index decides the string; Rust does, right.
    let other = doc! {
        "find": "names", "filter": {"_id": "user0042"}, "collation": {"locale": "en", "strength": 1},
    };
    let plan = winning_plan(&db, other.clone()).await;
    assert_eq!(
        details(&plan).get_bool("pushedFilterExact").ok(),
        Some(false),
        "{plan}"
    );
    assert_eq!(found_ids(&db, other).await, vec!["User0042"]);
}

/// Under a collation a compound index of that collation serves an equality prefix with a
/// sort on the next field, and a sort on both fields, as without one (before: a SORT in
/// memory).
#[tokio::test]
async fn a_collated_compound_index_serves_an_equality_prefix_and_a_two_field_sort() {
    let server = TestServer::start();
    let db = server.client().await.database("collated_planning");
    load_collated(&db).await;

    let prefix = doc! {"find": "names", "filter": {"grp": "g3"}, "sort": {"name": -1}, "limit": 3};
    let plan = winning_plan(&db, prefix.clone()).await;
    assert_ixscan_stage(&plan, "grp_1_name_-1");
    assert_backend_reads(&plan, "grp_1_name_-1", true);
    assert_sort_pushed(&plan);
    assert_eq!(
        details(&plan).get("pushedLimit"),
        Some(&Bson::Int64(3)),
        "{plan}"
    );
    assert_eq!(
        found_ids(&db, prefix).await,
        vec!["User1993", "User1983", "User1973"]
    );

    let both = doc! {"find": "names", "filter": {}, "sort": {"grp": -1, "name": 1}, "limit": 3};
    let plan = winning_plan(&db, both.clone()).await;
    assert_ixscan_stage(&plan, "grp_1_name_-1");
    assert_sort_pushed(&plan);
    assert_eq!(
        found_ids(&db, both).await,
        vec!["User0009", "User0019", "User0029"]
    );

    // Another collation sorts in memory, and right.
    let other = doc! {
        "find": "names", "filter": {"grp": "g3"}, "sort": {"name": -1}, "limit": 2,
        "collation": {"locale": "en"},
    };
    let plan = winning_plan(&db, other.clone()).await;
    assert!(stage_names(&plan).iter().any(|s| s == "SORT"), "{plan}");
    assert!(
        found_ids(&db, other).await.is_empty(),
        "'g3' is not 'G3' at strength 3"
    );
}
