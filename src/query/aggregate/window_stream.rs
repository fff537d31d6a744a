//! `$setWindowFields` over more input than the command's memory limit: [`WindowInput`] is
//! fed one document at a time (by a pipeline stage holding its input, or by a cursor reading
//! the collection chunk by chunk) into an external sort by partition then `sortBy`
//! (`query::spill`), and [`WindowedOutput`] hands the documents back one at a time,
//! windowing each partition as the merge reaches it. Only one partition is held.
//!
//! A partition past the limit is spooled: each document goes whole to a spool (temporary
//! files past half the limit), and what is held of it is only the top-level fields its
//! outputs read (`$sum: "$amount"` holds `amount`), as BSON bytes, with its first `sortBy`
//! key. Once the partition's columns are computed over those, the documents come back from
//! the spool one at a time and get their outputs. Outputs that read whole documents
//! (`$$ROOT`, `$$CURRENT`, `$getField` without `input`) hold the partition whole; a command
//! that refused disk use answers 292 past the limit. The budget is the one of the command
//! the input was made under: a cursor windows later partitions during `getMore`s.
//!
//! Not for: parsing the stage or computing windows (`window.rs`, `window_functions.rs`), or
//! the sort's files (`query::spill`).

use std::collections::BTreeSet;
use std::sync::Arc;

use bson::{Bson, Document, RawDocumentBuf};

use super::window::{
    columns_of, set_outputs, window_columns, window_keys, Partition, PartitionDocs,
    SetWindowFields, WindowRow,
};
use super::window_functions::WindowFunction;
use crate::interrupt::BlockingMemory;
use crate::query::error::QueryError;
use crate::query::sort::{SortDirection, SortSpec};
use crate::query::spill::{ExternalSort, SortedOutput};
use crate::query::value::collation::Collation;
use crate::query::value::compare::compare_values;
use crate::query::value::size::document_size;

/// The input of a `$setWindowFields`, ordered by partition then `sortBy` through an
/// external sort under the command's memory budget.
pub struct WindowInput {
    stage: Arc<SetWindowFields>,
    sort: ExternalSort,
    /// The command's budget, read when the input was made: a cursor windows later
    /// partitions during `getMore`s, which carry no budget of their own.
    budget: Option<BlockingMemory>,
}

impl WindowInput {
    /// An empty input for `stage`, under the budget of the command on this thread.
    pub fn new(stage: Arc<SetWindowFields>) -> WindowInput {
        let mut keys = vec![("partitionBy".to_string(), SortDirection::Ascending)];
        if let Some(sort_by) = &stage.sort_by {
            keys.extend(sort_by.keys.iter().cloned());
        }
        let order = SortSpec {
            keys,
            natural: None,
        };
        WindowInput {
            sort: ExternalSort::for_command(order, Collation::installed()),
            stage,
            budget: crate::interrupt::blocking_memory(),
        }
    }

    /// Adds `doc`, whose BSON bytes are `bytes`.
    pub fn push(&mut self, doc: &Document, bytes: Vec<u8>) -> Result<(), QueryError> {
        let (partition, sort_keys) = window_keys(&self.stage, doc)?;
        let mut key = Vec::with_capacity(sort_keys.len() + 1);
        key.push(partition);
        key.extend(sort_keys);
        self.sort.push(key, bytes)
    }

    /// The windowed documents, in window order.
    pub fn finish(self) -> Result<WindowedOutput, QueryError> {
        let fields = fields_read(&self.stage);
        Ok(WindowedOutput {
            sorted: self.sort.finish()?,
            stage: self.stage,
            ahead: None,
            ready: Ready::Held(Vec::new().into_iter()),
            fields,
            budget: self.budget,
            spooled: false,
        })
    }
}

/// The documents of a `$setWindowFields` with their outputs, one partition windowed at a
/// time.
pub struct WindowedOutput {
    stage: Arc<SetWindowFields>,
    sorted: SortedOutput,
    /// The first row of the next partition, read while finding where the last one ended.
    ahead: Option<WindowRow>,
    /// The windowed partition being handed out.
    ready: Ready,
    /// The top-level fields the outputs read; None when they read whole documents.
    fields: Option<Vec<String>>,
    /// The command's budget (none: no limit).
    budget: Option<BlockingMemory>,
    /// A partition's spool wrote temporary files.
    spooled: bool,
}

