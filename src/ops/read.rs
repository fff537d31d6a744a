//! Reads in the core: a [`ReadPlan`] from the planner run on a store session — the store's
//! scan, then the residual filter, sort, skip and limit in Rust (inline for small results,
//! on the compute pool otherwise) — and the decoding of stored BSON bytes. Used by every
//! read and by the reads of writes (update, delete, findAndModify), over the wire and REST.
//!
//! Not for: deciding what is pushed to SQL (`query::planner`) or spelling SQL (the store).

use bson::raw::{RawBsonRef, RawDocument, RawDocumentBuf};
use bson::{Bson, Document};

use crate::query::planner::{IndexCandidate, ReadPlan};
use crate::query::text::{TextSearch, TEXT_SCORE_FIELD};
use crate::query::{Collation, Filter};
use crate::query::{SortDirection, SortSpec};
use crate::store::{CollectionRecord, StoreError, StoreSession};

/// Runs a plan: the store's scan, then the residual filter, sort, skip and limit in Rust.
pub async fn execute(
    session: &mut dyn StoreSession,
    collection: &CollectionRecord,
    plan: &ReadPlan,
) -> Result<Vec<Document>, StoreError> {
    let rows = session.scan(collection, &plan.scan).await?;
    in_rust(rows, plan, finish).await
}

/// Like [`execute`], for the read of a write (update, delete, findAndModify): the rows are
/// locked for the rest of the transaction and read as concurrent writers left them, so a
/// read-modify-write never loses a concurrent update.
pub async fn execute_for_update(
    session: &mut dyn StoreSession,
    collection: &CollectionRecord,
    plan: &ReadPlan,
) -> Result<Vec<Document>, StoreError> {
    let rows = session.scan_for_update(collection, &plan.scan).await?;
    in_rust(rows, plan, finish).await
}

/// Like [`execute`], answering each selected document in its stored BSON bytes, for a
/// caller that only passes the documents on (a REST page): a document is decoded only when
/// the residual filter must look at it, and a sort reads just the fields it sorts by.
pub async fn execute_raw(
    session: &mut dyn StoreSession,
    collection: &CollectionRecord,
    plan: &ReadPlan,
) -> Result<Vec<RawDocumentBuf>, StoreError> {
    let rows = session.scan(collection, &plan.scan).await?;
    in_rust(rows, plan, finish_raw).await
}

/// Rows up to which the Rust side of a plan without an `$expr` (and a sort fed from a
/// cursor, `sorted_read`) runs inline on the async thread: below this a trip to the compute
/// pool costs more than the work.
pub(super) const INLINE_ROWS: usize = 256;

/// [`finish`] or [`finish_raw`].
type Finisher<T> = fn(Vec<Vec<u8>>, &ReadPlan) -> Result<Vec<T>, StoreError>;

/// Runs the Rust side of `plan` over `rows`: inline when it is small, on the compute pool
/// (`crate::compute`) otherwise, under the command's interrupt and the plan's collation
/// either way.
async fn in_rust<T: Send + 'static>(
    rows: Vec<Vec<u8>>,
    plan: &ReadPlan,
    finish: Finisher<T>,
) -> Result<Vec<T>, StoreError> {
    let expressions = plan
        .residual
        .as_ref()
        .is_some_and(Filter::evaluates_expressions);
    if !expressions && rows.len() <= INLINE_ROWS {
        return crate::compute::run_inline(|| plan.collation.install(|| finish(rows, plan)));
    }
    let plan = plan.clone();
    crate::compute::run(move || plan.collation.install(|| finish(rows, &plan))).await
}

/// The residual filter, sort, skip and limit over the rows the store returned. Without a
/// sort in Rust, evaluation stops once skip plus limit documents matched.
pub fn finish(rows: Vec<Vec<u8>>, plan: &ReadPlan) -> Result<Vec<Document>, StoreError> {
    finish_reporting_disk(rows, plan).map(|(documents, _)| documents)
}

