//! Databases and collections: `listDatabases`, `listCollections`, `listIndexes`, `create`,
//! `drop`, `dropDatabase`, `renameCollection`. The changes themselves run in the core
//! (`ops::collections`: one transaction, the catalog invalidated after it commits).
//!
//! Not for: documents.

use bson::{doc, Binary, Bson, Document};

use super::cursor_reply::{cursor_batch_size, encode_documents, first_batch_reply};
use crate::catalog::CollectionInfo;
use crate::mongo::arguments::Arguments;
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError, ReplyResult};
use crate::mongo::request::CommandRequest;
use crate::ops;
use crate::ops::cursors::BatchOptions;
use crate::ops::namespace::{check_collection_name, check_db_name, split_namespace};
use crate::ops::views::is_view;
use crate::query::Filter;
use crate::store::CollectionRecord;

/// `listDatabases` with `nameOnly` and `filter`.
pub async fn list_databases(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let mut arguments = request.arguments();
    let name_only = arguments.bool("nameOnly")?.unwrap_or(false);
    let filter = Filter::parse(arguments.document("filter")?.unwrap_or(&Document::new()))?;
    // A user is only ever shown the databases their roles reach (`visible_databases`),
    // which is what `authorizedDatabases` asks for.
    arguments.without_effect("authorizedDatabases");
    arguments.finish()?;
    let snapshot = context.catalog().fresh_snapshot().await?;
    let visible = super::auth::visible_databases(context);
    let mut session = context.open_session().await?;
    let mut databases = Vec::new();
    let mut total_size: i64 = 0;
    let names = snapshot.database_names().into_iter();
    for db in names.filter(|db| visible.as_ref().is_none_or(|v| v.contains(db))) {
        let entry = if name_only {
            doc! {"name": &db}
        } else {
            let mut size: i64 = 0;
            for collection in snapshot.collections_in(&db).filter(|c| !is_view(c)) {
                let stats = session.collection_stats(collection).await?;
                let on_disk = stats.storage_size.max(stats.data_size) + stats.total_index_size();
                size = size.saturating_add(i64::try_from(on_disk).unwrap_or(i64::MAX));
            }
            doc! {"name": &db, "sizeOnDisk": size, "empty": false}
        };
        if filter.matches(&entry) {
            if let Some(Bson::Int64(size)) = entry.get("sizeOnDisk") {
                total_size += size;
            }
            databases.push(Bson::Document(entry));
        }
    }
    if name_only {
        return Ok(doc! {"databases": databases});
    }
    Ok(
        doc! {"databases": databases, "totalSize": total_size, "totalSizeMb": total_size / (1024 * 1024)},
    )
}

/// The `listCollections` entry of one collection or view (a view has no UUID and no `_id`
/// index, and is read-only).
fn collection_entry(info: &CollectionInfo) -> Document {
    let record = &info.record;
    if is_view(record) {
        return doc! {
            "name": &record.name,
            "type": "view",
            "options": record.options.clone(),
            "info": {"readOnly": true},
        };
    }
    let mut entry = doc! {
        "name": &record.name,
        "type": "collection",
        "options": record.options.clone(),
        "info": {
            "readOnly": false,
            "uuid": Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: record.uuid.clone() },
        },
    };
    if !record.options.contains_key("clusteredIndex") {
        // With its collation on a collection created with one.
        entry.insert("idIndex", crate::ops::indexes::id_index_document(info));
    }
    entry
}

