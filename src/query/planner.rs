//! The planner: splits a read (filter, sort, skip, limit) into a `ScanRequest` the store runs
//! in SQL and a residual the Rust evaluator checks (DESIGN.md invariant 2: pushdown may
//! over-select, never under-select). Running a plan is the core's (`ops/read.rs`).
//!
//! What is pushed:
//! - `_id` equality and `$in` — exact, served by the `_id` key index;
//! - equality, `$in` and comparisons on the first field of a secondary index — exact index
//!   ranges (see `index_ranges.rs`), served by the index's entries table;
//! - other equalities on string, number or boolean values — inexact: the SQL over-selects
//!   (through arrays) and the filter is re-checked in Rust.
//!
//! A sort on `_id`, or on the fields of a secondary index that is neither multikey, sparse,
//! partial nor hidden that follow the fields the filter fixes by equality (`{cat: "a"}` sorted
//! by `price` on `{cat: 1, price: -1}`), is pushed: together with skip and limit when the whole
//! filter was pushed exactly, else as the scan's order, with the residual filter, skip and
//! limit in Rust over rows that arrive sorted (so a cursor can stream them). Other sorts
//! happen in Rust after the scan.
//!
//! Under a non-simple collation SQL (which compares bytes) decides nothing that compares
//! strings: a condition whose operand holds a string (or MinKey/MaxKey, whose ranges span
//! strings) is left to the residual unless an index of the same collation serves it (on a
//! collection with a default collation, `_id` has one: its collated `_id` index), and only
//! such an index orders a pushed sort (one field or several, as without a collation) —
//! else the sort runs in Rust under the collator.
//!
//! Not for: SQL text (the store spells it), I/O of any kind, or MongoDB command shapes.

use bson::Bson;

use super::collated_pushdown::{compares_strings, without_string_comparisons};
use super::index_ranges::{comparison_range, equality_range, is_plain_value, KeyRange};
use super::scan::{IndexBound, KeyOrder, PathValue, Predicate, RangeSide, RangeValue, ScanRequest};
use super::sort::{SortDirection, SortSpec};
use crate::query::filter::{FieldPredicate, Filter};
use crate::query::index::{IndexDirection, IndexSpec};
use crate::query::value::collation::Collation;
use crate::query::value::keys::encode_key;

/// A secondary index as the planner needs to know it: its parsed specification, the
/// entries table the store scans for it, and whether some document has more than one key in
/// it. The catalog's `CollectionIndex` is one; the planner never looks anything up itself.
pub trait IndexCandidate {
    /// The parsed index specification (key fields, sparse, partial, hidden).
    fn spec(&self) -> &IndexSpec;
    /// The entries table of the index (`IndexRecord::table`), named in
    /// `Predicate::IndexRange` and `ScanRequest::order_index`.
    fn entries_table(&self) -> &str;
    /// Some document has had more than one key in the index (an array on an indexed path).
    fn is_multikey(&self) -> bool;
}

impl<T: IndexCandidate + ?Sized> IndexCandidate for &T {
    fn spec(&self) -> &IndexSpec {
        (**self).spec()
    }
    fn entries_table(&self) -> &str {
        (**self).entries_table()
    }
    fn is_multikey(&self) -> bool {
        (**self).is_multikey()
    }
}

/// What the store can do with a filter (DataFusion's `TableProviderFilterPushDown`):
/// evaluate it exactly, evaluate a predicate that may over-select (Rust re-checks the
/// filter), or nothing (every document is read and the filter checked in Rust).
#[derive(Clone, Debug, PartialEq)]
pub enum Pushdown {
    /// The predicate selects exactly the matching documents; no re-check.
    Exact(Predicate),
    /// The predicate selects every matching document and maybe more; Rust re-checks.
    Inexact(Predicate),
    /// Nothing can be pushed.
    Unsupported,
}

impl Pushdown {
    /// `predicate`, exact or over-selecting; an over-selecting `True` pushes nothing.
    fn of(predicate: Predicate, exact: bool) -> Pushdown {
        match (predicate, exact) {
            (predicate, true) => Pushdown::Exact(predicate),
            (Predicate::True, false) => Pushdown::Unsupported,
            (predicate, false) => Pushdown::Inexact(predicate),
        }
    }

