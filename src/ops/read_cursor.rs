//! Reads that stream: a `find` whose order the store produces (natural order, `_id`, or a
//! walk of a secondary index) is read one bounded batch at a time. A [`ReadCursor`] holds a
//! position in the scan — the last row's sequence number, `_id` key, or index key and `_id`
//! key — never the rest of the result, and each batch is a keyset query that resumes after
//! it (`Store::scan_from`), so memory is bounded by the batch and the first batch does not
//! wait for the last document.
//!
//! A batch of `n` documents reads `n + 1` rows when the store evaluates the whole filter
//! (the extra row tells whether the result goes on, so an exhausted result closes its cursor
//! in the same reply) and chunks of [`RESIDUAL_CHUNK`] rows when Rust re-checks a residual
//! filter; rows read past the end of a batch are dropped, not kept, and read again by the
//! next batch. Documents present throughout an iteration are returned exactly once, in
//! order, whatever is inserted, updated or deleted meanwhile (the position is a key, not an
//! offset); a document whose index key moves past the position may be seen again, as in
//! MongoDB.
//!
//! A projection of plain fields is copied from the stored bytes without decoding them; on a
//! store that projects inside its statements (`Store::projects_in_statement`: SQLite) and
//! with no residual filter, the store applies it to each row (`scan_from_projected`) and
//! the rows arrive projected.
//!
//! An aggregation pipeline whose stages after its leading read each look at one document at
//! a time (`$match`, `$project`, `$set`, `$unwind`, `$lookup`, …) streams the same way: each
//! row read goes through those stages ([`StagedOutput`]) on the compute pool, chunk by chunk.
//!
//! Plans that must see every document before the first one (a sort the store cannot
//! produce, a `$group`) do not come here: `find` sorts them and the cursor keeps the sorted
//! result.
//!
//! Not for: cursor ids, owners and timeouts (`cursors`), or planning (`query::planner`).

use bson::raw::RawDocumentBuf;
use bson::Document;

use super::capped::AWAIT_POLL_INTERVAL;
use super::find::encode_documents;
use super::read::decode_document;
use super::transaction::OpScope;
use super::OpError;
use crate::catalog::CollectionInfo;
use std::sync::Arc;

use crate::query::planner::{IndexCandidate, ReadPlan};
use crate::query::text::{TextSearch, TEXT_SCORE_FIELD};
use crate::query::{Collation, Filter, ForeignDocuments, Pipeline, Projection};
use crate::store::{CollectionRecord, PositionedRow, ScanPosition, ScanRequest, StoreError};

/// Rows read per store round trip when Rust re-checks a residual filter (small enough to
/// evaluate inline on the async thread).
pub const RESIDUAL_CHUNK: usize = 256;
/// Most rows read per round trip when the store evaluates the whole filter and the batch
/// has no document count (a `getMore` without `batchSize` fills up to the byte budget):
/// fewer when the documents seen so far say the byte budget ends sooner.
pub const EXACT_CHUNK: usize = 10_000;
/// Rows of the first round trip of a batch without a document count, before the cursor has
/// seen how large its documents are.
const FIRST_UNSIZED_CHUNK: usize = 128;

/// The rest of an aggregation pipeline whose stages each look at one document at a time,
/// and the collections its `$lookup`s read: what every selected row goes through.
pub struct StagedOutput {
    pub pipeline: Pipeline,
    pub foreign: Arc<ForeignDocuments>,
}

/// Per row of a chunk: None when no stages run, else the row's documents after them (None
/// for a row the residual filter rejected).
type StagedRows = Option<Vec<Option<Vec<RawDocumentBuf>>>>;

/// How much one batch may hold: documents and bytes (MongoDB's reply budget).
#[derive(Clone, Copy, Debug)]
pub struct BatchLimit {
    pub documents: usize,
    pub bytes: usize,
}

