//! Administration through the official Rust `mongodb` driver against a real `docgate`
//! process: hello and ping, creating, listing, dropping and renaming collections and
//! databases, listings in MongoDB's shape, collStats/dbStats/validate, unknown
//! commands and operators, namespace validation, the `_id` type rules, and lossless
//! round trips of every BSON type.
//!
//! Reads are in `driver_queries.rs`, writes in `driver_writes.rs`, the Stable API in
//! `stable_api.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;

use common::TestServer;
use driver_support::{
    assert_ok, expect_command_error, fresh, ids, num, seed_inventory, server_code,
};
use mongodb::bson::{doc, oid::ObjectId, spec::BinarySubtype, Binary, Bson, DateTime, Document};
use mongodb::Cursor;

async fn collect_result(mut cursor: Cursor<Document>) -> mongodb::error::Result<Vec<Document>> {
    let mut out = Vec::new();
    while cursor.advance().await? {
        out.push(cursor.deserialize_current()?);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// handshake
// ---------------------------------------------------------------------------
#[tokio::test]
async fn hello_and_ping() {
    let server = TestServer::start();
    let client = server.client().await;
    let admin = client.database("admin");

    let hello = admin.run_command(doc! { "hello": 1 }).await.expect("hello");
    assert_ok(&hello);
    assert_eq!(
        hello.get_bool("isWritablePrimary").ok(),
        Some(true),
        "{hello}"
    );
    assert_eq!(num(&hello, "maxBsonObjectSize"), 16_777_216.0, "{hello}");
    assert_eq!(num(&hello, "maxMessageSizeBytes"), 48_000_000.0, "{hello}");
    assert!(num(&hello, "maxWireVersion") >= 9.0, "{hello}");
    assert!(num(&hello, "minWireVersion") <= num(&hello, "maxWireVersion"));

    let ping = admin.run_command(doc! { "ping": 1 }).await.expect("ping");
    assert_ok(&ping);
}

// ---------------------------------------------------------------------------
// databases and collections
// ---------------------------------------------------------------------------
#[tokio::test]
async fn create_list_and_drop_collections_and_databases() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("catalog_test");

    db.create_collection("alpha").await.expect("create alpha");
    // Creating it again with different options is NamespaceExists (48).
    expect_command_error(
        db.run_command(doc! { "create": "alpha", "validationAction": "warn" })
            .await,
        48,
        "NamespaceExists",
    );
    // Inserting creates a collection implicitly.
    db.collection::<Document>("beta")
        .insert_one(doc! { "x": 1 })
        .await
        .expect("insert into beta");

    let mut names = db.list_collection_names().await.expect("list collections");
    names.sort();
    assert_eq!(names, vec!["alpha", "beta"]);
    let dbs = client.list_database_names().await.expect("list databases");
    assert!(dbs.contains(&"catalog_test".to_string()), "{dbs:?}");

    db.collection::<Document>("alpha")
        .drop()
        .await
        .expect("drop alpha");
    assert_eq!(
        db.list_collection_names().await.expect("list collections"),
        vec!["beta"]
    );
    assert_eq!(
        db.collection::<Document>("beta")
            .count_documents(doc! {})
            .await
            .unwrap(),
        1
    );

    db.drop().await.expect("drop database");
    let dbs = client.list_database_names().await.expect("list databases");
    assert!(!dbs.contains(&"catalog_test".to_string()), "{dbs:?}");
    assert!(db
        .list_collection_names()
        .await
        .expect("list collections of dropped db")
        .is_empty());
    assert_eq!(
        db.collection::<Document>("beta")
            .count_documents(doc! {})
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn rename_collection_through_admin() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("ren");
    let src = db.collection::<Document>("src");
    src.insert_many(vec![doc! { "_id": 1 }, doc! { "_id": 2 }])
        .await
        .expect("insert");
    db.collection::<Document>("other")
        .insert_one(doc! { "_id": 9 })
        .await
        .expect("insert other");

    let admin = client.database("admin");
    let reply = admin
        .run_command(doc! { "renameCollection": "ren.src", "to": "ren.dst" })
        .await
        .expect("renameCollection");
    assert_ok(&reply);

    let mut names = db.list_collection_names().await.unwrap();
    names.sort();
    assert_eq!(names, vec!["dst", "other"]);
    let dst = db.collection::<Document>("dst");
    assert_eq!(ids(&dst, doc! {}).await, vec![1, 2]);
    assert_eq!(src.count_documents(doc! {}).await.unwrap(), 0);

    // Renaming onto an existing collection without dropTarget is NamespaceExists.
    expect_command_error(
        admin
            .run_command(doc! { "renameCollection": "ren.dst", "to": "ren.other" })
            .await,
        48,
        "NamespaceExists",
    );
    // With dropTarget the target is replaced.
    let reply = admin
        .run_command(doc! { "renameCollection": "ren.dst", "to": "ren.other", "dropTarget": true })
        .await
        .expect("renameCollection with dropTarget");
    assert_ok(&reply);
    assert_eq!(
        ids(&db.collection::<Document>("other"), doc! {}).await,
        vec![1, 2]
    );
    assert_eq!(db.list_collection_names().await.unwrap(), vec!["other"]);
}

#[tokio::test]
async fn coll_stats_db_stats_and_validate() {
    let server = TestServer::start();
    let (db, coll) = fresh(&server, "statsdb", "inventory").await;
    seed_inventory(&coll).await;

    let cs = db
        .run_command(doc! { "collStats": "inventory" })
        .await
        .expect("collStats");
    assert_ok(&cs);
    assert_eq!(cs.get_str("ns").ok(), Some("statsdb.inventory"), "{cs}");
    assert_eq!(num(&cs, "count"), 5.0, "{cs}");
    assert!(num(&cs, "size") > 0.0, "{cs}");
    assert!(num(&cs, "nindexes") >= 1.0, "{cs}");

    let ds = db
        .run_command(doc! { "dbStats": 1 })
        .await
        .expect("dbStats");
    assert_ok(&ds);
    assert_eq!(ds.get_str("db").ok(), Some("statsdb"), "{ds}");
    assert_eq!(num(&ds, "collections"), 1.0, "{ds}");
    assert_eq!(num(&ds, "objects"), 5.0, "{ds}");
    assert!(num(&ds, "dataSize") > 0.0, "{ds}");

    // MongoDB's lowercase spellings, as pymongo's manual writes `db.command("dbstats")`.
    let lower = db
        .run_command(doc! { "dbstats": 1 })
        .await
        .expect("dbstats");
    assert_eq!(num(&lower, "objects"), 5.0, "{lower}");
    let lower = db
        .run_command(doc! { "collstats": "inventory" })
        .await
        .expect("collstats");
    assert_eq!(num(&lower, "count"), 5.0, "{lower}");

    let v = db
        .run_command(doc! { "validate": "inventory" })
        .await
        .expect("validate");
    assert_ok(&v);
    assert_eq!(v.get_str("ns").ok(), Some("statsdb.inventory"), "{v}");
    assert_eq!(v.get_bool("valid").ok(), Some(true), "{v}");
    assert_eq!(num(&v, "nrecords"), 5.0, "{v}");
}

/// The figures mongosh's `db.coll.stats()`, `totalIndexSize()` and `totalSize()` read: a
/// secondary index takes space, the totals add up, and the `$collStats` stage reports the
/// same as the command.
#[tokio::test]
async fn index_sizes_and_the_coll_stats_stage() {
    let server = TestServer::start();
    let (db, coll) = fresh(&server, "sizes", "items").await;
    let docs: Vec<Document> = (0..300)
        .map(|i| doc! {"_id": i, "name": format!("item number {i:05}"), "n": i})
        .collect();
    coll.insert_many(docs).await.unwrap();
    db.run_command(
        doc! {"createIndexes": "items", "indexes": [{"key": {"name": 1}, "name": "name_1"}]},
    )
    .await
    .unwrap();

    let cs = db.run_command(doc! {"collStats": "items"}).await.unwrap();
    let sizes = cs.get_document("indexSizes").expect("indexSizes");
    let names: Vec<&str> = sizes.keys().map(String::as_str).collect();
    assert_eq!(names, ["_id_", "name_1"], "{cs}");
    assert!(
        num(sizes, "_id_") > 0.0 && num(sizes, "name_1") > 0.0,
        "{cs}"
    );
    let index_total = num(&cs, "totalIndexSize");
    assert_eq!(
        index_total,
        num(sizes, "_id_") + num(sizes, "name_1"),
        "{cs}"
    );
    assert_eq!(
        num(&cs, "totalSize"),
        num(&cs, "storageSize") + index_total,
        "{cs}"
    );
    let ds = db.run_command(doc! {"dbStats": 1}).await.unwrap();
    assert_eq!(num(&ds, "indexSize"), index_total, "{ds}");

    let staged = collect_result(
        coll.aggregate(vec![
            doc! {"$collStats": {"storageStats": {"scale": 1024}, "count": {}}},
            doc! {"$project": {"ns": 1, "count": 1, "storageStats.totalIndexSize": 1}},
        ])
        .await
        .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(staged.len(), 1, "{staged:?}");
    assert_eq!(
        staged[0].get_str("ns").ok(),
        Some("sizes.items"),
        "{staged:?}"
    );
    assert_eq!(num(&staged[0], "count"), 300.0, "{staged:?}");
    let scaled = num(
        staged[0].get_document("storageStats").unwrap(),
        "totalIndexSize",
    );
    assert_eq!(scaled, (index_total as i64 / 1024) as f64, "{staged:?}");

    // What docgate does not keep is refused, not answered with made-up figures.
    let refused = |coll: mongodb::Collection<Document>, pipeline: Vec<Document>| async move {
        match coll.aggregate(pipeline).await {
            Ok(_) => panic!("the pipeline was accepted"),
            Err(e) => server_code(&e),
        }
    };
    let latency = vec![doc! {"$collStats": {"latencyStats": {}}}];
    assert_eq!(refused(coll.clone(), latency).await, Some(115));
    let not_first = vec![doc! {"$match": {}}, doc! {"$collStats": {"count": {}}}];
    assert_eq!(refused(coll.clone(), not_first).await, Some(40602));
    let missing = vec![doc! {"$collStats": {"storageStats": {}}}];
    assert_eq!(refused(db.collection("absent"), missing).await, Some(26));
}

#[tokio::test]
async fn unknown_command_is_command_not_found() {
    let server = TestServer::start();
    let client = server.client().await;
    expect_command_error(
        client
            .database("admin")
            .run_command(doc! { "thisCommandDoesNotExist": 1 })
            .await,
        59,
        "CommandNotFound",
    );
    // The connection is still usable.
    assert_ok(
        &client
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await
            .expect("ping after unknown command"),
    );
}

// ---------------------------------------------------------------------------
// _id types
// ---------------------------------------------------------------------------
#[tokio::test]
async fn every_allowed_id_type_round_trips() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "ids").await;

    let oid = ObjectId::new();
    let decimal: mongodb::bson::Decimal128 = "1234.5678".parse().expect("decimal");
    let ids: Vec<Bson> = vec![
        Bson::ObjectId(oid),
        Bson::String("a string id".into()),
        Bson::String(String::new()),
        Bson::Int32(7),
        Bson::Int64(8_000_000_000),
        Bson::Double(2.5),
        Bson::Decimal128(decimal),
        Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: vec![0, 1, 2, 255],
        }),
        Bson::Binary(Binary {
            subtype: BinarySubtype::Uuid,
            bytes: (0u8..16).collect(),
        }),
        Bson::DateTime(DateTime::from_millis(1_700_000_000_123)),
        Bson::Document(doc! { "a": 1, "b": "two" }),
        Bson::Boolean(true),
    ];
    for (i, id) in ids.iter().enumerate() {
        coll.insert_one(doc! { "_id": id.clone(), "i": i as i32 })
            .await
            .unwrap_or_else(|e| panic!("insert _id {id:?}: {e}"));
    }
    assert_eq!(
        coll.count_documents(doc! {}).await.unwrap(),
        ids.len() as u64
    );
    for (i, id) in ids.iter().enumerate() {
        let found = coll
            .find_one(doc! { "_id": id.clone() })
            .await
            .unwrap_or_else(|e| panic!("find _id {id:?}: {e}"));
        assert_eq!(
            found,
            Some(doc! { "_id": id.clone(), "i": i as i32 }),
            "lookup by _id {id:?}"
        );
    }
    // An embedded-document _id matches only with the same field order.
    assert_eq!(
        coll.find_one(doc! { "_id": { "b": "two", "a": 1 } })
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn numerically_equal_ids_of_different_types_collide() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "numids").await;
    coll.insert_one(doc! { "_id": 1_i32, "v": "int32" })
        .await
        .expect("insert 1i32");

    let one_decimal: mongodb::bson::Decimal128 = "1".parse().expect("decimal");
    for dup in [
        Bson::Int64(1),
        Bson::Double(1.0),
        Bson::Decimal128(one_decimal),
    ] {
        let err = coll
            .insert_one(doc! { "_id": dup.clone(), "v": "dup" })
            .await
            .expect_err("numerically equal _id must be a duplicate");
        assert_eq!(server_code(&err), Some(11000), "_id {dup:?}: {err:?}");
    }
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);

    // And any numeric type finds the stored document, which keeps its original type.
    for key in [Bson::Int32(1), Bson::Int64(1), Bson::Double(1.0)] {
        let d = coll
            .find_one(doc! { "_id": key.clone() })
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("_id {key:?} finds the int32 1 document"));
        assert_eq!(d, doc! { "_id": 1_i32, "v": "int32" });
    }
    // A different number is not a duplicate.
    coll.insert_one(doc! { "_id": 1.5 })
        .await
        .expect("insert 1.5");
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 2);
}

