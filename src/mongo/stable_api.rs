//! The Stable API parameters a command carries (`apiVersion`, `apiStrict`,
//! `apiDeprecationErrors`) and what `apiStrict: true` refuses with 323 APIStrictError: a
//! command outside API V1 (`command_table`), and inside a V1 command the fields, index options
//! and aggregation stages MongoDB marks unstable (the server's IDL files and its
//! `api_version_unstable_fields.js` / `api_version_pipeline_stages.js` tests): `find`'s
//! `tailable`, `awaitData`, `min`, …, `aggregate`'s `explain`, `$currentOp`, `$indexStats`, …,
//! `create`'s `size`, `max`, `autoIndexId`, …, `createIndexes`' `sparse`, `background` and
//! text indexes, `collMod`'s `index.unique` and `dryRun`; and, through
//! `stable_api_operators`, the expression operators outside API V1 wherever the command holds
//! expressions (its pipelines, filters' `$expr`, projections, `let`), also in the command an
//! `explain` wraps.
//!
//! `apiDeprecationErrors: true` refuses nothing: API V1 has deprecated no command or option
//! yet (MongoDB's own test of it needs a test-only version 2).
//!
//! Not for: whether the command runs at all otherwise (its handler), or who may run it
//! (`auth`).

use bson::{Bson, Document};

use super::command_table::{Command, CommandSpec};
use super::error::OpError;
use super::request::{type_name, CommandRequest};
use super::stable_api_operators as operators;

/// The fields of a V1 command that are outside API V1.
fn unstable_fields(command: Command) -> &'static [&'static str] {
    match command {
        Command::Find => &[
            "ntoreturn",
            "min",
            "max",
            "returnKey",
            "showRecordId",
            "tailable",
            "oplogReplay",
            "noCursorTimeout",
            "awaitData",
            "options",
            "term",
            "readOnce",
            "allowSpeculativeMajorityRead",
            "$_requestResumeToken",
            "$_resumeAfter",
            "runtimeConstants",
            "collectionUUID",
        ],
        Command::Aggregate => &[
            "explain",
            "$_requestReshardingResumeToken",
            "runtimeConstants",
            "isMapReduceCommand",
            "collectionUUID",
            "$_passthroughToShard",
            "encryptionInformation",
            "$_externalDataSources",
            "sampleId",
            "$_requestResumeToken",
            "$_resumeAfter",
        ],
        Command::Create => &[
            "autoIndexId",
            "size",
            "max",
            "storageEngine",
            "indexOptionDefaults",
            "recordPreImages",
            "changeStreamPreAndPostImages",
            "temp",
            "flags",
        ],
        Command::CreateIndexes => &[
            "ignoreUnknownIndexOptions",
            "returnOnStart",
            "collectionUUID",
        ],
        Command::CollMod => &["changeStreamPreAndPostImages", "dryRun"],
        _ => &[],
    }
}

/// The options of one index of `createIndexes` that are outside API V1.
const UNSTABLE_INDEX_OPTIONS: &[&str] = &[
    "background",
    "sparse",
    "storageEngine",
    "bucketSize",
    "columnstoreProjection",
    "columnstoreCompressor",
    "dropDups",
    "originalSpec",
    "prepareUnique",
];

/// Aggregation stages outside API V1 (`$collStats` is in it with `count` alone). `$fill` is
/// registered `kNeverInVersion1` (MongoDB's `document_source_fill.cpp`).
const UNSTABLE_STAGES: &[&str] = &[
    "$currentOp",
    "$indexStats",
    "$listLocalSessions",
    "$listSessions",
    "$planCacheStats",
    "$search",
    "$searchMeta",
    "$listSearchIndexes",
    "$vectorSearch",
    "$fill",
];

