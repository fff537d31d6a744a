//! Security matrix against the real binary with authentication on: every command the
//! server lists (`listCommands`) tried without credentials answers 13 Unauthorized unless
//! MongoDB allows it before authentication; a read-only user trying writes and admin
//! commands gets 13; names built to inject SQL or leave the data directory (field,
//! collection, database and index names with quotes, `;`, `--`, NUL, unicode, `/`, `..`)
//! are stored and read back exactly or refused with MongoDB's codes, never a SQL error, and
//! the other data stays intact; no error text names SQL or file paths.
//!
//! Runs on SQLite, and on PostgreSQL when `DOCGATE_TEST_BACKEND` names one.
//!
//! Not for: how authentication itself works (tests/auth.rs), REST (tests/rest_security.rs),
//! malformed wire messages (tests/bad_input*.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;

use common::TestServer;
use driver_support::server_code;
use mongodb::bson::{doc, Document};
use mongodb::Client;

/// Commands MongoDB runs for a client that has not authenticated.
const OPEN_BEFORE_AUTH: &[&str] = &[
    "authenticate",
    "buildInfo",
    "connectionStatus",
    "endSessions",
    "hello",
    "isMaster",
    "ismaster",
    "listCommands",
    "logout",
    "ping",
    "saslContinue",
    "saslStart",
    "whatsmyuri",
];

/// Strings that must never reach a client: SQL, the backends' names, file paths.
const LEAKS: &[&str] = &[
    "select ",
    "insert into",
    "sqlite",
    "postgres",
    "syntax error",
    "sql",
    "/tmp",
    "docgate.db",
    "relation ",
];

/// Names with quotes, statement separators, comments, NUL-free unicode and path parts.
const HOSTILE: &[&str] = &[
    "a'b",
    "a\"b",
    "x'); DROP TABLE t; --",
    "x\"; DROP TABLE t; --",
    "a;b",
    "a--b",
    "a/*b*/",
    "ünï☃😀",
    "a`b",
    "a\\b",
    "a]b[",
    "%_*",
];

fn assert_no_leak(context: &str, text: &str) {
    let lower = text.to_lowercase();
    for leak in LEAKS {
        assert!(
            !lower.contains(leak),
            "{context}: the error names {leak:?}: {text}"
        );
    }
}

async fn server_with_users() -> TestServer {
    let server = TestServer::start();
    let open = server.client().await;
    open.database("admin")
        .run_command(doc! {"createUser": "root", "pwd": "rootpw", "roles": ["root"]})
        .await
        .expect("createUser root through the localhost exception");
    server
}

async fn login(server: &TestServer, user: &str, password: &str) -> Client {
    let uri = format!(
        "mongodb://{user}:{password}@127.0.0.1:{}/?directConnection=true&authSource=admin&serverSelectionTimeoutMS=10000",
        server.port()
    );
    server.client_with_uri(&uri).await
}

#[tokio::test]
async fn every_command_without_credentials_is_unauthorized_unless_mongodb_allows_it() {
    let server = server_with_users().await;
    let root = login(&server, "root", "rootpw").await;
    root.database("sec")
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 1})
        .await
        .expect("root inserts");
    let listed = root
        .database("admin")
        .run_command(doc! {"listCommands": 1})
        .await
        .expect("listCommands");
    let names: Vec<String> = listed
        .get_document("commands")
        .expect("commands")
        .keys()
        .cloned()
        .collect();
    assert!(
        names.len() > 30,
        "listCommands lists the commands: {names:?}"
    );

    let anonymous = server.client().await;
    let mut wrong = Vec::new();
    for name in &names {
        if OPEN_BEFORE_AUTH.contains(&name.as_str()) {
            // Runs, or refuses its argument; either way without naming internals.
            if let Err(e) = anonymous
                .database("sec")
                .run_command(doc! {name.as_str(): "c"})
                .await
            {
                assert_no_leak(name, &e.to_string());
            }
            continue;
        }
        for db in ["sec", "admin"] {
            let result = anonymous
                .database(db)
                .run_command(doc! {name.as_str(): "c"})
                .await;
            match result {
                Err(e) if server_code(&e) == Some(13) => assert_no_leak(name, &e.to_string()),
                other => wrong.push(format!("{db}.{name}: {other:?}")),
            }
        }
    }
    assert!(wrong.is_empty(), "not refused with 13: {wrong:#?}");

    // Still there, and the server is still up (shutdown was among the commands tried).
    let count = root
        .database("sec")
        .collection::<Document>("c")
        .count_documents(doc! {})
        .await
        .expect("count after the matrix");
    assert_eq!(count, 1);
}

