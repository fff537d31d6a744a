//! The planner: splits a read (filter, sort, skip, limit) into a `ScanRequest` the store runs
//! in SQL and a residual the Rust evaluator checks (DESIGN.md invariant 2: pushdown may
//! over-select, never under-select), and runs the two together.
//!
//! What is pushed:
//! - `_id` equality and `$in` — exact, served by the `_id` key index;
//! - equality, `$in` and comparisons on the first field of a secondary index — exact index
//!   ranges (see `index_ranges.rs`), served by the index's entries table;
//! - other equalities on string, number or boolean values — inexact: the SQL over-selects
//!   (through arrays) and the filter is re-checked in Rust.
//!
//! A sort on `_id`, or on the first field of a secondary index that is neither multikey,
//! sparse, partial nor hidden, is pushed together with skip and limit when the whole
//! filter was pushed exactly; otherwise sorting, skipping and limiting happen in Rust.
//!
//! Not for: SQL text (the store spells it), or MongoDB command shapes.

use bson::raw::{RawBsonRef, RawDocument, RawDocumentBuf};
use bson::{Bson, Document};

use super::index_ranges::{comparison_range, equality_range, is_plain_value, KeyRange};
use super::sort::{SortDirection, SortSpec};
use crate::catalog::CollectionIndex;
use crate::query::filter::{FieldPredicate, Filter};
use crate::query::index::IndexDirection;
use crate::query::value::keys::encode_key;
use crate::store::{
    CollectionRecord, KeyOrder, PathValue, Predicate, ScanRequest, StoreError, StoreSession,
};

/// How one read will run.
#[derive(Clone, Debug)]
pub struct ReadPlan {
    /// What the store evaluates.
    pub scan: ScanRequest,
    /// The filter Rust re-checks, when the pushed predicate was not exact.
    pub residual: Option<Filter>,
    /// Sort done in Rust, when not pushed.
    pub sort: Option<SortSpec>,
    /// Skip and limit done in Rust, when not pushed.
    pub skip: u64,
    pub limit: Option<u64>,
}

impl ReadPlan {
    /// Plans a read of documents matching `filter`, ordered by `sort`, then skip and limit,
    /// over a collection with the given secondary indexes.
    pub fn new(
        filter: Filter,
        sort: Option<SortSpec>,
        skip: u64,
        limit: Option<u64>,
        indexes: &[CollectionIndex],
    ) -> ReadPlan {
        let (predicate, exact) = pushdown(&filter, indexes);
        // `{$natural: -1}` alone: storage order reversed, which Rust does after the scan.
        let reverse_natural = sort.as_ref().is_some_and(|spec| {
            spec.keys.is_empty() && spec.natural == Some(SortDirection::Descending)
        });
        let sort = sort.filter(|spec| !spec.keys.is_empty() || reverse_natural);
        let pushed_order = match &sort {
            None => Some(ScanOrder::Natural),
            Some(spec) => scan_order(spec, indexes),
        };
        match pushed_order {
            Some(order) if exact => {
                let (order, order_index) = match order {
                    ScanOrder::Natural => (None, None),
                    ScanOrder::Key(direction) => (Some(direction), None),
                    ScanOrder::Index(table, direction) => (Some(direction), Some(table)),
                };
                ReadPlan {
                    scan: ScanRequest {
                        filter: predicate,
                        order,
                        order_index,
                        skip,
                        limit,
                    },
                    residual: None,
                    sort: None,
                    skip: 0,
                    limit: None,
                }
            }
            _ => ReadPlan {
                scan: ScanRequest {
                    filter: predicate,
                    ..ScanRequest::all()
                },
                residual: if exact { None } else { Some(filter) },
                sort,
                skip,
                limit,
            },
        }
    }

    /// True when the store alone answers the read (no residual, sort, skip or limit in Rust).
    pub fn is_fully_pushed(&self) -> bool {
        self.residual.is_none() && self.sort.is_none() && self.skip == 0 && self.limit.is_none()
    }
}

/// An order the store can produce.
enum ScanOrder {
    Natural,
    Key(KeyOrder),
    /// The entries table of an index, walked in this direction.
    Index(String, KeyOrder),
}

