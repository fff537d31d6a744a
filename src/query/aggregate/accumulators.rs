//! `$group`'s accumulators: parsing one `name: {$acc: <expr>}` entry (with the `n`, `sortBy`
//! and `output` of the selection accumulators) and feeding one document to a group's states.
//!
//! Not for: the running state itself ($sum's type promotion, $avg, $addToSet, …), which lives
//! in `expr/accumulator.rs` because the array forms of `$sum`, `$avg`, `$min` and `$max` are
//! expressions; grouping documents by key (`aggregate/mod.rs`).

use crate::query::error::QueryError;
pub use crate::query::expr::accumulator::{AccumulatorKind, AccumulatorState};
use crate::query::expr::Expression;
use crate::query::sort::{sort_key, SortSpec};
use crate::query::value::number::Number;
use bson::{Bson, Document};

/// One `name: {$acc: <expr>}` entry of a `$group`.
#[derive(Clone, Debug, PartialEq)]
pub struct AccumulatorSpec {
    /// The output field name.
    pub field: String,
    /// Which accumulator.
    pub kind: AccumulatorKind,
    /// The expression evaluated per document.
    pub argument: Expression,
    /// `n` of the `…N` accumulators (evaluated once per group).
    pub n: Option<Expression>,
    /// `sortBy` of `$top`, `$bottom`, `$topN`, `$bottomN`.
    pub sort_by: Option<SortSpec>,
    /// `p` of `$percentile` (an array of numbers), 0.5 for `$median`.
    pub percentiles: Option<Bson>,
}

impl AccumulatorSpec {
    /// Parses `field: {$acc: arg}`.
    pub fn parse(field: &str, spec: &Bson) -> Result<AccumulatorSpec, QueryError> {
        let Bson::Document(d) = spec else {
            return Err(QueryError::location(
                40234,
                format!("The field '{field}' must be an accumulator object"),
            ));
        };
        if d.len() != 1 {
            return Err(QueryError::location(
                40238,
                format!("The field '{field}' must specify one accumulator"),
            ));
        }
        let Some((name, arg)) = d.iter().next() else {
            return Err(QueryError::location(
                40238,
                format!("The field '{field}' must specify one accumulator"),
            ));
        };
        let kind = match name.as_str() {
            "$sum" => AccumulatorKind::Sum,
            "$avg" => AccumulatorKind::Avg,
            "$min" => AccumulatorKind::Min,
            "$max" => AccumulatorKind::Max,
            "$first" => AccumulatorKind::First,
            "$last" => AccumulatorKind::Last,
            "$push" => AccumulatorKind::Push,
            "$addToSet" => AccumulatorKind::AddToSet,
            "$stdDevPop" => AccumulatorKind::StdDevPop,
            "$stdDevSamp" => AccumulatorKind::StdDevSamp,
            "$mergeObjects" => AccumulatorKind::MergeObjects,
            "$count" => {
                if !matches!(arg, Bson::Document(a) if a.is_empty()) {
                    return Err(QueryError::location(
                        40158,
                        "$count takes no arguments, i.e. $count:{}",
                    ));
                }
                return Ok(AccumulatorSpec {
                    field: field.to_string(),
                    kind: AccumulatorKind::Count,
                    argument: Expression::literal(Bson::Int32(1)),
                    n: None,
                    sort_by: None,
                    percentiles: None,
                });
            }
            "$firstN" | "$lastN" | "$maxN" | "$minN" | "$top" | "$bottom" | "$topN"
            | "$bottomN" => return parse_selection(field, name, arg),
            "$percentile" | "$median" => {
                let (input, p) = crate::query::expr::percentile_arguments(name, arg, 0)?;
                return Ok(AccumulatorSpec {
                    field: field.to_string(),
                    kind: AccumulatorKind::Percentile,
                    argument: Expression::parse(input)?,
                    n: None,
                    sort_by: None,
                    percentiles: Some(p),
                });
            }
            // A JavaScript accumulator: MongoDB's answer when it has no script engine.
            "$accumulator" => {
                return Err(QueryError::location(
                    31264,
                    "Cannot run server-side javascript without the javascript engine enabled",
                ))
            }
            other => {
                return Err(QueryError::location(
                    15952,
                    format!("unknown group operator '{other}'"),
                ))
            }
        };
        if matches!(arg, Bson::Array(_)) {
            return Err(QueryError::location(
                40237,
                format!("The {name} accumulator is a unary operator"),
            ));
        }
        Ok(AccumulatorSpec {
            field: field.to_string(),
            kind,
            argument: Expression::parse(arg)?,
            n: None,
            sort_by: None,
            percentiles: None,
        })
    }

    /// A fresh running state of this accumulator for one group or window.
    pub fn new_state(&self) -> AccumulatorState {
        AccumulatorState::new(self.kind).with_percentiles(self.percentiles.clone())
    }
}

