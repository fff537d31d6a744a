//! Sizes and health: `collStats`, `dbStats`, `validate`, the `$collStats` aggregate stage
//! (`storageStats` and `count`; `latencyStats` and `queryExecStats` are refused, docgate
//! keeps no per-collection latencies), and the `$indexStats` stage (each index with the
//! operations that chose it, `ops::index_usage`).
//!
//! `validate` really checks: every stored document must decode as BSON, have an `_id`, and be
//! stored under the key that `_id` encodes to; the count must agree with a SQL `COUNT`.
//!
//! Not for: changing anything.

use crate::ops::capped::CappedLimits;
use bson::{doc, Bson, Document};

use super::write_reply::count_bson;
use crate::mongo::arguments::Arguments;
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::CommandRequest;
use crate::ops::namespace::check_db_name;
use crate::ops::read::decode_document;
use crate::store::{CollectionStats, Predicate, ScanRequest};

/// `scale` divides the byte figures, as in MongoDB.
fn scale_of(arguments: &mut Arguments<'_>) -> Result<i64, OpError> {
    match arguments.i64("scale")? {
        None => Ok(1),
        Some(n) if n >= 1 => Ok(n),
        Some(_) => Err(OpError::BadValue(
            "Scale factor must be greater than zero".into(),
        )),
    }
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A size as MongoDB's `appendNumber` writes it: an int when it fits, else a long.
fn size_bson(n: i64) -> Bson {
    count_bson(u64::try_from(n).unwrap_or(0))
}

/// `collStats`.
pub async fn coll_stats(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let mut arguments = request.arguments();
    let scale = scale_of(&mut arguments)?;
    // `verbose` adds storage-engine detail docgate's backends do not have.
    arguments.without_effect("verbose");
    arguments.finish()?;
    let name = request.collection()?;
    let namespace = format!("{}.{name}", request.db);
    let mut reply = doc! {"ns": &namespace};
    reply.extend(storage_stats(context, &request.db, name, scale).await?);
    Ok(reply)
}

/// The backend's figures for collection `name`; none when it does not exist.
/// and its limits when it is capped.
async fn collection_figures(
    context: &mut CommandContext<'_>,
    db: &str,
    name: &str,
) -> Result<Option<(CollectionStats, Option<CappedLimits>)>, OpError> {
    let Some(record) = context.catalog().collection(db, name).await? else {
        return Ok(None);
    };
    crate::ops::views::check_not_view(&record)?;
    let mut session = context.open_session().await?;
    let stats = session
        .collection_stats(&record)
        .await?
        .merged_by_index_name();
    Ok(Some((stats, CappedLimits::of(&record))))
}

/// The size figures of `collStats` (and of `$collStats`' `storageStats`), byte figures
/// divided by `scale`; 26 NamespaceNotFound for a missing collection.
async fn storage_stats(
    context: &mut CommandContext<'_>,
    db: &str,
    name: &str,
    scale: i64,
) -> Result<Document, OpError> {
    match collection_figures(context, db, name).await? {
        Some((stats, capped)) => Ok(storage_document(&stats, capped.as_ref(), scale)),
        None => Err(not_found(db, name)),
    }
}

fn not_found(db: &str, name: &str) -> OpError {
    OpError::NamespaceNotFound(format!("Collection [{db}.{name}] not found."))
}

fn storage_document(
    stats: &CollectionStats,
    capped: Option<&CappedLimits>,
    scale: i64,
) -> Document {
    let count = as_i64(stats.count);
    let size = as_i64(stats.data_size);
    let storage = as_i64(stats.storage_size);
    let index_total = as_i64(stats.total_index_size());
    let index_sizes: Document = stats
        .index_sizes
        .iter()
        .map(|(index, bytes)| (index.clone(), size_bson(as_i64(*bytes) / scale)))
        .collect();
    let mut document = doc! {
        "size": size_bson(size / scale),
        "count": count_bson(stats.count),
        "avgObjSize": size_bson(if count > 0 { size / count } else { 0 }),
        "storageSize": size_bson(storage / scale),
        "freeStorageSize": 0,
        "capped": capped.is_some(),
        "nindexes": as_i64(stats.index_count),
        "indexBuilds": [],
        "totalIndexSize": size_bson(index_total / scale),
        "totalSize": size_bson((storage + index_total) / scale),
        "indexSizes": index_sizes,
        "scaleFactor": scale,
    };
    // A capped collection's limits: `max` (documents; 0 when none was given) and `maxSize`.
    if let Some(limits) = capped {
        let max = limits.max_documents.map_or(0, as_i64);
        document.insert("max", size_bson(max));
        document.insert("maxSize", size_bson(as_i64(limits.max_bytes) / scale));
    }
    document
}

/// The one document a leading `{$collStats: spec}` stage produces for collection `name`:
/// `ns`, `host`, `localTime`, and `storageStats` / `count` when asked, from one reading of
/// the collection's figures. `latencyStats` and `queryExecStats` answer 115 (docgate keeps
/// no per-collection latencies); an unknown field answers 40415.
pub async fn coll_stats_stage(
    context: &mut CommandContext<'_>,
    db: &str,
    name: &str,
    spec: &Bson,
) -> Result<Document, OpError> {
    let Bson::Document(spec) = spec else {
        return Err(OpError::TypeMismatch(
            "$collStats must take a nested object but found a non-object".into(),
        ));
    };
    let mut fields = Arguments::new("$collStats", spec);
    if let Some(refused) = ["latencyStats", "queryExecStats"]
        .into_iter()
        .find(|field| fields.has(field))
    {
        return Err(OpError::NotSupported(format!(
            "$collStats {refused} is not supported by docgate"
        )));
    }
    let storage_options = match fields.document("storageStats")? {
        Some(options) => {
            let mut options = Arguments::new("$collStats.storageStats", options);
            let scale = scale_of(&mut options)?;
            let numeric_only = options.bool("numericOnly")?.unwrap_or(false);
            // No storage-engine detail to add, no lock to wait for.
            options.without_effect("verbose");
            options.without_effect("waitForLock");
            options.finish()?;
            Some((scale, numeric_only))
        }
        None => None,
    };
    let count = fields.document("count")?.is_some();
    fields.finish()?;

    let mut out = doc! {
        "ns": format!("{db}.{name}"),
        "host": super::diagnostics::hostname(),
        "localTime": bson::DateTime::now(),
    };
    if storage_options.is_none() && !count {
        return Ok(out);
    }
    let stats = collection_figures(context, db, name).await?;
    if let Some((scale, numeric_only)) = storage_options {
        let Some((stats, capped)) = &stats else {
            return Err(not_found(db, name));
        };
        let figures: Document = storage_document(stats, capped.as_ref(), scale)
            .into_iter()
            .filter(|(_, v)| {
                !numeric_only || matches!(v, Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_))
            })
            .collect();
        out.insert("storageStats", figures);
    }
    if count {
        out.insert("count", count_bson(stats.map_or(0, |(s, _)| s.count)));
    }
    Ok(out)
}