#[tokio::test]
async fn a_read_only_user_cannot_write_or_administer() {
    let server = server_with_users().await;
    let root = login(&server, "root", "rootpw").await;
    root.database("sec")
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 1, "v": 1})
        .await
        .expect("root inserts");
    root.database("admin")
        .run_command(doc! {"createUser": "reader", "pwd": "readpw",
        "roles": [{"role": "read", "db": "sec"}]})
        .await
        .expect("create the reader");
    let reader = login(&server, "reader", "readpw").await;
    let sec = reader.database("sec");
    sec.collection::<Document>("c")
        .find_one(doc! {})
        .await
        .expect("the reader reads");

    let attempts: Vec<(&str, Document)> = vec![
        ("sec", doc! {"insert": "c", "documents": [{"_id": 2}]}),
        (
            "sec",
            doc! {"update": "c", "updates": [{"q": {}, "u": {"$set": {"v": 2}}}]},
        ),
        (
            "sec",
            doc! {"delete": "c", "deletes": [{"q": {}, "limit": 0}]},
        ),
        (
            "sec",
            doc! {"findAndModify": "c", "query": {}, "remove": true},
        ),
        ("sec", doc! {"create": "d"}),
        ("sec", doc! {"drop": "c"}),
        (
            "sec",
            doc! {"createIndexes": "c", "indexes": [{"key": {"v": 1}, "name": "v_1"}]},
        ),
        ("sec", doc! {"dropIndexes": "c", "index": "*"}),
        ("sec", doc! {"renameCollection": "sec.c", "to": "sec.e"}),
        ("sec", doc! {"dropDatabase": 1}),
        (
            "sec",
            doc! {"aggregate": "c", "pipeline": [{"$out": "o"}], "cursor": {}},
        ),
        ("other", doc! {"find": "c"}),
        (
            "admin",
            doc! {"createUser": "x", "pwd": "y", "roles": ["root"]},
        ),
        (
            "admin",
            doc! {"grantRolesToUser": "reader", "roles": ["root"]},
        ),
        ("admin", doc! {"dropUser": "root"}),
    ];
    let mut wrong = Vec::new();
    for (db, command) in attempts {
        let name = command.keys().next().cloned().unwrap_or_default();
        match reader.database(db).run_command(command).await {
            Err(e) if server_code(&e) == Some(13) => {}
            other => wrong.push(format!("{db}.{name}: {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "not refused with 13: {wrong:#?}");
    // listDatabases answers, as in MongoDB, only the databases the user may read.
    root.database("hidden")
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 1})
        .await
        .expect("root writes another database");
    let visible = reader.list_database_names().await.expect("listDatabases");
    assert_eq!(visible, vec!["sec".to_string()], "the reader sees only sec");
    let left = root
        .database("sec")
        .collection::<Document>("c")
        .find_one(doc! {})
        .await
        .expect("root reads");
    assert_eq!(left, Some(doc! {"_id": 1, "v": 1}), "the data is untouched");
}

/// An error from a hostile name must be one of MongoDB's name errors, never a SQL one.
fn refused_properly(context: &str, e: &mongodb::error::Error) {
    let code = server_code(e);
    assert!(
        matches!(code, Some(2) | Some(73) | Some(67) | Some(9)),
        "{context}: refused with {code:?}, expected BadValue/InvalidNamespace: {e}"
    );
    assert_no_leak(context, &e.to_string());
}

#[tokio::test]
async fn hostile_names_round_trip_or_are_refused_and_other_data_survives() {
    let server = server_with_users().await;
    let root = login(&server, "root", "rootpw").await;
    let keep = root.database("keep").collection::<Document>("c");
    keep.insert_one(doc! {"_id": 1, "v": "kept"})
        .await
        .expect("insert the data that must survive");

    for name in HOSTILE {
        // Field names: stored and read back exactly, and usable in a filter.
        let coll = root.database("inj").collection::<Document>("fields");
        let document = doc! {"_id": *name, *name: *name};
        match coll.insert_one(document.clone()).await {
            Ok(_) => {
                let found = coll
                    .find_one(doc! {*name: *name})
                    .await
                    .expect("find by the hostile field");
                assert_eq!(found, Some(document), "field {name:?} round trip");
            }
            Err(e) => refused_properly(&format!("field {name:?}"), &e),
        }

        // Collection names.
        let coll = root.database("inj").collection::<Document>(name);
        match coll.insert_one(doc! {"_id": 1, "n": *name}).await {
            Ok(_) => {
                let found = coll
                    .find_one(doc! {})
                    .await
                    .expect("find in the collection");
                assert_eq!(
                    found,
                    Some(doc! {"_id": 1, "n": *name}),
                    "collection {name:?}"
                );
                let listed = root
                    .database("inj")
                    .list_collection_names()
                    .await
                    .expect("listCollections");
                assert!(
                    listed.iter().any(|c| c == name),
                    "{name:?} listed: {listed:?}"
                );
            }
            Err(e) => refused_properly(&format!("collection {name:?}"), &e),
        }

        // Index names.
        let result = root
            .database("inj")
            .run_command(doc! {"createIndexes": "fields",
            "indexes": [{"key": {"v": 1}, "name": *name}]})
            .await;
        match result {
            Ok(_) => {
                let indexes = root
                    .database("inj")
                    .collection::<Document>("fields")
                    .list_index_names()
                    .await
                    .expect("listIndexes");
                assert!(
                    indexes.iter().any(|i| i == name),
                    "index {name:?}: {indexes:?}"
                );
                root.database("inj")
                    .run_command(doc! {"dropIndexes": "fields", "index": *name})
                    .await
                    .expect("drop the hostile index");
            }
            Err(e) => refused_properly(&format!("index {name:?}"), &e),
        }

        // Database names.
        let coll = root.database(name).collection::<Document>("c");
        match coll.insert_one(doc! {"_id": 1}).await {
            Ok(_) => {
                let found = coll.find_one(doc! {}).await.expect("find in the database");
                assert_eq!(found, Some(doc! {"_id": 1}), "database {name:?}");
            }
            Err(e) => refused_properly(&format!("database {name:?}"), &e),
        }
    }

    // NUL in a collection name, and names that try to leave the data directory.
    let mut refused = Vec::new();
    for db in ["../x", "/etc", "a/b", ".", "..", "a\0b", "a.b", "a b\\c"] {
        let result = root
            .database(db)
            .run_command(doc! {"insert": "c", "documents": [{"_id": 1}]})
            .await;
        match result {
            Err(e) => {
                refused_properly(&format!("database {db:?}"), &e);
                refused.push(db);
            }
            Ok(_) => panic!("database {db:?} was accepted; MongoDB refuses it"),
        }
    }
    let result = root
        .database("inj")
        .run_command(doc! {"insert": "a\0b", "documents": [{"_id": 1}]})
        .await;
    match result {
        Err(e) => refused_properly("collection with NUL", &e),
        Ok(_) => panic!("a collection name with NUL was accepted"),
    }

    let found = keep.find_one(doc! {}).await.expect("read the kept data");
    assert_eq!(found, Some(doc! {"_id": 1, "v": "kept"}));
    let databases = root.list_database_names().await.expect("listDatabases");
    for db in &refused {
        assert!(!databases.iter().any(|d| d == db), "{db:?} listed");
    }
    assert!(
        databases.iter().any(|d| d == "keep"),
        "keep listed: {databases:?}"
    );
}
