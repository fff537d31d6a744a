//! The catalog: which databases and collections exist, read from the backend's metadata
//! tables and kept in one moka cache shared by both front ends (DESIGN.md invariant 5).
//!
//! A snapshot of the whole catalog is cached under one key, with ORDS's settings
//! `cache.metadata.enabled` and `cache.metadata.timeout`. Beyond ORDS, it never serves a
//! definition created through docgate stale:
//! - every change bumps the catalog version in the same transaction, and the process that
//!   made it invalidates its cache right after commit;
//! - backends that can announce changes (PostgreSQL's LISTEN/NOTIFY) wake every other
//!   instance, which drops its cache on each announcement;
//! - a lookup that misses re-reads the catalog before answering "does not exist", and the
//!   listing commands always read it fresh, so a collection created through another instance
//!   is seen on the very next command even before the announcement arrives.
//!
//! Not for: creating tables or spelling SQL (that is `store`), or MongoDB command shapes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;

use crate::query::planner::IndexCandidate;
use crate::query::validator::CollectionValidator;
use crate::query::{Collation, IndexSpec};
use crate::store::{
    CollectionRecord, IndexRecord, MetaRecord, MetaWrite, Store, StoreError, StoreSession,
};

/// Metadata cache settings (ORDS `cache.metadata.*`).
#[derive(Clone, Debug, PartialEq)]
pub struct MetadataCacheSettings {
    pub enabled: bool,
    pub timeout: Duration,
}

impl Default for MetadataCacheSettings {
    fn default() -> Self {
        MetadataCacheSettings {
            enabled: true,
            timeout: Duration::from_secs(60),
        }
    }
}

/// Key of the cached metadata records: (kind, database or all databases).
type MetaKey = (String, Option<String>);

/// Metadata records read at one catalog version.
#[derive(Debug)]
struct MetaEntry {
    version: i64,
    records: Arc<Vec<MetaRecord>>,
}

/// A secondary index: the store's record and its parsed specification.
#[derive(Clone, Debug)]
pub struct CollectionIndex {
    pub record: IndexRecord,
    pub spec: IndexSpec,
}

/// No secondary index, for a plan that must not use any (a full scan).
pub const NO_INDEXES: &[CollectionIndex] = &[];

impl IndexCandidate for CollectionIndex {
    fn spec(&self) -> &IndexSpec {
        &self.spec
    }
    fn entries_table(&self) -> &str {
        &self.record.table
    }
    fn is_multikey(&self) -> bool {
        self.record.multikey
    }
}

/// A collection with its secondary indexes and its compiled validator, as commands need it.
#[derive(Clone, Debug)]
pub struct CollectionInfo {
    pub record: CollectionRecord,
    /// The indexes kept in entries tables: the secondary ones and, on a collection with a
    /// default collation, its collated `_id` index (see [`CollectionInfo::collated_id_index`]).
    pub indexes: Vec<CollectionIndex>,
    /// The `validator` of its options, compiled once with its level and action; `None`
    /// when it has none (or `validationLevel: "off"`).
    pub validator: Option<Arc<CollectionValidator>>,
}

impl CollectionInfo {
    /// A collection without secondary indexes, its validator compiled from its options;
    /// stored options that no longer compile are corrupt (writes would stop validating).
    pub fn without_indexes(record: CollectionRecord) -> Result<CollectionInfo, StoreError> {
        let validator = CollectionValidator::from_options(&record.options)
            .map_err(|e| {
                StoreError::Corrupt(format!(
                    "stored validator of {}.{} does not parse: {e}",
                    record.db, record.name
                ))
            })?
            .map(Arc::new);
        Ok(CollectionInfo {
            record,
            indexes: Vec::new(),
            validator,
        })
    }

    /// The `_id` index of a collection with a default collation: a unique index of that
    /// collation over `_id` beside the primary key (which compares `_id`s by their bytes), so
    /// `_id`s equal under the collation collide and lookups under it have an index.
    pub fn collated_id_index(&self) -> Option<&CollectionIndex> {
        self.indexes.iter().find(|index| index.spec.is_id_index())
    }

