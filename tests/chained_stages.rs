//! `aggregate` pipelines whose blocking stages are `$sample`, `$unionWith`, `$bucketAuto`,
//! `$facet` or `$densify`, with `$graphLookup` and `$redact` as per-document stages, and
//! chains under a case-insensitive collation, checked with the Rust `mongodb` driver against
//! the real `docgate` binary on SQLite and — with `DOCGATE_TEST_BACKEND` set to a
//! `postgres://` URL — on PostgreSQL, under a 40 KB `--blocking-stage-memory-limit-bytes`,
//! on cursors drained in batches of 50:
//!
//! - samples are distinct documents in no fixed order, unions come in input order then the
//!   other collection's, auto buckets, densified ranges (5897900 past 500,000 generated
//!   documents) and facets are MongoDB's, past the limit through temporary files and 292
//!   with `allowDiskUse: false`;
//! - `explain` says which stages a pipeline chains, streams or holds (`docgate.pipeline`; a
//!   `count` or `distinct` of a view: chained);
//! - under a case-insensitive collation a chain groups, sorts and matches with the collator.
//!
//! Not for: sorts, groups and windows between per-document stages (`chained_reads.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod chain_support;
mod common;
mod driver_support;

use chain_support::*;
use common::query_metric;
use driver_support::{collect, server_code};
use mongodb::bson::{doc, Document};
use mongodb::Collection;

