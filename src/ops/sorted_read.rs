//! Reads sorted in Rust, never held whole: a `find` (or a REST page) — or an aggregate's
//! leading `$match` + `$sort` followed by stages that look at one document at a time —
//! whose sort no index serves. The matching documents stream in chunks from a
//! [`ReadCursor`] (natural order, residual filter applied) into an [`ExternalSort`], which
//! holds at most the command's limit and writes sorted runs to temporary files past it (or
//! answers 292 when the command said `allowDiskUse: false`); with a limit it is a top-k sort
//! that keeps only skip + limit documents. The cursor then hands out the k-way merge batch
//! by batch ([`SortedResult`]), projecting each document (a find) or sending it through the
//! stages after the sort (an aggregate) as it goes. The temporary files go when the cursor
//! does (exhausted, killed, timed out, its session ended) or the command fails.
//!
//! A `$text` read sorted or projected by its score gives each match its score as it is fed
//! and removes it as it is shaped.
//!
//! A snapshot read outside a transaction reads its whole result while its snapshot is open:
//! [`spool`] drains a streaming cursor into a spool (the external sort keyed by arrival) that
//! holds at most the command's limit and writes the rest to temporary files, and the cursor
//! hands it out the same way after the snapshot has ended.
//!
//! Not for: the merge sort and its files (`query::spill`) or cursors (`cursors`).

use std::sync::Arc;

use bson::raw::RawDocumentBuf;
use bson::Bson;

use super::chained_read::STAGE_CHUNK;
use super::cursors::ResultSource;
use super::find::encode_documents;
use super::read::{decode_document, INLINE_ROWS};
use super::read_cursor::{BatchLimit, ReadCursor};
use super::transaction::OpScope;
use super::OpError;
use crate::catalog::CollectionInfo;
use crate::query::densify_stream::DensifiedOutput;
use crate::query::planner::ReadPlan;
use crate::query::spill::{ExternalSort, SortedOutput};
use crate::query::text::{TextSearch, TEXT_SCORE_FIELD};
use crate::query::window_stream::WindowedOutput;
use crate::query::{Collation, Filter, ForeignDocuments, Pipeline, Projection, Stage};

/// Rows read from the store per round trip while the sort is fed.
const INPUT_CHUNK: usize = 10_000;

/// Runs `work` inline when it is `small`, else on the compute pool (`crate::compute`).
pub(super) async fn evaluate<T: Send + 'static>(
    small: bool,
    work: impl FnOnce() -> Result<T, OpError> + Send + 'static,
) -> Result<T, OpError> {
    match small {
        true => crate::compute::run_inline(work),
        false => crate::compute::run(work).await,
    }
}

/// What each sorted document becomes before it reaches the client.
pub enum SortedShape {
    /// A find's projection (with the whole filter for a positional one).
    Find {
        projection: Option<Projection>,
        positional_filter: Option<Filter>,
    },
    /// The per-document stages of an aggregate after its sort, and what they read.
    Stages {
        pipeline: Pipeline,
        foreign: Arc<ForeignDocuments>,
    },
}

/// Whether `plan` is sorted through [`open`]: its sort is done in Rust. [`open`] reads all
/// its input when it opens, so a snapshot read is done with its snapshot then.
pub fn spills(plan: &ReadPlan) -> bool {
    plan.sort.as_ref().is_some_and(|sort| !sort.keys.is_empty())
}

