//! Tests of the aggregation pipeline: the shapes mongosh and drivers send (countDocuments),
//! `$group` accumulators, reshaping stages and stage errors.
//!
//! Not for: production code (compiled only for tests).

mod pipelines {
    use crate::query::aggregate::*;
    use crate::query::error::QueryError;
    use bson::{doc, Document};

    fn run(stages: Vec<Document>, input: Vec<Document>) -> Result<Vec<Document>, QueryError> {
        Pipeline::parse(&stages)?.run(input)
    }

    fn sample() -> Vec<Document> {
        vec![
            doc! {"_id": 1, "k": "a", "n": 1},
            doc! {"_id": 2, "k": "b", "n": 2},
            doc! {"_id": 3, "k": "a", "n": 3.5},
            doc! {"_id": 4, "n": 4},
        ]
    }

    #[test]
    fn mongosh_count_documents_shape() {
        let out = run(
            vec![
                doc! {"$match": {"n": {"$gt": 1}}},
                doc! {"$skip": 1},
                doc! {"$limit": 5},
                doc! {"$group": {"_id": 1, "n": {"$sum": 1}}},
            ],
            sample(),
        )
        .unwrap();
        assert_eq!(out, vec![doc! {"_id": 1, "n": 2}]);
        let p = Pipeline::parse(&[doc! {"$match": {"a": 1}}]).unwrap();
        assert_eq!(p.leading_match(), Some(doc! {"a": 1}));
    }

    #[test]
    fn leading_read_folds_match_sort_skip_and_limit_in_order() {
        let read = |stages: Vec<Document>| Pipeline::parse(&stages).unwrap().leading_read();
        let lead = read(vec![
            doc! {"$match": {"a": 1}},
            doc! {"$sort": {"b": -1}},
            doc! {"$skip": 2},
            doc! {"$limit": 10},
            doc! {"$skip": 3},
            doc! {"$limit": 20},
            doc! {"$project": {"b": 1}},
            doc! {"$limit": 1},
        ]);
        assert!(lead.sort.is_some());
        // skip 2, take 10, skip 3 of those (7 left), at most 20: skip 5, limit 7.
        assert_eq!((lead.skip, lead.limit, lead.stages), (5, Some(7), 6));
        // A second $sort, or a $match after a $sort, ends the read.
        let lead = read(vec![doc! {"$sort": {"b": 1}}, doc! {"$match": {"a": 1}}]);
        assert_eq!((lead.stages, lead.sort.is_some()), (1, true));
        let lead = read(vec![doc! {"$unset": "x"}, doc! {"$match": {"a": 1}}]);
        assert_eq!((lead.stages, lead.sort.is_none()), (0, true));
        // Skipping past the limit leaves nothing.
        let lead = read(vec![doc! {"$limit": 3}, doc! {"$skip": 5}]);
        assert_eq!((lead.skip, lead.limit), (5, Some(0)));
        let rest = Pipeline::parse(&[doc! {"$limit": 3}, doc! {"$count": "n"}])
            .unwrap()
            .after(1);
        assert_eq!(rest.stages.len(), 1);
    }

