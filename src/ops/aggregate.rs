//! Running an aggregation pipeline over a collection (or over the input a collection-less
//! `aggregate: 1` starts from): the leading `$match`, `$sort`, `$skip` and `$limit` planned
//! into the store's scan like a `find` (index ranges, index order, the limit in SQL), the
//! collections `$lookup` and `$unionWith` read, then the stages on the
//! compute pool (`crate::compute`). Shared by the wire's `aggregate` and REST's `pipeline`
//! handlers.
//!
//! Not for: parsing the command, cursors (the front ends), or the stages' semantics
//! (`query::aggregate`).

use std::sync::Arc;

use bson::{Bson, Document};

use bson::raw::RawDocumentBuf;

use super::aggregate_pushdown::{run_pushed, PushedStage};
use super::cursors::ResultSource;
use super::find::hinted_indexes;
use super::read;
use super::read_cursor::{BatchLimit, ReadCursor, StagedOutput};
use super::sessions::SessionRegistry;
use super::transaction::OpScope;
use super::OpError;
use crate::catalog::CollectionInfo;
use crate::catalog::NO_INDEXES;
use crate::query::collectionless::{self, SessionListing};
use crate::query::planner::ReadPlan;
use crate::query::Stage;
use crate::query::{Collation, Filter};
use crate::query::{ForeignDocuments, Pipeline};

/// Runs `pipeline` over `db.name` (a missing collection is empty): its leading read
/// (`Pipeline::leading_read`) is planned into the scan (with only the index `hint` names, if
/// any: one naming no index is MongoDB's BadValue), the collections `$lookup`/`$unionWith`
/// read are read whole, then the stages run in Rust under the command's collation
/// (`collation`, else the collection's default), `$lookup`'s matching included. Shared with
/// the REST front end's `pipeline` handlers.
pub async fn run_pipeline(
    catalog: &crate::catalog::Catalog,
    session: &mut dyn crate::store::StoreSession,
    db: &str,
    name: &str,
    pipeline: &Pipeline,
    hint: Option<&Bson>,
    collation: Option<Collation>,
) -> Result<Vec<Document>, OpError> {
    if let Some(output) = pipeline.output() {
        return Err(OpError::NotSupported(format!(
            "{} writes through the aggregate command only",
            output.name()
        )));
    }
    check_collection_input(pipeline)?;
    // The leading $match, $sort, $skip and $limit are one planned read, like a find's.
    let lead = pipeline.leading_read();
    let (input, collation) = match catalog.collection_info_in(session, db, name).await? {
        None => (Vec::new(), collation.unwrap_or_default()),
        Some(info) => {
            let indexes = hinted_indexes(&info.indexes, hint)?;
            let collation = info.collation_for(collation)?;
            let plan = plan_leading_read(pipeline, indexes, collation.clone())?;
            super::index_usage::record(&info, &plan);
            (
                read::execute(session, &info.record, &plan).await?,
                collation,
            )
        }
    };
    let foreign = read_foreign(catalog, session, db, pipeline).await?;
    // The stages run on the compute pool, never on the threads that answer other clients.
    let rest = pipeline.after(lead.stages);
    let mut output =
        crate::compute::run(move || collation.install(|| rest.run_with(input, &foreign))).await?;
    output.iter_mut().for_each(read::strip_text_score);
    Ok(output)
}

/// The plan of `pipeline`'s leading read over a collection with `indexes`. A `$text` (only
/// in the first `$match`: else MongoDB's 17313; with a text index: else 27) leaves each
/// document's score on it for `{$meta: "textScore"}` in the stages after it.
pub(super) fn plan_leading_read(
    pipeline: &Pipeline,
    indexes: &[crate::catalog::CollectionIndex],
    collation: Collation,
) -> Result<ReadPlan, OpError> {
    let later_text = pipeline.stages.iter().skip(1).any(
        |stage| matches!(stage, Stage::Match { filter, .. } if filter.text_search().is_some()),
    );
    if later_text {
        return Err(crate::query::QueryError::location(
            17313,
            "$match with $text is only allowed as the first pipeline stage",
        )
        .into());
    }
    let lead = pipeline.leading_read();
    read::check_text_index(&lead.filter, indexes)?;
    let text_score = lead.filter.text_search().is_some();
    let mut plan = ReadPlan::collated(
        lead.filter,
        lead.sort,
        lead.skip,
        lead.limit,
        indexes,
        collation,
    );
    plan.text_score = text_score;
    Ok(plan)
}

