//! Array expressions that reduce or recombine whole arrays: the array forms of $firstN,
//! $lastN, $maxN and $minN (`{input, n}`, through the same accumulator state `$group`
//! uses), $zip, and the expression forms of the statistics $stdDevPop, $stdDevSamp,
//! $percentile and $median (method "approximate", answered with the exact discrete
//! percentile: the value of rank ⌈p·n⌉, which is what MongoDB's approximation returns for
//! inputs of expression size).
//!
//! Argument layouts (built by `expr/parse_more.rs`): `…N` is `[input, n]`; $zip is
//! `[input count k, useLongestLength, k inputs, then k defaults or none]`; $percentile is
//! `[input, p]` where `p` is an array of numbers, or one number for $median (a scalar
//! result).
//!
//! Not for: the `$group` accumulators of the same names (`aggregate/accumulators.rs`).

use super::more::MoreOperator;
use super::operator::{misrouted, type_name};
use crate::query::error::QueryError;
use crate::query::expr::accumulator::{AccumulatorKind, AccumulatorState};
use crate::query::value::number::Number;
use bson::Bson;

/// Applies the array reductions to evaluated arguments.
pub(super) fn apply_more(
    op: MoreOperator,
    args: &[Option<Bson>],
) -> Result<Option<Bson>, QueryError> {
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    let (name, kind) = match op {
        MoreOperator::FirstN => ("$firstN", AccumulatorKind::FirstN),
        MoreOperator::LastN => ("$lastN", AccumulatorKind::LastN),
        MoreOperator::MaxN => ("$maxN", AccumulatorKind::MaxN),
        MoreOperator::MinN => ("$minN", AccumulatorKind::MinN),
        MoreOperator::Zip => return zip(args),
        MoreOperator::StdDevPop | MoreOperator::StdDevSamp => {
            let kind = if op == MoreOperator::StdDevPop {
                AccumulatorKind::StdDevPop
            } else {
                AccumulatorKind::StdDevSamp
            };
            let mut state = AccumulatorState::new(kind);
            for value in operand_values(args) {
                state.add(Some(value));
            }
            return Ok(Some(state.finish()));
        }
        MoreOperator::Percentile => return percentile(arg(0), arg(1)),
        _ => return Err(misrouted(op)),
    };
    let n = n_value(arg(1))?;
    let Some(Bson::Array(items)) = arg(0) else {
        return Err(QueryError::location(
            5788200,
            format!(
                "Input must be an array ({name} found {})",
                type_name(arg(0))
            ),
        ));
    };
    let mut state = AccumulatorState::new(kind);
    state.set_limit(n);
    for item in items {
        state.add(Some(item.clone()));
    }
    Ok(Some(state.finish()))
}

/// `n` of the `…N` operators: a positive integral number (5787902 not a number, 5787903
/// not integral, 5787908 not positive).
fn n_value(n: Option<&Bson>) -> Result<usize, QueryError> {
    let shown = || n.map_or_else(|| "missing".to_string(), |v| v.to_string());
    let Some(number) = n.and_then(Number::from_bson) else {
        return Err(QueryError::location(
            5787902,
            format!(
                "Value for 'n' must be of integral type, but found {}",
                shown()
            ),
        ));
    };
    let Some(value) = number.to_exact_i64() else {
        return Err(QueryError::location(
            5787903,
            format!(
                "Value for 'n' must be of integral type, but found {}",
                shown()
            ),
        ));
    };
    if value <= 0 {
        return Err(QueryError::location(
            5787908,
            format!("'n' must be greater than 0, found {value}"),
        ));
    }
    Ok(usize::try_from(value).unwrap_or(usize::MAX))
}

/// The operands of an expression-form statistic: the elements of a single array argument,
/// else the arguments themselves (missing ones dropped).
fn operand_values(args: &[Option<Bson>]) -> Vec<Bson> {
    match args {
        [Some(Bson::Array(items))] => items.clone(),
        _ => args.iter().flatten().cloned().collect(),
    }
}

fn zip(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let count = match args.first() {
        Some(Some(Bson::Int32(k))) => usize::try_from(*k).unwrap_or(0),
        _ => return Err(misrouted(MoreOperator::Zip)),
    };
    let use_longest = matches!(args.get(1), Some(Some(Bson::Boolean(true))));
    let inputs = args.get(2..2 + count).unwrap_or(&[]);
    let defaults = args.get(2 + count..).unwrap_or(&[]);
    let mut arrays = Vec::with_capacity(count);
    for input in inputs {
        match input {
            None | Some(Bson::Null) | Some(Bson::Undefined) => return Ok(Some(Bson::Null)),
            Some(Bson::Array(items)) => arrays.push(items),
            Some(other) => {
                return Err(QueryError::location(
                    34468,
                    format!("$zip found a non-array expression in input: {other}"),
                ))
            }
        }
    }
    let lengths = arrays.iter().map(|a| a.len());
    let rows = if use_longest {
        lengths.max().unwrap_or(0)
    } else {
        lengths.min().unwrap_or(0)
    };
    let zipped = (0..rows)
        .map(|row| {
            Bson::Array(
                arrays
                    .iter()
                    .enumerate()
                    .map(|(column, items)| match items.get(row) {
                        Some(v) => v.clone(),
                        None => defaults
                            .get(column)
                            .cloned()
                            .flatten()
                            .unwrap_or(Bson::Null),
                    })
                    .collect(),
            )
        })
        .collect();
    Ok(Some(Bson::Array(zipped)))
}

/// `$percentile` (`p` an array: an array of results, nulls when the input holds no
/// number) and `$median` (`p` a number: one result, null when there is no number).
pub(crate) fn percentile(
    input: Option<&Bson>,
    p: Option<&Bson>,
) -> Result<Option<Bson>, QueryError> {
    let mut numbers: Vec<f64> = match input {
        Some(Bson::Array(items)) => items
            .iter()
            .filter_map(Number::from_bson)
            .map(Number::to_f64)
            .collect(),
        Some(v) => Number::from_bson(v)
            .map(Number::to_f64)
            .into_iter()
            .collect(),
        None => Vec::new(),
    };
    numbers.retain(|x| !x.is_nan());
    numbers.sort_by(f64::total_cmp);
    let rank = |p: f64| -> Bson {
        if numbers.is_empty() {
            return Bson::Null;
        }
        let position = (p * numbers.len() as f64).ceil() as usize;
        Bson::Double(numbers[position.saturating_sub(1).min(numbers.len() - 1)])
    };
    Ok(Some(match p {
        // MongoDB answers one null per requested percentile.
        Some(Bson::Array(ps)) if numbers.is_empty() => {
            Bson::Array(ps.iter().map(|_| Bson::Null).collect())
        }
        Some(Bson::Array(ps)) => Bson::Array(
            ps.iter()
                .map(|p| rank(Number::from_bson(p).map_or(0.5, Number::to_f64)))
                .collect(),
        ),
        Some(single) => rank(Number::from_bson(single).map_or(0.5, Number::to_f64)),
        None => rank(0.5),
    }))
}
