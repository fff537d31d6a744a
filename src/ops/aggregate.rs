//! Running an aggregation pipeline over a collection: the leading `$match`, `$sort`, `$skip`
//! and `$limit` planned into the store's scan like a `find` (index ranges, index order, the
//! limit in SQL), the collections `$lookup` and `$unionWith` read, then the stages on the
//! compute pool (`crate::compute`). Shared by the wire's `aggregate` and REST's `pipeline`
//! handlers.
//!
//! Not for: parsing the command, cursors (the front ends), or the stages' semantics
//! (`query::aggregate`).

use bson::{Bson, Document};

use super::find::hinted_indexes;
use super::read;
use super::OpError;
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
    // $lookup and $unionWith read other collections of the same database.
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
    // The stages run on the compute pool, never on the threads that answer other clients.
    let rest = pipeline.after(lead.stages);
    Ok(crate::compute::run(move || rest.run_with(input, &foreign)).await?)
}