/// The rest of a result for a cursor that outlives the scope's snapshot (a snapshot read
/// outside a transaction): a streaming read is drained now, in the snapshot, into a spool
/// that holds at most the command's blocking-stage limit and writes the rest to temporary
/// files (also when the command refused disk use: `ExternalSort::spool_for_command`); other
/// sources were read whole when they opened. A scope without a snapshot keeps `source` as
/// it is.
pub async fn spool(scope: &mut OpScope<'_>, source: ResultSource) -> Result<ResultSource, OpError> {
    let mut read = match source {
        ResultSource::Stream(read)
            if scope.reads_whole() && !read.is_exhausted() && read.tail().is_none() =>
        {
            read
        }
        other => return Ok(other),
    };
    let memory = crate::compute::current_interrupt().blocking_memory();
    let spool = ExternalSort::spool_within(memory);
    let push = |(spool, at): &mut (ExternalSort, i64), row: RawDocumentBuf| {
        spool.push(vec![Bson::Int64(*at)], row.into_bytes())?;
        *at += 1;
        Ok(())
    };
    let fed_spool = ((spool, 0), INLINE_ROWS);
    let ((spool, _), fed) = feed_rows(scope, &mut read, fed_spool, push, |_| false).await?;
    let small = fed <= INLINE_ROWS;
    let output = evaluate(small, move || Ok::<_, OpError>(spool.finish()?)).await?;
    Ok(ResultSource::Sorted(Box::new(SortedResult {
        small: small && !output.used_disk(),
        used_disk: output.used_disk(),
        rows_examined: read.rows_read(),
        output: Some(Ordered::Sorted(output)),
        pending: None,
        ahead: Default::default(),
        skip: 0,
        shape: Arc::new(SortedShape::Find {
            projection: None,
            positional_filter: None,
        }),
        scored: false,
        collation: Collation::simple(),
        exhausted: false,
    })))
}

/// Feeds the rows `input` reads, chunk by chunk, to `push` with `state` (on the compute
/// pool, or inline for a chunk of at most `inline_rows`) until they end or `is_full` says
/// the state takes no more; answers the state and how many rows were read.
pub(super) async fn feed_rows<S: Send + 'static>(
    scope: &mut OpScope<'_>,
    input: &mut ReadCursor,
    (mut state, inline_rows): (S, usize),
    push: impl Fn(&mut S, RawDocumentBuf) -> Result<(), OpError> + Clone + Send + 'static,
    is_full: fn(&S) -> bool,
) -> Result<(S, usize), OpError> {
    let chunk = BatchLimit {
        documents: INPUT_CHUNK,
        bytes: super::cursors::MAX_BATCH_BYTES,
    };
    let mut fed = 0usize;
    while !input.is_exhausted() && !is_full(&state) {
        let rows = input.next_batch(scope, chunk).await?;
        fed = fed.saturating_add(rows.len());
        let push = push.clone();
        state = evaluate(rows.len() <= inline_rows, move || {
            for row in rows {
                if is_full(&state) {
                    break;
                }
                crate::interrupt::check()?;
                push(&mut state, row)?;
            }
            Ok::<_, OpError>(state)
        })
        .await?;
    }
    Ok((state, fed))
}

/// What the running command lets a sort or a spool hold, and where it spills (no limit and
/// nowhere without one).
fn command_memory() -> (usize, Option<Arc<std::path::Path>>) {
    crate::compute::current_interrupt()
        .blocking_memory()
        .map_or((usize::MAX, None), |memory| {
            (memory.bytes, memory.spill_dir)
        })
}

/// Reads every document `plan` selects into an external sort and answers the first batch
/// of the sorted result (bounded by `first`) and the cursor source of the rest. The plan
/// must be one that [`spills`].
pub async fn open(
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    plan: ReadPlan,
    shape: SortedShape,
    first: BatchLimit,
) -> Result<(Vec<RawDocumentBuf>, ResultSource), OpError> {
    let collation = plan.collation.clone();
    let skip = plan.skip;
    let plan_limit = plan.limit;
    let Some(spec) = plan.sort.clone() else {
        return Err(OpError::BadValue("a sorted read without a sort".into()));
    };
    let unsorted = ReadPlan {
        sort: None,
        skip: 0,
        limit: None,
        ..plan
    };
    // A sort or projection by `{$meta: "textScore"}`: each match carries its score while it
    // is sorted and shaped (removed before it leaves).
    let scored: Option<Arc<TextSearch>> =
        super::read::text_scored(&unsorted).map(|search| Arc::new(search.clone()));
    let mut input = ReadCursor::new(info, unsorted, None, None);
    let (limit, spill_dir) = command_memory();
    let sort = ExternalSort::new(spec, collation.clone(), limit, spill_dir)
        .keeping_slice(skip, plan_limit);
    let sort_collation = collation.clone();
    let text = scored.clone();
    let push = move |sort: &mut ExternalSort, row: RawDocumentBuf| {
        sort_collation.install(|| {
            match &text {
                None => {
                    // Only the sorted fields are decoded.
                    let key = super::read::raw_sort_key(&row, sort.spec())?;
                    sort.push(key, row.into_bytes())?;
                }
                Some(search) => {
                    let mut document = decode_document(row.as_bytes())?;
                    document.insert(TEXT_SCORE_FIELD, search.score(&document));
                    sort.push_document(&document)?;
                }
            }
            Ok(())
        })
    };
    let (sort, fed) = feed_rows(scope, &mut input, (sort, INLINE_ROWS), push, |_| false).await?;
    let small = fed <= INLINE_ROWS;
    let output = evaluate(small, move || Ok::<_, OpError>(sort.finish()?)).await?;
    let mut result = SortedResult {
        small: small && !output.used_disk(),
        used_disk: output.used_disk(),
        rows_examined: input.rows_read(),
        output: Some(Ordered::Sorted(output)),
        pending: None,
        ahead: Default::default(),
        skip,
        shape: Arc::new(shape),
        scored: scored.is_some(),
        collation,
        exhausted: false,
    };
    let batch = result.next_batch(first).await?;
    Ok((batch, ResultSource::Sorted(Box::new(result))))
}

