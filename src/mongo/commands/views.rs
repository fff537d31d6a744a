//! Reads of a view over the wire, the way MongoDB runs them: a `find` becomes an `aggregate`
//! (its filter a `$match`, then `$sort`, `$skip`, `$limit`, `$project`; the options an
//! aggregation has no place for are 168 InvalidPipelineOperator), which runs the view's
//! pipeline and then those stages over the collection the view reads; `count` runs the
//! view's pipeline and its `$count` the same way, and `distinct` the view's pipeline into
//! its values, both streamed. Also the parsing of a view's definition from `create`.
//!
//! Not for: resolving views or checking definitions (`ops::views`), the pipeline itself.

use bson::{doc, Bson, Document};

use super::write_reply::count_bson;
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::{as_bool, as_i64, CommandRequest};
use crate::ops;
use crate::ops::cursors::next_batch_limit;
use crate::ops::distinct::DistinctValues;
use crate::ops::pipeline_output::{PipelineOutput, PipelineRead};
use crate::ops::read_cursor::BatchLimit;
use crate::ops::views::{is_view, ResolvedView, ViewDefinition};
use crate::query::{Collation, Filter};
use crate::store::CollectionRecord;

/// The view `db.name` and what it resolves to, if `db.name` is a view.
pub(super) async fn view_of(
    context: &mut CommandContext<'_>,
    db: &str,
    name: &str,
) -> Result<Option<(CollectionRecord, ResolvedView)>, OpError> {
    let Some(info) = context.collection_info(db, name).await? else {
        return Ok(None);
    };
    if !is_view(&info.record) {
        return Ok(None);
    }
    let catalog = &context.server.state.catalog;
    let mut scope = context.scope();
    let mut session = scope.reader().await?;
    let resolved = ops::views::resolve(catalog, session.as_mut(), &info.record).await?;
    Ok(Some((info.record.clone(), resolved)))
}

/// MongoDB's 168 for a find option an aggregation cannot express.
fn not_in_aggregation(message: String) -> OpError {
    OpError::Query(crate::query::QueryError::coded(
        168,
        "InvalidPipelineOperator",
        message,
    ))
}

/// Whether a find option is set (a flag that is true, or a non-empty document).
fn is_set(value: &Bson) -> bool {
    match value {
        Bson::Document(document) => !document.is_empty(),
        Bson::Null => false,
        other => as_bool(other).unwrap_or(true),
    }
}

