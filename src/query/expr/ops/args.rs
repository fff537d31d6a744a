//! Argument checks shared by the operator families: null-ish values, numbers, integers,
//! strings and arrays with MongoDB's "only supports numeric types" style errors, and the
//! double-or-decimal result of the float functions.
//!
//! Not for: evaluating any operator.

use super::operator::type_name;
use crate::query::error::QueryError;
use crate::query::value::number::{to_decimal, Number};
use bson::Bson;

pub(super) fn nullish(v: Option<&Bson>) -> bool {
    matches!(v, None | Some(Bson::Null) | Some(Bson::Undefined))
}

pub(super) fn number(v: Option<&Bson>, op: &str, code: i32) -> Result<Option<Number>, QueryError> {
    if nullish(v) {
        return Ok(None);
    }
    match v.and_then(Number::from_bson) {
        Some(n) => Ok(Some(n)),
        None => Err(QueryError::location(
            code,
            format!("{op} only supports numeric types, not {}", type_name(v)),
        )),
    }
}

pub(super) fn integer(v: Option<&Bson>, what: &str, code: i32) -> Result<i64, QueryError> {
    v.and_then(Number::from_bson)
        .and_then(Number::to_exact_i64)
        .ok_or_else(|| {
            QueryError::location(
                code,
                format!("{what} must be an integral number, found {}", type_name(v)),
            )
        })
}

pub(super) fn string<'a>(v: Option<&'a Bson>, op: &str, code: i32) -> Result<&'a str, QueryError> {
    match v {
        Some(Bson::String(s)) | Some(Bson::Symbol(s)) => Ok(s),
        other => Err(QueryError::location(
            code,
            format!(
                "{op} requires a string argument, found: {}",
                type_name(other)
            ),
        )),
    }
}

pub(super) fn array<'a>(
    v: Option<&'a Bson>,
    op: &str,
    code: i32,
) -> Result<&'a Vec<Bson>, QueryError> {
    match v {
        Some(Bson::Array(items)) => Ok(items),
        other => Err(QueryError::location(
            code,
            format!(
                "{op}'s argument must be an array, but is {}",
                type_name(other)
            ),
        )),
    }
}

pub(super) fn float_result(n: Number, f: impl Fn(f64) -> f64) -> Bson {
    match n {
        Number::Decimal(_) => Bson::Decimal128(to_decimal(Number::Double(f(n.to_f64())))),
        _ => Bson::Double(f(n.to_f64())),
    }
}
