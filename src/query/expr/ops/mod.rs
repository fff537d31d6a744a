//! The aggregation expression operators evaluated on already-evaluated arguments, with
//! MongoDB's null/missing propagation and error codes (`None` stands for a missing value
//! throughout). [`apply`] hands each [`Operator`] to its family — `arithmetic.rs`,
//! `comparison.rs` (with boolean and type operators), `string.rs`, `array.rs`, `set.rs`,
//! `object.rs`, `convert.rs`, `date.rs` / `date_math.rs` — and [`apply_more`] does the same
//! for the later operators of [`more::MoreOperator`]. The enum and the helpers the families
//! share ([`type_name`], [`value_to_string`], …) are in `operator.rs`, the argument checks in
//! `args.rs`.
//!
//! Not for: operators that bind variables or short-circuit ($cond, $let, $map, $filter,
//! $reduce, $switch, $and, $or), which `expr/mod.rs` evaluates itself, or parsing
//! (`expr/parse.rs`).

mod args;
mod arithmetic;
mod array;
mod array_n;
pub(crate) use array_n::percentile;
mod bitwise;
mod comparison;
pub mod convert;
pub mod date;
pub mod date_math;
mod hashed_key;
pub mod more;
mod object;
mod operator;
mod set;
mod string;
mod string_search;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_mongo7;
pub mod trigonometry;
mod value_parts;

use operator::arg;
pub use operator::{type_name, value_to_string, Operator};

use crate::query::error::QueryError;
use bson::Bson;

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
        More(more_op) => apply_more(more_op, &args),
    }
}

/// Applies an extra operator to evaluated arguments, through its family.
pub fn apply_more(
    op: more::MoreOperator,
    args: &[Option<Bson>],
) -> Result<Option<Bson>, QueryError> {
    use more::MoreOperator::*;
    match op {
        Round | Sqrt | Exp | Ln | Log10 | Log | Pow => arithmetic::apply_more(op, args),
        Trim | LeftTrim | RightTrim | SubstrBytes | IndexOfCodePoint | StrCaseCmp | RegexMatch => {
            string::apply_more(op, args)
        }
        ReverseArray | Range | Slice | IndexOfArray | AnyElementTrue | AllElementsTrue
        | SortArray => array::apply_more(op, args),
        SetUnion | SetIntersection | SetDifference | SetEquals | SetIsSubset => {
            set::apply_more(op, args)
        }
        MergeObjects | ObjectToArray | ArrayToObject | GetField | SetField => {
            object::apply_more(op, args)
        }
        FirstN | LastN | MaxN | MinN | Zip | StdDevPop | StdDevSamp | Percentile => {
            array_n::apply_more(op, args)
        }
        IndexOfBytes | RegexFind | RegexFindAll | ReplaceOne | ReplaceAll => {
            string_search::apply_more(op, args)
        }
        Trigonometric(_) | Atan2 | DegreesToRadians | RadiansToDegrees => {
            trigonometry::apply_more(op, args)
        }
        BitAnd | BitOr | BitXor | BitNot => bitwise::apply_more(op, args),
        BsonSize | BinarySize | TsSecond | TsIncrement | ToObjectId | Rand | ToHashedIndexKey
        | TextScore => value_parts::apply_more(op, args),
    }
}
