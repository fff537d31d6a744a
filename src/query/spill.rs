//! Blocking stages past their memory limit: an external merge sort over temporary files.
//! An [`ExternalSort`] holds documents (as BSON bytes, each with its precomputed sort key,
//! [`SortSpec::keys_of`]) up to the command's limit; past it the held ones are sorted and
//! written as one sorted run to a temporary file, and [`ExternalSort::finish`] answers a
//! [`SortedOutput`] that k-way merges the runs as it is read — by a cursor batch by batch,
//! or whole by a pipeline stage. Ties keep their input order (a run's items precede the
//! next run's), so the result is the stable sort an in-memory sort gives. A spool
//! ([`ExternalSort::spool`]) is the same machinery keyed by arrival: it keeps a result in
//! its order, bounded in memory, after the snapshot it was read in has ended.
//!
//! Runs are files in the command's spill directory (`--temp-dir`) that have no name: each is
//! unlinked as it is created, so the directory never shows them and their space goes back
//! when the sort or its output is dropped (exhausted, killed, timed out, failed or
//! interrupted) or the process dies, even by `kill -9`. A command that refused disk use
//! (`allowDiskUse: false`) answers 292 past the limit instead; a command without a limit
//! (internal reads) sorts in memory.
//!
//! Record layout in a run: the key as a BSON document `{k: [..]}`, then the document's
//! BSON bytes; both carry their own length.
//!
//! Not for: deciding which stages spill (`crate::query::memory` holds the budget, the
//! stages and `crate::ops` call this), or sorting in memory (`SortSpec`).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bson::{Bson, Document};

use crate::interrupt::Interruption;
use crate::query::error::QueryError;
use crate::query::sort::{SortDirection, SortSpec};
use crate::query::value::collation::Collation;

/// The largest record a run may hold (a document in a pipeline may pass 16 MiB; this is
/// MongoDB's intermediate-document bound with room for the key).
const MAX_RECORD_BYTES: usize = 128 * 1024 * 1024;

/// What the process has spilled since it started (`serverStatus.metrics.query.spill`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpillTotals {
    /// Sorts that wrote at least one run (`metrics.query.sort.spillToDisk`).
    pub sorts: u64,
    /// `$group`s (and `$bucket`s) that went on through temporary files
    /// (`metrics.query.group.spills`).
    pub groups: u64,
    /// Runs (temporary files) written.
    pub files: u64,
    /// Bytes written to them.
    pub bytes: u64,
}

static SORTS: AtomicU64 = AtomicU64::new(0);
static GROUPS: AtomicU64 = AtomicU64::new(0);
static FILES: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

/// The process's spill totals.
pub fn totals() -> SpillTotals {
    SpillTotals {
        sorts: SORTS.load(Ordering::Relaxed),
        groups: GROUPS.load(Ordering::Relaxed),
        files: FILES.load(Ordering::Relaxed),
        bytes: BYTES.load(Ordering::Relaxed),
    }
}

/// One item: its sort key and its BSON bytes.
pub type Keyed = (Vec<Bson>, Vec<u8>);

/// What an [`ExternalSort`] serves, for the spill totals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SpillKind {
    /// A sort (`metrics.query.sort.spillToDisk`).
    Sort,
    /// A `$group`'s later documents sorted by key (`metrics.query.group.spills`).
    Group,
    /// A result kept in order past the snapshot it was read in (files and bytes only).
    Spool,
}

/// A sort fed one document at a time that spills sorted runs past its limit.
pub struct ExternalSort {
    spec: SortSpec,
    collation: Collation,
    /// Bytes held before a run is written (or 292 answered).
    limit: usize,
    /// Where runs go; None: past the limit is 292 (the command refused disk use).
    dir: Option<Arc<Path>>,
    buffer: Vec<Keyed>,
    held: usize,
    runs: Vec<Run>,
    /// Which spill total its first run counts in.
    kind: SpillKind,
    /// A top-k sort (a sort with a limit): only the first this many sorted documents are
    /// wanted, so what is held — and each run — is cut to them.
    keep: Option<usize>,
}

