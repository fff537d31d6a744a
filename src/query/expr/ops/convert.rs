//! Type conversion expressions ($toString, $toInt, $toLong, $toDouble, $toDecimal, $toBool)
//! with MongoDB's ConversionFailure (241) on values that do not convert, and `$convert`'s
//! conversion itself ([`convert_to`]: a target named by type name or BSON type code, `date`
//! and `objectId` included).
//!
//! Not for: `$convert`'s `onNull` and `onError`, which the evaluator (`expr/mod.rs`, the
//! `Node::Convert` arm) applies around [`convert_to`] — `onNull` when the input is null or
//! missing, `onError` only on a ConversionFailure (241); any other error still fails.

use crate::query::error::QueryError;
use crate::query::expr::ops::operator::{type_name, value_to_string, Operator};
use crate::query::value::number::{to_decimal, Number};
use bson::Bson;

fn failure(message: String) -> QueryError {
    QueryError {
        code: 241,
        code_name: "ConversionFailure",
        message,
    }
}

/// `$convert` to a target given as a type name ("int", "string", …) or BSON type code.
pub fn convert_to(value: Option<&Bson>, target: Option<&Bson>) -> Result<Option<Bson>, QueryError> {
    let name = match target {
        Some(Bson::String(s)) => s.clone(),
        Some(other) => match crate::query::value::number::Number::from_bson(other)
            .and_then(|n| n.to_exact_i64())
        {
            Some(1) => "double".into(),
            Some(2) => "string".into(),
            Some(7) => "objectId".into(),
            Some(8) => "bool".into(),
            Some(9) => "date".into(),
            Some(16) => "int".into(),
            Some(18) => "long".into(),
            Some(19) => "decimal".into(),
            _ => {
                return Err(QueryError::failed_to_parse(format!(
                    "Unknown type name: {other}"
                )))
            }
        },
        None => return Ok(Some(Bson::Null)),
    };
    let op = match name.as_str() {
        "double" => Operator::ToDouble,
        "string" => Operator::ToString,
        "bool" => Operator::ToBool,
        "int" => Operator::ToInt,
        "long" => Operator::ToLong,
        "decimal" => Operator::ToDecimal,
        "date" => {
            return crate::query::expr::ops::date::apply(
                crate::query::expr::ops::date::DateOperator::ToDate,
                &[value.cloned()],
            )
        }
        "objectId" => {
            return match value {
                Some(Bson::ObjectId(oid)) => Ok(Some(Bson::ObjectId(*oid))),
                Some(Bson::String(s)) => bson::oid::ObjectId::parse_str(s)
                    .map(|oid| Some(Bson::ObjectId(oid)))
                    .map_err(|_| {
                        failure(format!(
                            "Failed to parse objectId '{s}' in $convert with no onError value"
                        ))
                    }),
                other => Err(failure(format!(
                    "Unsupported conversion from {} to objectId in $convert with no onError value",
                    type_name(other)
                ))),
            }
        }
        other => return Err(QueryError::bad_value(format!("Unknown type name: {other}"))),
    };
    convert(op, value)
}

/// Converts `value` as the given `$to…` operator does; null and missing give null.
pub fn convert(op: Operator, value: Option<&Bson>) -> Result<Option<Bson>, QueryError> {
    let Some(value) = value else {
        return Ok(Some(Bson::Null));
    };
    if matches!(value, Bson::Null | Bson::Undefined) {
        return Ok(Some(Bson::Null));
    }
    let unsupported = || {
        failure(format!(
            "Unsupported conversion from {} to {} in $convert with no onError value",
            type_name(Some(value)),
            match op {
                Operator::ToString => "string",
                Operator::ToInt => "int",
                Operator::ToLong => "long",
                Operator::ToDouble => "double",
                Operator::ToDecimal => "decimal",
                _ => "bool",
            }
        ))
    };
    let result = match op {
        Operator::ToString => match value {
            Bson::ObjectId(oid) => Bson::String(oid.to_hex()),
            Bson::Boolean(b) => Bson::String(b.to_string()),
            Bson::DateTime(dt) => Bson::String(
                dt.try_to_rfc3339_string()
                    .unwrap_or_else(|_| dt.timestamp_millis().to_string()),
            ),
            Bson::String(_)
            | Bson::Symbol(_)
            | Bson::Int32(_)
            | Bson::Int64(_)
            | Bson::Double(_)
            | Bson::Decimal128(_) => Bson::String(value_to_string(value)),
            _ => return Err(unsupported()),
        },
        Operator::ToBool => match value {
            Bson::Boolean(b) => Bson::Boolean(*b),
            _ if Number::from_bson(value).is_some() => {
                Bson::Boolean(crate::query::value::truthy::truthy(value))
            }
            _ => Bson::Boolean(true),
        },
        Operator::ToDouble => match value {
            Bson::Boolean(b) => Bson::Double(if *b { 1.0 } else { 0.0 }),
            Bson::DateTime(dt) => Bson::Double(dt.timestamp_millis() as f64),
            Bson::String(s) => Bson::Double(s.trim().parse::<f64>().map_err(|_| {
                failure(format!(
                    "Failed to parse number '{s}' in $convert with no onError value"
                ))
            })?),
            _ => match Number::from_bson(value) {
                Some(n) => Bson::Double(n.to_f64()),
                None => return Err(unsupported()),
            },
        },
        Operator::ToDecimal => match value {
            Bson::Boolean(b) => Bson::Decimal128(to_decimal(Number::Int(i64::from(*b)))),
            Bson::String(s) => Bson::Decimal128(s.trim().parse().map_err(|_| {
                failure(format!(
                    "Failed to parse number '{s}' in $convert with no onError value"
                ))
            })?),
            _ => match Number::from_bson(value) {
                Some(n) => Bson::Decimal128(to_decimal(n)),
                None => return Err(unsupported()),
            },
        },
        Operator::ToInt | Operator::ToLong => {
            let whole: i64 = match value {
                Bson::Boolean(b) => i64::from(*b),
                Bson::DateTime(dt) if op == Operator::ToLong => dt.timestamp_millis(),
                Bson::String(s) => s.trim().parse::<i64>().map_err(|_| {
                    failure(format!(
                        "Failed to parse number '{s}' in $convert with no onError value"
                    ))
                })?,
                _ => {
                    let n = Number::from_bson(value).ok_or_else(unsupported)?;
                    let f = n.to_f64();
                    if !f.is_finite() {
                        return Err(failure(format!(
                            "Attempt to convert NaN or infinity value to integer type in $convert with no onError value: {value}"
                        )));
                    }
                    match n.to_exact_i64() {
                        Some(i) => i,
                        None if f.abs() < 9.2e18 => f.trunc() as i64,
                        None => {
                            return Err(failure(format!(
                                "Conversion would overflow target type in $convert with no onError value: {value}"
                            )))
                        }
                    }
                }
            };
            if op == Operator::ToInt {
                Bson::Int32(i32::try_from(whole).map_err(|_| {
                    failure(format!(
                        "Conversion would overflow target type in $convert with no onError value: {value}"
                    ))
                })?)
            } else {
                Bson::Int64(whole)
            }
        }
        _ => return Err(unsupported()),
    };
    Ok(Some(result))
}