/// A streaming read: the plan, where it is, and how much of skip and limit is left.
pub struct ReadCursor {
    record: CollectionRecord,
    /// Filter and order the store evaluates; skip and limit are the cursor's own.
    scan: ScanRequest,
    /// The filter Rust re-checks when the store's is inexact.
    residual: Option<Filter>,
    /// The collation the residual filter is judged under.
    collation: Collation,
    projection: Option<Projection>,
    /// Whether the projection copies plain fields from the stored bytes
    /// (`Projection::applies_raw`: no positional form, no score).
    raw_projection: bool,
    /// Whether the store may apply the projection inside its statement: a raw projection of
    /// a read with no residual filter, whose rows are the documents.
    store_may_project: bool,
    /// The projection's specification the store applies (`Projection::store_spec`), set at
    /// the first batch when the store projects inside its statements
    /// (`Store::projects_in_statement`).
    /// When set, the rows the store hands over are projected already.
    store_projection: Option<bson::Document>,
    /// The whole filter, for a positional projection (`a.$`).
    positional_filter: Option<Filter>,
    /// The `$text` search whose score each match carries into the projection (removed
    /// after it), when the projection shows the score.
    scored: Option<Arc<TextSearch>>,
    /// The per-document stages of an aggregate, which every selected row goes through.
    stages: Option<Arc<StagedOutput>>,
    /// Whether the score stays on what the stages output (see [`ReadCursor::scoring_stages`]).
    scores_kept: bool,
    /// The last row read, which the next batch resumes after.
    position: Option<ScanPosition>,
    /// Matching documents still to skip.
    skip: u64,
    /// Documents still to return under the limit (None: no limit).
    remaining: Option<u64>,
    exhausted: bool,
    /// Rows read and their bytes, to size chunks by the byte budget.
    rows_read: usize,
    bytes_read: usize,
    /// Whether a batch has been read: before it, a collection that is gone (dropped or
    /// renamed by another instance after this one planned from its cached catalog) is an
    /// empty result, as a find on a missing collection is; after it, QueryPlanKilled.
    started: bool,
    /// A tailable cursor on a capped collection (`tailable`): it stays open at the end of
    /// the data and later batches return what was inserted since.
    tail: Option<Tail>,
}

/// How a tailable cursor behaves at the end of the data.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tail {
    /// `awaitData`: a `getMore` that finds nothing waits (up to `maxAwaitTimeMS`) for an
    /// insert instead of answering an empty batch at once.
    pub await_data: bool,
}

impl ReadCursor {
    /// Whether `plan` can stream: the store produces its order (nothing is sorted in Rust).
    /// A `$text` read whose projection shows the score streams too: each match is scored as
    /// the residual filter keeps it.
    pub fn streams(plan: &ReadPlan) -> bool {
        plan.sort.is_none()
    }

    /// A cursor at the start of `plan` over `info` (a plan that [streams](Self::streams)).
    pub fn new(
        info: &CollectionInfo,
        plan: ReadPlan,
        projection: Option<Projection>,
        positional_filter: Option<Filter>,
    ) -> ReadCursor {
        // Scored only for a projection that shows the score (a sort by it is `sorted_read`'s).
        let scored = match &projection {
            Some(projection) if projection.uses_text_score() => {
                super::read::text_scored(&plan).map(|search| Arc::new(search.clone()))
            }
            _ => None,
        };
        let ReadPlan {
            mut scan,
            residual,
            skip,
            limit,
            collation,
            ..
        } = plan;
        // Exact plans carry skip and limit in the scan; residual ones in Rust. The cursor
        // counts both itself (the first batch still pushes an exact plan's skip as OFFSET).
        let (skip, remaining) = if residual.is_none() {
            (scan.skip, scan.limit)
        } else {
            (skip, limit)
        };
        scan.skip = 0;
        scan.limit = None;
        let raw_projection = positional_filter.is_none()
            && scored.is_none()
            && projection.as_ref().is_some_and(Projection::applies_raw);
        let store_may_project = raw_projection && residual.is_none();
        ReadCursor {
            record: info.record.clone(),
            scan,
            residual,
            collation,
            projection,
            raw_projection,
            store_may_project,
            store_projection: None,
            positional_filter,
            scored,
            stages: None,
            scores_kept: false,
            position: None,
            skip,
            remaining,
            exhausted: remaining == Some(0),
            rows_read: 0,
            bytes_read: 0,
            started: false,
            tail: None,
        }
    }