/// Checks the Stable API parameters of `request`: version "1" is the only one (322
/// APIVersionError otherwise), the two flags need a version (72 InvalidOptions), a flag is a
/// boolean (14), and `apiStrict: true` refuses what is outside API V1 (323 APIStrictError).
pub fn check(spec: &CommandSpec, request: &CommandRequest) -> Result<(), OpError> {
    let flag = |field: &str| -> Result<bool, OpError> {
        match request.body.get(field) {
            None => Ok(false),
            Some(Bson::Boolean(value)) => Ok(*value),
            Some(other) => Err(OpError::TypeMismatch(format!(
                "BSON field '{field}' is the wrong type '{}', expected type 'bool'",
                type_name(other)
            ))),
        }
    };
    let strict = flag("apiStrict")?;
    flag("apiDeprecationErrors")?;
    match request.body.get("apiVersion") {
        None if request.body.contains_key("apiStrict")
            || request.body.contains_key("apiDeprecationErrors") =>
        {
            Err(OpError::InvalidOptions(
                "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion".into(),
            ))
        }
        None => Ok(()),
        Some(Bson::String(version)) if version == "1" => {
            if !strict {
                return Ok(());
            }
            if !spec.in_api_v1() {
                return Err(OpError::ApiStrict(format!(
                    "Provided apiStrict:true, but the command {} is not in API Version 1. Information on supported commands and migrations in API Version 1 can be found at https://dochub.mongodb.org/core/manual-versioning",
                    request.name
                )));
            }
            check_strict_v1(spec.command, request)
        }
        Some(Bson::String(version)) => Err(OpError::ApiVersion(format!(
            "API version must be \"1\", got \"{version}\""
        ))),
        Some(other) => Err(OpError::TypeMismatch(format!(
            "BSON field 'apiVersion' is the wrong type '{}', expected type 'string'",
            type_name(other)
        ))),
    }
}

/// Whether the command `body` runs under `apiStrict: true` in API V1 ([`check`] has refused
/// malformed parameters before a handler asks).
pub fn is_strict_v1(body: &Document) -> bool {
    body.get_str("apiVersion")
        .is_ok_and(|version| version == "1")
        && body.get_bool("apiStrict").is_ok_and(|strict| strict)
}

/// The stored pipeline of a view a strict V1 command reads (through every view down to the
/// collection): MongoDB parses it under the command's API parameters, so its stages and
/// operators outside API V1 are 323 as if the command had sent them.
pub fn check_view_pipeline(body: &Document, pipeline: &[Document]) -> Result<(), OpError> {
    if !is_strict_v1(body) {
        return Ok(());
    }
    let stages: Vec<Bson> = pipeline.iter().cloned().map(Bson::Document).collect();
    check_pipeline(&stages)
}

/// 323 for a field of `command` outside API V1 (MongoDB's IDL parser's message).
fn unstable_field(path: &str) -> OpError {
    OpError::ApiStrict(format!(
        "BSON field '{path}' is not allowed with apiStrict:true."
    ))
}

/// What a V1 command under `apiStrict: true` may not carry.
fn check_strict_v1(command: Command, request: &CommandRequest) -> Result<(), OpError> {
    check_v1_body(command, &request.name, &request.body)
}

/// The fields, stages and operators outside API V1 in the body of the V1 command `name`.
fn check_v1_body(command: Command, name: &str, body: &Document) -> Result<(), OpError> {
    let fields = unstable_fields(command);
    if let Some(field) = body.keys().find(|key| fields.contains(&key.as_str())) {
        return Err(unstable_field(&format!("{name}.{field}")));
    }
    if let Ok(variables) = body.get_document("let") {
        operators::check_variables(variables)?;
    }
    let filter = |field: &str| match body.get_document(field) {
        Ok(filter) => operators::check_filter(filter),
        Err(_) => Ok(()),
    };
    let pipeline = |field: &str| match body.get(field) {
        Some(Bson::Array(stages)) => check_pipeline(stages),
        _ => Ok(()),
    };
    let statements = |field: &str| -> Vec<&Document> {
        body.get_array(field)
            .map(|statements| statements.iter().filter_map(Bson::as_document).collect())
            .unwrap_or_default()
    };
    match command {
        Command::Aggregate => pipeline("pipeline"),
        Command::Create => {
            filter("validator")?;
            pipeline("pipeline")
        }
        Command::CollMod => {
            if body
                .get_document("index")
                .is_ok_and(|index| index.contains_key("unique"))
            {
                return Err(unstable_field("collMod.index.unique"));
            }
            filter("validator")?;
            pipeline("pipeline")
        }
        Command::CreateIndexes => match body.get("indexes") {
            Some(Bson::Array(indexes)) => indexes
                .iter()
                .filter_map(Bson::as_document)
                .try_for_each(check_index),
            _ => Ok(()),
        },
        Command::Find => {
            filter("filter")?;
            match body.get_document("projection") {
                Ok(projection) => operators::check_projection(projection),
                Err(_) => Ok(()),
            }
        }
        Command::Count => filter("query"),
        Command::Delete => statements("deletes").into_iter().try_for_each(|statement| {
            match statement.get_document("q") {
                Ok(filter) => operators::check_filter(filter),
                Err(_) => Ok(()),
            }
        }),
        Command::Update => statements("updates").into_iter().try_for_each(|statement| {
            if let Ok(filter) = statement.get_document("q") {
                operators::check_filter(filter)?;
            }
            match statement.get("u") {
                Some(Bson::Array(stages)) => check_pipeline(stages),
                _ => Ok(()),
            }
        }),
        Command::FindAndModify => {
            filter("query")?;
            pipeline("update")?;
            match body.get_document("fields") {
                Ok(projection) => operators::check_projection(projection),
                Err(_) => Ok(()),
            }
        }
        // The explained command is held to API V1 as if it ran.
        Command::Explain => match body.get_document("explain") {
            Ok(inner) => {
                let inner_name = inner.keys().next().map(String::as_str).unwrap_or_default();
                match super::command_table::lookup(inner_name) {
                    Some(spec) if spec.in_api_v1() => {
                        check_v1_body(spec.command, inner_name, inner)
                    }
                    _ => Ok(()),
                }
            }
            Err(_) => Ok(()),
        },
        _ => Ok(()),
    }
}