/// A windowed partition's documents still to hand out.
enum Ready {
    /// Held, outputs set.
    Held(std::vec::IntoIter<Document>),
    /// Spooled whole, in window order, with each output's values for them.
    Spooled {
        documents: SortedOutput,
        columns: Vec<std::vec::IntoIter<Bson>>,
    },
}

impl WindowedOutput {
    /// The next document with its outputs set; None after the last one.
    pub fn next_document(&mut self) -> Result<Option<Document>, QueryError> {
        loop {
            match &mut self.ready {
                Ready::Held(documents) => {
                    if let Some(doc) = documents.next() {
                        return Ok(Some(doc));
                    }
                }
                Ready::Spooled { documents, columns } => {
                    if let Some((_, mut doc)) = documents.next_decoded()? {
                        set_outputs(&self.stage, &mut doc, columns);
                        return Ok(Some(doc));
                    }
                }
            }
            if !self.window_next_partition()? {
                return Ok(None);
            }
        }
    }

    /// Whether the ordering or a partition's spool wrote temporary files.
    pub fn used_disk(&self) -> bool {
        self.sorted.used_disk() || self.spooled
    }

    /// The next input row in window order.
    fn next_row(&mut self) -> Result<Option<WindowRow>, QueryError> {
        if let Some(row) = self.ahead.take() {
            return Ok(Some(row));
        }
        let Some((mut key, doc)) = self.sorted.next_decoded()? else {
            return Ok(None);
        };
        let partition = if key.is_empty() {
            Bson::Null
        } else {
            key.remove(0)
        };
        Ok(Some((partition, key, doc)))
    }

    /// Reads the next partition and windows it into `ready`; false when none is left.
    fn window_next_partition(&mut self) -> Result<bool, QueryError> {
        let Some(first) = self.next_row()? else {
            return Ok(false);
        };
        let (limit, spill_dir) = match &self.budget {
            Some(memory) => (memory.bytes, memory.spill_dir.clone()),
            None => (usize::MAX, None),
        };
        let partition_value = first.0.clone();
        let mut held = document_size(&first.2);
        let mut rows = vec![first];
        let mut spooled: Option<SpooledPartition> = None;
        loop {
            crate::interrupt::check()?;
            let Some(row) = self.next_row()? else {
                break;
            };
            if !compare_values(&partition_value, &row.0).is_eq() {
                self.ahead = Some(row);
                break;
            }
            if let Some(spooled) = &mut spooled {
                spooled.push(row)?;
                continue;
            }
            held += document_size(&row.2);
            rows.push(row);
            if held <= limit {
                continue;
            }
            let Some(dir) = &spill_dir else {
                let stage = "a $setWindowFields partition";
                return Err(crate::query::memory::exceeded_without_disk_use(stage));
            };
            if let Some(fields) = &self.fields {
                // The spool holds half the limit before it writes a file, beside what the
                // partition keeps of each document.
                let spool = ExternalSort::spool(limit / 2, Some(Arc::clone(dir)));
                let mut started = SpooledPartition::new(spool, fields.clone());
                for row in std::mem::take(&mut rows) {
                    started.push(row)?;
                }
                spooled = Some(started);
            }
        }
        self.ready = match spooled {
            None => {
                let mut columns = window_columns(&self.stage, &rows)?;
                let mut documents = Vec::with_capacity(rows.len());
                for (_, _, mut doc) in rows {
                    set_outputs(&self.stage, &mut doc, &mut columns);
                    documents.push(doc);
                }
                Ready::Held(documents.into_iter())
            }
            Some(spooled) => {
                let (documents, columns) = spooled.window(&self.stage)?;
                self.spooled |= documents.used_disk();
                Ready::Spooled { documents, columns }
            }
        };
        Ok(true)
    }
}

/// A partition past the memory limit: its documents written whole to a spool, and what the
/// windows need of each kept — the top-level fields the outputs read (as BSON bytes) and
/// its first `sortBy` key.
struct SpooledPartition {
    spool: ExternalSort,
    /// The top-level fields kept (sorted).
    fields: Vec<String>,
    kept: Vec<RawDocumentBuf>,
    sort_values: Vec<Bson>,
}

