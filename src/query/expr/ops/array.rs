//! Array expression operators: $size, $arrayElemAt, $first, $last, $in, $isArray,
//! $concatArrays, the array forms of $max, $min, $sum and $avg, $reverseArray, $range,
//! $slice, $indexOfArray, $anyElementTrue, $allElementsTrue and $sortArray.
//!
//! Not for: set operators (`set.rs`) or $map, $filter and $reduce, which bind variables and
//! are evaluated by `expr/mod.rs`.

use super::args::*;
use super::more::MoreOperator;
use super::operator::{arg, compare_optional, is_nullish, misrouted, some, type_name, Operator};
use crate::query::error::QueryError;
use crate::query::value::compare::values_equal;
use crate::query::value::number::Number;
use crate::query::value::truthy::truthy;
use bson::{Bson, Document};
use std::cmp::Ordering;

/// Applies the array operators (arity already checked by the parser).
pub(super) fn apply(op: Operator, args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    use Operator::*;
    match op {
        Size => match arg(args, 0) {
            Some(Bson::Array(items)) => some(Bson::Int32(items.len() as i32)),
            other => Err(QueryError::location(
                17124,
                format!(
                    "The argument to $size must be an array. Type of argument: {}",
                    type_name(other)
                ),
            )),
        },
        ArrayElemAt => array_elem_at(args),
        First | Last => match arg(args, 0) {
            None | Some(Bson::Null) | Some(Bson::Undefined) => some(Bson::Null),
            Some(Bson::Array(items)) => Ok(if op == First {
                items.first().cloned()
            } else {
                items.last().cloned()
            }),
            Some(other) => Err(QueryError::location(
                28689,
                format!(
                    "{} 's argument must be an array, but is {}",
                    if op == First { "$first" } else { "$last" },
                    type_name(Some(other))
                ),
            )),
        },
        In => match arg(args, 1) {
            Some(Bson::Array(items)) => {
                let needle = arg(args, 0);
                some(Bson::Boolean(items.iter().any(|item| {
                    compare_optional(needle, Some(item)) == Ordering::Equal
                })))
            }
            other => Err(QueryError::location(
                40081,
                format!(
                    "$in requires an array as a second argument, found: {}",
                    type_name(other)
                ),
            )),
        },
        IsArray => some(Bson::Boolean(matches!(arg(args, 0), Some(Bson::Array(_))))),
        ConcatArrays => {
            let mut out = Vec::new();
            for value in args {
                match value {
                    None | Some(Bson::Null) | Some(Bson::Undefined) => return some(Bson::Null),
                    Some(Bson::Array(items)) => out.extend(items.iter().cloned()),
                    Some(other) => {
                        return Err(QueryError::location(
                            28664,
                            format!(
                                "$concatArrays only supports arrays, not {}",
                                type_name(Some(other))
                            ),
                        ))
                    }
                }
            }
            some(Bson::Array(out))
        }
        Max | Min | Sum | Avg => {
            let values: Vec<Bson> = match (args.len(), arg(args, 0)) {
                (1, Some(Bson::Array(items))) => items.clone(),
                _ => args.iter().flatten().cloned().collect(),
            };
            Ok(crate::query::expr::accumulator::fold_values(op, &values))
        }
        _ => Err(misrouted(op)),
    }
}