    #[test]
    fn group_with_accumulators() {
        let out = run(
            vec![
                doc! {"$group": {"_id": "$k", "total": {"$sum": "$n"}, "avg": {"$avg": "$n"},
                    "ids": {"$push": "$_id"}, "max": {"$max": "$n"}, "first": {"$first": "$_id"}, "c": {"$count": {}}}},
                doc! {"$sort": {"_id": 1}},
            ],
            sample(),
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": null, "total": 4, "avg": 4.0, "ids": [4], "max": 4, "first": 4, "c": 1},
                doc! {"_id": "a", "total": 4.5, "avg": 2.25, "ids": [1, 3], "max": 3.5, "first": 1, "c": 2},
                doc! {"_id": "b", "total": 2, "avg": 2.0, "ids": [2], "max": 2, "first": 2, "c": 1},
            ]
        );
        let out = run(
            vec![
                doc! {"$group": {"_id": {"k": "$k"}, "s": {"$sum": 1}}},
                doc! {"$count": "groups"},
            ],
            sample(),
        )
        .unwrap();
        assert_eq!(out, vec![doc! {"groups": 3}]);
    }

    #[test]
    fn reshaping_stages() {
        let input = vec![doc! {"_id": 1, "a": {"b": 2}, "xs": [1, 2]}];
        let out = run(
            vec![doc! {"$project": {"b": "$a.b", "_id": 0}}],
            input.clone(),
        )
        .unwrap();
        assert_eq!(out, vec![doc! {"b": 2}]);
        let out = run(
            vec![doc! {"$addFields": {"c": {"$add": ["$a.b", 1]}, "a.d": 1}}],
            input.clone(),
        )
        .unwrap();
        assert_eq!(
            out,
            vec![doc! {"_id": 1, "a": {"b": 2, "d": 1}, "xs": [1, 2], "c": 3}]
        );
        let out = run(
            vec![doc! {"$addFields": {"a": {"e": 5}, "z": {}}}],
            input.clone(),
        )
        .unwrap();
        assert_eq!(
            out,
            vec![doc! {"_id": 1, "a": {"b": 2, "e": 5}, "xs": [1, 2], "z": {}}]
        );
        let out = run(
            vec![doc! {"$replaceRoot": {"newRoot": "$a"}}],
            input.clone(),
        )
        .unwrap();
        assert_eq!(out, vec![doc! {"b": 2}]);
        let out = run(
            vec![doc! {"$set": {"arr.n": 1}}],
            vec![doc! {"_id": 1, "arr": [{"m": 0}, 5, [{"m": 1}]]}],
        )
        .unwrap();
        assert_eq!(
            out,
            vec![doc! {"_id": 1, "arr": [{"m": 0, "n": 1}, {"n": 1}, [{"m": 1, "n": 1}]]}]
        );
        let out = run(vec![doc! {"$unset": ["a", "xs"]}], input.clone()).unwrap();
        assert_eq!(out, vec![doc! {"_id": 1}]);
        let out = run(
            vec![doc! {"$unwind": "$xs"}, doc! {"$project": {"xs": 1}}],
            input,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![doc! {"_id": 1, "xs": 1}, doc! {"_id": 1, "xs": 2}]
        );
    }

    #[test]
    fn stage_errors() {
        let e = Pipeline::parse(&[doc! {"$foo": {}}]).unwrap_err();
        assert_eq!((e.code, e.code_name), (40324, "Location40324"));
        assert_eq!(e.message, "Unrecognized pipeline stage name: '$foo'");
        assert_eq!(
            Pipeline::parse(&[doc! {"$match": {}, "$limit": 1}])
                .unwrap_err()
                .code,
            40323
        );
        assert_eq!(
            Pipeline::parse(&[doc! {"$group": {"n": {"$sum": 1}}}])
                .unwrap_err()
                .code,
            15955
        );
        assert!(Pipeline::parse(&[doc! {"$limit": 0}]).is_err());
        assert!(Pipeline::parse(&[doc! {"$lookup": {}}]).is_err());
    }
}

mod unwind {
    use crate::query::aggregate::reshape::{unwind, unwind_by_copy};
    use crate::query::aggregate::Pipeline;
    use bson::{doc, Document};

