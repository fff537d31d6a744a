//! `$densify` over a stream of documents, holding neither its input nor what it generates.
//! A [`DensifyInput`] is fed one document at a time into an external sort by partition and
//! field (through temporary files past the command's limit, 292 if it refused disk use),
//! noting the smallest and largest values for `bounds: "full"`. Its [`DensifiedOutput`]
//! reads the sorted documents back one at a time and generates the missing steps between
//! them as it goes: a merge of each partition's documents with the grid of values from its
//! lower bound, where a grid value equal to a document's is not generated. With
//! `bounds: "full"` and partitions, MongoDB answers by the field alone, partitions
//! interleaved: that output goes through a second external sort by the field first.
//!
//! MongoDB generates at most 500,000 documents (`internalQueryMaxAllowedDensifyDocs`); past
//! that it answers 5897900, and so does docgate.
//!
//! Not for: parsing `$densify` or stepping a value (`densify_fill.rs`).

use super::densify_fill::{Densify, DensifyBounds};
use super::reshape::set_dotted;
use crate::query::error::QueryError;
use crate::query::sort::{SortDirection, SortSpec};
use crate::query::spill::{ExternalSort, SortedOutput};
use crate::query::value::collation::Collation;
use crate::query::value::compare::compare_values;
use crate::query::value::path::get_path;
use bson::{Bson, Document};
use std::cmp::Ordering;

/// The most documents a `$densify` generates (MongoDB's `internalQueryMaxAllowedDensifyDocs`
/// default).
const MAX_GENERATED: u64 = 500_000;

/// A `$densify` being fed: its documents sorted by partition, then field.
pub struct DensifyInput {
    spec: Densify,
    sort: ExternalSort,
    /// The smallest and largest values of the field seen.
    range: Option<(Bson, Bson)>,
}

impl DensifyInput {
    /// An empty input under the budget and collation of the command on this thread.
    pub fn new(spec: Densify) -> DensifyInput {
        // Per partition field, whether it is there, then its value (see `push`).
        let mut keys = Vec::new();
        for field in &spec.partition_fields {
            keys.push((format!("{field} (present)"), SortDirection::Ascending));
            keys.push((field.clone(), SortDirection::Ascending));
        }
        keys.push((spec.field.clone(), SortDirection::Ascending));
        let order = SortSpec {
            keys,
            natural: None,
        };
        DensifyInput {
            sort: ExternalSort::for_command(order, Collation::installed()),
            spec,
            range: None,
        }
    }

    /// Adds `document`, whose BSON bytes are `bytes`: 5733201 when its field is neither
    /// null, missing nor of the densified type.
    /// Its partition is keyed by whether each partition field is there and its value: a
    /// document without the field is in another partition than one where it is null, as
    /// MongoDB keys partitions by the object of those fields (which leaves a missing one out).
    pub fn push(&mut self, document: &Document, bytes: Vec<u8>) -> Result<(), QueryError> {
        let mut key = Vec::with_capacity(2 * self.spec.partition_fields.len() + 1);
        for field in &self.spec.partition_fields {
            let value = get_path(document, field);
            key.push(Bson::Boolean(value.is_some()));
            key.push(value.cloned().unwrap_or(Bson::Null));
        }
        let value = self.spec.value_of(document)?;
        if let Some(value) = &value {
            self.range = Some(match self.range.take() {
                None => (value.clone(), value.clone()),
                Some((low, high)) => (
                    smaller(low, value, Ordering::Less),
                    smaller(high, value, Ordering::Greater),
                ),
            });
        }
        // A document without a value (null or missing) sorts before the values.
        key.push(value.unwrap_or(Bson::Null));
        self.sort.push(key, bytes)
    }

    /// The densified documents.
    pub fn finish(self) -> Result<DensifiedOutput, QueryError> {
        let full_range = match self.spec.bounds {
            DensifyBounds::Full => self.range,
            _ => None,
        };
        let by_field =
            self.spec.bounds == DensifyBounds::Full && !self.spec.partition_fields.is_empty();
        let mut generator = Generator {
            spec: self.spec,
            sorted: self.sort.finish()?,
            full_range,
            ahead: None,
            exhausted: false,
            partition: None,
            generated: 0,
        };
        if !by_field {
            return Ok(DensifiedOutput::Generating(Box::new(generator)));
        }
        let order = SortSpec {
            keys: vec![(generator.spec.field.clone(), SortDirection::Ascending)],
            natural: None,
        };
        let mut sort = ExternalSort::for_command(order, Collation::installed());
        while let Some(document) = generator.next_document()? {
            crate::interrupt::check()?;
            sort.push_document(&document)?;
        }
        Ok(DensifiedOutput::Sorted(sort.finish()?))
    }
}