impl ExternalSort {
    /// A sort by `spec` under `collation`, holding at most `limit` bytes, spilling to `dir`
    /// (None: answering 292 past the limit).
    pub fn new(
        spec: SortSpec,
        collation: Collation,
        limit: usize,
        dir: Option<Arc<Path>>,
    ) -> ExternalSort {
        ExternalSort {
            spec,
            collation,
            limit,
            dir,
            buffer: Vec::new(),
            held: 0,
            runs: Vec::new(),
            kind: SpillKind::Sort,
            keep: None,
        }
    }

    /// Makes this a top-k sort: only the first `count` sorted documents are wanted (a
    /// sort followed by a limit, `count` being skip plus limit). What it holds is cut to
    /// them whenever it holds twice as many or reaches its limit, so it holds about `count`
    /// documents, and past its limit only when those alone are past it (as MongoDB's top-k
    /// sort). Its output is those documents at most.
    pub fn keeping(mut self, count: usize) -> ExternalSort {
        self.keep = Some(count);
        self
    }

    /// Makes this the sort of a `$skip` of `skip` and a `$limit` of `limit` after it: with a
    /// limit, a top-k sort ([`ExternalSort::keeping`]) of skip + limit documents.
    pub fn keeping_slice(self, skip: u64, limit: Option<u64>) -> ExternalSort {
        match limit {
            Some(limit) => {
                let wanted = skip.saturating_add(limit);
                self.keeping(usize::try_from(wanted).unwrap_or(usize::MAX))
            }
            None => self,
        }
    }

    /// Counts this sort's spill as a `$group`'s (whose later documents it sorts by key).
    pub fn for_group(mut self) -> ExternalSort {
        self.kind = SpillKind::Group;
        self
    }

    /// A spool: documents kept in the order they are pushed (each keyed by its position),
    /// holding at most `limit` bytes and writing the rest to `dir` (None: held in memory).
    /// Its runs count as files and bytes, not as a spilled sort.
    pub fn spool(limit: usize, dir: Option<Arc<Path>>) -> ExternalSort {
        let position = SortSpec {
            keys: vec![(String::from("position"), SortDirection::Ascending)],
            natural: None,
        };
        let limit = if dir.is_some() { limit } else { usize::MAX };
        ExternalSort {
            kind: SpillKind::Spool,
            ..ExternalSort::new(position, Collation::simple(), limit, dir)
        }
    }

    /// A sort under the budget of the command evaluating on this thread: its limit and
    /// spill directory, 292 past the limit if it refused disk use, no limit without one.
    pub fn for_command(spec: SortSpec, collation: Collation) -> ExternalSort {
        match crate::interrupt::blocking_memory() {
            Some(memory) => ExternalSort::new(spec, collation, memory.bytes, memory.spill_dir),
            None => ExternalSort::new(spec, collation, usize::MAX, None),
        }
    }

    /// A spool ([`ExternalSort::spool`]) under the budget of the command evaluating on this
    /// thread, writing past it to its spill directory, or to its spool directory when the
    /// command refused disk use (`BlockingMemory::spool_dir`: a spool stands in for a stream
    /// MongoDB holds nothing of); held in memory without either.
    pub fn spool_for_command() -> ExternalSort {
        ExternalSort::spool_within(crate::interrupt::blocking_memory())
    }

    /// A spool under `memory` (see [`ExternalSort::spool_for_command`]), for a caller that
    /// found its command's budget itself (on the command's task rather than the pool).
    pub fn spool_within(memory: Option<crate::interrupt::BlockingMemory>) -> ExternalSort {
        match memory {
            Some(memory) => {
                ExternalSort::spool(memory.bytes, memory.spill_dir.or(memory.spool_dir))
            }
            None => ExternalSort::spool(usize::MAX, None),
        }
    }

    /// The sort specification.
    pub fn spec(&self) -> &SortSpec {
        &self.spec
    }

