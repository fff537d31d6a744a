//! `$setWindowFields`: parsing `{partitionBy, sortBy, output}`, ordering the input by
//! partition then `sortBy`, and computing each output over its window — `documents: [lo, hi]`
//! or `range: [lo, hi]` with an optional date `unit` — with MongoDB's parse errors (the
//! window function table of `jstests/aggregation/sources/setWindowFields`). The accumulators
//! ($sum, $avg, $push, $topN, …) are `$group`'s own (`accumulators.rs`). Past the command's
//! memory limit the stage goes through [`WindowInput`] (`window_stream.rs`).
//!
//! Not for: the window-only functions ($rank, $shift, $derivative, $integral,
//! $expMovingAvg, the covariances, $locf, $linearFill), which are in `window_functions.rs`;
//! input that does not fit in memory (`window_stream.rs`).

use super::accumulators::{feed, AccumulatorSpec};
use super::reshape::set_dotted;
use super::window_functions::{self, WindowFunction};
use super::window_stream::WindowInput;
use crate::query::error::QueryError;
use crate::query::expr::ops::date::DateOperator;
use crate::query::expr::ops::{date_math, type_name};
use crate::query::expr::Expression;
use crate::query::sort::{SortDirection, SortSpec};
use crate::query::value::compare::compare_values;
use crate::query::value::number::{arithmetic, Arithmetic, Number};
use bson::{Bson, Document};
use std::cmp::Ordering;

/// A parsed `$setWindowFields`.
#[derive(Clone, Debug, PartialEq)]
pub struct SetWindowFields {
    /// `partitionBy`, when given.
    pub partition_by: Option<Expression>,
    /// `sortBy`, when given.
    pub sort_by: Option<SortSpec>,
    /// The `output` fields in order.
    pub outputs: Vec<WindowOutput>,
}

/// One `field: {$fn: arg, window: {…}}` of `output`.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowOutput {
    /// The (possibly dotted) output field.
    pub field: String,
    /// What is computed.
    pub function: WindowFunction,
    /// Over which documents (the whole partition when no `window` was given).
    pub window: Window,
}

/// The documents a window function sees, relative to the current one.
#[derive(Clone, Debug, PartialEq)]
pub enum Window {
    /// No `window`: the whole partition.
    Partition,
    /// `documents: [lo, hi]`: positions relative to the current document (`None` = unbounded).
    Documents(Option<i64>, Option<i64>),
    /// `range: [lo, hi]` of the `sortBy` value, with an optional date `unit`.
    Range {
        /// Lower bound.
        lower: RangeBound,
        /// Upper bound.
        upper: RangeBound,
        /// `unit` for date `sortBy` values.
        unit: Option<String>,
    },
}

/// One bound of a range window.
#[derive(Clone, Debug, PartialEq)]
pub enum RangeBound {
    /// "unbounded"
    Unbounded,
    /// "current": the current document's value.
    Current,
    /// A number added to the current value.
    Offset(Box<Bson>),
}

fn failed(message: impl Into<String>) -> QueryError {
    QueryError::failed_to_parse(message)
}