/// `listCollections` with `filter`, `nameOnly` and `cursor.batchSize`.
pub async fn list_collections(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> ReplyResult {
    let mut arguments = request.arguments();
    let name_only = arguments.bool("nameOnly")?.unwrap_or(false);
    let filter = Filter::parse(arguments.document("filter")?.unwrap_or(&Document::new()))?;
    let batch_size = cursor_batch_size(arguments.document("cursor")?)?;
    // Honoured by doing nothing: a user who may run listCollections sees every collection
    // of the database, and docgate drops collections at once (no drop is ever pending).
    arguments.without_effect("authorizedCollections");
    arguments.without_effect("includePendingDrops");
    arguments.finish()?;
    check_db_name(&request.db)?;
    let snapshot = context.catalog().fresh_snapshot().await?;
    let entries: Vec<Document> = snapshot
        .collections_in(&request.db)
        .filter_map(|record| snapshot.info(&record.db, &record.name))
        .map(|info| collection_entry(info))
        .filter(|entry| filter.matches(entry))
        .map(|entry| if name_only { doc! {"name": entry.get("name").cloned().unwrap_or(Bson::Null), "type": entry.get("type").cloned().unwrap_or(Bson::Null)} } else { entry })
        .collect();
    let namespace = format!("{}.$cmd.listCollections", request.db);
    first_batch_reply(
        context,
        request,
        &namespace,
        encode_documents(&entries)?,
        BatchOptions {
            batch_size,
            ..BatchOptions::default()
        },
    )
}

/// Options of `create` that docgate does not implement yet; refused rather than ignored.
const UNSUPPORTED_CREATE_OPTIONS: &[&str] = &[
    "timeseries",
    "expireAfterSeconds",
    "changeStreamPreAndPostImages",
    "encryptedFields",
];

/// `create`'s `clusteredIndex: {key: {_id: 1}, unique: true, name?, v?}`, as MongoDB keeps it
/// (`{v: 2, key, name, unique}`, the name `_id_` by default). Every docgate collection is
/// already stored in `_id` order, so clustering by `_id` is what it does anyway; any other
/// key is refused.
fn clustered_index(value: &Bson) -> Result<Document, OpError> {
    let Bson::Document(spec) = value else {
        return Err(OpError::TypeMismatch(
            "'clusteredIndex' must be an object: {key: {_id: 1}, unique: true}".into(),
        ));
    };
    let mut fields = Arguments::new("create.clusteredIndex", spec);
    let key = fields.document("key")?;
    let unique = fields.bool("unique")?;
    let name = fields.str("name")?.unwrap_or("_id_").to_owned();
    let version = fields.i64("v")?.unwrap_or(2);
    fields.finish()?;
    let Some(key) = key else {
        return Err(OpError::missing_field("key"));
    };
    let by_id = key.len() == 1
        && match key.get("_id") {
            Some(Bson::Int32(1) | Bson::Int64(1)) => true,
            Some(Bson::Double(order)) => *order == 1.0,
            _ => false,
        };
    if !by_id {
        return Err(OpError::InvalidOptions(
            "the clusteredIndex key must be {_id: 1}: docgate clusters collections by _id only"
                .into(),
        ));
    }
    match unique {
        None => return Err(OpError::missing_field("unique")),
        Some(false) => {
            return Err(OpError::InvalidOptions(
                "the clusteredIndex must be unique (unique: true)".into(),
            ))
        }
        Some(true) => {}
    }
    if version != 2 {
        return Err(OpError::InvalidOptions(format!(
            "unsupported clusteredIndex version {version}: only 2"
        )));
    }
    Ok(doc! {"v": 2, "key": {"_id": 1}, "name": name, "unique": true})
}

/// `create`: an empty collection.
pub async fn create(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let name = request.collection()?;
    let mut arguments = request.arguments();
    for option in UNSUPPORTED_CREATE_OPTIONS {
        if arguments.value(option).is_some() {
            return Err(OpError::NotSupported(format!(
                "create option '{option}' is not supported by docgate"
            )));
        }
    }
    let capped = ops::capped::create_options(
        arguments.value("capped"),
        arguments.value("size"),
        arguments.value("max"),
    )?;
    if capped.is_some() && !context.server.state.store.supports_capped() {
        return Err(OpError::NotSupported(format!(
            "capped collections are not supported on the {} backend",
            context.server.state.store.backend_name()
        )));
    }
    // The default collation of the collection, kept as its full specification (what
    // listCollections echoes); a simple one is no default at all.
    let collation = arguments.collation()?;
    let view_on = arguments.value("viewOn");
    let pipeline = arguments.value("pipeline");
    if let Some(view) = super::views::view_definition(view_on, pipeline, collation.as_ref())? {
        return create_view(context, request, arguments, name, view).await;
    }
    // Kept in the collection's options, as MongoDB keeps them.
    const KEPT_OPTIONS: [&str; 3] = ["storageEngine", "indexOptionDefaults", "collation"];
    for kept in KEPT_OPTIONS {
        arguments.value(kept);
    }
    let clustered_index = arguments
        .value("clusteredIndex")
        .map(clustered_index)
        .transpose()?;
    if clustered_index.is_some() && arguments.value("capped").is_some() {
        return Err(OpError::InvalidOptions(
            "a clustered collection cannot be capped".into(),
        ));
    }
    // Document validation: checked here, compiled by the catalog, applied by every write.
    let validator = arguments.document("validator")?;
    let validation = ops::validation::validation_options(
        "create",
        &request.db,
        name,
        validator,
        arguments.value("validationLevel"),
        arguments.value("validationAction"),
    )?;
    match arguments.document("idIndex")? {
        Some(spec) if spec.get_document("key").ok() != Some(&doc! {"_id": 1}) => {
            return Err(OpError::NotSupported(
                "an idIndex other than {_id: 1} is not supported by docgate".into(),
            ));
        }
        _ => {}
    }
    if arguments.bool("autoIndexId")? == Some(false) {
        return Err(OpError::NotSupported(
            "collections without an _id index (autoIndexId: false) are not supported".into(),
        ));
    }
    // Legacy MMAPv1 storage flags: no meaning on any storage engine since MongoDB 4.2.
    arguments.without_effect("flags");
    arguments.finish()?;
    check_collection_name(&request.db, name)?;
    // `{capped: true, size, max}` first, as MongoDB lists them.
    let mut options = capped.unwrap_or_default();
    for (key, value) in request.body.iter().skip(1) {
        if key == "collation" {
            if let Some(full) = collation.as_ref().and_then(|c| c.to_document()) {
                options.insert(key.clone(), full);
            }
        } else if KEPT_OPTIONS.contains(&key.as_str()) {
            options.insert(key.clone(), value.clone());
        }
    }
    options.extend(validation);
    if let Some(clustered) = clustered_index {
        options.insert("clusteredIndex", clustered);
    }
    if ops::collections::create_collection(&context.server.state, &request.db, name, &options)
        .await?
    {
        return Ok(Document::new());
    }
    // MongoDB 7.0: creating an existing collection with the same options succeeds.
    let existing = context.catalog().collection(&request.db, name).await?;
    if existing.is_some_and(|record| record.options == options) {
        return Ok(Document::new());
    }
    Err(OpError::NamespaceExists(format!(
        "Collection {}.{name} already exists with different options.",
        request.db
    )))
}

/// `create` with `viewOn`: a view, which takes no option but its definition (MongoDB's 167
/// for the others); creating it again with the same definition succeeds, as in MongoDB 7.0.
async fn create_view(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
    arguments: crate::mongo::arguments::Arguments<'_>,
    name: &str,
    view: ops::views::ViewDefinition,
) -> CommandResult {
    for option in request.body.keys().skip(1) {
        let allowed = ["viewOn", "pipeline", "collation"].contains(&option.as_str())
            || crate::mongo::arguments::GENERIC_ARGUMENTS.contains(&option.as_str());
        if !allowed {
            return Err(OpError::Query(crate::query::QueryError::coded(
                167,
                "OptionNotSupportedOnView",
                format!("option not supported on a view: {option}"),
            )));
        }
    }
    arguments.finish()?;
    let state = &context.server.state;
    if ops::views::create_view(state, &request.db, name, &view).await? {
        return Ok(Document::new());
    }
    let existing = context.catalog().collection(&request.db, name).await?;
    if existing.is_some_and(|record| record.options == view.options()) {
        return Ok(Document::new());
    }
    Err(OpError::NamespaceExists(format!(
        "Namespace already exists: {}.{name}",
        request.db
    )))
}

/// `drop`: removes a collection and its data. Dropping a missing collection succeeds, as in
/// MongoDB 7.0.
pub async fn drop(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    request.arguments().finish()?;
    let name = request.collection()?;
    let namespace = format!("{}.{name}", request.db);
    let Some(record) = context.catalog().collection(&request.db, name).await? else {
        return Ok(doc! {"ns": namespace});
    };
    let was_view = is_view(&record);
    let indexes_were = context
        .collection_info(&request.db, name)
        .await?
        .map_or(1, |info| info.index_count());
    ops::collections::drop_collections(&context.server.state, &[record]).await?;
    if was_view {
        return Ok(doc! {"ns": namespace});
    }
    Ok(doc! {"ns": namespace, "nIndexesWas": i32::try_from(indexes_were).unwrap_or(i32::MAX)})
}

/// `dropDatabase`: every collection of the database, in one transaction.
pub async fn drop_database(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    request.arguments().finish()?;
    check_db_name(&request.db)?;
    let snapshot = context.catalog().fresh_snapshot().await?;
    let records: Vec<CollectionRecord> = snapshot.collections_in(&request.db).cloned().collect();
    ops::collections::drop_collections(&context.server.state, &records).await?;
    Ok(doc! {"dropped": &request.db})
}

/// `renameCollection` (run against `admin`): `{renameCollection: "db.a", to: "db.b", dropTarget}`.
pub async fn rename_collection(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let mut arguments = request.arguments();
    let target = arguments
        .str("to")?
        .ok_or_else(|| OpError::FailedToParse("renameCollection requires 'to'".into()))?;
    let drop_target = arguments.bool("dropTarget")?.unwrap_or(false);
    // docgate has no temporary collections, so there is no temp flag to keep.
    arguments.without_effect("stayTemp");
    arguments.finish()?;
    if request.db != "admin" {
        return Err(OpError::Unauthorized(
            "renameCollection may only be run against the admin database.".into(),
        ));
    }
    let Bson::String(source) = request.target() else {
        return Err(OpError::TypeMismatch(
            "renameCollection must be a namespace string".into(),
        ));
    };
    let (source_db, source_name) = split_namespace(source)?;
    let (target_db, target_name) = split_namespace(target)?;
    check_collection_name(target_db, target_name)?;
    if source == target {
        return Err(OpError::IllegalOperation(
            "Can't rename a collection to itself".into(),
        ));
    }
    let snapshot = context.catalog().fresh_snapshot().await?;
    let Some(record) = snapshot.collection(source_db, source_name).cloned() else {
        return Err(OpError::NamespaceNotFound(format!(
            "Source collection {source} does not exist"
        )));
    };
    if is_view(&record) {
        return Err(OpError::Query(crate::query::QueryError::coded(
            166,
            "CommandNotSupportedOnView",
            format!("cannot rename view: {source}"),
        )));
    }
    let existing_target = snapshot.collection(target_db, target_name).cloned();
    if existing_target.as_ref().is_some_and(is_view) {
        return Err(OpError::NamespaceExists(format!(
            "a view already exists with that name: {target}"
        )));
    }
    if existing_target.is_some() && !drop_target {
        return Err(OpError::NamespaceExists("target namespace exists".into()));
    }
    ops::collections::rename_collection(
        &context.server.state,
        &record,
        existing_target.as_ref(),
        target_db,
        target_name,
    )
    .await?;
    Ok(Document::new())
}
