//! The Stable API parameters a command carries (`apiVersion`, `apiStrict`,
//! `apiDeprecationErrors`) and what `apiStrict: true` refuses with 323 APIStrictError: a
//! command outside API V1 (`command_table`), and inside a V1 command the fields, index options
//! and aggregation stages MongoDB marks unstable (the server's IDL files and its
//! `api_version_unstable_fields.js` / `api_version_pipeline_stages.js` tests): `find`'s
//! `tailable`, `awaitData`, `min`, …, `aggregate`'s `explain`, `$currentOp`, `$indexStats`, …,
//! `create`'s `size`, `max`, `autoIndexId`, …, `createIndexes`' `sparse`, `background` and
//! text indexes, `collMod`'s `index.unique` and `dryRun`.
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

/// Aggregation stages outside API V1 (`$collStats` is in it with `count` alone).
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

/// 323 for a field of `command` outside API V1 (MongoDB's IDL parser's message).
fn unstable_field(path: &str) -> OpError {
    OpError::ApiStrict(format!(
        "BSON field '{path}' is not allowed with apiStrict:true."
    ))
}

/// What a V1 command under `apiStrict: true` may not carry.
fn check_strict_v1(command: Command, request: &CommandRequest) -> Result<(), OpError> {
    let fields = unstable_fields(command);
    if let Some(field) = request
        .body
        .keys()
        .find(|key| fields.contains(&key.as_str()))
    {
        return Err(unstable_field(&format!("{}.{field}", request.name)));
    }
    match command {
        Command::Aggregate | Command::Create => match request.body.get("pipeline") {
            Some(Bson::Array(stages)) => check_pipeline(stages),
            _ => Ok(()),
        },
        Command::CreateIndexes => match request.body.get("indexes") {
            Some(Bson::Array(indexes)) => indexes
                .iter()
                .filter_map(Bson::as_document)
                .try_for_each(check_index),
            _ => Ok(()),
        },
        Command::CollMod => match request.body.get_document("index") {
            Ok(index) if index.contains_key("unique") => {
                Err(unstable_field("collMod.index.unique"))
            }
            _ => Ok(()),
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

/// The stages of a pipeline and of the pipelines inside it (`$lookup`, `$unionWith`, `$facet`).
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
        let name = body.keys().next().cloned().unwrap_or_default();
        let mut body = body;
        body.insert("apiVersion", "1");
        body.insert("apiStrict", true);
        let request = CommandRequest {
            name: name.clone(),
            db: "test".into(),
            body,
        };
        let spec = super::super::command_table::lookup(&name).expect("a command");
        check(spec, &request)
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
}