/// Parses the `$setWindowFields` specification.
pub fn parse_set_window_fields(spec: &Bson) -> Result<SetWindowFields, QueryError> {
    let Bson::Document(d) = spec else {
        return Err(failed(
            "the $setWindowFields stage specification must be an object",
        ));
    };
    for key in d.keys() {
        if !matches!(key.as_str(), "partitionBy" | "sortBy" | "output") {
            return Err(QueryError::location(
                40415,
                format!("BSON field '$setWindowFields.{key}' is an unknown field."),
            ));
        }
    }
    let partition_by = match d.get("partitionBy") {
        None => None,
        Some(value) => {
            let expression = Expression::parse(value)?;
            if let Some(Bson::Array(_)) = expression.as_literal() {
                return Err(partition_by_array());
            }
            Some(expression)
        }
    };
    let sort_by = match d.get("sortBy") {
        None => None,
        Some(Bson::Document(s)) => Some(SortSpec::parse(s)?),
        Some(other) => {
            return Err(QueryError::type_mismatch(format!(
            "BSON field '$setWindowFields.sortBy' is the wrong type '{}', expected type 'object'",
            type_name(Some(other))
        )))
        }
    };
    let output = match d.get("output") {
        Some(Bson::Document(o)) => o,
        Some(other) => {
            return Err(QueryError::type_mismatch(format!(
            "BSON field '$setWindowFields.output' is the wrong type '{}', expected type 'object'",
            type_name(Some(other))
        )))
        }
        None => {
            return Err(QueryError::location(
                40414,
                "BSON field '$setWindowFields.output' is missing but a required field",
            ))
        }
    };
    let mut outputs = Vec::with_capacity(output.len());
    for (field, value) in output {
        if field.starts_with('$') {
            return Err(QueryError::location(
                16410,
                format!("FieldPath field names may not start with '$'. ({field})"),
            ));
        }
        outputs.push(parse_output(field, value, sort_by.as_ref())?);
    }
    Ok(SetWindowFields {
        partition_by,
        sort_by,
        outputs,
    })
}

fn partition_by_array() -> QueryError {
    QueryError::type_mismatch(
        "An expression used to partition cannot evaluate to value of type array",
    )
}

fn parse_output(
    field: &str,
    value: &Bson,
    sort_by: Option<&SortSpec>,
) -> Result<WindowOutput, QueryError> {
    let Bson::Document(d) = value else {
        return Err(failed(format!(
            "Window function found an unknown argument for '{field}': expected an object"
        )));
    };
    let mut function_entry = None;
    let mut window_spec = None;
    for (name, arg) in d {
        if name == "window" {
            window_spec = Some(arg);
        } else if name.starts_with('$') && function_entry.is_none() {
            function_entry = Some((name.as_str(), arg));
        } else {
            return Err(failed(format!(
                "Window function found an unknown argument: {name}"
            )));
        }
    }
    let Some((name, arg)) = function_entry else {
        return Err(failed(format!(
            "Expected a $-prefixed window function for the output field '{field}'"
        )));
    };
    let window = match window_spec {
        None => None,
        Some(w) => Some(parse_window(w)?),
    };
    let function = window_functions::parse(field, name, arg, window.is_some(), sort_by)?;
    if let Some(w) = &window {
        check_window_sort(w, sort_by)?;
    }
    Ok(WindowOutput {
        field: field.to_string(),
        function,
        window: window.unwrap_or(Window::Partition),
    })
}

/// Document windows other than the whole partition need a `sortBy`, range windows one on a
/// single field.
fn check_window_sort(window: &Window, sort_by: Option<&SortSpec>) -> Result<(), QueryError> {
    match window {
        Window::Partition | Window::Documents(None, None) => Ok(()),
        Window::Documents(..) if sort_by.is_none() => Err(QueryError::location(
            5339901,
            "Document-based bounds require a sortBy",
        )),
        Window::Range {
            lower: RangeBound::Unbounded,
            upper: RangeBound::Unbounded,
            unit: None,
        } => Ok(()),
        Window::Range { .. } if sort_by.map(|s| s.keys.len()) != Some(1) => Err(
            QueryError::location(5339902, "Range-based bounds require sortBy a single field"),
        ),
        // MongoDB measures a range along ascending values only (and says so since 8.0;
        // before, a descending sortBy gave windows that held no document).
        Window::Range { .. }
            if sort_by.is_some_and(|s| s.keys[0].1 == SortDirection::Descending) =>
        {
            Err(QueryError::location(
                8947401,
                "Range-based bounds require an ascending sortBy",
            ))
        }
        _ => Ok(()),
    }
}