// ---------------------------------------------------------------------------
// errors for unknown operators, lossless storage
// ---------------------------------------------------------------------------
#[tokio::test]
async fn unknown_query_and_update_operators_are_errors() {
    let server = TestServer::start();
    let (_db, coll) = fresh(&server, "crud", "inventory").await;
    seed_inventory(&coll).await;

    // MongoDB: "unknown operator: $foo" and "unknown top level operator: $foo",
    // both BadValue (2).
    for filter in [
        doc! { "qty": { "$foo": 1 } },
        doc! { "$foo": [ { "qty": 1 } ] },
    ] {
        let err = match coll.find(filter.clone()).await {
            Ok(cursor) => match collect_result(cursor).await {
                Ok(docs) => panic!("filter {filter} was accepted and returned {docs:?}"),
                Err(e) => e,
            },
            Err(e) => e,
        };
        assert_eq!(server_code(&err), Some(2), "filter {filter}: {err:?}");
    }

    // MongoDB: "Unknown modifier: $foo", FailedToParse (9); nothing is changed.
    let err = coll
        .update_one(doc! { "_id": 1 }, doc! { "$foo": { "qty": 1 } })
        .await
        .expect_err("unknown update modifier must fail");
    assert_eq!(server_code(&err), Some(9), "{err:?}");
    let d = coll.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(d.get_i32("qty").ok(), Some(25));
    assert!(!d.contains_key("$foo"));
}