/// A one-key sort the store can serve: `_id`, or the first field of an index in which
/// every document has exactly one key.
fn scan_order(spec: &SortSpec, indexes: &[CollectionIndex]) -> Option<ScanOrder> {
    let [(path, direction)] = spec.keys.as_slice() else {
        return None;
    };
    let ascending = matches!(direction, SortDirection::Ascending);
    if path == "_id" {
        return Some(ScanOrder::Key(if ascending {
            KeyOrder::Ascending
        } else {
            KeyOrder::Descending
        }));
    }
    let index = indexes.iter().find(|index| {
        !index.record.multikey && !index.spec.sparse && holds_every_match(index, path)
    })?;
    let index_ascending = matches!(index.spec.fields[0].1, IndexDirection::Ascending);
    let order = if ascending == index_ascending {
        KeyOrder::Ascending
    } else {
        KeyOrder::Descending
    };
    Some(ScanOrder::Index(index.record.table.clone(), order))
}

/// Translates a filter into a store predicate; the flag says whether it is exact.
pub fn pushdown(filter: &Filter, indexes: &[CollectionIndex]) -> (Predicate, bool) {
    match filter {
        Filter::And(parts) => {
            let mut pushed = Vec::new();
            let mut exact = true;
            for part in parts {
                let (predicate, part_exact) = pushdown(part, indexes);
                exact &= part_exact;
                if predicate != Predicate::True {
                    pushed.push(predicate);
                }
            }
            (conjunction(pushed), exact)
        }
        Filter::Or(branches) => {
            let mut pushed = Vec::new();
            let mut exact = true;
            for branch in branches {
                let (predicate, branch_exact) = pushdown(branch, indexes);
                if predicate == Predicate::True {
                    // One branch that selects everything makes the whole $or select everything.
                    return (
                        Predicate::True,
                        branch_exact && exact && branches.len() == 1,
                    );
                }
                exact &= branch_exact;
                pushed.push(predicate);
            }
            if pushed.is_empty() {
                return (Predicate::True, false);
            }
            (Predicate::Or(pushed), exact)
        }
        Filter::Field { path, predicates } => {
            let mut pushed = Vec::new();
            let mut exact = true;
            // On an index with one key per document, every bound on the field must hold for
            // that one key: the bounds intersect into a single index range.
            let (merged, rest) = merge_bounds(path, predicates, indexes);
            pushed.extend(merged);
            for predicate in rest {
                match field_predicate(path, predicate, indexes) {
                    Some((p, p_exact)) => {
                        exact &= p_exact;
                        pushed.push(p);
                    }
                    None => exact = false,
                }
            }
            if pushed.is_empty() {
                return (Predicate::True, false);
            }
            (conjunction(pushed), exact)
        }
        _ => (Predicate::True, false),
    }
}

/// Splits a field's conditions into one intersected index range for its comparisons (when
/// the usable index is not multikey: with arrays, different elements may satisfy different
/// bounds, so each bound must stay its own range) and the conditions left to push one by one.
fn merge_bounds<'a>(
    path: &str,
    predicates: &'a [FieldPredicate],
    indexes: &[CollectionIndex],
) -> (Option<Predicate>, Vec<&'a FieldPredicate>) {
    if path == "_id" {
        return merge_key_bounds(predicates);
    }
    let all: Vec<&FieldPredicate> = predicates.iter().collect();
    let Some(index) = indexes
        .iter()
        .filter(|index| holds_every_match(index, path))
        .min_by_key(|index| index.spec.fields.len())
    else {
        return (None, all);
    };
    if index.record.multikey {
        return (None, all);
    }
    let direction = index.spec.fields[0].1;
    let mut ranges = Vec::new();
    let mut rest = Vec::new();
    for predicate in predicates {
        let range = match predicate {
            FieldPredicate::Eq(value) => equality_range(value, direction),
            other => comparison_range(other, direction),
        };
        match range {
            Some(range) => ranges.push(range),
            None => rest.push(predicate),
        }
    }
    if ranges.len() < 2 {
        // Nothing to merge: push them one by one as before.
        return (None, all);
    }
    let merged = ranges.into_iter().reduce(intersect);
    let predicate = merged.map(|range| Predicate::IndexRange {
        table: index.record.table.clone(),
        lower: range.lower,
        upper: range.upper,
    });
    (predicate, rest)
}

/// `_id`'s comparisons as one range of the `_id` key (`_id` is never an array, so one key
/// per document holds every bound), and the conditions left to push one by one.
fn merge_key_bounds(predicates: &[FieldPredicate]) -> (Option<Predicate>, Vec<&FieldPredicate>) {
    let mut ranges = Vec::new();
    let mut rest = Vec::new();
    for predicate in predicates {
        match comparison_range(predicate, IndexDirection::Ascending) {
            Some(range) => ranges.push(range),
            None => rest.push(predicate),
        }
    }
    let merged = ranges
        .into_iter()
        .reduce(intersect)
        .map(|range| Predicate::KeyRange {
            lower: range.lower,
            upper: range.upper,
        });
    (merged, rest)
}

