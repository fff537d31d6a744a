//! An aggregate whose stages after its streaming leading read are per-document stages and
//! blocking ones — `$sort` (with the `$skip`s and `$limit`s right after it), `$group`,
//! `$bucket`, `$setWindowFields`, `$count`, `$skip`/`$limit` after a per-document stage —
//! in any order (`Pipeline::chain`), run without holding the collection. The read and the
//! stages before the first blocking stage stream chunk by chunk into it: an external sort,
//! a grouping, buckets, a window's input, a count or a slice, each holding at most the
//! command's limit and writing temporary files past it (292 with `allowDiskUse: false`); a
//! slice whose `$limit` has its documents stops the read. Each later blocking stage is fed
//! the same way from the one before, through the per-document stages between them; the
//! cursor drains the last one through the stages after it, batch by batch
//! ([`SortedResult`]). Every input is read when the cursor opens, so a snapshot read is
//! done with its snapshot then.
//!
//! Not for: planning the leading read (`aggregate`), the external sort (`query::spill`), or
//! a window's partitions (`query::window_stream`).

use std::sync::Arc;

use bson::raw::RawDocumentBuf;
use bson::{Bson, Document};

use super::cursors::ResultSource;
use super::read::{decode_document, INLINE_ROWS};
use super::read_cursor::{BatchLimit, ReadCursor, StagedOutput};
use super::sorted_read::{evaluate, feed_rows, Ordered, SortedResult, SortedShape};
use super::transaction::OpScope;
use super::OpError;
use crate::catalog::CollectionInfo;
use crate::query::planner::ReadPlan;
use crate::query::spill::ExternalSort;
use crate::query::window_stream::WindowInput;
use crate::query::{BucketGrouping, ChainStep, Collation, ForeignDocuments, Grouping, Pipeline};

/// A blocking stage being fed.
enum Sink {
    /// A sort, and how many of its first documents to drop.
    Sort {
        sort: ExternalSort,
        skip: u64,
    },
    Group(Box<Grouping>),
    Bucket(Box<BucketGrouping>),
    Window(WindowInput),
    /// A `$count`: its field and the documents so far.
    Count {
        field: String,
        seen: i64,
    },
    /// A `$skip`/`$limit`: documents still to drop, the kept ones in arrival order (a spool,
    /// through temporary files past the limit), how many were kept, and how many more may be.
    Slice {
        skip: u64,
        kept: ExternalSort,
        count: i64,
        room: Option<u64>,
    },
}

impl Sink {
    /// The sink of `step`, under the budget of the command evaluating on this thread.
    fn new(step: ChainStep) -> Sink {
        match step {
            ChainStep::Sort { spec, skip, limit } => Sink::Sort {
                sort: ExternalSort::for_command(spec, Collation::simple())
                    .keeping_slice(skip, limit),
                skip,
            },
            ChainStep::Group(grouping) => Sink::Group(grouping),
            ChainStep::Bucket(buckets) => Sink::Bucket(buckets),
            ChainStep::Window(stage) => Sink::Window(WindowInput::new(Arc::new(*stage))),
            ChainStep::Count(field) => Sink::Count { field, seen: 0 },
            ChainStep::Slice { skip, limit } => Sink::Slice {
                skip,
                kept: ExternalSort::spool_for_command(),
                count: 0,
                room: limit,
            },
        }
    }

    /// Whether the stage takes no more documents (a `$limit` that has them all): its input
    /// need not be read further.
    fn is_full(&self) -> bool {
        matches!(self, Sink::Slice { room: Some(0), .. })
    }

    /// Keeps `bytes` in a slice, or drops them while it skips.
    fn keep(&mut self, bytes: Vec<u8>) -> Result<(), OpError> {
        if let Sink::Slice {
            skip,
            kept,
            count,
            room,
        } = self
        {
            if *skip > 0 {
                *skip -= 1;
            } else if *room != Some(0) {
                kept.push(vec![Bson::Int64(*count)], bytes)?;
                *count += 1;
                *room = room.map(|r| r - 1);
            }
        }
        Ok(())
    }

    /// Adds a row of the store's read, as the stages before the blocking one left it.
    fn push_row(&mut self, row: RawDocumentBuf) -> Result<(), OpError> {
        match self {
            Sink::Sort { sort, .. } => {
                // Only the sorted fields are decoded.
                let key = super::read::raw_sort_key(&row, sort.spec())?;
                sort.push(key, row.into_bytes())?;
            }
            Sink::Group(grouping) => {
                if !grouping.feed_raw(&row)? {
                    grouping.feed(&decode_document(row.as_bytes())?)?;
                }
            }
            Sink::Window(input) => {
                let document = decode_document(row.as_bytes())?;
                input.push(&document, row.into_bytes())?;
            }
            Sink::Bucket(buckets) => buckets.feed(&decode_document(row.as_bytes())?)?,
            Sink::Count { seen, .. } => *seen += 1,
            Sink::Slice { .. } => self.keep(row.into_bytes())?,
        }
        Ok(())
    }