/// The collections `$lookup`, `$unionWith` and `$graphLookup` read, whole (a missing one is
/// empty), from the same database.
pub async fn read_foreign(
    catalog: &crate::catalog::Catalog,
    session: &mut dyn crate::store::StoreSession,
    db: &str,
    pipeline: &Pipeline,
) -> Result<ForeignDocuments, OpError> {
    let mut foreign = ForeignDocuments::new();
    for other in pipeline.foreign_collections() {
        let documents = match catalog.collection_info_in(session, db, &other).await? {
            None => Vec::new(),
            // A view is read through its pipeline, under its own collation.
            Some(info) if super::views::is_view(&info.record) => {
                super::views::read(catalog, session, &info.record, &[], None, None).await?
            }
            Some(info) => {
                let record = &info.record;
                let plan = ReadPlan::new(Filter::And(Vec::new()), None, 0, None, NO_INDEXES);
                read::execute(session, record, &plan).await?
            }
        };
        foreign.insert(other, documents);
    }
    Ok(foreign)
}

/// The plan of `pipeline`'s leading read and the stages after it, when that read can feed
/// its stages chunk by chunk: the store produces its order (the stages then compare under
/// the plan's collation). None otherwise.
fn streaming_read(
    info: &CollectionInfo,
    pipeline: &Pipeline,
    hint: Option<&Bson>,
    collation: Option<&Collation>,
) -> Result<Option<(ReadPlan, Pipeline)>, OpError> {
    let collation = info.collation_for(collation.cloned())?;
    let lead = pipeline.leading_read();
    let indexes = hinted_indexes(&info.indexes, hint)?;
    let plan = plan_leading_read(pipeline, indexes, collation)?;
    if !ReadCursor::streams(&plan) {
        return Ok(None);
    }
    Ok(Some((plan, pipeline.after(lead.stages))))
}

/// Opens an aggregate over `info` as a streaming cursor: a leading sort in Rust
/// (`sorted_read::open_pipeline`), a chain of blocking stages (`chained_read`), or — when
/// its leading read is one the store orders itself and every stage after it looks at one
/// document at a time — a cursor that holds a position and those stages, never the result;
/// each batch reads chunks of rows and runs them through the stages
/// (`ReadCursor::with_stages`) under the read's collation; a snapshot read outside a
/// transaction spools the rest now (`sorted_read::spool`). None when a stage is none of
/// those: [`run_pipeline`] runs it (a `$out`/`$merge` is not a stage here: the caller
/// streams the stages before it into its spool, `output_documents`).
pub async fn open_stream(
    catalog: &crate::catalog::Catalog,
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    pipeline: &Pipeline,
    hint: Option<&Bson>,
    collation: Option<&Collation>,
    first: BatchLimit,
) -> Result<Option<(Vec<RawDocumentBuf>, ResultSource)>, OpError> {
    // Boxed: the sort's future is large, and every command's future holds this one.
    let sorted =
        super::sorted_read::open_pipeline(catalog, scope, info, pipeline, hint, collation, first);
    if let Some(opened) = Box::pin(sorted).await? {
        return Ok(Some(opened));
    }
    let Some((plan, rest)) = streaming_read(info, pipeline, hint, collation)? else {
        return Ok(None);
    };
    if !rest.is_per_document() {
        let chained = super::chained_read::open(catalog, scope, info, plan, &rest, first);
        return Box::pin(chained).await;
    }
    super::index_usage::record(info, &plan);
    let foreign = {
        let mut session = scope.reader().await?;
        read_foreign(catalog, session.as_mut(), &info.record.db, &rest).await?
    };
    // A `$text` read: each match carries its score into the stages (`{$meta: "textScore"}`).
    let search = read::text_scored(&plan).map(|search| Arc::new(search.clone()));
    let mut cursor = match rest.stages.as_slice() {
        // A `$project` of plain fields alone after the read: the cursor projects the stored
        // bytes, as a `find`'s projection does, decoding nothing.
        [Stage::Project(projection)] if projection.applies_raw() => {
            ReadCursor::new(info, plan, Some(projection.clone()), None)
        }
        _ => ReadCursor::new(info, plan, None, None)
            .with_stages(StagedOutput {
                pipeline: rest,
                foreign: Arc::new(foreign),
            })
            .scoring_stages(search, false),
    };
    let batch = cursor.next_batch(scope, first).await?;
    let rest = super::sorted_read::spool(scope, ResultSource::Stream(Box::new(cursor)));
    Ok(Some((batch, Box::pin(rest).await?)))
}

