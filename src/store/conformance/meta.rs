//! One scenario for the metadata records of any backend (`list_meta`, `get_meta`, `put_meta`,
//! `delete_meta`), run against every backend (it replaces the `metadata_records` test each
//! backend had).

use serde_json::json;

use super::super::{MetaRecord, MetaWrite, StoreError, StoreSession};
use super::backends;

fn record(db: &str, name: &str, body: serde_json::Value) -> MetaRecord {
    MetaRecord {
        kind: "user".into(),
        db: db.into(),
        name: name.into(),
        body,
    }
}

/// Inserts, reads, updates, upserts and deletes records, checking the catalog version moves.
async fn check_meta_records(session: &mut dyn StoreSession) {
    let ok = |r: Result<bool, StoreError>| r.expect("meta write");
    let v0 = session.catalog_version().await.expect("version");
    let alice = record("admin", "alice", json!({"roles": ["root"], "n": 1}));
    assert!(ok(session.put_meta(&alice, MetaWrite::Insert).await));
    assert!(session.catalog_version().await.expect("version") > v0);
    assert!(matches!(
        session.put_meta(&alice, MetaWrite::Insert).await,
        Err(StoreError::AlreadyExists(_))
    ));
    let bob = record("app", "bob", json!({"name": "ünïcode \"quoted\""}));
    assert!(ok(session.put_meta(&bob, MetaWrite::Upsert).await));
    let ghost = record("app", "ghost", json!({}));
    assert!(!ok(session.put_meta(&ghost, MetaWrite::Update).await));

    let all = session.list_meta("user", None).await.expect("list");
    assert_eq!(all, vec![alice.clone(), bob.clone()]);
    let app = session.list_meta("user", Some("app")).await.expect("list");
    assert_eq!(app, vec![bob.clone()]);
    assert!(session
        .list_meta("rest_module", None)
        .await
        .expect("list")
        .is_empty());

    // Keys come back in the order they were written (a REST module's `sort` and
    // `$project` depend on it), at every depth.
    let ordered = record(
        "app",
        "ordered",
        json!({"sort": {"venue_id": 1, "date": -1}, "b": {"zz": 1, "a": [{"y": 1, "x": 2}]}}),
    );
    assert!(ok(session.put_meta(&ordered, MetaWrite::Upsert).await));
    let read = session
        .get_meta("user", "app", "ordered")
        .await
        .expect("get")
        .expect("the ordered record");
    assert_eq!(read.body.to_string(), ordered.body.to_string());
    let listed = session.list_meta("user", Some("app")).await.expect("list");
    // Compared as text: `Value` equality ignores key order.
    let written = ordered.body.to_string();
    assert!(listed
        .iter()
        .map(|r| r.body.to_string())
        .any(|text| text == written));
    assert_eq!(
        session
            .delete_meta("user", "app", Some("ordered"))
            .await
            .expect("delete"),
        1
    );

    let changed = record("admin", "alice", json!({"roles": [], "n": 2}));
    assert!(ok(session.put_meta(&changed, MetaWrite::Update).await));
    let got = session
        .get_meta("user", "admin", "alice")
        .await
        .expect("get");
    assert_eq!(got, Some(changed));
    assert_eq!(
        session
            .get_meta("user", "admin", "nobody")
            .await
            .expect("get"),
        None
    );

    assert_eq!(
        session
            .delete_meta("user", "admin", Some("alice"))
            .await
            .expect("delete"),
        1
    );
    assert_eq!(
        session
            .delete_meta("user", "app", None)
            .await
            .expect("delete"),
        1
    );
    assert!(session
        .list_meta("user", None)
        .await
        .expect("list")
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_records() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = match store.session().await {
            Ok(s) => s,
            Err(e) => panic!("session: {e:?}"),
        };
        check_meta_records(&mut *s).await;
        drop((s, store));
        backend.finish().await;
    }
}
