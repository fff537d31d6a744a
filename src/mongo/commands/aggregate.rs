//! `aggregate` over a collection: the leading `$match` is planned like a `find` (pushed into
//! SQL where possible), the collections `$lookup`/`$unionWith` name are read from the same
//! database, the pipeline runs in the query core, the result is returned through a cursor.
//! A pipeline ending in `$out`/`$merge` has its result written by the core and answers an
//! empty cursor. A leading `$collStats`, `$indexStats` or `$planCacheStats` starts from the
//! collection's figures instead of its documents. Collection-less aggregation
//! (`aggregate: 1`) starts from `$documents`, `$listLocalSessions` or `$currentOp`.
//!
//! Not for: the stages themselves (see `query::aggregate`).

use bson::{Bson, Document};

use super::cursor_reply::{cursor_batch_size, cursor_reply, encode_documents, first_batch_reply};
use crate::mongo::context::CommandContext;
use crate::mongo::error::{OpError, ReplyResult};
use crate::mongo::request::CommandRequest;
use crate::ops::aggregate::{collectionless_input, read_foreign};
use crate::ops::aggregate_writes::write_output;
use crate::ops::cursors::BatchOptions;
use crate::ops::output_documents::OutputDocuments;
use crate::ops::pipeline_output::{self, CollectionRead, PipelineOutput};
use crate::ops::validation::DocumentValidation;
use crate::query::{parse_with_variables, Pipeline, Stage};
use crate::state::ServerCounters;

/// The stages that start from the collection's figures rather than its documents; only
/// valid first.
const LEADING_STAGES: &[&str] = &["$collStats", "$indexStats", "$planCacheStats"];