/// The rest of a sorted result: the merge of its runs (or its sorted documents in memory),
/// read batch by batch.
pub struct SortedResult {
    /// None once exhausted (its files are gone with it).
    output: Option<Ordered>,
    /// The document read after the last batch (it tells the result goes on).
    pending: Option<Row>,
    /// Documents the stages made that did not fit in the last batch.
    ahead: std::collections::VecDeque<RawDocumentBuf>,
    /// Sorted documents still to skip.
    skip: u64,
    shape: Arc<SortedShape>,
    /// The documents carry their text score (to remove as they are shaped).
    scored: bool,
    /// Few documents, sorted in memory: batches are filled inline.
    small: bool,
    /// The sort wrote temporary files (MongoDB's `usedDisk`).
    used_disk: bool,
    /// Rows the store handed over to feed the sort.
    rows_examined: usize,
    collation: Collation,
    exhausted: bool,
}

impl SortedResult {
    /// The rest of an aggregate that ran through blocking stages (`chained_read`): `output`
    /// less its first `skip` documents, each sent through `shape`'s stages under
    /// `collation`. `rows_examined` rows fed it; `small` when few enough to be handed out
    /// inline.
    pub(super) fn of_stages(
        output: Ordered,
        skip: u64,
        shape: SortedShape,
        scored: bool,
        (rows_examined, small): (usize, bool),
        collation: Collation,
    ) -> SortedResult {
        SortedResult {
            small: small && !output.used_disk(),
            used_disk: output.used_disk(),
            rows_examined,
            output: Some(output),
            pending: None,
            ahead: Default::default(),
            skip,
            shape: Arc::new(shape),
            scored,
            collation,
            exhausted: false,
        }
    }

    /// True once every document has been handed out.
    pub fn is_exhausted(&self) -> bool {
        self.exhausted
    }

    /// Whether the sort wrote temporary files.
    pub fn used_disk(&self) -> bool {
        self.used_disk
    }

    /// Rows the store handed over to feed the sort (explain's `totalDocsExamined`).
    pub fn rows_examined(&self) -> usize {
        self.rows_examined
    }

    /// The next batch, bounded by `limit`, merged on the compute pool.
    pub async fn next_batch(&mut self, limit: BatchLimit) -> Result<Vec<RawDocumentBuf>, OpError> {
        let Some(output) = self.output.take() else {
            self.exhausted = true;
            return Ok(Vec::new());
        };
        let mut state = BatchState {
            output,
            pending: self.pending.take(),
            ahead: std::mem::take(&mut self.ahead),
            skip: self.skip,
            shape: Arc::clone(&self.shape),
            scored: self.scored,
            collation: self.collation.clone(),
        };
        let (state, batch, more) = evaluate(self.small, move || {
            let (batch, more) = state.fill(limit)?;
            Ok::<_, OpError>((state, batch, more))
        })
        .await?;
        self.skip = state.skip;
        self.pending = state.pending;
        self.ahead = state.ahead;
        if more {
            self.output = Some(state.output);
        } else {
            self.exhausted = true;
        }
        Ok(batch)
    }
}