    /// Makes the cursor tailable (a natural-order scan of a capped collection): the end of
    /// the data does not exhaust it.
    pub fn tailing(mut self, tail: Tail) -> ReadCursor {
        self.tail = Some(tail);
        self
    }

    /// How the cursor tails, if it is tailable.
    pub fn tail(&self) -> Option<Tail> {
        self.tail
    }

    /// Closes the cursor (a tailable cursor whose first batch found nothing is dead, as in
    /// MongoDB: it has no position to resume from).
    pub fn close(&mut self) {
        self.exhausted = true;
    }

    /// Sends every selected row through `stages` (the rest of an aggregate) instead of
    /// answering it as stored.
    pub fn with_stages(mut self, stages: StagedOutput) -> ReadCursor {
        self.store_may_project = false;
        self.stages = Some(Arc::new(stages));
        self
    }

    /// Gives each selected row its `$text` score (`search`, a `$text` read's) before the
    /// stages see it, for their `{$meta: "textScore"}`; removed from what they output unless
    /// `kept` (the output feeds a `$group` that may total the scores). The residual filter,
    /// which a `$text` plan always has, scores each match it keeps.
    pub fn scoring_stages(mut self, search: Option<Arc<TextSearch>>, kept: bool) -> ReadCursor {
        if self.stages.is_some() && self.residual.is_some() {
            self.scored = search;
            self.scores_kept = kept;
        }
        self
    }

    /// Whether the rows of a chunk may yield no document each (a residual filter or
    /// stages decide), so a chunk is read without a document count.
    fn rows_may_vanish(&self) -> bool {
        self.residual.is_some() || self.stages.is_some()
    }

    /// True once every document has been returned.
    pub fn is_exhausted(&self) -> bool {
        self.exhausted
    }

    /// Whether a batch that stopped short of the end proves more documents follow: true
    /// when the store evaluates the whole filter (the batch read one row more than it
    /// returned); with a residual filter the rows after it may all fail it.
    pub fn proves_more(&self) -> bool {
        !self.exhausted && !self.rows_may_vanish()
    }

    /// Rows the store has handed over so far (explain's `totalDocsExamined`).
    pub fn rows_read(&self) -> usize {
        self.rows_read
    }

    /// Where the cursor is: the position of the last row it read.
    pub fn position(&self) -> Option<&ScanPosition> {
        self.position.as_ref()
    }

    /// Continues strictly after `position` (where an earlier read of the same request
    /// ended, e.g. a REST page's `after`) instead of from the start; the skip is spent.
    /// BadValue when the position is not of this scan's order.
    pub fn resume_after(&mut self, position: ScanPosition) -> Result<(), OpError> {
        let fits = match &position {
            ScanPosition::IndexEntry { .. } => self.scan.order_index.is_some(),
            ScanPosition::Key(_) => self.scan.order_index.is_none() && self.scan.order.is_some(),
            ScanPosition::Natural(_) => {
                self.scan.order_index.is_none() && self.scan.order.is_none()
            }
        };
        if !fits {
            return Err(OpError::BadValue(
                "the resume position does not belong to this query's order".into(),
            ));
        }
        self.position = Some(position);
        self.skip = 0;
        Ok(())
    }