/// One index of `createIndexes`: its unstable options, and text indexes (not in API V1).
fn check_index(index: &Document) -> Result<(), OpError> {
    if let Some(option) = index
        .keys()
        .find(|key| UNSTABLE_INDEX_OPTIONS.contains(&key.as_str()))
    {
        return Err(unstable_field(&format!("NewIndexSpec.{option}")));
    }
    let text = index
        .get_document("key")
        .is_ok_and(|key| key.values().any(|kind| kind.as_str() == Some("text")));
    if text {
        return Err(OpError::ApiStrict(
            "Index type 'text' is not allowed with apiStrict: true".into(),
        ));
    }
    Ok(())
}

/// The stages of a pipeline, their operators, and the pipelines inside them (`$lookup`,
/// `$unionWith`, `$facet`, `$merge`'s `whenMatched`).
fn check_pipeline(stages: &[Bson]) -> Result<(), OpError> {
    for stage in stages.iter().filter_map(Bson::as_document) {
        let Some((name, spec)) = stage.iter().next() else {
            continue;
        };
        let refused = || {
            OpError::ApiStrict(format!(
                "{name} is not allowed with 'apiStrict: true' in API Version 1"
            ))
        };
        if UNSTABLE_STAGES.contains(&name.as_str()) {
            return Err(refused());
        }
        operators::check_stage(name, spec)?;
        let spec = match spec {
            Bson::Document(spec) => spec,
            _ => continue,
        };
        match name.as_str() {
            // `$collStats` is in API V1 with `count` alone (drivers' estimatedDocumentCount).
            "$collStats" if spec.keys().any(|key| key != "count") => return Err(refused()),
            "$lookup" if spec.contains_key("_internalCollation") => {
                return Err(unstable_field("$lookup._internalCollation"))
            }
            "$lookup" | "$unionWith" => {
                if let Ok(inner) = spec.get_array("pipeline") {
                    check_pipeline(inner)?;
                }
            }
            "$merge" => {
                if let Ok(inner) = spec.get_array("whenMatched") {
                    check_pipeline(inner)?;
                }
            }
            "$facet" => {
                for inner in spec.values() {
                    if let Bson::Array(inner) = inner {
                        check_pipeline(inner)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn strict(body: Document) -> Result<(), OpError> {
        lenient(body, Some(true))
    }

    fn code(result: Result<(), OpError>) -> Option<i32> {
        result.err().map(|error| error.code())
    }

    #[test]
    fn unstable_fields_of_v1_commands_are_refused() {
        for body in [
            doc! {"find": "c", "tailable": true},
            doc! {"find": "c", "min": {"a": 1}},
            doc! {"find": "c", "noCursorTimeout": false},
            doc! {"aggregate": "c", "pipeline": [], "explain": true},
            doc! {"create": "c", "autoIndexId": true},
            doc! {"create": "c", "capped": true, "size": 4096},
            doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a", "sparse": true}]},
            doc! {"createIndexes": "c", "indexes": [{"key": {"a": "text"}, "name": "a"}]},
            doc! {"collMod": "c", "index": {"name": "a_1", "unique": true}},
        ] {
            assert_eq!(code(strict(body.clone())), Some(323), "{body}");
        }
    }

    #[test]
    fn stages_outside_v1_are_refused_at_any_depth() {
        for pipeline in [
            vec![doc! {"$currentOp": {}}],
            vec![doc! {"$indexStats": {}}],
            vec![doc! {"$listLocalSessions": {}}],
            vec![doc! {"$planCacheStats": {}}],
            vec![doc! {"$collStats": {"count": {}, "latencyStats": {}}}],
            vec![doc! {"$collStats": {"storageStats": {}}}],
            vec![doc! {"$unionWith": {"coll": "d", "pipeline": [{"$indexStats": {}}]}}],
            vec![doc! {"$lookup": {"from": "d", "pipeline": [{"$indexStats": {}}], "as": "x"}}],
            vec![doc! {"$facet": {"a": [], "b": [{"$indexStats": {}}]}}],
        ] {
            let body = doc! {"aggregate": "c", "pipeline": pipeline.clone(), "cursor": {}};
            assert_eq!(code(strict(body)), Some(323), "{pipeline:?}");
            let view = doc! {"create": "v", "viewOn": "c", "pipeline": pipeline.clone()};
            assert_eq!(code(strict(view)), Some(323), "view {pipeline:?}");
        }
    }

    #[test]
    fn v1_fields_and_stages_pass() {
        for body in [
            doc! {"find": "c", "filter": {}, "sort": {"a": 1}, "limit": 1, "let": {"x": 1}},
            doc! {"aggregate": "c", "pipeline": [{"$collStats": {"count": {}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$collStats": {}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$match": {}}, {"$group": {"_id": 1}}], "cursor": {}},
            doc! {"create": "c", "capped": false, "validator": {"a": 1}},
            doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a", "unique": true}]},
            doc! {"collMod": "c", "index": {"name": "a_1", "hidden": true}},
            doc! {"commitTransaction": 1},
            doc! {"abortTransaction": 1},
        ] {
            assert_eq!(code(strict(body.clone())), None, "{body}");
        }
    }

    fn lenient(body: Document, api_strict: Option<bool>) -> Result<(), OpError> {
        let name = body.keys().next().cloned().unwrap_or_default();
        let mut body = body;
        body.insert("apiVersion", "1");
        if let Some(value) = api_strict {
            body.insert("apiStrict", value);
        }
        let request = CommandRequest {
            name: name.clone(),
            db: "test".into(),
            body,
        };
        let spec = super::super::command_table::lookup(&name).expect("a command");
        check(spec, &request)
    }

    fn message(result: Result<(), OpError>) -> String {
        result
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default()
    }

    /// Commands holding an operator outside API V1 in every place MongoDB parses expressions.
    fn refused_operator_commands() -> Vec<Document> {
        let lookup_let = doc! {"$lookup": {"from": "d", "let": {"x": {"$bitOr": [1, 2]}},
        "pipeline": [], "as": "j"}};
        vec![
            doc! {"aggregate": "c", "pipeline": [{"$project": {"x": {"$bitAnd": ["$a", 1]}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$set": {"x": {"$add": [1, {"$bitNot": "$a"}]}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$set": {"x": {"$abs": {"$bitNot": "$a"}}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$set": {"x": {"$cond": {"if": {"$not": {"$bitAnd": ["$a", 1]}}, "then": 1, "else": 0}}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$set": {"x": {"$map": {"input": "$l", "in": {"$toString": {"$bitOr": ["$$this", 1]}}}}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$group": {"_id": null, "s": {"$sum": {"$bitXor": ["$a", 1]}}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$group": {"_id": {"$bitOr": ["$a", 1]}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$setWindowFields": {"sortBy": {"a": 1},
            "output": {"s": {"$sum": {"$bitAnd": ["$a", 1]}, "window": {"documents": ["unbounded", "current"]}}}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$match": {"$or": [{"a": 1}, {"$expr": {"$bitAnd": ["$a", 1]}}]}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$facet": {"f": [{"$project": {"x": {"$bitNot": "$a"}}}]}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$unionWith": {"coll": "d", "pipeline": [{"$replaceWith": {"x": {"$bitNot": "$a"}}}]}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [lookup_let], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$project": {"x": {"$filter": {"input": "$l", "cond": true, "limit": 1}}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$project": {"s": {"$meta": "textScore"}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$fill": {"output": {"a": {"method": "locf"}}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [], "cursor": {}, "let": {"v": {"$bitAnd": [1, 1]}}},
            doc! {"find": "c", "filter": {"$expr": {"$eq": [{"$bitAnd": ["$a", 1]}, 1]}}},
            doc! {"find": "c", "filter": {"$and": [{"$expr": {"$bitOr": ["$a", 1]}}]}},
            doc! {"find": "c", "projection": {"x": {"$bitXor": ["$a", 1]}}},
            doc! {"find": "c", "projection": {"s": {"$meta": "indexKey"}}},
            doc! {"count": "c", "query": {"$expr": {"$bitNot": "$a"}}},
            doc! {"delete": "c", "deletes": [{"q": {"$expr": {"$bitNot": "$a"}}, "limit": 0}]},
            doc! {"update": "c", "updates": [{"q": {"$expr": {"$bitNot": "$a"}}, "u": {"$set": {"b": 1}}}]},
            doc! {"update": "c", "updates": [{"q": {}, "u": [{"$set": {"b": {"$bitAnd": ["$a", 1]}}}]}]},
            doc! {"findAndModify": "c", "query": {}, "update": [{"$set": {"b": {"$bitOr": ["$a", 1]}}}]},
            doc! {"findAndModify": "c", "query": {"$expr": {"$bitOr": ["$a", 1]}}, "remove": true},
            doc! {"create": "c", "validator": {"$expr": {"$bitAnd": ["$a", 1]}}},
            doc! {"create": "v", "viewOn": "c", "pipeline": [{"$set": {"x": {"$bitNot": "$a"}}}]},
            doc! {"explain": {"aggregate": "c", "pipeline": [{"$set": {"x": {"$bitNot": "$a"}}}], "cursor": {}}},
            doc! {"explain": {"find": "c", "filter": {"$expr": {"$bitNot": "$a"}}}},
        ]
    }

    #[test]
    fn operators_outside_v1_are_refused_wherever_expressions_are_parsed() {
        for body in refused_operator_commands() {
            assert_eq!(code(strict(body.clone())), Some(323), "{body}");
            // The same command without `apiStrict: true` is not refused here.
            assert_eq!(code(lenient(body.clone(), None)), None, "{body}");
            assert_eq!(code(lenient(body.clone(), Some(false))), None, "{body}");
        }
    }

    #[test]
    fn refused_operators_carry_mongodb_messages() {
        let project = |expression: Bson| {
            doc! {"aggregate": "c", "pipeline": [{"$project": {"x": expression}}], "cursor": {}}
        };
        assert_eq!(
            message(strict(project(bson::bson!({"$bitAnd": [1, 3]})))),
            "$bitAnd is not allowed with 'apiStrict: true' in API Version 1"
        );
        assert_eq!(
            message(strict(project(
                bson::bson!({"$filter": {"input": [], "cond": true, "limit": 1}})
            ))),
            "limit argument of $filter operator is not allowed with 'apiStrict: true' in API Version 1"
        );
        assert_eq!(
            message(strict(project(bson::bson!({"$meta": "textScore"})))),
            "Provided apiStrict is true with an unstable meta field \"textScore\""
        );
    }

    #[test]
    fn v1_operators_and_lookalikes_pass_under_strict() {
        for body in [
            // A query operator spelled like a refused expression is not an expression.
            doc! {"find": "c", "filter": {"a": {"$bitsAllSet": 1}, "b": {"$in": [1]}}},
            // What `$literal` holds is data.
            doc! {"find": "c", "filter": {"$expr": {"$eq": ["$a", {"$literal": {"$bitAnd": 1}}]}}},
            doc! {"aggregate": "c", "pipeline": [{"$project": {"x": {"$literal": {"$bitNot": 1}}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$project": {"x": {"$filter": {"input": "$l", "cond": true}}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$project": {"r": {"$meta": "randVal"}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$group": {"_id": "$a", "t": {"$top": {"output": "$b", "sortBy": {"b": 1}}},
            "p": {"$median": {"input": "$b", "method": "approximate"}}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$setWindowFields": {"sortBy": {"a": 1},
            "output": {"r": {"$rank": {}}, "l": {"$locf": "$a"}}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$densify": {"field": "a", "range": {"step": 1, "bounds": "full"}}}], "cursor": {}},
            doc! {"aggregate": "c", "pipeline": [{"$project": {"d": {"$dateTrunc": {"date": "$t", "unit": "day"}},
            "s": {"$sortArray": {"input": "$l", "sortBy": 1}}, "g": {"$getField": "a"}}}], "cursor": {}},
            // An update document's `$bit` is an update operator, not an expression.
            doc! {"update": "c", "updates": [{"q": {"a": 1}, "u": {"$bit": {"a": {"and": 1}}}}]},
            doc! {"find": "c", "projection": {"l": {"$slice": 2}, "e": {"$elemMatch": {"x": {"$bitsAnySet": 1}}}}},
        ] {
            assert_eq!(code(strict(body.clone())), None, "{body}");
        }
    }
}