    /// Adds a document (its BSON bytes) with its sort key ([`SortSpec::keys_of`]).
    pub fn push(&mut self, key: Vec<Bson>, document: Vec<u8>) -> Result<(), QueryError> {
        let item = (key, document);
        self.held = self.held.saturating_add(held_bytes(&item));
        self.buffer.push(item);
        if let Some(keep) = self.keep {
            if self.held > self.limit || self.buffer.len() >= keep.saturating_mul(2).max(64) {
                self.cut_to(keep);
            }
        }
        if self.held > self.limit {
            match self.dir.clone() {
                None => return Err(Interruption::SortMemoryLimit.into()),
                Some(dir) => self.spill(&dir)?,
            }
        }
        Ok(())
    }

    /// Adds a document, computing its sort key.
    pub fn push_document(&mut self, document: &Document) -> Result<(), QueryError> {
        let key = self.spec.keys_of(document);
        let bytes = document
            .to_vec()
            .map_err(|error| QueryError::bad_value(format!("cannot encode a document: {error}")))?;
        self.push(key, bytes)
    }

    /// Whether a run has been written.
    pub fn spilled(&self) -> bool {
        !self.runs.is_empty()
    }

    /// Sorts what is held and writes it as one run.
    fn spill(&mut self, dir: &Path) -> Result<(), QueryError> {
        crate::interrupt::check_now()?;
        let mut items = std::mem::take(&mut self.buffer);
        self.held = 0;
        self.sort(&mut items);
        if self.runs.is_empty() {
            match self.kind {
                SpillKind::Sort => SORTS.fetch_add(1, Ordering::Relaxed),
                SpillKind::Group => GROUPS.fetch_add(1, Ordering::Relaxed),
                SpillKind::Spool => 0,
            };
        }
        self.runs.push(Run::write(dir, items)?);
        Ok(())
    }

    /// Sorts what is held and keeps its first `keep` documents.
    fn cut_to(&mut self, keep: usize) {
        let mut items = std::mem::take(&mut self.buffer);
        self.sort(&mut items);
        items.truncate(keep);
        self.held = items.iter().map(held_bytes).sum();
        self.buffer = items;
    }

    /// Sorts items stably by key under the sort's collation.
    fn sort(&self, items: &mut [Keyed]) {
        let spec = &self.spec;
        self.collation
            .install(|| items.sort_by(|(a, _), (b, _)| spec.compare_keys(a, b)));
    }

    /// The sorted documents: from memory when nothing spilled, else merged from the runs
    /// (what is still held is written as the last one).
    pub fn finish(mut self) -> Result<SortedOutput, QueryError> {
        let source = if self.runs.is_empty() {
            let mut items = std::mem::take(&mut self.buffer);
            self.sort(&mut items);
            Source::Memory(items.into_iter())
        } else {
            if !self.buffer.is_empty() {
                if let Some(dir) = self.dir.clone() {
                    self.spill(&dir)?;
                }
            }
            let mut readers = Vec::with_capacity(self.runs.len());
            let mut heads = Vec::with_capacity(self.runs.len());
            for run in std::mem::take(&mut self.runs) {
                let mut reader = run.read()?;
                heads.push(reader.next_record()?);
                readers.push(reader);
            }
            let mut heap: Vec<usize> = (0..heads.len()).filter(|&at| heads[at].is_some()).collect();
            let spec = &self.spec;
            self.collation.install(|| {
                for at in (0..heap.len() / 2).rev() {
                    sift_down(spec, &heads, &mut heap, at);
                }
            });
            Source::Merge {
                readers,
                heads,
                heap,
            }
        };
        Ok(SortedOutput {
            spec: self.spec,
            collation: self.collation,
            source,
            remaining: self.keep,
        })
    }
}

/// What an item counts against the limit: its document, its key and a little more.
fn held_bytes((key, document): &Keyed) -> usize {
    document.len()
        + key
            .iter()
            .map(crate::query::memory::value_size)
            .sum::<usize>()
        + 16
}