/// How the stages of an aggregate over `info` after its leading read run, in the order the
/// `aggregate` command tries them ([`run_grouped`], then [`open_stream`] when the result
/// goes to a cursor, then [`run_pipeline`]), for `explain`'s `docgate.pipeline`:
/// `{mode: "sql"}` (the store runs the stage after the read in its statement),
/// `"grouped"` (the read streams into the first `$group`; the stages after it run over its
/// groups), `"chained"` with its `blockingStages` (each fed as a stream, bounded by the
/// memory limit), `"streamed"` (stages that look at one document at a time, batch by batch,
/// after the read or its sort), or `"held"` (over documents held between stages). `"sql"`
/// is the plan: a store that meets a value its statement cannot group exactly hands the
/// `$group` back, which then runs `"grouped"`.
pub fn execution(
    info: &CollectionInfo,
    pipeline: &Pipeline,
    hint: Option<&Bson>,
    collation: Option<&Collation>,
    group_in_statement: crate::store::GroupInStatement,
) -> Result<Document, OpError> {
    let mode = |mode: &str| Ok(bson::doc! {"mode": mode});
    let chained = |chain: crate::query::Chain| {
        let names: Vec<&str> = chain
            .steps
            .iter()
            .map(|(step, _)| step.stage_name())
            .collect();
        Ok(bson::doc! {"mode": "chained", "blockingStages": names})
    };
    // A `$out`/`$merge` writes what the rest makes, however that runs.
    let pipeline = &pipeline.inner(0);
    let streaming = streaming_read(info, pipeline, hint, collation)?;
    let grouping = pipeline
        .stages
        .iter()
        .any(|stage| matches!(stage, Stage::Group { .. } | Stage::Count(_)));
    if let Some((plan, rest)) = streaming.as_ref().filter(|_| grouping) {
        if PushedStage::of(plan, rest, group_in_statement).is_some() {
            return mode("sql");
        }
        if rest.split_at_group().is_some() {
            return mode("grouped");
        }
    }
    // A leading sort in Rust (`sorted_read::open_pipeline`).
    let lead = pipeline.leading_read();
    let rest = pipeline.after(lead.stages);
    let collation = info.collation_for(collation.cloned())?;
    if lead.sort.is_some() {
        let indexes = hinted_indexes(&info.indexes, hint)?;
        let plan = plan_leading_read(pipeline, indexes, collation)?;
        if super::sorted_read::spills(&plan) {
            if rest.is_per_document() {
                return mode("streamed");
            }
            let mut stages: Vec<Stage> = plan.sort.clone().map(Stage::Sort).into_iter().collect();
            stages.extend(rest.stages);
            if let Some(chain) = (Pipeline { stages }).chain() {
                return chained(chain);
            }
        }
    }
    match streaming {
        Some((_, rest)) if rest.is_per_document() => mode("streamed"),
        Some((_, rest)) => match rest.chain() {
            Some(chain) => chained(chain),
            None => mode("held"),
        },
        None => mode("held"),
    }
}

/// Rows a grouped aggregate reads (and feeds its `$group`) per round trip.
const GROUP_INPUT_CHUNK: usize = 10_000;

