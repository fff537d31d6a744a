//! Unit tests of `$out`/`$merge` parsing and of what `$merge` writes for one document, and
//! of the placement rules of output and collection-less stages.
//!
//! Not for: writing collections (the pymongo suite `test_aggregate_writes.py` does that
//! through a real server).

use bson::{doc, Bson, Document};

use super::output::{
    parse_merge, parse_out, MatchedWrite, OutputStage, WhenMatched, WhenNotMatched,
};
use super::Pipeline;

fn merge(spec: Document) -> super::output::MergeSpec {
    match parse_merge(&Bson::Document(spec)) {
        Ok(OutputStage::Merge(spec)) => *spec,
        other => panic!("not a $merge: {other:?}"),
    }
}

fn code_of(stages: &[Document]) -> i32 {
    match Pipeline::parse(stages) {
        Ok(_) => 0,
        Err(e) => e.code,
    }
}

#[test]
fn merge_defaults_and_string_form() {
    let spec = merge(doc! {"into": "t"});
    assert_eq!(spec.on, vec!["_id".to_string()]);
    assert_eq!(spec.when_matched, WhenMatched::Merge);
    assert_eq!(spec.when_not_matched, WhenNotMatched::Insert);
    let Ok(OutputStage::Merge(short)) = parse_merge(&Bson::String("t".into())) else {
        panic!("string form");
    };
    assert_eq!(*short, spec);
}

#[test]
fn merge_mode_pairs_without_a_strategy_are_refused() {
    for (matched, not_matched) in [
        ("keepExisting", "discard"),
        ("keepExisting", "fail"),
        ("fail", "discard"),
        ("fail", "fail"),
    ] {
        let spec = doc! {"into": "t", "whenMatched": matched, "whenNotMatched": not_matched};
        let err = parse_merge(&Bson::Document(spec)).unwrap_err();
        assert_eq!(err.code, 51181, "{matched}/{not_matched}");
    }
    let spec = doc! {"into": "t", "whenMatched": "fail", "whenNotMatched": "insert"};
    assert!(parse_merge(&Bson::Document(spec)).is_ok());
}

#[test]
fn merge_spec_errors() {
    let code = |spec: Bson| parse_merge(&spec).unwrap_err().code;
    assert_eq!(code(Bson::Int32(1)), 14);
    let reserved = doc! {"into": "t", "let": {"new": 1}, "whenMatched": [{"$set": {"a": 1}}]};
    assert_eq!(code(Bson::Document(reserved)), 51273);
    assert_eq!(code(Bson::Document(doc! {})), 40414);
    assert_eq!(code(Bson::Document(doc! {"into": 1})), 51178);
    assert_eq!(code(Bson::Document(doc! {"into": "t", "on": []})), 51187);
    assert_eq!(code(Bson::Document(doc! {"into": "t", "on": [1]})), 51134);
    assert_eq!(
        code(Bson::Document(doc! {"into": "t", "on": ["a", "a"]})),
        31465
    );
    assert_eq!(
        code(Bson::Document(doc! {"into": "t", "let": {"v": 1}})),
        51199
    );
    assert_eq!(
        code(Bson::Document(doc! {"into": "t", "whenMatched": 3})),
        51191
    );
    // A whenMatched pipeline may only hold update stages.
    let spec = doc! {"into": "t", "whenMatched": [{"$match": {}}]};
    assert_eq!(code(Bson::Document(spec)), 168);
}

#[test]
fn out_spec_errors() {
    assert_eq!(parse_out(&Bson::Int32(1)).unwrap_err().code, 16990);
    assert_eq!(
        parse_out(&Bson::Document(doc! {"coll": "c"}))
            .unwrap_err()
            .code,
        40414
    );
    assert_eq!(
        parse_out(&Bson::String(String::new())).unwrap_err().code,
        73
    );
    let Ok(OutputStage::Out(target)) = parse_out(&Bson::Document(doc! {"db": "d", "coll": "c"}))
    else {
        panic!("{{db, coll}}");
    };
    assert_eq!((target.db_or("x"), target.coll.as_str()), ("d", "c"));
}

