//! `$group`: parsing `{_id: <expr>, field: {$acc: <expr>}, …}` and grouping documents by the
//! MongoDB equality of their `_id` (hashed on its byte key), each group feeding its
//! accumulators in input order — all at once, or document by document ([`Grouping`]) when
//! the input streams — within the command's memory limit: past it 292, or (disk use
//! allowed) the later documents sorted by key through temporary files (see [`Grouping`]).
//!
//! Not for: the accumulators themselves (`accumulators.rs`, `expr/accumulator.rs`) or
//! `$bucket` (`stages.rs`).

use super::accumulators::{feed, AccumulatorSpec, AccumulatorState};
use super::Stage;
use crate::interrupt::{BlockingMemory, Interruption};
use crate::query::error::QueryError;
use crate::query::expr::Expression;
use crate::query::sort::{SortDirection, SortSpec};
use crate::query::spill::ExternalSort;
use crate::query::value::collation::Collation;
use crate::query::value::keys::encode_key;
use crate::query::value::size::value_size;
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
    for doc in docs {
        grouping.feed(&doc)?;
    }
    grouping.finish()
}

/// What one group is counted as beyond its key and its accumulators' values (its slot in
/// the index and the list).
const GROUP_OVERHEAD: usize = 64;

/// A `$group` fed one document at a time (its input may arrive in chunks): the groups so
/// far, in the order their first document came.
///
/// Memory: the groups' keys and accumulator states are counted (about their BSON size) as
/// they grow. Past the command's limit a command that refused disk use answers 292; one
/// that may spill keeps the groups it holds and sends every later document — of those
/// groups too — to an external sort by group key (`query::spill`; stable, so each key's
/// documents stay in input order). [`Grouping::finish`] then reads the sorted documents one
/// key at a time, continuing a held group's states or starting a new group's, so every
/// accumulator sees its group's documents in input order exactly as without a limit. The
/// groups held at the switch come first in the output, the others follow in key order.
pub struct Grouping {
    id: Expression,
    accumulators: Vec<AccumulatorSpec>,
    index: HashMap<Vec<u8>, usize>,
    groups: Vec<(Bson, Vec<AccumulatorState>)>,
    /// About how many bytes the groups hold.
    held: usize,
    /// The command's limit and spill directory, read at the first document.
    budget: Option<Option<BlockingMemory>>,
    /// Past the limit: every later document, sorted by its group key.
    spilled: Option<ExternalSort>,
}

impl Grouping {
    /// An empty grouping by `id` with `accumulators`.
    pub fn new(id: Expression, accumulators: Vec<AccumulatorSpec>) -> Grouping {
        Grouping {
            id,
            accumulators,
            index: HashMap::new(),
            groups: Vec::new(),
            held: 0,
            budget: None,
            spilled: None,
        }
    }

    /// An empty grouping whose keys the caller evaluates (`$bucket`'s boundaries): fed only
    /// through [`Grouping::feed_keyed`].
    pub fn keyed(accumulators: Vec<AccumulatorSpec>) -> Grouping {
        Grouping::new(Expression::literal(Bson::Null), accumulators)
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
        self.feed_keyed(key, doc)
    }

    /// Adds `doc` to the group of `key` (already evaluated: `$bucket`'s boundary).
    pub fn feed_keyed(&mut self, key: Bson, doc: &Document) -> Result<(), QueryError> {
        if let Some(spilled) = &mut self.spilled {
            let bytes = doc.to_vec().map_err(|error| {
                QueryError::bad_value(format!("cannot encode a document: {error}"))
            })?;
            return spilled.push(vec![key], bytes);
        }
        let slot = self.slot_of(key);
        if let Some((_, states)) = self.groups.get_mut(slot) {
            let before = held_bytes(states);
            feed(&self.accumulators, states, doc)?;
            self.held = self.held.saturating_sub(before) + held_bytes(states);
        }
        self.check_memory()
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
        let key = key.unwrap_or(Bson::Null);
        if let Some(spilled) = &mut self.spilled {
            // Past the limit the document itself goes to the sort; it is decoded when read
            // back, as a spilled document fed through `feed_keyed` is.
            spilled.push(vec![key], raw.as_bytes().to_vec())?;
            return Ok(true);
        }
        let mut values = Vec::with_capacity(self.accumulators.len());
        for spec in &self.accumulators {
            match spec.argument.evaluate_raw(raw) {
                Some(value) => values.push(value),
                None => return Ok(false),
            }
        }
        let slot = self.slot_of(key);
        if let Some((_, states)) = self.groups.get_mut(slot) {
            let before = held_bytes(states);
            for (state, value) in states.iter_mut().zip(values) {
                state.add(value);
            }
            self.held = self.held.saturating_sub(before) + held_bytes(states);
        }
        self.check_memory()?;
        Ok(true)
    }

