//! The window functions of `$setWindowFields` that are not `$group` accumulators: `$rank`,
//! `$denseRank`, `$documentNumber`, `$shift`, `$derivative`, `$integral`, `$expMovingAvg`,
//! `$covariancePop`/`$covarianceSamp`, `$locf` and `$linearFill` — parsing each with its
//! own rules (which need a `sortBy`, which refuse a `window`, `unit`, `N`/`alpha`,
//! `by`/`default`) and computing it over one partition.
//!
//! Not for: windows, partitions and the accumulators ($sum, $push, …), which are
//! `window.rs`'s and `accumulators.rs`'s.

use super::accumulators::AccumulatorSpec;
use super::window::{window_rows, Partition, Window};
use crate::query::error::QueryError;
use crate::query::expr::Expression;
use crate::query::sort::SortSpec;
use crate::query::value::compare::compare_values;
use crate::query::value::number::Number;
use bson::{Bson, Document};

/// What one output of `$setWindowFields` computes.
#[derive(Clone, Debug, PartialEq)]
pub enum WindowFunction {
    /// A `$group` accumulator over the window.
    Accumulate(AccumulatorSpec),
    /// `$rank`, `$denseRank`, `$documentNumber`.
    Rank(RankKind),
    /// `$shift`: `output` of the document `by` positions away, else `default`.
    Shift {
        /// Evaluated on the other document.
        output: Expression,
        /// Offset in the partition.
        by: i64,
        /// Value when there is no such document.
        default: Bson,
    },
    /// `$derivative` (`integral: false`) or `$integral` of `input` by the sortBy value.
    Calculus {
        /// `$integral` rather than `$derivative`.
        integral: bool,
        /// The y values.
        input: Expression,
        /// Milliseconds per `unit`, when the sortBy is a date.
        unit_millis: Option<i64>,
    },
    /// `$expMovingAvg` with its `alpha` (from `N` as 2/(N+1)).
    ExpMovingAvg {
        /// The values averaged.
        input: Expression,
        /// Weight of the current value.
        alpha: f64,
    },
    /// `$covariancePop` (`sample: false`) or `$covarianceSamp`.
    Covariance {
        /// Divide by n - 1.
        sample: bool,
        /// First operand.
        x: Expression,
        /// Second operand.
        y: Expression,
    },
    /// `$locf`: the last non-null value so far.
    Locf(Expression),
    /// `$linearFill`: nulls interpolated between their non-null neighbours.
    LinearFill(Expression),
}

/// The rank functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankKind {
    /// `$rank`: ties share a rank, the next one skips.
    Rank,
    /// `$denseRank`: ties share a rank, no gaps.
    DenseRank,
    /// `$documentNumber`: the position.
    DocumentNumber,
}

const ACCUMULATORS: &[&str] = &[
    "$sum",
    "$avg",
    "$min",
    "$max",
    "$count",
    "$push",
    "$addToSet",
    "$first",
    "$last",
    "$stdDevPop",
    "$stdDevSamp",
    "$firstN",
    "$lastN",
    "$minN",
    "$maxN",
    "$top",
    "$bottom",
    "$topN",
    "$bottomN",
    "$percentile",
    "$median",
];

fn failed(message: impl Into<String>) -> QueryError {
    QueryError::failed_to_parse(message)
}