#[test]
fn matched_writes_of_each_mode() {
    let existing = doc! {"_id": 1, "a": 1, "b": 1};
    let result = doc! {"_id": 1, "a": 10, "c": 10};
    let write = |spec: Document| merge(spec).matched_write(&existing, &result).unwrap();
    assert_eq!(
        write(doc! {"into": "t", "whenMatched": "replace"}),
        MatchedWrite::Write(doc! {"_id": 1, "a": 10, "c": 10})
    );
    assert_eq!(
        write(doc! {"into": "t", "whenMatched": "merge"}),
        MatchedWrite::Write(doc! {"_id": 1, "a": 10, "b": 1, "c": 10})
    );
    assert_eq!(
        write(doc! {"into": "t", "whenMatched": "keepExisting"}),
        MatchedWrite::Keep
    );
    assert_eq!(
        write(doc! {"into": "t", "whenMatched": "fail"}),
        MatchedWrite::Fail
    );
    assert_eq!(
        write(doc! {"into": "t", "whenMatched": [{"$set": {"a": {"$add": ["$a", "$$new.a"]}}}]}),
        MatchedWrite::Write(doc! {"_id": 1, "a": 11, "b": 1})
    );
    assert_eq!(
        write(doc! {"into": "t", "let": {"x": "$c"}, "whenMatched": [{"$set": {"x": "$$x"}}]}),
        MatchedWrite::Write(doc! {"_id": 1, "a": 1, "b": 1, "x": 10})
    );
    // Another _id on a match by other fields is 66 ImmutableField.
    let spec = merge(doc! {"into": "t", "on": "a", "whenMatched": "replace"});
    let err = spec
        .matched_write(&existing, &doc! {"_id": 2, "a": 1})
        .unwrap_err();
    assert_eq!(err.code, 66);
}

#[test]
fn match_filters_need_the_on_fields() {
    let by_id = merge(doc! {"into": "t"});
    let mut without_id = doc! {"a": 1};
    let filter = by_id.match_filter(&mut without_id).unwrap();
    assert!(matches!(without_id.get("_id"), Some(Bson::ObjectId(_))));
    assert_eq!(without_id.keys().next().map(String::as_str), Some("_id"));
    assert!(filter.contains_key("_id"));
    let by_fields = merge(doc! {"into": "t", "on": ["a", "b.c"]});
    let filter = by_fields
        .match_filter(&mut doc! {"a": 1, "b": {"c": 2}})
        .unwrap();
    assert_eq!(filter, doc! {"a": {"$eq": 1}, "b.c": {"$eq": 2}});
    assert_eq!(
        by_fields.match_filter(&mut doc! {"a": 1}).unwrap_err().code,
        51132
    );
    let mut null_b = doc! {"a": 1, "b": {"c": null}};
    assert_eq!(by_fields.match_filter(&mut null_b).unwrap_err().code, 51132);
    let mut array_a = doc! {"a": [1], "b": {"c": 2}};
    assert_eq!(
        by_fields.match_filter(&mut array_a).unwrap_err().code,
        51185
    );
}

#[test]
fn output_and_input_stages_stand_where_mongodb_puts_them() {
    assert_eq!(code_of(&[doc! {"$out": "x"}, doc! {"$match": {}}]), 40601);
    assert_eq!(code_of(&[doc! {"$merge": "x"}, doc! {"$limit": 1}]), 40601);
    assert_eq!(code_of(&[doc! {"$match": {}}, doc! {"$out": "x"}]), 0);
    assert_eq!(code_of(&[doc! {"$facet": {"f": [{"$merge": "x"}]}}]), 40600);
    let lookup = doc! {"$lookup": {"from": "y", "pipeline": [{"$out": "x"}], "as": "z"}};
    assert_eq!(code_of(&[lookup]), 51047);
    let union = doc! {"$unionWith": {"coll": "y", "pipeline": [{"$merge": "x"}]}};
    assert_eq!(code_of(&[union]), 31441);
    assert_eq!(
        code_of(&[doc! {"$match": {}}, doc! {"$documents": []}]),
        40602
    );
    assert_eq!(
        code_of(&[doc! {"$limit": 1}, doc! {"$listLocalSessions": {}}]),
        40602
    );
}

#[test]
fn documents_feed_the_stages_after_them() {
    let pipeline = Pipeline::parse(&[
        doc! {"$documents": [{"x": 10}, {"x": 2}, {"x": 5}]},
        doc! {"$sort": {"x": 1}},
        doc! {"$out": "sorted"},
    ])
    .unwrap();
    assert_eq!(pipeline.output().map(OutputStage::name), Some("$out"));
    let inner = pipeline.inner(0);
    assert_eq!(inner.stages.len(), 2);
    let docs = inner.run(Vec::new()).unwrap();
    assert_eq!(docs, vec![doc! {"x": 2}, doc! {"x": 5}, doc! {"x": 10}]);
    // The stage itself never runs as a plain read.
    assert!(pipeline.run(Vec::new()).is_err());
}

#[test]
fn new_is_undefined_with_let_unless_the_merge_inserts() {
    let stages = bson::bson!([{"$set": {"a": "$$new.a"}}]);
    let spec = doc! {"into": "t", "let": {"x": 1}, "whenMatched": stages.clone(), "whenNotMatched": "discard"};
    assert!(parse_merge(&Bson::Document(spec)).is_err());
    let spec =
        doc! {"into": "t", "let": {"x": 1}, "whenMatched": stages, "whenNotMatched": "insert"};
    let spec = merge(spec);
    let written = spec
        .matched_write(&doc! {"_id": 1}, &doc! {"_id": 1, "a": 5})
        .unwrap();
    assert_eq!(written, MatchedWrite::Write(doc! {"_id": 1, "a": 5}));
}
