//! Capped collections on PostgreSQL: the lock that makes inserts into one capped
//! collection follow each other (so the identity column `n` numbers documents in commit
//! order and a tailable cursor resuming after `n` misses none), and which of the oldest
//! documents must go after an insert so the newest fit the collection's byte and document
//! limits — one window-function query over `n`. The deletion itself is the ordinary
//! `delete`.
//!
//! Not for: the limits' meaning or when they are enforced (`ops::capped`).

use super::super::{CollectionRecord, StoreError};
use super::conn::PgConn;

/// Conflicts with itself and with every writer's `ROW EXCLUSIVE`, not with readers.
const LOCK_SHARE_ROW_EXCLUSIVE: &str = "SHARE ROW EXCLUSIVE";

/// Keeps other writers of `coll` out until the transaction ends.
pub(super) async fn serialize_writes(
    conn: &mut PgConn,
    coll: &CollectionRecord,
) -> Result<(), StoreError> {
    if !conn.in_tx {
        return Err(StoreError::Database(
            "serializing the writes of a capped collection needs a transaction".into(),
        ));
    }
    conn.batch(&format!(
        "LOCK TABLE {} IN {LOCK_SHARE_ROW_EXCLUSIVE} MODE",
        coll.table
    ))
    .await
}

/// The `_id` keys of the oldest rows of `coll` beyond `max_bytes` (running sum of BSON
/// sizes from the newest row back) or `max_documents`, oldest first.
pub(super) async fn overflow(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    max_bytes: u64,
    max_documents: Option<u64>,
) -> Result<Vec<Vec<u8>>, StoreError> {
    let text = format!(
        "SELECT k FROM (SELECT k, n,
                sum(octet_length(doc)) OVER dg_newest AS dg_bytes,
                row_number() OVER dg_newest AS dg_n
             FROM {} WINDOW dg_newest AS (ORDER BY n DESC ROWS UNBOUNDED PRECEDING)) dg_w
         WHERE dg_bytes > $1 OR dg_n > $2 ORDER BY n",
        coll.table
    );
    let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let rows = conn
        .query(
            &text,
            &params![clamp(max_bytes), clamp(max_documents.unwrap_or(u64::MAX))],
        )
        .await?;
    rows.iter()
        .map(|row| {
            row.try_get::<_, Vec<u8>>(0)
                .map_err(|e| StoreError::Corrupt(e.to_string()))
        })
        .collect()
}
