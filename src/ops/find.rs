//! Reads for every front end: `find` (planned with the indexes a `hint` leaves, answered in
//! stored bytes unless projected), `count` (a SQL `COUNT` when the filter is pushed exactly)
//! and `distinct` (the values at a path over the matching documents, arrays unwound), each on
//! one store session.
//!
//! Not for: cursors and batches (the front ends), running a plan (`read`), pipelines
//! (`aggregate`).

use bson::raw::RawDocumentBuf;
use bson::{Bson, Document};

use super::read;
use super::OpError;
use crate::catalog::{CollectionIndex, CollectionInfo};
use crate::query::planner::ReadPlan;
use crate::query::{compare_values, Filter, Projection, SortSpec};
use crate::state::AppState;

/// A parsed `find`.
pub struct FindRequest {
    pub filter: Filter,
    pub sort: Option<SortSpec>,
    pub projection: Option<Projection>,
    pub skip: u64,
    pub limit: Option<u64>,
    /// An index name or key pattern the planner must use.
    pub hint: Option<Bson>,
}

/// Documents built by an operation (projections, pipeline results, catalog entries) encoded
/// for a reply; a document BSON cannot hold (a key with a NUL byte, say) is BadValue.
pub fn encode_documents(documents: &[Document]) -> Result<Vec<RawDocumentBuf>, OpError> {
    documents
        .iter()
        .map(|document| {
            RawDocumentBuf::try_from(document).map_err(|error| {
                OpError::BadValue(format!("a result document cannot be encoded: {error}"))
            })
        })
        .collect()
}

/// Runs a `find` over `info`. Without a projection the documents are answered in their
/// stored bytes (decoded only where a residual filter or a sort must look at them).
pub async fn find(
    state: &AppState,
    info: &CollectionInfo,
    request: FindRequest,
) -> Result<Vec<RawDocumentBuf>, OpError> {
    let FindRequest {
        filter,
        sort,
        projection,
        skip,
        limit,
        hint,
    } = request;
    let indexes = hinted_indexes(&info.indexes, hint.as_ref())?;
    let positional_filter = projection
        .as_ref()
        .filter(|p| p.is_positional())
        .map(|_| filter.clone());
    let plan = ReadPlan::new(filter, sort, skip, limit, indexes);
    let mut session = state.store.session().await?;
    match &projection {
        None => Ok(read::execute_raw(session.as_mut(), &info.record, &plan).await?),
        Some(projection) => {
            let documents = read::execute(session.as_mut(), &info.record, &plan).await?;
            let projected: Vec<Document> = documents
                .iter()
                .map(|d| match &positional_filter {
                    Some(filter) => projection.apply_with_query(d, filter),
                    None => projection.apply(d),
                })
                .collect::<Result<_, _>>()?;
            encode_documents(&projected)
        }
    }
}

/// The number of documents of `info` matching `filter`.
pub async fn count(
    state: &AppState,
    info: &CollectionInfo,
    filter: Filter,
    hint: Option<&Bson>,
) -> Result<u64, OpError> {
    let indexes = hinted_indexes(&info.indexes, hint)?;
    let mut session = state.store.session().await?;
    Ok(read::count(session.as_mut(), &info.record, indexes, filter).await?)
}

/// The distinct values at `key` over the documents of `info` matching `filter`, in BSON
/// order.
pub async fn distinct(
    state: &AppState,
    info: &CollectionInfo,
    key: &str,
    filter: Filter,
    hint: Option<&Bson>,
) -> Result<Vec<Bson>, OpError> {
    let indexes = hinted_indexes(&info.indexes, hint)?;
    let mut session = state.store.session().await?;
    let plan = ReadPlan::new(filter, None, 0, None, indexes);
    let documents = read::execute(session.as_mut(), &info.record, &plan).await?;
    let mut values: Vec<Bson> = Vec::new();
    for document in &documents {
        collect_distinct_values(document, key, &mut values);
    }
    values.sort_by(compare_values);
    values.dedup_by(|a, b| compare_values(a, b) == std::cmp::Ordering::Equal);
    Ok(values)
}

/// The indexes the planner may use: all of them (borrowed), or only the one `hint` names
/// (by name or key pattern; `_id_` and `{$natural: 1}` leave only the `_id` key). An unknown
/// hint is MongoDB's BadValue.
pub fn hinted_indexes<'a>(
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