fn parse_window(spec: &Bson) -> Result<Window, QueryError> {
    let Bson::Document(d) = spec else {
        return Err(failed("'window' field must be an object"));
    };
    let documents = d.get("documents");
    let range = d.get("range");
    let unit = d.get("unit");
    for key in d.keys() {
        if !matches!(key.as_str(), "documents" | "range" | "unit") {
            return Err(failed(format!(
                "'window' field can only contain 'documents' as the only argument or 'range' with an optional 'unit' field; found {key}"
            )));
        }
    }
    match (documents, range) {
        (Some(_), Some(_)) => Err(failed(
            "Window bounds can specify either 'documents' or 'unit', not both",
        )),
        (None, None) => Err(failed(
            "'window' field must specify either 'documents' or 'range'",
        )),
        (Some(bounds), None) => {
            if unit.is_some() {
                return Err(failed(
                    "Window bounds can specify either 'documents' or 'unit', not both",
                ));
            }
            let (lo, hi) = two_bounds(bounds, "documents")?;
            let lo = document_bound(lo)?;
            let hi = document_bound(hi)?;
            if let (Some(l), Some(h)) = (lo, hi) {
                if l > h {
                    return Err(lower_exceeds_upper(bounds));
                }
            }
            Ok(Window::Documents(lo, hi))
        }
        (None, Some(bounds)) => {
            let unit = match unit {
                None => None,
                Some(Bson::String(u)) => {
                    if !matches!(
                        u.as_str(),
                        "year"
                            | "quarter"
                            | "month"
                            | "week"
                            | "day"
                            | "hour"
                            | "minute"
                            | "second"
                            | "millisecond"
                    ) {
                        return Err(failed(format!("unknown time unit value: {u}")));
                    }
                    Some(u.clone())
                }
                Some(_) => return Err(failed("'unit' must be a string")),
            };
            let (lo, hi) = two_bounds(bounds, "range")?;
            let lower = range_bound(lo, unit.is_some())?;
            let upper = range_bound(hi, unit.is_some())?;
            let order = match (&lower, &upper) {
                (RangeBound::Offset(l), RangeBound::Offset(h)) => compare_values(l, h),
                (RangeBound::Offset(l), RangeBound::Current) => compare_values(l, &Bson::Int32(0)),
                (RangeBound::Current, RangeBound::Offset(h)) => compare_values(&Bson::Int32(0), h),
                (_, RangeBound::Unbounded) | (RangeBound::Unbounded, _) => Ordering::Less,
                (RangeBound::Current, RangeBound::Current) => Ordering::Equal,
            };
            if order == Ordering::Greater {
                return Err(lower_exceeds_upper(bounds));
            }
            Ok(Window::Range { lower, upper, unit })
        }
    }
}

fn lower_exceeds_upper(bounds: &Bson) -> QueryError {
    QueryError::location(
        5339900,
        format!("Lower bound must not exceed upper bound: {bounds}"),
    )
}

fn two_bounds<'a>(bounds: &'a Bson, what: &str) -> Result<(&'a Bson, &'a Bson), QueryError> {
    match bounds {
        Bson::Array(items) if items.len() == 2 => Ok((&items[0], &items[1])),
        _ => Err(failed(format!(
            "Window bounds must be a 2-element array: {what}: {bounds}"
        ))),
    }
}

fn document_bound(bound: &Bson) -> Result<Option<i64>, QueryError> {
    match bound {
        Bson::String(s) if s == "unbounded" => Ok(None),
        Bson::String(s) if s == "current" => Ok(Some(0)),
        other => Number::from_bson(other)
            .and_then(Number::to_exact_i64)
            .map(Some)
            .ok_or_else(|| {
                failed(format!(
                    "Numeric document-based bounds must be an integer: {other}"
                ))
            }),
    }
}

fn range_bound(bound: &Bson, with_unit: bool) -> Result<RangeBound, QueryError> {
    match bound {
        Bson::String(s) if s == "unbounded" => Ok(RangeBound::Unbounded),
        Bson::String(s) if s == "current" => Ok(RangeBound::Current),
        other => match Number::from_bson(other) {
            Some(n) if with_unit && n.to_exact_i64().is_none() => Err(failed(format!(
                "With 'unit', range-based bounds must be an integer: {other}"
            ))),
            Some(_) => Ok(RangeBound::Offset(Box::new(other.clone()))),
            None => Err(failed(format!(
                "Range-based bounds expression must be a number: {other}"
            ))),
        },
    }
}

