//! Bitwise expression operators (MongoDB 6.3+): $bitAnd, $bitOr, $bitXor over any number of
//! int/long operands and $bitNot of one. The result is an int when every operand is an int,
//! else a long; a null or missing operand gives null; any other type is 14 TypeMismatch
//! ("… only supports int and long operands."), and $bitNot of a non-number is 28765.
//!
//! Not for: the `$bitsAllSet`-style query operators (`filter/`) or `$bit` updates.

use super::more::MoreOperator;
use super::operator::{misrouted, type_name};
use crate::query::error::QueryError;
use bson::Bson;

/// An int or long operand.
enum Integral {
    Int(i32),
    Long(i64),
}

fn integral(v: Option<&Bson>) -> Option<Integral> {
    match v {
        Some(Bson::Int32(i)) => Some(Integral::Int(*i)),
        Some(Bson::Int64(i)) => Some(Integral::Long(*i)),
        _ => None,
    }
}

fn nullish(v: &Option<Bson>) -> bool {
    matches!(v, None | Some(Bson::Null) | Some(Bson::Undefined))
}

/// Applies the bitwise operators to evaluated arguments.
pub(super) fn apply_more(
    op: MoreOperator,
    args: &[Option<Bson>],
) -> Result<Option<Bson>, QueryError> {
    let (name, identity, combine): (&str, i64, fn(i64, i64) -> i64) = match op {
        MoreOperator::BitAnd => ("$bitAnd", -1, |a, b| a & b),
        MoreOperator::BitOr => ("$bitOr", 0, |a, b| a | b),
        MoreOperator::BitXor => ("$bitXor", 0, |a, b| a ^ b),
        MoreOperator::BitNot => return bit_not(args.first().and_then(Option::as_ref)),
        _ => return Err(misrouted(op)),
    };
    let mut all_int = true;
    let mut value = identity;
    for a in args {
        if nullish(a) {
            return Ok(Some(Bson::Null));
        }
        match integral(a.as_ref()) {
            Some(Integral::Int(i)) => value = combine(value, i64::from(i)),
            Some(Integral::Long(l)) => {
                all_int = false;
                value = combine(value, l);
            }
            None => {
                return Err(QueryError::type_mismatch(format!(
                    "{name} only supports int and long operands."
                )))
            }
        }
    }
    Ok(Some(if all_int {
        // Every operand fit in 32 bits, so the combined bits do too.
        Bson::Int32(value as i32)
    } else {
        Bson::Int64(value)
    }))
}

fn bit_not(v: Option<&Bson>) -> Result<Option<Bson>, QueryError> {
    match v {
        None | Some(Bson::Null) | Some(Bson::Undefined) => Ok(Some(Bson::Null)),
        Some(Bson::Int32(i)) => Ok(Some(Bson::Int32(!i))),
        Some(Bson::Int64(l)) => Ok(Some(Bson::Int64(!l))),
        Some(Bson::Double(_)) | Some(Bson::Decimal128(_)) => Err(QueryError::type_mismatch(
            format!("$bitNot only supports int and long, not: {}.", type_name(v)),
        )),
        other => Err(QueryError::location(
            28765,
            format!(
                "$bitNot only supports numeric types, not {}",
                type_name(other)
            ),
        )),
    }
}