    /// The next batch: up to `limit` documents from where the cursor is. The collection
    /// (and the index the scan walks) must still be the one the cursor was opened on.
    pub async fn next_batch(
        &mut self,
        scope: &mut OpScope<'_>,
        limit: BatchLimit,
    ) -> Result<Vec<RawDocumentBuf>, OpError> {
        let mut batch = Vec::new();
        if self.exhausted {
            return Ok(batch);
        }
        let first = !std::mem::replace(&mut self.started, true);
        if !self.check_still_valid(scope, first).await? {
            self.exhausted = true;
            return Ok(batch);
        }
        if first && self.store_may_project && scope.state.store.projects_in_statement() {
            self.store_projection = self.projection.as_ref().and_then(Projection::store_spec);
        }
        let mut session = scope.reader().await?;
        if self.tail.is_some() {
            self.check_position_kept(session.as_mut()).await?;
        }
        let mut bytes = 0usize;
        while batch.len() < limit.documents && !self.exhausted {
            let want = limit.documents - batch.len();
            let (request, chunk) = self.next_request(want, limit.bytes.saturating_sub(bytes));
            let rows = match &self.store_projection {
                Some(spec) => {
                    session
                        .as_mut()
                        .scan_from_projected(&self.record, &request, self.position.as_ref(), spec)
                        .await
                }
                None => {
                    session
                        .as_mut()
                        .scan_from(&self.record, &request, self.position.as_ref())
                        .await
                }
            }
            .map_err(|error| self.read_failed(error, first))?;
            self.rows_read += rows.len();
            self.bytes_read += rows.iter().map(|row| row.document.len()).sum::<usize>();
            let short = rows.len() < chunk;
            let (rows, verdicts) = self.residual_verdicts(rows).await?;
            let (rows, verdicts, staged) = self.staged_outputs(rows, verdicts).await?;
            let consumed_all =
                self.take_rows(rows, verdicts, staged, &mut batch, &mut bytes, limit)?;
            if short && consumed_all {
                if self.tail.is_some() {
                    // The end of the data for now: a tailable cursor waits there.
                    break;
                }
                self.exhausted = true;
            }
            if !consumed_all {
                break;
            }
            crate::interrupt::check_now().map_err(StoreError::from)?;
        }
        Ok(batch)
    }

    /// The next batch of a tailable `awaitData` cursor: when nothing new is there, waits up
    /// to `max_await` for an insert into its collection — woken at once by this process's
    /// inserts (`CappedInserts`), and looking again every `AWAIT_POLL_INTERVAL` for another
    /// process's — and answers an empty batch when none came.
    pub async fn next_batch_awaiting(
        &mut self,
        scope: &mut OpScope<'_>,
        limit: BatchLimit,
        max_await: std::time::Duration,
    ) -> Result<Vec<RawDocumentBuf>, OpError> {
        let deadline = tokio::time::Instant::now() + max_await;
        // Subscribed before reading, so an insert between the read and the wait wakes it.
        let mut inserts = scope.state.capped_inserts.subscribe(&self.record.uuid);
        loop {
            let batch = self.next_batch(scope, limit).await?;
            let now = tokio::time::Instant::now();
            if !batch.is_empty() || self.exhausted || now >= deadline {
                return Ok(batch);
            }
            let wake = deadline.min(now + AWAIT_POLL_INTERVAL);
            if let Ok(Err(_)) = tokio::time::timeout_at(wake, inserts.changed()).await {
                // The collection's signal is gone (dropped): only the poll is left.
                tokio::time::sleep_until(wake).await;
            }
        }
    }

    /// The scan for the next chunk of a batch that still wants `want` documents and
    /// `bytes_left` bytes, and how many rows it reads.
    fn next_request(&mut self, want: usize, bytes_left: usize) -> (ScanRequest, usize) {
        let mut request = self.scan.clone();
        let remaining = self
            .remaining
            .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let wanted = want.min(remaining);
        let fitting = match self.bytes_read.checked_div(self.rows_read) {
            Some(average) => (bytes_left / average.max(1)).saturating_add(1),
            None => FIRST_UNSIZED_CHUNK,
        };
        let chunk = if self.stages.is_some() {
            // Stages (and a residual filter) may drop or multiply rows: read what the batch
            // would take if each row gave one document (within the byte budget), never less
            // than a residual chunk, so a large batch is a few round trips rather than one
            // per 256 rows. The rows are judged on the compute pool.
            wanted.min(fitting).clamp(RESIDUAL_CHUNK, EXACT_CHUNK)
        } else if self.residual.is_some() {
            RESIDUAL_CHUNK
        } else if wanted == remaining {
            // Every row is a document: read what the batch takes and one more to learn
            // whether the result ends here — unless the limit ends it anyway.
            wanted.min(fitting.max(1)).min(EXACT_CHUNK)
        } else {
            wanted.saturating_add(1).min(fitting).min(EXACT_CHUNK)
        };
        request.limit = Some(chunk as u64);
        if self.residual.is_none() && self.skip > 0 {
            request.skip = self.skip;
            self.skip = 0;
        }
        (request, chunk)
    }

