//! Running an aggregation pipeline over a collection: the first `$match` planned into the
//! store's scan, the collections `$lookup` and `$unionWith` read, then the stages on the
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
use crate::query::{Collation, Filter};
use crate::query::{ForeignDocuments, Pipeline};

/// Runs `pipeline` over `db.name` (a missing collection is empty): the first `$match` is
/// planned into the scan (with only the index `hint` names, if any: one naming no index is
/// MongoDB's BadValue), the collections `$lookup`/`$unionWith` read are read whole, then
/// the stages run in Rust under the command's collation (`collation`, else the collection's
/// default), `$lookup`'s matching included. Shared with the REST front end's `pipeline` handlers.
pub async fn run_pipeline(
    catalog: &crate::catalog::Catalog,
    session: &mut dyn crate::store::StoreSession,
    db: &str,
    name: &str,
    pipeline: &Pipeline,
    hint: Option<&Bson>,
    collation: Option<Collation>,
) -> Result<Vec<Document>, OpError> {
    let (input, collation) = match catalog.collection_info_in(session, db, name).await? {
        None => (Vec::new(), collation.unwrap_or_default()),
        Some(info) => {
            let filter = Filter::parse(pipeline.leading_match().unwrap_or(&Document::new()))?;
            let indexes = hinted_indexes(&info.indexes, hint)?;
            let collation = info.collation_for(collation)?;
            let plan = ReadPlan::collated(filter, None, 0, None, indexes, collation.clone());
            (
                read::execute(session, &info.record, &plan).await?,
                collation,
            )
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
    let pipeline = pipeline.clone();
    Ok(
        crate::compute::run(move || collation.install(|| pipeline.run_with(input, &foreign)))
            .await?,
    )
}
