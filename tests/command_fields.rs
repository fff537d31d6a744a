//! No option is unknown: every field MongoDB 7.0's reference documents for the commands
//! applications send (the command pages of the manual, "Syntax" and "Command Fields") is sent
//! to the real server one at a time, and the answer is either success — the field is
//! implemented — or MongoDB's error for what docgate does not do (115 CommandNotSupported,
//! 2 BadValue, 72 InvalidOptions, …). Never 40415 (an unknown field), which would mean the
//! field was not even looked at; a field no command documents still gets 40415.
//!
//! Also here: command-level `let` honoured by every command that takes it, and the options
//! that used to be accepted and never read, each now refused with MongoDB's error.
//!
//! Not for: what each other option does (the suites of each command family test that).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;

use common::TestServer;
use driver_support::{collect, fresh};
use mongodb::bson::{doc, Bson, Document};

/// MongoDB's code for a field its command parser does not know.
const UNKNOWN_FIELD: i32 = 40415;

/// A command's name, a base document that runs, and each documented field with a value of
/// the documented type.
type DocumentedCommand = (&'static str, Document, Vec<(&'static str, Bson)>);

/// The commands and their documented fields.
fn documented_fields() -> Vec<DocumentedCommand> {
    let empty = || Bson::Document(Document::new());
    vec![
        (
            "find",
            doc! {"find": "items"},
            vec![
                ("filter", empty()),
                ("sort", Bson::Document(doc! {"a": 1})),
                ("projection", Bson::Document(doc! {"a": 1})),
                ("hint", Bson::Document(doc! {"_id": 1})),
                ("skip", Bson::Int32(1)),
                ("limit", Bson::Int32(1)),
                ("batchSize", Bson::Int32(1)),
                ("singleBatch", Bson::Boolean(true)),
                ("comment", Bson::String("c".into())),
                ("maxTimeMS", Bson::Int32(1000)),
                ("readConcern", Bson::Document(doc! {"level": "local"})),
                ("max", Bson::Document(doc! {"_id": 5})),
                ("min", Bson::Document(doc! {"_id": 0})),
                ("returnKey", Bson::Boolean(true)),
                ("showRecordId", Bson::Boolean(true)),
                ("tailable", Bson::Boolean(true)),
                ("oplogReplay", Bson::Boolean(true)),
                ("noCursorTimeout", Bson::Boolean(true)),
                ("awaitData", Bson::Boolean(true)),
                ("allowPartialResults", Bson::Boolean(true)),
                ("collation", Bson::Document(doc! {"locale": "simple"})),
                ("allowDiskUse", Bson::Boolean(true)),
                ("let", Bson::Document(doc! {"x": 1})),
            ],
        ),
        (
            "aggregate",
            doc! {"aggregate": "items", "pipeline": [], "cursor": {}},
            vec![
                ("explain", Bson::Boolean(false)),
                ("allowDiskUse", Bson::Boolean(true)),
                ("maxTimeMS", Bson::Int32(1000)),
                ("bypassDocumentValidation", Bson::Boolean(true)),
                ("readConcern", Bson::Document(doc! {"level": "local"})),
                ("collation", Bson::Document(doc! {"locale": "simple"})),
                ("hint", Bson::Document(doc! {"_id": 1})),
                ("comment", Bson::String("c".into())),
                ("writeConcern", Bson::Document(doc! {"w": 1})),
                ("let", Bson::Document(doc! {"x": 1})),
            ],
        ),
        (
            "count",
            doc! {"count": "items"},
            vec![
                ("query", empty()),
                ("limit", Bson::Int32(1)),
                ("skip", Bson::Int32(1)),
                ("hint", Bson::Document(doc! {"_id": 1})),
                ("readConcern", Bson::Document(doc! {"level": "local"})),
                ("maxTimeMS", Bson::Int32(1000)),
                ("collation", Bson::Document(doc! {"locale": "simple"})),
                ("comment", Bson::String("c".into())),
            ],
        ),
        (
            "distinct",
            doc! {"distinct": "items", "key": "a"},
            vec![
                ("query", empty()),
                ("readConcern", Bson::Document(doc! {"level": "local"})),
                ("collation", Bson::Document(doc! {"locale": "simple"})),
                ("comment", Bson::String("c".into())),
            ],
        ),
        (
            "insert",
            doc! {"insert": "items", "documents": [{"a": 1}]},
            vec![
                ("ordered", Bson::Boolean(false)),
                ("maxTimeMS", Bson::Int32(1000)),
                ("writeConcern", Bson::Document(doc! {"w": 1})),
                ("bypassDocumentValidation", Bson::Boolean(true)),
                ("comment", Bson::String("c".into())),
            ],
        ),
        (
            "update",
            doc! {"update": "items", "updates": [{"q": {"a": 99}, "u": {"$set": {"b": 1}}}]},
            vec![
                ("ordered", Bson::Boolean(false)),
                ("maxTimeMS", Bson::Int32(1000)),
                ("writeConcern", Bson::Document(doc! {"w": 1})),
                ("bypassDocumentValidation", Bson::Boolean(true)),
                ("comment", Bson::String("c".into())),
                ("let", Bson::Document(doc! {"x": 1})),
            ],
        ),
        (
            "delete",
            doc! {"delete": "items", "deletes": [{"q": {"a": 99}, "limit": 0}]},
            vec![
                ("ordered", Bson::Boolean(false)),
                ("maxTimeMS", Bson::Int32(1000)),
                ("writeConcern", Bson::Document(doc! {"w": 1})),
                ("comment", Bson::String("c".into())),
                ("let", Bson::Document(doc! {"x": 1})),
            ],
        ),
        (
            "findAndModify",
            doc! {"findAndModify": "items", "query": {"a": 99}, "update": {"$set": {"b": 1}}},
            vec![
                ("sort", Bson::Document(doc! {"a": 1})),
                ("new", Bson::Boolean(true)),
                ("fields", Bson::Document(doc! {"a": 1})),
                ("upsert", Bson::Boolean(false)),
                ("bypassDocumentValidation", Bson::Boolean(true)),
                ("writeConcern", Bson::Document(doc! {"w": 1})),
                ("maxTimeMS", Bson::Int32(1000)),
                ("collation", Bson::Document(doc! {"locale": "simple"})),
                ("arrayFilters", Bson::Array(Vec::new())),
                ("hint", Bson::Document(doc! {"_id": 1})),
                ("comment", Bson::String("c".into())),
                ("let", Bson::Document(doc! {"x": 1})),
            ],
        ),
        (
            "create",
            doc! {"create": "made"},
            vec![
                ("capped", Bson::Boolean(true)),
                ("size", Bson::Int32(4096)),
                ("max", Bson::Int32(10)),
                ("timeseries", Bson::Document(doc! {"timeField": "t"})),
                ("expireAfterSeconds", Bson::Int32(60)),
                (
                    "clusteredIndex",
                    Bson::Document(doc! {"key": {"_id": 1}, "unique": true}),
                ),
                (
                    "changeStreamPreAndPostImages",
                    Bson::Document(doc! {"enabled": true}),
                ),
                ("autoIndexId", Bson::Boolean(true)),
                ("storageEngine", empty()),
                ("validator", Bson::Document(doc! {"a": {"$exists": true}})),
                ("validationLevel", Bson::String("strict".into())),
                ("validationAction", Bson::String("error".into())),
                ("indexOptionDefaults", empty()),
                ("viewOn", Bson::String("items".into())),
                ("pipeline", Bson::Array(Vec::new())),
                ("collation", Bson::Document(doc! {"locale": "simple"})),
                ("writeConcern", Bson::Document(doc! {"w": 1})),
                ("encryptedFields", Bson::Document(doc! {"fields": []})),
                ("comment", Bson::String("c".into())),
            ],
        ),
        (
            "createIndexes",
            doc! {"createIndexes": "items", "indexes": [{"key": {"a": 1}, "name": "a_1"}]},
            vec![
                ("writeConcern", Bson::Document(doc! {"w": 1})),
                ("commitQuorum", Bson::String("votingMembers".into())),
                ("comment", Bson::String("c".into())),
            ],
        ),
        (
            "listCollections",
            doc! {"listCollections": 1},
            vec![
                ("filter", empty()),
                ("nameOnly", Bson::Boolean(true)),
                ("authorizedCollections", Bson::Boolean(true)),
                ("comment", Bson::String("c".into())),
            ],
        ),
        (
            "listIndexes",
            doc! {"listIndexes": "items"},
            vec![("cursor", empty()), ("comment", Bson::String("c".into()))],
        ),
        (
            "renameCollection",
            doc! {"renameCollection": "fields.items", "to": "fields.renamed"},
            vec![
                ("dropTarget", Bson::Boolean(false)),
                ("writeConcern", Bson::Document(doc! {"w": 1})),
                ("comment", Bson::String("c".into())),
            ],
        ),
        (
            "dropIndexes",
            doc! {"dropIndexes": "items", "index": "nonexistent_1"},
            vec![
                ("writeConcern", Bson::Document(doc! {"w": 1})),
                ("comment", Bson::String("c".into())),
            ],
        ),
        (
            "drop",
            doc! {"drop": "nonexistent"},
            vec![
                ("writeConcern", Bson::Document(doc! {"w": 1})),
                ("comment", Bson::String("c".into())),
            ],
        ),
    ]
}