/// [`finish`], answering too whether its sort went through temporary files (explain's
/// `usedDisk`).
pub fn finish_reporting_disk(
    rows: Vec<Vec<u8>>,
    plan: &ReadPlan,
) -> Result<(Vec<Document>, bool), StoreError> {
    let mut used_disk = false;
    let enough = enough_matches(plan);
    let mut documents = Vec::with_capacity(rows.len().min(enough));
    for row in in_scan_order(rows, plan) {
        if documents.len() >= enough {
            break;
        }
        crate::interrupt::check()?;
        let mut document = decode_document(&row)?;
        if plan
            .residual
            .as_ref()
            .is_none_or(|filter| filter.matches(&document))
        {
            if let Some(search) = text_scored(plan) {
                let score = search.score(&document);
                document.insert(TEXT_SCORE_FIELD, score);
            }
            documents.push(document);
        }
    }
    crate::interrupt::check_now()?;
    if let Some(sort) = sort_in_rust(plan) {
        if plan.limit.is_none() {
            // Past the command's limit the sort goes through runs on disk (292 when it
            // refused disk use); a top-k sort keeps only skip + limit (measured below).
            (documents, used_disk) =
                crate::query::spill::sort_documents(sort, documents).map_err(spill_error)?;
        } else {
            sort.sort(&mut documents);
        }
        check_sort_memory(&documents, plan, crate::query::memory::document_size)?;
    }
    Ok((skip_and_limit(documents, plan), used_disk))
}

/// A sort through temporary files that failed: the interruption it was (its memory limit,
/// the time limit, …), a full device, or what the file system said.
fn spill_error(error: crate::query::QueryError) -> StoreError {
    if error.code == 292 {
        return StoreError::Interrupted(crate::interrupt::Interruption::SortMemoryLimit);
    }
    if let Some(reason) = crate::interrupt::Interruption::from_code(error.code) {
        return StoreError::Interrupted(reason);
    }
    match error.code {
        14031 => StoreError::OutOfDiskSpace(error.message),
        _ => StoreError::Database(error.message),
    }
}

/// The `$text` search whose score each match carries, when the plan asks for scores.
pub(super) fn text_scored(plan: &ReadPlan) -> Option<&TextSearch> {
    match plan.text_score {
        true => plan.residual.as_ref().and_then(Filter::text_search),
        false => None,
    }
}

/// Removes the text score a `$text` read left on a document (before it leaves the core).
pub fn strip_text_score(document: &mut Document) {
    document.remove(TEXT_SCORE_FIELD);
}

/// MongoDB's IndexNotFound (27) for a `$text` filter on a collection without a text index
/// among `indexes`.
pub fn check_text_index<I: IndexCandidate>(
    filter: &Filter,
    indexes: &[I],
) -> Result<(), crate::query::QueryError> {
    if filter.text_search().is_none() || indexes.iter().any(|i| i.spec().text.is_some()) {
        return Ok(());
    }
    Err(crate::query::QueryError {
        code: 27,
        code_name: "IndexNotFound",
        message: "text index required for $text query".into(),
    })
}

/// MongoDB's 40218 when a projection or sort asks for the text score of a read without
/// `$text`.
pub fn check_text_score(filter: &Filter, wanted: bool) -> Result<(), crate::query::QueryError> {
    if wanted && filter.text_search().is_none() {
        return Err(crate::query::QueryError::location(
            40218,
            "query requires text score metadata, but it is not available",
        ));
    }
    Ok(())
}

/// [`finish`] keeping the documents in their stored bytes (see [`execute_raw`]).
pub fn finish_raw(rows: Vec<Vec<u8>>, plan: &ReadPlan) -> Result<Vec<RawDocumentBuf>, StoreError> {
    let enough = enough_matches(plan);
    let mut selected = Vec::with_capacity(rows.len().min(enough));
    for row in in_scan_order(rows, plan) {
        if selected.len() >= enough {
            break;
        }
        crate::interrupt::check()?;
        let raw = RawDocumentBuf::from_bytes(row).map_err(corrupt)?;
        if let Some(filter) = &plan.residual {
            if !filter.matches(&decode_document(raw.as_bytes())?) {
                continue;
            }
        }
        selected.push(raw);
    }
    crate::interrupt::check_now()?;
    if let Some(sort) = sort_in_rust(plan) {
        let keyed = selected
            .into_iter()
            .map(|raw| Ok((raw_sort_key(&raw, sort)?, raw)))
            .collect::<Result<_, StoreError>>()?;
        selected = sort.order_by_keys(keyed);
        check_sort_memory(&selected, plan, |raw| raw.as_bytes().len())?;
    }
    Ok(skip_and_limit(selected, plan))
}