/// The keys both ranges hold: the higher lower bound and the lower upper bound (exclusive
/// wins a tie).
fn intersect(a: KeyRange, b: KeyRange) -> KeyRange {
    use crate::store::IndexBound;
    let tighter_lower = |x: Option<IndexBound>, y: Option<IndexBound>| match (x, y) {
        (Some(x), Some(y)) => Some(match x.key.cmp(&y.key) {
            std::cmp::Ordering::Greater => x,
            std::cmp::Ordering::Less => y,
            std::cmp::Ordering::Equal => IndexBound {
                key: x.key,
                inclusive: x.inclusive && y.inclusive,
            },
        }),
        (x, None) => x,
        (None, y) => y,
    };
    let tighter_upper = |x: Option<IndexBound>, y: Option<IndexBound>| match (x, y) {
        (Some(x), Some(y)) => Some(match x.key.cmp(&y.key) {
            std::cmp::Ordering::Less => x,
            std::cmp::Ordering::Greater => y,
            std::cmp::Ordering::Equal => IndexBound {
                key: x.key,
                inclusive: x.inclusive && y.inclusive,
            },
        }),
        (x, None) => x,
        (None, y) => y,
    };
    KeyRange {
        lower: tighter_lower(a.lower, b.lower),
        upper: tighter_upper(a.upper, b.upper),
    }
}

fn conjunction(mut parts: Vec<Predicate>) -> Predicate {
    match parts.len() {
        0 => Predicate::True,
        1 => parts.pop().unwrap_or(Predicate::True),
        _ => Predicate::And(parts),
    }
}

/// One field condition, if it can be pushed.
fn field_predicate(
    path: &str,
    predicate: &FieldPredicate,
    indexes: &[CollectionIndex],
) -> Option<(Predicate, bool)> {
    match predicate {
        FieldPredicate::Eq(value) if path == "_id" && is_plain_value(value) => {
            return Some((Predicate::KeyEquals(encode_key(value)), true));
        }
        FieldPredicate::In(values) if path == "_id" && values.iter().all(is_plain_value) => {
            let mut keys: Vec<Vec<u8>> = values.iter().map(encode_key).collect();
            keys.sort();
            keys.dedup();
            return Some((Predicate::KeyIn(keys), true));
        }
        _ => {}
    }
    if let Some(pushed) = index_predicate(path, predicate, indexes) {
        return Some((pushed, true));
    }
    match predicate {
        FieldPredicate::Eq(value) => {
            let value = path_value(value)?;
            let segments: Vec<String> = path.split('.').map(str::to_string).collect();
            if segments
                .iter()
                .any(|s| s.is_empty() || s.bytes().all(|b| b.is_ascii_digit()))
            {
                return None;
            }
            Some((
                Predicate::PathEquals {
                    path: segments,
                    value,
                },
                false,
            ))
        }
        _ => None,
    }
}

/// An index that leads with `path` and may answer for it: not partial (it would miss the
/// documents its filter leaves out) and not hidden (MongoDB never plans with those).
fn holds_every_match(index: &CollectionIndex, path: &str) -> bool {
    index.spec.partial_filter.is_none()
        && !index.spec.hidden()
        && index
            .spec
            .fields
            .first()
            .is_some_and(|(first, _)| first == path)
}

/// An exact index range for a condition on the first field of a usable index.
fn index_predicate(
    path: &str,
    predicate: &FieldPredicate,
    indexes: &[CollectionIndex],
) -> Option<Predicate> {
    // Partial and hidden indexes do not hold every matching document; sparse ones do for
    // these conditions (none of them matches a missing field). Prefer the narrowest index.
    let index = indexes
        .iter()
        .filter(|index| holds_every_match(index, path))
        .min_by_key(|index| index.spec.fields.len())?;
    let direction = index.spec.fields[0].1;
    let to_predicate = |range: KeyRange| Predicate::IndexRange {
        table: index.record.table.clone(),
        lower: range.lower,
        upper: range.upper,
    };
    match predicate {
        FieldPredicate::Eq(value) => equality_range(value, direction).map(to_predicate),
        FieldPredicate::In(values) if !values.is_empty() => {
            let ranges: Option<Vec<Predicate>> = values
                .iter()
                .map(|value| equality_range(value, direction).map(to_predicate))
                .collect();
            let mut ranges = ranges?;
            Some(if ranges.len() == 1 {
                ranges.remove(0)
            } else {
                Predicate::Or(ranges)
            })
        }
        other => comparison_range(other, direction).map(to_predicate),
    }
}

