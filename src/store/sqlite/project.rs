//! A `$project` of plain fields inside a read's statement: the scalar function
//! `docgate_project(doc, spec)`, registered on every connection, answers the stored BSON
//! `doc` projected by `spec` (the BSON of a projection `Projection::applies_raw` takes, as
//! `Projection::plain_spec` writes it), so the statement hands back only the kept fields,
//! copied from the stored bytes in place. The parsed projection is kept by SQLite for the
//! statement (`get_or_create_aux`: the spec is one bound value), not parsed per row.
//!
//! Not for: which projections are pushed (`ops::read_cursor`) or the projection itself
//! (`query::projection::raw`).

use std::sync::Arc;

use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::Connection;

use super::fold::FunctionFailed;
use crate::query::Projection;

/// The function's name in SQL.
pub(super) const PROJECT_FUNCTION: &str = "docgate_project";

fn failed(message: impl ToString) -> rusqlite::Error {
    let failed = FunctionFailed("the projection failed", message.to_string());
    rusqlite::Error::UserFunctionError(Box::new(failed))
}

/// Registers `docgate_project` on `conn`.
pub(super) fn register(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        PROJECT_FUNCTION,
        2,
        FunctionFlags::SQLITE_UTF8
            | FunctionFlags::SQLITE_DETERMINISTIC
            | FunctionFlags::SQLITE_DIRECTONLY,
        project,
    )
}

fn project(ctx: &mut Context<'_>) -> rusqlite::Result<Vec<u8>> {
    let projection: Arc<Projection> = ctx.get_or_create_aux(1, |spec| {
        let spec = bson::Document::from_reader(spec.as_blob()?).map_err(failed)?;
        let projection = Projection::parse(&spec).map_err(|e| failed(e.message))?;
        if projection.applies_raw() {
            Ok(projection)
        } else {
            Err(failed(format!(
                "{spec} is not a projection of plain fields"
            )))
        }
    })?;
    let stored = bson::RawDocument::from_bytes(ctx.get_raw(0).as_blob()?).map_err(failed)?;
    let projected = projection
        .apply_raw(stored)
        .map_err(|e| failed(e.message))?;
    Ok(projected.into_bytes())
}