/// Parses `name: arg` of one output, knowing whether it has a `window` and the `sortBy`.
pub fn parse(
    field: &str,
    name: &str,
    arg: &Bson,
    has_window: bool,
    sort_by: Option<&SortSpec>,
) -> Result<WindowFunction, QueryError> {
    let single_sort = sort_by.map(|s| s.keys.len()) == Some(1);
    if ACCUMULATORS.contains(&name) {
        let mut spec = Document::new();
        spec.insert(name, arg.clone());
        return Ok(WindowFunction::Accumulate(AccumulatorSpec::parse(
            field,
            &Bson::Document(spec),
        )?));
    }
    let refuse_window = |name: &str| {
        if has_window {
            Err(failed(format!("{name} does not accept a 'window' field")))
        } else {
            Ok(())
        }
    };
    match name {
        "$rank" | "$denseRank" | "$documentNumber" => {
            if has_window {
                return Err(QueryError::location(
                    5371601,
                    "Rank style window functions take no other arguments",
                ));
            }
            if !matches!(arg, Bson::Document(d) if d.is_empty()) {
                return Err(QueryError::location(
                    5371603,
                    format!("{name} must be specified with '{{}}' as the value"),
                ));
            }
            if !single_sort {
                return Err(QueryError::location(
                    5371602,
                    format!("{name} must be specified with a top level sortBy expression with exactly one element"),
                ));
            }
            Ok(WindowFunction::Rank(match name {
                "$rank" => RankKind::Rank,
                "$denseRank" => RankKind::DenseRank,
                _ => RankKind::DocumentNumber,
            }))
        }
        "$shift" => {
            if sort_by.is_none() {
                return Err(failed("'$shift' requires a sortBy"));
            }
            refuse_window("$shift")?;
            let d = named_arguments(name, arg, &["output", "by", "default"])?;
            let output = d
                .get("output")
                .ok_or_else(|| failed("$shift requires an 'output' expression."))?;
            let by = d
                .get("by")
                .ok_or_else(|| failed("$shift requires 'by' as an integer value."))?;
            let by = Number::from_bson(by)
                .and_then(Number::to_exact_i64)
                .ok_or_else(|| {
                    failed(format!(
                        "'$shift:by' field must be an integer, but found by: {by}"
                    ))
                })?;
            let default = match d.get("default") {
                None => Bson::Null,
                Some(v) => constant(v).ok_or_else(|| {
                    failed("'$shift:default' expression must yield a constant value.")
                })?,
            };
            Ok(WindowFunction::Shift {
                output: Expression::parse(output)?,
                by,
                default,
            })
        }
        "$derivative" | "$integral" => {
            let integral = name == "$integral";
            let d = named_arguments(name, arg, &["input", "unit"])?;
            let input = d
                .get("input")
                .ok_or_else(|| failed(format!("{name} requires an 'input' expression")))?;
            if !single_sort {
                return Err(failed(format!(
                    "{name} requires a sortBy with exactly one field"
                )));
            }
            if !integral && !has_window {
                return Err(failed("$derivative requires explicit window bounds"));
            }
            let unit_millis = match d.get("unit") {
                None => None,
                Some(Bson::String(u)) => Some(fixed_unit_millis(u).ok_or_else(|| {
                    failed(format!(
                        "{name}: unit must be one of week, day, hour, minute, second, millisecond; found {u}"
                    ))
                })?),
                Some(other) => {
                    return Err(failed(format!("{name}: 'unit' must be a string, found {other}")))
                }
            };
            Ok(WindowFunction::Calculus {
                integral,
                input: Expression::parse(input)?,
                unit_millis,
            })
        }
        "$expMovingAvg" => {
            refuse_window("$expMovingAvg")?;
            if sort_by.is_none() {
                return Err(failed("$expMovingAvg requires an explicit 'sortBy'"));
            }
            let d = named_arguments(name, arg, &["input", "N", "alpha"])?;
            let input = d
                .get("input")
                .ok_or_else(|| failed("$expMovingAvg must have exactly one 'input' field"))?;
            let alpha = match (d.get("N"), d.get("alpha")) {
                (Some(n), None) => {
                    let n = Number::from_bson(n)
                        .and_then(Number::to_exact_i64)
                        .filter(|n| *n > 0)
                        .ok_or_else(|| {
                            failed(format!(
                                "'N' field must be a positive integer, but found N: {n}"
                            ))
                        })?;
                    2.0 / (n as f64 + 1.0)
                }
                (None, Some(a)) => Number::from_bson(a)
                    .map(Number::to_f64)
                    .filter(|a| *a > 0.0 && *a < 1.0)
                    .ok_or_else(|| {
                        failed(format!(
                            "'alpha' must be between 0 and 1 (exclusive), found alpha: {a}"
                        ))
                    })?,
                _ => {
                    return Err(failed(
                        "$expMovingAvg must have exactly one of 'N' or 'alpha'",
                    ))
                }
            };
            Ok(WindowFunction::ExpMovingAvg {
                input: Expression::parse(input)?,
                alpha,
            })
        }
        "$covariancePop" | "$covarianceSamp" => match arg {
            Bson::Array(items) if items.len() == 2 => Ok(WindowFunction::Covariance {
                sample: name == "$covarianceSamp",
                x: Expression::parse(&items[0])?,
                y: Expression::parse(&items[1])?,
            }),
            _ => Err(failed(format!(
                "{name} requires an array of two expressions"
            ))),
        },
        "$locf" => {
            refuse_window("$locf")?;
            Ok(WindowFunction::Locf(Expression::parse(arg)?))
        }
        "$linearFill" => {
            refuse_window("$linearFill")?;
            if !single_sort {
                return Err(QueryError::location(
                    605001,
                    "$linearFill must be specified with a top level sortBy expression with exactly one element",
                ));
            }
            Ok(WindowFunction::LinearFill(Expression::parse(arg)?))
        }
        other => Err(failed(format!("Unrecognized window function, {other}"))),
    }
}