#[tokio::test]
async fn samples_unions_auto_buckets_graph_lookups_and_redacts_stream_past_the_limit() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = limited_server(&temp);
    let client = server.client().await;
    let db = client.database("more");
    let coll: Collection<Document> = db.collection("items");
    coll.insert_many(seeded()).await.expect("seed");
    let last_k = int(&seeded()[COUNT as usize - 1], "k");

    // `explain` says which stages are chained, and that those looking at one document at a
    // time stream, also into a `$out` (which spools what they make, then writes it).
    let set = doc! {"$set": {"w": 1}};
    let cases = [
        (
            vec![set.clone(), doc! {"$sample": {"size": 3}}],
            chained(&["$sample"]),
        ),
        (
            vec![doc! {"$unionWith": "others"}, doc! {"$limit": 3}],
            chained(&["$unionWith", "$limit"]),
        ),
        (
            vec![doc! {"$bucketAuto": {"groupBy": "$k", "buckets": 2}}],
            chained(&["$bucketAuto"]),
        ),
        (
            vec![
                set.clone(),
                doc! {"$sort": {"w": 1}},
                doc! {"$group": {"_id": "$g"}},
            ],
            chained(&["$sort", "$group"]),
        ),
        (
            vec![
                doc! {"$redact": "$$KEEP"},
                doc! {"$graphLookup": {"from": "others", "startWith": "$g",
                "connectFromField": "k", "connectToField": "k", "as": "r"}},
            ],
            mode("streamed"),
        ),
        (
            vec![
                set.clone(),
                doc! {"$group": {"_id": "$g"}},
                doc! {"$sort": {"_id": 1}},
            ],
            mode("grouped"),
        ),
        (
            vec![doc! {"$densify": {"field": "k", "range": {"step": 1, "bounds": "full"}}}],
            chained(&["$densify"]),
        ),
        (
            vec![set.clone(), doc! {"$out": "elsewhere"}],
            mode("streamed"),
        ),
    ];
    for (pipeline, expected) in cases {
        assert_eq!(
            execution(&coll, pipeline.clone()).await,
            expected,
            "{pipeline:?}"
        );
    }

    // `$sample` after a `$set`: a top-k sort by a random key, spilled past the limit.
    let files = query_metric(&client, "docgateSpill", "files").await;
    let size: i64 = 1_500;
    let sampled = run(
        &coll,
        vec![doc! {"$set": {"w": 1}}, doc! {"$sample": {"size": size}}],
    )
    .await;
    let mut ids: Vec<i64> = sampled.iter().map(|d| int(d, "_id")).collect();
    assert_eq!(ids.len() as i64, size);
    assert!(
        sampled.iter().all(|d| int(d, "w") == 1),
        "the $set ran first"
    );
    assert!(!ids.is_sorted(), "a sample of 1,500 came in _id order");
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len() as i64, size, "a document sampled twice");
    assert!(ids.iter().all(|id| (0..COUNT).contains(id)));
    let spilled = query_metric(&client, "docgateSpill", "files").await;
    assert!(
        spilled > files,
        "the sample held past the limit: no temporary files"
    );
    assert_refused_without_disk_use(
        &coll,
        vec![doc! {"$set": {"w": 1}}, doc! {"$sample": {"size": size}}],
    )
    .await;

    // `$unionWith` after a `$set`: the input in its order, then the other collection's
    // documents through its pipeline, then the stages after it over both.
    let others: Collection<Document> = db.collection("others");
    let other_docs: Vec<Document> = (0..10).map(|i| doc! {"_id": 10_000 + i, "k": -i}).collect();
    others.insert_many(other_docs).await.expect("seed others");
    let union = vec![
        doc! {"$set": {"from": "items"}},
        doc! {"$unionWith": {"coll": "others", "pipeline": [{"$set": {"from": "others"}}]}},
        doc! {"$project": {"pad": 0}},
    ];
    let united = run(&coll, union.clone()).await;
    assert_eq!(united.len(), COUNT as usize + 10);
    let order: Vec<i64> = united.iter().map(|d| int(d, "_id")).collect();
    let expected: Vec<i64> = (0..COUNT).chain(10_000..10_010).collect();
    assert_eq!(
        order, expected,
        "the input first, then the union's documents"
    );
    assert!(united[..COUNT as usize]
        .iter()
        .all(|d| d.get_str("from").ok() == Some("items")));
    assert!(united[COUNT as usize..]
        .iter()
        .all(|d| d.get_str("from").ok() == Some("others")));
    assert!(united.iter().all(|d| !d.contains_key("pad")));
    // Its input is spooled past the limit, also with `allowDiskUse: false`: MongoDB streams
    // a union and has nothing to refuse, so the spool goes to temporary files all the same.
    let files = query_metric(&client, "docgateSpill", "files").await;
    let refusing = coll
        .aggregate(union.clone())
        .allow_disk_use(false)
        .batch_size(50)
        .await
        .expect("a union refusing disk use");
    assert_eq!(collect(refusing).await, united);
    assert!(query_metric(&client, "docgateSpill", "files").await > files);
    // The cursor hands the union out as it is asked: an error on the last of the other
    // collection's documents comes with a `getMore`.
    let mut failing = union;
    failing.push(doc! {"$set": {"inverse": {"$divide": [1, {"$add": ["$k", 9]}]}}});
    let mut cursor = coll
        .aggregate(failing)
        .batch_size(50)
        .await
        .expect("first batch");
    let mut answered = 0;
    while let Some(next) = futures_util::StreamExt::next(&mut cursor).await {
        match next {
            Ok(_) => answered += 1,
            Err(error) => {
                assert!(server_code(&error).is_some(), "{error}");
                break;
            }
        }
    }
    assert_eq!(
        answered, COUNT,
        "batches before the one reaching the failing document"
    );

    // `$bucketAuto` after a `$redact`: seven buckets of the 2,000 distinct `k`s, each of
    // round(2000 / 7) = 286 but the last, sorted through runs past the limit.
    let files = query_metric(&client, "docgateSpill", "files").await;
    let buckets = run(
        &coll,
        vec![
            doc! {"$redact": {"$cond": [{"$lt": ["$k", 1_999]}, "$$KEEP", "$$PRUNE"]}},
            doc! {"$bucketAuto": {"groupBy": "$k", "buckets": 7, "output": {
                "n": {"$sum": 1}, "top": {"$max": "$k"},
            }}},
        ],
    )
    .await;
    let spilled = query_metric(&client, "docgateSpill", "files").await;
    assert!(spilled > files, "the buckets' sort held past the limit");
    let counts: Vec<i64> = buckets.iter().map(|d| int(d, "n")).collect();
    assert_eq!(counts, vec![286, 286, 286, 286, 286, 286, 283]);
    for (at, bucket) in buckets.iter().enumerate() {
        let id = bucket.get_document("_id").expect("bucket _id");
        let min = at as i64 * 286;
        assert_eq!(int(id, "min"), min, "bucket {at}");
        let top = if at == 6 { 1_998 } else { min + 285 };
        assert_eq!(int(bucket, "top"), top, "bucket {at}");
        // Each bucket's max is the next one's min; the last one's is its largest value.
        assert_eq!(int(id, "max"), if at == 6 { 1_998 } else { min + 286 });
    }
    assert_refused_without_disk_use(
        &coll,
        vec![doc! {"$bucketAuto": {"groupBy": "$k", "buckets": 7}}],
    )
    .await;

    // `$graphLookup` and `$redact` look at one document at a time: their pipeline streams
    // like a `find`, and an error on the last document comes with a `getMore`.
    let chained = run(
        &coll,
        vec![
            doc! {"$graphLookup": {"from": "others", "startWith": "$g", "connectFromField": "k",
            "connectToField": "k", "as": "reached", "maxDepth": 0}},
            doc! {"$redact": "$$DESCEND"},
            doc! {"$sort": {"k": -1}},
            doc! {"$limit": 3},
        ],
    )
    .await;
    // `others` holds one document with each `k` of 0, -1, …, -9: starting from `g` (0 to
    // 3) at depth 0, a document reaches one when its `g` is 0, none otherwise.
    let reached: Vec<(i64, usize)> = chained
        .iter()
        .map(|d| {
            let found = d.get_array("reached").expect("as").len();
            assert_eq!(found, usize::from(int(d, "g") == 0), "{d}");
            (int(d, "k"), found)
        })
        .collect();
    assert_eq!(
        reached.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
        vec![1_999, 1_998, 1_997]
    );
    assert_late_error_comes_with_a_get_more(
        &coll,
        vec![
            doc! {"$graphLookup": {"from": "others", "startWith": "$g", "connectFromField": "k",
            "connectToField": "k", "as": "reached"}},
            doc! {"$redact": "$$DESCEND"},
            doc! {"$set": {"inverse": {"$divide": [1, {"$subtract": ["$k", last_k]}]}}},
        ],
    )
    .await;
}

