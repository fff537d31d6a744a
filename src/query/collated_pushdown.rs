//! What the planner may push to SQL under a non-simple collation: SQL compares strings by
//! their bytes, so every field condition whose outcome may depend on how strings compare is
//! taken out of the filter the planner translates (the residual filter, evaluated in Rust
//! under the collator, stays the judge) — except equality, `$in` and range conditions on a
//! path an index with the same collation serves: its keys are the collator's sort keys, so
//! its ranges (computed with the collation installed) are exact.
//!
//! Not for: planning itself (`planner.rs`) or comparing under a collation
//! (`value/collation.rs`).

use bson::Bson;

use crate::query::filter::{ElemMatch, FieldPredicate, Filter};

/// The filter without the field conditions that compare strings (which SQL would decide by
/// their bytes), and whether nothing was taken out. Taking a condition out only widens what
/// the pushed predicate selects (`$nor` is never pushed), so the residual stays the judge.
pub(super) fn without_string_comparisons(
    filter: &Filter,
    collated_index_on: &dyn Fn(&str) -> bool,
) -> (Filter, bool) {
    match filter {
        Filter::And(parts) | Filter::Or(parts) => {
            let mut complete = true;
            let parts = parts
                .iter()
                .map(|part| {
                    let (part, whole) = without_string_comparisons(part, collated_index_on);
                    complete &= whole;
                    part
                })
                .collect();
            let rebuilt = match filter {
                Filter::And(_) => Filter::And(parts),
                _ => Filter::Or(parts),
            };
            (rebuilt, complete)
        }
        Filter::Field { path, predicates } => {
            let kept: Vec<FieldPredicate> = predicates
                .iter()
                .filter(|p| {
                    !compares_strings(p) || (collated_index_on(path) && served_by_index_keys(p))
                })
                .cloned()
                .collect();
            let complete = kept.len() == predicates.len();
            let field = Filter::Field {
                path: path.clone(),
                predicates: kept,
            };
            (field, complete)
        }
        other => (other.clone(), true),
    }
}

/// Whether a condition's outcome may depend on how strings compare.
pub(super) fn compares_strings(predicate: &FieldPredicate) -> bool {
    match predicate {
        FieldPredicate::Eq(v)
        | FieldPredicate::Ne(v)
        | FieldPredicate::Gt(v)
        | FieldPredicate::Gte(v)
        | FieldPredicate::Lt(v)
        | FieldPredicate::Lte(v) => holds_string(v),
        FieldPredicate::In(values) | FieldPredicate::Nin(values) => values.iter().any(holds_string),
        FieldPredicate::All(parts) | FieldPredicate::Not(parts) => {
            parts.iter().any(compares_strings)
        }
        FieldPredicate::ElemMatch(ElemMatch::Value(parts)) => parts.iter().any(compares_strings),
        FieldPredicate::ElemMatch(ElemMatch::Document(inner)) => {
            !without_string_comparisons(inner, &|_| false).1
        }
        FieldPredicate::Exists(_)
        | FieldPredicate::Type(_)
        | FieldPredicate::Regex(_)
        | FieldPredicate::Size(_)
        | FieldPredicate::Mod { .. }
        | FieldPredicate::Bits { .. } => false,
    }
}

/// A condition the planner pushes only as an index range (never as a path comparison in
/// SQL) when an index holds its path: equality to a string, `$in` of strings and values
/// without strings, a range bounded by a string.
fn served_by_index_keys(predicate: &FieldPredicate) -> bool {
    match predicate {
        FieldPredicate::Eq(v)
        | FieldPredicate::Gt(v)
        | FieldPredicate::Gte(v)
        | FieldPredicate::Lt(v)
        | FieldPredicate::Lte(v) => matches!(v, Bson::String(_)),
        FieldPredicate::In(values) => values
            .iter()
            .all(|v| matches!(v, Bson::String(_)) || !holds_string(v)),
        _ => false,
    }
}

fn holds_string(value: &Bson) -> bool {
    match value {
        Bson::String(_) | Bson::Symbol(_) | Bson::MinKey | Bson::MaxKey => true,
        Bson::Document(d) => d.values().any(holds_string),
        Bson::Array(items) => items.iter().any(holds_string),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::NO_INDEXES;
    use crate::query::planner::ReadPlan;
    use crate::query::{Collation, SortSpec};
    use bson::doc;

    fn collated(filter: bson::Document, sort: Option<bson::Document>) -> ReadPlan {
        let collation = Collation::parse(&doc! {"locale": "en", "strength": 2}).unwrap();
        let sort = sort.map(|s| SortSpec::parse(&s).unwrap());
        ReadPlan::collated(
            Filter::parse(&filter).unwrap(),
            sort,
            0,
            None,
            NO_INDEXES,
            collation,
        )
    }

    #[test]
    fn string_conditions_stay_in_rust_and_others_are_pushed() {
        for filter in [
            doc! {"_id": "ada"},
            doc! {"name": "ada"},
            doc! {"name": {"$in": [1, "x"]}},
            doc! {"sub": {"k": "x"}},
            doc! {"$or": [{"a": 1}, {"b": "x"}]},
            doc! {"tags": {"$elemMatch": {"k": {"$gt": "m"}}}},
            doc! {"a": {"$gt": {"$minKey": 1}}},
        ] {
            let plan = collated(filter.clone(), None);
            assert!(
                plan.residual.is_some(),
                "{filter} must be re-checked in Rust"
            );
        }
        let plan = collated(doc! {"_id": {"$gte": 5, "$lt": 9}}, None);
        assert!(
            plan.residual.is_none(),
            "numbers compare the same under any collation"
        );
        let simple = ReadPlan::new(
            Filter::parse(&doc! {"_id": "ada"}).unwrap(),
            None,
            0,
            None,
            NO_INDEXES,
        );
        assert!(simple.residual.is_none());
    }

    #[test]
    fn no_sort_is_pushed_under_a_collation() {
        let plan = collated(doc! {}, Some(doc! {"_id": 1}));
        assert!(plan.sort.is_some() && plan.scan.order.is_none());
    }

    #[test]
    fn taking_conditions_out_only_widens_the_filter() {
        let filter = Filter::parse(&doc! {"a": "x", "b": {"$gt": 1}}).unwrap();
        let (pushable, complete) = without_string_comparisons(&filter, &|_| false);
        assert!(!complete);
        assert!(pushable.matches(&doc! {"a": "y", "b": 2}));
        assert!(!pushable.matches(&doc! {"a": "x", "b": 0}));
    }
}