    /// The predicate the store evaluates (`True` when nothing is pushed) and whether it is
    /// exact.
    pub fn into_parts(self) -> (Predicate, bool) {
        match self {
            Pushdown::Exact(predicate) => (predicate, true),
            Pushdown::Inexact(predicate) => (predicate, false),
            Pushdown::Unsupported => (Predicate::True, false),
        }
    }
}

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
    /// The collation the residual and the sort are evaluated under.
    pub collation: Collation,
    /// Each matching document carries its `$text` score (`query::text::TEXT_SCORE_FIELD`)
    /// for the projection or sort that asks for it; set by the caller.
    pub text_score: bool,
}

impl ReadPlan {
    /// Plans a read of documents matching `filter`, ordered by `sort`, then skip and limit,
    /// over a collection with the given secondary indexes.
    pub fn new<I: IndexCandidate>(
        filter: Filter,
        sort: Option<SortSpec>,
        skip: u64,
        limit: Option<u64>,
        indexes: &[I],
    ) -> ReadPlan {
        ReadPlan::collated(filter, sort, skip, limit, indexes, Collation::simple())
    }

    /// [`ReadPlan::new`] under `collation`: string comparisons and sorts stay in Rust.
    pub fn collated<I: IndexCandidate>(
        filter: Filter,
        sort: Option<SortSpec>,
        skip: u64,
        limit: Option<u64>,
        indexes: &[I],
        collation: Collation,
    ) -> ReadPlan {
        let mut filter = filter;
        bind_text_search(&mut filter, indexes);
        // A collated index's string keys are sort keys: a simple read cannot use it (a
        // collated read pushes no string condition, so any index serves its others).
        let usable: Vec<&I> = indexes
            .iter()
            .filter(|index| !collation.is_simple() || index.spec().collation().is_simple())
            .collect();
        let indexes = usable.as_slice();
        // Under a collation, the indexes whose keys are its sort keys.
        let same_collation: Vec<&I> = match collation.is_simple() {
            true => Vec::new(),
            false => indexes
                .iter()
                .copied()
                .filter(|index| index.spec().collation() == collation)
                .collect(),
        };
        // `{$natural: -1}` alone: storage order reversed, which Rust does after the scan.
        let reverse_natural = sort.as_ref().is_some_and(|spec| {
            spec.keys.is_empty() && spec.natural == Some(SortDirection::Descending)
        });
        let sort = sort.filter(|spec| !spec.keys.is_empty() || reverse_natural);
        // Only an index of the same collation orders strings as the collation does (the
        // primary key compares `_id`s by their bytes; a collection with a default collation
        // has a collated `_id` index for that).
        let ordering: &[&I] = match collation.is_simple() {
            true => indexes,
            false => same_collation.as_slice(),
        };
        let pushed_order = sort.as_ref().map_or(Some(ScanOrder::Natural), |spec| {
            scan_order(spec, &filter, ordering, collation.is_simple())
        });
        // The walked index leads with fields the filter fixes by equality: bound the walk by
        // them (a range of that same index) rather than by another index.
        let walked: Option<&[&I]> = match &pushed_order {
            Some(ScanOrder::Index {
                index,
                fixed_prefix: true,
                ..
            }) => Some(std::slice::from_ref(&ordering[*index])),
            _ => None,
        };
        let (predicate, exact) = if collation.is_simple() {
            pushdown(&filter, walked.unwrap_or(indexes)).into_parts()
        } else {
            // Paths an index of the same collation serves keep their string conditions,
            // pushed as ranges of its keys (computed under the collation); other indexes are
            // then left out, so no string bound meets keys of another collation.
            let candidates = match walked {
                Some(walked) => walked,
                None if same_collation.is_empty() => indexes,
                None => same_collation.as_slice(),
            };
            let collated_index_on = |path: &str| {
                candidates
                    .iter()
                    .any(|i| i.spec().collation() == collation && holds_every_match(i, path))
            };
            let (pushable, complete) = without_string_comparisons(&filter, &collated_index_on);
            let (predicate, exact) = collation
                .install(|| pushdown(&pushable, candidates))
                .into_parts();
            (predicate, exact && complete)
        };
        let order_pushed = pushed_order.is_some();
        let (order, order_index) = match pushed_order {
            None | Some(ScanOrder::Natural) => (None, None),
            Some(ScanOrder::Key(direction)) => (Some(direction), None),
            Some(ScanOrder::Index {
                index, direction, ..
            }) => (
                Some(direction),
                Some(ordering[index].entries_table().to_string()),
            ),
        };
        match order_pushed {
            true if exact => ReadPlan {
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
                collation,
                text_score: false,
            },
            // The store produces the order but not the filter: it walks in that order and
            // Rust keeps the matches, skips and limits, so no sort waits for the whole result.
            true => ReadPlan {
                scan: ScanRequest {
                    filter: predicate,
                    order,
                    order_index,
                    ..ScanRequest::all()
                },
                residual: Some(filter),
                sort: None,
                skip,
                limit,
                collation,
                text_score: false,
            },
            false => ReadPlan {
                scan: ScanRequest {
                    filter: predicate,
                    ..ScanRequest::all()
                },
                residual: if exact { None } else { Some(filter) },
                sort: sort.map(SortSpec::with_id_tie_break),
                skip,
                limit,
                collation,
                text_score: false,
            },
        }
    }

