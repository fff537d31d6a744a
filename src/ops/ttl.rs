//! The TTL monitor: every interval (MongoDB's `ttlMonitorSleepSecs`, 60 s by default) it
//! deletes the documents of each collection whose TTL-indexed date is at least
//! `expireAfterSeconds` in the past. Each index's pass is one delete statement,
//! `{<field>: {$lte: <cutoff>}}` (and the index's partial filter, if it has one), run through
//! the core's delete path (`delete::run_statement`) in its own [`Transaction`], like any
//! other delete. The planner serves it from the TTL index (a range of date keys, so non-date
//! values never expire and an array expires when its earliest date does, as in MongoDB).
//!
//! Not for: creating TTL indexes (see the `createIndexes` command).

use std::sync::Arc;
use std::time::Duration;

use bson::{Bson, DateTime};
use tokio::sync::watch;

use super::delete::{run_statement, DeleteStatement};
use super::transaction::Transaction;
use super::OpError;
use crate::catalog::{Catalog, CollectionIndex};
use crate::query::{FieldPredicate, Filter};
use crate::state::AppState;
use crate::store::Store;

/// Deletes every document expired at `now`; returns how many were deleted.
pub async fn expire_once(
    store: &dyn Store,
    catalog: &Catalog,
    now: DateTime,
) -> Result<u64, OpError> {
    let snapshot = catalog.snapshot().await?;
    let mut deleted = 0;
    for (collection, index) in snapshot.ttl_indexes() {
        let Some(filter) = expired(index, now) else {
            continue;
        };
        let Some(info) = snapshot.info(&collection.db, &collection.name) else {
            continue;
        };
        let statement = DeleteStatement {
            filter,
            just_one: false,
            collation: None,
        };
        let mut transaction = Transaction::begin(store, catalog).await?;
        deleted += run_statement(transaction.session(), info, statement).await?;
        transaction.commit().await?;
    }
    Ok(deleted)
}

/// The filter selecting what `index` holds and has expired at `now`: its first field at or
/// before the cutoff, and its partial filter (the index holds only documents matching it).
fn expired(index: &CollectionIndex, now: DateTime) -> Option<Filter> {
    let (Some(seconds), Some((path, _))) =
        (index.spec.expire_after_seconds, index.spec.fields.first())
    else {
        return None;
    };
    let cutoff = DateTime::from_millis(
        now.timestamp_millis()
            .saturating_sub(seconds.saturating_mul(1000)),
    );
    let mut conditions = vec![Filter::Field {
        path: path.clone(),
        predicates: vec![FieldPredicate::Lte(Bson::DateTime(cutoff))],
    }];
    conditions.extend(index.spec.partial_filter.clone());
    Some(Filter::And(conditions))
}