/// Parses the selection accumulators, whose argument is a document of named parts.
fn parse_selection(field: &str, name: &str, arg: &Bson) -> Result<AccumulatorSpec, QueryError> {
    let kind = match name {
        "$firstN" => AccumulatorKind::FirstN,
        "$lastN" => AccumulatorKind::LastN,
        "$maxN" => AccumulatorKind::MaxN,
        "$minN" => AccumulatorKind::MinN,
        "$top" => AccumulatorKind::Top,
        "$bottom" => AccumulatorKind::Bottom,
        "$topN" => AccumulatorKind::TopN,
        _ => AccumulatorKind::BottomN,
    };
    let Bson::Document(d) = arg else {
        return Err(QueryError::location(
            5787801,
            format!("specification must be an object; found {name}: {arg}"),
        ));
    };
    let sorted = matches!(
        kind,
        AccumulatorKind::Top
            | AccumulatorKind::Bottom
            | AccumulatorKind::TopN
            | AccumulatorKind::BottomN
    );
    let takes_n = !matches!(kind, AccumulatorKind::Top | AccumulatorKind::Bottom);
    let (value_name, allowed): (&str, &[&str]) = match (sorted, takes_n) {
        (true, true) => ("output", &["sortBy", "output", "n"]),
        (true, false) => ("output", &["sortBy", "output"]),
        _ => ("input", &["input", "n"]),
    };
    for key in d.keys() {
        if !allowed.contains(&key.as_str()) {
            return Err(QueryError::location(
                5787901,
                format!("Unknown argument for {name}: {key}"),
            ));
        }
    }
    let value = d.get(value_name).ok_or_else(|| {
        QueryError::location(
            5788001,
            format!("Missing value for '{value_name}' in {name}"),
        )
    })?;
    let n = if takes_n {
        let n = d.get("n").ok_or_else(|| {
            QueryError::location(5787906, format!("Missing value for 'n' in {name}"))
        })?;
        Some(Expression::parse(n)?)
    } else {
        None
    };
    let sort_by = if sorted {
        match d.get("sortBy") {
            Some(Bson::Document(spec)) => Some(SortSpec::parse(spec)?),
            _ => {
                return Err(QueryError::location(
                    5788003,
                    format!("Missing value for 'sortBy' in {name}"),
                ))
            }
        }
    } else {
        None
    };
    Ok(AccumulatorSpec {
        field: field.to_string(),
        kind,
        argument: Expression::parse(value)?,
        n,
        sort_by,
        percentiles: None,
    })
}

/// Evaluates every accumulator of a group for one document.
pub fn feed(
    specs: &[AccumulatorSpec],
    states: &mut [AccumulatorState],
    doc: &Document,
) -> Result<(), QueryError> {
    for (spec, state) in specs.iter().zip(states.iter_mut()) {
        if let (Some(n), true) = (&spec.n, state.needs_limit()) {
            let value = n.evaluate(doc)?;
            let limit = Number::from_bson(&value)
                .and_then(Number::to_exact_i64)
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    QueryError::location(
                        5787908,
                        format!("'n' must be a positive integer, found {value}"),
                    )
                })?;
            state.set_limit(usize::try_from(limit).unwrap_or(usize::MAX));
        }
        let value = spec.argument.evaluate_optional(doc)?;
        match &spec.sort_by {
            Some(sort) => {
                let key = sort
                    .keys
                    .iter()
                    .map(|(path, direction)| sort_key(doc, path, *direction))
                    .collect();
                state.add_keyed(sort, key, value.unwrap_or(Bson::Null));
            }
            None => state.add(value),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn add_to_set_in_a_group_keeps_first_occurrences() {
        use crate::query::aggregate::Pipeline;
        use bson::doc;
        let docs = vec![
            doc! {"g": 1, "v": 1},
            doc! {"g": 2, "v": 1.0},
            doc! {"g": 1, "v": 1_i64},
            doc! {"g": 1, "v": 2.5},
            doc! {"g": 1.0, "v": [1, 2]},
            doc! {"g": 2, "v": [1.0, 2_i64]},
            doc! {"g": 1},
        ];
        let p =
            Pipeline::parse(&[doc! {"$group": {"_id": "$g", "s": {"$addToSet": "$v"}}}]).unwrap();
        assert_eq!(
            p.run(docs).unwrap(),
            vec![
                doc! {"_id": 1, "s": [1, 2.5, [1, 2]]},
                doc! {"_id": 2, "s": [1.0, [1.0, 2_i64]]},
            ]
        );
    }

    #[test]
    fn selection_accumulators() {
        use crate::query::aggregate::Pipeline;
        use bson::doc;
        let docs = vec![
            doc! {"g": 1, "v": 5, "s": "b"},
            doc! {"g": 1, "v": 3, "s": "a"},
            doc! {"g": 1, "v": 9, "s": "c"},
            doc! {"g": 1, "s": "d"},
        ];
        let p = Pipeline::parse(&[doc! {"$group": {
            "_id": "$g",
            "first2": {"$firstN": {"input": "$v", "n": 2}},
            "last2": {"$lastN": {"input": "$v", "n": 2}},
            "max2": {"$maxN": {"input": "$v", "n": 2}},
            "min2": {"$minN": {"input": "$v", "n": 2}},
            "top": {"$top": {"sortBy": {"v": -1}, "output": "$s"}},
            "bottom": {"$bottom": {"sortBy": {"v": -1}, "output": "$s"}},
            "top2": {"$topN": {"sortBy": {"s": 1}, "output": "$v", "n": 2}},
        }}])
        .unwrap();
        assert_eq!(
            p.run(docs).unwrap(),
            vec![
                doc! {"_id": 1, "first2": [5, 3], "last2": [9, null], "max2": [9, 5], "min2": [3, 5],
                "top": "c", "bottom": "d", "top2": [3, 5]}
            ]
        );
    }
}