    /// Adds a document the stages before the blocking one made.
    fn push(&mut self, document: Document) -> Result<(), OpError> {
        match self {
            Sink::Sort { sort, .. } => sort.push_document(&document)?,
            Sink::Group(grouping) => grouping.feed(&document)?,
            Sink::Window(input) => input.push(&document, encode(&document)?)?,
            Sink::Bucket(buckets) => buckets.feed(&document)?,
            Sink::Count { seen, .. } => *seen += 1,
            Sink::Slice { .. } => self.keep(encode(&document)?)?,
        }
        Ok(())
    }

    /// What the stage hands on, and how many of its first documents to drop.
    fn finish(self) -> Result<(Ordered, u64), OpError> {
        Ok(match self {
            Sink::Sort { sort, skip } => (Ordered::Sorted(sort.finish()?), skip),
            Sink::Group(grouping) => {
                let groups = grouping.finish()?;
                if crate::query::memory::limited() {
                    let held = crate::query::memory::documents_size(&groups);
                    crate::query::memory::check_group(held)?;
                }
                (Ordered::Documents(groups.into_iter()), 0)
            }
            Sink::Window(input) => (Ordered::Windowed(Box::new(input.finish()?)), 0),
            Sink::Bucket(buckets) => (Ordered::Documents(buckets.finish()?.into_iter()), 0),
            Sink::Slice { kept, .. } => (Ordered::Sorted(kept.finish()?), 0),
            Sink::Count { field, seen } => {
                // As the `$count` stage answers: nothing for no document, an int32 when it fits.
                let counted = (seen > 0).then(|| {
                    let value = i32::try_from(seen).map_or(Bson::Int64(seen), Bson::Int32);
                    bson::doc! {field: value}
                });
                (Ordered::Documents(Vec::from_iter(counted).into_iter()), 0)
            }
        })
    }
}

fn encode(document: &Document) -> Result<Vec<u8>, OpError> {
    document
        .to_vec()
        .map_err(|error| OpError::BadValue(format!("cannot encode a document: {error}")))
}

/// Sends `output`, less its first `skip` documents, through `stages` into `sink`.
fn drain_into(
    mut output: Ordered,
    mut skip: u64,
    stages: &Pipeline,
    foreign: &ForeignDocuments,
    sink: &mut Sink,
) -> Result<(), OpError> {
    while !sink.is_full() {
        let Some(row) = output.next_row()? else {
            break;
        };
        crate::interrupt::check()?;
        if skip > 0 {
            skip -= 1;
            continue;
        }
        for document in stages.run_with(vec![row.into_document()?], foreign)? {
            sink.push(document)?;
        }
    }
    Ok(())
}

/// Opens an aggregate over `info` whose stages after its streaming leading read (`plan`)
/// form a chain (`Pipeline::chain`): answers its first batch (bounded by `first`) and the
/// cursor source of the rest. None when `rest` is not a chain.
pub async fn open(
    catalog: &crate::catalog::Catalog,
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    plan: ReadPlan,
    rest: &Pipeline,
    first: BatchLimit,
) -> Result<Option<(Vec<RawDocumentBuf>, ResultSource)>, OpError> {
    let Some(chain) = rest.chain() else {
        return Ok(None);
    };
    let mut steps = chain.steps.into_iter();
    let Some((step, after)) = steps.next() else {
        return Ok(None);
    };
    super::index_usage::record(info, &plan);
    // Read once, shared by every segment.
    let foreign = {
        let mut session = scope.reader().await?;
        let db = &info.record.db;
        Arc::new(super::aggregate::read_foreign(catalog, session.as_mut(), db, rest).await?)
    };
    // A `$text` read: each match carries its score into the stages (removed as it leaves).
    let search = super::read::text_scored(&plan).map(|search| Arc::new(search.clone()));
    let scored = search.is_some();
    let mut input = ReadCursor::new(info, plan, None, None)
        .with_stages(StagedOutput {
            pipeline: chain.first,
            foreign: Arc::clone(&foreign),
        })
        .scoring_stages(search, true);
    // The stage's budget is the command's, read from its interrupt.
    let sink = crate::compute::run_inline(move || Ok::<_, OpError>(Sink::new(step)))?;
    let (sink, fed) = feed_rows(scope, &mut input, sink, Sink::push_row, Sink::is_full).await?;
    let later: Vec<(ChainStep, Pipeline)> = steps.collect();
    // Later blocking stages may make much of little: only a single one runs inline.
    let small = fed <= INLINE_ROWS && later.is_empty();
    let (output, skip, last, foreign) = evaluate(small, move || {
        let (mut output, mut skip) = sink.finish()?;
        let mut between = after;
        for (step, next) in later {
            let mut sink = Sink::new(step);
            drain_into(output, skip, &between, &foreign, &mut sink)?;
            (output, skip) = sink.finish()?;
            between = next;
        }
        Ok::<_, OpError>((output, skip, between, foreign))
    })
    .await?;
    let shape = SortedShape::Stages {
        pipeline: last,
        foreign,
    };
    let mut result = SortedResult::of_stages(output, skip, shape, scored, input.rows_read(), small);
    let batch = result.next_batch(first).await?;
    Ok(Some((batch, ResultSource::Sorted(Box::new(result)))))
}