/// Runs [`expire_once`] every `interval` until `shutdown` turns true.
pub async fn run_monitor(
    state: Arc<AppState>,
    interval: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                match expire_once(state.store.as_ref(), &state.catalog, DateTime::now()).await {
                    Ok(0) => {}
                    Ok(deleted) => tracing::info!(deleted, "TTL monitor deleted expired documents"),
                    Err(error) => tracing::warn!(%error, "TTL monitor pass failed; retrying next interval"),
                }
            }
            _ = shutdown.changed() => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, Document};

    use crate::catalog::MetadataCacheSettings;
    use crate::ops::prepare::prepare_for_storage;
    use crate::ops::read::decode_document;
    use crate::ops::validation::{DocumentValidation, ValidationCheck};
    use crate::query::scan::ScanRequest;
    use crate::query::IndexSpec;
    use crate::store::postgres::{PostgresOptions, PostgresStore};
    use crate::store::sqlite::{SqliteOptions, SqliteStore};

    /// Creates `db.name` with the index `spec` and the documents `docs` (keys computed for it).
    async fn collection_with(
        store: &dyn Store,
        catalog: &Catalog,
        name: &str,
        spec: Document,
        docs: Vec<Document>,
    ) {
        let mut session = store.session().await.unwrap();
        let record = session
            .create_collection("db", name, &Document::new())
            .await
            .unwrap();
        let spec = IndexSpec::parse(&spec).unwrap();
        session
            .create_index(&record, &spec.name, &spec.document, false, false, &[])
            .await
            .unwrap();
        catalog.invalidate().await;
        let info = catalog.collection_info("db", name).await.unwrap().unwrap();
        let stored: Vec<_> = docs
            .into_iter()
            .map(|d| {
                let check = ValidationCheck::new_document(None, DocumentValidation::Enforce);
                prepare_for_storage(d, &info.indexes, Default::default(), &check)
                    .unwrap()
                    .stored
            })
            .collect();
        session.insert(&record, &stored, true).await.unwrap();
    }

    /// The `_id`s left in `db.name`, in insertion order.
    async fn ids(store: &dyn Store, catalog: &Catalog, name: &str) -> Vec<Bson> {
        let record = catalog.collection("db", name).await.unwrap().unwrap();
        let mut session = store.session().await.unwrap();
        let rows = session.scan(&record, &ScanRequest::all()).await.unwrap();
        rows.iter()
            .map(|row| decode_document(row).unwrap().get("_id").unwrap().clone())
            .collect()
    }

    #[tokio::test]
    async fn expired_documents_are_deleted_through_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open(&dir.path().join("data"), SqliteOptions::default()).unwrap(),
        );
        expire_scenario(store).await;
    }

    /// The same on PostgreSQL (`DOCGATE_TEST_PG_URL`, in a database of its own), where the
    /// delete's read locks the expired rows; skipped with a note when no server is given.
    #[tokio::test]
    async fn expired_documents_are_deleted_through_the_index_on_postgres() {
        let Some(server) = std::env::var("DOCGATE_TEST_PG_URL")
            .ok()
            .filter(|url| !url.is_empty())
        else {
            eprintln!("note: DOCGATE_TEST_PG_URL is not set, skipping the PostgreSQL TTL test");
            return;
        };
        let name = format!("dg_test_ttl_{}", std::process::id());
        let (admin, connection) = tokio_postgres::connect(&server, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let drop = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
        admin.batch_execute(&drop).await.unwrap();
        admin
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .await
            .unwrap();
        let (base, query) = server.split_once('?').unwrap_or((&server, ""));
        let authority = base.find("://").map_or(0, |i| i + 3);
        let head = base[authority..]
            .find('/')
            .map_or(base, |slash| &base[..authority + slash]);
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        let url = format!("{head}/{name}{query}");
        let store: Arc<dyn Store> = Arc::new(
            PostgresStore::connect(&url, PostgresOptions::default())
                .await
                .unwrap(),
        );
        expire_scenario(store).await;
        admin.batch_execute(&drop).await.unwrap();
    }

    /// TTL indexes, plain and partial, over expired, fresh, non-date, array and missing
    /// values; one pass deletes exactly the expired documents the indexes hold.
    async fn expire_scenario(store: Arc<dyn Store>) {
        let catalog = Catalog::new(store.clone(), &MetadataCacheSettings::default());
        let now = DateTime::from_millis(1_000_000_000_000);
        let old = Bson::DateTime(DateTime::from_millis(1_000_000_000_000 - 61_000));
        let recent = Bson::DateTime(DateTime::from_millis(1_000_000_000_000 - 59_000));
        collection_with(
            store.as_ref(),
            &catalog,
            "plain",
            doc! {"key": {"at": 1}, "name": "at_1", "expireAfterSeconds": 60},
            vec![
                doc! {"_id": 1, "at": old.clone()},
                doc! {"_id": 2, "at": recent.clone()},
                doc! {"_id": 3, "at": "not a date"},
                doc! {"_id": 4, "at": [recent.clone(), old.clone()]},
                doc! {"_id": 5},
                doc! {"_id": 6, "at": 0},
            ],
        )
        .await;
        collection_with(
            store.as_ref(),
            &catalog,
            "partial",
            doc! {"key": {"at": -1}, "name": "at_-1", "expireAfterSeconds": 60,
            "partialFilterExpression": {"kind": "temp"}},
            vec![
                doc! {"_id": 1, "at": old.clone(), "kind": "temp"},
                doc! {"_id": 2, "at": old.clone(), "kind": "kept"},
                doc! {"_id": 3, "at": recent.clone(), "kind": "temp"},
            ],
        )
        .await;

        assert_eq!(expire_once(store.as_ref(), &catalog, now).await.unwrap(), 3);
        assert_eq!(
            ids(store.as_ref(), &catalog, "plain").await,
            [2, 3, 5, 6].map(Bson::Int32)
        );
        assert_eq!(
            ids(store.as_ref(), &catalog, "partial").await,
            [2, 3].map(Bson::Int32)
        );
        assert_eq!(expire_once(store.as_ref(), &catalog, now).await.unwrap(), 0);
    }
}