/// `dbStats`.
pub async fn db_stats(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let mut arguments = request.arguments();
    let scale = scale_of(&mut arguments)?;
    // docgate reports no free storage (`freeStorageSize` is 0) whether asked or not.
    arguments.without_effect("freeStorage");
    arguments.finish()?;
    check_db_name(&request.db)?;
    let snapshot = context.catalog().fresh_snapshot().await?;
    let mut session = context.open_session().await?;
    let (mut collections, mut objects, mut data, mut storage, mut indexes, mut index_size) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let mut views = 0u64;
    for record in snapshot.collections_in(&request.db) {
        if crate::ops::views::is_view(record) {
            views += 1;
            continue;
        }
        let stats = session
            .collection_stats(record)
            .await?
            .merged_by_index_name();
        collections += 1;
        objects += stats.count;
        data += stats.data_size;
        storage += stats.storage_size;
        indexes += stats.index_count;
        index_size += stats.total_index_size();
    }
    Ok(doc! {
        "db": &request.db,
        "collections": count_bson(collections),
        "views": count_bson(views),
        "objects": count_bson(objects),
        "avgObjSize": if objects > 0 { data as f64 / objects as f64 } else { 0.0 },
        "dataSize": (as_i64(data) / scale) as f64,
        "storageSize": (as_i64(storage) / scale) as f64,
        "indexes": count_bson(indexes),
        "indexSize": (as_i64(index_size) / scale) as f64,
        "totalSize": (as_i64(storage + index_size) / scale) as f64,
        "scaleFactor": scale,
        "fsUsedSize": 0.0,
        "fsTotalSize": 0.0,
    })
}

