//! An aggregate whose stages after its streaming leading read are per-document stages and
//! blocking ones — `$sort` (with the `$skip`s and `$limit`s right after it), `$group`,
//! `$bucket`, `$bucketAuto`, `$setWindowFields`, `$count`, `$sample`, `$densify`,
//! `$unionWith`, `$facet`, `$skip`/`$limit` after a per-document stage — in any order
//! (`Pipeline::chain`), run without holding the collection. The read and the stages before
//! the first blocking stage stream chunk by chunk into it: an external sort, a grouping,
//! buckets, a window's input, a count, a random top-k sort, a densify's sort, a spool, a
//! facet's sub-chains or a slice, each holding at most the command's limit and writing
//! temporary files past it (292 with `allowDiskUse: false`, except a spool — a union's, a
//! slice's —, which writes them all the same, since MongoDB streams those stages); a slice
//! whose `$limit` has its documents stops the read. Each later blocking stage is fed the same way
//! from the one before, through the per-document stages between them; the cursor drains the
//! last one through the stages after it, batch by batch ([`SortedResult`]). A `$facet` feeds
//! each document to every sub-pipeline, each a chain of its own (each blocking stage in them
//! under the limit), and holds the document it builds (4031700 past the limit).
//! Per-document stages after a blocking one run over chunks of [`STAGE_CHUNK`] documents.
//! Every input is read when the cursor opens, so a snapshot read is done with its snapshot
//! then.
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
use crate::query::densify_stream::DensifyInput;
use crate::query::planner::ReadPlan;
use crate::query::spill::ExternalSort;
use crate::query::window_stream::WindowInput;
use crate::query::{
    BucketAutoInput, BucketGrouping, Chain, ChainStep, Collation, ForeignDocuments, Grouping,
    Pipeline, SortDirection, SortSpec,
};

/// How many documents go through per-document stages together after a blocking stage.
pub(super) const STAGE_CHUNK: usize = 64;

