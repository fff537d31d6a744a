//! The catalog: which databases and collections exist, read from the backend's metadata
//! tables and kept in one moka cache shared by both front ends (DESIGN.md invariant 5).
//!
//! A snapshot of the whole catalog is cached under one key. Every change made through
//! docgate bumps the catalog version in the same transaction, and the process that made it
//! invalidates the cache right after commit, so a definition created here is never served
//! stale. Changes made by other processes are picked up when the cached snapshot expires.
//!
//! Not for: creating tables or spelling SQL (that is `store`), or MongoDB command shapes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;

use crate::store::{CollectionRecord, Store, StoreError, StoreSession};

/// How long a cached catalog snapshot may serve before it is re-read from the database.
pub const DEFAULT_METADATA_TIMEOUT: Duration = Duration::from_secs(5);

/// All collections of all databases at one catalog version.
#[derive(Debug, Default)]
pub struct CatalogSnapshot {
    pub version: i64,
    collections: BTreeMap<(String, String), CollectionRecord>,
}

impl CatalogSnapshot {
    /// Builds a snapshot from the store's records.
    pub fn from_records(version: i64, records: Vec<CollectionRecord>) -> CatalogSnapshot {
        let collections = records
            .into_iter()
            .map(|r| ((r.db.clone(), r.name.clone()), r))
            .collect();
        CatalogSnapshot {
            version,
            collections,
        }
    }

    /// The collection `db.name`, if it exists.
    pub fn collection(&self, db: &str, name: &str) -> Option<&CollectionRecord> {
        self.collections.get(&(db.to_string(), name.to_string()))
    }

    /// Collections of one database, ordered by name.
    pub fn collections_in<'a>(
        &'a self,
        db: &'a str,
    ) -> impl Iterator<Item = &'a CollectionRecord> + 'a {
        self.collections.values().filter(move |r| r.db == db)
    }

    /// Names of the databases that hold at least one collection, ordered.
    pub fn database_names(&self) -> Vec<String> {
        let names: BTreeSet<&String> = self.collections.keys().map(|(db, _)| db).collect();
        names.into_iter().cloned().collect()
    }
}

/// The one metadata cache.
pub struct Catalog {
    store: Arc<dyn Store>,
    cache: Cache<(), Arc<CatalogSnapshot>>,
}

impl Catalog {
    /// A catalog over `store` with the default metadata timeout.
    pub fn new(store: Arc<dyn Store>) -> Catalog {
        Catalog::with_timeout(store, DEFAULT_METADATA_TIMEOUT)
    }

    /// A catalog whose snapshot expires after `timeout`.
    pub fn with_timeout(store: Arc<dyn Store>, timeout: Duration) -> Catalog {
        Catalog {
            store,
            cache: Cache::builder()
                .max_capacity(1)
                .time_to_live(timeout)
                .build(),
        }
    }

    /// The current snapshot, from the cache or freshly read.
    pub async fn snapshot(&self) -> Result<Arc<CatalogSnapshot>, StoreError> {
        let store = self.store.clone();
        self.cache
            .try_get_with((), async move {
                let mut session = store.session().await?;
                read_snapshot(session.as_mut()).await.map(Arc::new)
            })
            .await
            .map_err(|e| match Arc::try_unwrap(e) {
                Ok(err) => err,
                Err(shared) => StoreError::Database(shared.to_string()),
            })
    }

    /// The collection `db.name`, if it exists.
    pub async fn collection(
        &self,
        db: &str,
        name: &str,
    ) -> Result<Option<CollectionRecord>, StoreError> {
        Ok(self.snapshot().await?.collection(db, name).cloned())
    }

    /// Drops the cached snapshot; call right after committing a catalog change.
    pub async fn invalidate(&self) {
        self.cache.invalidate(&()).await;
    }
}

/// Reads the catalog through a session (inside the caller's transaction if one is open).
pub async fn read_snapshot(session: &mut dyn StoreSession) -> Result<CatalogSnapshot, StoreError> {
    let version = session.catalog_version().await?;
    let records = session.list_collections().await?;
    Ok(CatalogSnapshot::from_records(version, records))
}