/// The code a command answered with (a write's first write error counts), if any.
async fn answer_code(db: &mongodb::Database, command: Document) -> Option<i32> {
    let admin = command.contains_key("renameCollection");
    let target = if admin {
        db.client().database("admin")
    } else {
        db.clone()
    };
    match target.run_command(command).await {
        Ok(reply) => reply
            .get_array("writeErrors")
            .ok()
            .and_then(|errors| errors.first())
            .and_then(Bson::as_document)
            .and_then(|error| error.get_i32("code").ok()),
        Err(error) => Some(
            driver_support::server_code(&error)
                .unwrap_or_else(|| panic!("not a server error: {error}")),
        ),
    }
}

#[tokio::test]
async fn every_documented_field_is_implemented_or_refused_by_name() {
    let server = TestServer::start();
    let db = server.client().await.database("fields");
    for (command, base, fields) in documented_fields() {
        for (field, value) in fields {
            db.collection::<Document>("items")
                .insert_one(doc! {"a": 1})
                .await
                .expect("seed");
            let mut sent = base.clone();
            sent.insert(field, value);
            let code = answer_code(&db, sent.clone()).await;
            assert_ne!(
                code,
                Some(UNKNOWN_FIELD),
                "{command}.{field} is documented by MongoDB 7.0 but unknown to docgate: {sent}"
            );
            // Whatever it answered, the server is still there.
            db.run_command(doc! {"ping": 1}).await.expect("ping");
            db.drop().await.expect("reset");
        }
        // A field no command documents is refused as unknown.
        let mut sent = base.clone();
        sent.insert("noSuchField", 1);
        assert_eq!(
            answer_code(&db, sent.clone()).await,
            Some(UNKNOWN_FIELD),
            "{sent}"
        );
        db.drop().await.expect("reset");
    }
}