    /// The residual filter's verdict on each row — the decoded document when it matches —
    /// or None when there is no residual filter. Evaluated inline, or on the compute pool
    /// when the filter evaluates expressions (`$expr`, `$where`-like work of any cost) or the
    /// cursor runs stages (its chunks are large).
    async fn residual_verdicts(
        &self,
        rows: Vec<PositionedRow>,
    ) -> Result<(Vec<PositionedRow>, Option<Vec<Option<Document>>>), OpError> {
        let Some(filter) = &self.residual else {
            return Ok((rows, None));
        };
        let scored = self.scored.clone();
        let judge = move |rows: &[PositionedRow], filter: &Filter, collation: &Collation| {
            collation.install(|| {
                rows.iter()
                    .map(|row| {
                        crate::interrupt::check()?;
                        let mut document = decode_document(&row.document)?;
                        if !filter.matches(&document) {
                            return Ok(None);
                        }
                        if let Some(search) = &scored {
                            let score = search.score(&document);
                            document.insert(TEXT_SCORE_FIELD, score);
                        }
                        Ok(Some(document))
                    })
                    .collect::<Result<Vec<_>, StoreError>>()
            })
        };
        if filter.evaluates_expressions() || self.stages.is_some() || self.scored.is_some() {
            let filter = filter.clone();
            let collation = self.collation.clone();
            let (rows, verdicts) =
                crate::compute::run(move || judge(&rows, &filter, &collation).map(|v| (rows, v)))
                    .await?;
            Ok((rows, Some(verdicts)))
        } else {
            let verdicts = crate::compute::run_inline(|| judge(&rows, filter, &self.collation))?;
            Ok((rows, Some(verdicts)))
        }
    }

    /// Each row of a chunk through the cursor's stages, on the compute pool (None when it
    /// has none); the rows and verdicts are handed back.
    async fn staged_outputs(
        &self,
        rows: Vec<PositionedRow>,
        verdicts: Option<Vec<Option<Document>>>,
    ) -> Result<
        (
            Vec<PositionedRow>,
            Option<Vec<Option<Document>>>,
            StagedRows,
        ),
        OpError,
    > {
        let Some(stages) = &self.stages else {
            return Ok((rows, verdicts, None));
        };
        if stages.pipeline.stages.is_empty() && self.scored.is_none() {
            // No stages (the rows feed a `$group` straight away): each selected row is its
            // stored bytes, neither decoded nor re-encoded here.
            let outputs = passed_through(&rows, verdicts.as_deref())?;
            return Ok((rows, verdicts, Some(outputs)));
        }
        let stages = Arc::clone(stages);
        let strip_score = self.scored.is_some() && !self.scores_kept;
        // The stages compare under the read's collation, as its filter does.
        let collation = self.collation.clone();
        crate::compute::run(move || {
            collation.install(|| {
                let mut outputs = Vec::with_capacity(rows.len());
                for (index, row) in rows.iter().enumerate() {
                    let document = match verdicts.as_ref().map(|v| v.get(index).cloned().flatten())
                    {
                        Some(None) => {
                            outputs.push(None);
                            continue;
                        }
                        Some(Some(document)) => document,
                        None => decode_document(&row.document)?,
                    };
                    let mut out = stages.pipeline.run_with(vec![document], &stages.foreign)?;
                    if strip_score {
                        out.iter_mut().for_each(super::read::strip_text_score);
                    }
                    outputs.push(Some(encode_documents(&out)?));
                }
                Ok::<_, OpError>((rows, verdicts, Some(outputs)))
            })
        })
        .await
    }

