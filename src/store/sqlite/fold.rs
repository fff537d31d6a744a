//! Folds inside a statement (`StoreSession::fold_scan`): the core's fold (a `$group`, say)
//! is registered on the connection as an application-defined aggregate function for the
//! length of one statement, `SELECT docgate_fold(doc) FROM (<the planned scan>)`, so SQLite
//! hands it each selected row's stored BSON in place — no row is copied out, no chunk is
//! re-queried — and the statement answers one row.
//!
//! Order: the scan's `SELECT` always has an `ORDER BY` (rowid for natural order), and SQLite
//! never flattens a subquery with an `ORDER BY` into an aggregate query: it runs it as a
//! co-routine whose rows reach the aggregate in that order, which is what `$first`/`$last`
//! depend on.
//!
//! Not for: what the fold computes (the core's), or the scan's SQL (`sql.rs`).

use std::sync::Mutex;

use rusqlite::functions::{Aggregate, Context, FunctionFlags};
use rusqlite::Connection;

use super::super::{DocumentFold, StoreError};
use super::conn::db_err;
use super::sql::Sql;

/// The aggregate function's name while a fold runs.
const FOLD_FUNCTION: &str = "docgate_fold";

/// The registered function: the fold, fed one row per `step`.
struct FoldFunction {
    fold: Mutex<Box<dyn DocumentFold>>,
}

/// Why one of docgate's SQL functions failed, as SQLite reports it (the statement then
/// fails with it): what failed, and the cause.
#[derive(Debug)]
pub(super) struct FunctionFailed(pub &'static str, pub String);

impl std::fmt::Display for FunctionFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.0, self.1)
    }
}

impl std::error::Error for FunctionFailed {}

/// A fold's error as SQLite sees it (the fold kept the real one).
fn stopped(error: impl ToString) -> rusqlite::Error {
    let failed = FunctionFailed("the fold stopped", error.to_string());
    rusqlite::Error::UserFunctionError(Box::new(failed))
}

impl Aggregate<(), i64> for FoldFunction {
    fn init(&self, _: &mut Context<'_>) -> rusqlite::Result<()> {
        Ok(())
    }

    fn step(&self, ctx: &mut Context<'_>, _: &mut ()) -> rusqlite::Result<()> {
        let document = ctx.get_raw(0).as_blob()?;
        let mut fold = self.fold.lock().map_err(stopped)?;
        fold.feed(document).map_err(stopped)
    }

    fn finalize(&self, _: &mut Context<'_>, _: Option<()>) -> rusqlite::Result<i64> {
        Ok(0)
    }
}

/// Runs `scan` (a `SELECT doc …`) with every row going to `fold`, as one statement.
pub(super) fn run(
    conn: &Connection,
    scan: &Sql,
    fold: Box<dyn DocumentFold>,
) -> Result<(), StoreError> {
    conn.create_aggregate_function(
        FOLD_FUNCTION,
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DIRECTONLY,
        FoldFunction {
            fold: Mutex::new(fold),
        },
    )
    .map_err(db_err)?;
    let text = format!(
        "SELECT {FOLD_FUNCTION}(doc) FROM ({}) AS dg_scan",
        scan.text
    );
    let result = conn
        .prepare(&text)
        .and_then(|mut stmt| {
            stmt.query_row(rusqlite::params_from_iter(scan.params.iter()), |_| Ok(()))
        })
        .map_err(db_err);
    // The function held the fold; dropping it here lets the caller take its result.
    let removed = conn.remove_function(FOLD_FUNCTION, 1).map_err(db_err);
    result.and(removed)
}