/// The statements of `update` and `delete` have documented fields of their own.
#[tokio::test]
async fn every_documented_statement_field_is_implemented_or_refused_by_name() {
    let server = TestServer::start();
    let db = server.client().await.database("statements");
    let statements = [
        (
            "updates",
            doc! {"q": {"a": 99}, "u": [{"$set": {"b": 1}}]},
            vec![
                ("c", Bson::Document(doc! {"x": 1})),
                ("upsert", Bson::Boolean(false)),
                ("multi", Bson::Boolean(true)),
                ("collation", Bson::Document(doc! {"locale": "simple"})),
                ("arrayFilters", Bson::Array(Vec::new())),
                ("hint", Bson::Document(doc! {"_id": 1})),
            ],
        ),
        (
            "deletes",
            doc! {"q": {"a": 99}, "limit": 0},
            vec![
                ("collation", Bson::Document(doc! {"locale": "simple"})),
                ("hint", Bson::Document(doc! {"_id": 1})),
            ],
        ),
    ];
    for (array, statement, fields) in statements {
        let command = if array == "updates" {
            "update"
        } else {
            "delete"
        };
        for (field, value) in fields.into_iter().chain([("noSuchField", Bson::Int32(1))]) {
            let mut sent_statement = statement.clone();
            sent_statement.insert(field, value);
            let sent = doc! {command: "items", array: [sent_statement]};
            let code = answer_code(&db, sent.clone()).await;
            if field == "noSuchField" {
                assert_eq!(code, Some(UNKNOWN_FIELD), "{sent}");
            } else {
                assert_ne!(
                    code,
                    Some(UNKNOWN_FIELD),
                    "{command} statement {field}: {sent}"
                );
            }
        }
    }
}

