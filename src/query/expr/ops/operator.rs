//! The [`Operator`] enum and the helpers every operator family shares: the MongoDB type
//! name of a value ([`type_name`]), the text of a number ([`value_to_string`]), aggregation
//! comparison with missing below null ([`compare_optional`]) and the argument accessors.
//!
//! Not for: evaluating operators (the family files, dispatched by `mod.rs`).

use crate::query::error::QueryError;
use crate::query::value::compare::compare_values;
use crate::query::value::number::Number;
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
/// dispatch of `ops::apply` or `ops::apply_more`, never a user error).
pub(super) fn misrouted(op: impl std::fmt::Debug) -> QueryError {
    QueryError::bad_value(format!(
        "internal error: {op:?} reached the wrong operator family"
    ))
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
