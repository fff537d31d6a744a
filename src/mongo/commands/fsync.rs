//! `fsync` and `fsyncUnlock`. `fsync: 1` flushes what is committed to the database's files
//! (the store's checkpoint: SQLite's WAL checkpoint, PostgreSQL's `CHECKPOINT`); committed
//! writes are durable before it either way. `lock: true` is refused: docgate cannot hold
//! every write path (wire, REST, TTL monitor, other instances on the same PostgreSQL)
//! behind one lock, and an `fsyncLock` that did not stop all writes would lie to the backup
//! taken under it. Back up with the backend's own online tools instead (README, backups).
//!
//! Not for: anything else about durability (`crate::store`).

use bson::{doc, Document};

use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::CommandRequest;

/// `fsync: 1` (on `admin`): `{numFiles: 1}` once the checkpoint is done.
pub async fn fsync(context: &CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    admin_only(request)?;
    let mut arguments = request.arguments();
    let lock = arguments.bool("lock")?.unwrap_or(false);
    let lock_timeout = arguments.i64("fsyncLockAcquisitionTimeoutMillis")?;
    arguments.finish()?;
    if lock || lock_timeout.is_some() {
        return Err(OpError::NotSupported(
            "fsync with lock: true is not supported by docgate: it cannot block every write \
             to the backend; take backups with the backend's online backup instead"
                .into(),
        ));
    }
    context.server.state.store.checkpoint().await?;
    Ok(doc! {"numFiles": 1})
}

/// `fsyncUnlock` (on `admin`): nothing is ever locked (`fsync` refuses `lock: true`), so
/// MongoDB's answer to an unlock without a lock.
pub fn fsync_unlock(request: &CommandRequest) -> CommandResult {
    admin_only(request)?;
    request.arguments().finish()?;
    Err::<Document, _>(OpError::IllegalOperation(
        "fsyncUnlock called when not locked".into(),
    ))
}

fn admin_only(request: &CommandRequest) -> Result<(), OpError> {
    if request.db == "admin" {
        Ok(())
    } else {
        Err(OpError::Unauthorized(format!(
            "{} may only be run against the admin database.",
            request.name
        )))
    }
}