impl SpooledPartition {
    fn new(spool: ExternalSort, fields: Vec<String>) -> SpooledPartition {
        SpooledPartition {
            spool,
            fields,
            kept: Vec::new(),
            sort_values: Vec::new(),
        }
    }

    /// Adds the partition's next row.
    fn push(&mut self, (_, keys, doc): WindowRow) -> Result<(), QueryError> {
        let bytes = doc.to_vec().map_err(encode_error)?;
        let mut kept = Document::new();
        for (name, value) in doc {
            if self.fields.binary_search(&name).is_ok() {
                kept.insert(name, value);
            }
        }
        let position = Bson::Int64(self.kept.len() as i64);
        let kept = kept.to_vec().map_err(encode_error)?;
        self.kept
            .push(RawDocumentBuf::from_bytes(kept).map_err(encode_error)?);
        self.sort_values
            .push(keys.into_iter().next().unwrap_or(Bson::Null));
        self.spool.push(vec![position], bytes)
    }

    /// The documents, whole and in window order, and each output's values for them.
    fn window(
        self,
        stage: &SetWindowFields,
    ) -> Result<(SortedOutput, Vec<std::vec::IntoIter<Bson>>), QueryError> {
        let docs = PartitionDocs::Raw(&self.kept);
        let partition = Partition {
            docs,
            sort_values: self.sort_values,
        };
        let columns = columns_of(stage, &partition)?;
        Ok((self.spool.finish()?, columns))
    }
}

fn encode_error(error: impl std::fmt::Display) -> QueryError {
    QueryError::bad_value(format!("cannot encode a document: {error}"))
}