/// Applies the array operators to evaluated arguments.
pub(super) fn apply_more(
    op: MoreOperator,
    args: &[Option<Bson>],
) -> Result<Option<Bson>, QueryError> {
    use MoreOperator::*;
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    let null = Ok(Some(Bson::Null));
    Ok(Some(match op {
        ReverseArray => {
            if nullish(arg(0)) {
                return null;
            }
            let mut items = array(arg(0), "$reverseArray", 34435)?.clone();
            items.reverse();
            Bson::Array(items)
        }
        Range => {
            let start = integer(arg(0), "$range start", 34443)?;
            let end = integer(arg(1), "$range end", 34444)?;
            let step = if args.len() > 2 {
                integer(arg(2), "$range step", 34446)?
            } else {
                1
            };
            if step == 0 {
                return Err(QueryError::location(
                    34449,
                    "$range requires a non-zero step value",
                ));
            }
            let in_32_bits = |v: i64| i32::try_from(v).is_ok();
            if !in_32_bits(start) || !in_32_bits(end) || !in_32_bits(step) {
                return Err(QueryError::location(
                    34443,
                    "$range requires values that can be represented as 32-bit integers",
                ));
            }
            let count = ((end - start) as f64 / step as f64).ceil().max(0.0) as usize;
            if count > 2_000_000 {
                return Err(QueryError::location(20, "$range would use too much memory"));
            }
            let mut items = Vec::with_capacity(count);
            for i in 0..count as i64 {
                crate::interrupt::check()?;
                let v = start + step * i;
                items.push(i32::try_from(v).map(Bson::Int32).unwrap_or(Bson::Int64(v)));
            }
            Bson::Array(items)
        }
        Slice => {
            if nullish(arg(0)) {
                return null;
            }
            let items = array(arg(0), "$slice", 28724)?;
            let len = items.len() as i64;
            let (start, count) = if args.len() == 2 {
                let n = integer(arg(1), "$slice count", 28725)?;
                if n >= 0 {
                    (0, n)
                } else {
                    ((len + n).max(0), n.saturating_neg())
                }
            } else {
                let position = integer(arg(1), "$slice position", 28725)?;
                let n = integer(arg(2), "$slice count", 28726)?;
                if n <= 0 {
                    return Err(QueryError::location(
                        28729,
                        "Third argument to $slice must be positive",
                    ));
                }
                let start = if position >= 0 {
                    position.min(len)
                } else {
                    (len + position).max(0)
                };
                (start, n)
            };
            Bson::Array(
                items
                    .iter()
                    .skip(start as usize)
                    .take(count.max(0) as usize)
                    .cloned()
                    .collect(),
            )
        }
        IndexOfArray => {
            if nullish(arg(0)) {
                return null;
            }
            let items = array(arg(0), "$indexOfArray", 40090)?;
            let start = if args.len() > 2 {
                integer(arg(2), "$indexOfArray start", 40096)?.max(0) as usize
            } else {
                0
            };
            let end = if args.len() > 3 {
                (integer(arg(3), "$indexOfArray end", 40097)?.max(0) as usize).min(items.len())
            } else {
                items.len()
            };
            let needle = arg(1).cloned().unwrap_or(Bson::Undefined);
            let found =
                (start..end).find(|i| items.get(*i).is_some_and(|v| values_equal(v, &needle)));
            Bson::Int32(found.map(|i| i as i32).unwrap_or(-1))
        }
        AnyElementTrue | AllElementsTrue => {
            let items = array(
                arg(0),
                if op == AnyElementTrue {
                    "$anyElementTrue"
                } else {
                    "$allElementsTrue"
                },
                17041,
            )?;
            Bson::Boolean(if op == AnyElementTrue {
                items.iter().any(truthy)
            } else {
                items.iter().all(truthy)
            })
        }
        SortArray => return sort_array(args),
        _ => return Err(misrouted(op)),
    }))
}

/// `$sortArray`: an array sorted by a sort specification (on its documents) or by 1 / -1.
fn sort_array(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    if nullish(arg(0)) {
        return Ok(Some(Bson::Null));
    }
    let mut items = array(arg(0), "$sortArray", 2942504)?.clone();
    match arg(1) {
        Some(Bson::Document(spec)) => {
            let spec = crate::query::sort::SortSpec::parse(spec)?;
            let empty = Document::new();
            items.sort_by(|a, b| {
                let da = match a {
                    Bson::Document(d) => d,
                    _ => &empty,
                };
                let db = match b {
                    Bson::Document(d) => d,
                    _ => &empty,
                };
                spec.compare(da, db)
            });
        }
        other => {
            let direction = other
                .and_then(Number::from_bson)
                .and_then(Number::to_exact_i64);
            match direction {
                Some(1) => items.sort_by(crate::query::value::compare::compare_values),
                Some(-1) => {
                    items.sort_by(|a, b| crate::query::value::compare::compare_values(b, a))
                }
                _ => {
                    return Err(QueryError::location(
                        2942505,
                        "$sortArray requires sortBy to be 1, -1 or a sort specification",
                    ))
                }
            }
        }
    }
    Ok(Some(Bson::Array(items)))
}

fn array_elem_at(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let (array, index) = (
        args.first().cloned().flatten(),
        args.get(1).cloned().flatten(),
    );
    if is_nullish(&array) || is_nullish(&index) {
        return some(Bson::Null);
    }
    let Some(Bson::Array(items)) = array else {
        return Err(QueryError::location(
            28689,
            format!(
                "$arrayElemAt's first argument must be an array, but is {}",
                type_name(array.as_ref())
            ),
        ));
    };
    let Some(n) = index.as_ref().and_then(Number::from_bson) else {
        return Err(QueryError::location(
            28690,
            format!(
                "$arrayElemAt's second argument must be a numeric value, but is {}",
                type_name(index.as_ref())
            ),
        ));
    };
    let Some(i) = n.to_exact_i64().filter(|i| i32::try_from(*i).is_ok()) else {
        return Err(QueryError::location(
            28691,
            "$arrayElemAt's second argument must be representable as a 32-bit integer",
        ));
    };
    let position = if i < 0 { items.len() as i64 + i } else { i };
    Ok(usize::try_from(position)
        .ok()
        .and_then(|p| items.get(p))
        .cloned())
}
