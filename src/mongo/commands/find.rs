//! Reads: `find`, `getMore`, `killCursors`, `count`, `distinct`.
//!
//! A read parses the filter, sort and projection with the query core, lets the planner push
//! what it can into the store, and hands the result out in batches through the cursor
//! registry.
//!
//! Not for: aggregation pipelines (see `aggregate`).

use bson::{doc, Bson, Document};

use super::cursor_reply::{cursor_reply, encode_documents, first_batch_reply};
use super::write_reply::count_bson;
use crate::catalog::CollectionIndex;
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError, ReplyResult};
use crate::mongo::request::{
    as_i64, opt_array, opt_bool, opt_document, opt_i64, opt_str, CommandRequest,
};
use crate::query::compare_values;
use crate::query::planner::{self, ReadPlan};
use crate::query::Filter;
use crate::query::Projection;
use crate::query::SortSpec;
use crate::state::ServerCounters;

const FIND_FIELDS: &[&str] = &[
    "filter",
    "sort",
    "projection",
    "skip",
    "limit",
    "batchSize",
    "singleBatch",
    "hint",
    "min",
    "max",
    "returnKey",
    "showRecordId",
    "tailable",
    "oplogReplay",
    "noCursorTimeout",
    "awaitData",
    "allowPartialResults",
    "collation",
    "allowDiskUse",
    "let",
    "readOnce",
];

/// A non-negative count argument.
fn non_negative(body: &Document, field: &str) -> Result<Option<u64>, OpError> {
    match opt_i64(body, field)? {
        Some(n) if n < 0 => Err(OpError::BadValue(format!(
            "{field} value must be non-negative, but received: {n}"
        ))),
        Some(n) => Ok(Some(n as u64)),
        None => Ok(None),
    }
}

fn check_simple_collation(body: &Document) -> Result<(), OpError> {
    if let Some(collation) = opt_document(body, "collation")? {
        if collation.get_str("locale").ok() != Some("simple") {
            return Err(OpError::NotSupported(
                "collations other than 'simple' are not supported".into(),
            ));
        }
    }
    Ok(())
}

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
}

impl FindArguments {
    pub(super) fn parse(request: &CommandRequest) -> Result<FindArguments, OpError> {
        request.check_fields(FIND_FIELDS)?;
        let body = &request.body;
        for unsupported in [
            "tailable",
            "awaitData",
            "min",
            "max",
            "returnKey",
            "showRecordId",
        ] {
            if opt_bool(body, unsupported).unwrap_or(None).unwrap_or(false)
                || matches!(body.get(unsupported), Some(Bson::Document(_)))
            {
                return Err(OpError::NotSupported(format!(
                    "find option '{unsupported}' is not supported by docgate"
                )));
            }
        }
        check_simple_collation(body)?;
        let filter = Filter::parse(opt_document(body, "filter")?.unwrap_or(&Document::new()))?;
        let sort = opt_document(body, "sort")?
            .map(SortSpec::parse)
            .transpose()?;
        let projection = opt_document(body, "projection")?
            .filter(|p| !p.is_empty())
            .map(Projection::parse)
            .transpose()?;
        let skip = non_negative(body, "skip")?.unwrap_or(0);
        let mut single_batch = opt_bool(body, "singleBatch")?.unwrap_or(false);
        let limit = match opt_i64(body, "limit")? {
            Some(n) if n < 0 => {
                // Legacy negative limit: at most |n| documents in a single batch.
                single_batch = true;
                Some(n.unsigned_abs())
            }
            Some(0) | None => None,
            Some(n) => Some(n as u64),
        };
        let batch_size =
            non_negative(body, "batchSize")?.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let hint = body
            .get("hint")
            .filter(|h| !matches!(h, Bson::Null))
            .cloned();
        Ok(FindArguments {
            filter,
            sort,
            projection,
            skip,
            limit,
            single_batch,
            batch_size,
            hint,
        })
    }
}

/// The indexes the planner may use: all of them (borrowed), or only the one `hint` names
/// (by name or key pattern; `_id_` and `{$natural: 1}` leave only the `_id` key). An unknown
/// hint is MongoDB's BadValue.
pub(super) fn hinted_indexes<'a>(
    indexes: &'a [CollectionIndex],
    hint: Option<&Bson>,
) -> Result<&'a [CollectionIndex], OpError> {
    let Some(hint) = hint else {
        return Ok(indexes);
    };
    let found = match hint {
        Bson::String(name) if name == "_id_" => return Ok(&[]),
        Bson::String(name) => indexes.iter().position(|i| &i.record.name == name),
        Bson::Document(key) if key.contains_key("$natural") => return Ok(&[]),
        Bson::Document(key) if key.len() == 1 && key.contains_key("_id") => return Ok(&[]),
        Bson::Document(key) => indexes.iter().position(|i| i.spec.key_pattern() == key),
        _ => {
            return Err(OpError::BadValue(
                "hint must be a string or an object".into(),
            ))
        }
    };
    match found {
        Some(at) => Ok(&indexes[at..=at]),
        None => Err(OpError::BadValue(
            "error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index".into(),
        )),
    }
}

