//! Catalog tests on every backend: create, list, drop, rename, views and changed options
//! (a view's definition, a collection's validation options, an index's specification), the
//! catalog version, a new store on the same data, stats, DDL inside a transaction, concurrent
//! bootstraps of an empty database. The physical names each backend chooses are checked per backend; odd names,
//! foreign objects, statement caches and opening errors stay in the backends' own tests.

use std::sync::Arc;

use bson::doc;

use super::super::{Predicate, ScanRequest, StoreError};
use super::backends::admin;
use super::{backends, create, keys_of, ok, stored, BackendKind};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_list_drop() {
    for backend in backends().await {
        let pg = backend.kind == BackendKind::Postgres;
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let v0 = ok(s.catalog_version().await);
        let opts = doc! { "capped": false, "validator": { "a": { "$gt": 1 } } };
        let b = ok(s.create_collection("app", "b.with.dots", &opts).await);
        let a = create(&mut *s, "app", "a").await;
        let z = create(&mut *s, "other", "a").await;
        assert_eq!(b.options, opts);
        assert_eq!(b.uuid.len(), 16);
        assert_ne!(a.uuid, b.uuid);
        assert_eq!(a.uuid[6] >> 4, 4, "UUID v4 layout");
        if pg {
            // `<name>$<n>`: recognisable, and never given twice.
            assert!(a.table.starts_with("\"app\".\"a$"), "{}", a.table);
            assert!(z.table.starts_with("\"other\".\"a$"), "{}", z.table);
            assert!(b.table.starts_with("\"app\".\"coll$"), "{}", b.table);
        } else {
            let prefix = match backend.kind {
                BackendKind::Sqlite => "dgc_",
                _ => "\"DG_C",
            };
            assert!(a.table.starts_with(prefix) && a.table != b.table && a.table != z.table);
        }
        assert!(ok(s.catalog_version().await) >= v0 + 3);

        let listed = ok(s.list_collections().await);
        assert_eq!(listed, vec![a.clone(), b.clone(), z.clone()]);

        match s.create_collection("app", "a", &doc! {}).await {
            Err(StoreError::AlreadyExists(what)) => assert_eq!(what, "app.a"),
            other => panic!("expected AlreadyExists, got {other:?}"),
        }

        let v1 = ok(s.catalog_version().await);
        ok(s.drop_collection(&a).await);
        assert!(ok(s.catalog_version().await) > v1);
        assert_eq!(ok(s.list_collections().await), vec![b.clone(), z.clone()]);
        // Dropping again (a stale record) is a no-op; the table is gone.
        let v2 = ok(s.catalog_version().await);
        ok(s.drop_collection(&a).await);
        if pg {
            assert_eq!(ok(s.catalog_version().await), v2);
        }
        assert!(s.scan(&a, &ScanRequest::all()).await.is_err());
        // The name can be reused (on SQLite the new table has a new physical name); the
        // stale record cannot drop the new collection.
        let a2 = create(&mut *s, "app", "a").await;
        if !pg {
            assert_ne!(a2.table, a.table);
        }
        ok(s.insert(&a2, &[stored("1", doc! {})], true).await);
        ok(s.drop_collection(&a).await);
        assert_eq!(ok(s.count(&a2, &Predicate::True).await), 1);
        if let Some(url) = backend.pg_url() {
            // Dropping the last collection of a database drops its schema.
            ok(s.drop_collection(&z).await);
            let client = admin(url).await;
            let schemas = ok(client
                .query("SELECT 1 FROM pg_namespace WHERE nspname = 'other'", &[])
                .await);
            assert!(schemas.is_empty());
        }
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_keeps_data_and_checks_target() {
    for backend in backends().await {
        let pg = backend.kind == BackendKind::Postgres;
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let a = create(&mut *s, "app", "a").await;
        let b = create(&mut *s, "app", "b").await;
        ok(s.insert(&a, &[stored("1", doc! {"x": 1})], true).await);

        match s.rename_collection(&a, "app", "b").await {
            Err(StoreError::AlreadyExists(what)) => assert_eq!(what, "app.b"),
            other => panic!("expected AlreadyExists, got {other:?}"),
        }
        let v = ok(s.catalog_version().await);
        let moved = ok(s.rename_collection(&a, "archive", "a2").await);
        assert!(ok(s.catalog_version().await) > v);
        assert_eq!((moved.db.as_str(), moved.name.as_str()), ("archive", "a2"));
        // Into another database: a new collection there (MongoDB copies it), a new uuid.
        assert_ne!(moved.uuid, a.uuid);
        if pg {
            assert!(
                moved.table.starts_with("\"archive\".\"a2$"),
                "{}",
                moved.table
            );
        } else {
            assert_eq!(moved.table, a.table);
        }
        assert_eq!(
            keys_of(&ok(s.scan(&moved, &ScanRequest::all()).await)),
            ["1"]
        );
        assert_eq!(
            ok(s.list_collections().await),
            vec![b.clone(), moved.clone()]
        );
        // The stale record no longer names a collection: rename fails, drop is a no-op that
        // must not drop the renamed collection's table.
        assert!(s.rename_collection(&a, "x", "y").await.is_err());
        ok(s.drop_collection(&a).await);
        assert_eq!(ok(s.count(&moved, &Predicate::True).await), 1);
        // Within one database (the uuid stays), and back; PostgreSQL never gives a table
        // name twice, so the way back does not reuse the first one.
        let back = ok(s.rename_collection(&moved, "archive", "a3").await);
        assert_eq!(back.uuid, moved.uuid);
        if pg {
            assert!(
                back.table.starts_with("\"archive\".\"a3$"),
                "{}",
                back.table
            );
        }
        let back = ok(s.rename_collection(&back, "app", "a").await);
        if pg {
            assert!(back.table.starts_with("\"app\".\"a$"), "{}", back.table);
            assert_ne!(back.table, a.table);
        }
        assert_eq!(ok(s.count(&back, &Predicate::True).await), 1);
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_a_new_store() {
    for backend in backends().await {
        let (coll, version) = {
            let store = backend.open().await;
            let mut s = ok(store.session().await);
            let coll = create(&mut *s, "app", "keep").await;
            ok(
                s.insert(&coll, &[stored("1", doc! {}), stored("2", doc! {})], true)
                    .await,
            );
            (coll, ok(s.catalog_version().await))
        };
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        assert_eq!(ok(s.catalog_version().await), version);
        assert_eq!(ok(s.list_collections().await), vec![coll.clone()]);
        assert_eq!(
            keys_of(&ok(s.scan(&coll, &ScanRequest::all()).await)),
            ["1", "2"]
        );
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_sizes_and_indexes() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "stats").await;
        let docs: Vec<_> = (0..100)
            .map(|i| stored(&format!("{i:03}"), doc! {"pad": "x".repeat(100)}))
            .collect();
        let expected: u64 = docs.iter().map(|d| d.bson.len() as u64).sum();
        ok(s.insert(&coll, &docs, true).await);
        let stats = ok(s.collection_stats(&coll).await);
        assert_eq!(stats.count, 100);
        assert_eq!(stats.data_size, expected);
        assert_eq!(stats.index_count, 1);
        assert!(stats.storage_size >= expected, "{stats:?}");
        assert_eq!(stats.index_sizes.len(), 1, "{stats:?}");
        assert_eq!(stats.index_sizes[0].0, "_id_");
        assert!(
            stats.index_sizes[0].1 > 0,
            "the _id index takes space: {stats:?}"
        );
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_inside_a_transaction_commits_with_it() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let v = ok(s.catalog_version().await);
        ok(s.begin().await);
        let coll = create(&mut *s, "app", "in_tx").await;
        ok(s.insert(&coll, &[stored("1", doc! {})], true).await);
        let renamed = ok(s.rename_collection(&coll, "app", "renamed").await);
        ok(s.commit().await);
        let mut other = ok(store.session().await);
        assert_eq!(ok(other.list_collections().await), vec![renamed.clone()]);
        assert_eq!(ok(other.catalog_version().await), v + 2);
        assert_eq!(
            keys_of(&ok(other.scan(&renamed, &ScanRequest::all()).await)),
            ["1"]
        );
        drop((s, other, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_bootstraps_and_creates() {
    for backend in backends().await {
        let backend = Arc::new(backend);
        let mut tasks = Vec::new();
        for i in 0..4 {
            let backend = backend.clone();
            tasks.push(tokio::spawn(async move {
                // Each task opens its own store on the empty database, as a process would.
                let store = backend.open().await;
                let mut s = store.session().await?;
                let mine = s
                    .create_collection("app", &format!("c{i}"), &doc! {})
                    .await?;
                let shared = s.create_collection("app", "shared", &doc! {}).await;
                Ok::<_, StoreError>((mine, shared.is_ok()))
            }));
        }
        let mut winners = 0;
        for task in tasks {
            let (_, won) = ok(ok(task.await));
            winners += usize::from(won);
        }
        assert_eq!(winners, 1, "exactly one create of app.shared succeeds");
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        assert_eq!(ok(s.list_collections().await).len(), 5);
        drop((s, store));
        match Arc::try_unwrap(backend) {
            Ok(backend) => backend.finish().await,
            Err(_) => panic!("a task still holds the backend"),
        }
    }
}

/// A view is a record with options and no table: listed with the collections, its options
/// replaced in place (the version bumped), dropped like a collection, and its name taken;
/// an index's specification is replaced the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_and_changed_options() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let base = create(&mut *s, "app", "base").await;
        let definition = doc! { "viewOn": "base", "pipeline": [{ "$match": { "a": 1 } }] };
        let v0 = ok(s.catalog_version().await);
        let view = ok(s.create_view("app", "v", &definition).await);
        assert!(ok(s.catalog_version().await) > v0);
        assert_eq!(view.options, definition);
        assert_eq!(
            ok(s.list_collections().await),
            vec![base.clone(), view.clone()]
        );
        match s.create_view("app", "base", &definition).await {
            Err(StoreError::AlreadyExists(what)) => assert_eq!(what, "app.base"),
            other => panic!("expected AlreadyExists, got {other:?}"),
        }
        match s.create_collection("app", "v", &doc! {}).await {
            Err(StoreError::AlreadyExists(what)) => assert_eq!(what, "app.v"),
            other => panic!("expected AlreadyExists, got {other:?}"),
        }

        let redefined = doc! { "viewOn": "base", "pipeline": [] };
        let v1 = ok(s.catalog_version().await);
        ok(s.set_collection_options(&view, &redefined).await);
        assert!(ok(s.catalog_version().await) > v1);
        let listed = ok(s.list_collections().await);
        assert_eq!(listed[1].options, redefined);
        assert_eq!(
            (&listed[1].uuid, &listed[1].table),
            (&view.uuid, &view.table)
        );

        let index = ok(s
            .create_index(
                &base,
                "a_1",
                &doc! { "v": 2, "key": { "a": 1 }, "name": "a_1" },
                false,
                false,
                &[],
            )
            .await);
        let hidden = doc! { "v": 2, "key": { "a": 1 }, "name": "a_1", "hidden": true };
        let v2 = ok(s.catalog_version().await);
        ok(s.set_index_spec(&index, &hidden).await);
        assert!(ok(s.catalog_version().await) > v2);
        let indexes = ok(s.list_indexes().await);
        assert_eq!(indexes.len(), 1);
        assert_eq!(indexes[0].spec, hidden);
        assert_eq!(indexes[0].table, index.table);

        ok(s.drop_collection(&view).await);
        assert_eq!(ok(s.list_collections().await), vec![base.clone()]);
        // A stale record changes nothing.
        assert!(s.set_collection_options(&view, &definition).await.is_err());
        ok(s.drop_collection(&base).await);
        assert!(s.set_index_spec(&index, &hidden).await.is_err());
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collection_options_are_replaced() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let record = ok(s
            .create_collection("app", "opts", &doc! {"validator": {"a": 1}})
            .await);
        let v0 = ok(s.catalog_version().await);
        let options = doc! {"validator": {"b": {"$exists": true}}, "validationLevel": "moderate"};
        ok(s.set_collection_options(&record, &options).await);
        assert!(ok(s.catalog_version().await) > v0);
        let listed = ok(s.list_collections().await);
        let changed = listed.iter().find(|c| c.name == "opts").expect("listed");
        assert_eq!(changed.options, options);
        assert_eq!(
            (&changed.table, &changed.uuid),
            (&record.table, &record.uuid)
        );
        // A record of a dropped collection changes nothing.
        ok(s.drop_collection(&record).await);
        assert!(s.set_collection_options(&record, &doc! {}).await.is_err());
        drop((s, store));
        backend.finish().await;
    }
}