/// Runs `$setWindowFields`: the documents ordered by partition and `sortBy`, each with its
/// outputs set. Input past the command's memory limit goes through [`WindowInput`]: sorted
/// runs on disk, windowed one partition at a time as the merge goes by (292 when the command
/// refused disk use). Each document moves from the input to the output, so the stage never
/// holds two copies of it.
pub fn run_set_window_fields(
    stage: &SetWindowFields,
    docs: Vec<Document>,
) -> Result<Vec<Document>, QueryError> {
    let limit = crate::interrupt::blocking_memory().map(|memory| memory.bytes);
    let held = limit.map(|_| crate::query::memory::documents_size(&docs));
    if limit.zip(held).is_some_and(|(limit, held)| held > limit) {
        return window_through_runs(stage, docs);
    }
    let orders = stage.partition_by.is_some() || stage.sort_by.is_some();
    let mut keyed = Vec::with_capacity(docs.len());
    for doc in docs {
        crate::interrupt::check()?;
        let (partition, sort_keys) = window_keys(stage, &doc)?;
        keyed.push((partition, sort_keys, doc));
    }
    if orders {
        keyed.sort_by(|(pa, ka, _), (pb, kb, _)| {
            compare_values(pa, pb).then_with(|| match &stage.sort_by {
                Some(s) => s.compare_keys(ka, kb),
                None => Ordering::Equal,
            })
        });
    }
    let mut out = Vec::with_capacity(keyed.len());
    let mut partition = Vec::new();
    for row in keyed {
        if partition
            .first()
            .is_some_and(|(current, _, _): &WindowRow| !compare_values(current, &row.0).is_eq())
        {
            window_partition(stage, std::mem::take(&mut partition), &mut out)?;
        }
        partition.push(row);
    }
    window_partition(stage, partition, &mut out)?;
    Ok(out)
}

/// One input document in window order: its partition, its `sortBy` keys, and itself.
pub(super) type WindowRow = (Bson, Vec<Bson>, Document);

/// A document's partition (null without `partitionBy`) and `sortBy` keys.
pub(super) fn window_keys(
    stage: &SetWindowFields,
    doc: &Document,
) -> Result<(Bson, Vec<Bson>), QueryError> {
    let partition = match &stage.partition_by {
        None => Bson::Null,
        Some(e) => match e.evaluate_optional(doc)? {
            Some(Bson::Array(_)) => return Err(partition_by_array()),
            Some(v) => v,
            None => Bson::Null,
        },
    };
    let sort_keys = stage
        .sort_by
        .as_ref()
        .map(|s| s.keys_of(doc))
        .unwrap_or_default();
    Ok((partition, sort_keys))
}

/// [`run_set_window_fields`] past the limit: through [`WindowInput`], which orders the
/// documents through sorted runs on disk and windows one partition at a time as the merge
/// goes by (a partition past the limit spooled to disk when its outputs read only some
/// fields).
fn window_through_runs(
    stage: &SetWindowFields,
    docs: Vec<Document>,
) -> Result<Vec<Document>, QueryError> {
    let mut input = WindowInput::new(std::sync::Arc::new(stage.clone()));
    for doc in docs {
        crate::interrupt::check()?;
        let bytes = doc
            .to_vec()
            .map_err(|error| QueryError::bad_value(format!("cannot encode a document: {error}")))?;
        input.push(&doc, bytes)?;
    }
    let mut windowed = input.finish()?;
    let mut out = Vec::new();
    while let Some(doc) = windowed.next_document()? {
        out.push(doc);
    }
    Ok(out)
}

/// Sets the outputs of one partition's documents (in window order) and moves them to `out`.
fn window_partition(
    stage: &SetWindowFields,
    rows: Vec<WindowRow>,
    out: &mut Vec<Document>,
) -> Result<(), QueryError> {
    let mut columns = window_columns(stage, &rows)?;
    for (_, _, mut doc) in rows {
        set_outputs(stage, &mut doc, &mut columns);
        out.push(doc);
    }
    Ok(())
}

