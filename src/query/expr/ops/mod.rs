//! The aggregation expression operators evaluated on already-evaluated arguments: arithmetic,
//! comparison, string, array, type and conversion operators, with MongoDB's null/missing
//! propagation and error codes. `None` stands for a missing value throughout.
//!
//! Not for: operators that bind variables or short-circuit ($cond, $let, $map, $filter,
//! $reduce, $switch, $and, $or), which `expr.rs` evaluates itself, or parsing (`expr_parse.rs`).

pub mod convert;
pub mod date;
pub mod date_math;
pub mod more;
#[cfg(test)]
mod tests;

use crate::query::error::QueryError;
use crate::query::value::compare::compare_values;
use crate::query::value::number::{arithmetic, to_decimal, Arithmetic, Number};
use bson::Bson;
use std::cmp::Ordering;

/// Operators applied to evaluated arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    /// `$add`
    Add,
    /// `$subtract`
    Subtract,
    /// `$multiply`
    Multiply,
    /// `$divide`
    Divide,
    /// `$mod`
    Mod,
    /// `$abs`
    Abs,
    /// `$ceil`
    Ceil,
    /// `$floor`
    Floor,
    /// `$trunc` (to an integer)
    Trunc,
    /// `$eq`
    Eq,
    /// `$ne`
    Ne,
    /// `$gt`
    Gt,
    /// `$gte`
    Gte,
    /// `$lt`
    Lt,
    /// `$lte`
    Lte,
    /// `$cmp`
    Cmp,
    /// `$and` (short-circuit, evaluated in `expr.rs`)
    And,
    /// `$or` (short-circuit, evaluated in `expr.rs`)
    Or,
    /// `$not`
    Not,
    /// `$ifNull`
    IfNull,
    /// `$concat`
    Concat,
    /// `$toUpper`
    ToUpper,
    /// `$toLower`
    ToLower,
    /// `$strLenBytes`
    StrLenBytes,
    /// `$strLenCP`
    StrLenCodePoints,
    /// `$substrCP`
    SubstrCodePoints,
    /// `$split`
    Split,
    /// `$size`
    Size,
    /// `$arrayElemAt`
    ArrayElemAt,
    /// `$first` (array expression)
    First,
    /// `$last` (array expression)
    Last,
    /// `$in`
    In,
    /// `$isArray`
    IsArray,
    /// `$concatArrays`
    ConcatArrays,
    /// `$type`
    Type,
    /// `$isNumber`
    IsNumber,
    /// `$max` (expression form)
    Max,
    /// `$min` (expression form)
    Min,
    /// `$sum` (expression form)
    Sum,
    /// `$avg` (expression form)
    Avg,
    /// `$toString`
    ToString,
    /// `$toInt`
    ToInt,
    /// `$toLong`
    ToLong,
    /// `$toDouble`
    ToDouble,
    /// `$toDecimal`
    ToDecimal,
    /// `$toBool`
    ToBool,
    /// Date operators (`expr_dates.rs`).
    Date(crate::query::expr::ops::date::DateOperator),
    /// Further math, string, array and object operators (`expr_more.rs`).
    More(crate::query::expr::ops::more::MoreOperator),
}

/// The MongoDB type name of a value; "missing" for `None`.
pub fn type_name(v: Option<&Bson>) -> &'static str {
    v.map_or("missing", crate::query::value::compare::bson_type_name)
}

fn is_nullish(v: &Option<Bson>) -> bool {
    matches!(v, None | Some(Bson::Null) | Some(Bson::Undefined))
}

/// Aggregation comparison: a missing value compares like undefined (below null).
pub fn compare_optional(a: Option<&Bson>, b: Option<&Bson>) -> Ordering {
    let undefined = Bson::Undefined;
    compare_values(a.unwrap_or(&undefined), b.unwrap_or(&undefined))
}

fn arg(args: &[Option<Bson>], i: usize) -> Option<&Bson> {
    args.get(i).and_then(Option::as_ref)
}