/// What a [`SortedResult`] hands out in order.
pub(super) enum Ordered {
    /// A sort's output: the merge of its runs, or its documents sorted in memory.
    Sorted(SortedOutput),
    /// A `$setWindowFields`' output, windowed one partition at a time.
    Windowed(Box<WindowedOutput>),
    /// A `$group`'s groups.
    Documents(std::vec::IntoIter<bson::Document>),
    /// A `$densify`'s documents and those it generates.
    Densified(Box<DensifiedOutput>),
    /// The documents of a collection the command read whole (a `$unionWith`'s), from `next`.
    Foreign {
        foreign: Arc<ForeignDocuments>,
        collection: String,
        next: usize,
    },
    /// One output, then another (a `$unionWith`'s input, then the other collection's).
    Then(Box<Ordered>, Box<Ordered>),
}

impl Ordered {
    /// The next document, None after the last.
    pub(super) fn next_row(&mut self) -> Result<Option<Row>, OpError> {
        Ok(match self {
            Ordered::Sorted(sorted) => sorted.next_document()?.map(Row::Bytes),
            Ordered::Windowed(windowed) => windowed.next_document()?.map(Row::Document),
            Ordered::Densified(densified) => densified.next_document()?.map(Row::Document),
            Ordered::Documents(documents) => documents.next().map(Row::Document),
            Ordered::Foreign {
                foreign,
                collection,
                next,
            } => {
                let document = foreign.get(collection.as_str()).and_then(|d| d.get(*next));
                *next += 1;
                document.cloned().map(Row::Document)
            }
            Ordered::Then(first, second) => match first.next_row()? {
                Some(row) => Some(row),
                None => second.next_row()?,
            },
        })
    }

    /// Whether it wrote temporary files so far.
    pub(super) fn used_disk(&self) -> bool {
        match self {
            Ordered::Sorted(sorted) => sorted.used_disk(),
            Ordered::Windowed(windowed) => windowed.used_disk(),
            Ordered::Densified(densified) => densified.used_disk(),
            Ordered::Documents(_) | Ordered::Foreign { .. } => false,
            Ordered::Then(first, second) => first.used_disk() || second.used_disk(),
        }
    }
}

/// One document of an [`Ordered`] output.
pub(super) enum Row {
    /// BSON bytes (as stored, or as written to a run).
    Bytes(Vec<u8>),
    /// A document a stage made.
    Document(bson::Document),
}

impl Row {
    pub(super) fn into_document(self) -> Result<bson::Document, OpError> {
        match self {
            Row::Bytes(bytes) => Ok(decode_document(&bytes)?),
            Row::Document(document) => Ok(document),
        }
    }
}

/// A batch being filled on the compute pool.
struct BatchState {
    output: Ordered,
    pending: Option<Row>,
    ahead: std::collections::VecDeque<RawDocumentBuf>,
    skip: u64,
    shape: Arc<SortedShape>,
    scored: bool,
    collation: Collation,
}

impl BatchState {
    /// Fills a batch; answers it and whether more documents follow.
    fn fill(&mut self, limit: BatchLimit) -> Result<(Vec<RawDocumentBuf>, bool), OpError> {
        let collation = self.collation.clone();
        collation.install(|| {
            let mut batch = Vec::new();
            let mut bytes = 0usize;
            while batch.len() < limit.documents && bytes < limit.bytes {
                if let Some(document) = self.ahead.pop_front() {
                    bytes += document.as_bytes().len();
                    batch.push(document);
                    continue;
                }
                crate::interrupt::check()?;
                // Stages run over up to `STAGE_CHUNK` documents at once (as many as the
                // batch may still take); a find's shape over one.
                let wanted = match &*self.shape {
                    SortedShape::Stages { .. } => {
                        (limit.documents - batch.len()).clamp(1, STAGE_CHUNK)
                    }
                    SortedShape::Find { .. } => 1,
                };
                let mut rows = Vec::with_capacity(wanted);
                while rows.len() < wanted {
                    let next = match self.pending.take() {
                        Some(next) => Some(next),
                        None => self.output.next_row()?,
                    };
                    let Some(next) = next else {
                        break;
                    };
                    if self.skip > 0 {
                        self.skip -= 1;
                        continue;
                    }
                    rows.push(next);
                }
                if rows.is_empty() {
                    return Ok((batch, false));
                }
                // What the stages make of the rows may overflow the batch: the rest waits
                // for the next one.
                let shaped = self.shaped(rows)?;
                self.ahead.extend(shaped);
            }
            if self.ahead.is_empty() && self.pending.is_none() {
                self.pending = self.output.next_row()?;
            }
            let more = !self.ahead.is_empty() || self.pending.is_some();
            Ok((batch, more))
        })
    }

