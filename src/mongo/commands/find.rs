//! Reads: `find`, `getMore`, `killCursors`, `count`, `distinct`.
//!
//! Each command takes its arguments, parses the filter, sort and projection with the query
//! core, runs the read in the core (`ops::find`: the planner pushes what it can into the
//! store) and hands the result out in batches through the core's cursor registry (a `find`
//! the store can order streams: each `getMore` reads its batch from the store).
//!
//! Not for: aggregation pipelines (see `aggregate`).

use bson::{doc, Bson, Document};

use super::cursor_reply::{cursor_reply, first_batch_reply};
use super::write_reply::count_bson;
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError, ReplyResult};
use crate::mongo::request::{as_i64, CommandRequest};
use crate::ops;
use crate::ops::cursors::BatchOptions;
use crate::ops::find::FindRequest;
use crate::ops::read_cursor::Tail;
use crate::ops::views::is_view;
use crate::query::{parse_with_variables, Collation, Filter, Projection, SortSpec};
use crate::state::ServerCounters;

/// The arguments of a `find`, parsed and checked (also used by `explain`).
pub(super) struct FindArguments {
    pub filter: Filter,
    pub sort: Option<SortSpec>,
    pub projection: Option<Projection>,
    pub skip: u64,
    pub limit: Option<u64>,
    pub single_batch: bool,
    pub batch_size: Option<usize>,
    pub hint: Option<Bson>,
    /// `noCursorTimeout`: the cursor is not closed for being idle.
    pub no_cursor_timeout: bool,
    /// `allowDiskUse: false`: a sort in memory answers 292 past the limit instead of
    /// spilling to temporary files.
    pub disk_use_refused: bool,
    /// The find's own collation (none: the collection's default).
    pub collation: Option<Collation>,
    /// `tailable` (with `awaitData`): a cursor that stays open at the end of a capped
    /// collection.
    pub tail: Option<Tail>,
}

impl FindArguments {
    pub(super) fn parse(request: &CommandRequest) -> Result<FindArguments, OpError> {
        let mut arguments = request.arguments();
        for unsupported in ["min", "max", "returnKey", "showRecordId"] {
            let value = arguments.value(unsupported);
            let set = match value {
                Some(Bson::Document(_)) => true,
                Some(Bson::Null) | None => false,
                Some(other) => crate::mongo::request::as_bool(other).unwrap_or(true),
            };
            if set {
                return Err(OpError::NotSupported(format!(
                    "find option '{unsupported}' is not supported by docgate"
                )));
            }
        }
        let tailable = arguments.bool("tailable")?.unwrap_or(false);
        let await_data = arguments.bool("awaitData")?.unwrap_or(false);
        if await_data && !tailable {
            return Err(OpError::FailedToParse(
                "Cannot set 'awaitData' without also setting 'tailable'".into(),
            ));
        }
        let tail = tailable.then_some(Tail { await_data });
        let collation = arguments.collation()?;
        let variables = arguments.variables("let")?;
        let filter_document = arguments.document("filter")?;
        let projection_document = arguments.document("projection")?;
        let (filter, projection) = parse_with_variables(&variables, || {
            let filter = Filter::parse(filter_document.unwrap_or(&Document::new()))?;
            let projection = projection_document
                .filter(|p| !p.is_empty())
                .map(Projection::parse)
                .transpose()?;
            Ok::<_, OpError>((filter, projection))
        })?;
        let sort = arguments
            .document("sort")?
            .map(SortSpec::parse)
            .transpose()?;
        let skip = arguments.count("skip")?.unwrap_or(0);
        let mut single_batch = arguments.bool("singleBatch")?.unwrap_or(false);
        let limit = match arguments.i64("limit")? {
            Some(n) if n < 0 => {
                // Legacy negative limit: at most |n| documents in a single batch.
                single_batch = true;
                Some(n.unsigned_abs())
            }
            Some(0) | None => None,
            Some(n) => Some(n.unsigned_abs()),
        };
        let batch_size = arguments
            .count("batchSize")?
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let hint = arguments
            .value("hint")
            .filter(|h| !matches!(h, Bson::Null))
            .cloned();
        let no_cursor_timeout = arguments.bool("noCursorTimeout")?.unwrap_or(false);
        // A sort in memory past its limit spills to temporary files; `allowDiskUse: false`
        // makes it answer 292 instead (true is MongoDB's default since 6.0).
        let disk_use_refused = arguments.bool("allowDiskUse")? == Some(false);
        // Honoured by doing nothing: partial results and oplog replay only mean something on
        // a sharded cluster or the oplog; `readOnce` is a storage-engine cache hint.
        for no_effect in ["allowPartialResults", "oplogReplay", "readOnce"] {
            arguments.without_effect(no_effect);
        }
        arguments.finish()?;
        Ok(FindArguments {
            filter,
            sort,
            projection,
            skip,
            limit,
            single_batch,
            batch_size,
            hint,
            no_cursor_timeout,
            disk_use_refused,
            collation,
            tail,
        })
    }
}