    /// The indexes besides the `_id` index, as `listIndexes` and `dropIndexes` count them.
    pub fn secondary_indexes(&self) -> impl Iterator<Item = &CollectionIndex> {
        self.indexes
            .iter()
            .filter(|index| !index.spec.is_id_index())
    }

    /// How many indexes the collection has, its `_id` index included.
    pub fn index_count(&self) -> usize {
        self.secondary_indexes().count() + 1
    }

    /// The collation an operation on this collection runs under: its own when it gave one,
    /// else the collection's default (`create` with `collation`), else simple.
    pub fn collation_for(
        &self,
        requested: Option<Collation>,
    ) -> Result<Collation, crate::query::QueryError> {
        match (requested, self.record.options.get_document("collation")) {
            (Some(requested), _) => Ok(requested),
            (None, Ok(default)) => Collation::parse(default),
            (None, Err(_)) => Ok(Collation::simple()),
        }
    }
}

/// All collections (and their indexes) of all databases at one catalog version.
#[derive(Debug, Default)]
pub struct CatalogSnapshot {
    pub version: i64,
    collections: BTreeMap<(String, String), Arc<CollectionInfo>>,
}

impl CatalogSnapshot {
    /// Builds a snapshot from the store's records; fails if a stored index specification
    /// no longer parses (writes would stop maintaining it, so it must not be skipped).
    pub fn from_records(
        version: i64,
        records: Vec<CollectionRecord>,
        index_records: Vec<IndexRecord>,
    ) -> Result<CatalogSnapshot, StoreError> {
        let mut infos: BTreeMap<(String, String), CollectionInfo> = records
            .into_iter()
            .map(|record| {
                let key = (record.db.clone(), record.name.clone());
                CollectionInfo::without_indexes(record).map(|info| (key, info))
            })
            .collect::<Result<_, _>>()?;
        for record in index_records {
            let spec = IndexSpec::parse(&record.spec).map_err(|e| {
                StoreError::Corrupt(format!("stored index {} does not parse: {e}", record.name))
            })?;
            let key = (record.db.clone(), record.collection.clone());
            if let Some(info) = infos.get_mut(&key) {
                info.indexes.push(CollectionIndex { record, spec });
            }
        }
        let collections = infos
            .into_iter()
            .map(|(key, info)| (key, Arc::new(info)))
            .collect();
        Ok(CatalogSnapshot {
            version,
            collections,
        })
    }

    /// The collection `db.name`, if it exists.
    pub fn collection(&self, db: &str, name: &str) -> Option<&CollectionRecord> {
        self.info(db, name).map(|info| &info.record)
    }

    /// The collection `db.name` with its indexes, if it exists.
    pub fn info(&self, db: &str, name: &str) -> Option<&Arc<CollectionInfo>> {
        self.collections.get(&(db.to_string(), name.to_string()))
    }

    /// Collections of one database, ordered by name.
    pub fn collections_in<'a>(
        &'a self,
        db: &'a str,
    ) -> impl Iterator<Item = &'a CollectionRecord> + 'a {
        self.collections
            .values()
            .filter(move |i| i.record.db == db)
            .map(|i| &i.record)
    }

    /// Every collection that has a TTL index, with those indexes.
    pub fn ttl_indexes(&self) -> impl Iterator<Item = (&CollectionRecord, &CollectionIndex)> {
        self.collections.values().flat_map(|info| {
            info.indexes
                .iter()
                .filter(|index| index.spec.expire_after_seconds.is_some())
                .map(move |index| (&info.record, index))
        })
    }

    /// Names of the databases that hold at least one collection, ordered.
    pub fn database_names(&self) -> Vec<String> {
        let names: BTreeSet<&String> = self.collections.keys().map(|(db, _)| db).collect();
        names.into_iter().cloned().collect()
    }
}