    /// True when the store alone answers the read (no residual, sort, skip or limit in Rust).
    pub fn is_fully_pushed(&self) -> bool {
        self.residual.is_none() && self.sort.is_none() && self.skip == 0 && self.limit.is_none()
    }
}

/// Binds the filter's `$text` search to the collection's text index (its fields, weights
/// and languages, and the table of its entries). Without one the search stays unbound and
/// matches nothing; the core answers IndexNotFound before planning such a read.
fn bind_text_search<I: IndexCandidate>(filter: &mut Filter, indexes: &[I]) {
    if filter.text_search().is_none() {
        return;
    }
    let found = indexes
        .iter()
        .find_map(|index| Some((index.spec().text.clone()?, index.entries_table())));
    if let Some((text, table)) = found {
        filter.bind_text(&mut |search| search.bind(text.clone(), table));
    }
}

/// An order the store can produce.
enum ScanOrder {
    Natural,
    Key(KeyOrder),
    /// The entries table of `indexes[index]`, walked in this direction; `fixed_prefix` when
    /// its leading fields are fixed by equalities of the filter.
    Index {
        index: usize,
        direction: KeyOrder,
        fixed_prefix: bool,
    },
}

/// A sort the store can serve by walking keys in order: `_id` alone, or the fields of an
/// index with exactly one key per document that follow those the filter fixes by equality —
/// `find({cat: "a"}).sort({price: -1})` walks `{cat: 1, price: -1}` from the first key of
/// `cat: "a"`, and `sort({cat: -1, price: 1})` walks it backwards. A sort key on a field the
/// filter fixes changes nothing when that index shows the field is never an array, so it is
/// skipped; when nothing else is sorted, the walk's `_id` order breaks the ties.
///
/// `primary_key_orders` says whether the primary key's order (`_id`s by their bytes) is the
/// order wanted; under a non-simple collation it is not, and a sort on `_id` walks the
/// collection's collated `_id` index when it has one.
fn scan_order<I: IndexCandidate>(
    spec: &SortSpec,
    filter: &Filter,
    indexes: &[I],
    primary_key_orders: bool,
) -> Option<ScanOrder> {
    let key_order = |ascending: bool| {
        if ascending {
            KeyOrder::Ascending
        } else {
            KeyOrder::Descending
        }
    };
    if let [(path, direction)] = spec.keys.as_slice() {
        if path == "_id" && primary_key_orders {
            return Some(ScanOrder::Key(key_order(matches!(
                direction,
                SortDirection::Ascending
            ))));
        }
    }
    let fixed = equality_fixed_paths(filter);
    indexes.iter().enumerate().find_map(|(position, index)| {
        let index_spec = index.spec();
        if index.is_multikey()
            || index_spec.text.is_some()
            || index_spec.sparse
            || index_spec.partial_filter.is_some()
            || index_spec.hidden()
        {
            return None;
        }
        let fields = &index_spec.fields;
        let prefix = fields
            .iter()
            .take_while(|(field, _)| fixed.contains(&field.as_str()))
            .count();
        let constant = |path: &str| fields[..prefix].iter().any(|(field, _)| field == path);
        let mut next = prefix;
        let mut forward = None;
        for (path, direction) in &spec.keys {
            if constant(path) {
                continue;
            }
            let (field, index_direction) = fields.get(next)?;
            let same = matches!(direction, SortDirection::Ascending)
                == matches!(index_direction, IndexDirection::Ascending);
            if field != path || *forward.get_or_insert(same) != same {
                return None;
            }
            next += 1;
        }
        Some(ScanOrder::Index {
            index: position,
            direction: key_order(forward.unwrap_or(true)),
            fixed_prefix: prefix > 0,
        })
    })
}