#[tokio::test]
async fn every_bson_type_round_trips_byte_for_byte() {
    use mongodb::bson::{RawDocumentBuf, Regex, Timestamp};

    let server = TestServer::start();
    let (db, coll) = fresh(&server, "crud", "lossless").await;
    let decimal = |s: &str| -> Bson {
        Bson::Decimal128(s.parse::<mongodb::bson::Decimal128>().expect("decimal"))
    };
    let original = doc! {
        "_id": 1,
        "double": 1.5,
        "neg_zero": -0.0_f64,
        "nan": f64::NAN,
        "inf": f64::INFINITY,
        "neg_inf": f64::NEG_INFINITY,
        "tiny": 5e-324_f64,
        "string": "h\u{e9}llo \u{2713} \u{1F600}",
        "empty_string": "",
        "embedded": { "z": 1, "a": 2, "m": { "deep": [1, 2] } },
        "empty_doc": {},
        "array": [1, "two", [3, [4, []]], { "x": Bson::Null }],
        "empty_array": [],
        "bin_generic": Binary { subtype: BinarySubtype::Generic, bytes: vec![0, 1, 2, 255] },
        "bin_uuid": Binary { subtype: BinarySubtype::Uuid, bytes: (0u8..16).collect() },
        "bin_user": Binary { subtype: BinarySubtype::UserDefined(0x80), bytes: vec![9; 5] },
        "oid": ObjectId::parse_str("64b7f0c2a1b2c3d4e5f60718").expect("oid"),
        "true": true,
        "false": false,
        "date": DateTime::from_millis(1_700_000_000_123),
        "date_before_1970": DateTime::from_millis(-86_400_000_123),
        "null": Bson::Null,
        "regex": Regex { pattern: "^a.*b$".try_into().expect("cstring"), options: "im".try_into().expect("cstring") },
        "js": Bson::JavaScriptCode("function () { return 1; }".to_string()),
        "int32_min": i32::MIN,
        "int64_max": i64::MAX,
        "int64_small": 5_i64,
        "timestamp": Timestamp { time: 1_700_000_000, increment: 7 },
        "dec": decimal("1234.5678"),
        "dec_neg_zero": decimal("-0"),
        "dec_exp": decimal("1.000E+10"),
        "min": Bson::MinKey,
        "max": Bson::MaxKey,
        "$price": 50.0,
        "location": { "$db": "novels", "$ref": "2007042768", "$inc": true, "a.b": 1 },
    };
    coll.insert_one(original.clone()).await.expect("insert");

    let raw_coll = db.collection::<RawDocumentBuf>("lossless");
    let stored = raw_coll
        .find_one(doc! { "_id": 1 })
        .await
        .expect("find_one")
        .expect("document found");
    let expected = original.to_vec().expect("encode");
    if stored.as_bytes() != expected.as_slice() {
        let back = Document::try_from(&*stored).expect("stored decodes");
        for (k, v) in &original {
            assert_eq!(
                format!("{:?}", back.get(k)),
                format!("{:?}", Some(v)),
                "field {k:?} changed"
            );
        }
        panic!(
            "stored bytes differ from the inserted document (key order or extra fields): {back}"
        );
    }
}