    #[test]
    fn dotted_path_with_index_keeps_field_order() {
        let p = Pipeline::parse(&[doc! {"$unwind": {
            "path": "$a.b",
            "includeArrayIndex": "i",
            "preserveNullAndEmptyArrays": true
        }}])
        .unwrap();
        let input = vec![
            doc! {"_id": 1, "a": {"x": 0, "b": [10, {"c": 1}], "y": 2}, "z": 3},
            doc! {"_id": 2, "a": {"b": []}},
            doc! {"_id": 3, "a": {"b": null}},
            doc! {"_id": 4, "a": 5},
            doc! {"_id": 5, "a": {"b": "s"}},
        ];
        assert_eq!(
            p.run(input).unwrap(),
            vec![
                doc! {"_id": 1, "a": {"x": 0, "b": 10, "y": 2}, "z": 3, "i": 0_i64},
                doc! {"_id": 1, "a": {"x": 0, "b": {"c": 1}, "y": 2}, "z": 3, "i": 1_i64},
                doc! {"_id": 2, "a": {}, "i": null},
                doc! {"_id": 3, "a": {"b": null}, "i": null},
                doc! {"_id": 4, "a": 5, "i": null},
                doc! {"_id": 5, "a": {"b": "s"}, "i": null},
            ]
        );
    }

    /// Taking the array out first gives what copying the whole document per element gave.
    #[test]
    fn agrees_with_copying_the_document_per_element() {
        let docs = [
            doc! {"a": [1, 2, 3], "b": 1},
            doc! {"b": 1, "a": {"b": [1, [2], {"c": 3}], "d": 4}},
            doc! {"a": {"b": {"c": [5, 6]}}},
            doc! {"a": [{"b": [1, 2]}, {"b": 3}]},
            doc! {"a": [[1, 2], [3]], "i": "old"},
            doc! {"a": [], "i": 9},
            doc! {"a": null},
            doc! {"a": {"b": null}},
            doc! {"a": "scalar"},
            doc! {"a": {"b": {}}},
            doc! {"x": 1},
            doc! {"a": 7, "i": 1},
        ];
        let paths = ["a", "a.b", "a.b.c", "a.0", "a.1.b", "a.0.b", "x.y", "i", ""];
        for d in &docs {
            for path in paths {
                for index in [None, Some("i"), Some("a"), Some("n.m")] {
                    for preserve in [false, true] {
                        let (mut fast, mut copied): (Vec<Document>, Vec<Document>) =
                            (Vec::new(), Vec::new());
                        unwind(d.clone(), path, index, preserve, &mut fast);
                        unwind_by_copy(d.clone(), path, index, preserve, &mut copied);
                        assert_eq!(fast, copied, "{d} {path} {index:?} {preserve}");
                    }
                }
            }
        }
    }
}

mod chains {
    use crate::query::aggregate::*;
    use bson::doc;

    /// The chain of `stages`: the first segment's length, then each step's kind with the
    /// length of the segment after it.
    fn shape(stages: Vec<bson::Document>) -> Option<(usize, Vec<(String, usize)>)> {
        let chain = Pipeline::parse(&stages).unwrap().chain()?;
        let steps = chain
            .steps
            .iter()
            .map(|(step, after)| {
                let kind = match step {
                    ChainStep::Sort { skip, limit, .. } => format!("sort {skip} {limit:?}"),
                    ChainStep::Group(_) => "group".to_string(),
                    ChainStep::Window(_) => "window".to_string(),
                    ChainStep::Slice { skip, limit } => format!("slice {skip} {limit:?}"),
                    ChainStep::Count(field) => format!("count {field}"),
                    ChainStep::Bucket(_) => "bucket".to_string(),
                    ChainStep::BucketAuto(_) => "bucketAuto".to_string(),
                    ChainStep::Sample(size) => format!("sample {size}"),
                    ChainStep::Densify(_) => "densify".to_string(),
                    ChainStep::UnionWith { collection, .. } => format!("union {collection}"),
                    ChainStep::Facet(branches) => {
                        let steps: Vec<String> = branches
                            .iter()
                            .map(|(name, chain)| format!("{name}:{}", chain.steps.len()))
                            .collect();
                        format!("facet {}", steps.join(","))
                    }
                };
                (kind, after.stages.len())
            })
            .collect();
        Some((chain.first.stages.len(), steps))
    }