/// The `aggregate` a `find` on a view runs (MongoDB's `asAggregateCommandRequest`).
pub(super) fn find_as_aggregate(request: &CommandRequest) -> Result<CommandRequest, OpError> {
    let body = &request.body;
    for (option, message) in [
        ("min", "Option min not supported in aggregation."),
        ("max", "Option max not supported in aggregation."),
        (
            "returnKey",
            "Option returnKey not supported in aggregation.",
        ),
        (
            "showRecordId",
            "Option showRecordId not supported in aggregation.",
        ),
        (
            "tailable",
            "Tailable cursors are not supported in aggregation.",
        ),
        (
            "awaitData",
            "Tailable cursors are not supported in aggregation.",
        ),
        (
            "noCursorTimeout",
            "Option noCursorTimeout not supported in aggregation.",
        ),
        (
            "allowPartialResults",
            "Option allowPartialResults not supported in aggregation.",
        ),
        ("readOnce", "Option readOnce not supported in aggregation."),
        (
            "oplogReplay",
            "Option oplogReplay not supported in aggregation.",
        ),
    ] {
        if body.get(option).is_some_and(is_set) {
            return Err(not_in_aggregation(message.into()));
        }
    }
    let mut limit = match body.get("limit") {
        None | Some(Bson::Null) => None,
        Some(value) => Some(as_i64(value).ok_or_else(|| {
            OpError::TypeMismatch(
                "BSON field 'find.limit' is the wrong type, expected a number".into(),
            )
        })?),
    };
    let mut single_batch = body.get("singleBatch").is_some_and(is_set);
    if let Some(negative) = limit.filter(|n| *n < 0) {
        // The legacy negative limit: |n| documents in a single batch.
        single_batch = true;
        limit = Some(negative.saturating_neg());
    }
    let limit = limit.filter(|n| *n != 0);
    if single_batch && limit != Some(1) {
        return Err(not_in_aggregation(
            "Option singleBatch not supported in aggregation.".into(),
        ));
    }
    let non_empty = |field: &str| match body.get(field) {
        Some(Bson::Document(document)) if !document.is_empty() => Some(document.clone()),
        _ => None,
    };
    let mut pipeline: Vec<Bson> = Vec::new();
    if let Some(filter) = non_empty("filter") {
        pipeline.push(Bson::Document(doc! {"$match": filter}));
    }
    if let Some(sort) = non_empty("sort") {
        if sort.contains_key("$natural") {
            return Err(not_in_aggregation(
                "Sort option $natural not supported in aggregation.".into(),
            ));
        }
        pipeline.push(Bson::Document(doc! {"$sort": sort}));
    }
    if let Some(skip) = body.get("skip").filter(|skip| !matches!(skip, Bson::Null)) {
        pipeline.push(Bson::Document(doc! {"$skip": skip.clone()}));
    }
    if let Some(limit) = limit {
        pipeline.push(Bson::Document(doc! {"$limit": limit}));
    }
    if let Some(projection) = non_empty("projection") {
        pipeline.push(Bson::Document(doc! {"$project": projection}));
    }
    let mut cursor = Document::new();
    if let Some(batch_size) = body.get("batchSize") {
        cursor.insert("batchSize", batch_size.clone());
    }
    let mut aggregate = doc! {
        "aggregate": request.target().clone(),
        "pipeline": pipeline,
        "cursor": cursor,
    };
    const HANDLED: [&str; 15] = [
        "find",
        "filter",
        "sort",
        "skip",
        "limit",
        "projection",
        "batchSize",
        "singleBatch",
        "min",
        "max",
        "returnKey",
        "showRecordId",
        "tailable",
        "awaitData",
        "noCursorTimeout",
    ];
    const SKIPPED_WHEN_UNSET: [&str; 3] = ["allowPartialResults", "readOnce", "oplogReplay"];
    // What the aggregate takes as the find gave it (the generic arguments among them).
    const CARRIED: [&str; 4] = ["hint", "collation", "let", "allowDiskUse"];
    for (field, value) in body {
        if HANDLED.contains(&field.as_str()) || SKIPPED_WHEN_UNSET.contains(&field.as_str()) {
            continue;
        }
        if CARRIED.contains(&field.as_str())
            || crate::mongo::arguments::GENERIC_ARGUMENTS.contains(&field.as_str())
        {
            aggregate.insert(field.clone(), value.clone());
        } else {
            return Err(OpError::UnknownField(format!("find.{field}")));
        }
    }
    Ok(CommandRequest {
        name: "aggregate".into(),
        db: request.db.clone(),
        body: aggregate,
    })
}