/// The paths a filter fixes to one plain value by a top-level equality (`{cat: "a"}`, or
/// inside a top-level `$and`): every match has the same key there.
fn equality_fixed_paths(filter: &Filter) -> Vec<&str> {
    match filter {
        Filter::And(parts) => parts.iter().flat_map(equality_fixed_paths).collect(),
        Filter::Field { path, predicates } => {
            let fixed = predicates.iter().any(
                |predicate| matches!(predicate, FieldPredicate::Eq(value) if is_plain_value(value)),
            );
            if fixed {
                vec![path.as_str()]
            } else {
                Vec::new()
            }
        }
        _ => Vec::new(),
    }
}

/// Translates a filter into what the store can evaluate of it.
pub fn pushdown<I: IndexCandidate>(filter: &Filter, indexes: &[I]) -> Pushdown {
    match filter {
        Filter::And(parts) => {
            let mut pushed = Vec::new();
            let mut exact = true;
            for part in parts {
                match pushdown(part, indexes) {
                    Pushdown::Exact(predicate) => pushed.push(predicate),
                    Pushdown::Inexact(predicate) => {
                        exact = false;
                        pushed.push(predicate);
                    }
                    Pushdown::Unsupported => exact = false,
                }
            }
            pushed.retain(|predicate| *predicate != Predicate::True);
            Pushdown::of(conjunction(pushed), exact)
        }
        Filter::Or(branches) => {
            let mut pushed = Vec::new();
            let mut exact = true;
            for branch in branches {
                let predicate = match pushdown(branch, indexes) {
                    // One branch that selects everything makes the whole $or select
                    // everything.
                    Pushdown::Exact(Predicate::True) if branches.len() == 1 => {
                        return Pushdown::Exact(Predicate::True);
                    }
                    Pushdown::Exact(Predicate::True)
                    | Pushdown::Inexact(Predicate::True)
                    | Pushdown::Unsupported => return Pushdown::Unsupported,
                    Pushdown::Exact(predicate) => predicate,
                    Pushdown::Inexact(predicate) => {
                        exact = false;
                        predicate
                    }
                };
                pushed.push(predicate);
            }
            if pushed.is_empty() {
                return Pushdown::Unsupported;
            }
            Pushdown::of(Predicate::Or(pushed), exact)
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
                    Pushdown::Exact(p) => pushed.push(p),
                    Pushdown::Inexact(p) => {
                        exact = false;
                        pushed.push(p);
                    }
                    Pushdown::Unsupported => exact = false,
                }
            }
            if pushed.is_empty() {
                return Pushdown::Unsupported;
            }
            Pushdown::of(conjunction(pushed), exact)
        }
        // The engine finds the documents holding one of the search's terms; phrases,
        // negations and the sensitive forms are re-checked in Rust.
        Filter::Text(search) => match search.table() {
            Some(table) => Pushdown::Inexact(Predicate::TextTerms {
                table: table.to_string(),
                tokens: search.engine_tokens(),
            }),
            None => Pushdown::Unsupported,
        },
        _ => Pushdown::Unsupported,
    }
}