/// The top-level fields `stage`'s outputs read from a document (sorted), or None when one
/// reads the whole document. The partition and `sortBy` keys are computed before.
fn fields_read(stage: &SetWindowFields) -> Option<Vec<String>> {
    let mut fields = BTreeSet::new();
    for output in &stage.outputs {
        let expressions = match &output.function {
            WindowFunction::Accumulate(spec) => {
                let sort_paths = spec.sort_by.iter().flat_map(|sort| &sort.keys);
                for (path, _) in sort_paths {
                    let first = path.split('.').next().unwrap_or_default();
                    fields.insert(first.to_string());
                }
                let mut expressions = vec![&spec.argument];
                expressions.extend(&spec.n);
                expressions
            }
            WindowFunction::Rank(_) => Vec::new(),
            WindowFunction::Shift { output, .. } => vec![output],
            WindowFunction::Calculus { input, .. }
            | WindowFunction::ExpMovingAvg { input, .. }
            | WindowFunction::Locf(input)
            | WindowFunction::LinearFill(input) => vec![input],
            WindowFunction::Covariance { x, y, .. } => vec![x, y],
        };
        for expression in expressions {
            if !expression.top_level_fields_read(&mut fields) {
                return None;
            }
        }
    }
    Some(fields.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interrupt::{BlockingMemory, Interrupt};
    use crate::query::aggregate::{Pipeline, Stage};
    use bson::doc;

    /// `stage` over `docs` through a [`WindowInput`] made under a 2,000-byte limit (spilling
    /// to `dir`, or refusing disk use without one): the documents and whether a partition was
    /// spooled.
    fn windowed_under_limit(
        stage: &Document,
        docs: &[Document],
        dir: Option<&std::path::Path>,
    ) -> Result<(Vec<Document>, bool), QueryError> {
        let pipeline = Pipeline::parse(std::slice::from_ref(stage)).unwrap();
        let Stage::SetWindowFields(stage) = &pipeline.stages[0] else {
            panic!("not a window stage");
        };
        let interrupt = Interrupt::new(None);
        interrupt.limit_blocking_memory(BlockingMemory {
            bytes: 2_000,
            spill_dir: dir.map(Into::into),
            spool_dir: None,
        });
        let mut output = interrupt.install(|| {
            let mut input = WindowInput::new(Arc::new((**stage).clone()));
            for doc in docs {
                input.push(doc, doc.to_vec().unwrap())?;
            }
            input.finish()
        })?;
        // Drained outside the command, as a cursor's `getMore`s drain it: the budget is the
        // one the input was made under.
        let mut out = Vec::new();
        while let Some(doc) = output.next_document()? {
            out.push(doc);
        }
        Ok((out, output.spooled))
    }

    fn documents() -> Vec<Document> {
        (0..300_i32)
            .map(|i| {
                let nested = match i % 3 {
                    0 => bson::bson!([{"b": i}, {"b": 1}]),
                    1 => bson::bson!({"b": i}),
                    _ => bson::bson!("none"),
                };
                doc! {"_id": i, "g": i % 2, "v": (i * 7) % 13, "a": nested,
                "pad": "p".repeat(60), "w": if i % 5 == 0 { Bson::Null } else { Bson::Int32(i) }}
            })
            .collect()
    }

    #[test]
    fn a_partition_past_the_limit_is_spooled_and_gives_the_same_documents() {
        let stages = [
            doc! {"$setWindowFields": {
                "sortBy": {"v": 1},
                "output": {
                    "running": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}},
                    "near": {"$push": "$a.b", "window": {"documents": [-1, 1]}},
                    "previous": {"$shift": {"output": "$_id", "by": -1, "default": "first"}},
                    "rank": {"$rank": {}},
                    "filled": {"$locf": "$w"},
                    "total": {"$sum": {"$add": ["$v", 1]}},
                    "top": {"$topN": {"n": 2, "sortBy": {"w": -1}, "output": "$_id"}},
                },
            }},
            doc! {"$setWindowFields": {
                "partitionBy": "$g",
                "sortBy": {"_id": 1},
                "output": {"average": {"$avg": "$v", "window": {"range": [-3, 0]}}},
            }},
        ];
        let docs = documents();
        let dir = tempfile::tempdir().unwrap();
        for stage in &stages {
            let expected = Pipeline::parse(std::slice::from_ref(stage))
                .unwrap()
                .run(docs.clone())
                .unwrap();
            let (got, spooled) = windowed_under_limit(stage, &docs, Some(dir.path())).unwrap();
            assert_eq!(got, expected, "{stage}");
            assert!(
                spooled,
                "a partition of 150 documents of ~100 bytes passes 2,000 bytes"
            );
            let refused = windowed_under_limit(stage, &docs, None).unwrap_err();
            assert_eq!(refused.code, 292);
        }
    }

    #[test]
    fn outputs_reading_whole_documents_hold_the_partition() {
        let stage = doc! {"$setWindowFields": {
            "sortBy": {"_id": 1},
            "output": {
                "previous": {"$shift": {"output": "$$ROOT", "by": -1}},
                "field": {"$push": {"$getField": "v"}, "window": {"documents": [0, 0]}},
            },
        }};
        let docs = documents();
        let expected = Pipeline::parse(std::slice::from_ref(&stage))
            .unwrap()
            .run(docs.clone())
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (got, spooled) = windowed_under_limit(&stage, &docs, Some(dir.path())).unwrap();
        assert_eq!(got, expected);
        assert!(!spooled);
    }

    #[test]
    fn fields_read_are_the_top_level_fields_of_every_output() {
        let stage = |output: Document| {
            let pipeline = Pipeline::parse(&[doc! {"$setWindowFields": {
            "sortBy": {"t": 1}, "output": output}}])
            .unwrap();
            let Stage::SetWindowFields(stage) = &pipeline.stages[0] else {
                panic!("not a window stage");
            };
            fields_read(stage)
        };
        assert_eq!(
            stage(doc! {"x": {"$sum": {"$multiply": ["$a.b", "$c"]}},
            "y": {"$bottomN": {"n": 1, "sortBy": {"d.e": 1}, "output": "$f"}},
            "z": {"$rank": {}}}),
            Some(vec!["a".into(), "c".into(), "d".into(), "f".into()])
        );
        assert_eq!(stage(doc! {"z": {"$documentNumber": {}}}), Some(vec![]));
        assert_eq!(stage(doc! {"x": {"$push": "$$CURRENT.a"}}), None);
        assert_eq!(
            stage(doc! {"x": {"$push": {"$let": {"vars": {"d": "$$ROOT"}, "in": "$$d.a"}}}}),
            None
        );
    }
}