/// The read `request` (find, aggregate, count or distinct on a view) as the aggregate over
/// the collection the view reads, for `explain`: the view's pipeline first, then the read's
/// stages, under the view's collation. A write on a view is 166.
pub(super) fn explained_on_base(
    request: &CommandRequest,
    resolved: &ResolvedView,
) -> Result<CommandRequest, OpError> {
    let body = &request.body;
    let (mut aggregate, stages) = match request.name.as_str() {
        "find" => {
            let mut converted = find_as_aggregate(request)?.body;
            let stages = converted
                .remove("pipeline")
                .and_then(|p| match p {
                    Bson::Array(stages) => Some(stages),
                    _ => None,
                })
                .unwrap_or_default();
            (converted, stages)
        }
        "aggregate" => {
            let mut body = body.clone();
            let stages = match body.remove("pipeline") {
                Some(Bson::Array(stages)) => stages,
                _ => Vec::new(),
            };
            (body, stages)
        }
        "count" | "distinct" => {
            let query = body.get_document("query").ok();
            let stages: Vec<Document> = if request.name == "count" {
                let mut arguments = request.arguments();
                let skip = arguments.count("skip")?.unwrap_or(0);
                let limit = arguments.i64("limit")?.map(i64::unsigned_abs);
                count_stages(query, skip, limit.filter(|l| *l > 0))
            } else {
                query
                    .filter(|q| !q.is_empty())
                    .map(|query| doc! {"$match": query.clone()})
                    .into_iter()
                    .collect()
            };
            let stages: Vec<Bson> = stages.into_iter().map(Bson::Document).collect();
            let mut converted = doc! {"aggregate": request.target().clone(), "cursor": {}};
            for carried in ["hint", "collation"] {
                if let Some(value) = body.get(carried) {
                    converted.insert(carried, value.clone());
                }
            }
            (converted, stages)
        }
        _ => {
            let name = request.collection()?;
            return Err(ops::views::not_a_collection(&request.db, name));
        }
    };
    let requested = match aggregate.get_document("collation") {
        Ok(spec) => Some(Collation::parse(spec)?),
        Err(_) => None,
    };
    let collation = resolved.collation_for(requested.as_ref())?;
    let mut pipeline: Vec<Bson> = resolved
        .pipeline
        .iter()
        .cloned()
        .map(Bson::Document)
        .collect();
    pipeline.extend(stages);
    aggregate.insert("aggregate", resolved.base.clone());
    aggregate.insert("pipeline", pipeline);
    match collation.to_document() {
        Some(spec) => aggregate.insert("collation", spec),
        None => aggregate.insert("collation", doc! {"locale": "simple"}),
    };
    Ok(CommandRequest {
        name: "aggregate".into(),
        db: request.db.clone(),
        body: aggregate,
    })
}

/// `count` on a view: its documents through `$match`, `$skip`, `$limit` and counted.
pub(super) async fn count(
    context: &mut CommandContext<'_>,
    record: &CollectionRecord,
    query: Option<&Document>,
    skip: u64,
    limit: Option<u64>,
    hint: Option<&Bson>,
    collation: Option<&Collation>,
) -> CommandResult {
    let stages = count_stages(query, skip, limit);
    let counted = counted_through_base(context, record, stages, hint, collation).await?;
    let n = counted
        .as_ref()
        .and_then(|document| document.get("n"))
        .and_then(as_i64)
        .unwrap_or(0);
    Ok(doc! {"n": count_bson(u64::try_from(n).unwrap_or(0))})
}

/// The stages a `count` of a view runs after the view's own: its query, skip and limit,
/// then `$count`.
fn count_stages(query: Option<&Document>, skip: u64, limit: Option<u64>) -> Vec<Document> {
    let mut stages = Vec::new();
    if let Some(query) = query.filter(|q| !q.is_empty()) {
        stages.push(doc! {"$match": query.clone()});
    }
    if skip > 0 {
        stages.push(doc! {"$skip": i64::try_from(skip).unwrap_or(i64::MAX)});
    }
    if let Some(limit) = limit {
        stages.push(doc! {"$limit": i64::try_from(limit).unwrap_or(i64::MAX)});
    }
    stages.push(doc! {"$count": "n"});
    stages
}

