//! The capped-collection commands: `convertToCapped` (a collection replaced by a capped
//! one holding its newest documents) and `cloneCollectionAsCapped` (a capped copy beside
//! it). Both run in the core (`ops::capped::copy_as_capped`, one transaction). Creating a
//! capped collection is `create` (`namespaces`); tailable cursors are `find`'s.
//!
//! Not for: `collMod`'s `cappedSize`/`cappedMax`.

use bson::{Bson, Document};

use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::CommandRequest;
use crate::ops;

/// `{convertToCapped: <collection>, size: <bytes>}`.
pub async fn convert_to_capped(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let name = request.collection()?;
    let mut arguments = request.arguments();
    let size = arguments
        .value("size")
        .ok_or_else(|| OpError::missing_field("convertToCapped.size"))?;
    arguments.finish()?;
    let state = &context.server.state;
    ops::capped::copy_as_capped(state, (&request.db, name), name, Some(size), true).await?;
    Ok(Document::new())
}

/// `{cloneCollectionAsCapped: <source>, toCollection: <target>, size: <bytes>}`.
pub async fn clone_collection_as_capped(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let source = request.collection()?;
    let mut arguments = request.arguments();
    let target = arguments
        .str("toCollection")?
        .ok_or_else(|| OpError::missing_field("cloneCollectionAsCapped.toCollection"))?;
    let size: &Bson = arguments
        .value("size")
        .ok_or_else(|| OpError::missing_field("cloneCollectionAsCapped.size"))?;
    arguments.finish()?;
    let state = &context.server.state;
    ops::capped::copy_as_capped(state, (&request.db, source), target, Some(size), false).await?;
    Ok(Document::new())
}