/// A sort in Rust under a command's memory limit (`allowDiskUse: false`): what MongoDB's
/// sort holds — every match, or with a limit only the skip plus limit first ones (a top-k
/// sort) — measured by BSON size against the limit.
fn check_sort_memory<T>(
    sorted: &[T],
    plan: &ReadPlan,
    size: impl Fn(&T) -> usize,
) -> Result<(), StoreError> {
    if !crate::query::memory::limited() {
        return Ok(());
    }
    let held = match plan.limit {
        Some(limit) => usize::try_from(plan.skip.saturating_add(limit)).unwrap_or(usize::MAX),
        None => sorted.len(),
    };
    let bytes = sorted.iter().take(held).map(size).sum();
    Ok(crate::query::memory::check_sort(bytes)?)
}

/// How many matching documents the Rust side needs: all of them before a sort, else skip
/// plus limit.
fn enough_matches(plan: &ReadPlan) -> usize {
    match (sort_in_rust(plan), plan.limit) {
        (None, Some(limit)) => {
            usize::try_from(plan.skip.saturating_add(limit)).unwrap_or(usize::MAX)
        }
        _ => usize::MAX,
    }
}

/// The rows in the order the plan reads them (a `$natural: -1` sort reverses the scan).
fn in_scan_order(rows: Vec<Vec<u8>>, plan: &ReadPlan) -> Box<dyn Iterator<Item = Vec<u8>>> {
    let reverse = plan.sort.as_ref().is_some_and(|spec| {
        spec.keys.is_empty() && spec.natural == Some(SortDirection::Descending)
    });
    if reverse {
        Box::new(rows.into_iter().rev())
    } else {
        Box::new(rows.into_iter())
    }
}

/// The sort the plan leaves to Rust, if any.
fn sort_in_rust(plan: &ReadPlan) -> Option<&SortSpec> {
    plan.sort.as_ref().filter(|spec| !spec.keys.is_empty())
}