/// Splits a field's conditions into one intersected index range for its comparisons (when
/// the usable index is not multikey: with arrays, different elements may satisfy different
/// bounds, so each bound must stay its own range) and the conditions left to push one by one.
fn merge_bounds<'a, I: IndexCandidate>(
    path: &str,
    predicates: &'a [FieldPredicate],
    indexes: &[I],
) -> (Option<Predicate>, Vec<&'a FieldPredicate>) {
    if path == "_id" && predicates.iter().all(primary_key_decides) {
        return merge_key_bounds(predicates);
    }
    let all: Vec<&FieldPredicate> = predicates.iter().collect();
    let Some(index) = indexes
        .iter()
        .filter(|index| holds_every_match(index, path))
        .min_by_key(|index| index.spec().fields.len())
    else {
        return (None, all);
    };
    if index.is_multikey() {
        return (None, all);
    }
    let direction = index.spec().fields[0].1;
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
        table: index.entries_table().to_string(),
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

/// What can be pushed of one field condition.
fn field_predicate<I: IndexCandidate>(
    path: &str,
    predicate: &FieldPredicate,
    indexes: &[I],
) -> Pushdown {
    let on_primary_key = path == "_id" && primary_key_decides(predicate);
    match predicate {
        FieldPredicate::Eq(value) if on_primary_key && is_plain_value(value) => {
            return Pushdown::Exact(Predicate::KeyEquals(encode_key(value)));
        }
        FieldPredicate::In(values) if on_primary_key && values.iter().all(is_plain_value) => {
            let mut keys: Vec<Vec<u8>> = values.iter().map(encode_key).collect();
            keys.sort();
            keys.dedup();
            return Pushdown::Exact(Predicate::KeyIn(keys));
        }
        _ => {}
    }
    if let Some(pushed) = index_predicate(path, predicate, indexes) {
        return Pushdown::Exact(pushed);
    }
    let segments: Vec<String> = path.split('.').map(str::to_string).collect();
    if segments
        .iter()
        .any(|s| s.is_empty() || s.bytes().all(|b| b.is_ascii_digit()))
    {
        return Pushdown::Unsupported;
    }
    let (side, bound) = match predicate {
        FieldPredicate::Eq(value) => {
            return match path_value(value) {
                Some(value) => Pushdown::Inexact(Predicate::PathEquals {
                    path: segments,
                    value,
                }),
                None => Pushdown::Unsupported,
            };
        }
        FieldPredicate::Gt(value) | FieldPredicate::Gte(value) => (RangeSide::AtLeast, value),
        FieldPredicate::Lt(value) | FieldPredicate::Lte(value) => (RangeSide::AtMost, value),
        _ => return Pushdown::Unsupported,
    };
    match range_value(bound) {
        Some(value) => Pushdown::Inexact(Predicate::PathRange {
            path: segments,
            side,
            value,
        }),
        None => Pushdown::Unsupported,
    }
}

/// A comparison operand the image compares exactly: a finite number an image number holds
/// exactly (longs within 2^53), or a date.
fn range_value(value: &Bson) -> Option<RangeValue> {
    match value {
        Bson::Int32(n) => Some(RangeValue::Number(f64::from(*n))),
        Bson::Int64(n) if n.unsigned_abs() <= (1u64 << 53) => Some(RangeValue::Number(*n as f64)),
        Bson::Double(n) if n.is_finite() => Some(RangeValue::Number(*n)),
        Bson::DateTime(date) => Some(RangeValue::Date(date.timestamp_millis())),
        _ => None,
    }
}

/// Whether the primary key (`_id` keys compared by their bytes) decides a condition on
/// `_id`: always without a collation; under one (installed while the collated branch of the
/// planner pushes) only when the condition compares no string — such a condition goes to
/// the collection's collated `_id` index, or stays in the residual.
fn primary_key_decides(predicate: &FieldPredicate) -> bool {
    !crate::query::value::collation::is_installed() || !compares_strings(predicate)
}

/// An index that leads with `path` and may answer for it: not partial (it would miss the
/// documents its filter leaves out) and not hidden (MongoDB never plans with those).
fn holds_every_match(index: &impl IndexCandidate, path: &str) -> bool {
    index.spec().partial_filter.is_none()
        && !index.spec().hidden()
        && index
            .spec()
            .fields
            .first()
            .is_some_and(|(first, _)| first == path)
}

/// An exact index range for a condition on the first field of a usable index.
fn index_predicate<I: IndexCandidate>(
    path: &str,
    predicate: &FieldPredicate,
    indexes: &[I],
) -> Option<Predicate> {
    // Partial and hidden indexes do not hold every matching document; sparse ones do for
    // these conditions (none of them matches a missing field). Prefer the narrowest index.
    let index = indexes
        .iter()
        .filter(|index| holds_every_match(index, path))
        .min_by_key(|index| index.spec().fields.len())?;
    let direction = index.spec().fields[0].1;
    let to_predicate = |range: KeyRange| Predicate::IndexRange {
        table: index.entries_table().to_string(),
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

#[cfg(test)]
#[path = "planner_tests.rs"]
mod tests;
