//! Arithmetic expression operators: $add, $subtract, $multiply, $divide, $mod, $abs, $ceil,
//! $floor, $trunc, $round, $sqrt, $pow, $exp, $ln, $log10 and $log, with MongoDB's type
//! promotion (int → long → double, decimal apart) and error codes.
//!
//! Not for: date arithmetic (`date_math.rs`) or the `$sum`/`$avg` of arrays (`array.rs`).

use super::args::*;
use super::more::MoreOperator;
use super::operator::{arg, is_nullish, misrouted, some, type_name, Operator};
use crate::query::error::QueryError;
use crate::query::value::number::{
    arithmetic, exact_value, round_half_even, to_decimal, Arithmetic, Number,
};
use bson::Bson;

/// Applies the arithmetic operators (arity already checked by the parser).
pub(super) fn apply(op: Operator, args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    use Operator::*;
    match op {
        Add => add(args),
        Subtract => subtract(args),
        Multiply => multiply(args),
        Divide => divide(args),
        Mod => modulo(args),
        Abs | Ceil | Floor | Trunc => rounding(op, args),
        _ => Err(misrouted(op)),
    }
}

/// Applies the arithmetic operators to evaluated arguments.
pub(super) fn apply_more(
    op: MoreOperator,
    args: &[Option<Bson>],
) -> Result<Option<Bson>, QueryError> {
    use MoreOperator::*;
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    let null = Ok(Some(Bson::Null));
    Ok(Some(match op {
        Round => {
            let Some(n) = number(arg(0), "$round", 51081)? else {
                return null;
            };
            let place = if nullish(arg(1)) {
                0
            } else {
                integer(arg(1), "place", 51082)?
            };
            match n {
                Number::Int(_) if place >= 0 => arg(0).cloned().unwrap_or(Bson::Null),
                _ => {
                    // MongoDB rounds doubles through their 15-significant-digit decimal form.
                    let Some(exact) = exact_value(Number::Decimal(to_decimal(n))) else {
                        return Ok(arg(0).cloned());
                    };
                    let rounded = round_half_even(&exact, place.clamp(-40, 40));
                    match (n, arg(0)) {
                        (Number::Decimal(d), _) => {
                            // The result keeps `place` decimals (or the input's, if fewer).
                            let quantum =
                                crate::query::value::decimal::raw_exponent(&d).unwrap_or(0);
                            let ideal = quantum.max(-(place.clamp(-40, 40) as i32));
                            Bson::Decimal128(
                                crate::query::value::decimal::decimal_with_ideal_exponent(
                                    &rounded, ideal,
                                ),
                            )
                        }
                        (_, Some(Bson::Int32(_))) => {
                            Bson::Int32(rounded.to_i64_exact().unwrap_or(0) as i32)
                        }
                        (_, Some(Bson::Int64(_))) => {
                            Bson::Int64(rounded.to_i64_exact().unwrap_or(0))
                        }
                        _ => {
                            Bson::Double(rounded.to_scientific_string().parse().unwrap_or(f64::NAN))
                        }
                    }
                }
            }
        }
        Sqrt => {
            let Some(n) = number(arg(0), "$sqrt", 28765)? else {
                return null;
            };
            if n.to_f64() < 0.0 {
                return Err(QueryError::location(
                    28714,
                    "$sqrt's argument must be greater than or equal to 0",
                ));
            }
            float_result(n, f64::sqrt)
        }
        Exp => match number(arg(0), "$exp", 28765)? {
            Some(n) => float_result(n, f64::exp),
            None => return null,
        },
        Ln | Log10 => {
            let Some(n) = number(arg(0), if op == Ln { "$ln" } else { "$log10" }, 28765)? else {
                return null;
            };
            if n.to_f64() <= 0.0 {
                return Err(QueryError::location(
                    28766,
                    "$ln's argument must be a positive number",
                ));
            }
            float_result(n, if op == Ln { f64::ln } else { f64::log10 })
        }
        Log => {
            let (Some(n), Some(base)) = (
                number(arg(0), "$log", 28756)?,
                number(arg(1), "$log", 28757)?,
            ) else {
                return null;
            };
            if n.to_f64() <= 0.0 || base.to_f64() <= 0.0 || base.to_f64() == 1.0 {
                return Err(QueryError::location(
                    28758,
                    "$log's base must be a positive number not equal to 1",
                ));
            }
            let b = base.to_f64();
            float_result(n, |x| x.ln() / b.ln())
        }
        Pow => {
            let (Some(b), Some(e)) = (
                number(arg(0), "$pow", 28762)?,
                number(arg(1), "$pow", 28763)?,
            ) else {
                return null;
            };
            match (arg(0), arg(1), b.to_exact_i64(), e.to_exact_i64()) {
                (
                    Some(Bson::Int32(_) | Bson::Int64(_)),
                    Some(Bson::Int32(_) | Bson::Int64(_)),
                    Some(base),
                    Some(exp),
                ) if exp >= 0 => match u32::try_from(exp).ok().and_then(|x| base.checked_pow(x)) {
                    Some(v)
                        if matches!(
                            (arg(0), arg(1)),
                            (Some(Bson::Int32(_)), Some(Bson::Int32(_)))
                        ) =>
                    {
                        i32::try_from(v).map(Bson::Int32).unwrap_or(Bson::Int64(v))
                    }
                    Some(v) => Bson::Int64(v),
                    None => Bson::Double((base as f64).powf(exp as f64)),
                },
                _ if b.to_f64() == 0.0 && e.to_f64() < 0.0 => {
                    return Err(QueryError::location(
                        28764,
                        "$pow cannot take a base of 0 and a negative exponent",
                    ))
                }
                _ => {
                    let ex = e.to_f64();
                    if matches!(e, Number::Decimal(_)) {
                        float_result(e, |_| b.to_f64().powf(ex))
                    } else {
                        float_result(b, |x| x.powf(ex))
                    }
                }
            }
        }
        _ => return Err(misrouted(op)),
    }))
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
