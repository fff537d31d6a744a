//! Planner statistics for tables PostgreSQL has not analyzed yet. Its autovacuum analyzes a
//! new table about a minute after rows arrive; until then the planner guesses, and for an
//! index lookup with a limit it may guess that the entries range matches many rows and walk
//! the whole collection in natural order until the first match. So the first large insert
//! into a never-analyzed collection table analyzes it, with the entries tables its documents
//! went into, right after the insert committed; an index built over existing documents is
//! analyzed by the build (`index.rs`).
//!
//! Not for: keeping statistics current afterwards (autovacuum does), or SQLite (whose
//! planner needs none here).

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use super::conn::PgConn;
use crate::store::{CollectionRecord, StoreError, StoredDocument};

/// Inserts of at least this many documents look at whether their table was ever analyzed.
const LARGE_INSERT: usize = 1_000;

/// Tables this process has seen analyzed (table names are never reused).
fn analyzed() -> &'static Mutex<HashSet<String>> {
    static ANALYZED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    ANALYZED.get_or_init(Default::default)
}

/// After `docs` went into `coll`: analyzes the table and its entries tables when the insert
/// is large and PostgreSQL has never analyzed the table. Inside the caller's transaction (a
/// retryable write's, a session's) both statements run in a savepoint, and `ANALYZE` counts
/// the transaction's own new rows. A failure is logged and ignored (undone to its savepoint
/// in a transaction): the documents are in, and autovacuum will come.
pub(super) async fn after_insert(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    docs: &[StoredDocument],
) {
    if docs.len() < LARGE_INSERT {
        return;
    }
    let seen = |table: &str| {
        analyzed()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .contains(table)
    };
    if seen(&coll.table) {
        return;
    }
    if let Err(error) = analyze_if_never(conn, coll, docs).await {
        tracing::debug!(%error, table = %coll.table, "ANALYZE after a large insert failed");
    }
}

async fn analyze_if_never(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    docs: &[StoredDocument],
) -> Result<(), StoreError> {
    let never = run(
        conn,
        "SELECT 1 FROM pg_stat_user_tables WHERE relid = $1::text::regclass
           AND last_analyze IS NULL AND last_autoanalyze IS NULL",
        &params![coll.table.clone()],
    )
    .await?;
    if !never.is_empty() {
        let mut tables = vec![coll.table.clone()];
        if let Some(first) = docs.first() {
            tables.extend(first.index_keys.iter().map(|entry| entry.table.clone()));
        }
        run(conn, &format!("ANALYZE {}", tables.join(", ")), &params![]).await?;
    }
    analyzed()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .insert(coll.table.clone());
    Ok(())
}

/// One statement: in a savepoint inside the caller's transaction (a failure must not abort
/// it), else on its own.
async fn run(
    conn: &mut PgConn,
    sql: &str,
    params: &super::conn::Params,
) -> Result<Vec<tokio_postgres::Row>, StoreError> {
    match conn.in_tx {
        true => conn.query_in_savepoint(sql, params).await,
        false => conn.query(sql, params).await,
    }
}