fn named_arguments<'a>(
    name: &str,
    arg: &'a Bson,
    allowed: &[&str],
) -> Result<&'a Document, QueryError> {
    let Bson::Document(d) = arg else {
        return Err(failed(format!(
            "Argument to {name} must be an object, found {arg}"
        )));
    };
    for key in d.keys() {
        if !allowed.contains(&key.as_str()) {
            return Err(failed(format!("{name} got unexpected argument: {key}")));
        }
    }
    Ok(d)
}

/// The value of an expression spec that names no field or variable (outside `$literal`),
/// if it is one.
fn constant(spec: &Bson) -> Option<Bson> {
    fn names_something(v: &Bson) -> bool {
        match v {
            Bson::String(s) => s.starts_with('$'),
            Bson::Document(d) => !d.contains_key("$literal") && d.values().any(names_something),
            Bson::Array(items) => items.iter().any(names_something),
            _ => false,
        }
    }
    if names_something(spec) {
        return None;
    }
    Expression::parse(spec)
        .ok()?
        .evaluate(&Document::new())
        .ok()
}

/// Milliseconds per fixed-length unit (months and years have none).
fn fixed_unit_millis(unit: &str) -> Option<i64> {
    Some(match unit {
        "week" => 7 * 86_400_000,
        "day" => 86_400_000,
        "hour" => 3_600_000,
        "minute" => 60_000,
        "second" => 1000,
        "millisecond" => 1,
        _ => return None,
    })
}

fn number(value: Option<&Bson>) -> Option<f64> {
    match value? {
        Bson::DateTime(d) => Some(d.timestamp_millis() as f64),
        other => Number::from_bson(other).map(Number::to_f64),
    }
}

fn evaluate_all(
    input: &Expression,
    partition: &Partition<'_>,
) -> Result<Vec<Option<Bson>>, QueryError> {
    partition
        .docs
        .iter()
        .map(|d| input.evaluate_optional(d))
        .collect()
}

/// [`evaluate_all`] for the functions that compute in doubles: a Decimal128 input, which
/// MongoDB computes in decimal, is refused rather than answered with a double.
fn evaluate_numeric(
    input: &Expression,
    partition: &Partition<'_>,
    name: &str,
) -> Result<Vec<Option<Bson>>, QueryError> {
    let values = evaluate_all(input, partition)?;
    if values
        .iter()
        .any(|v| matches!(v, Some(Bson::Decimal128(_))))
    {
        return Err(QueryError::not_supported(format!(
            "{name} over Decimal128 values is not supported by docgate"
        )));
    }
    Ok(values)
}