#[tokio::test]
async fn invalid_namespaces_and_ids_are_rejected() {
    let server = TestServer::start();
    let client = server.client().await;

    // InvalidNamespace (73): an empty collection name, a database name with a dot,
    // a collection name with '$'.
    for (db, coll) in [("crud", ""), ("bad.db", "c"), ("crud", "a$b")] {
        let err = client
            .database(db)
            .collection::<Document>(coll)
            .insert_one(doc! { "x": 1 })
            .await
            .expect_err("insert into an invalid namespace must fail");
        assert_eq!(server_code(&err), Some(73), "{db}.{coll}: {err:?}");
    }
    let dbs = client.list_database_names().await.expect("list databases");
    assert!(!dbs.contains(&"bad.db".to_string()), "{dbs:?}");

    // _id may be any type but an array, a regex or undefined.
    let coll = client.database("crud").collection::<Document>("badids");
    let regex = mongodb::bson::Regex {
        pattern: "a".try_into().expect("cstring"),
        options: "".try_into().expect("cstring"),
    };
    for bad in [
        Bson::Array(vec![Bson::Int32(1)]),
        Bson::RegularExpression(regex),
        Bson::Undefined,
    ] {
        let err = coll
            .insert_one(doc! { "_id": bad.clone() })
            .await
            .expect_err("invalid _id must be rejected");
        assert!(server_code(&err).is_some(), "_id {bad:?}: {err:?}");
    }
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 0);
}

