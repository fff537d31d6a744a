//! Capped collections on SQLite: which of the oldest documents must go after an insert so
//! the newest fit the collection's byte and document limits — one window-function query
//! over the rowid (insertion) order. The deletion itself is the ordinary `delete` (which
//! also removes index entries); writers are serialized by `BEGIN IMMEDIATE` already.
//!
//! Not for: the limits' meaning or when they are enforced (`ops::capped`).

use rusqlite::Connection;

use super::super::StoreError;
use super::conn::db_err;
use super::sql::quote_ident;

/// The `_id` keys of the oldest rows of `table` beyond `max_bytes` (running sum of BSON
/// sizes from the newest row back) or `max_documents`, oldest first.
pub(super) fn overflow(
    conn: &Connection,
    table: &str,
    max_bytes: u64,
    max_documents: Option<u64>,
) -> Result<Vec<Vec<u8>>, StoreError> {
    let text = format!(
        "SELECT k FROM (SELECT k, rowid AS dg_seq,
                SUM(length(doc)) OVER dg_newest AS dg_bytes,
                ROW_NUMBER() OVER dg_newest AS dg_n
             FROM {} WINDOW dg_newest AS (ORDER BY rowid DESC ROWS UNBOUNDED PRECEDING))
         WHERE dg_bytes > ?1 OR dg_n > ?2 ORDER BY dg_seq",
        quote_ident(table)
    );
    let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let mut stmt = conn.prepare_cached(&text).map_err(db_err)?;
    let rows = stmt
        .query_map(
            rusqlite::params![clamp(max_bytes), clamp(max_documents.unwrap_or(u64::MAX))],
            |row| row.get::<_, Vec<u8>>(0),
        )
        .map_err(db_err)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(db_err)
}
