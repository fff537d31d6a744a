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
use super::window_numbers::{any_decimal, Decimal, WindowNumber};
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

/// A value as a number of the computation: a number, or a date's milliseconds.
fn number<T: WindowNumber>(value: Option<&Bson>) -> Option<T> {
    match value? {
        Bson::DateTime(d) => Some(T::from_number(Number::Int(d.timestamp_millis()))),
        other => Number::from_bson(other).map(T::from_number),
    }
}

fn evaluate_all(
    input: &Expression,
    partition: &Partition<'_>,
) -> Result<Vec<Option<Bson>>, QueryError> {
    (0..partition.docs.len())
        .map(|at| input.evaluate_optional(partition.docs.get(at)?.as_ref()))
        .collect()
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
            let values = evaluate_all(input, partition)?;
            Ok(match any_decimal(&values) {
                true => exp_moving_avg::<Decimal>(&values, *alpha),
                false => exp_moving_avg::<f64>(&values, *alpha),
            })
        }
        WindowFunction::Covariance { sample, x, y } => {
            let xs = evaluate_all(x, partition)?;
            let ys = evaluate_all(y, partition)?;
            match any_decimal(xs.iter().chain(&ys)) {
                true => covariances::<Decimal>(&xs, &ys, *sample, window, partition),
                false => covariances::<f64>(&xs, &ys, *sample, window, partition),
            }
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
            let values = evaluate_all(input, partition)?;
            let sorted_by_decimal = partition
                .sort_values
                .iter()
                .any(|v| matches!(v, Bson::Decimal128(_)));
            match sorted_by_decimal || any_decimal(&values) {
                true => linear_fill::<Decimal>(values, partition),
                false => linear_fill::<f64>(values, partition),
            }
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

/// `$expMovingAvg`: each number's running average (`x·alpha + previous·(1 - alpha)`), null
/// where the input is not a number.
fn exp_moving_avg<T: WindowNumber>(values: &[Option<Bson>], alpha: f64) -> Vec<Bson> {
    let (weight, keep) = (T::from_f64(alpha), T::from_f64(1.0 - alpha));
    let mut average: Option<T> = None;
    values
        .iter()
        .map(|value| {
            match value
                .as_ref()
                .and_then(Number::from_bson)
                .map(T::from_number)
            {
                Some(x) => {
                    let next = match &average {
                        None => x,
                        Some(previous) => x.mul(&weight).add(&previous.mul(&keep)),
                    };
                    average = Some(next.clone());
                    next.into_bson()
                }
                None => Bson::Null,
            }
        })
        .collect()
}

/// `$covariancePop`/`$covarianceSamp` over each document's window.
fn covariances<T: WindowNumber>(
    xs: &[Option<Bson>],
    ys: &[Option<Bson>],
    sample: bool,
    window: &Window,
    partition: &Partition<'_>,
) -> Result<Vec<Bson>, QueryError> {
    let mut out = Vec::with_capacity(xs.len());
    for row in 0..xs.len() {
        let (lo, hi, any) = window_rows(window, row, partition)?;
        let pairs: Vec<(T, T)> = if any {
            (lo..=hi)
                .filter_map(|i| Some((number(xs[i].as_ref())?, number(ys[i].as_ref())?)))
                .collect()
        } else {
            Vec::new()
        };
        out.push(covariance(&pairs, sample));
    }
    Ok(out)
}

fn covariance<T: WindowNumber>(pairs: &[(T, T)], sample: bool) -> Bson {
    if pairs.is_empty() || (sample && pairs.len() < 2) {
        return Bson::Null;
    }
    let count = |n: usize| T::from_number(Number::Int(i64::try_from(n).unwrap_or(i64::MAX)));
    let n = count(pairs.len());
    let zero = count(0);
    let mean_x = pairs
        .iter()
        .fold(zero.clone(), |sum, p| sum.add(&p.0))
        .div(&n);
    let mean_y = pairs
        .iter()
        .fold(zero.clone(), |sum, p| sum.add(&p.1))
        .div(&n);
    let sum = pairs.iter().fold(zero, |sum, (x, y)| {
        sum.add(&x.sub(&mean_x).mul(&y.sub(&mean_y)))
    });
    let divisor = if sample { n.sub(&count(1)) } else { n };
    sum.div(&divisor).into_bson()
}

/// The x value of a row for `$derivative`/`$integral`, checked against `unit`.
fn calculus_x(
    value: &Bson,
    name: &str,
    unit_millis: Option<i64>,
) -> Result<Option<Number>, QueryError> {
    let (with_unit, without_unit) = if name == "$integral" {
        (5423901, 5423902)
    } else {
        (5624900, 5624901)
    };
    match (value, unit_millis) {
        (Bson::DateTime(d), Some(_)) => Ok(Some(Number::Int(d.timestamp_millis()))),
        (Bson::DateTime(_), None) => Err(QueryError::location(
            without_unit,
            format!("{name} where the sortBy is a Date requires an 'unit'"),
        )),
        (_, Some(_)) => Err(QueryError::location(
            with_unit,
            format!("{name} with unit expects the sortBy field to be a Date"),
        )),
        (other, None) => Ok(Number::from_bson(other)),
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
    let ys = evaluate_all(input, partition)?;
    let mut xs = Vec::with_capacity(ys.len());
    for value in &partition.sort_values {
        xs.push(calculus_x(value, name, unit_millis)?);
    }
    let decimal_x = xs.iter().any(|x| matches!(x, Some(Number::Decimal(_))));
    let points = CalculusPoints {
        integral,
        xs: &xs,
        ys: &ys,
        unit_millis,
    };
    match decimal_x || any_decimal(&ys) {
        true => points.compute::<Decimal>(window, partition),
        false => points.compute::<f64>(window, partition),
    }
}

/// The points of `$derivative`/`$integral` over one partition.
struct CalculusPoints<'a> {
    integral: bool,
    xs: &'a [Option<Number>],
    ys: &'a [Option<Bson>],
    unit_millis: Option<i64>,
}

impl CalculusPoints<'_> {
    fn compute<T: WindowNumber>(
        &self,
        window: &Window,
        partition: &Partition<'_>,
    ) -> Result<Vec<Bson>, QueryError> {
        // x differences are taken in the sortBy's own terms (milliseconds for dates), then
        // scaled to the unit, so large timestamps keep their precision.
        let scale = T::from_number(Number::Int(self.unit_millis.unwrap_or(1)));
        let two = T::from_number(Number::Int(2));
        let point = |i: usize| -> Option<(T, T)> {
            Some((T::from_number(self.xs[i]?), number(self.ys[i].as_ref())?))
        };
        let mut out = Vec::with_capacity(self.ys.len());
        for row in 0..self.ys.len() {
            let (lo, hi, any) = window_rows(window, row, partition)?;
            if !any {
                out.push(Bson::Null);
                continue;
            }
            if self.integral {
                let points: Vec<(T, T)> = (lo..=hi).filter_map(point).collect();
                if points.is_empty() {
                    out.push(Bson::Null);
                    continue;
                }
                let zero = T::from_number(Number::Int(0));
                let area = points.windows(2).fold(zero, |total, w| {
                    let width = w[1].0.sub(&w[0].0).div(&scale);
                    total.add(&width.mul(&w[0].1.add(&w[1].1)).div(&two))
                });
                out.push(area.into_bson());
            } else {
                match (point(lo), point(hi)) {
                    (Some((x0, y0)), Some((x1, y1))) if hi > lo && !x1.same(&x0) => {
                        out.push(y1.sub(&y0).div(&x1.sub(&x0).div(&scale)).into_bson())
                    }
                    _ => out.push(Bson::Null),
                }
            }
        }
        Ok(out)
    }
}

fn linear_fill<T: WindowNumber>(
    values: Vec<Option<Bson>>,
    partition: &Partition<'_>,
) -> Result<Vec<Bson>, QueryError> {
    let n = values.len();
    let mut xs = Vec::with_capacity(n);
    for value in &partition.sort_values {
        xs.push(number::<T>(Some(value)));
    }
    let known: Vec<Option<T>> = values
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
                    (Some(p), Some(q)) => match (&xs[p], &xs[q], &xs[i], &known[p], &known[q]) {
                        (Some(xp), Some(xq), Some(x), Some(yp), Some(yq)) if !xq.same(xp) => yp
                            .add(&yq.sub(yp).mul(&x.sub(xp)).div(&xq.sub(xp)))
                            .into_bson(),
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