    /// The index of the group of `key` (compared by BSON equality), made (and counted in
    /// the memory held) when new.
    fn slot_of(&mut self, key: Bson) -> usize {
        let encoded = encode_key(&crate::query::value::collation::equality_image(&key));
        match self.index.get(&encoded) {
            Some(i) => *i,
            None => {
                self.held += value_size(&key) + encoded.len() + GROUP_OVERHEAD;
                self.groups.push((key, self.fresh_states()));
                self.index.insert(encoded, self.groups.len() - 1);
                self.groups.len() - 1
            }
        }
    }

    fn fresh_states(&self) -> Vec<AccumulatorState> {
        self.accumulators
            .iter()
            .map(AccumulatorSpec::new_state)
            .collect()
    }

    /// Past the limit: 292, or the switch to spilling.
    fn check_memory(&mut self) -> Result<(), QueryError> {
        let budget = self
            .budget
            .get_or_insert_with(crate::interrupt::blocking_memory);
        let Some(memory) = budget else {
            return Ok(());
        };
        if self.held <= memory.bytes {
            return Ok(());
        }
        let Some(dir) = memory.spill_dir.clone() else {
            return Err(Interruption::GroupMemoryLimit.into());
        };
        let by_key = SortSpec {
            keys: vec![("_id".to_string(), SortDirection::Ascending)],
            natural: None,
        };
        self.spilled = Some(
            ExternalSort::new(by_key, Collation::installed(), memory.bytes, Some(dir)).for_group(),
        );
        Ok(())
    }

    /// Whether documents went to temporary files.
    pub fn spilled(&self) -> bool {
        self.spilled.as_ref().is_some_and(ExternalSort::spilled)
    }