fn some(v: Bson) -> Result<Option<Bson>, QueryError> {
    Ok(Some(v))
}

/// Applies an operator to evaluated arguments (arity already checked by the parser).
pub fn apply(op: Operator, args: Vec<Option<Bson>>) -> Result<Option<Bson>, QueryError> {
    use Operator::*;
    match op {
        Add => add(&args),
        Subtract => subtract(&args),
        Multiply => multiply(&args),
        Divide => divide(&args),
        Mod => modulo(&args),
        Abs | Ceil | Floor | Trunc => rounding(op, &args),
        Eq | Ne | Gt | Gte | Lt | Lte | Cmp => {
            let order = compare_optional(arg(&args, 0), arg(&args, 1));
            let result = match op {
                Eq => order == Ordering::Equal,
                Ne => order != Ordering::Equal,
                Gt => order == Ordering::Greater,
                Gte => order != Ordering::Less,
                Lt => order == Ordering::Less,
                Lte => order != Ordering::Greater,
                _ => {
                    return some(Bson::Int32(match order {
                        Ordering::Less => -1,
                        Ordering::Equal => 0,
                        Ordering::Greater => 1,
                    }))
                }
            };
            some(Bson::Boolean(result))
        }
        And => some(Bson::Boolean(args.iter().all(|a| {
            a.as_ref().map(crate::query::expr::truthy).unwrap_or(false)
        }))),
        Or => some(Bson::Boolean(args.iter().any(|a| {
            a.as_ref().map(crate::query::expr::truthy).unwrap_or(false)
        }))),
        Not => some(Bson::Boolean(
            !arg(&args, 0)
                .map(crate::query::expr::truthy)
                .unwrap_or(false),
        )),
        IfNull => {
            let last = args.len().saturating_sub(1);
            for (i, value) in args.iter().enumerate() {
                if i == last || !is_nullish(value) {
                    return Ok(value.clone());
                }
            }
            Ok(None)
        }
        Concat => concat(&args),
        ToUpper | ToLower => {
            let text = match arg(&args, 0) {
                None | Some(Bson::Null) | Some(Bson::Undefined) => String::new(),
                Some(Bson::String(s)) | Some(Bson::Symbol(s)) => s.clone(),
                Some(
                    v @ (Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)),
                ) => value_to_string(v),
                Some(other) => {
                    return Err(QueryError::location(
                        16007,
                        format!(
                            "can't convert from BSON type {} to String",
                            type_name(Some(other))
                        ),
                    ))
                }
            };
            some(Bson::String(if op == ToUpper {
                text.to_uppercase()
            } else {
                text.to_lowercase()
            }))
        }
        StrLenBytes | StrLenCodePoints => match arg(&args, 0) {
            Some(Bson::String(s)) => some(Bson::Int32(if op == StrLenBytes {
                s.len() as i32
            } else {
                s.chars().count() as i32
            })),
            other => Err(QueryError::location(
                34471,
                format!(
                    "{} requires a string argument, found: {}",
                    if op == StrLenBytes {
                        "$strLenBytes"
                    } else {
                        "$strLenCP"
                    },
                    type_name(other)
                ),
            )),
        },
        SubstrCodePoints => substr_code_points(&args),
        Split => split(&args),
        Size => match arg(&args, 0) {
            Some(Bson::Array(items)) => some(Bson::Int32(items.len() as i32)),
            other => Err(QueryError::location(
                17124,
                format!(
                    "The argument to $size must be an array. Type of argument: {}",
                    type_name(other)
                ),
            )),
        },
        ArrayElemAt => array_elem_at(&args),
        First | Last => match arg(&args, 0) {
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
        In => match arg(&args, 1) {
            Some(Bson::Array(items)) => {
                let needle = arg(&args, 0);
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
        IsArray => some(Bson::Boolean(matches!(arg(&args, 0), Some(Bson::Array(_))))),
        ConcatArrays => {
            let mut out = Vec::new();
            for value in &args {
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
        Type => some(Bson::String(type_name(arg(&args, 0)).to_string())),
        IsNumber => some(Bson::Boolean(
            arg(&args, 0).and_then(Number::from_bson).is_some(),
        )),
        Max | Min | Sum | Avg => {
            let values: Vec<Bson> = match (args.len(), arg(&args, 0)) {
                (1, Some(Bson::Array(items))) => items.clone(),
                _ => args.iter().flatten().cloned().collect(),
            };
            Ok(crate::query::expr::accumulator::fold_values(op, &values))
        }
        ToString | ToInt | ToLong | ToDouble | ToDecimal | ToBool => {
            crate::query::expr::ops::convert::convert(op, arg(&args, 0))
        }
        Date(date_op) => crate::query::expr::ops::date::apply(date_op, &args),
        More(more_op) => crate::query::expr::ops::more::apply(more_op, &args),
    }
}

/// The text `$toUpper`/`$concat`-style operators use for a number.
pub fn value_to_string(v: &Bson) -> String {
    match v {
        Bson::Int32(i) => i.to_string(),
        Bson::Int64(i) => i.to_string(),
        Bson::Double(d) => {
            if d.is_nan() {
                "NaN".to_string()
            } else if d.is_infinite() {
                if *d > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
            } else {
                format!("{d}")
            }
        }
        Bson::Decimal128(d) => d.to_string(),
        Bson::String(s) | Bson::Symbol(s) => s.clone(),
        other => other.to_string(),
    }
}

fn add(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let mut total = Bson::Int32(0);
    let mut date: Option<i64> = None;
    for value in args {
        match value {
            None | Some(Bson::Null) | Some(Bson::Undefined) => return some(Bson::Null),
            Some(Bson::DateTime(dt)) => {
                if date.is_some() {
                    return Err(QueryError::location(
                        16612,
                        "only one date allowed in an $add expression",
                    ));
                }
                date = Some(dt.timestamp_millis());
            }
            Some(v) => {
                total = arithmetic(Arithmetic::Add, &total, v).ok_or_else(|| {
                    QueryError::location(
                        16554,
                        format!(
                            "$add only supports numeric or date types, not {}",
                            type_name(Some(v))
                        ),
                    )
                })?;
            }
        }
    }
    match date {
        Some(millis) => {
            let offset = Number::from_bson(&total).map(|n| n.to_f64()).unwrap_or(0.0);
            some(Bson::DateTime(bson::DateTime::from_millis(
                millis.saturating_add(offset.round() as i64),
            )))
        }
        None => some(total),
    }
}

fn subtract(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let (a, b) = (arg(args, 0), arg(args, 1));
    match (a, b) {
        (None | Some(Bson::Null | Bson::Undefined), _)
        | (_, None | Some(Bson::Null | Bson::Undefined)) => some(Bson::Null),
        (Some(Bson::DateTime(x)), Some(Bson::DateTime(y))) => some(Bson::Int64(
            x.timestamp_millis().saturating_sub(y.timestamp_millis()),
        )),
        (Some(Bson::DateTime(x)), Some(n)) => match Number::from_bson(n) {
            Some(n) => some(Bson::DateTime(bson::DateTime::from_millis(
                x.timestamp_millis()
                    .saturating_sub(n.to_f64().round() as i64),
            ))),
            None => Err(subtract_error(a, b)),
        },
        (Some(x), Some(y)) => arithmetic(Arithmetic::Subtract, x, y)
            .map(Some)
            .ok_or_else(|| subtract_error(a, b)),
    }
}

fn subtract_error(a: Option<&Bson>, b: Option<&Bson>) -> QueryError {
    QueryError::location(
        16556,
        format!(
            "cant $subtract a{} {} from a {}",
            if type_name(b).starts_with(['a', 'e', 'i', 'o', 'u']) {
                "n"
            } else {
                ""
            },
            type_name(b),
            type_name(a)
        ),
    )
}

fn multiply(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let mut product = Bson::Int32(1);
    for value in args {
        match value {
            None | Some(Bson::Null) | Some(Bson::Undefined) => return some(Bson::Null),
            Some(v) => {
                product = arithmetic(Arithmetic::Multiply, &product, v).ok_or_else(|| {
                    QueryError::location(
                        16555,
                        format!(
                            "$multiply only supports numeric types, not {}",
                            type_name(Some(v))
                        ),
                    )
                })?;
            }
        }
    }
    some(product)
}

fn two_numbers(
    args: &[Option<Bson>],
    op: &str,
    code: i32,
) -> Result<Option<(Bson, Bson)>, QueryError> {
    let (a, b) = (
        args.first().cloned().flatten(),
        args.get(1).cloned().flatten(),
    );
    if is_nullish(&a) || is_nullish(&b) {
        return Ok(None);
    }
    match (a, b) {
        (Some(x), Some(y))
            if Number::from_bson(&x).is_some() && Number::from_bson(&y).is_some() =>
        {
            Ok(Some((x, y)))
        }
        (x, y) => Err(QueryError::location(
            code,
            format!(
                "{op} only supports numeric types, not {} and {}",
                type_name(x.as_ref()),
                type_name(y.as_ref())
            ),
        )),
    }
}

fn is_zero(v: &Bson) -> bool {
    Number::from_bson(v)
        .and_then(crate::query::value::number::exact_value)
        .map(|x| x.is_zero())
        .unwrap_or(false)
}

fn divide(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let Some((a, b)) = two_numbers(args, "$divide", 16609)? else {
        return some(Bson::Null);
    };
    if is_zero(&b) {
        return Err(QueryError::bad_value("can't $divide by zero"));
    }
    let (x, y) = (
        Number::from_bson(&a).unwrap_or(Number::Int(0)),
        Number::from_bson(&b).unwrap_or(Number::Int(1)),
    );
    if matches!(a, Bson::Decimal128(_)) || matches!(b, Bson::Decimal128(_)) {
        let (da, db) = (to_decimal(x), to_decimal(y));
        let ideal = crate::query::value::decimal::raw_exponent(&da).unwrap_or(0)
            - crate::query::value::decimal::raw_exponent(&db).unwrap_or(0);
        let quotient = match (
            crate::query::value::number::DecimalValue::decode(&da),
            crate::query::value::number::DecimalValue::decode(&db),
        ) {
            (
                crate::query::value::number::DecimalValue::Finite(p),
                crate::query::value::number::DecimalValue::Finite(q),
            ) => crate::query::value::decimal::divide_decimal(&p, &q, ideal),
            _ => None,
        };
        return some(Bson::Decimal128(quotient.unwrap_or_else(|| {
            to_decimal(Number::Double(x.to_f64() / y.to_f64()))
        })));
    }
    some(Bson::Double(x.to_f64() / y.to_f64()))
}

fn modulo(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let Some((a, b)) = two_numbers(args, "$mod", 16611)? else {
        return some(Bson::Null);
    };
    if is_zero(&b) {
        return Err(QueryError::location(16610, "can't $mod by zero"));
    }
    let (x, y) = (
        Number::from_bson(&a).unwrap_or(Number::Int(0)),
        Number::from_bson(&b).unwrap_or(Number::Int(1)),
    );
    match (&a, &b) {
        (Bson::Int32(p), Bson::Int32(q)) => some(Bson::Int32(p.wrapping_rem(*q))),
        (Bson::Int32(_) | Bson::Int64(_), Bson::Int32(_) | Bson::Int64(_)) => {
            let (p, q) = (x.to_exact_i64().unwrap_or(0), y.to_exact_i64().unwrap_or(1));
            some(Bson::Int64(p.wrapping_rem(q)))
        }
        (Bson::Decimal128(_), _) | (_, Bson::Decimal128(_)) => some(Bson::Decimal128(to_decimal(
            Number::Double(x.to_f64() % y.to_f64()),
        ))),
        _ => some(Bson::Double(x.to_f64() % y.to_f64())),
    }
}

fn rounding(op: Operator, args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let value = args.first().cloned().flatten();
    if is_nullish(&value) {
        return some(Bson::Null);
    }
    let name = match op {
        Operator::Abs => "$abs",
        Operator::Ceil => "$ceil",
        Operator::Floor => "$floor",
        _ => "$trunc",
    };
    let apply_f64 = |d: f64| match op {
        Operator::Abs => d.abs(),
        Operator::Ceil => d.ceil(),
        Operator::Floor => d.floor(),
        _ => d.trunc(),
    };
    match value {
        Some(Bson::Int32(i)) if op == Operator::Abs => some(match i.checked_abs() {
            Some(v) => Bson::Int32(v),
            None => Bson::Int64(i64::from(i).abs()),
        }),
        Some(Bson::Int64(i)) if op == Operator::Abs => match i.checked_abs() {
            Some(v) => some(Bson::Int64(v)),
            None => Err(QueryError::location(
                28680,
                "can't take $abs of long long min",
            )),
        },
        Some(v @ (Bson::Int32(_) | Bson::Int64(_))) => some(v),
        Some(Bson::Double(d)) => some(Bson::Double(apply_f64(d))),
        Some(Bson::Decimal128(d)) => some(Bson::Decimal128(to_decimal(Number::Double(apply_f64(
            crate::query::value::number::decimal_to_f64(&d),
        ))))),
        other => Err(QueryError::location(
            28765,
            format!(
                "{name} only supports numeric types, not {}",
                type_name(other.as_ref())
            ),
        )),
    }
}

fn concat(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let mut out = String::new();
    for value in args {
        match value {
            None | Some(Bson::Null) | Some(Bson::Undefined) => return some(Bson::Null),
            Some(Bson::String(s)) | Some(Bson::Symbol(s)) => out.push_str(s),
            Some(other) => {
                return Err(QueryError::location(
                    16702,
                    format!(
                        "$concat only supports strings, not {}",
                        type_name(Some(other))
                    ),
                ))
            }
        }
    }
    some(Bson::String(out))
}

fn integer_arg(v: Option<&Bson>, message: impl FnOnce() -> QueryError) -> Result<i64, QueryError> {
    v.and_then(Number::from_bson)
        .and_then(Number::to_exact_i64)
        .ok_or_else(message)
}

fn substr_code_points(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let text = match arg(args, 0) {
        None | Some(Bson::Null) | Some(Bson::Undefined) => {
            return some(Bson::String(String::new()))
        }
        Some(Bson::String(s)) => s.clone(),
        Some(other) => value_to_string(other),
    };
    let start = integer_arg(arg(args, 1), || {
        QueryError::location(34450, "$substrCP: starting index must be a numeric type")
    })?;
    let length = integer_arg(arg(args, 2), || {
        QueryError::location(34452, "$substrCP: length must be a numeric type")
    })?;
    if start < 0 || length < 0 {
        return Err(QueryError::location(
            34451,
            "$substrCP: starting index and length must be non-negative",
        ));
    }
    some(Bson::String(
        text.chars()
            .skip(start as usize)
            .take(length as usize)
            .collect(),
    ))
}

fn split(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let (text, delimiter) = (
        args.first().cloned().flatten(),
        args.get(1).cloned().flatten(),
    );
    if is_nullish(&text) {
        return some(Bson::Null);
    }
    match (text, delimiter) {
        (Some(Bson::String(s)), Some(Bson::String(d))) if !d.is_empty() => some(Bson::Array(
            s.split(d.as_str()).map(|p| Bson::String(p.to_string())).collect(),
        )),
        (Some(Bson::String(_)), Some(Bson::String(_))) => Err(QueryError::location(
            40087,
            "$split requires a non-empty separator",
        )),
        (Some(Bson::String(_)), other) => Err(QueryError::location(
            40086,
            format!("$split requires an expression that evaluates to a string as a second argument, found: {}", type_name(other.as_ref())),
        )),
        (other, _) => Err(QueryError::location(
            40085,
            format!("$split requires an expression that evaluates to a string as a first argument, found: {}", type_name(other.as_ref())),
        )),
    }
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