/// `validate`: decodes every document and checks it against its `_id` key.
pub async fn validate(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let mut arguments = request.arguments();
    if arguments.bool("repair")?.unwrap_or(false) {
        return Err(OpError::NotSupported(
            "validate with repair is not supported by docgate".into(),
        ));
    }
    // docgate always runs the full check (every document decoded and found by its `_id`
    // key), which is what `full`, `metadata` and `checkBSONConformance` ask for or less,
    // and in the foreground, which `background` permits.
    for no_effect in ["full", "metadata", "checkBSONConformance", "background"] {
        arguments.without_effect(no_effect);
    }
    arguments.finish()?;
    let name = request.collection()?;
    let namespace = format!("{}.{name}", request.db);
    let Some(record) = context.catalog().collection(&request.db, name).await? else {
        return Err(OpError::NamespaceNotFound(format!(
            "Collection '{namespace}' does not exist to validate."
        )));
    };
    crate::ops::views::check_not_view(&record)?;
    let mut session = context.open_session().await?;
    let rows = session.scan(&record, &ScanRequest::all()).await?;
    let counted = session.count(&record, &Predicate::True).await?;
    let mut errors: Vec<Bson> = Vec::new();
    let mut invalid = 0i64;
    for row in &rows {
        let problem = match decode_document(row) {
            Err(error) => Some(error.to_string()),
            Ok(document) => match document.get("_id") {
                None => Some("document without _id".to_string()),
                Some(id) => {
                    let lookup = ScanRequest {
                        filter: Predicate::KeyEquals(crate::query::encode_key(id)),
                        ..ScanRequest::all()
                    };
                    match session.scan(&record, &lookup).await {
                        Ok(found) if found.len() == 1 => None,
                        Ok(found) => Some(format!(
                            "_id {id} is found {} times through the _id index",
                            found.len()
                        )),
                        Err(error) => Some(error.to_string()),
                    }
                }
            },
        };
        if let Some(problem) = problem {
            invalid += 1;
            if errors.len() < 100 {
                errors.push(Bson::String(problem));
            }
        }
    }
    if counted != rows.len() as u64 {
        errors.push(Bson::String(format!(
            "count {counted} differs from the {} records scanned",
            rows.len()
        )));
    }
    let records = rows.len() as i64;
    Ok(doc! {
        "ns": namespace,
        "nInvalidDocuments": invalid,
        "nNonCompliantDocuments": 0,
        "nrecords": records,
        "nIndexes": 1,
        "keysPerIndex": {"_id_": records},
        "indexDetails": {"_id_": {"valid": errors.is_empty()}},
        "valid": errors.is_empty(),
        "repaired": false,
        "warnings": [],
        "errors": errors,
        "extraIndexEntries": [],
        "missingIndexEntries": [],
        "corruptRecords": [],
        "advice": "",
    })
}

/// The documents of a leading `$indexStats: {}` over `db.name`: one per index (`_id_` first),
/// with its name, key, this server's `host`, `accesses` (operations whose plan read it, and
/// since when: the server's start or the index's build) and its `spec` as `listIndexes`
/// shows it. None for a missing collection; a view is refused (166) as in MongoDB.
pub async fn index_stats_stage(
    context: &mut CommandContext<'_>,
    db: &str,
    name: &str,
    spec: &Bson,
) -> Result<Vec<Document>, OpError> {
    if !matches!(spec, Bson::Document(spec) if spec.is_empty()) {
        return Err(OpError::Query(crate::query::QueryError::location(
            28803,
            "The $indexStats stage specification must be an empty object",
        )));
    }
    let Some(info) = context.collection_info(db, name).await? else {
        return Ok(Vec::new());
    };
    crate::ops::views::check_not_view(&info.record)?;
    let started = bson::DateTime::from_system_time(context.server.state.started_at);
    let mut specs = vec![crate::ops::indexes::id_index_spec_of(&info.record)];
    specs.extend(info.indexes.iter().map(|index| index.spec.document.clone()));
    Ok(specs
        .into_iter()
        .map(|spec| {
            let index = spec.get_str("name").unwrap_or_default().to_string();
            let accesses = crate::ops::index_usage::accesses(&info, &index);
            let since = accesses
                .since
                .map(bson::DateTime::from_system_time)
                .unwrap_or(started);
            doc! {
                "name": &index,
                "key": spec.get("key").cloned().unwrap_or(Bson::Document(Document::new())),
                "host": context.server.advertise.clone(),
                "accesses": {
                    "ops": i64::try_from(accesses.ops).unwrap_or(i64::MAX),
                    "since": since,
                },
                "spec": spec,
            }
        })
        .collect())
}

/// The documents of a leading `$planCacheStats`: none. docgate keeps no plan cache (every
/// read is planned afresh from the catalog), so the cache MongoDB would list is empty, as a
/// MongoDB collection's is before its first query. `allShards: true` is a mongos option
/// (refused with 72).
pub fn plan_cache_stats_stage(spec: &Bson) -> Result<Vec<Document>, OpError> {
    let Bson::Document(spec) = spec else {
        return Err(OpError::FailedToParse(
            "$planCacheStats value must be an object. Found: non-object".into(),
        ));
    };
    let mut fields = Arguments::new("$planCacheStats", spec);
    // `allShards: true` gathers the caches of a sharded cluster (mongos only); false asks
    // nothing of a single server.
    if fields.bool("allShards")? == Some(true) {
        return Err(OpError::InvalidOptions(
            "$planCacheStats allShards: true is only valid on mongos".into(),
        ));
    }
    fields.finish()?;
    Ok(Vec::new())
}