/// Runs an aggregate whose stage after its leading read the store runs in the read's
/// statement (a counted `$count`/`$group`, or a `$group` folded in SQLite's statement:
/// `aggregate_pushdown`), or whose first `$group` comes after per-document stages only
/// (`Pipeline::split_at_group`) with its input streaming: the leading read and those stages
/// go through a [`ReadCursor`] chunk by chunk, each chunk feeds the `$group` on the compute
/// pool, and only the groups are held — not the collection. The stages after the `$group`
/// then run over the groups; the groups compare under the read's collation (under a
/// non-simple one, no `$group` goes into the store's statement). None when the pipeline has
/// no such `$group` or its read is sorted in Rust: [`run_pipeline`] runs it.
pub async fn run_grouped(
    catalog: &crate::catalog::Catalog,
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    pipeline: &Pipeline,
    hint: Option<&Bson>,
    collation: Option<&Collation>,
) -> Result<Option<Vec<Document>>, OpError> {
    if !pipeline
        .stages
        .iter()
        .any(|stage| matches!(stage, Stage::Group { .. } | Stage::Count(_)))
    {
        return Ok(None);
    }
    let Some((plan, rest)) = streaming_read(info, pipeline, hint, collation)? else {
        return Ok(None);
    };
    let group_in = scope.state.store.group_in_statement();
    if PushedStage::of(&plan, &rest, group_in).is_some() {
        let foreign = {
            let mut session = scope.reader().await?;
            read_foreign(catalog, session.as_mut(), &info.record.db, &rest.after(1)).await?
        };
        if let Some(results) = run_pushed(scope, info, &plan, &rest, foreign).await? {
            super::index_usage::record(info, &plan);
            return Ok(Some(results));
        }
    }
    let Some((before, mut grouping, after)) = rest.split_at_group() else {
        return Ok(None);
    };
    super::index_usage::record(info, &plan);
    let (foreign_before, foreign_after) = {
        let mut session = scope.reader().await?;
        let db = &info.record.db;
        (
            read_foreign(catalog, session.as_mut(), db, &before).await?,
            read_foreign(catalog, session.as_mut(), db, &after).await?,
        )
    };
    // A `$text` read: each match reaches the `$group` with its score, which its
    // accumulators may read (`{$meta: "textScore"}`).
    let search = read::text_scored(&plan).map(|search| Arc::new(search.clone()));
    // The groups' keys compare under the read's collation.
    let collation = plan.collation.clone();
    let mut cursor = ReadCursor::new(info, plan, None, None)
        .with_stages(StagedOutput {
            pipeline: before,
            foreign: Arc::new(foreign_before),
        })
        .scoring_stages(search, true);
    let chunk = BatchLimit {
        documents: GROUP_INPUT_CHUNK,
        bytes: super::cursors::MAX_BATCH_BYTES,
    };
    while !cursor.is_exhausted() {
        let batch = cursor.next_batch(scope, chunk).await?;
        let collation = collation.clone();
        grouping = crate::compute::run(move || {
            collation.install(|| {
                for raw in &batch {
                    if !grouping.feed_raw(raw)? {
                        grouping.feed(&read::decode_document(raw.as_bytes())?)?;
                    }
                }
                Ok::<_, OpError>(())
            })?;
            Ok::<_, OpError>(grouping)
        })
        .await?;
    }
    let results = crate::compute::run(move || {
        collation.install(|| {
            let groups = grouping.finish()?;
            if crate::query::memory::limited() {
                crate::query::memory::check_group(crate::query::memory::documents_size(&groups))?;
            }
            let mut results = after.run_with(groups, &foreign_after)?;
            // As `run_pipeline` leaves them: no score where a stage made a match the document.
            results.iter_mut().for_each(read::strip_text_score);
            Ok::<_, OpError>(results)
        })
    })
    .await?;
    Ok(Some(results))
}