    /// Takes documents from `rows` into `batch` until it is full; returns whether every
    /// row was consumed (the rows after a full batch are left for the next one).
    fn take_rows(
        &mut self,
        rows: Vec<PositionedRow>,
        verdicts: Option<Vec<Option<Document>>>,
        staged: StagedRows,
        batch: &mut Vec<RawDocumentBuf>,
        bytes: &mut usize,
        limit: BatchLimit,
    ) -> Result<bool, OpError> {
        let mut verdicts = verdicts.map(Vec::into_iter);
        let mut staged = staged.map(Vec::into_iter);
        for row in rows {
            let verdict = verdicts.as_mut().and_then(Iterator::next);
            let outputs = staged.as_mut().and_then(Iterator::next).flatten();
            if batch.len() >= limit.documents || self.exhausted {
                return Ok(false);
            }
            // What the row adds to the batch: its stored bytes, or what the stages made.
            let (adds, adds_bytes) = match &outputs {
                Some(documents) => (
                    documents.len(),
                    documents.iter().map(|d| d.as_bytes().len()).sum(),
                ),
                None => (1, row.document.len()),
            };
            let overflows =
                batch.len() + adds > limit.documents || *bytes + adds_bytes > limit.bytes;
            if !batch.is_empty() && overflows {
                return Ok(false);
            }
            let PositionedRow { position, document } = row;
            self.position = Some(position);
            let decoded = match verdict {
                None => None,
                Some(None) => continue,
                Some(Some(decoded)) => Some(decoded),
            };
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            match outputs {
                Some(documents) => {
                    *bytes += adds_bytes;
                    batch.extend(documents);
                }
                None => {
                    let document = self.output(document, decoded)?;
                    *bytes += document.as_bytes().len();
                    batch.push(document);
                }
            }
            if let Some(remaining) = &mut self.remaining {
                *remaining -= 1;
                if *remaining == 0 {
                    self.exhausted = true;
                }
            }
        }
        Ok(true)
    }

    /// A selected document as the client gets it: its stored bytes, or projected.
    fn output(&self, bytes: Vec<u8>, decoded: Option<Document>) -> Result<RawDocumentBuf, OpError> {
        let projection = self
            .projection
            .as_ref()
            .filter(|_| self.store_projection.is_none());
        let Some(projection) = projection else {
            return RawDocumentBuf::from_bytes(bytes)
                .map_err(|e| StoreError::Corrupt(e.to_string()).into());
        };
        // Plain fields are copied from the stored bytes, nothing decoded.
        if decoded.is_none() && self.raw_projection {
            let stored = bson::RawDocument::from_bytes(&bytes)
                .map_err(|e| StoreError::Corrupt(e.to_string()))?;
            return Ok(projection.apply_raw(stored)?);
        }
        let document = match decoded {
            Some(document) => document,
            None => decode_document(&bytes)?,
        };
        // `$elemMatch` and positional projections compare under the read's collation.
        let mut projected = self.collation.install(|| match &self.positional_filter {
            Some(filter) => projection.apply_with_query(&document, filter),
            None => projection.apply(&document),
        })?;
        if self.scored.is_some() {
            super::read::strip_text_score(&mut projected);
        }
        encode_documents(&[projected])?
            .pop()
            .ok_or_else(|| OpError::BadValue("a projection produced no document".into()))
    }