/// Each output's values over one partition's rows (in window order), to be handed to the
/// documents in that order by [`set_outputs`].
pub(super) fn window_columns(
    stage: &SetWindowFields,
    rows: &[WindowRow],
) -> Result<Vec<std::vec::IntoIter<Bson>>, QueryError> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let sort_values = rows
        .iter()
        .map(|(_, k, _)| k.first().cloned().unwrap_or(Bson::Null))
        .collect();
    let docs = PartitionDocs::Decoded(rows.iter().map(|(_, _, d)| d).collect());
    columns_of(stage, &Partition { docs, sort_values })
}

/// Each output's values over `partition`, one column per output.
pub(super) fn columns_of(
    stage: &SetWindowFields,
    partition: &Partition<'_>,
) -> Result<Vec<std::vec::IntoIter<Bson>>, QueryError> {
    let mut columns = Vec::with_capacity(stage.outputs.len());
    for output in &stage.outputs {
        columns.push(compute(output, partition)?.into_iter());
    }
    Ok(columns)
}

/// Sets `doc`'s outputs to the next value of each of its partition's columns.
pub(super) fn set_outputs(
    stage: &SetWindowFields,
    doc: &mut Document,
    columns: &mut [std::vec::IntoIter<Bson>],
) {
    for (output, column) in stage.outputs.iter().zip(columns) {
        set_dotted(doc, &output.field, column.next());
    }
}

/// The documents of one partition in window order, with the first `sortBy` key of each.
pub(super) struct Partition<'a> {
    /// The documents in window order.
    pub docs: PartitionDocs<'a>,
    /// The first `sortBy` key of each document (ascending wherever a range window reads
    /// them: a descending one is refused at parse time).
    pub sort_values: Vec<Bson>,
}

/// The documents of a partition as the window functions read them.
pub(super) enum PartitionDocs<'a> {
    /// Decoded.
    Decoded(Vec<&'a Document>),
    /// BSON bytes, decoded as they are read: what a partition spooled past the memory limit
    /// keeps of each document (`window_stream.rs`), about a tenth of a decoded one's memory.
    Raw(&'a [bson::RawDocumentBuf]),
}

impl PartitionDocs<'_> {
    /// How many documents.
    pub(super) fn len(&self) -> usize {
        match self {
            PartitionDocs::Decoded(docs) => docs.len(),
            PartitionDocs::Raw(docs) => docs.len(),
        }
    }

    /// The document at `at`.
    pub(super) fn get(&self, at: usize) -> Result<std::borrow::Cow<'_, Document>, QueryError> {
        match self {
            PartitionDocs::Decoded(docs) => Ok(std::borrow::Cow::Borrowed(docs[at])),
            PartitionDocs::Raw(docs) => Document::try_from(docs[at].as_ref())
                .map(std::borrow::Cow::Owned)
                .map_err(|error| {
                    QueryError::bad_value(format!("cannot decode a document: {error}"))
                }),
        }
    }
}

/// One output's values, one per document of the partition.
fn compute(output: &WindowOutput, partition: &Partition<'_>) -> Result<Vec<Bson>, QueryError> {
    match &output.function {
        WindowFunction::Accumulate(spec) => accumulate(spec, &output.window, partition),
        other => window_functions::compute(other, &output.window, partition),
    }
}

/// `[first, last]` rows of the window of `row` (empty when `first > last`).
pub(super) fn window_rows(
    window: &Window,
    row: usize,
    partition: &Partition<'_>,
) -> Result<(usize, usize, bool), QueryError> {
    let n = partition.docs.len() as i64;
    let row_i = row as i64;
    let (lo, hi) = match window {
        Window::Partition => (0, n - 1),
        Window::Documents(lo, hi) => (
            lo.map(|l| row_i.saturating_add(l)).unwrap_or(0).max(0),
            hi.map(|h| row_i.saturating_add(h))
                .unwrap_or(n - 1)
                .min(n - 1),
        ),
        Window::Range { lower, upper, unit } => {
            let current = &partition.sort_values[row];
            check_range_value(current, unit.is_some())?;
            let lo = match lower {
                RangeBound::Unbounded => 0,
                bound => {
                    let limit = shifted(current, bound, unit.as_deref())?;
                    partition
                        .sort_values
                        .partition_point(|v| compare_values(v, &limit).is_lt())
                        as i64
                }
            };
            let hi = match upper {
                RangeBound::Unbounded => n - 1,
                bound => {
                    let limit = shifted(current, bound, unit.as_deref())?;
                    partition
                        .sort_values
                        .partition_point(|v| compare_values(v, &limit).is_le())
                        as i64
                        - 1
                }
            };
            (lo, hi)
        }
    };
    if lo > hi || hi < 0 {
        return Ok((0, 0, false));
    }
    Ok((lo as usize, hi as usize, true))
}