/// The output of an [`ExternalSort`], read in order.
pub struct SortedOutput {
    spec: SortSpec,
    collation: Collation,
    source: Source,
    /// Documents still to hand out (a top-k sort's count), None: all of them.
    remaining: Option<usize>,
}

enum Source {
    Memory(std::vec::IntoIter<Keyed>),
    /// One reader per run, the next item of each (None: that run is done), and the runs
    /// that have one as a binary min-heap by (head key, run): the merge costs O(log runs)
    /// comparisons per document.
    Merge {
        readers: Vec<RunReader>,
        heads: Vec<Option<Keyed>>,
        heap: Vec<usize>,
    },
}

/// Whether run `a`'s head goes before run `b`'s: the smaller key, and on a tie the earlier
/// run (its items came first in the input).
fn goes_before(spec: &SortSpec, heads: &[Option<Keyed>], a: usize, b: usize) -> bool {
    match (&heads[a], &heads[b]) {
        (Some((x, _)), Some((y, _))) => spec.compare_keys(x, y).then(a.cmp(&b)).is_lt(),
        (Some(_), None) => true,
        _ => false,
    }
}

/// Moves the run at `heap[at]` down until neither child goes before it.
fn sift_down(spec: &SortSpec, heads: &[Option<Keyed>], heap: &mut [usize], mut at: usize) {
    loop {
        let mut first = at;
        for child in [2 * at + 1, 2 * at + 2] {
            if child < heap.len() && goes_before(spec, heads, heap[child], heap[first]) {
                first = child;
            }
        }
        if first == at {
            return;
        }
        heap.swap(at, first);
        at = first;
    }
}

impl SortedOutput {
    /// Whether the output is merged from temporary files (MongoDB's `usedDisk`).
    pub fn used_disk(&self) -> bool {
        matches!(self.source, Source::Merge { .. })
    }

    /// The next document's BSON bytes, None at the end.
    pub fn next_document(&mut self) -> Result<Option<Vec<u8>>, QueryError> {
        Ok(self.next_keyed()?.map(|(_, document)| document))
    }

    /// The next document's sort key and BSON bytes, None at the end.
    pub fn next_keyed(&mut self) -> Result<Option<Keyed>, QueryError> {
        if let Some(remaining) = &mut self.remaining {
            if *remaining == 0 {
                return Ok(None);
            }
            *remaining -= 1;
        }
        match &mut self.source {
            Source::Memory(items) => Ok(items.next()),
            Source::Merge {
                readers,
                heads,
                heap,
            } => {
                let Some(&at) = heap.first() else {
                    return Ok(None);
                };
                let next = match readers.get_mut(at) {
                    Some(reader) => reader.next_record()?,
                    None => None,
                };
                let taken = heads
                    .get_mut(at)
                    .and_then(|head| std::mem::replace(head, next));
                if heads.get(at).is_some_and(Option::is_none) {
                    // That run is done: its place goes to the heap's last run.
                    heap.swap_remove(0);
                }
                let spec = &self.spec;
                self.collation.install(|| sift_down(spec, heads, heap, 0));
                Ok(taken)
            }
        }
    }

    /// The next document's sort key and the document, decoded; None at the end.
    pub fn next_decoded(&mut self) -> Result<Option<(Vec<Bson>, Document)>, QueryError> {
        match self.next_keyed()? {
            Some((key, bytes)) => Ok(Some((key, decode(&bytes)?))),
            None => Ok(None),
        }
    }

    /// Everything left, decoded.
    pub fn into_documents(mut self) -> Result<Vec<Document>, QueryError> {
        let mut documents = Vec::new();
        while let Some(bytes) = self.next_document()? {
            crate::interrupt::check()?;
            documents.push(decode(&bytes)?);
        }
        Ok(documents)
    }
}