    /// One document per group: `_id` and each accumulator's result.
    pub fn finish(self) -> Result<Vec<Document>, QueryError> {
        let Grouping {
            accumulators,
            index,
            mut groups,
            spilled,
            ..
        } = self;
        let mut later = Vec::new();
        if let Some(spilled) = spilled {
            let mut sorted = spilled.finish()?;
            let mut current: Option<ReadBack> = None;
            while let Some((mut key, bytes)) = sorted.next_keyed()? {
                crate::interrupt::check()?;
                let key = key.pop().unwrap_or(Bson::Null);
                let encoded = encode_key(&crate::query::value::collation::equality_image(&key));
                if current
                    .as_ref()
                    .is_none_or(|group| group.encoded != encoded)
                {
                    if let Some(done) = current.take() {
                        done.put_back(&mut groups, &mut later);
                    }
                    let slot = index.get(&encoded).copied();
                    let states = match slot.and_then(|slot| groups.get_mut(slot)) {
                        Some((_, states)) => std::mem::take(states),
                        None => accumulators
                            .iter()
                            .map(AccumulatorSpec::new_state)
                            .collect(),
                    };
                    current = Some(ReadBack {
                        encoded,
                        key,
                        slot,
                        states,
                    });
                }
                if let Some(group) = &mut current {
                    let doc = bson::RawDocument::from_bytes(&bytes)
                        .and_then(Document::try_from)
                        .map_err(|error| {
                            QueryError::coded(1, "InternalError", error.to_string())
                        })?;
                    feed(&accumulators, &mut group.states, &doc)?;
                }
            }
            if let Some(done) = current.take() {
                done.put_back(&mut groups, &mut later);
            }
        }
        Ok(groups
            .into_iter()
            .chain(later)
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
}

/// The group being read back from the sorted documents: its key (encoded and as first
/// seen), its slot among the groups held at the switch, and its states.
struct ReadBack {
    encoded: Vec<u8>,
    key: Bson,
    slot: Option<usize>,
    states: Vec<AccumulatorState>,
}

impl ReadBack {
    /// Into its held slot, or after the held groups.
    fn put_back(
        self,
        groups: &mut [(Bson, Vec<AccumulatorState>)],
        later: &mut Vec<(Bson, Vec<AccumulatorState>)>,
    ) {
        match self.slot.and_then(|slot| groups.get_mut(slot)) {
            Some((_, held)) => *held = self.states,
            None => later.push((self.key, self.states)),
        }
    }
}

fn held_bytes(states: &[AccumulatorState]) -> usize {
    states.iter().map(AccumulatorState::held_bytes).sum()
}

#[cfg(test)]
mod tests {
    use crate::interrupt::{BlockingMemory, Interrupt};
    use crate::query::aggregate::Pipeline;
    use bson::{doc, Bson, Document};

    fn input() -> Vec<Document> {
        // Keys 1, 1.0 and 1_i64 are one group; a few big groups and many small ones.
        (0..400_i32)
            .map(|i| {
                let g = match i % 3 {
                    0 => Bson::Int32(i % 7),
                    1 => Bson::Double(f64::from(i % 7)),
                    _ => Bson::Int64(i64::from(i % 7)),
                };
                doc! {"_id": i, "g": g, "solo": i, "v": i % 13, "pad": "p".repeat(100)}
            })
            .collect()
    }

    fn run_under(limit: Option<BlockingMemory>, stages: &[Document]) -> Result<Vec<Document>, i32> {
        let pipeline = Pipeline::parse(stages).unwrap();
        let interrupt = Interrupt::new(None);
        if let Some(limit) = limit {
            interrupt.limit_blocking_memory(limit);
        }
        interrupt
            .install(|| pipeline.run(input()))
            .map_err(|e| e.code)
    }

    fn by_id(mut groups: Vec<Document>) -> Vec<Document> {
        groups.sort_by(|a, b| {
            crate::query::compare_values(a.get("_id").unwrap(), b.get("_id").unwrap())
        });
        groups
    }

    #[test]
    fn a_spilled_group_answers_what_an_unlimited_one_does() {
        let dir = tempfile::tempdir().unwrap();
        let small = |bytes| BlockingMemory {
            bytes,
            spill_dir: Some(dir.path().into()),
            spool_dir: None,
        };
        for group in [
            doc! {"$group": {"_id": "$g", "n": {"$sum": 1}, "t": {"$sum": "$v"}, "avg": {"$avg": "$v"},
            "ids": {"$push": "$_id"}, "set": {"$addToSet": "$v"}, "first": {"$first": "$_id"},
            "last": {"$last": "$_id"}, "min": {"$min": "$v"}, "max": {"$max": "$v"},
            "sd": {"$stdDevPop": "$v"}, "merged": {"$mergeObjects": {"k": "$_id"}},
            "top": {"$topN": {"n": 3, "sortBy": {"v": -1}, "output": "$_id"}},
            "lastN": {"$lastN": {"n": 2, "input": "$_id"}}}},
            doc! {"$group": {"_id": "$solo", "pad": {"$first": "$pad"}, "g": {"$last": "$g"}}},
            doc! {"$group": {"_id": {"g": "$g", "odd": {"$mod": ["$_id", 2]}}, "ids": {"$push": "$_id"}}},
        ] {
            let stages = [group.clone()];
            let expected = by_id(run_under(None, &stages).unwrap());
            let spills_before = crate::query::spill::totals().groups;
            for limit in [1, 500, 5_000, 50_000] {
                let got = by_id(run_under(Some(small(limit)), &stages).unwrap());
                assert_eq!(got, expected, "{group} under {limit} bytes");
            }
            assert!(
                crate::query::spill::totals().groups > spills_before,
                "{group} spilled"
            );
        }
        let left = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(left, 0, "no temporary file outlives its group");
    }

    #[test]
    fn groups_past_a_refused_limit_are_292() {
        let stages = [doc! {"$group": {"_id": "$solo", "pad": {"$push": "$pad"}}}];
        let refused = BlockingMemory {
            bytes: 10_000,
            spill_dir: None,
            spool_dir: None,
        };
        assert_eq!(run_under(Some(refused), &stages).unwrap_err(), 292);
        let roomy = BlockingMemory {
            bytes: 10_000_000,
            spill_dir: None,
            spool_dir: None,
        };
        assert_eq!(run_under(Some(roomy), &stages).unwrap().len(), 400);
    }

    #[test]
    fn a_bucket_spills_like_a_group() {
        let dir = tempfile::tempdir().unwrap();
        let stages = [
            doc! {"$bucket": {"groupBy": "$v", "boundaries": [0, 5, 10], "default": "big",
            "output": {"n": {"$sum": 1}, "ids": {"$push": "$_id"}}}},
        ];
        let expected = run_under(None, &stages).unwrap();
        let spilling = BlockingMemory {
            bytes: 200,
            spill_dir: Some(dir.path().into()),
            spool_dir: None,
        };
        assert_eq!(run_under(Some(spilling), &stages).unwrap(), expected);
        assert_eq!(expected.len(), 3);
    }
}

#[cfg(test)]
mod raw_feeding_tests {
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
