//! Reads for every front end: `find` (planned with the indexes a `hint` leaves, answered in
//! stored bytes unless projected) and `count` (a SQL `COUNT` when the filter is pushed
//! exactly), each on one store session; `distinct` is its own module.
//!
//! A `find` for a cursor ([`open`]) and a REST page ([`page`]) stream when the store
//! produces their order (`read_cursor`): a batch or page is a bounded keyset read.
//!
//! Not for: keeping cursors (`cursors`), running a plan (`read`), pipelines (`aggregate`).

use std::collections::VecDeque;

use bson::raw::RawDocumentBuf;
use bson::{Bson, Document};

use super::cursors::{take_batch, ResultSource};
use super::read;
use super::read_cursor::{BatchLimit, ReadCursor, Tail};
use super::transaction::OpScope;
use super::OpError;
use crate::catalog::{CollectionIndex, CollectionInfo};
use crate::query::planner::ReadPlan;
use crate::query::{Collation, Filter, Projection, SortDirection, SortSpec};
use crate::store::ScanPosition;

/// A parsed `find`.
pub struct FindRequest {
    pub filter: Filter,
    pub sort: Option<SortSpec>,
    pub projection: Option<Projection>,
    pub skip: u64,
    pub limit: Option<u64>,
    /// An index name or key pattern the planner must use.
    pub hint: Option<Bson>,
    /// The find's own collation (none: the collection's default).
    pub collation: Option<Collation>,
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

/// One page of a find (REST): its documents, whether more follow, and — when the read
/// streams — the position the next page resumes after (a keyset, not an offset).
pub struct FoundPage {
    pub documents: Vec<RawDocumentBuf>,
    pub has_more: bool,
    pub next: Option<ScanPosition>,
}

/// Reads a page of `size` documents of `request` (its `skip` is the page's offset): from
/// `resume` when given (where the previous page ended; the offset is then not counted
/// through again), else from the start. A read sorted in Rust cannot resume (BadValue).
pub async fn page(
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    request: FindRequest,
    size: usize,
    resume: Option<ScanPosition>,
) -> Result<FoundPage, OpError> {
    let (plan, projection, positional_filter) = plan_find(info, request)?;
    if !ReadCursor::streams(&plan) {
        if resume.is_some() {
            return Err(OpError::BadValue(
                "this sort cannot resume from a position; page with offset".into(),
            ));
        }
        let mut plan = plan;
        // The page and one more (whether more follow): the sort keeps only those.
        let wanted = size.saturating_add(1);
        plan.limit = Some(u64::try_from(wanted).unwrap_or(u64::MAX));
        let mut documents = if super::sorted_read::spills(&plan) {
            let shape = super::sorted_read::SortedShape::Find {
                projection,
                positional_filter,
            };
            let whole_page = BatchLimit {
                documents: wanted,
                bytes: usize::MAX,
            };
            // The rest of the result (and any temporary file) goes when it is dropped here.
            let sorted = super::sorted_read::open(scope, info, plan, shape, whole_page);
            Box::pin(sorted).await?.0
        } else {
            whole_result(
                scope,
                info,
                &plan,
                projection.as_ref(),
                positional_filter.as_ref(),
            )
            .await?
        };
        let has_more = documents.len() > size;
        documents.truncate(size);
        return Ok(FoundPage {
            documents,
            has_more,
            next: None,
        });
    }
    let mut cursor = ReadCursor::new(info, plan, projection, positional_filter);
    if let Some(position) = resume {
        cursor.resume_after(position)?;
    }
    let whole_page = BatchLimit {
        documents: size,
        bytes: usize::MAX,
    };
    let documents = cursor.next_batch(scope, whole_page).await?;
    let next = cursor.position().cloned();
    let has_more = if cursor.is_exhausted() {
        false
    } else if cursor.proves_more() {
        true
    } else {
        let one = BatchLimit {
            documents: 1,
            bytes: usize::MAX,
        };
        !cursor.next_batch(scope, one).await?.is_empty()
    };
    Ok(FoundPage {
        documents,
        has_more,
        next: next.filter(|_| has_more),
    })
}

/// Opens a `find` for a cursor: its first batch (bounded by `first`) and what the cursor
/// hands out after it. A plan whose order the store produces streams (`ReadCursor`: the
/// cursor holds a position, not the rest; in a snapshot read outside a transaction the rest
/// is spooled now, see `sorted_read::spool`); one sorted in Rust goes through an external
/// sort fed when it opens.
pub async fn open(
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    request: FindRequest,
    first: BatchLimit,
) -> Result<(Vec<RawDocumentBuf>, ResultSource), OpError> {
    let (plan, projection, positional_filter) = plan_find(info, request)?;
    if super::sorted_read::spills(&plan) {
        let shape = super::sorted_read::SortedShape::Find {
            projection,
            positional_filter,
        };
        // Boxed: the sort's future is large, and every command's future holds this one.
        return Box::pin(super::sorted_read::open(scope, info, plan, shape, first)).await;
    }
    if ReadCursor::streams(&plan) {
        let mut cursor = ReadCursor::new(info, plan, projection, positional_filter);
        let batch = cursor.next_batch(scope, first).await?;
        let rest = super::sorted_read::spool(scope, ResultSource::Stream(Box::new(cursor)));
        return Ok((batch, Box::pin(rest).await?));
    }
    let whole = whole_result(
        scope,
        info,
        &plan,
        projection.as_ref(),
        positional_filter.as_ref(),
    )
    .await?;
    let mut rest = VecDeque::from(whole);
    let batch = take_batch(&mut rest, first);
    Ok((batch, ResultSource::Documents(rest)))
}

/// Opens a tailable `find` (`tailable`, with or without `awaitData`) on a capped
/// collection: a natural-order read that stays open at the end of the data, so later
/// batches return the documents inserted since. BadValue on a collection that is not
/// capped or with a sort other than `{$natural: 1}`. A first batch that finds nothing
/// leaves no cursor, as in MongoDB (it has no position to resume from).
pub async fn open_tailable(
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    request: FindRequest,
    first: BatchLimit,
    tail: Tail,
) -> Result<(Vec<RawDocumentBuf>, ResultSource), OpError> {
    let namespace = format!("{}.{}", info.record.db, info.record.name);
    if !super::capped::is_capped(&info.record) {
        return Err(OpError::BadValue(format!(
            "error processing query: ns={namespace} tailable cursor requested on non capped collection"
        )));
    }
    if request.sort.as_ref().is_some_and(|sort| {
        !sort.keys.is_empty() || sort.natural == Some(SortDirection::Descending)
    }) {
        return Err(OpError::BadValue(
            "error processing query: cannot use tailable option with a sort other than {$natural: 1}"
                .into(),
        ));
    }
    // Natural order whatever the indexes (as a `{$natural: 1}` hint would have it): the
    // position a tailable cursor resumes from is the insertion sequence.
    let request = FindRequest {
        sort: None,
        hint: Some(Bson::Document(bson::doc! {"$natural": 1})),
        ..request
    };
    let (plan, projection, positional_filter) = plan_find(info, request)?;
    let mut cursor = ReadCursor::new(info, plan, projection, positional_filter).tailing(tail);
    let batch = cursor.next_batch(scope, first).await?;
    if first.documents > 0 && cursor.position().is_none() {
        cursor.close();
    }
    Ok((batch, ResultSource::Stream(Box::new(cursor))))
}

/// The plan of a find, its projection, and the whole filter when the projection is
/// positional (`a.$` needs it).
fn plan_find(
    info: &CollectionInfo,
    request: FindRequest,
) -> Result<(ReadPlan, Option<Projection>, Option<Filter>), OpError> {
    let FindRequest {
        filter,
        sort,
        projection,
        skip,
        limit,
        hint,
        collation,
    } = request;
    let collation = info.collation_for(collation)?;
    let sort = clustered_storage_order(info, sort);
    let indexes = hinted_indexes(&info.indexes, hint.as_ref())?;
    read::check_text_index(&filter, indexes)?;
    let text_score = projection.as_ref().is_some_and(Projection::uses_text_score)
        || sort.as_ref().is_some_and(SortSpec::uses_text_score);
    read::check_text_score(&filter, text_score)?;
    let positional_filter = projection
        .as_ref()
        .filter(|p| p.is_positional())
        .map(|_| filter.clone());
    let mut plan = ReadPlan::collated(filter, sort, skip, limit, indexes, collation);
    plan.text_score = text_score;
    super::index_usage::record(info, &plan);
    Ok((plan, projection, positional_filter))
}

/// A clustered collection (`create` with `clusteredIndex`) is stored in `_id` order: its
/// natural order, asked for or not, is `_id` order, as MongoDB's clustered collections give.
fn clustered_storage_order(info: &CollectionInfo, sort: Option<SortSpec>) -> Option<SortSpec> {
    if !info.record.options.contains_key("clusteredIndex") {
        return sort;
    }
    match sort {
        None => Some(SortSpec {
            keys: vec![("_id".to_owned(), SortDirection::Ascending)],
            natural: None,
        }),
        Some(SortSpec {
            keys,
            natural: Some(direction),
        }) if keys.is_empty() => Some(SortSpec {
            keys: vec![("_id".to_owned(), direction)],
            natural: None,
        }),
        other => other,
    }
}

/// Every document `plan` selects, projected when the find projects.
async fn whole_result(
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    plan: &ReadPlan,
    projection: Option<&Projection>,
    positional_filter: Option<&Filter>,
) -> Result<Vec<RawDocumentBuf>, OpError> {
    let mut session = scope.reader().await?;
    if projection.is_none() && !plan.text_score {
        return Ok(read::execute_raw(session.as_mut(), &info.record, plan).await?);
    }
    let documents = read::execute(session.as_mut(), &info.record, plan).await?;
    // `$elemMatch` and positional projections compare under the read's collation.
    let mut projected: Vec<Document> = plan.collation.install(|| {
        documents
            .into_iter()
            .map(|d| match (projection, positional_filter) {
                (None, _) => Ok(d),
                (Some(projection), Some(filter)) => projection.apply_with_query(&d, filter),
                (Some(projection), None) => projection.apply(&d),
            })
            .collect::<Result<_, _>>()
    })?;
    projected.iter_mut().for_each(read::strip_text_score);
    encode_documents(&projected)
}

/// What running a read to its end tells `explain`'s `executionStats`.
#[derive(Clone, Copy, Debug)]
pub struct ExecutionCounts {
    /// Documents the read returned.
    pub returned: usize,
    /// Rows the store handed over.
    pub examined: usize,
    /// Whether its sort went through temporary files.
    pub used_disk: bool,
}

/// Runs `plan` to its end for `explain` and counts, streaming as a cursor does — the
/// documents are counted and dropped batch by batch, so a plan over a large collection holds
/// no more than a find would (a sort in Rust spills past the command's limit). A plan that
/// needs text scores without a sort is read whole, as its find is.
pub async fn run_to_end(
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    plan: ReadPlan,
) -> Result<ExecutionCounts, OpError> {
    let drain = BatchLimit {
        documents: 10_000,
        bytes: super::cursors::MAX_BATCH_BYTES,
    };
    if super::sorted_read::spills(&plan) {
        let shape = super::sorted_read::SortedShape::Find {
            projection: None,
            positional_filter: None,
        };
        let opened = super::sorted_read::open(scope, info, plan, shape, drain);
        let (first, rest) = Box::pin(opened).await?;
        let mut returned = first.len();
        if let ResultSource::Sorted(mut sorted) = rest {
            while !sorted.is_exhausted() {
                returned += sorted.next_batch(drain).await?.len();
            }
            return Ok(ExecutionCounts {
                returned,
                examined: sorted.rows_examined(),
                used_disk: sorted.used_disk(),
            });
        }
        return Err(OpError::BadValue("a sorted read without its sort".into()));
    }
    if ReadCursor::streams(&plan) {
        let mut cursor = ReadCursor::new(info, plan, None, None);
        let mut returned = 0;
        while !cursor.is_exhausted() {
            returned += cursor.next_batch(scope, drain).await?.len();
        }
        return Ok(ExecutionCounts {
            returned,
            examined: cursor.rows_read(),
            used_disk: false,
        });
    }
    let mut session = scope.reader().await?;
    let rows = session.as_mut().scan(&info.record, &plan.scan).await?;
    let examined = rows.len();
    let (documents, used_disk) =
        crate::compute::run_inline(|| read::finish_reporting_disk(rows, &plan))?;
    Ok(ExecutionCounts {
        returned: documents.len(),
        examined,
        used_disk,
    })
}

/// The number of documents of `info` matching `filter`.
pub async fn count(
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    filter: Filter,
    hint: Option<&Bson>,
    collation: Option<Collation>,
) -> Result<u64, OpError> {
    let indexes = hinted_indexes(&info.indexes, hint)?;
    read::check_text_index(&filter, indexes)?;
    let collation = info.collation_for(collation)?;
    let mut session = scope.reader().await?;
    Ok(read::count(session.as_mut(), info, indexes, filter, collation).await?)
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
    // The `_id` index: the primary key, and on a collection with a default collation its
    // collated `_id` index (used by reads of that collation).
    let id_index = || match indexes.iter().position(|i| i.spec.is_id_index()) {
        Some(at) => &indexes[at..=at],
        None => &[],
    };
    let found = match hint {
        Bson::String(name) if name == "_id_" => return Ok(id_index()),
        // A hidden index is not there for the planner, nor for a hint.
        Bson::String(name) => indexes
            .iter()
            .position(|i| &i.record.name == name && !i.spec.hidden()),
        Bson::Document(key) if key.contains_key("$natural") => return Ok(&[]),
        Bson::Document(key) if key.len() == 1 && key.contains_key("_id") => return Ok(id_index()),
        Bson::Document(key) => indexes
            .iter()
            .position(|i| i.spec.key_pattern() == key && !i.spec.hidden()),
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