/// The plan's Rust-side skip and limit applied to `items`.
fn skip_and_limit<T>(mut items: Vec<T>, plan: &ReadPlan) -> Vec<T> {
    let skip = usize::try_from(plan.skip).unwrap_or(usize::MAX);
    if skip > 0 {
        items.drain(..skip.min(items.len()));
    }
    if let Some(limit) = plan.limit {
        items.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    items
}

/// The sort key of a stored document. A top-level field that is not an array is its own
/// key (a missing one is null), read straight from the bytes; other paths are resolved on
/// the decoded top-level fields they start with.
pub(super) fn raw_sort_key(raw: &RawDocument, sort: &SortSpec) -> Result<Vec<Bson>, StoreError> {
    let mut key = Vec::with_capacity(sort.keys.len());
    for (path, _) in &sort.keys {
        let own_key = if path.contains('.') {
            None
        } else {
            match raw.get(path).map_err(corrupt)? {
                None => Some(Bson::Null),
                Some(RawBsonRef::Array(_)) => None,
                Some(value) => Some(Bson::try_from(value).map_err(corrupt)?),
            }
        };
        match own_key {
            Some(value) => key.push(value),
            None => return Ok(sort.keys_of(&sorted_fields(raw, sort)?)),
        }
    }
    Ok(key)
}

/// The top-level fields of `raw` that `sort`'s paths start with, decoded: enough for the
/// document's sort key.
fn sorted_fields(raw: &RawDocument, sort: &SortSpec) -> Result<Document, StoreError> {
    let mut fields = Document::new();
    for name in sort.top_level_fields() {
        if fields.contains_key(name) {
            continue;
        }
        if let Some(value) = raw.get(name).map_err(corrupt)? {
            fields.insert(name, Bson::try_from(value).map_err(corrupt)?);
        }
    }
    Ok(fields)
}

pub(super) fn corrupt(error: bson::error::Error) -> StoreError {
    StoreError::Corrupt(error.to_string())
}

/// Counts what a filter matches: a SQL `COUNT` when the pushdown is exact.
pub async fn count<I: IndexCandidate>(
    session: &mut dyn StoreSession,
    info: &crate::catalog::CollectionInfo,
    indexes: &[I],
    filter: Filter,
    collation: Collation,
) -> Result<u64, StoreError> {
    let plan = ReadPlan::collated(filter, None, 0, None, indexes, collation);
    super::index_usage::record(info, &plan);
    let collection = &info.record;
    if plan.is_fully_pushed() {
        return session.count(collection, &plan.scan.filter).await;
    }
    Ok(execute(session, collection, &plan).await?.len() as u64)
}

/// Parses stored BSON bytes (in place: no copy of the bytes is made first).
pub fn decode_document(bytes: &[u8]) -> Result<Document, StoreError> {
    RawDocument::from_bytes(bytes)
        .and_then(Document::try_from)
        .map_err(corrupt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    /// No secondary index.
    const NONE: &[crate::catalog::CollectionIndex] = crate::catalog::NO_INDEXES;

    #[test]
    fn reverse_natural_order_is_done_after_the_scan() {
        let docs: Vec<Vec<u8>> = (0..3).map(|i| doc! {"_id": i}.to_vec().unwrap()).collect();
        let sort = SortSpec::parse(&doc! {"$natural": -1}).unwrap();
        let plan = ReadPlan::new(
            Filter::parse(&doc! {}).unwrap(),
            Some(sort),
            1,
            Some(1),
            NONE,
        );
        assert_eq!(plan.scan.order, None);
        assert_eq!(finish(docs, &plan).unwrap(), vec![doc! {"_id": 1}]);
    }

    #[test]
    fn stored_bytes_are_selected_and_ordered_like_decoded_documents() {
        let docs = [
            doc! {"_id": 1, "kind": "a", "when": {"day": 3, "at": [2, 9]}, "name": "one"},
            doc! {"_id": 2, "kind": "b", "when": {"day": 1}, "name": "two"},
            doc! {"_id": 3, "kind": "a", "when": {"day": 1, "at": [5]}, "name": "three"},
            doc! {"_id": 4, "kind": "a", "name": "four"},
            doc! {"_id": 5, "kind": "a", "when": {"day": 1, "at": [1, 7]}, "name": "five"},
            doc! {"_id": 6, "kind": ["a", "c"], "when": {"day": 2}, "name": "six"},
        ];
        let rows = || -> Vec<Vec<u8>> { docs.iter().map(|d| d.to_vec().unwrap()).collect() };
        let cases = [
            (
                doc! {"kind": "a"},
                doc! {"when.day": 1, "when.at": -1},
                1,
                Some(3),
            ),
            (doc! {}, doc! {"name": -1}, 0, None),
            (
                doc! {"kind": {"$ne": "b"}},
                doc! {"$natural": -1},
                2,
                Some(2),
            ),
            (
                doc! {"when.at": {"$gt": 4}},
                doc! {"when": 1, "_id": -1},
                0,
                Some(10),
            ),
            (doc! {}, doc! {"kind": -1, "name": 1}, 0, None),
            (doc! {}, doc! {"when": -1, "missing": 1, "_id": 1}, 1, None),
        ];
        for (filter, sort, skip, limit) in cases {
            let plan = ReadPlan::new(
                Filter::parse(&filter).unwrap(),
                Some(SortSpec::parse(&sort).unwrap()),
                skip,
                limit,
                NONE,
            );
            let decoded = finish(rows(), &plan).unwrap();
            let raw: Vec<Document> = finish_raw(rows(), &plan)
                .unwrap()
                .iter()
                .map(|raw| decode_document(raw.as_bytes()).unwrap())
                .collect();
            assert!(!decoded.is_empty(), "{filter} {sort} selects something");
            assert_eq!(raw, decoded, "filter {filter}, sort {sort}");
        }
    }
}