    /// Sorted documents as the client gets them.
    fn shaped(&self, rows: Vec<Row>) -> Result<Vec<RawDocumentBuf>, OpError> {
        let mut shaped = match &*self.shape {
            SortedShape::Find {
                projection: None, ..
            } if !self.scored => {
                let mut raw = Vec::with_capacity(rows.len());
                for row in rows {
                    raw.extend(match row {
                        Row::Bytes(bytes) => vec![RawDocumentBuf::from_bytes(bytes)
                            .map_err(|error| OpError::BadValue(error.to_string()))?],
                        Row::Document(document) => encode_documents(&[document])?,
                    });
                }
                return Ok(raw);
            }
            SortedShape::Find {
                projection,
                positional_filter,
            } => {
                let mut documents = Vec::with_capacity(rows.len());
                for row in rows {
                    let document = row.into_document()?;
                    documents.push(match (projection, positional_filter) {
                        (None, _) => document,
                        (Some(projection), Some(filter)) => {
                            projection.apply_with_query(&document, filter)?
                        }
                        (Some(projection), None) => projection.apply(&document)?,
                    });
                }
                documents
            }
            SortedShape::Stages { pipeline, foreign } => {
                let documents = rows
                    .into_iter()
                    .map(Row::into_document)
                    .collect::<Result<Vec<_>, _>>()?;
                pipeline.run_with(documents, foreign)?
            }
        };
        if self.scored {
            shaped.iter_mut().for_each(super::read::strip_text_score);
        }
        encode_documents(&shaped)
    }
}

/// An aggregate over `info` whose leading read is sorted in Rust, opened when its plan
/// [`spills`]: through [`open`] when its later stages look at one document at a time, else
/// as a chain (`chained_read`) whose first blocking stage is that sort. None otherwise (the
/// pipeline runs as before).
pub async fn open_pipeline(
    catalog: &crate::catalog::Catalog,
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    pipeline: &Pipeline,
    hint: Option<&Bson>,
    collation: Option<&Collation>,
    first: BatchLimit,
) -> Result<Option<(Vec<RawDocumentBuf>, ResultSource)>, OpError> {
    let lead = pipeline.leading_read();
    let rest = pipeline.after(lead.stages);
    let Some(spec) = lead.sort else {
        return Ok(None);
    };
    let collation = info.collation_for(collation.cloned())?;
    let chained = !rest.is_per_document();
    let indexes = super::find::hinted_indexes(&info.indexes, hint)?;
    let plan = super::aggregate::plan_leading_read(pipeline, indexes, collation)?;
    if !spills(&plan) {
        return Ok(None);
    }
    if chained {
        // The sort becomes the chain's first blocking stage, with the plan's skip and limit
        // (and its `_id` tie-break: equal keys in one order whatever the storage order).
        let sort = plan.sort.clone().unwrap_or(spec);
        let mut stages = vec![Stage::Sort(sort), Stage::Skip(plan.skip)];
        stages.extend(plan.limit.map(Stage::Limit));
        stages.extend(rest.stages);
        let unsorted = ReadPlan {
            sort: None,
            skip: 0,
            limit: None,
            ..plan
        };
        let chain = Pipeline { stages };
        let opened = super::chained_read::open(catalog, scope, info, unsorted, &chain, first);
        return Box::pin(opened).await;
    }
    let foreign = {
        let mut session = scope.reader().await?;
        super::aggregate::read_foreign(catalog, session.as_mut(), &info.record.db, &rest).await?
    };
    let shape = SortedShape::Stages {
        pipeline: rest,
        foreign: Arc::new(foreign),
    };
    super::index_usage::record(info, &plan);
    open(scope, info, plan, shape, first).await.map(Some)
}