    /// 136 CappedPositionLost when the document a tailable cursor stands on is gone from
    /// its capped collection (removed to make room, or deleted): where to resume is lost.
    async fn check_position_kept(
        &self,
        session: &mut (dyn crate::store::StoreSession + 'static),
    ) -> Result<(), OpError> {
        let Some(ScanPosition::Natural(sequence)) = self.position else {
            return Ok(());
        };
        let probe = ScanRequest {
            limit: Some(1),
            ..ScanRequest::all()
        };
        let before = ScanPosition::Natural(sequence.saturating_sub(1));
        let next = session
            .scan_from(&self.record, &probe, Some(&before))
            .await
            .map_err(|error| self.read_failed(error, false))?;
        if next.first().map(|row| &row.position) == self.position.as_ref() {
            return Ok(());
        }
        Err(OpError::CappedPositionLost(format!(
            "CollectionScan died due to position in capped collection being deleted. Last seen record id: RecordId({sequence})"
        )))
    }

    /// What a chunk's failed read answers. `StaleCatalog` says the cursor's table is gone:
    /// its collection was dropped, renamed or replaced (`$out`, `convertToCapped`, a rename
    /// with `dropTarget`) since the cursor planned, and the store never gives a table's name
    /// to another incarnation, so no chunk ever reads the successor. In the `first` batch —
    /// the command that opens the cursor, which has answered nothing yet — it is
    /// `CollectionReplacedBeforeRead`: the command runs once more with a fresh catalog and
    /// reads the collection as it is now. Later (a `getMore`, or the next input batch of a
    /// grouped aggregate) the cursor ends with QueryPlanKilled, as MongoDB's does.
    fn read_failed(&self, error: StoreError, first: bool) -> OpError {
        let namespace = format!("{}.{}", self.record.db, self.record.name);
        match error {
            StoreError::StaleCatalog(_) if first => OpError::CollectionReplacedBeforeRead(format!(
                "collection {namespace} was dropped or replaced while it was read"
            )),
            StoreError::StaleCatalog(_) => OpError::QueryPlanKilled(format!(
                "collection dropped or replaced while the cursor read it: {namespace}"
            )),
            other => other.into(),
        }
    }

    /// QueryPlanKilled when the collection was dropped or recreated, or the index the scan
    /// walks was dropped or now holds several keys for a document, since the cursor opened.
    /// Answers false (nothing to read) when the `first` batch finds the collection gone.
    async fn check_still_valid(
        &self,
        scope: &mut OpScope<'_>,
        first: bool,
    ) -> Result<bool, OpError> {
        let info = scope
            .collection_info(&self.record.db, &self.record.name)
            .await?;
        let namespace = format!("{}.{}", self.record.db, self.record.name);
        if info.is_none() && first {
            return Ok(false);
        }
        let Some(info) = info.filter(|info| info.record.uuid == self.record.uuid) else {
            // Replaced between planning and the first read: nothing has been answered yet,
            // so the command reads the collection as it is now (as `read_failed` does).
            if first {
                return Err(OpError::CollectionReplacedBeforeRead(format!(
                    "collection {namespace} was dropped or replaced before it was read"
                )));
            }
            return Err(OpError::QueryPlanKilled(format!(
                "collection dropped between getMore calls: {namespace}"
            )));
        };
        if let Some(walked) = &self.scan.order_index {
            let index = info
                .indexes
                .iter()
                .find(|index| index.entries_table() == walked.as_str());
            match index {
                None => {
                    return Err(OpError::QueryPlanKilled(format!(
                        "index dropped between getMore calls on {namespace}"
                    )))
                }
                Some(index) if index.is_multikey() => {
                    return Err(OpError::QueryPlanKilled(format!(
                        "the index the cursor walks on {namespace} became multikey (a document now has several keys in it)"
                    )))
                }
                Some(_) => {}
            }
        }
        Ok(true)
    }
}

/// The rows of a chunk through an empty stage list: each row the residual filter kept (all
/// of them without one) as its stored bytes, unchanged.
fn passed_through(
    rows: &[PositionedRow],
    verdicts: Option<&[Option<Document>]>,
) -> Result<Vec<Option<Vec<RawDocumentBuf>>>, OpError> {
    rows.iter()
        .enumerate()
        .map(|(index, row)| {
            if verdicts.is_some_and(|v| v.get(index).is_none_or(Option::is_none)) {
                return Ok(None);
            }
            let bytes = RawDocumentBuf::from_bytes(row.document.clone())
                .map_err(|e| StoreError::Corrupt(e.to_string()))?;
            Ok(Some(vec![bytes]))
        })
        .collect()
}
