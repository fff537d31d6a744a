//! Comparison, boolean and type expression operators: $eq, $ne, $gt, $gte, $lt, $lte, $cmp
//! (MongoDB's order, missing below null), $and, $or, $not, $ifNull, $type and $isNumber.
//!
//! Not for: the short-circuiting forms ($cond, $switch), which the evaluator handles
//! (`expr/mod.rs`).

use super::operator::{arg, compare_optional, is_nullish, misrouted, some, type_name, Operator};
use crate::query::error::QueryError;
use crate::query::value::number::Number;
use bson::Bson;
use std::cmp::Ordering;

/// Applies the comparison, boolean and type operators (arity already checked by the parser).
pub(super) fn apply(op: Operator, args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    use Operator::*;
    match op {
        Eq | Ne | Gt | Gte | Lt | Lte | Cmp => {
            let order = compare_optional(arg(args, 0), arg(args, 1));
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
            a.as_ref()
                .map(crate::query::value::truthy::truthy)
                .unwrap_or(false)
        }))),
        Or => some(Bson::Boolean(args.iter().any(|a| {
            a.as_ref()
                .map(crate::query::value::truthy::truthy)
                .unwrap_or(false)
        }))),
        Not => some(Bson::Boolean(
            !arg(args, 0)
                .map(crate::query::value::truthy::truthy)
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
        Type => some(Bson::String(type_name(arg(args, 0)).to_string())),
        IsNumber => some(Bson::Boolean(
            arg(args, 0).and_then(Number::from_bson).is_some(),
        )),
        _ => Err(misrouted(op)),
    }
}
