//! One delete statement inside the caller's transaction: its matches read through the
//! planner (locked for the transaction) and deleted by `_id` key in one batch. Shared by the
//! wire's `delete` and by REST.
//!
//! Not for: parsing statements (the front ends), or findAndModify's remove.

use bson::Bson;

use super::read;
use super::OpError;
use crate::catalog::CollectionInfo;
use crate::query::encode_key;
use crate::query::planner::ReadPlan;
use crate::query::{Collation, Filter};
use crate::store::StoreSession;

/// A parsed delete statement (also what the REST front end deletes with).
pub struct DeleteStatement {
    pub filter: Filter,
    pub just_one: bool,
    /// The statement's own collation (none: the collection's default).
    pub collation: Option<Collation>,
}

/// Deletes what one statement selects, inside the caller's transaction; returns how many.
pub async fn run_statement(
    session: &mut dyn StoreSession,
    collection: &CollectionInfo,
    statement: DeleteStatement,
) -> Result<u64, OpError> {
    let record = &collection.record;
    let limit = statement.just_one.then_some(1);
    let collation = collection.collation_for(statement.collation)?;
    read::check_text_index(&statement.filter, &collection.indexes)?;
    let plan = ReadPlan::collated(
        statement.filter,
        None,
        0,
        limit,
        &collection.indexes,
        collation,
    );
    super::index_usage::record(collection, &plan);
    let documents = read::execute_for_update(session, record, &plan).await?;
    let keys: Vec<Vec<u8>> = documents
        .iter()
        .map(|d| encode_key(d.get("_id").unwrap_or(&Bson::Null)))
        .collect();
    if keys.is_empty() {
        return Ok(0);
    }
    Ok(session.delete(record, &keys).await?)
}