    #[test]
    fn blocking_stages_split_per_document_ones() {
        let set = doc! {"$set": {"x": 1}};
        let window = doc! {"$setWindowFields": {"output": {"n": {"$count": {}}}}};
        assert_eq!(
            shape(vec![
                set.clone(),
                doc! {"$sort": {"x": 1}},
                doc! {"$skip": 2},
                doc! {"$limit": 10},
                doc! {"$skip": 3},
                set.clone(),
                doc! {"$group": {"_id": "$x"}},
                window,
                doc! {"$project": {"x": 1}},
            ]),
            Some((
                1,
                vec![
                    ("sort 5 Some(7)".to_string(), 1),
                    ("group".to_string(), 0),
                    ("window".to_string(), 1)
                ]
            ))
        );
        assert_eq!(
            shape(vec![
                doc! {"$sort": {"x": 1}},
                doc! {"$limit": 4},
                doc! {"$limit": 9}
            ]),
            Some((0, vec![("sort 0 Some(4)".to_string(), 0)]))
        );
        assert_eq!(
            shape(vec![set.clone(), doc! {"$count": "n"}, set.clone()]),
            Some((1, vec![("count n".to_string(), 1)]))
        );
        let bucket = doc! {"$bucket": {"groupBy": "$x", "boundaries": [0, 5]}};
        assert_eq!(
            shape(vec![set.clone(), bucket]),
            Some((1, vec![("bucket".to_string(), 0)]))
        );
        // `$sample`, `$bucketAuto` and `$unionWith` are steps; `$graphLookup` and `$redact`
        // look at one document at a time.
        assert_eq!(
            shape(vec![
                doc! {"$redact": "$$KEEP"},
                doc! {"$sample": {"size": 3}},
                doc! {"$graphLookup": {"from": "o", "startWith": "$a", "connectFromField": "a",
                "connectToField": "b", "as": "c"}},
                doc! {"$bucketAuto": {"groupBy": "$x", "buckets": 2}},
                doc! {"$unionWith": "o"},
                set.clone(),
            ]),
            Some((
                1,
                vec![
                    ("sample 3".to_string(), 1),
                    ("bucketAuto".to_string(), 0),
                    ("union o".to_string(), 1)
                ]
            ))
        );
        assert_eq!(
            shape(vec![
                doc! {"$densify": {"field": "x", "range": {"step": 1, "bounds": "full"}}},
                set.clone()
            ]),
            Some((0, vec![("densify".to_string(), 1)]))
        );
        // A `$facet` is a step whose sub-pipelines are chains, with steps or without.
        assert_eq!(
            shape(vec![doc! {"$facet": {
                "sorted": [{"$sort": {"x": 1}}, {"$limit": 2}, {"$group": {"_id": "$x"}}],
                "plain": [set.clone()],
            }}]),
            Some((0, vec![("facet sorted:2,plain:0".to_string(), 0)]))
        );
        // A `$skip`/`$limit` after a per-document stage is a slice of its own.
        assert_eq!(
            shape(vec![
                set.clone(),
                doc! {"$skip": 2},
                doc! {"$limit": 3},
                set.clone(),
                doc! {"$limit": 1},
            ]),
            Some((
                1,
                vec![
                    ("slice 2 Some(3)".to_string(), 1),
                    ("slice 0 Some(1)".to_string(), 0)
                ]
            ))
        );
    }

    #[test]
    fn other_stages_are_not_chained() {
        let set = doc! {"$set": {"x": 1}};
        // No blocking stage: the pipeline streams as it is.
        assert_eq!(shape(vec![set.clone()]), None);
        // Stages of other kinds: the output stages the command writes through.
        for other in [doc! {"$merge": {"into": "other"}}, doc! {"$out": "other"}] {
            let stages = vec![doc! {"$sort": {"x": 1}}, set.clone(), other.clone()];
            assert_eq!(shape(stages), None, "{other}");
        }
    }
}