/// `candidate` instead of `kept` when it compares as `wanted` to it.
fn smaller(kept: Bson, candidate: &Bson, wanted: Ordering) -> Bson {
    if compare_values(candidate, &kept) == wanted {
        candidate.clone()
    } else {
        kept
    }
}

/// What a `$densify` hands out, one document at a time.
pub enum DensifiedOutput {
    /// Generated as the sorted input is read.
    Generating(Box<Generator>),
    /// Generated, then sorted by the field.
    Sorted(SortedOutput),
}

impl DensifiedOutput {
    /// The next document, None after the last.
    pub fn next_document(&mut self) -> Result<Option<Document>, QueryError> {
        match self {
            DensifiedOutput::Generating(generator) => generator.next_document(),
            DensifiedOutput::Sorted(sorted) => Ok(sorted.next_decoded()?.map(|(_, d)| d)),
        }
    }

    /// Whether its sorts wrote temporary files.
    pub fn used_disk(&self) -> bool {
        match self {
            DensifiedOutput::Generating(generator) => generator.sorted.used_disk(),
            DensifiedOutput::Sorted(sorted) => sorted.used_disk(),
        }
    }
}

/// The merge of the sorted documents with each partition's grid.
pub struct Generator {
    spec: Densify,
    sorted: SortedOutput,
    /// The smallest and largest values of all documents, for `bounds: "full"`.
    full_range: Option<(Bson, Bson)>,
    /// The next sorted document (its sort key: partition key, then value), read ahead.
    ahead: Option<(Vec<Bson>, Document)>,
    exhausted: bool,
    partition: Option<Partition>,
    generated: u64,
}

/// The partition being densified.
struct Partition {
    /// Its partition key: whether each partition field is there, and its value.
    key: Vec<Bson>,
    /// Its partition fields, as each generated document carries them.
    template: Document,
    /// The next grid value not generated nor passed (within the bounds), with the one after
    /// it; None before the grid starts (at the first value, for `bounds: "partition"`) or
    /// once it ended.
    grid: Option<(Bson, Bson)>,
    /// Whether the grid started.
    started: bool,
}

/// What the merge does next.
enum Step {
    /// Generate a document at this grid value.
    Generate(Bson),
    /// Hand out the document read ahead.
    Pass,
    /// The partition is done.
    EndPartition,
}

impl Generator {
    /// The next document, None after the last.
    fn next_document(&mut self) -> Result<Option<Document>, QueryError> {
        loop {
            if self.ahead.is_none() && !self.exhausted {
                self.ahead = self.sorted.next_decoded()?;
                self.exhausted = self.ahead.is_none();
            }
            if self.partition.is_none() {
                let Some((key, document)) = &self.ahead else {
                    return Ok(None);
                };
                let partitions = 2 * self.spec.partition_fields.len();
                let started = self.start_partition(&key[..partitions], document)?;
                self.partition = Some(started);
                continue;
            }
            match self.step()? {
                Step::Generate(value) => return self.generate(&value).map(Some),
                Step::Pass => return Ok(self.ahead.take().map(|(_, document)| document)),
                Step::EndPartition => self.partition = None,
            }
        }
    }

