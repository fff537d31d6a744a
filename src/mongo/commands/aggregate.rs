//! `aggregate` over a collection: the leading `$match` is planned like a `find` (pushed into
//! SQL where possible), the collections `$lookup`/`$unionWith` name are read from the same
//! database, the pipeline runs in the query core, the result is returned through a cursor.
//! Collection-less aggregation (`aggregate: 1`, e.g. `$currentOp`) is not supported.
//!
//! Not for: the stages themselves (see `query::aggregate`).

use bson::{Bson, Document};

use super::cursor_reply::{cursor_batch_size, encode_documents, first_batch_reply};
use crate::mongo::context::CommandContext;
use crate::mongo::error::{OpError, ReplyResult};
use crate::mongo::request::CommandRequest;
use crate::ops::aggregate::run_pipeline;
use crate::ops::cursors::BatchOptions;
use crate::query::Pipeline;
use crate::state::ServerCounters;

/// `aggregate`.
pub async fn aggregate(context: &mut CommandContext<'_>, request: &CommandRequest) -> ReplyResult {
    let mut arguments = request.arguments();
    let explain = arguments.bool("explain")?.unwrap_or(false);
    let cursor = arguments.document("cursor")?;
    let pipeline = arguments.array("pipeline")?;
    let collation = arguments.collation()?;
    arguments.no_variables("let")?;
    let hint = arguments.value("hint").filter(|h| !matches!(h, Bson::Null));
    // Honoured by doing nothing: docgate's pipelines have no memory limit to lift, and no
    // collection has a validator to bypass ($out and $merge are refused).
    arguments.without_effect("allowDiskUse");
    arguments.without_effect("bypassDocumentValidation");
    arguments.finish()?;
    ServerCounters::add(&context.server.state.counters.op_query, 1);
    let Bson::String(name) = request.target() else {
        return Err(OpError::NotSupported(
            "collection-less aggregate (aggregate: 1) is not supported by docgate".into(),
        ));
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
    let pipeline = Pipeline::parse(&stages)?;
    let batch_size = cursor_batch_size(cursor)?;
    let namespace = format!("{}.{name}", request.db);

    let server = context.server;
    let mut scope = context.scope();
    let mut session = scope.reader().await?;
    let results = run_pipeline(
        &server.state.catalog,
        session.as_mut(),
        &request.db,
        name,
        &pipeline,
        hint,
        collation,
    )
    .await?;
    drop(session);
    first_batch_reply(
        context,
        request,
        &namespace,
        encode_documents(&results)?,
        BatchOptions {
            batch_size,
            ..BatchOptions::default()
        },
    )
}
