//! Running an aggregation pipeline over a collection: the leading `$match`, `$sort`, `$skip`
//! and `$limit` planned into the store's scan like a `find` (index ranges, index order, the
//! limit in SQL), the collections `$lookup` and `$unionWith` read, then the stages on the
//! compute pool (`crate::compute`). Shared by the wire's `aggregate` and REST's `pipeline`
//! handlers.
//!
//! Not for: parsing the command, cursors (the front ends), or the stages' semantics
//! (`query::aggregate`).

use bson::{Bson, Document};

use bson::raw::RawDocumentBuf;

use super::cursors::ResultSource;
use super::find::hinted_indexes;
use super::read;
use super::read_cursor::{BatchLimit, ReadCursor, StagedOutput};
use super::transaction::OpScope;
use super::OpError;
use crate::catalog::CollectionInfo;
use crate::catalog::NO_INDEXES;
use crate::query::planner::ReadPlan;
use crate::query::Filter;
use crate::query::{ForeignDocuments, Pipeline};

/// Runs `pipeline` over `db.name` (a missing collection is empty): its leading read
/// (`Pipeline::leading_read`) is planned into the scan (with only the index `hint` names, if
/// any: one naming no index is MongoDB's BadValue), the collections `$lookup`/`$unionWith` read are read whole, then
/// the stages run in Rust. Shared with the REST front end's `pipeline` handlers.
pub async fn run_pipeline(
    catalog: &crate::catalog::Catalog,
    session: &mut dyn crate::store::StoreSession,
    db: &str,
    name: &str,
    pipeline: &Pipeline,
    hint: Option<&Bson>,
) -> Result<Vec<Document>, OpError> {
    // The leading $match, $sort, $skip and $limit are one planned read, like a find's.
    let lead = pipeline.leading_read();
    let input = match catalog.collection_info_in(session, db, name).await? {
        None => Vec::new(),
        Some(info) => {
            let indexes = hinted_indexes(&info.indexes, hint)?;
            let plan = ReadPlan::new(lead.filter, lead.sort, lead.skip, lead.limit, indexes);
            read::execute(session, &info.record, &plan).await?
        }
    };
    let foreign = read_foreign(catalog, session, db, pipeline).await?;
    // The stages run on the compute pool, never on the threads that answer other clients.
    let rest = pipeline.after(lead.stages);
    Ok(crate::compute::run(move || rest.run_with(input, &foreign)).await?)
}

/// The collections `$lookup`, `$unionWith` and `$graphLookup` read, whole (a missing one is
/// empty), from the same database.
async fn read_foreign(
    catalog: &crate::catalog::Catalog,
    session: &mut dyn crate::store::StoreSession,
    db: &str,
    pipeline: &Pipeline,
) -> Result<ForeignDocuments, OpError> {
    let mut foreign = ForeignDocuments::new();
    for other in pipeline.foreign_collections() {
        let documents = match catalog.collection_info_in(session, db, &other).await? {
            None => Vec::new(),
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

/// Opens an aggregate over `info` as a streaming cursor when it can stream: its leading
/// read is one the store orders itself, and every stage after it looks at one document at a
/// time. The cursor then holds a position and those stages, never the result; each batch
/// reads chunks of rows and runs them through the stages (`ReadCursor::with_stages`).
/// None when the pipeline must see its input whole (a `$group`, a `$sort` in Rust, …) or
/// reads a snapshot: [`run_pipeline`] runs it.
pub async fn open_stream(
    catalog: &crate::catalog::Catalog,
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    pipeline: &Pipeline,
    hint: Option<&Bson>,
    first: BatchLimit,
) -> Result<Option<(Vec<RawDocumentBuf>, ResultSource)>, OpError> {
    let lead = pipeline.leading_read();
    let rest = pipeline.after(lead.stages);
    if !rest.is_per_document() || scope.reads_whole() {
        return Ok(None);
    }
    let indexes = hinted_indexes(&info.indexes, hint)?;
    let plan = ReadPlan::new(lead.filter, lead.sort, lead.skip, lead.limit, indexes);
    if !ReadCursor::streams(&plan) {
        return Ok(None);
    }
    let foreign = {
        let mut session = scope.reader().await?;
        read_foreign(catalog, session.as_mut(), &info.record.db, &rest).await?
    };
    let mut cursor = ReadCursor::new(info, plan, None, None).with_stages(StagedOutput {
        pipeline: rest,
        foreign,
    });
    let batch = cursor.next_batch(scope, first).await?;
    Ok(Some((batch, ResultSource::Stream(Box::new(cursor)))))
}
