//! The aggregation expression operators evaluated on already-evaluated arguments, with
//! MongoDB's null/missing propagation and error codes (`None` stands for a missing value
//! throughout): the [`Operator`] enum, the helpers the families share ([`type_name`],
//! [`value_to_string`], [`compare_optional`]) and [`apply`], which hands each operator to its
//! family — `arithmetic.rs`, `comparison.rs` (with boolean and type operators), `string.rs`,
//! `array.rs`, `set.rs`, `object.rs`, `convert.rs`, `date.rs` / `date_math.rs`. The later
//! operators of [`more::MoreOperator`] reach the same family files through `more.rs`.
//!
//! Not for: operators that bind variables or short-circuit ($cond, $let, $map, $filter,
//! $reduce, $switch, $and, $or), which `expr/mod.rs` evaluates itself, or parsing
//! (`expr/parse.rs`).

mod args;
mod arithmetic;
mod array;
mod comparison;
pub mod convert;
pub mod date;
pub mod date_math;
pub mod more;
mod object;
mod set;
mod string;
#[cfg(test)]
mod tests;

use crate::query::error::QueryError;
use crate::query::value::compare::compare_values;
use crate::query::value::number::{arithmetic, Number};
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
    /// `$and` (short-circuit, evaluated in `expr/mod.rs`)
    And,
    /// `$or` (short-circuit, evaluated in `expr/mod.rs`)
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
    /// Date operators (`expr/ops/date.rs`).
    Date(crate::query::expr::ops::date::DateOperator),
    /// Further math, string, array and object operators (`expr/ops/more.rs`).
    More(crate::query::expr::ops::more::MoreOperator),
}

/// The MongoDB type name of a value; "missing" for `None`.
pub fn type_name(v: Option<&Bson>) -> &'static str {
    v.map_or("missing", crate::query::value::compare::bson_type_name)
}

pub(super) fn is_nullish(v: &Option<Bson>) -> bool {
    matches!(v, None | Some(Bson::Null) | Some(Bson::Undefined))
}

/// Aggregation comparison: a missing value compares like undefined (below null).
pub fn compare_optional(a: Option<&Bson>, b: Option<&Bson>) -> Ordering {
    let undefined = Bson::Undefined;
    compare_values(a.unwrap_or(&undefined), b.unwrap_or(&undefined))
}

pub(super) fn arg(args: &[Option<Bson>], i: usize) -> Option<&Bson> {
    args.get(i).and_then(Option::as_ref)
}

pub(super) fn some(v: Bson) -> Result<Option<Bson>, QueryError> {
    Ok(Some(v))
}

/// The error for an operator handed to a family that does not evaluate it (a bug in the
/// dispatch of [`apply`] or [`more::apply`], never a user error).
pub(super) fn misrouted(op: impl std::fmt::Debug) -> QueryError {
    QueryError::bad_value(format!(
        "internal error: {op:?} reached the wrong operator family"
    ))
}

/// Applies an operator to evaluated arguments (arity already checked by the parser).
pub fn apply(op: Operator, args: Vec<Option<Bson>>) -> Result<Option<Bson>, QueryError> {
    use Operator::*;
    match op {
        Add | Subtract | Multiply | Divide | Mod | Abs | Ceil | Floor | Trunc => {
            arithmetic::apply(op, &args)
        }
        Eq | Ne | Gt | Gte | Lt | Lte | Cmp | And | Or | Not | IfNull | Type | IsNumber => {
            comparison::apply(op, &args)
        }
        Concat | ToUpper | ToLower | StrLenBytes | StrLenCodePoints | SubstrCodePoints | Split => {
            string::apply(op, &args)
        }
        Size | ArrayElemAt | First | Last | In | IsArray | ConcatArrays | Max | Min | Sum | Avg => {
            array::apply(op, &args)
        }
        ToString | ToInt | ToLong | ToDouble | ToDecimal | ToBool => {
            crate::query::expr::ops::convert::convert(op, arg(&args, 0))
        }
        Date(date_op) if date_math::evaluates(date_op) => date_math::apply(date_op, &args),
        Date(date_op) => date::apply(date_op, &args),
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

pub(super) fn integer_arg(
    v: Option<&Bson>,
    message: impl FnOnce() -> QueryError,
) -> Result<i64, QueryError> {
    v.and_then(Number::from_bson)
        .and_then(Number::to_exact_i64)
        .ok_or_else(message)
}