#[tokio::test]
async fn create_collection_twice_with_identical_options() {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("catalog_test");
    db.create_collection("alpha").await.expect("create alpha");
    db.collection::<Document>("alpha")
        .insert_one(doc! { "_id": 1 })
        .await
        .expect("insert");

    // Since MongoDB 7.0 (wire version 21) creating it again with identical options
    // succeeds and changes nothing (SERVER-60064; the `create` manual page: "If you try
    // to create a collection or view that already exists and you provide identical
    // options ... no action is taken and success is returned"). Before 7.0 it was 48.
    let hello = client
        .database("admin")
        .run_command(doc! { "hello": 1 })
        .await
        .expect("hello");
    let again = db.create_collection("alpha").await;
    if num(&hello, "maxWireVersion") >= 21.0 {
        again.expect("identical create on MongoDB >= 7.0 succeeds");
    } else {
        let err = again.expect_err("identical create before MongoDB 7.0 fails");
        assert_eq!(server_code(&err), Some(48), "{err:?}");
    }
    // Either way the existing collection and its documents are untouched.
    assert_eq!(db.list_collection_names().await.unwrap(), vec!["alpha"]);
    assert_eq!(
        db.collection::<Document>("alpha")
            .count_documents(doc! {})
            .await
            .unwrap(),
        1
    );
}