fn path_value(value: &Bson) -> Option<PathValue> {
    match value {
        Bson::String(s) => Some(PathValue::String(s.clone())),
        Bson::Int32(n) => Some(PathValue::Number(f64::from(*n))),
        Bson::Int64(n) if n.unsigned_abs() <= (1u64 << 53) => Some(PathValue::Number(*n as f64)),
        Bson::Double(n) if n.is_finite() => Some(PathValue::Number(*n)),
        Bson::Boolean(b) => Some(PathValue::Bool(*b)),
        _ => None,
    }
}

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

/// Rows up to which the Rust side of a plan without an `$expr` runs inline on the async
/// thread: below this a trip to the compute pool costs more than the work.
const INLINE_ROWS: usize = 256;

/// [`finish`] or [`finish_raw`].
type Finisher<T> = fn(Vec<Vec<u8>>, &ReadPlan) -> Result<Vec<T>, StoreError>;

/// Runs the Rust side of `plan` over `rows`: inline when it is small, on the compute pool
/// (`crate::compute`) otherwise, under the command's interrupt either way.
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
        return crate::compute::run_inline(|| finish(rows, plan));
    }
    let plan = plan.clone();
    crate::compute::run(move || finish(rows, &plan)).await
}

/// The residual filter, sort, skip and limit over the rows the store returned. Without a
/// sort in Rust, evaluation stops once skip plus limit documents matched.
pub fn finish(rows: Vec<Vec<u8>>, plan: &ReadPlan) -> Result<Vec<Document>, StoreError> {
    let enough = enough_matches(plan);
    let mut documents = Vec::with_capacity(rows.len().min(enough));
    for row in in_scan_order(rows, plan) {
        if documents.len() >= enough {
            break;
        }
        crate::interrupt::check()?;
        let document = decode_document(&row)?;
        if plan
            .residual
            .as_ref()
            .is_none_or(|filter| filter.matches(&document))
        {
            documents.push(document);
        }
    }
    crate::interrupt::check_now()?;
    if let Some(sort) = sort_in_rust(plan) {
        sort.sort(&mut documents);
    }
    Ok(skip_and_limit(documents, plan))
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
    }
    Ok(skip_and_limit(selected, plan))
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
fn raw_sort_key(raw: &RawDocument, sort: &SortSpec) -> Result<Vec<Bson>, StoreError> {
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

fn corrupt(error: bson::error::Error) -> StoreError {
    StoreError::Corrupt(error.to_string())
}

/// Counts what a filter matches: a SQL `COUNT` when the pushdown is exact.
pub async fn count(
    session: &mut dyn StoreSession,
    collection: &CollectionRecord,
    indexes: &[CollectionIndex],
    filter: Filter,
) -> Result<u64, StoreError> {
    let plan = ReadPlan::new(filter, None, 0, None, indexes);
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

    fn plan(filter: Document) -> (Predicate, bool) {
        pushdown(&Filter::parse(&filter).unwrap(), &[])
    }

    #[test]
    fn id_equality_is_exact() {
        let (predicate, exact) = plan(doc! {"_id": 5});
        assert_eq!(predicate, Predicate::KeyEquals(encode_key(&Bson::Int32(5))));
        assert!(exact);
        let (predicate, exact) = plan(doc! {"_id": {"$in": [1, 2, 1.0]}});
        assert!(matches!(predicate, Predicate::KeyIn(ref keys) if keys.len() == 2));
        assert!(exact);
    }

    #[test]
    fn id_comparisons_are_one_exact_key_range() {
        use crate::store::IndexBound;
        let bound = |value: Bson, inclusive: bool| IndexBound {
            key: encode_key(&value),
            inclusive,
        };
        let (predicate, exact) = plan(doc! {"_id": {"$gte": 10, "$lt": 20, "$gt": 5}});
        assert!(exact);
        assert_eq!(
            predicate,
            Predicate::KeyRange {
                lower: Some(bound(Bson::Int32(10), true)),
                upper: Some(bound(Bson::Int32(20), false)),
            }
        );
        // Type bracketing: `$gt: 5` starts after 5's key and stops before the first key of
        // the next type (strings).
        let (predicate, _) = plan(doc! {"_id": {"$gt": 5}});
        let Predicate::KeyRange {
            lower: Some(lower),
            upper: Some(upper),
        } = predicate
        else {
            panic!("not a bounded key range: {predicate:?}");
        };
        assert!(lower.key > encode_key(&Bson::Int32(5)));
        assert!(lower.key <= encode_key(&Bson::Double(5.000001)));
        assert!(upper.key <= encode_key(&Bson::String(String::new())));
        assert!(upper.key > encode_key(&Bson::Double(f64::INFINITY)));
        // With other conditions on `_id`, both are pushed.
        let (predicate, exact) = plan(doc! {"_id": {"$gt": 5, "$in": [7, 9]}});
        assert!(exact);
        assert!(
            matches!(&predicate, Predicate::And(parts) if parts.len() == 2),
            "{predicate:?}"
        );
        // NaN is matched by no comparison; left to Rust.
        assert!(!plan(doc! {"_id": {"$gt": f64::NAN}}).1);
    }

    #[test]
    fn field_equality_is_pushed_but_rechecked() {
        let (predicate, exact) = plan(doc! {"a.b": "x", "_id": 1});
        assert!(!exact);
        assert!(matches!(predicate, Predicate::And(ref parts) if parts.len() == 2));
    }

    #[test]
    fn unpushable_parts_over_select() {
        let (predicate, exact) = plan(doc! {"a": {"$gt": 1}});
        assert_eq!((predicate, exact), (Predicate::True, false));
        let (predicate, exact) = plan(doc! {"$or": [{"a": 1}, {"b": {"$gt": 1}}]});
        assert_eq!((predicate, exact), (Predicate::True, false));
        let (_, exact) = plan(doc! {"_id": null});
        assert!(!exact);
    }

    #[test]
    fn sort_on_id_with_limit_is_pushed_when_exact() {
        let filter = Filter::parse(&doc! {}).unwrap();
        let sort = SortSpec::parse(&doc! {"_id": -1}).unwrap();
        let read = ReadPlan::new(filter, Some(sort), 2, Some(3), &[]);
        assert_eq!(read.scan.order, Some(KeyOrder::Descending));
        assert_eq!((read.scan.skip, read.scan.limit), (2, Some(3)));
        assert!(read.is_fully_pushed());
    }

    #[test]
    fn other_sorts_stay_in_rust() {
        let filter = Filter::parse(&doc! {}).unwrap();
        let sort = SortSpec::parse(&doc! {"a": 1}).unwrap();
        let read = ReadPlan::new(filter, Some(sort), 1, Some(1), &[]);
        assert!(read.scan.limit.is_none() && read.sort.is_some() && read.limit == Some(1));
    }

    fn index(name: &str, key: Document, multikey: bool) -> CollectionIndex {
        let spec = crate::query::index::IndexSpec::parse(&doc! {"key": key, "name": name}).unwrap();
        let record = crate::store::IndexRecord {
            db: "d".into(),
            collection: "c".into(),
            name: name.into(),
            spec: spec.document.clone(),
            table: format!("t_{name}"),
            unique: false,
            multikey,
        };
        CollectionIndex { record, spec }
    }

    #[test]
    fn reverse_natural_order_is_done_after_the_scan() {
        let docs: Vec<Vec<u8>> = (0..3).map(|i| doc! {"_id": i}.to_vec().unwrap()).collect();
        let sort = SortSpec::parse(&doc! {"$natural": -1}).unwrap();
        let plan = ReadPlan::new(
            Filter::parse(&doc! {}).unwrap(),
            Some(sort),
            1,
            Some(1),
            &[],
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
                &[],
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

    #[test]
    fn two_bounds_on_a_single_key_index_are_one_range() {
        let filter = Filter::parse(&doc! {"b": {"$gte": 5, "$lt": 10}}).unwrap();
        let (predicate, exact) = pushdown(&filter, &[index("b_1", doc! {"b": 1}, false)]);
        assert!(exact);
        assert!(
            matches!(
                predicate,
                Predicate::IndexRange {
                    lower: Some(_),
                    upper: Some(_),
                    ..
                }
            ),
            "{predicate:?}"
        );
    }

    #[test]
    fn bounds_on_a_multikey_index_stay_separate() {
        let filter = Filter::parse(&doc! {"b": {"$gte": 5, "$lt": 10}}).unwrap();
        let (predicate, exact) = pushdown(&filter, &[index("b_1", doc! {"b": 1}, true)]);
        assert!(exact);
        assert!(
            matches!(predicate, Predicate::And(ref parts) if parts.len() == 2),
            "{predicate:?}"
        );
    }
}