/// Computes a window function over one partition (one value per document).
pub fn compute(
    function: &WindowFunction,
    window: &Window,
    partition: &Partition<'_>,
) -> Result<Vec<Bson>, QueryError> {
    let n = partition.docs.len();
    match function {
        WindowFunction::Accumulate(_) => Ok(vec![Bson::Null; n]),
        WindowFunction::Rank(kind) => Ok(ranks(*kind, &partition.sort_values)),
        WindowFunction::Shift {
            output,
            by,
            default,
        } => {
            let values = evaluate_all(output, partition)?;
            Ok((0..n as i64)
                .map(|row| {
                    let other = row.checked_add(*by).filter(|o| (0..n as i64).contains(o));
                    match other {
                        Some(o) => values[o as usize].clone().unwrap_or(Bson::Null),
                        None => default.clone(),
                    }
                })
                .collect())
        }
        WindowFunction::Calculus {
            integral,
            input,
            unit_millis,
        } => calculus(*integral, input, *unit_millis, window, partition),
        WindowFunction::ExpMovingAvg { input, alpha } => {
            let mut average: Option<f64> = None;
            let mut out = Vec::with_capacity(n);
            for value in evaluate_numeric(input, partition, "$expMovingAvg")? {
                match value
                    .as_ref()
                    .and_then(Number::from_bson)
                    .map(Number::to_f64)
                {
                    Some(x) => {
                        let next = match average {
                            None => x,
                            Some(prev) => x * alpha + prev * (1.0 - alpha),
                        };
                        average = Some(next);
                        out.push(Bson::Double(next));
                    }
                    None => out.push(Bson::Null),
                }
            }
            Ok(out)
        }
        WindowFunction::Covariance { sample, x, y } => {
            let name = if *sample {
                "$covarianceSamp"
            } else {
                "$covariancePop"
            };
            let xs = evaluate_numeric(x, partition, name)?;
            let ys = evaluate_numeric(y, partition, name)?;
            let mut out = Vec::with_capacity(n);
            for row in 0..n {
                let (lo, hi, any) = window_rows(window, row, partition)?;
                let pairs: Vec<(f64, f64)> = if any {
                    (lo..=hi)
                        .filter_map(|i| Some((number(xs[i].as_ref())?, number(ys[i].as_ref())?)))
                        .collect()
                } else {
                    Vec::new()
                };
                out.push(covariance(&pairs, *sample));
            }
            Ok(out)
        }
        WindowFunction::Locf(input) => {
            let mut last = Bson::Null;
            Ok(evaluate_all(input, partition)?
                .into_iter()
                .map(|v| {
                    if let Some(v) = v.filter(|v| !matches!(v, Bson::Null | Bson::Undefined)) {
                        last = v;
                    }
                    last.clone()
                })
                .collect())
        }
        WindowFunction::LinearFill(input) => {
            let values = evaluate_numeric(input, partition, "$linearFill")?;
            linear_fill(values, partition)
        }
    }
}

fn ranks(kind: RankKind, keys: &[Bson]) -> Vec<Bson> {
    let mut out = Vec::with_capacity(keys.len());
    let mut rank = 0i64;
    let mut dense = 0i64;
    for (i, key) in keys.iter().enumerate() {
        let tie = i > 0 && compare_values(&keys[i - 1], key).is_eq();
        if !tie {
            rank = i as i64 + 1;
            dense += 1;
        }
        let value = match kind {
            RankKind::Rank => rank,
            RankKind::DenseRank => dense,
            RankKind::DocumentNumber => i as i64 + 1,
        };
        out.push(
            i32::try_from(value)
                .map(Bson::Int32)
                .unwrap_or(Bson::Int64(value)),
        );
    }
    out
}

fn covariance(pairs: &[(f64, f64)], sample: bool) -> Bson {
    let n = pairs.len() as f64;
    if pairs.is_empty() || (sample && pairs.len() < 2) {
        return Bson::Null;
    }
    let mean_x = pairs.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = pairs.iter().map(|p| p.1).sum::<f64>() / n;
    let sum: f64 = pairs.iter().map(|(x, y)| (x - mean_x) * (y - mean_y)).sum();
    Bson::Double(sum / if sample { n - 1.0 } else { n })
}