fn check_range_value(value: &Bson, with_unit: bool) -> Result<(), QueryError> {
    match (with_unit, value) {
        (true, Bson::DateTime(_)) => Ok(()),
        (true, other) => Err(QueryError::location(
            5429513,
            format!(
                "Invalid range: Expected the sortBy field to be a Date, but it was {}",
                type_name(Some(other))
            ),
        )),
        (false, other) if Number::from_bson(other).is_some() => Ok(()),
        (false, other) => Err(QueryError::location(
            5429414,
            format!(
                "Invalid range: Expected the sortBy field to be a number, but it was {}",
                type_name(Some(other))
            ),
        )),
    }
}

/// The current value moved by a bound (a number added, or a date moved by `unit`s).
fn shifted(current: &Bson, bound: &RangeBound, unit: Option<&str>) -> Result<Bson, QueryError> {
    let offset = match bound {
        RangeBound::Offset(o) => Bson::clone(o),
        _ => return Ok(current.clone()),
    };
    match unit {
        Some(unit) => {
            let amount = Number::from_bson(&offset)
                .and_then(Number::to_exact_i64)
                .unwrap_or(0);
            let moved = date_math::apply(
                DateOperator::DateAdd,
                &[
                    Some(current.clone()),
                    Some(Bson::String(unit.to_string())),
                    Some(Bson::Int64(amount)),
                    None,
                ],
            )?;
            Ok(moved.unwrap_or(Bson::Null))
        }
        None => {
            Ok(arithmetic(Arithmetic::Add, current, &offset).unwrap_or_else(|| current.clone()))
        }
    }
}

/// A `$group` accumulator over each document's window. Windows whose lower bound is
/// unbounded grow monotonically, so one running state serves the whole partition.
fn accumulate(
    spec: &AccumulatorSpec,
    window: &Window,
    partition: &Partition<'_>,
) -> Result<Vec<Bson>, QueryError> {
    let n = partition.docs.len();
    let specs = std::slice::from_ref(spec);
    let running = match window {
        Window::Partition => true,
        Window::Documents(lo, _) => lo.is_none(),
        Window::Range { lower, .. } => *lower == RangeBound::Unbounded,
    };
    let mut out = Vec::with_capacity(n);
    if running {
        let mut state = vec![spec.new_state()];
        let mut fed = 0;
        let mut whole = None;
        for row in 0..n {
            crate::interrupt::check()?;
            if let (Window::Partition, Some(value)) = (window, &whole) {
                out.push(Bson::clone(value));
                continue;
            }
            let (_, hi, any) = window_rows(window, row, partition)?;
            let until = if any { hi + 1 } else { 0 };
            while fed < until {
                feed(specs, &mut state, partition.docs.get(fed)?.as_ref())?;
                fed += 1;
            }
            let value = state[0].clone().finish();
            if matches!(window, Window::Partition) {
                whole = Some(value.clone());
            }
            out.push(value);
        }
        return Ok(out);
    }
    for row in 0..n {
        crate::interrupt::check()?;
        let mut state = vec![spec.new_state()];
        let (lo, hi, any) = window_rows(window, row, partition)?;
        if any {
            for at in lo..=hi {
                feed(specs, &mut state, partition.docs.get(at)?.as_ref())?;
            }
        }
        out.push(state.remove(0).finish());
    }
    Ok(out)
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
