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
use crate::mongo::request::{opt_array, opt_bool, opt_document, CommandRequest};
use crate::ops::aggregate::run_pipeline;
use crate::query::Pipeline;
use crate::state::ServerCounters;

/// `aggregate`.
pub async fn aggregate(context: &mut CommandContext<'_>, request: &CommandRequest) -> ReplyResult {
    request.check_fields(&[
        "pipeline",
        "cursor",
        "explain",
        "allowDiskUse",
        "hint",
        "collation",
        "let",
        "bypassDocumentValidation",
    ])?;
    ServerCounters::add(&context.server.state.counters.op_query, 1);
    let Bson::String(name) = request.target() else {
        return Err(OpError::NotSupported(
            "collection-less aggregate (aggregate: 1) is not supported by docgate".into(),
        ));
    };
    if opt_bool(&request.body, "explain")?.unwrap_or(false) {
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
    if opt_document(&request.body, "cursor")?.is_none() {
        return Err(OpError::FailedToParse(
            "The 'cursor' option is required, except for aggregate with the explain argument"
                .into(),
        ));
    }
    let stages: Vec<Document> = opt_array(&request.body, "pipeline")?
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
    let batch_size = cursor_batch_size(&request.body)?;
    let namespace = format!("{}.{name}", request.db);

    let mut session = context.open_session().await?;
    let results = run_pipeline(
        &context.server.state.catalog,
        session.as_mut(),
        &request.db,
        name,
        &pipeline,
    )
    .await?;
    drop(session);
    first_batch_reply(
        context,
        request,
        &namespace,
        encode_documents(&results)?,
        batch_size,
        false,
    )
}