// ---------------------------------------------------------------------------
// listings as drivers and tools read them, aggregation
// ---------------------------------------------------------------------------
#[tokio::test]
async fn list_collections_databases_and_indexes_have_mongodb_shape() {
    use mongodb::results::CollectionType;

    let server = TestServer::start();
    let (db, coll) = fresh(&server, "shapes", "inventory").await;
    seed_inventory(&coll).await;
    db.create_collection("empty").await.expect("create empty");

    // The driver deserializes each entry into a CollectionSpecification.
    let mut cursor = db.list_collections().await.expect("listCollections");
    let mut specs = Vec::new();
    while cursor.advance().await.expect("advance") {
        specs.push(
            cursor
                .deserialize_current()
                .expect("collection specification"),
        );
    }
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["empty", "inventory"]);
    for spec in &specs {
        assert!(matches!(spec.collection_type, CollectionType::Collection));
        assert!(!spec.info.read_only);
        let id_index = spec.id_index.as_ref().expect("idIndex");
        assert_eq!(id_index.get_document("key").ok(), Some(&doc! { "_id": 1 }));
        assert_eq!(id_index.get_str("name").ok(), Some("_id_"));
    }

    // A filter on the name.
    let mut filtered = db
        .list_collection_names()
        .filter(doc! { "name": "inventory" })
        .await
        .expect("filtered listCollections");
    filtered.sort();
    assert_eq!(filtered, vec!["inventory"]);

    // listDatabases: the database with its size, not empty.
    let client = server.client().await;
    let dbs = client.list_databases().await.expect("listDatabases");
    let shapes = dbs
        .iter()
        .find(|d| d.name == "shapes")
        .unwrap_or_else(|| panic!("shapes missing from {dbs:?}"));
    assert!(!shapes.empty);

    // listIndexes: the _id index as { v: 2, key: { _id: 1 }, name: "_id_" }.
    let mut cursor = coll.list_indexes().await.expect("listIndexes");
    let mut indexes = Vec::new();
    while cursor.advance().await.expect("advance") {
        indexes.push(cursor.deserialize_current().expect("index model"));
    }
    assert_eq!(indexes.len(), 1, "{indexes:?}");
    assert_eq!(indexes[0].keys, doc! { "_id": 1 });
    assert_eq!(
        indexes[0].options.as_ref().and_then(|o| o.name.as_deref()),
        Some("_id_")
    );
    // listIndexes on a missing collection is NamespaceNotFound (26).
    let err = db
        .collection::<Document>("missing")
        .list_index_names()
        .await
        .expect_err("listIndexes on a missing collection");
    assert_eq!(server_code(&err), Some(26), "{err:?}");
}