/// The documents the first stage of a collection-less `aggregate: 1` produces (the rest of
/// the pipeline, [`Pipeline::inner`]`(1)`, runs over them): `$documents` evaluated once,
/// or `$listLocalSessions` from `sessions`, which `user` (`(db, name)`; `None` without
/// access control, where `{}` lists every session) is listing; `$currentOp`'s operations
/// the front end supplies (none here). Any other first stage needs a collection
/// ([`check_collectionless_start`]).
pub fn collectionless_input(
    pipeline: &Pipeline,
    stages: &[Document],
    sessions: &SessionRegistry,
    user: Option<&(String, String)>,
) -> Result<Vec<Document>, OpError> {
    check_collectionless_start(pipeline, stages)?;
    match pipeline.stages.first() {
        Some(Stage::Documents(expression)) => Ok(collectionless::documents(expression)?),
        Some(Stage::ListLocalSessions(listing)) => Ok(local_sessions(sessions, listing, user)),
        _ => Ok(Vec::new()),
    }
}

/// MongoDB's 73 InvalidNamespace for a `$currentOp` elsewhere than `aggregate: 1` on `admin`.
pub const CURRENT_OP_ON_ADMIN: &str =
    "$currentOp must be run against the 'admin' database with {aggregate: 1}";

/// Whether `pipeline` (parsed from `stages`) may start a collection-less `aggregate: 1`:
/// with `$documents` or `$listLocalSessions`, else MongoDB's 73 InvalidNamespace naming the
/// first stage as the client wrote it.
pub fn check_collectionless_start(pipeline: &Pipeline, stages: &[Document]) -> Result<(), OpError> {
    match pipeline.stages.first() {
        Some(Stage::Documents(_) | Stage::ListLocalSessions(_) | Stage::CurrentOp(_)) => Ok(()),
        _ => Err(OpError::InvalidNamespace(format!(
            "{{aggregate: 1}} is not valid for '{}'; a collection is required.",
            stages
                .first()
                .and_then(|stage| stage.keys().next())
                .map_or("", String::as_str)
        ))),
    }
}

/// A stage that only a collection-less `aggregate: 1` may start with, on a collection:
/// MongoDB's 73 InvalidNamespace.
pub fn check_collection_input(pipeline: &Pipeline) -> Result<(), OpError> {
    match pipeline.stages.first() {
        Some(Stage::Documents(_)) => Err(OpError::InvalidNamespace(
            "$documents can only be run with {aggregate: 1}".into(),
        )),
        Some(Stage::ListLocalSessions(_)) => Err(OpError::InvalidNamespace(
            "$listLocalSessions must be run as {aggregate: 1}".into(),
        )),
        Some(Stage::CurrentOp(_)) => Err(OpError::InvalidNamespace(CURRENT_OP_ON_ADMIN.into())),
        _ => Ok(()),
    }
}

/// `$listLocalSessions`: `{_id: {id, uid}, lastUse, user: {name}}` per session, `uid`
/// being the SHA-256 of `name@db` (of the empty string with no user), as MongoDB lists them.
fn local_sessions(
    sessions: &SessionRegistry,
    listing: &SessionListing,
    user: Option<&(String, String)>,
) -> Vec<Document> {
    let wanted = |owner: &Option<(String, String)>| match listing {
        SessionListing::AllUsers => true,
        SessionListing::CurrentUser => user.is_none() || owner.as_ref() == user,
        SessionListing::Users(users) => owner
            .as_ref()
            .is_some_and(|(db, name)| users.iter().any(|(u, d)| u == name && d == db)),
    };
    let mut listed: Vec<_> = sessions
        .list()
        .into_iter()
        .filter(|(key, _)| wanted(&key.user))
        .collect();
    listed.sort_by_key(|(_, last_use)| std::cmp::Reverse(*last_use));
    listed
        .into_iter()
        .map(|(key, last_use)| {
            use sha2::Digest;
            let full_name = key
                .user
                .as_ref()
                .map(|(db, name)| format!("{name}@{db}"))
                .unwrap_or_default();
            let uid = sha2::Sha256::digest(full_name.as_bytes()).to_vec();
            let mut session = bson::doc! {
                "_id": {
                    "id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: key.id.clone() },
                    "uid": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: uid },
                },
                "lastUse": bson::DateTime::from_system_time(last_use),
            };
            if key.user.is_some() {
                session.insert("user", bson::doc! {"name": full_name});
            }
            session
        })
        .collect()
}