    /// The next step of the partition's merge with its grid.
    fn step(&mut self) -> Result<Step, QueryError> {
        let spec = &self.spec;
        let partitions = 2 * spec.partition_fields.len();
        let Some(partition) = self.partition.as_mut() else {
            return Ok(Step::EndPartition);
        };
        let next_value = match &self.ahead {
            Some((key, _)) if same_partition(&partition.key, &key[..partitions]) => {
                key.get(partitions).cloned()
            }
            _ => None,
        };
        let Some(value) = next_value else {
            // The partition ended: the rest of its grid, as far as its bounds go (a
            // partition's own bounds end at its last value, which is behind).
            return Ok(match partition.grid.take() {
                Some((step, after)) if spec.bounds != DensifyBounds::Partition => {
                    partition.grid = advanced(spec, &self.full_range, after)?;
                    Step::Generate(step)
                }
                _ => Step::EndPartition,
            });
        };
        if value == Bson::Null {
            // Without a value (null or missing): sorted first, handed out as it is.
            return Ok(Step::Pass);
        }
        if !partition.started {
            // `bounds: "partition"`: the grid starts at the partition's first value.
            partition.started = true;
            partition.grid = advanced(spec, &self.full_range, value.clone())?;
        }
        // The grid holds only steps within the bounds (`advanced`).
        let Some((step, after)) = partition.grid.clone() else {
            return Ok(Step::Pass);
        };
        Ok(match compare_values(&step, &value) {
            Ordering::Less => {
                partition.grid = advanced(spec, &self.full_range, after)?;
                Step::Generate(step)
            }
            Ordering::Equal => {
                // A document holds this value: it is not generated.
                partition.grid = advanced(spec, &self.full_range, after)?;
                Step::Pass
            }
            Ordering::Greater => Step::Pass,
        })
    }

    /// A partition starting with `document`, whose partition values are `key`.
    fn start_partition(&self, key: &[Bson], document: &Document) -> Result<Partition, QueryError> {
        let mut template = Document::new();
        for field in &self.spec.partition_fields {
            if let Some(value) = get_path(document, field) {
                set_dotted(&mut template, field, Some(value.clone()));
            }
        }
        let lower = match &self.spec.bounds {
            DensifyBounds::Full => self.full_range.as_ref().map(|(low, _)| low.clone()),
            DensifyBounds::Explicit(bounds) => Some(bounds.0.clone()),
            DensifyBounds::Partition => None,
        };
        let grid = match lower {
            Some(lower) => advanced(&self.spec, &self.full_range, lower)?,
            None => None,
        };
        Ok(Partition {
            key: key.to_vec(),
            template,
            started: self.spec.bounds != DensifyBounds::Partition,
            grid,
        })
    }

    /// The document generated at `step`: 5897900 past MongoDB's limit.
    fn generate(&mut self, step: &Bson) -> Result<Document, QueryError> {
        self.generated += 1;
        if self.generated > MAX_GENERATED {
            return Err(QueryError::location(
                5897900,
                format!(
                    "Generated {} documents in $densify, which is over the limit of {MAX_GENERATED}. Increase the 'internalQueryMaxAllowedDensifyDocs' parameter to allow more generated documents",
                    self.generated
                ),
            ));
        }
        let template = match &self.partition {
            Some(partition) => partition.template.clone(),
            None => Document::new(),
        };
        let mut document = template;
        set_dotted(&mut document, &self.spec.field, Some(step.clone()));
        Ok(document)
    }
}

/// Whether two partitions' keys (presence and value of each field) are the same partition.
fn same_partition(a: &[Bson], b: &[Bson]) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| compare_values(x, y) == Ordering::Equal)
}

/// The grid from `step` on: it and the value after it, or None when `step` is past the
/// bounds or stepping does not go further (the grid ends there, `step` included). No step is
/// taken from a value past the bounds, as MongoDB takes none.
fn advanced(
    spec: &Densify,
    full_range: &Option<(Bson, Bson)>,
    step: Bson,
) -> Result<Option<(Bson, Bson)>, QueryError> {
    crate::interrupt::check()?;
    if !within(spec, full_range, &step) {
        return Ok(None);
    }
    let after = spec.next(&step)?;
    Ok((compare_values(&after, &step) == Ordering::Greater).then_some((step, after)))
}

/// Whether `step` is inside the bounds: up to the largest value with `full`, below the
/// upper bound with explicit ones, anywhere within a partition.
fn within(spec: &Densify, full_range: &Option<(Bson, Bson)>, step: &Bson) -> bool {
    match &spec.bounds {
        DensifyBounds::Full => full_range
            .as_ref()
            .is_some_and(|(_, high)| compare_values(step, high) != Ordering::Greater),
        DensifyBounds::Explicit(bounds) => compare_values(step, &bounds.1) == Ordering::Less,
        DensifyBounds::Partition => true,
    }
}