/// `find`. Without a projection the documents are answered in their stored bytes (decoded
/// only where a residual filter or a sort must look at them).
pub async fn find(context: &mut CommandContext<'_>, request: &CommandRequest) -> ReplyResult {
    let name = request.collection()?;
    if name == super::profiling::PROFILE_COLLECTION {
        let arguments = FindArguments::parse(request)?;
        ServerCounters::add(&context.server.state.counters.op_query, 1);
        return super::profiling::find_system_profile(context, request, arguments);
    }
    let found = context.collection_info(&request.db, name).await?;
    if found.as_ref().is_some_and(|info| is_view(&info.record)) {
        // A find on a view is the aggregate MongoDB turns it into.
        let as_aggregate = super::views::find_as_aggregate(request)?;
        return super::aggregate::aggregate(context, &as_aggregate).await;
    }
    let FindArguments {
        filter,
        sort,
        projection,
        skip,
        limit,
        single_batch,
        batch_size,
        hint,
        no_cursor_timeout,
        disk_use_refused,
        collation,
        tail,
    } = FindArguments::parse(request)?;
    if tail.is_some() && single_batch {
        return Err(OpError::BadValue(
            "cannot use tailable option with the 'singleBatch' option".into(),
        ));
    }
    crate::compute::current_interrupt().limit_blocking_memory(
        context
            .server
            .limits
            .blocking_memory(Some(!disk_use_refused)),
    );
    let options = BatchOptions {
        batch_size,
        single_batch,
        no_timeout: no_cursor_timeout,
    };
    ServerCounters::add(&context.server.state.counters.op_query, 1);
    let namespace = format!("{}.{name}", request.db);

    let Some(info) = found else {
        let options = BatchOptions {
            single_batch: true,
            ..options
        };
        return first_batch_reply(context, request, &namespace, Vec::new(), options);
    };
    let find_request = FindRequest {
        filter,
        sort,
        projection,
        skip,
        limit,
        hint,
        collation,
    };
    let (first, rest) = match tail {
        Some(tail) => {
            ops::find::open_tailable(
                &mut context.scope(),
                &info,
                find_request,
                options.first_batch_limit(),
                tail,
            )
            .await?
        }
        None => {
            ops::find::open(
                &mut context.scope(),
                &info,
                find_request,
                options.first_batch_limit(),
            )
            .await?
        }
    };
    let owner = context.cursor_owner(request);
    let batch = context
        .server
        .cursors
        .open(&namespace, first, rest, options, owner)?;
    cursor_reply(&namespace, batch, true)
}

/// `getMore`: the next batch of a cursor, read from where it is (a streaming `find`
/// reads it from the store now). Its time limit is what the opening command's `maxTimeMS`
/// left (see `dispatch`).
pub async fn get_more(context: &mut CommandContext<'_>, request: &CommandRequest) -> ReplyResult {
    let mut arguments = request.arguments();
    let collection = arguments
        .str("collection")?
        .ok_or_else(|| OpError::missing_field("getMore.collection"))?;
    let batch_size = arguments
        .count("batchSize")?
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    // Replication fields a secondary's oplog fetcher sends; nothing to do on a primary.
    arguments.without_effect("term");
    arguments.without_effect("lastKnownCommittedOpTime");
    arguments.finish()?;
    ServerCounters::add(&context.server.state.counters.op_getmore, 1);
    let id = match request.target() {
        Bson::Int64(id) => *id,
        other => {
            return Err(OpError::TypeMismatch(format!(
                "BSON field 'getMore.getMore' is the wrong type '{}', expected type 'long'",
                crate::mongo::request::type_name(other)
            )))
        }
    };
    let namespace = format!("{}.{collection}", request.db);
    let requester = context.cursor_owner(request);
    // On a tailable `awaitData` cursor, `maxTimeMS` is how long to wait for new documents
    // (checked by the dispatcher; on other cursors it is refused there).
    let max_await = request
        .body
        .get("maxTimeMS")
        .and_then(as_i64)
        .and_then(|ms| u64::try_from(ms).ok())
        .map(std::time::Duration::from_millis);
    let server = context.server;
    let batch = server
        .cursors
        .next_batch(
            &mut context.scope(),
            id,
            &namespace,
            batch_size,
            max_await,
            &requester,
        )
        .await?;
    cursor_reply(&namespace, batch, false)
}