/// `find`. Without a projection the documents are answered in their stored bytes (decoded
/// only where a residual filter or a sort must look at them).
pub async fn find(context: &mut CommandContext<'_>, request: &CommandRequest) -> ReplyResult {
    let FindArguments {
        filter,
        sort,
        projection,
        skip,
        limit,
        single_batch,
        batch_size,
        hint,
    } = FindArguments::parse(request)?;
    ServerCounters::add(&context.server.state.counters.op_query, 1);
    let name = request.collection()?;
    let namespace = format!("{}.{name}", request.db);

    let Some(info) = context.collection_info(&request.db, name).await? else {
        return first_batch_reply(context, request, &namespace, Vec::new(), batch_size, true);
    };
    let indexes = hinted_indexes(&info.indexes, hint.as_ref())?;
    let positional_filter = projection
        .as_ref()
        .filter(|p| p.is_positional())
        .map(|_| filter.clone());
    let plan = ReadPlan::new(filter, sort, skip, limit, indexes);
    let mut session = context.open_session().await?;
    let results = match &projection {
        None => planner::execute_raw(session.as_mut(), &info.record, &plan).await?,
        Some(projection) => {
            let documents = planner::execute(session.as_mut(), &info.record, &plan).await?;
            let projected: Vec<Document> = documents
                .iter()
                .map(|d| match &positional_filter {
                    Some(filter) => projection.apply_with_query(d, filter),
                    None => projection.apply(d),
                })
                .collect::<Result<_, _>>()?;
            encode_documents(&projected)?
        }
    };
    drop(session);
    first_batch_reply(
        context,
        request,
        &namespace,
        results,
        batch_size,
        single_batch,
    )
}

/// `getMore`.
pub fn get_more(context: &mut CommandContext<'_>, request: &CommandRequest) -> ReplyResult {
    request.check_fields(&[
        "collection",
        "batchSize",
        "term",
        "lastKnownCommittedOpTime",
    ])?;
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
    let collection = opt_str(&request.body, "collection")?
        .ok_or_else(|| OpError::missing_field("getMore.collection"))?;
    let batch_size =
        non_negative(&request.body, "batchSize")?.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let namespace = format!("{}.{collection}", request.db);
    let requester = context.cursor_owner(request);
    let batch = context
        .server
        .cursors
        .next_batch(id, &namespace, batch_size, &requester)?;
    cursor_reply(&namespace, batch, false)
}

/// `killCursors`.
pub fn kill_cursors(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    request.check_fields(&["cursors"])?;
    let collection = request.collection()?;
    let namespace = format!("{}.{collection}", request.db);
    let ids: Vec<i64> = opt_array(&request.body, "cursors")?
        .ok_or_else(|| OpError::missing_field("killCursors.cursors"))?
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
    request.check_fields(&["query", "limit", "skip", "hint", "collation", "fields"])?;
    ServerCounters::add(&context.server.state.counters.op_query, 1);
    let name = request.collection()?;
    check_simple_collation(&request.body)?;
    let filter = Filter::parse(opt_document(&request.body, "query")?.unwrap_or(&Document::new()))?;
    let skip = non_negative(&request.body, "skip")?.unwrap_or(0);
    let limit = opt_i64(&request.body, "limit")?
        .map(i64::unsigned_abs)
        .filter(|l| *l > 0);
    let Some(info) = context.collection_info(&request.db, name).await? else {
        return Ok(doc! {"n": 0});
    };
    let mut session = context.open_session().await?;
    let total = planner::count(session.as_mut(), &info.record, &info.indexes, filter).await?;
    let after_skip = total.saturating_sub(skip);
    let n = limit.map_or(after_skip, |l| after_skip.min(l));
    Ok(doc! {"n": count_bson(n)})
}

/// `distinct`: the distinct values of a field over the matching documents, arrays unwound.
pub async fn distinct(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    request.check_fields(&["key", "query", "collation", "hint"])?;
    ServerCounters::add(&context.server.state.counters.op_query, 1);
    let name = request.collection()?;
    check_simple_collation(&request.body)?;
    let key =
        opt_str(&request.body, "key")?.ok_or_else(|| OpError::missing_field("distinct.key"))?;
    if key.is_empty() {
        return Err(OpError::BadValue(
            "FieldPath cannot be constructed with empty string".into(),
        ));
    }
    let filter = Filter::parse(opt_document(&request.body, "query")?.unwrap_or(&Document::new()))?;
    let Some(info) = context.collection_info(&request.db, name).await? else {
        return Ok(doc! {"values": Vec::<Bson>::new()});
    };
    let mut session = context.open_session().await?;
    let plan = ReadPlan::new(filter, None, 0, None, &info.indexes);
    let documents = planner::execute(session.as_mut(), &info.record, &plan).await?;
    let mut values: Vec<Bson> = Vec::new();
    for document in &documents {
        collect_distinct_values(document, key, &mut values);
    }
    values.sort_by(compare_values);
    values.dedup_by(|a, b| compare_values(a, b) == std::cmp::Ordering::Equal);
    Ok(doc! {"values": values})
}

/// MongoDB's `distinct` walk: the values at a dotted path, descending through arrays of
/// documents, with array values contributing their elements.
fn collect_distinct_values(document: &Document, path: &str, out: &mut Vec<Bson>) {
    let (head, rest) = match path.split_once('.') {
        Some((head, rest)) => (head, Some(rest)),
        None => (path, None),
    };
    let Some(value) = document.get(head) else {
        return;
    };
    collect_from_value(value, rest, out);
}

fn collect_from_value(value: &Bson, rest: Option<&str>, out: &mut Vec<Bson>) {
    match (value, rest) {
        (Bson::Array(items), None) => out.extend(items.iter().cloned()),
        (_, None) => out.push(value.clone()),
        (Bson::Document(inner), Some(rest)) => collect_distinct_values(inner, rest, out),
        (Bson::Array(items), Some(rest)) => {
            let (head, tail) = match rest.split_once('.') {
                Some((head, tail)) => (head, Some(tail)),
                None => (rest, None),
            };
            if let Ok(index) = head.parse::<usize>() {
                if let Some(item) = items.get(index) {
                    collect_from_value(item, tail, out);
                }
            }
            for item in items {
                if let Bson::Document(inner) = item {
                    collect_distinct_values(inner, rest, out);
                }
            }
        }
        _ => {}
    }
}
