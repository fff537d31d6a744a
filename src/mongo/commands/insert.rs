//! `insert`: the command's arguments (`documents`, `ordered`, the batch size limit) and its
//! reply (`n`, `writeErrors`); the batch itself is written by the core (`crate::ops::insert`:
//! one transaction, ordered or unordered as MongoDB defines them).
//!
//! Not for: updates and upserts (see `update`).

use bson::doc;

use super::write_reply::{count_bson, with_write_errors};
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::CommandRequest;
use crate::ops;
use crate::ops::insert::InsertMode;
use crate::ops::validation::DocumentValidation;

/// `insert`.
pub async fn insert(context: &mut CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let mut arguments = request.arguments();
    let ordered = arguments.bool("ordered")?.unwrap_or(true);
    let documents = arguments
        .array("documents")?
        .ok_or_else(|| OpError::missing_field("insert.documents"))?;
    // Its privilege is checked before the command runs (`auth::authorize`).
    let validation = DocumentValidation::from_bypass_flag(
        arguments.bool("bypassDocumentValidation")?.unwrap_or(false),
    );
    arguments.finish()?;
    let name = request.collection()?;
    if documents.is_empty() {
        return Err(OpError::InvalidLength(
            "Write batch sizes must be between 1 and 100000. Got 0 operations.".into(),
        ));
    }
    if documents.len() > crate::mongo::limits::MAX_WRITE_BATCH_SIZE as usize {
        return Err(OpError::InvalidLength(format!(
            "Write batch sizes must be between 1 and 100000. Got {} operations.",
            documents.len()
        )));
    }

    let mode = if ordered {
        InsertMode::Ordered
    } else {
        InsertMode::Unordered
    };
    let outcome = ops::insert::insert(
        &mut context.scope(),
        &request.db,
        name,
        documents.clone(),
        mode,
        validation,
    )
    .await?;
    Ok(with_write_errors(
        doc! {"n": count_bson(outcome.inserted)},
        outcome.write_errors,
    ))
}
