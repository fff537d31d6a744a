//! `distinct`: the values at a path over the documents a read selects, arrays unwound, in
//! BSON order, values equal under the read's collation counted once.
//!
//! The documents stream: a collection's matches through a [`ReadCursor`], a view's through
//! its pipeline run as an aggregate (`mongo::commands::views`); each batch is folded into
//! [`DistinctValues`] on the compute pool, so only the values are held, never the
//! documents. As MongoDB, the values past 16 MB (less 4 KB) are 17217.
//!
//! Not for: planning (`query::planner`) or reading (`read_cursor`).

use bson::raw::RawDocumentBuf;
use bson::{Bson, Document, RawDocument};

use super::cursors::{fold_result, ResultSource};
use super::find::hinted_indexes;
use super::read;
use super::read_cursor::ReadCursor;
use super::transaction::OpScope;
use super::OpError;
use crate::catalog::CollectionInfo;
use crate::query::memory::value_size;
use crate::query::planner::ReadPlan;
use crate::query::{compare_values, Collation, Filter, QueryError};

/// What the values of one `distinct` may take (MongoDB's 16 MB reply less 4 KB).
const MAX_VALUES_BYTES: usize = 16 * 1024 * 1024 - 4096;

/// The distinct values at `key` over the documents of `info` matching `filter`, in BSON
/// order.
pub async fn distinct(
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    key: &str,
    filter: Filter,
    hint: Option<&Bson>,
    collation: Option<Collation>,
) -> Result<Vec<Bson>, OpError> {
    let indexes = hinted_indexes(&info.indexes, hint)?;
    read::check_text_index(&filter, indexes)?;
    let collation = info.collation_for(collation)?;
    let plan = ReadPlan::collated(filter, None, 0, None, indexes, collation.clone());
    super::index_usage::record(info, &plan);
    let values = DistinctValues::new(key, collation);
    if !ReadCursor::streams(&plan) || read::text_scored(&plan).is_some() {
        let mut session = scope.reader().await?;
        let documents = read::execute(session.as_mut(), &info.record, &plan).await?;
        drop(session);
        return values.of_documents(documents);
    }
    let rows = ResultSource::Stream(Box::new(ReadCursor::new(info, plan, None, None)));
    values.of_stream(scope, Vec::new(), rows).await
}

/// The distinct values at one path, gathered document by document: held unsorted until
/// they double in number or pass MongoDB's cap in bytes, then sorted and deduplicated under
/// the collation, so what is held stays within about twice the distinct values and twice
/// the cap.
pub struct DistinctValues {
    path: String,
    collation: Collation,
    values: Vec<Bson>,
    /// How many values the last compaction left: the next one comes at twice as many.
    compacted: usize,
    /// Bytes of the values added since the last compaction: past the cap, one comes sooner.
    added_bytes: usize,
}

/// Values held before the first compaction.
const FIRST_COMPACTION: usize = 4096;

impl DistinctValues {
    /// No values yet, for the dotted `path`.
    pub fn new(path: &str, collation: Collation) -> DistinctValues {
        DistinctValues {
            path: path.to_string(),
            collation,
            values: Vec::new(),
            compacted: 0,
            added_bytes: 0,
        }
    }

    /// Folds every document of a streamed result (`first`, then `rest`) in; answers the
    /// values.
    pub async fn of_stream(
        self,
        scope: &mut OpScope<'_>,
        first: Vec<RawDocumentBuf>,
        rest: ResultSource,
    ) -> Result<Vec<Bson>, OpError> {
        let add = |values: &mut DistinctValues, row: RawDocumentBuf| values.add_raw(&row);
        fold_result(scope, first, rest, self, add).await?.finish()
    }

    /// The values over documents already read.
    pub fn of_documents(mut self, documents: Vec<Document>) -> Result<Vec<Bson>, OpError> {
        for document in &documents {
            let before = self.values.len();
            collect_distinct_values(document, &self.path, &mut self.values);
            self.compact_when_doubled(before)?;
        }
        self.finish()
    }

    /// Adds the values of one stored document, decoding only the field the path starts at.
    fn add_raw(&mut self, document: &RawDocument) -> Result<(), OpError> {
        let (head, rest) = match self.path.split_once('.') {
            Some((head, rest)) => (head, Some(rest)),
            None => (self.path.as_str(), None),
        };
        let field = document.get(head).map_err(read::corrupt)?;
        if let Some(field) = field {
            let value = Bson::try_from(field).map_err(read::corrupt)?;
            let before = self.values.len();
            collect_from_value(&value, rest, &mut self.values);
            self.compact_when_doubled(before)?;
        }
        Ok(())
    }

    /// Compacts when the values have doubled since the last compaction, or those added
    /// since (from position `before` on, the latest) pass the cap in bytes.
    fn compact_when_doubled(&mut self, before: usize) -> Result<(), OpError> {
        let added = self.values.get(before..).unwrap_or_default();
        self.added_bytes += added.iter().map(value_size).sum::<usize>();
        let doubled = self.values.len() >= self.compacted.saturating_mul(2).max(FIRST_COMPACTION);
        if doubled || self.added_bytes >= MAX_VALUES_BYTES {
            self.compact()?;
            self.compacted = self.values.len();
            self.added_bytes = 0;
        }
        Ok(())
    }

    /// Sorts and deduplicates the values; past MongoDB's cap, 17217.
    fn compact(&mut self) -> Result<(), OpError> {
        crate::interrupt::check()?;
        let values = &mut self.values;
        self.collation.install(|| {
            values.sort_by(compare_values);
            values.dedup_by(|a, b| compare_values(a, b) == std::cmp::Ordering::Equal);
        });
        // As MongoDB counts them: each value as an element named by the path's last part.
        let name = self.path.rsplit('.').next().unwrap_or_default().len();
        let bytes: usize = values.iter().map(|v| 2 + name + value_size(v)).sum();
        if bytes >= MAX_VALUES_BYTES {
            return Err(OpError::Query(QueryError::location(
                17217,
                "distinct too big, 16mb cap",
            )));
        }
        Ok(())
    }

    /// The values, sorted and deduplicated.
    pub fn finish(mut self) -> Result<Vec<Bson>, OpError> {
        self.compact()?;
        Ok(self.values)
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