/// docgate answers as MongoDB 7.0 (`buildInfo`, `hello.maxWireVersion` 21), so 8.0's
/// additions get 7.0's answers: `bulkWrite` is an unknown command (59), `$toUUID` an unknown
/// expression (168), an update statement's `sort` an unknown field (40415).
#[tokio::test]
async fn mongodb_8_additions_are_answered_as_7_0_does() {
    let server = TestServer::start();
    let client = server.client().await;
    let admin = client.database("admin");
    let build = admin
        .run_command(doc! {"buildInfo": 1})
        .await
        .expect("buildInfo");
    assert!(
        build
            .get_str("version")
            .expect("version")
            .starts_with("7.0"),
        "{build}"
    );
    let hello = admin.run_command(doc! {"hello": 1}).await.expect("hello");
    assert_eq!(hello.get_i32("maxWireVersion").ok(), Some(21));
    let db = client.database("eight");
    let bulk = doc! {"bulkWrite": 1, "ops": [{"insert": 0, "document": {"a": 1}}], "nsInfo": [{"ns": "eight.items"}]};
    assert_eq!(answer_code(&admin, bulk).await, Some(59));
    let to_uuid =
        doc! {"aggregate": 1, "pipeline": [{"$project": {"u": {"$toUUID": "x"}}}], "cursor": {}};
    let code = answer_code(&db, doc! {"aggregate": "items", "pipeline": to_uuid.get_array("pipeline").unwrap().clone(), "cursor": {}}).await;
    assert_eq!(code, Some(168));
    let sorted =
        doc! {"update": "items", "updates": [{"q": {}, "u": {"$set": {"b": 1}}, "sort": {"a": 1}}]};
    assert_eq!(answer_code(&db, sorted).await, Some(UNKNOWN_FIELD));
    let written = db
        .collection::<Document>("items")
        .count_documents(doc! {})
        .await
        .expect("count");
    assert_eq!(written, 0, "nothing was written");
}

