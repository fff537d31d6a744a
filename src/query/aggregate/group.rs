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

    /// Whether a `$group` by `id` with `accumulators` reads each document no more than a
    /// scan does: its key and every accumulator's argument are literals, field paths or
    /// objects of those ([`Expression::reads_raw`]), no accumulator takes `n` or `sortBy`.
    pub fn reads_only_fields(id: &Expression, accumulators: &[AccumulatorSpec]) -> bool {
        id.reads_raw()
            && accumulators
                .iter()
                .all(|spec| spec.argument.reads_raw() && spec.n.is_none() && spec.sort_by.is_none())
    }

    /// Adds `doc` to its group.
    pub fn feed(&mut self, doc: &Document) -> Result<(), QueryError> {
        crate::interrupt::check()?;
        let key = self.id.evaluate(doc)?;
        let slot = self.slot_of(key);
        if let Some((_, states)) = self.groups.get_mut(slot) {
            feed(&self.accumulators, states, doc)?;
        }
        Ok(())
    }

    /// Adds the stored document `raw` to its group without decoding it, when the key and
    /// every accumulator's argument are literals or field paths the raw bytes answer
    /// ([`Expression::evaluate_raw`]) and no accumulator takes `n` or `sortBy`: the same
    /// values reach the same states as [`Grouping::feed`] would give them. Answers false,
    /// having changed nothing, when the document must be decoded and given to `feed`.
    pub fn feed_raw(&mut self, raw: &bson::RawDocument) -> Result<bool, QueryError> {
        crate::interrupt::check()?;
        if self
            .accumulators
            .iter()
            .any(|spec| spec.n.is_some() || spec.sort_by.is_some())
        {
            return Ok(false);
        }
        let Some(key) = self.id.evaluate_raw(raw) else {
            return Ok(false);
        };
        let mut values = Vec::with_capacity(self.accumulators.len());
        for spec in &self.accumulators {
            match spec.argument.evaluate_raw(raw) {
                Some(value) => values.push(value),
                None => return Ok(false),
            }
        }
        let slot = self.slot_of(key.unwrap_or(Bson::Null));
        if let Some((_, states)) = self.groups.get_mut(slot) {
            for (state, value) in states.iter_mut().zip(values) {
                state.add(value);
            }
        }
        Ok(true)
    }

    /// The index of the group of `key` (compared by BSON equality), made when new.
    fn slot_of(&mut self, key: Bson) -> usize {
        let encoded = encode_key(&crate::query::value::collation::equality_image(&key));
        match self.index.get(&encoded) {
            Some(i) => *i,
            None => {
                self.groups.push((
                    key,
                    self.accumulators
                        .iter()
                        .map(|a| AccumulatorState::new(a.kind))
                        .collect(),
                ));
                self.index.insert(encoded, self.groups.len() - 1);
                self.groups.len() - 1
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, Decimal128};

    /// Raw feeding gives the groups decoded feeding gives, over documents whose paths meet
    /// arrays (decoded instead), scalars, missing fields and mixed numbers.
    #[test]
    fn raw_feeding_groups_as_decoded_feeding_does() {
        let docs = vec![
            doc! {"a": {"b": 1}, "v": 1},
            doc! {"a": {"b": 1.0}, "v": 2_i64},
            doc! {"a": {"b": Decimal128::from_bytes([0; 16])}, "v": 2.5},
            doc! {"a": [{"b": 1}, {"b": 2}], "v": [1, 2]},
            doc! {"a": 5, "v": "x"},
            doc! {"v": {"w": 1}},
            doc! {"a": {"b": null}},
            doc! {"a": {"b": [1]}, "v": i32::MAX},
            doc! {"a": {"b": [1]}, "v": i32::MAX},
        ];
        for spec in [
            doc! {"_id": "$a.b", "s": {"$sum": "$v"}, "f": {"$first": "$v"}, "l": {"$last": "$v.w"}, "m": {"$max": "$v"}, "n": {"$sum": 1}, "p": {"$push": "$a"}},
            doc! {"_id": null, "a": {"$avg": "$v"}, "set": {"$addToSet": "$a.b"}},
            doc! {"_id": {"$type": "$v"}, "n": {"$count": {}}},
            doc! {"_id": {"k": "$a.b", "w": "$v.w", "c": 1}, "n": {"$sum": "$v"}},
            doc! {"_id": "$a", "top": {"$top": {"sortBy": {"v": 1}, "output": "$v"}}},
        ] {
            let Ok(Stage::Group { id, accumulators }) = parse_group(&spec) else {
                panic!("{spec}");
            };
            let mut decoded = Grouping::new(id.clone(), accumulators.clone());
            let plain = Grouping::reads_only_fields(&id, &accumulators);
            let mut raw = Grouping::new(id, accumulators);
            let mut fed_raw = 0;
            for doc in &docs {
                decoded.feed(doc).unwrap();
                let bytes = bson::RawDocumentBuf::from_bytes(doc.to_vec().unwrap()).unwrap();
                if raw.feed_raw(&bytes).unwrap() {
                    fed_raw += 1;
                } else {
                    raw.feed(doc).unwrap();
                }
            }
            // Field paths and literals are read raw, except through the array `a`.
            assert_eq!(fed_raw > 0, plain, "{spec}");
            assert_eq!(raw.finish(), decoded.finish(), "{spec}");
        }
    }
}
