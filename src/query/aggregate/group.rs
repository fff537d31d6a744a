//! `$group`: parsing `{_id: <expr>, field: {$acc: <expr>}, …}` and grouping documents by the
//! MongoDB equality of their `_id` (hashed on its byte key), each group feeding its
//! accumulators in input order — all at once, or document by document ([`Grouping`]) when
//! the input streams.
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
    let mut grouping = Grouping::new(id.clone(), accumulators.to_vec());
    for doc in &docs {
        grouping.feed(doc)?;
    }
    Ok(grouping.finish())
}

/// A `$group` fed one document at a time (its input may arrive in chunks): the groups so
/// far, in the order their first document came.
pub struct Grouping {
    id: Expression,
    accumulators: Vec<AccumulatorSpec>,
    index: HashMap<Vec<u8>, usize>,
    groups: Vec<(Bson, Vec<AccumulatorState>)>,
}

impl Grouping {
    /// An empty grouping by `id` with `accumulators`.
    pub fn new(id: Expression, accumulators: Vec<AccumulatorSpec>) -> Grouping {
        Grouping {
            id,
            accumulators,
            index: HashMap::new(),
            groups: Vec::new(),
        }
    }

    /// Adds `doc` to its group.
    pub fn feed(&mut self, doc: &Document) -> Result<(), QueryError> {
        crate::interrupt::check()?;
        let key = self.id.evaluate(doc)?;
        let encoded = encode_key(&crate::query::value::collation::equality_image(&key));
        let slot = match self.index.get(&encoded) {
            Some(i) => *i,
            None => {
                self.groups.push((
                    key,
                    self.accumulators
                        .iter()
                        .map(AccumulatorSpec::new_state)
                        .collect(),
                ));
                self.index.insert(encoded, self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        if let Some((_, states)) = self.groups.get_mut(slot) {
            feed(&self.accumulators, states, doc)?;
        }
        Ok(())
    }

    /// One document per group: `_id` and each accumulator's result.
    pub fn finish(self) -> Vec<Document> {
        let accumulators = self.accumulators;
        self.groups
            .into_iter()
            .map(|(key, states)| {
                let mut out = Document::new();
                out.insert("_id", key);
                for (spec, state) in accumulators.iter().zip(states) {
                    out.insert(spec.field.clone(), state.finish());
                }
                out
            })
            .collect()
    }
}
