//! Stages whose output follows from how many documents reach them, not from what the
//! documents hold: `$count`, and a `$group` by a constant whose accumulators are `$count`,
//! `$sum` of an integer constant, or `$min`/`$max`/`$first`/`$last` of a constant (what
//! `count_documents` sends). The core runs them from the store's SQL `COUNT(*)` of an exact
//! filter; the output is exactly what the stage gives over that many documents (`$sum` types
//! and overflow are `NumericSum`'s).
//!
//! Not for: deciding when the count may come from SQL (`ops/aggregate_pushdown.rs`).

use super::accumulators::{AccumulatorKind, AccumulatorSpec, AccumulatorState};
use super::Stage;
use crate::query::value::numeric_sum::NumericSum;
use bson::{Bson, Document};

/// Whether `stage`'s output follows from the number of its input documents alone.
pub fn is_counted(stage: &Stage) -> bool {
    match stage {
        Stage::Count(_) => true,
        Stage::Group { id, accumulators } => {
            id.as_literal().is_some() && accumulators.iter().all(accumulator_is_counted)
        }
        _ => false,
    }
}

/// What `stage` (one that [`is_counted`]) outputs over `n` documents; None for any other
/// stage, or a total no BSON number holds exactly as the stage would.
pub fn counted_output(stage: &Stage, n: u64) -> Option<Vec<Document>> {
    if !is_counted(stage) {
        return None;
    }
    if n == 0 {
        // No input, no group and no count document.
        return Some(Vec::new());
    }
    match stage {
        Stage::Count(field) => {
            let n = i64::try_from(n).ok()?;
            let value = i32::try_from(n).map_or(Bson::Int64(n), Bson::Int32);
            let mut out = Document::new();
            out.insert(field.clone(), value);
            Some(vec![out])
        }
        Stage::Group { id, accumulators } => {
            let mut group = Document::new();
            group.insert("_id", id.as_literal()?.clone());
            for spec in accumulators {
                group.insert(spec.field.clone(), counted_value(spec, n)?);
            }
            Some(vec![group])
        }
        _ => None,
    }
}

fn accumulator_is_counted(spec: &AccumulatorSpec) -> bool {
    let Some(literal) = spec.argument.as_literal() else {
        return false;
    };
    match spec.kind {
        AccumulatorKind::Sum | AccumulatorKind::Count => {
            matches!(literal, Bson::Int32(_) | Bson::Int64(_))
        }
        AccumulatorKind::Min
        | AccumulatorKind::Max
        | AccumulatorKind::First
        | AccumulatorKind::Last => spec.n.is_none() && spec.sort_by.is_none(),
        _ => false,
    }
}

/// The accumulator's result over `n` (at least one) documents.
fn counted_value(spec: &AccumulatorSpec, n: u64) -> Option<Bson> {
    let literal = spec.argument.as_literal()?;
    match spec.kind {
        AccumulatorKind::Sum | AccumulatorKind::Count => {
            NumericSum::repeated_integer_total(literal, n)
        }
        _ => {
            // The same constant n times: its min, max, first and last are that one value.
            let mut state = AccumulatorState::new(spec.kind);
            state.add(spec.argument.evaluate_optional(&Document::new()).ok()?);
            Some(state.finish())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::aggregate::Pipeline;
    use bson::doc;

    /// The counted output equals running the stage over that many documents.
    #[test]
    fn counted_output_is_the_stage_over_that_many_documents() {
        let stages = [
            doc! {"$count": "n"},
            doc! {"$group": {"_id": null, "n": {"$sum": 1}}},
            doc! {"$group": {"_id": 1, "n": {"$count": {}}, "s": {"$sum": 3_i64}, "m": {"$min": "x"}, "f": {"$first": null}, "l": {"$last": 2.5}, "x": {"$max": {"$literal": [1]}}}},
            doc! {"$group": {"_id": "k", "big": {"$sum": 2_000_000_000}, "neg": {"$sum": -7}}},
            doc! {"$group": {"_id": null, "huge": {"$sum": i64::MAX}}},
        ];
        for stage in stages {
            let pipeline = Pipeline::parse(std::slice::from_ref(&stage)).unwrap();
            let first = &pipeline.stages[0];
            assert!(is_counted(first), "{stage}");
            for n in [0_u64, 1, 2, 3, 7] {
                let input: Vec<Document> = (0..n).map(|i| doc! {"i": i as i64}).collect();
                assert_eq!(
                    counted_output(first, n),
                    Some(pipeline.run(input).unwrap()),
                    "{stage} over {n}"
                );
            }
        }
    }

    #[test]
    fn a_group_by_a_field_or_summing_a_field_is_not_counted() {
        for stage in [
            doc! {"$group": {"_id": "$k", "n": {"$sum": 1}}},
            doc! {"$group": {"_id": null, "n": {"$sum": "$v"}}},
            doc! {"$group": {"_id": null, "n": {"$sum": 1.5}}},
            doc! {"$group": {"_id": null, "n": {"$avg": 1}}},
            doc! {"$group": {"_id": null, "n": {"$push": 1}}},
        ] {
            let pipeline = Pipeline::parse(std::slice::from_ref(&stage)).unwrap();
            assert!(!is_counted(&pipeline.stages[0]), "{stage}");
        }
    }
}