/// How the metadata cache served (`/metrics`): lookups answered from it and lookups that
/// read the database, for the catalog snapshot and the metadata records, and how often it
/// was dropped because docgate changed the catalog (`local`) or another instance announced
/// a change (`announced`). Lookups with the cache turned off count as neither.
#[derive(Debug, Default)]
pub struct CacheCounters {
    pub snapshot_hits: AtomicU64,
    pub snapshot_misses: AtomicU64,
    pub record_hits: AtomicU64,
    pub record_misses: AtomicU64,
    pub local_invalidations: AtomicU64,
    pub announced_invalidations: AtomicU64,
}

fn count(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The one metadata cache. Cloning shares it (the caches and the store are shared handles).
#[derive(Clone)]
pub struct Catalog {
    store: Arc<dyn Store>,
    /// Highest catalog version announced by the store; a cached snapshot older than this is
    /// never served (closes the gap where a read that began before a change is cached after
    /// the announcement cleared the cache).
    announced_version: Arc<AtomicI64>,
    /// None when `cache.metadata.enabled` is false: every lookup reads the database.
    cache: Option<Cache<(), Arc<CatalogSnapshot>>>,
    /// Metadata records (users, REST modules, ...) by kind and database; same settings and
    /// the same invalidation as `cache`.
    meta_cache: Option<Cache<MetaKey, Arc<MetaEntry>>>,
    counters: Arc<CacheCounters>,
}

impl Catalog {
    /// A catalog over `store` with the given cache settings. When the store announces
    /// catalog changes, a background task drops the cache on each announcement.
    pub fn new(store: Arc<dyn Store>, settings: &MetadataCacheSettings) -> Catalog {
        let cache: Option<Cache<(), Arc<CatalogSnapshot>>> = settings.enabled.then(|| {
            Cache::builder()
                .max_capacity(1)
                .time_to_live(settings.timeout.max(Duration::from_millis(1)))
                .build()
        });
        let meta_cache: Option<Cache<MetaKey, Arc<MetaEntry>>> = settings.enabled.then(|| {
            Cache::builder()
                .max_capacity(10_000)
                .time_to_live(settings.timeout.max(Duration::from_millis(1)))
                .build()
        });
        let announced_version = Arc::new(AtomicI64::new(i64::MIN));
        let counters = Arc::new(CacheCounters::default());
        if let (Some(cache), Some(meta_cache), Some(mut changes)) =
            (cache.clone(), meta_cache.clone(), store.catalog_changes())
        {
            let announced = announced_version.clone();
            let counters = counters.clone();
            tokio::spawn(async move {
                use tokio::sync::broadcast::error::RecvError;
                loop {
                    match changes.recv().await {
                        Ok(version) => {
                            announced.fetch_max(version, Ordering::SeqCst);
                        }
                        Err(RecvError::Lagged(_)) => {}
                        Err(RecvError::Closed) => break,
                    }
                    cache.invalidate(&()).await;
                    meta_cache.invalidate_all();
                    count(&counters.announced_invalidations);
                }
            });
        }
        Catalog {
            store,
            announced_version,
            cache,
            meta_cache,
            counters,
        }
    }

    /// How the cache has served since start.
    pub fn counters(&self) -> &CacheCounters {
        &self.counters
    }

    /// The current snapshot, from the cache or freshly read.
    pub async fn snapshot(&self) -> Result<Arc<CatalogSnapshot>, StoreError> {
        let Some(cache) = &self.cache else {
            return self.fresh_snapshot().await;
        };
        let store = self.store.clone();
        let mut missed = false;
        let loaded = cache
            .try_get_with((), async {
                missed = true;
                let mut session = store.session().await?;
                read_snapshot(session.as_mut()).await.map(Arc::new)
            })
            .await;
        let cached = match loaded {
            Ok(cached) => cached,
            // Concurrent misses share one read, run by whichever command came first, under
            // that command's interrupt: its failure (its client went away, its time ran
            // out, a killOp) is not this command's. Read again, as this command.
            Err(_) if !missed => {
                count(&self.counters.snapshot_misses);
                return self.fresh_snapshot().await;
            }
            Err(error) => {
                return Err(match Arc::try_unwrap(error) {
                    Ok(err) => err,
                    Err(shared) => StoreError::Database(shared.to_string()),
                })
            }
        };
        if cached.version < self.announced_version.load(Ordering::SeqCst) {
            count(&self.counters.snapshot_misses);
            return self.fresh_snapshot().await;
        }
        count(if missed {
            &self.counters.snapshot_misses
        } else {
            &self.counters.snapshot_hits
        });
        Ok(cached)
    }

    /// Reads the catalog from the database now, and caches what it read.
    pub async fn fresh_snapshot(&self) -> Result<Arc<CatalogSnapshot>, StoreError> {
        let mut session = self.store.session().await?;
        let snapshot = Arc::new(read_snapshot(session.as_mut()).await?);
        if let Some(cache) = &self.cache {
            cache.insert((), snapshot.clone()).await;
        }
        Ok(snapshot)
    }

    /// The collection `db.name`, if it exists. A miss in the cache is confirmed against the
    /// database, so a collection created through another instance is found at once.
    pub async fn collection(
        &self,
        db: &str,
        name: &str,
    ) -> Result<Option<CollectionRecord>, StoreError> {
        Ok(self
            .collection_info(db, name)
            .await?
            .map(|info| info.record.clone()))
    }

    /// The collection `db.name` with its indexes; a cache miss is confirmed against the
    /// database like [`Catalog::collection`].
    pub async fn collection_info(
        &self,
        db: &str,
        name: &str,
    ) -> Result<Option<Arc<CollectionInfo>>, StoreError> {
        if let Some(found) = self.snapshot().await?.info(db, name) {
            return Ok(Some(found.clone()));
        }
        if self.cache.is_none() {
            return Ok(None);
        }
        Ok(self.fresh_snapshot().await?.info(db, name).cloned())
    }

    /// The collection `db.name` with its indexes, for a caller that already holds a pooled
    /// connection: a cached snapshot answers if there is one, else the catalog is read
    /// through `session` (never through a second connection, which a small pool may not
    /// have). What is read inside the caller's transaction is not cached.
    pub async fn collection_info_in(
        &self,
        session: &mut dyn StoreSession,
        db: &str,
        name: &str,
    ) -> Result<Option<Arc<CollectionInfo>>, StoreError> {
        self.collection_info_through(session, db, name, false).await
    }

    /// Like [`Catalog::collection_info_in`]; with `committed` (the caller's transaction has
    /// changed no metadata, so what it reads is the committed catalog) a snapshot read
    /// through `session` is cached, so that a client that only writes does not read the
    /// whole catalog on every write.
    pub async fn collection_info_through(
        &self,
        session: &mut dyn StoreSession,
        db: &str,
        name: &str,
        committed: bool,
    ) -> Result<Option<Arc<CollectionInfo>>, StoreError> {
        if let Some(cache) = &self.cache {
            if let Some(snapshot) = cache.get(&()).await {
                let fresh = snapshot.version >= self.announced_version.load(Ordering::SeqCst);
                if let (true, Some(found)) = (fresh, snapshot.info(db, name)) {
                    return Ok(Some(found.clone()));
                }
            }
        }
        let snapshot = Arc::new(read_snapshot(session).await?);
        if let (true, Some(cache)) = (committed, &self.cache) {
            if snapshot.version >= self.announced_version.load(Ordering::SeqCst) {
                cache.insert((), snapshot.clone()).await;
            }
        }
        Ok(snapshot.info(db, name).cloned())
    }

    /// Drops the cached snapshot and metadata records; call right after committing a
    /// catalog change.
    pub async fn invalidate(&self) {
        count(&self.counters.local_invalidations);
        if let Some(cache) = &self.cache {
            cache.invalidate(&()).await;
        }
        if let Some(meta_cache) = &self.meta_cache {
            meta_cache.invalidate_all();
        }
    }

    /// The metadata records of `kind` in `db` (or in every database), from the cache or
    /// freshly read. Changes made through any docgate instance are seen on the next call
    /// (the catalog version); rows edited behind docgate's back within
    /// `cache.metadata.timeout`.
    pub async fn meta_records(
        &self,
        kind: &str,
        db: Option<&str>,
    ) -> Result<Arc<Vec<MetaRecord>>, StoreError> {
        let Some(meta_cache) = &self.meta_cache else {
            return Ok(self.read_meta(kind, db).await?.records);
        };
        let key: MetaKey = (kind.to_owned(), db.map(str::to_owned));
        if let Some(entry) = meta_cache.get(&key).await {
            if entry.version >= self.announced_version.load(Ordering::SeqCst) {
                count(&self.counters.record_hits);
                return Ok(entry.records.clone());
            }
        }
        count(&self.counters.record_misses);
        let entry = Arc::new(self.read_meta(kind, db).await?);
        meta_cache.insert(key, entry.clone()).await;
        Ok(entry.records.clone())
    }

    /// The metadata records of `kind` in `db` (or in every database) as the database has them
    /// now: for a caller that must not act on a cached answer, such as "no users exist",
    /// which another instance may have just made false. The catalog version is read (one
    /// statement); the cached records stand when it has not moved since they were read (every
    /// metadata write moves it, on any instance), else they are read again and cached.
    pub async fn fresh_meta_records(
        &self,
        kind: &str,
        db: Option<&str>,
    ) -> Result<Arc<Vec<MetaRecord>>, StoreError> {
        let key: MetaKey = (kind.to_owned(), db.map(str::to_owned));
        let mut session = self.store.session().await?;
        let version = session.catalog_version().await?;
        if let Some(meta_cache) = &self.meta_cache {
            if let Some(entry) = meta_cache.get(&key).await {
                if entry.version == version {
                    count(&self.counters.record_hits);
                    return Ok(entry.records.clone());
                }
            }
        }
        count(&self.counters.record_misses);
        let entry = Arc::new(MetaEntry {
            version,
            records: Arc::new(session.list_meta(kind, db).await?),
        });
        if let Some(meta_cache) = &self.meta_cache {
            meta_cache.insert(key, entry.clone()).await;
        }
        Ok(entry.records.clone())
    }

    /// One metadata record (through the cached list of its kind and database).
    pub async fn meta_record(
        &self,
        kind: &str,
        db: &str,
        name: &str,
    ) -> Result<Option<MetaRecord>, StoreError> {
        Ok(self
            .meta_records(kind, Some(db))
            .await?
            .iter()
            .find(|record| record.name == name)
            .cloned())
    }

    /// Writes a metadata record in its own transaction and drops the cached records, so the
    /// next lookup on this instance (and, through the catalog version, on every other) sees it.
    pub async fn put_meta(&self, record: &MetaRecord, mode: MetaWrite) -> Result<bool, StoreError> {
        let mut session = self.store.session().await?;
        let written = session.put_meta(record, mode).await;
        self.invalidate().await;
        written
    }

    /// Deletes metadata records (one, or every one of `kind` in `db`) like [`Catalog::put_meta`].
    pub async fn delete_meta(
        &self,
        kind: &str,
        db: &str,
        name: Option<&str>,
    ) -> Result<u64, StoreError> {
        let mut session = self.store.session().await?;
        let deleted = session.delete_meta(kind, db, name).await;
        self.invalidate().await;
        deleted
    }

    async fn read_meta(&self, kind: &str, db: Option<&str>) -> Result<MetaEntry, StoreError> {
        let mut session = self.store.session().await?;
        let version = session.catalog_version().await?;
        let records = session.list_meta(kind, db).await?;
        Ok(MetaEntry {
            version,
            records: Arc::new(records),
        })
    }
}

/// Reads the catalog through a session (inside the caller's transaction if one is open).
pub async fn read_snapshot(session: &mut dyn StoreSession) -> Result<CatalogSnapshot, StoreError> {
    let version = session.catalog_version().await?;
    let records = session.list_collections().await?;
    let indexes = session.list_indexes().await?;
    CatalogSnapshot::from_records(version, records, indexes)
}
