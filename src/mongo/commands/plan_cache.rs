//! The plan cache commands: `planCacheClear`, `planCacheClearFilters` and
//! `planCacheListFilters`. docgate keeps no plan cache and no index filters — every read is
//! planned afresh from the catalog — so there is nothing to clear and no filter to list, which
//! is what these commands answer truthfully (as MongoDB does for a collection with an empty
//! cache). `planCacheSetFilter`, which would change which index the planner may choose, is
//! not implemented and stays an unknown command (59).
//!
//! Not for: the `$planCacheStats` stage (`stats.rs`) or planning itself (`query::planner`).

use bson::{doc, Document};

use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::CommandRequest;

/// The query shape fields the plan cache commands take (a shape selects cache entries or
/// filters; with none cached, every shape selects nothing).
const QUERY_SHAPE: &[&str] = &["query", "sort", "projection", "collation"];

/// Reads a plan cache command's collection and query shape, refusing anything else.
fn read_shape(request: &CommandRequest) -> Result<(), OpError> {
    request.collection()?;
    let mut arguments = request.arguments();
    for field in QUERY_SHAPE {
        arguments.document(field)?;
    }
    arguments.finish()
}

/// `planCacheClear`: nothing is cached, nothing to clear.
pub fn plan_cache_clear(_context: &CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    read_shape(request)?;
    Ok(Document::new())
}

/// `planCacheClearFilters`: no index filter is set, none to clear.
pub fn plan_cache_clear_filters(
    _context: &CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    read_shape(request)?;
    Ok(Document::new())
}

/// `planCacheListFilters`: no index filter is set.
pub fn plan_cache_list_filters(
    _context: &CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    request.collection()?;
    request.arguments().finish()?;
    Ok(doc! {"filters": []})
}