/// `killCursors`.
pub fn kill_cursors(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let mut arguments = request.arguments();
    let cursors = arguments
        .array("cursors")?
        .ok_or_else(|| OpError::missing_field("killCursors.cursors"))?;
    arguments.finish()?;
    let collection = request.collection()?;
    let namespace = format!("{}.{collection}", request.db);
    let ids: Vec<i64> = cursors
        .iter()
        .map(|v| as_i64(v).ok_or_else(|| OpError::TypeMismatch("cursor ids must be longs".into())))
        .collect::<Result<_, _>>()?;
    let requester = context.cursor_owner(request);
    let (killed, not_found) = context.server.cursors.kill(&namespace, &ids, &requester)?;
    Ok(doc! {
        "cursorsKilled": killed,
        "cursorsNotFound": not_found,
        "cursorsAlive": Vec::<i64>::new(),
        "cursorsUnknown": Vec::<i64>::new(),
    })
}

/// `count`: a SQL `COUNT` when the filter is pushed exactly.
pub async fn count(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let mut arguments = request.arguments();
    let collation = arguments.collation()?;
    let filter = Filter::parse(arguments.document("query")?.unwrap_or(&Document::new()))?;
    let skip = arguments.count("skip")?.unwrap_or(0);
    let limit = arguments
        .i64("limit")?
        .map(i64::unsigned_abs)
        .filter(|l| *l > 0);
    let hint = arguments.value("hint").filter(|h| !matches!(h, Bson::Null));
    // The legacy `fields` of `count` never changed its answer.
    arguments.without_effect("fields");
    arguments.finish()?;
    ServerCounters::add(&context.server.state.counters.op_query, 1);
    let name = request.collection()?;
    if name == super::profiling::PROFILE_COLLECTION {
        return super::profiling::count_system_profile(context, request, &filter, skip, limit);
    }
    let Some(info) = context.collection_info(&request.db, name).await? else {
        return Ok(doc! {"n": 0});
    };
    if is_view(&info.record) {
        if crate::mongo::stable_api::is_strict_v1(&request.body) {
            if let Some((_, resolved)) = super::views::view_of(context, &request.db, name).await? {
                crate::mongo::stable_api::check_view_pipeline(&request.body, &resolved.pipeline)?;
            }
        }
        let query = request.body.get_document("query").ok();
        return super::views::count(
            context,
            &info.record,
            query,
            skip,
            limit,
            hint,
            collation.as_ref(),
        )
        .await;
    }
    let total = ops::find::count(&mut context.scope(), &info, filter, hint, collation).await?;
    let after_skip = total.saturating_sub(skip);
    let n = limit.map_or(after_skip, |l| after_skip.min(l));
    Ok(doc! {"n": count_bson(n)})
}

/// `distinct`: the distinct values of a field over the matching documents, arrays unwound.
pub async fn distinct(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let mut arguments = request.arguments();
    let collation = arguments.collation()?;
    let key = arguments
        .str("key")?
        .ok_or_else(|| OpError::missing_field("distinct.key"))?;
    if key.is_empty() {
        return Err(OpError::BadValue(
            "FieldPath cannot be constructed with empty string".into(),
        ));
    }
    let filter = Filter::parse(arguments.document("query")?.unwrap_or(&Document::new()))?;
    let hint = arguments.value("hint").filter(|h| !matches!(h, Bson::Null));
    arguments.finish()?;
    ServerCounters::add(&context.server.state.counters.op_query, 1);
    let name = request.collection()?;
    let Some(info) = context.collection_info(&request.db, name).await? else {
        return Ok(doc! {"values": Vec::<Bson>::new()});
    };
    if is_view(&info.record) {
        let query = request.body.get_document("query").ok();
        return super::views::distinct(context, &info.record, key, query, hint, collation.as_ref())
            .await;
    }
    let values =
        ops::distinct::distinct(&mut context.scope(), &info, key, filter, hint, collation).await?;
    Ok(doc! {"values": values})
}