/// The x value of a row for `$derivative`/`$integral`, checked against `unit`.
fn calculus_x(
    value: &Bson,
    name: &str,
    unit_millis: Option<i64>,
) -> Result<Option<f64>, QueryError> {
    let (with_unit, without_unit) = if name == "$integral" {
        (5423901, 5423902)
    } else {
        (5624900, 5624901)
    };
    match (value, unit_millis) {
        (Bson::DateTime(d), Some(_)) => Ok(Some(d.timestamp_millis() as f64)),
        (Bson::DateTime(_), None) => Err(QueryError::location(
            without_unit,
            format!("{name} where the sortBy is a Date requires an 'unit'"),
        )),
        (_, Some(_)) => Err(QueryError::location(
            with_unit,
            format!("{name} with unit expects the sortBy field to be a Date"),
        )),
        (other, None) => Ok(Number::from_bson(other).map(Number::to_f64)),
    }
}

fn calculus(
    integral: bool,
    input: &Expression,
    unit_millis: Option<i64>,
    window: &Window,
    partition: &Partition<'_>,
) -> Result<Vec<Bson>, QueryError> {
    let name = if integral { "$integral" } else { "$derivative" };
    let n = partition.docs.len();
    let ys = evaluate_numeric(input, partition, name)?;
    let mut xs = Vec::with_capacity(n);
    for value in &partition.sort_values {
        xs.push(calculus_x(value, name, unit_millis)?);
    }
    // x differences are taken in the sortBy's own terms (milliseconds for dates), then
    // scaled to the unit, so large timestamps keep their precision.
    let scale = unit_millis.map(|u| u as f64).unwrap_or(1.0);
    let point = |i: usize| Some((xs[i]?, number(ys[i].as_ref())?));
    let mut out = Vec::with_capacity(n);
    for row in 0..n {
        let (lo, hi, any) = window_rows(window, row, partition)?;
        if !any {
            out.push(Bson::Null);
            continue;
        }
        if integral {
            let points: Vec<(f64, f64)> = (lo..=hi).filter_map(point).collect();
            if points.is_empty() {
                out.push(Bson::Null);
                continue;
            }
            let area = points.windows(2).fold(0.0, |total, w| {
                total + (w[1].0 - w[0].0) / scale * (w[0].1 + w[1].1) / 2.0
            });
            out.push(Bson::Double(area));
        } else {
            match (point(lo), point(hi)) {
                (Some((x0, y0)), Some((x1, y1))) if hi > lo && x1 != x0 => {
                    out.push(Bson::Double((y1 - y0) / ((x1 - x0) / scale)))
                }
                _ => out.push(Bson::Null),
            }
        }
    }
    Ok(out)
}

fn linear_fill(
    values: Vec<Option<Bson>>,
    partition: &Partition<'_>,
) -> Result<Vec<Bson>, QueryError> {
    let n = values.len();
    let mut xs = Vec::with_capacity(n);
    for value in &partition.sort_values {
        xs.push(number(Some(value)));
    }
    let known: Vec<Option<f64>> = values
        .iter()
        .map(|v| match v {
            None | Some(Bson::Null) | Some(Bson::Undefined) => None,
            Some(other) => number(Some(other)),
        })
        .collect();
    // The next row with a known value, for every row (one pass from the end).
    let mut next_known = vec![None; n + 1];
    for i in (0..n).rev() {
        next_known[i] = if known[i].is_some() {
            Some(i)
        } else {
            next_known[i + 1]
        };
    }
    let mut out = Vec::with_capacity(n);
    let mut previous: Option<usize> = None;
    for (i, value) in values.into_iter().enumerate() {
        match value {
            Some(v) if !matches!(v, Bson::Null | Bson::Undefined) => {
                if known[i].is_none() {
                    return Err(QueryError::location(
                        6050106,
                        format!("Value to fill must be numeric, found {v}"),
                    ));
                }
                previous = Some(i);
                out.push(v);
            }
            _ => {
                let next = next_known[i + 1];
                let filled = match (previous, next) {
                    (Some(p), Some(q)) => match (xs[p], xs[q], xs[i], known[p], known[q]) {
                        (Some(xp), Some(xq), Some(x), Some(yp), Some(yq)) if xq != xp => {
                            Bson::Double(yp + (yq - yp) * (x - xp) / (xq - xp))
                        }
                        _ => Bson::Null,
                    },
                    _ => Bson::Null,
                };
                out.push(filled);
            }
        }
    }
    Ok(out)
}