/// Sorts `documents` for a pipeline's `$sort` under the command's budget: in memory while
/// they fit the limit (or the command has none), else through sorted runs on disk (292 if
/// the command refused disk use). Answers the sorted documents and whether disk was used.
pub fn sort_documents(
    spec: &SortSpec,
    documents: Vec<Document>,
) -> Result<(Vec<Document>, bool), QueryError> {
    let limit = crate::interrupt::blocking_memory().map(|memory| memory.bytes);
    let fits = limit.is_none_or(|limit| crate::query::memory::documents_size(&documents) <= limit);
    if fits || spec.keys.is_empty() {
        let mut documents = documents;
        spec.sort(&mut documents);
        return Ok((documents, false));
    }
    let collation = Collation::installed();
    let mut sort = ExternalSort::for_command(spec.clone(), collation);
    for document in documents {
        crate::interrupt::check()?;
        sort.push_document(&document)?;
    }
    let output = sort.finish()?;
    let used_disk = output.used_disk();
    Ok((output.into_documents()?, used_disk))
}

fn decode(bytes: &[u8]) -> Result<Document, QueryError> {
    bson::RawDocument::from_bytes(bytes)
        .and_then(Document::try_from)
        .map_err(|error| corrupt(&error.to_string()))
}

fn corrupt(detail: &str) -> QueryError {
    QueryError::coded(
        1,
        "InternalError",
        format!("a temporary file of a sort could not be read back: {detail}"),
    )
}

/// An I/O failure on a temporary file: MongoDB's 14031 OutOfDiskSpace when the device is
/// full, else InternalError naming the directory.
fn io_error(dir: &Path, error: &std::io::Error) -> QueryError {
    const NO_SPACE: i32 = 28;
    if error.raw_os_error() == Some(NO_SPACE) {
        return QueryError::coded(
            14031,
            "OutOfDiskSpace",
            format!(
                "a sort past its memory limit could not write its temporary file in {}: {error}",
                dir.display()
            ),
        );
    }
    QueryError::coded(
        1,
        "InternalError",
        format!(
            "a sort past its memory limit could not write its temporary file in {} (--temp-dir): {error}",
            dir.display()
        ),
    )
}

/// One sorted run on disk, in a file without a name: it is unlinked as it is created
/// (`O_TMPFILE` where the file system has it), so its space goes back when this is dropped —
/// or when the process dies, however it dies. Nothing is ever left in the directory.
struct Run {
    file: File,
    dir: Arc<Path>,
}

impl Run {
    fn write(dir: &Path, items: Vec<Keyed>) -> Result<Run, QueryError> {
        let fail = |error: std::io::Error| io_error(dir, &error);
        let mut file = tempfile::tempfile_in(dir).map_err(fail)?;
        let mut written = 0u64;
        {
            let mut out = BufWriter::new(&mut file);
            for (key, document) in items {
                let key = bson::doc! {"k": Bson::Array(key)}
                    .to_vec()
                    .map_err(|error| corrupt(&error.to_string()))?;
                out.write_all(&key).map_err(fail)?;
                out.write_all(&document).map_err(fail)?;
                written += (key.len() + document.len()) as u64;
            }
            out.flush().map_err(fail)?;
        }
        FILES.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(written, Ordering::Relaxed);
        Ok(Run {
            file,
            dir: Arc::from(dir),
        })
    }

    fn read(mut self) -> Result<RunReader, QueryError> {
        let dir = self.dir.clone();
        let fail = |error: std::io::Error| io_error(&dir, &error);
        self.file.rewind().map_err(fail)?;
        // A second handle on the same open file (and offset): the run is read once, in order.
        let handle = self.file.try_clone().map_err(fail)?;
        Ok(RunReader {
            input: BufReader::new(handle),
            _run: self,
        })
    }
}

/// Reads a run's records in order; keeps the run (its file) alive.
struct RunReader {
    input: BufReader<File>,
    _run: Run,
}

