//! Tests of `ops::validation` on SQLite: the options `create` keeps, the writes the
//! validator refuses, and `set_validation_options` (collMod's core) changing them — the
//! catalog compiles the new validator on the next write.

use std::sync::Arc;
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::*;
use crate::catalog::MetadataCacheSettings;
use crate::ops::insert::{insert, InsertMode};
use crate::ops::transaction::OpScope;
use crate::state::AppSettings;
use crate::store::settings::BackendUrl;

async fn state(dir: &std::path::Path) -> Arc<AppState> {
    AppState::open(AppSettings {
        backend: BackendUrl::Sqlite(dir.join("data")),
        listen: "127.0.0.1:0".parse().unwrap(),
        max_connections: 8,
        pool: Default::default(),
        metadata_cache: MetadataCacheSettings::default(),
        ttl_monitor_interval: Duration::from_secs(60),
        slow_op_threshold: Duration::from_millis(100),
        auth: Default::default(),
        shutdown_grace: Duration::from_secs(1),
        documents: Default::default(),
        argv: Vec::new(),
    })
    .await
    .unwrap()
}

async fn insert_one(state: &AppState, document: Document) -> Result<(), OpError> {
    let outcome = insert(
        &mut OpScope::autocommit(state),
        "db",
        "c",
        vec![Bson::Document(document)],
        InsertMode::AllOrNothing,
        DocumentValidation::Enforce,
    )
    .await?;
    assert_eq!(outcome.inserted, 1);
    Ok(())
}

fn code(result: Result<(), OpError>) -> i32 {
    result.err().map_or(0, |e| e.code())
}

#[test]
fn create_options_fill_in_the_defaults() {
    let validator = doc! {"a": {"$gt": 1}};
    let options = validation_options("create", "db", "c", Some(&validator), None, None).unwrap();
    assert_eq!(
        options,
        doc! {"validator": {"a": {"$gt": 1}}, "validationLevel": "strict", "validationAction": "error"}
    );
    let level = Bson::from("moderate");
    let options = validation_options("create", "db", "c", None, Some(&level), None).unwrap();
    assert_eq!(options, doc! {"validationLevel": "moderate"});
    let refused = validation_options("create", "admin", "c", Some(&validator), None, None);
    assert_eq!(refused.unwrap_err().code(), 72);
    let refused = validation_options("create", "db", "system.js", Some(&validator), None, None);
    assert_eq!(refused.unwrap_err().code(), 72);
}

#[tokio::test]
async fn set_validation_options_changes_what_writes_must_meet() {
    let dir = tempfile::tempdir().unwrap();
    let state = state(dir.path()).await;
    // As `create` makes it: a validator on `a`.
    let options = validation_options(
        "create",
        "db",
        "c",
        Some(&doc! {"a": {"$type": "int"}}),
        None,
        None,
    )
    .unwrap();
    assert!(
        crate::ops::collections::create_collection(&state, "db", "c", &options)
            .await
            .unwrap()
    );
    assert_eq!(code(insert_one(&state, doc! {"a": "x"}).await), 121);
    insert_one(&state, doc! {"a": 1}).await.unwrap();

    // A new validator replaces it at once (the catalog recompiles it).
    set_validation_options(
        &state,
        "db",
        "c",
        Some(&doc! {"b": {"$exists": true}}),
        None,
        None,
    )
    .await
    .unwrap();
    insert_one(&state, doc! {"a": "x", "b": 1}).await.unwrap();
    assert_eq!(code(insert_one(&state, doc! {"a": 1}).await), 121);
    let record = state.catalog.collection("db", "c").await.unwrap().unwrap();
    assert_eq!(
        record.options,
        doc! {"validator": {"b": {"$exists": true}}, "validationLevel": "strict", "validationAction": "error"}
    );

    // The action alone: warn lets the document through.
    let warn = Bson::from("warn");
    set_validation_options(&state, "db", "c", None, None, Some(&warn))
        .await
        .unwrap();
    insert_one(&state, doc! {"a": 1}).await.unwrap();
    // The level alone: off.
    set_validation_options(&state, "db", "c", None, Some(&Bson::from("off")), None)
        .await
        .unwrap();
    let record = state.catalog.collection("db", "c").await.unwrap().unwrap();
    assert_eq!(record.options.get_str("validationLevel").unwrap(), "off");
    assert_eq!(record.options.get_str("validationAction").unwrap(), "warn");

    // `validator: {}` removes the validator.
    set_validation_options(
        &state,
        "db",
        "c",
        Some(&Document::new()),
        Some(&Bson::from("strict")),
        Some(&Bson::from("error")),
    )
    .await
    .unwrap();
    insert_one(&state, doc! {"z": 1}).await.unwrap();

    // The same checks as create; nothing changes when they fail.
    let bad =
        set_validation_options(&state, "db", "c", Some(&doc! {"$where": "1"}), None, None).await;
    assert_eq!(bad.unwrap_err().code(), 224);
    let bad = set_validation_options(&state, "db", "c", None, Some(&Bson::from("lax")), None).await;
    assert_eq!(bad.unwrap_err().code(), 2);
    let missing =
        set_validation_options(&state, "db", "nope", Some(&doc! {"a": 1}), None, None).await;
    assert_eq!(missing.unwrap_err().code(), 26);
    insert_one(&state, doc! {"z": 2}).await.unwrap();
}