/// `aggregate`.
pub async fn aggregate(context: &mut CommandContext<'_>, request: &CommandRequest) -> ReplyResult {
    let mut arguments = request.arguments();
    let explain = arguments.bool("explain")?.unwrap_or(false);
    let cursor = arguments.document("cursor")?;
    let pipeline = arguments.array("pipeline")?;
    let collation = arguments.collation()?;
    let variables = arguments.variables("let")?;
    let hint = arguments.value("hint").filter(|h| !matches!(h, Bson::Null));
    // A blocking stage past its memory limit spills to temporary files; `allowDiskUse:
    // false` makes it answer 292 instead (true is MongoDB's default since 6.0).
    let allow_disk_use = arguments.bool("allowDiskUse")?;
    crate::compute::current_interrupt()
        .limit_blocking_memory(context.server.limits.blocking_memory(allow_disk_use));
    // For `$out`/`$merge`; its privilege is checked before the command runs
    // (`auth::authorize`).
    let validation = DocumentValidation::from_bypass_flag(
        arguments.bool("bypassDocumentValidation")?.unwrap_or(false),
    );
    arguments.finish()?;
    ServerCounters::add(&context.server.state.counters.op_query, 1);
    let name =
        match request.target() {
            Bson::String(name) => Some(name.as_str()),
            Bson::Int32(1) | Bson::Int64(1) => None,
            Bson::Double(one) if *one == 1.0 => None,
            _ => return Err(OpError::FailedToParse(
                "Invalid command format: the 'aggregate' field must specify a collection name or 1"
                    .into(),
            )),
        };
    if explain {
        // `aggregate` with `explain: true` answers like `{explain: {aggregate: ...}}`.
        let mut inner = request.body.clone();
        inner.remove("explain");
        inner.remove("$db");
        let mut body = bson::doc! {"explain": inner, "verbosity": "queryPlanner"};
        body.insert("$db", request.db.clone());
        let explained = CommandRequest {
            name: "explain".into(),
            db: request.db.clone(),
            body,
        };
        return super::explain::explain(context, &explained)
            .await
            .map(Into::into);
    }
    if cursor.is_none() {
        return Err(OpError::FailedToParse(
            "The 'cursor' option is required, except for aggregate with the explain argument"
                .into(),
        ));
    }
    let stages: Vec<Document> = pipeline
        .ok_or_else(|| OpError::missing_field("aggregate.pipeline"))?
        .iter()
        .map(|stage| match stage {
            Bson::Document(stage) => Ok(stage.clone()),
            _ => Err(OpError::TypeMismatch(
                "Each element of the 'pipeline' array must be an object".into(),
            )),
        })
        .collect::<Result<_, _>>()?;
    let namespace = match name {
        Some(name) => format!("{}.{name}", request.db),
        None => format!("{}.$cmd.aggregate", request.db),
    };
    // On a view: the view's pipeline (through every view it reads), then this one, over the
    // collection at the bottom, under the view's collation.
    let view = match name {
        Some(name) => super::views::view_of(context, &request.db, name).await?,
        None => None,
    };
    if let Some((_, resolved)) = &view {
        crate::mongo::stable_api::check_view_pipeline(&request.body, &resolved.pipeline)?;
    }
    let (name, stages, collation) = match &view {
        Some((_, resolved)) => {
            let collation = resolved.collation_for(collation.as_ref())?;
            let mut all = resolved.pipeline.clone();
            all.extend(stages);
            (Some(resolved.base.as_str()), all, Some(collation))
        }
        None => (name, stages, collation),
    };
    // A leading `$collStats` produces one document from the collection's figures, a leading
    // `$indexStats` one per index, `$planCacheStats` none (docgate caches no plans: every
    // read is planned afresh); the rest of the pipeline runs over them.
    let leading = match (name, stages.first()) {
        (Some(_), Some(first)) if first.len() == 1 => first
            .iter()
            .next()
            .filter(|(stage, _)| LEADING_STAGES.contains(&stage.as_str()))
            .map(|(stage, spec)| (stage.clone(), spec.clone())),
        _ => None,
    };
    let parsed = if leading.is_some() {
        &stages[1..]
    } else {
        &stages[..]
    };
    let pipeline = parse_with_variables(&variables, || Pipeline::parse(parsed))?;
    let batch_size = cursor_batch_size(cursor)?;
    if let Some(output) = pipeline.output() {
        let linearizable = request
            .body
            .get_document("readConcern")
            .and_then(|concern| concern.get_str("level"))
            .is_ok_and(|level| level == "linearizable");
        if linearizable {
            return Err(OpError::InvalidOptions(format!(
                "{} cannot be used with a 'linearizable' read concern level",
                output.name()
            )));
        }
        if context.scope().reads_whole() {
            return Err(OpError::InvalidOptions(format!(
                "{} cannot be used with a 'snapshot' read concern level",
                output.name()
            )));
        }
        if context.in_transaction() {
            return Err(OpError::NotInTransaction(format!(
                "{} cannot be used in a transaction",
                output.name()
            )));
        }
        // A bad target fails before the pipeline runs.
        crate::ops::aggregate_writes::check_output_target(&request.db, output)?;
    }

    let server = context.server;
    let options = BatchOptions {
        batch_size,
        ..BatchOptions::default()
    };
    let results = match (name, leading) {
        (Some(name), Some((stage, spec))) => {
            let input = match stage.as_str() {
                "$indexStats" => {
                    super::stats::index_stats_stage(context, &request.db, name, &spec).await?
                }
                "$planCacheStats" => super::stats::plan_cache_stats_stage(&spec)?,
                _ => vec![super::stats::coll_stats_stage(context, &request.db, name, &spec).await?],
            };
            run_over(context, &request.db, pipeline.inner(0), input).await?
        }
        (Some(name), None) if name == super::profiling::PROFILE_COLLECTION => {
            // `system.profile` is kept in memory by the profiler.
            crate::ops::aggregate::check_collection_input(&pipeline)?;
            let input = super::profiling::system_profile_entries(server, &request.db);
            run_over(context, &request.db, pipeline.inner(0), input).await?
        }
        (Some(name), None) => {
            // A `$group` after per-document stages reads its input in chunks, holding only
            // its groups; a pipeline whose stages look at one document at a time, or chain
            // blocking ones, streams: the cursor holds a position, each batch is read from
            // the store when it is asked for. One that writes its result streams it into a
            // spool, and the spool is written.
            let mut scope = context.scope();
            let inner = pipeline.inner(0);
            let read = CollectionRead {
                db: &request.db,
                collection: name,
                pipeline: &inner,
                hint,
                collation: collation.as_ref(),
            };
            let first = options.first_batch_limit();
            let made = pipeline_output::run_on(&server.state.catalog, &mut scope, read, first);
            match (made.await?, pipeline.output()) {
                (made, Some(output)) => {
                    let documents = OutputDocuments::of(&mut scope, made).await?;
                    write_output(&mut scope, &request.db, output, documents, validation).await?;
                    return first_batch_reply(context, request, &namespace, Vec::new(), options);
                }
                (PipelineOutput::Streamed(first, rest), None) => {
                    let owner = context.cursor_owner(request);
                    let batch = server
                        .cursors
                        .open(&namespace, first, rest, options, owner)?;
                    return cursor_reply(&namespace, batch, true);
                }
                (PipelineOutput::Held(results), None) => results,
            }
        }
        (None, _) => {
            if context.in_transaction()
                && matches!(pipeline.stages.first(), Some(Stage::ListLocalSessions(_)))
            {
                return Err(OpError::NotInTransaction(
                    "$listLocalSessions is not allowed in a transaction".into(),
                ));
            }
            // Without access control `$listLocalSessions: {}` lists every session.
            let user = match context.connection.auth.access {
                Some(crate::auth::Access::Required) => context.cursor_owner(request).user,
                _ => None,
            };
            let input = match pipeline.stages.first() {
                Some(Stage::CurrentOp(options)) => {
                    if request.db != "admin" {
                        return Err(OpError::InvalidNamespace(
                            crate::ops::aggregate::CURRENT_OP_ON_ADMIN.into(),
                        ));
                    }
                    super::operations::current_op_stage(context, options)?
                }
                _ => collectionless_input(&pipeline, &stages, &server.sessions, user.as_ref())?,
            };
            run_over(context, &request.db, pipeline.inner(1), input).await?
        }
    };
    let results = match pipeline.output() {
        Some(output) => {
            let mut scope = context.scope();
            let documents = OutputDocuments::held(results);
            write_output(&mut scope, &request.db, output, documents, validation).await?;
            Vec::new()
        }
        None => results,
    };
    first_batch_reply(
        context,
        request,
        &namespace,
        encode_documents(&results)?,
        options,
    )
}

/// Runs `stages` over `input` (documents that come from no collection scan: `$indexStats`,
/// `system.profile`, `$documents` …) on the compute pool, with the collections of `db`
/// its `$lookup`/`$unionWith` stages read.
async fn run_over(
    context: &mut CommandContext<'_>,
    db: &str,
    stages: Pipeline,
    input: Vec<Document>,
) -> Result<Vec<Document>, OpError> {
    if stages.foreign_collections().is_empty() {
        return Ok(crate::compute::run(move || stages.run(input)).await?);
    }
    let catalog = &context.server.state.catalog;
    let mut scope = context.scope();
    let mut session = scope.reader().await?;
    let foreign = read_foreign(catalog, session.as_mut(), db, &stages).await?;
    drop(session);
    Ok(crate::compute::run(move || stages.run_with(input, &foreign)).await?)
}
