//! `$group`: parsing `{_id: <expr>, field: {$acc: <expr>}, …}` and grouping documents by the
//! MongoDB equality of their `_id` (hashed on its byte key), each group feeding its
//! accumulators in input order.
//!
//! Not for: the accumulators themselves (`accumulators.rs`, `expr/accumulator.rs`) or
//! `$bucket` (`stages.rs`).

use super::accumulators::{feed, AccumulatorSpec, AccumulatorState};
use super::Stage;
use crate::query::error::QueryError;
use crate::query::expr::Expression;
use crate::query::value::keys::encode_key;
use bson::{Bson, Document};
use std::collections::HashMap;

pub(super) fn parse_group(spec: &Document) -> Result<Stage, QueryError> {
    let id_spec = spec
        .get("_id")
        .ok_or_else(|| QueryError::location(15955, "a group specification must include an _id"))?;
    let id = Expression::parse(id_spec)?;
    let mut accumulators = Vec::new();
    for (field, value) in spec {
        if field == "_id" {
            continue;
        }
        if field.contains('.') {
            return Err(QueryError::location(
                40235,
                format!("The field name '{field}' cannot contain '.'"),
            ));
        }
        if field.starts_with('$') {
            return Err(QueryError::location(
                40236,
                format!("The field name '{field}' cannot be an operator name"),
            ));
        }
        accumulators.push(AccumulatorSpec::parse(field, value)?);
    }
    Ok(Stage::Group { id, accumulators })
}

pub(super) fn group(
    id: &Expression,
    accumulators: &[AccumulatorSpec],
    docs: Vec<Document>,
) -> Result<Vec<Document>, QueryError> {
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut groups: Vec<(Bson, Vec<AccumulatorState>)> = Vec::new();
    for doc in &docs {
        crate::interrupt::check()?;
        let key = id.evaluate(doc)?;
        let encoded = encode_key(&crate::query::value::collation::equality_image(&key));
        let slot = match index.get(&encoded) {
            Some(i) => *i,
            None => {
                groups.push((
                    key,
                    accumulators
                        .iter()
                        .map(|a| AccumulatorState::new(a.kind))
                        .collect(),
                ));
                index.insert(encoded, groups.len() - 1);
                groups.len() - 1
            }
        };
        if let Some((_, states)) = groups.get_mut(slot) {
            feed(accumulators, states, doc)?;
        }
    }
    Ok(groups
        .into_iter()
        .map(|(key, states)| {
            let mut out = Document::new();
            out.insert("_id", key);
            for (spec, state) in accumulators.iter().zip(states) {
                out.insert(spec.field.clone(), state.finish());
            }
            out
        })
        .collect())
}