#[tokio::test]
async fn facets_run_their_sub_pipelines_as_chains_past_the_limit() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = limited_server(&temp);
    let client = server.client().await;
    let coll: Collection<Document> = client.database("facets").collection("items");
    let docs = seeded();
    coll.insert_many(docs.clone()).await.expect("seed");

    // Four sub-pipelines over the same input after a `$set`: a sort past the limit with a
    // slice after a per-document stage, a group, a count, and per-document stages alone.
    let files = query_metric(&client, "docgateSpill", "files").await;
    let pipeline = vec![
        doc! {"$set": {"w": {"$mod": ["$v", 7]}}},
        doc! {"$facet": {
            "lowest": [{"$sort": {"k": 1}}, {"$project": {"k": 1}}, {"$skip": 10}, {"$limit": 3}],
            "by_g": [{"$group": {"_id": "$g", "w": {"$sum": "$w"}}}, {"$sort": {"_id": 1}}],
            "counted": [{"$match": {"g": 1}}, {"$count": "n"}],
            "few": [{"$match": {"k": {"$lt": 3}}}, {"$project": {"k": 1}}],
        }},
    ];
    let faceted = run(&coll, pipeline.clone()).await;
    assert_eq!(execution(&coll, pipeline).await, chained(&["$facet"]));
    let spilled = query_metric(&client, "docgateSpill", "files").await;
    assert!(
        spilled > files,
        "the sub-pipeline's sort held past the limit"
    );
    assert_eq!(faceted.len(), 1);
    let facets = &faceted[0];
    let ks = |name: &str| -> Vec<i64> {
        let outputs = facets
            .get_array(name)
            .unwrap_or_else(|_| panic!("{name} in {facets}"));
        outputs
            .iter()
            .map(|d| int(d.as_document().expect("a document"), "k"))
            .collect()
    };
    assert_eq!(ks("lowest"), vec![10, 11, 12]);
    let mut few = ks("few");
    few.sort_unstable();
    assert_eq!(few, vec![0, 1, 2]);
    let by_g: Vec<(i64, i64)> = facets
        .get_array("by_g")
        .expect("by_g")
        .iter()
        .map(|d| {
            let d = d.as_document().expect("a group");
            (int(d, "_id"), int(d, "w"))
        })
        .collect();
    let expected: Vec<(i64, i64)> = (0..4)
        .map(|g| {
            let w = docs
                .iter()
                .filter(|d| int(d, "g") == g)
                .map(|d| int(d, "v") % 7)
                .sum();
            (g, w)
        })
        .collect();
    assert_eq!(by_g, expected);
    let counted = facets.get_array("counted").expect("counted");
    assert_eq!(counted.len(), 1);
    assert_eq!(
        int(counted[0].as_document().expect("count"), "n"),
        COUNT / 4
    );

    // A view read by `find`, `count` or `distinct` runs as the aggregate on the collection
    // it reads, chained.
    let db = client.database("facets");
    db.create_collection("sorted_view")
        .view_on("items".to_string())
        .pipeline(vec![doc! {"$set": {"w": 1}}, doc! {"$sort": {"w": 1}}])
        .await
        .expect("create view");
    let find = doc! {"find": "sorted_view", "filter": {}};
    assert_eq!(pipeline_mode(&db, find).await, chained(&["$sort"]));
    let count = doc! {"count": "sorted_view", "query": {"g": 1}};
    assert_eq!(
        pipeline_mode(&db, count.clone()).await,
        chained(&["$sort", "$count"])
    );
    let files = query_metric(&client, "docgateSpill", "files").await;
    let counted = db.run_command(count).await.expect("count of the view");
    assert_eq!(
        counted.get_i32("n").ok(),
        Some((COUNT / 4) as i32),
        "{counted}"
    );
    assert!(
        query_metric(&client, "docgateSpill", "files").await > files,
        "the view's sort held its documents for count"
    );
    let distinct = doc! {"distinct": "sorted_view", "key": "g", "query": {"v": {"$lt": 50}}};
    assert_eq!(
        pipeline_mode(&db, distinct.clone()).await,
        chained(&["$sort"])
    );
    let files = query_metric(&client, "docgateSpill", "files").await;
    let values = db
        .run_command(distinct)
        .await
        .expect("distinct of the view");
    assert_eq!(
        values.get_array("values").ok(),
        Some(&(0..4).map(mongodb::bson::Bson::Int64).collect()),
        "{values}"
    );
    assert!(
        query_metric(&client, "docgateSpill", "files").await > files,
        "the view's sort held its documents"
    );

    // The document a `$facet` builds is held: past the limit it is 4031700, as MongoDB
    // answers past its own; with `allowDiskUse: false` a sort past the limit is 292.
    let whole = coll
        .aggregate(vec![doc! {"$facet": {"all": [{"$match": {}}]}}])
        .await
        .map(|_| ())
        .expect_err("a $facet output past the limit");
    assert_eq!(server_code(&whole), Some(4031700), "{whole}");
    assert_refused_without_disk_use(
        &coll,
        vec![
            doc! {"$facet": {"sorted": [{"$sort": {"k": 1}}, {"$limit": 1_500}, {"$count": "n"}]}},
        ],
    )
    .await;
}

