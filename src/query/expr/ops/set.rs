//! Set expression operators: $setUnion, $setIntersection, $setDifference, $setEquals and
//! $setIsSubset, under MongoDB equality (`value/value_set.rs`).
//!
//! Not for: other array operators (`array.rs`).

use super::args::*;
use super::more::MoreOperator;
use super::operator::misrouted;
use crate::query::error::QueryError;
use crate::query::value::value_set::{dedup, ValueSet};
use bson::Bson;

/// Applies the set operators to evaluated arguments.
pub(super) fn apply_more(
    op: MoreOperator,
    args: &[Option<Bson>],
) -> Result<Option<Bson>, QueryError> {
    use MoreOperator::*;
    let null = Ok(Some(Bson::Null));
    Ok(Some(match op {
        SetUnion | SetIntersection | SetDifference | SetEquals | SetIsSubset => {
            if args.iter().any(|a| nullish(a.as_ref()))
                && matches!(op, SetUnion | SetIntersection | SetDifference)
            {
                return null;
            }
            let mut inputs = Vec::with_capacity(args.len());
            for a in args {
                inputs.push(array(a.as_ref(), "set operator", 17044)?);
            }
            if op == SetUnion {
                return Ok(Some(Bson::Array(
                    dedup(inputs.into_iter().flatten().cloned())?.0,
                )));
            }
            // Each input without repeats, in first-occurrence order, with its keys.
            let sets: Vec<(Vec<Bson>, ValueSet)> = inputs
                .into_iter()
                .map(|items| dedup(items.iter().cloned()))
                .collect::<Result<_, _>>()?;
            match (op, sets.as_slice()) {
                (SetIntersection, [(first, _), ..]) => Bson::Array(
                    first
                        .iter()
                        .filter(|v| sets.iter().all(|(_, s)| s.contains(v)))
                        .cloned()
                        .collect(),
                ),
                (SetIntersection, []) => Bson::Array(Vec::new()),
                (SetDifference, [(a, _), (_, b), ..]) => {
                    Bson::Array(a.iter().filter(|v| !b.contains(v)).cloned().collect())
                }
                (SetIsSubset, [(a, _), (_, b), ..]) => {
                    Bson::Boolean(a.iter().all(|v| b.contains(v)))
                }
                (SetEquals, _) => Bson::Boolean(sets.windows(2).all(|w| {
                    let ((a, a_keys), (b, b_keys)) = (&w[0], &w[1]);
                    a.iter().all(|v| b_keys.contains(v)) && b.iter().all(|v| a_keys.contains(v))
                })),
                _ => {
                    return Err(QueryError::location(
                        17044,
                        "set operator is missing an argument",
                    ))
                }
            }
        }
        _ => return Err(misrouted(op)),
    }))
}