/// A blocking stage being fed.
enum Sink {
    /// A sort, and how many of its first documents to drop.
    Sort {
        sort: ExternalSort,
        skip: u64,
    },
    Group(Box<Grouping>),
    Bucket(Box<BucketGrouping>),
    BucketAuto(Box<BucketAutoInput>),
    Window(WindowInput),
    /// A `$sample`: a top-k sort by a random key.
    Sample(ExternalSort),
    Densify(Box<DensifyInput>),
    /// A `$facet`: each sub-pipeline fed every document, and the bytes its outputs hold.
    Facet {
        branches: Vec<FacetBranch>,
        foreign: Arc<ForeignDocuments>,
        held: usize,
    },
    /// A `$unionWith`: its input spooled as it comes, then the other collection's
    /// documents through its pipeline.
    UnionWith {
        spool: ExternalSort,
        collection: String,
        pipeline: Option<Pipeline>,
        foreign: Arc<ForeignDocuments>,
    },
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
    /// The sink of `step`, under the budget of the command evaluating on this thread and the
    /// collation installed on it; `foreign` holds the collections the pipeline reads besides
    /// its input.
    fn new(step: ChainStep, foreign: &Arc<ForeignDocuments>) -> Sink {
        match step {
            ChainStep::Sort { spec, skip, limit } => Sink::Sort {
                sort: ExternalSort::for_command(spec, Collation::installed())
                    .keeping_slice(skip, limit),
                skip,
            },
            ChainStep::Group(grouping) => Sink::Group(grouping),
            ChainStep::Bucket(buckets) => Sink::Bucket(buckets),
            ChainStep::BucketAuto(spec) => Sink::BucketAuto(Box::new(BucketAutoInput::new(*spec))),
            ChainStep::Sample(size) => {
                let by_random_key = SortSpec {
                    keys: vec![(String::from("random"), SortDirection::Ascending)],
                    natural: None,
                };
                let sort = ExternalSort::for_command(by_random_key, Collation::simple());
                Sink::Sample(sort.keeping_slice(0, Some(size)))
            }
            ChainStep::Densify(spec) => Sink::Densify(Box::new(DensifyInput::new(*spec))),
            ChainStep::Facet(chains) => Sink::Facet {
                branches: chains
                    .into_iter()
                    .map(|(name, chain)| FacetBranch::new(name, chain, foreign))
                    .collect(),
                foreign: Arc::clone(foreign),
                held: 0,
            },
            ChainStep::UnionWith {
                collection,
                pipeline,
            } => Sink::UnionWith {
                spool: ExternalSort::spool_for_command(),
                collection,
                pipeline,
                foreign: Arc::clone(foreign),
            },
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
        match self {
            Sink::Slice { room, .. } => *room == Some(0),
            Sink::Facet { branches, .. } => branches.iter().all(FacetBranch::is_full),
            _ => false,
        }
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
            Sink::BucketAuto(input) => {
                let document = decode_document(row.as_bytes())?;
                input.push(&document, row.into_bytes())?;
            }
            Sink::Densify(input) => {
                let document = decode_document(row.as_bytes())?;
                input.push(&document, row.into_bytes())?;
            }
            Sink::Sample(sort) => sort.push(vec![Bson::Int64(rand::random())], row.into_bytes())?,
            // A spool keeps equal keys in arrival order.
            Sink::UnionWith { spool, .. } => spool.push(vec![Bson::Null], row.into_bytes())?,
            Sink::Facet { .. } => self.push(decode_document(row.as_bytes())?)?,
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
            Sink::BucketAuto(input) => input.push(&document, encode(&document)?)?,
            Sink::Densify(input) => input.push(&document, encode(&document)?)?,
            Sink::Sample(sort) => {
                sort.push(vec![Bson::Int64(rand::random())], encode(&document)?)?
            }
            Sink::UnionWith { spool, .. } => spool.push(vec![Bson::Null], encode(&document)?)?,
            Sink::Facet {
                branches,
                foreign,
                held,
            } => {
                for branch in branches {
                    branch.push(&document, foreign, held)?;
                }
            }
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
            Sink::BucketAuto(input) => (Ordered::Documents(input.finish()?.into_iter()), 0),
            Sink::Sample(sort) => (Ordered::Sorted(sort.finish()?), 0),
            Sink::Densify(input) => (Ordered::Densified(Box::new(input.finish()?)), 0),
            Sink::Facet {
                branches,
                foreign,
                mut held,
            } => {
                let mut facets = Document::new();
                for branch in branches {
                    let name = branch.name.clone();
                    let outputs = branch.finish(&foreign, &mut held)?;
                    facets.insert(
                        name,
                        Bson::Array(outputs.into_iter().map(Bson::Document).collect()),
                    );
                }
                let size = crate::query::memory::document_size(&facets);
                crate::query::memory::check_facet_output(size)?;
                (Ordered::Documents(vec![facets].into_iter()), 0)
            }
            Sink::UnionWith {
                spool,
                collection,
                pipeline,
                foreign,
            } => {
                let others = match pipeline {
                    Some(pipeline) => {
                        let others = foreign.get(&collection).cloned().unwrap_or_default();
                        Ordered::Documents(pipeline.run_with(others, &foreign)?.into_iter())
                    }
                    // Handed out from the documents the command read, one copy at a time.
                    None => Ordered::Foreign {
                        foreign,
                        collection,
                        next: 0,
                    },
                };
                let input = Ordered::Sorted(spool.finish()?);
                (Ordered::Then(Box::new(input), Box::new(others)), 0)
            }
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

/// One sub-pipeline of a `$facet` being fed: its per-document stages before its first
/// blocking one, then that stage's sink and the rest of its chain — or, without a blocking
/// stage, the documents it outputs.
struct FacetBranch {
    name: String,
    first: Pipeline,
    /// Documents waiting to go through `first` together.
    pending: Vec<Document>,
    target: BranchTarget,
}

enum BranchTarget {
    /// The outputs of a sub-pipeline of per-document stages.
    Collect(Vec<Document>),
    /// The first blocking stage, the stages after it, and the later blocking stages.
    Feed {
        sink: Box<Sink>,
        after: Pipeline,
        later: Vec<(ChainStep, Pipeline)>,
    },
}

impl FacetBranch {
    fn new(name: String, chain: Chain, foreign: &Arc<ForeignDocuments>) -> FacetBranch {
        let mut steps = chain.steps.into_iter();
        let target = match steps.next() {
            None => BranchTarget::Collect(Vec::new()),
            Some((step, after)) => BranchTarget::Feed {
                sink: Box::new(Sink::new(step, foreign)),
                after,
                later: steps.collect(),
            },
        };
        FacetBranch {
            name,
            first: chain.first,
            pending: Vec::new(),
            target,
        }
    }

    /// Whether its first blocking stage takes no more documents.
    fn is_full(&self) -> bool {
        matches!(&self.target, BranchTarget::Feed { sink, .. } if sink.is_full())
    }

    /// Takes `document` for the stages before the first blocking one, which run over
    /// [`STAGE_CHUNK`] documents at a time; `held` counts the bytes of the `$facet`'s outputs.
    fn push(
        &mut self,
        document: &Document,
        foreign: &ForeignDocuments,
        held: &mut usize,
    ) -> Result<(), OpError> {
        if self.is_full() {
            return Ok(());
        }
        self.pending.push(document.clone());
        if self.pending.len() >= STAGE_CHUNK {
            self.flush(foreign, held)?;
        }
        Ok(())
    }

    /// Runs the waiting documents through the stages before the first blocking one.
    fn flush(&mut self, foreign: &ForeignDocuments, held: &mut usize) -> Result<(), OpError> {
        let waiting = std::mem::take(&mut self.pending);
        let outputs = self.first.run_with(waiting, foreign)?;
        match &mut self.target {
            BranchTarget::Collect(collected) => {
                for output in outputs {
                    hold_facet_output(held, &output)?;
                    collected.push(output);
                }
            }
            BranchTarget::Feed { sink, .. } => {
                for output in outputs {
                    sink.push(output)?;
                }
            }
        }
        Ok(())
    }

    /// The sub-pipeline's outputs.
    fn finish(
        mut self,
        foreign: &Arc<ForeignDocuments>,
        held: &mut usize,
    ) -> Result<Vec<Document>, OpError> {
        self.flush(foreign, held)?;
        let (sink, after, later) = match self.target {
            BranchTarget::Collect(collected) => return Ok(collected),
            BranchTarget::Feed { sink, after, later } => (sink, after, later),
        };
        let (output, skip, last) = finish_chain(*sink, after, later, foreign)?;
        let mut outputs = Vec::new();
        drain_through(output, skip, &last, foreign, |document| {
            hold_facet_output(held, &document)?;
            outputs.push(document);
            Ok(true)
        })?;
        Ok(outputs)
    }
}

/// Counts `output` into the bytes a `$facet` holds: 4031700 past its limit.
fn hold_facet_output(held: &mut usize, output: &Document) -> Result<(), OpError> {
    *held = held.saturating_add(crate::query::memory::document_size(output));
    Ok(crate::query::memory::check_facet_output(*held)?)
}

/// Finishes `sink`, then runs each of the `later` blocking stages fed from the one before
/// through the per-document stages between them (`after` first): the last one's output,
/// how many of its first documents to drop, and the stages after it.
fn finish_chain(
    sink: Sink,
    after: Pipeline,
    later: Vec<(ChainStep, Pipeline)>,
    foreign: &Arc<ForeignDocuments>,
) -> Result<(Ordered, u64, Pipeline), OpError> {
    let (mut output, mut skip) = sink.finish()?;
    let mut between = after;
    for (step, next) in later {
        let mut sink = Sink::new(step, foreign);
        drain_through(output, skip, &between, foreign, |document| {
            sink.push(document)?;
            Ok(!sink.is_full())
        })?;
        (output, skip) = sink.finish()?;
        between = next;
    }
    Ok((output, skip, between))
}

/// Sends `output`, less its first `skip` documents, through `stages` to `take`, in chunks
/// of [`STAGE_CHUNK`] documents (a `$graphLookup` prepares its search once a call), until
/// `take` answers false: it wants no more.
fn drain_through(
    mut output: Ordered,
    mut skip: u64,
    stages: &Pipeline,
    foreign: &ForeignDocuments,
    mut take: impl FnMut(Document) -> Result<bool, OpError>,
) -> Result<(), OpError> {
    let mut chunk = Vec::with_capacity(STAGE_CHUNK);
    loop {
        let row = output.next_row()?;
        let ended = row.is_none();
        if let Some(row) = row {
            crate::interrupt::check()?;
            if skip > 0 {
                skip -= 1;
                continue;
            }
            chunk.push(row.into_document()?);
            if chunk.len() < STAGE_CHUNK {
                continue;
            }
        }
        for document in stages.run_with(std::mem::take(&mut chunk), foreign)? {
            if !take(document)? {
                return Ok(());
            }
        }
        if ended {
            return Ok(());
        }
    }
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
    // Every stage compares under the read's collation: each step is made, fed and drained
    // with it installed (their sorts and groups take it when they are made).
    let collation = plan.collation.clone();
    // A `$text` read: each match carries its score into the stages (removed as it leaves).
    let search = super::read::text_scored(&plan).map(|search| Arc::new(search.clone()));
    let scored = search.is_some();
    // The stages before the first blocking one run on each row as it is fed, their outputs
    // pushed as documents (not encoded for the cursor and decoded again); a `$text` read's
    // stages run in the cursor, which gives each match its score.
    let (mut input, first_segment) = if scored || chain.first.stages.is_empty() {
        let staged = StagedOutput {
            pipeline: chain.first,
            foreign: Arc::clone(&foreign),
        };
        let input = ReadCursor::new(info, plan, None, None).with_stages(staged);
        (input.scoring_stages(search, true), None)
    } else {
        let input = ReadCursor::new(info, plan, None, None);
        (input, Some(Arc::new(chain.first)))
    };
    // The stage's budget is the command's, read from its interrupt.
    let sink = {
        let foreign = Arc::clone(&foreign);
        let collation = collation.clone();
        let new = move || Ok::<_, OpError>(collation.install(|| Sink::new(step, &foreign)));
        crate::compute::run_inline(new)?
    };
    // Stages of any cost run on the compute pool, however few the rows.
    let inline_rows = if first_segment.is_some() {
        0
    } else {
        INLINE_ROWS
    };
    let push = {
        let collation = collation.clone();
        let foreign = Arc::clone(&foreign);
        move |sink: &mut Sink, row: RawDocumentBuf| {
            collation.install(|| match &first_segment {
                None => sink.push_row(row),
                Some(stages) => {
                    let document = decode_document(row.as_bytes())?;
                    for output in stages.run_with(vec![document], &foreign)? {
                        sink.push(output)?;
                    }
                    Ok(())
                }
            })
        }
    };
    let fed_sink = (sink, inline_rows);
    let (sink, fed) = feed_rows(scope, &mut input, fed_sink, push, Sink::is_full).await?;
    let later: Vec<(ChainStep, Pipeline)> = steps.collect();
    // Later blocking stages may make much of little, and so may a union (the other
    // collection), a facet (its sub-pipelines) or a densify (what it generates): only a
    // single other one runs inline.
    let light = !matches!(
        sink,
        Sink::UnionWith { .. } | Sink::Facet { .. } | Sink::Densify(_)
    );
    let small = fed <= INLINE_ROWS && later.is_empty() && light;
    let finishing = collation.clone();
    let (output, skip, last, foreign) = evaluate(small, move || {
        let (output, skip, last) =
            finishing.install(|| finish_chain(sink, after, later, &foreign))?;
        Ok::<_, OpError>((output, skip, last, foreign))
    })
    .await?;
    let shape = SortedShape::Stages {
        pipeline: last,
        foreign,
    };
    let examined = (input.rows_read(), small);
    let mut result = SortedResult::of_stages(output, skip, shape, scored, examined, collation);
    let batch = result.next_batch(first).await?;
    Ok(Some((batch, ResultSource::Sorted(Box::new(result)))))
}