#[tokio::test]
async fn densify_streams_its_sort_and_what_it_generates() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = limited_server(&temp);
    let client = server.client().await;
    let coll: Collection<Document> = client.database("densify").collection("items");
    coll.insert_many(seeded()).await.expect("seed");

    // Each of the four partitions by `g` holds 500 of the 2,000 `k`s: over the full range
    // each gets the 1,500 it lacks, and the answer comes by `k` alone, partitions
    // interleaved, as MongoDB answers a full-range densify with partitions.
    let files = query_metric(&client, "docgateSpill", "files").await;
    let pipeline = vec![
        doc! {"$set": {"w": 1}},
        doc! {"$densify": {"field": "k", "partitionByFields": ["g"], "range": {"step": 1, "bounds": "full"}}},
    ];
    assert_eq!(
        execution(&coll, pipeline.clone()).await,
        chained(&["$densify"])
    );
    let densified = run(&coll, pipeline).await;
    let spilled = query_metric(&client, "docgateSpill", "files").await;
    assert!(spilled > files, "the densify's sort held past the limit");
    assert_eq!(densified.len(), 4 * COUNT as usize);
    let mut seen = std::collections::HashSet::new();
    for (at, document) in densified.iter().enumerate() {
        let (k, g) = (int(document, "k"), int(document, "g"));
        assert_eq!(k, at as i64 / 4, "by k at {at}");
        assert!(seen.insert((k, g)), "({k}, {g}) twice");
        // A generated document holds the field and the partition only.
        let generated = !document.contains_key("_id");
        assert_eq!(generated, !document.contains_key("w"), "{document}");
        if generated {
            assert_eq!(document.len(), 2, "{document}");
        }
    }
    let originals = densified.iter().filter(|d| d.contains_key("_id")).count();
    assert_eq!(originals, COUNT as usize);

    // Each partition's own range, in steps of 7, after a `$match`: one partition, in `k`
    // order, a document at every step from its smallest `k` that none holds.
    let own = run(
        &coll,
        vec![
            doc! {"$match": {"g": 2}},
            doc! {"$densify": {"field": "k", "partitionByFields": ["g"], "range": {"step": 7, "bounds": "partition"}}},
        ],
    )
    .await;
    let mut ks: Vec<i64> = seeded()
        .iter()
        .filter(|d| int(d, "g") == 2)
        .map(|d| int(d, "k"))
        .collect();
    ks.sort_unstable();
    let (low, high) = (ks[0], ks[ks.len() - 1]);
    let mut expected: Vec<i64> = ks.clone();
    expected.extend((low..=high).step_by(7).filter(|k| !ks.contains(k)));
    expected.sort_unstable();
    let got: Vec<i64> = own.iter().map(|d| int(d, "k")).collect();
    assert_eq!(got, expected);

    // It generates as the cursor asks: MongoDB's limit of 500,000 generated documents is
    // 5897900, and a `$count` after it drains it without a cursor.
    let too_many = coll
        .aggregate(vec![
            doc! {"$densify": {"field": "k", "range": {"step": 1, "bounds": [0, 600_000]}}},
            doc! {"$count": "n"},
        ])
        .await
        .map(|_| ())
        .expect_err("past the generated documents' limit");
    assert_eq!(server_code(&too_many), Some(5897900), "{too_many}");
    assert_refused_without_disk_use(
        &coll,
        vec![doc! {"$densify": {"field": "k", "range": {"step": 1, "bounds": "full"}}}],
    )
    .await;
}