impl RunReader {
    /// The next record, None at the end of the file.
    fn next_record(&mut self) -> Result<Option<Keyed>, QueryError> {
        let Some(key) = self.next_bson()? else {
            return Ok(None);
        };
        let key = match decode(&key)?.remove("k") {
            Some(Bson::Array(key)) => key,
            _ => return Err(corrupt("a record without its key")),
        };
        match self.next_bson()? {
            Some(document) => Ok(Some((key, document))),
            None => Err(corrupt("a key without its document")),
        }
    }

    /// One BSON document's bytes (its length first), None at a clean end of file.
    fn next_bson(&mut self) -> Result<Option<Vec<u8>>, QueryError> {
        let mut length = [0u8; 4];
        match self.input.read_exact(&mut length) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(error) => return Err(corrupt(&error.to_string())),
        }
        let size = usize::try_from(i32::from_le_bytes(length)).unwrap_or(0);
        if !(5..=MAX_RECORD_BYTES).contains(&size) {
            return Err(corrupt("a record of impossible length"));
        }
        let mut bytes = vec![0u8; size];
        bytes[..4].copy_from_slice(&length);
        self.input
            .read_exact(&mut bytes[4..])
            .map_err(|error| corrupt(&error.to_string()))?;
        Ok(Some(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    /// The run files this process holds open in `dir` (they have no name: the directory
    /// itself stays empty, which is checked too).
    fn spilled_files(dir: &Path) -> usize {
        assert_eq!(
            std::fs::read_dir(dir).unwrap().count(),
            0,
            "no named file in {dir:?}"
        );
        let dir = dir.canonicalize().unwrap();
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
            .filter(|target| target.starts_with(&dir))
            .count()
    }

    fn documents() -> Vec<Document> {
        // Mixed numeric types, ties, missing fields and arrays (min/max sort keys).
        (0..500)
            .map(|i: i32| match i % 5 {
                0 => doc! {"_id": i, "a": i % 7, "b": format!("s{}", i % 3)},
                1 => doc! {"_id": i, "a": f64::from(i % 7) + 0.5},
                2 => doc! {"_id": i, "a": i64::from(i % 7), "b": "x"},
                3 => doc! {"_id": i, "a": [i % 11, -1 - (i % 2)]},
                _ => doc! {"_id": i, "b": null},
            })
            .collect()
    }

    fn sorted_through_runs(spec: &SortSpec, limit: usize, dir: &Path) -> (Vec<Document>, bool) {
        let mut sort = ExternalSort::new(
            spec.clone(),
            Collation::simple(),
            limit,
            Some(Arc::from(dir)),
        );
        for document in documents() {
            sort.push_document(&document).unwrap();
        }
        let output = sort.finish().unwrap();
        let used_disk = output.used_disk();
        (output.into_documents().unwrap(), used_disk)
    }

    #[test]
    fn runs_merge_into_the_stable_in_memory_order() {
        let dir = tempfile::tempdir().unwrap();
        for spec in [
            doc! {"a": 1},
            doc! {"a": -1},
            doc! {"b": 1, "a": -1},
            doc! {"a": 1, "_id": -1},
        ] {
            let spec = SortSpec::parse(&spec).unwrap();
            let mut expected = documents();
            spec.sort(&mut expected);
            for limit in [1, 700, 5_000, usize::MAX] {
                let (sorted, used_disk) = sorted_through_runs(&spec, limit, dir.path());
                assert_eq!(used_disk, limit != usize::MAX, "limit {limit}");
                assert_eq!(sorted, expected, "spec {:?} limit {limit}", spec.keys);
            }
        }
        assert_eq!(spilled_files(dir.path()), 0, "runs are deleted once read");
    }

    #[test]
    fn a_top_k_sort_answers_the_first_k_and_holds_about_k() {
        let dir = tempfile::tempdir().unwrap();
        let spec = SortSpec::parse(&doc! {"a": -1, "b": 1}).unwrap();
        let mut expected = documents();
        spec.sort(&mut expected);
        // In memory (with and without a limit the k documents fit), through runs (each cut
        // to k), and with k past the input.
        for (limit, keep, spills) in [
            (usize::MAX, 7, false),
            (1_500, 7, false),
            (1_500, 100, true),
            (usize::MAX, 900, false),
        ] {
            let mut sort = ExternalSort::new(
                spec.clone(),
                Collation::simple(),
                limit,
                Some(Arc::from(dir.path())),
            )
            .keeping(keep);
            for document in documents() {
                sort.push_document(&document).unwrap();
                assert!(sort.buffer.len() < keep.saturating_mul(2).max(64));
            }
            let output = sort.finish().unwrap();
            assert_eq!(output.used_disk(), spills, "limit {limit} keep {keep}");
            let got = output.into_documents().unwrap();
            assert_eq!(
                got,
                expected[..keep.min(expected.len())],
                "limit {limit} keep {keep}"
            );
        }
        // Without a directory only the kept documents count against the limit: 292 when
        // they alone are past it.
        for (keep, refused) in [(7, false), (100, true)] {
            let mut sort =
                ExternalSort::new(spec.clone(), Collation::simple(), 1_500, None).keeping(keep);
            let error = documents()
                .iter()
                .find_map(|document| sort.push_document(document).err());
            assert_eq!(error.map(|e| e.code), refused.then_some(292), "keep {keep}");
        }
        assert_eq!(spilled_files(dir.path()), 0);
    }

    #[test]
    fn files_live_as_long_as_the_output_and_go_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let spec = SortSpec::parse(&doc! {"a": 1}).unwrap();
        let mut sort = ExternalSort::new(spec, Collation::simple(), 2_000, Some(dir.path().into()));
        for document in documents() {
            sort.push_document(&document).unwrap();
        }
        assert!(sort.spilled());
        let mut output = sort.finish().unwrap();
        assert!(spilled_files(dir.path()) > 1);
        assert!(output.next_document().unwrap().is_some());
        drop(output);
        assert_eq!(spilled_files(dir.path()), 0);
    }

    #[test]
    fn without_a_directory_past_the_limit_is_292() {
        let spec = SortSpec::parse(&doc! {"a": 1}).unwrap();
        let mut sort = ExternalSort::new(spec, Collation::simple(), 100, None);
        let error = documents()
            .iter()
            .find_map(|document| sort.push_document(document).err())
            .unwrap();
        assert_eq!(error.code, 292);
    }

    #[test]
    fn a_command_that_may_spill_sorts_its_stage_through_disk() {
        let dir = tempfile::tempdir().unwrap();
        let interrupt = crate::interrupt::Interrupt::new(None);
        interrupt.limit_blocking_memory(crate::interrupt::BlockingMemory {
            bytes: 1_000,
            spill_dir: Some(dir.path().into()),
            spool_dir: None,
        });
        let spec = SortSpec::parse(&doc! {"b": -1, "_id": 1}).unwrap();
        let mut expected = documents();
        spec.sort(&mut expected);
        let (sorted, used_disk) = interrupt.install(|| sort_documents(&spec, documents()).unwrap());
        assert!(used_disk);
        assert_eq!(sorted, expected);
        assert_eq!(spilled_files(dir.path()), 0);
    }

    #[test]
    fn a_collation_orders_the_merge_too() {
        let dir = tempfile::tempdir().unwrap();
        let collation = Collation::parse(&doc! {"locale": "en", "strength": 2}).unwrap();
        let spec = SortSpec::parse(&doc! {"s": 1}).unwrap();
        let words = ["b", "A", "a", "C", "B", "c", "á", "Z"];
        let input: Vec<Document> = (0..200_i32)
            .map(|i| doc! {"_id": i, "s": words[i as usize % words.len()]})
            .collect();
        let mut expected = input.clone();
        collation.install(|| spec.sort(&mut expected));
        let mut sort = ExternalSort::new(spec, collation, 300, Some(dir.path().into()));
        for document in &input {
            sort.push_document(document).unwrap();
        }
        let output = sort.finish().unwrap();
        assert!(output.used_disk());
        assert_eq!(output.into_documents().unwrap(), expected);
    }
}