/// Command-level `let`: every command that takes it sees the variables in its filter (and
/// update pipeline), so each one finds, changes or removes exactly the document the variable
/// names — ignoring `let` would find nothing and say ok.
#[tokio::test]
async fn let_variables_are_honoured_by_every_command() {
    let server = TestServer::start();
    let (db, coll) = fresh(&server, "letdb", "items").await;
    coll.insert_many([doc! {"_id": 1}, doc! {"_id": 2}, doc! {"_id": 3}])
        .await
        .expect("seed");
    let expr = |id: i32| (doc! {"$expr": {"$eq": ["$_id", "$$id"]}}, doc! {"id": id});
    let first_batch = |reply: &Document| -> Vec<Document> {
        reply
            .get_document("cursor")
            .and_then(|c| c.get_array("firstBatch"))
            .map(|batch| {
                batch
                    .iter()
                    .filter_map(|d| d.as_document().cloned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (filter, vars) = expr(1);
    let found = db
        .run_command(doc! {"find": "items", "filter": filter.clone(), "let": vars.clone()})
        .await
        .expect("find");
    assert_eq!(first_batch(&found), vec![doc! {"_id": 1}]);
    let aggregated = db
        .run_command(doc! {"aggregate": "items", "pipeline": [{"$match": filter.clone()}, {"$set": {"v": "$$id"}}], "cursor": {}, "let": vars.clone()})
        .await
        .expect("aggregate");
    assert_eq!(first_batch(&aggregated), vec![doc! {"_id": 1, "v": 1}]);
    let explained = db
        .run_command(doc! {"explain": {"find": "items", "filter": filter.clone(), "let": vars.clone()}, "verbosity": "executionStats"})
        .await
        .expect("explain");
    let returned = explained
        .get_document("executionStats")
        .and_then(|s| s.get_i64("nReturned"));
    assert_eq!(returned.ok(), Some(1));

    let (filter, vars) = expr(2);
    let updated = db
        .run_command(doc! {"update": "items", "updates": [{"q": filter.clone(), "u": [{"$set": {"x": "$$id"}}]}], "let": vars.clone()})
        .await
        .expect("update");
    assert_eq!(updated.get_i32("nModified").ok(), Some(1));
    let changed = coll.find_one(doc! {"x": 2}).await.expect("find x");
    assert_eq!(changed, Some(doc! {"_id": 2, "x": 2}));
    let removed = db
        .run_command(doc! {"findAndModify": "items", "query": filter, "remove": true, "let": vars})
        .await
        .expect("findAndModify");
    assert_eq!(
        removed.get_document("value").ok(),
        Some(&doc! {"_id": 2, "x": 2})
    );

    let (filter, vars) = expr(3);
    let deleted = db
        .run_command(doc! {"delete": "items", "deletes": [{"q": filter, "limit": 1}], "let": vars})
        .await
        .expect("delete");
    assert_eq!(deleted.get_i32("n").ok(), Some(1));
    let left = collect(coll.find(doc! {}).await.expect("find")).await;
    assert_eq!(left, vec![doc! {"_id": 1}]);
    // A variable that is not defined is MongoDB's parse error, not a filter that matches
    // nothing.
    let error = db
        .run_command(doc! {"find": "items", "filter": {"$expr": {"$eq": ["$_id", "$$nobody"]}}})
        .await
        .expect_err("undefined variable");
    assert_eq!(driver_support::server_code(&error), Some(17276));
}

/// Options that used to be accepted and never read are now each either honoured or refused
/// with MongoDB's error, and nothing they would have touched is changed: an update
/// statement's constants (`c`) on an operator update, a collation locale variant that ICU4X has no data for, a hint naming no index on
/// `count`/`distinct`/`aggregate`, `validate` with `repair`, `create` without an `_id` index,
/// `createIndexes` asking to ignore unknown options, and any field no handler takes.
#[tokio::test]
async fn options_nobody_reads_are_refused() {
    let server = TestServer::start();
    let (db, coll) = fresh(&server, "optionsdb", "items").await;
    coll.insert_many([doc! {"_id": 1, "a": "x"}, doc! {"_id": 2, "a": "X"}])
        .await
        .expect("seed");
    let refused = [
        // An update statement's constants belong to pipeline updates (MongoDB's 51198).
        (
            doc! {"update": "items", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 1}}, "c": {"id": 1}}]},
            51198,
        ),
        (
            doc! {"aggregate": "items", "pipeline": [{"$match": {"a": "x"}}], "cursor": {}, "collation": {"locale": "de@collation=search"}},
            2,
        ),
        (doc! {"count": "items", "hint": "no_such_index"}, 2),
        (
            doc! {"distinct": "items", "key": "a", "hint": "no_such_index"},
            2,
        ),
        (
            doc! {"aggregate": "items", "pipeline": [], "cursor": {}, "hint": {"nope": 1}},
            2,
        ),
        (doc! {"validate": "items", "repair": true}, 115),
        (doc! {"create": "other", "autoIndexId": false}, 115),
        (
            doc! {"createIndexes": "items", "indexes": [{"key": {"a": 1}, "name": "a_1"}], "ignoreUnknownIndexOptions": true},
            115,
        ),
        (doc! {"find": "items", "bogus": 1}, 40415),
        // updateOne with sort is MongoDB 8.0's; docgate answers as 7.0, which refuses it.
        (
            doc! {"update": "items", "updates": [{"q": {}, "u": {"$set": {"x": 1}}, "sort": {"a": 1}}]},
            40415,
        ),
        (
            doc! {"delete": "items", "deletes": [{"q": {}, "limit": 0, "bogus": 1}]},
            40415,
        ),
        (doc! {"listIndexes": "items", "bogus": 1}, 40415),
        (
            doc! {"dropIndexes": "items", "index": "*", "bogus": 1},
            40415,
        ),
    ];
    for (command, code) in refused {
        // A bad statement of a write is that statement's write error; anything else fails
        // the command.
        let answered = match db.run_command(command.clone()).await {
            Ok(reply) => reply
                .get_array("writeErrors")
                .ok()
                .and_then(|errors| errors.first())
                .and_then(|entry| entry.as_document())
                .and_then(|entry| entry.get_i32("code").ok()),
            Err(error) => driver_support::server_code(&error),
        };
        assert_eq!(answered, Some(code), "{command}");
    }
    assert_eq!(coll.count_documents(doc! {}).await.expect("count"), 2);
    let touched = coll
        .count_documents(doc! {"x": {"$exists": true}})
        .await
        .expect("count");
    assert_eq!(touched, 0, "nothing was written");
    let indexes = coll.list_index_names().await.expect("indexes");
    assert_eq!(indexes, vec!["_id_".to_string()], "no index was built");
    let names = db.list_collection_names().await.expect("collections");
    assert_eq!(
        names,
        vec!["items".to_string()],
        "no collection was created"
    );
    // The same commands without the unread option still run, and a valid hint is used.
    coll.create_index(mongodb::IndexModel::builder().keys(doc! {"a": 1}).build())
        .await
        .expect("index");
    let counted = db
        .run_command(doc! {"count": "items", "query": {"a": "x"}, "hint": {"a": 1}})
        .await
        .expect("count with a hint");
    assert_eq!(counted.get_i32("n").ok(), Some(1));
    db.run_command(doc! {"validate": "items", "full": true})
        .await
        .expect("validate");
}