/// The one document the view's pipeline and `stages` (which end with a `$count`) make,
/// streamed into the count, never holding the view's documents. None when there is nothing
/// to count.
async fn counted_through_base(
    context: &mut CommandContext<'_>,
    record: &CollectionRecord,
    stages: Vec<Document>,
    hint: Option<&Bson>,
    collation: Option<&Collation>,
) -> Result<Option<Document>, OpError> {
    let first = BatchLimit {
        documents: 1,
        bytes: usize::MAX,
    };
    let (made, _) = through_base(context, record, stages, (hint, collation), first).await?;
    Ok(match made {
        PipelineOutput::Held(documents) => documents.into_iter().next(),
        PipelineOutput::Streamed(batch, _) => match batch.first() {
            Some(raw) => Some(ops::read::decode_document(raw.as_bytes())?),
            None => None,
        },
    })
}

/// The view `record`'s pipeline and `stages` after it, with the read's hint and collation,
/// as an aggregate on the collection the view reads (`ops::pipeline_output`), its blocking
/// stages under the limit an `aggregate`'s have (with disk use: `count` and `distinct` have
/// no `allowDiskUse`); and the collation it ran under.
async fn through_base(
    context: &mut CommandContext<'_>,
    record: &CollectionRecord,
    stages: Vec<Document>,
    (hint, collation): (Option<&Bson>, Option<&Collation>),
    first: BatchLimit,
) -> Result<(PipelineOutput, Collation), OpError> {
    let memory = context.server.limits.blocking_memory(None);
    crate::compute::current_interrupt().limit_blocking_memory(memory);
    let read = PipelineRead {
        db: &record.db,
        name: &record.name,
        stages,
        hint,
        collation,
    };
    let catalog = &context.server.state.catalog;
    ops::pipeline_output::run(catalog, &mut context.scope(), read, first).await
}

/// `distinct` on a view: the values at `key` over its documents that match `query`, which
/// stream into the values.
pub(super) async fn distinct(
    context: &mut CommandContext<'_>,
    record: &CollectionRecord,
    key: &str,
    query: Option<&Document>,
    hint: Option<&Bson>,
    collation: Option<&Collation>,
) -> CommandResult {
    // The query is checked like any distinct's before it becomes a stage.
    Filter::parse(query.unwrap_or(&Document::new()))?;
    let stages: Vec<Document> = query
        .filter(|q| !q.is_empty())
        .map(|query| doc! {"$match": query.clone()})
        .into_iter()
        .collect();
    let first = next_batch_limit(None);
    let read = (hint, collation);
    let (made, collation) = through_base(context, record, stages, read, first).await?;
    let values = DistinctValues::new(key, collation);
    let values = match made {
        PipelineOutput::Held(documents) => values.of_documents(documents)?,
        PipelineOutput::Streamed(first, rest) => {
            values.of_stream(&mut context.scope(), first, rest).await?
        }
    };
    Ok(doc! {"values": values})
}

/// A view's definition from `create`'s `viewOn`, `pipeline` and `collation` (with MongoDB's
/// errors for their types), or None when `create` makes a collection.
pub(super) fn view_definition(
    view_on: Option<&Bson>,
    pipeline: Option<&Bson>,
    collation: Option<&Collation>,
) -> Result<Option<ViewDefinition>, OpError> {
    let view_on = match view_on {
        None => {
            if pipeline.is_some() {
                return Err(OpError::InvalidOptions(
                    "'pipeline' requires 'viewOn' to also be specified".into(),
                ));
            }
            return Ok(None);
        }
        Some(Bson::String(view_on)) => view_on.clone(),
        Some(_) => {
            return Err(OpError::TypeMismatch(
                "'viewOn' option must be a string".into(),
            ))
        }
    };
    let pipeline = match pipeline {
        None => Vec::new(),
        Some(Bson::Array(stages)) => stages
            .iter()
            .map(|stage| match stage {
                Bson::Document(stage) => Ok(stage.clone()),
                _ => Err(OpError::TypeMismatch(
                    "'pipeline' option must be an array of objects".into(),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(OpError::TypeMismatch(
                "'pipeline' option must be an array".into(),
            ))
        }
    };
    Ok(Some(ViewDefinition {
        view_on,
        pipeline,
        collation: collation.and_then(Collation::to_document),
    }))
}