#[tokio::test]
async fn chains_compare_under_the_pipelines_collation() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = limited_server(&temp);
    let client = server.client().await;
    let db = client.database("collated");
    let coll: Collection<Document> = db.collection("items");
    // Names in three spellings of case: "Name7", "name7", "NAME7", … past the limit.
    let pad = "x".repeat(120);
    let spellings = |i: i64| match i % 3 {
        0 => format!("Name{}", i % 50),
        1 => format!("name{}", i % 50),
        _ => format!("NAME{}", i % 50),
    };
    let docs: Vec<Document> = (0..COUNT)
        .map(|i| doc! {"_id": i, "name": spellings(i), "pad": pad.clone()})
        .collect();
    coll.insert_many(docs).await.expect("seed");
    let case_insensitive = mongodb::options::Collation::builder()
        .locale("en")
        .strength(mongodb::options::CollationStrength::Secondary)
        .build();
    let collated = |pipeline: Vec<Document>| {
        let coll = coll.clone();
        let collation = case_insensitive.clone();
        async move {
            let cursor = coll
                .aggregate(pipeline.clone())
                .collation(collation)
                .batch_size(50)
                .await
                .unwrap_or_else(|e| panic!("{pipeline:?}: {e}"));
            collect(cursor).await
        }
    };

    // A `$group` after a `$set` groups the three spellings as one name: 50 groups of 40.
    let files = query_metric(&client, "docgateSpill", "files").await;
    let groups = collated(vec![
        doc! {"$set": {"key": "$name"}},
        doc! {"$group": {"_id": "$key", "n": {"$sum": 1}}},
        doc! {"$sort": {"_id": 1}},
    ])
    .await;
    assert_eq!(groups.len(), 50, "{groups:?}");
    assert!(
        groups.iter().all(|g| int(g, "n") == COUNT / 50),
        "{groups:?}"
    );

    // A `$sort` by the name after a `$set`, through runs past the limit, keeps the three
    // spellings together ("name10" after "NAME1" …), and a `$match` after it compares
    // under the collation too.
    let sorted = collated(vec![
        doc! {"$set": {"key": "$name"}},
        doc! {"$sort": {"key": 1, "_id": 1}},
        doc! {"$match": {"key": "name7"}},
        doc! {"$project": {"pad": 0}},
    ])
    .await;
    let spilled = query_metric(&client, "docgateSpill", "files").await;
    assert!(spilled > files, "the collated sort held past the limit");
    let ids: Vec<i64> = sorted.iter().map(|d| int(d, "_id")).collect();
    let expected: Vec<i64> = (0..COUNT).filter(|i| i % 50 == 7).collect();
    assert_eq!(ids, expected, "every spelling of name7, in _id order");
    let all = collated(vec![
        doc! {"$set": {"key": "$name"}},
        doc! {"$sort": {"key": 1, "_id": 1}},
    ])
    .await;
    let lowered: Vec<String> = all
        .iter()
        .map(|d| d.get_str("key").expect("key").to_lowercase())
        .collect();
    let mut expected = lowered.clone();
    expected.sort();
    assert_eq!(lowered, expected, "sorted without regard to case");

    // A group by a constant, counted in SQL: the stages after it compare under the
    // collation too.
    let counted = collated(vec![
        doc! {"$group": {"_id": "ABC", "n": {"$sum": 1}}},
        doc! {"$match": {"_id": "abc"}},
    ])
    .await;
    assert_eq!(counted.len(), 1, "{counted:?}");
    assert_eq!(int(&counted[0], "n"), COUNT);

    // `explain` says the collated pipeline is chained.
    let explained = doc! {"aggregate": "items", "pipeline": [
        {"$set": {"key": "$name"}}, {"$sort": {"key": 1}},
    ], "cursor": {}, "collation": {"locale": "en", "strength": 2}};
    assert_eq!(pipeline_mode(&db, explained).await, chained(&["$sort"]));
}
