//! The stage right after an aggregate's leading read, run by the store inside the read's own
//! statement when that gives exactly the answer the Rust stages give (type and value):
//!
//! - **count**: a `$count`, or a `$group` by a constant whose accumulators depend only on
//!   how many documents there are (`query::counted`), after an exactly pushed filter, is
//!   the store's SQL `COUNT(*)` (every backend), skip and limit applied to the count;
//! - **fold**: a `$group` straight after the read whose key and accumulator arguments are
//!   literals, field paths or objects of those (`Grouping::reads_only_fields`: it costs what
//!   reading the fields costs, for the fold runs on the store's thread, not on the compute
//!   pool), after a filter SQL evaluates or one whose residual evaluates no expressions, on
//!   a backend that can run a fold inside its statement (`Store::folds_in_statement`:
//!   SQLite, with the fold registered as an aggregate function), feeds the group from the
//!   statement's rows: the same [`Grouping`] (keys by BSON equality, accumulators in input
//!   order) over the same rows in the same order, with a residual filter, skip and limit
//!   re-applied in Rust first.
//!
//! - **SQL group**: the same `$group` shapes, with the accumulators
//!   `query::sql_group` lists, after a filter SQL evaluates exactly, in natural order, on a
//!   backend that runs a `$group` as SQL (`GroupInStatement::Sql`: PostgreSQL) — one
//!   statement whose rows `SqlGroupPlan::assemble` finishes. When the store finds a value
//!   its SQL cannot group exactly (it answers None) the group streams through Rust instead.
//!
//! Anything else (Oracle's `$group` by a field, a `$group` after other stages) is not
//! pushed: `aggregate::run_grouped` streams the rows through Rust, and `explain` leaves the
//! stage out of `docgate.stagesInSql`.
//!
//! Not for: the leading read's plan (`aggregate.rs`, `query::planner`), the grouping's
//! semantics (`query::aggregate`), or SQL (`store`).

use std::sync::{Arc, Mutex};

use bson::Document;

use super::read::decode_document;
use super::transaction::OpScope;
use super::OpError;
use crate::catalog::CollectionInfo;
use crate::query::counted::{counted_output, is_counted};
use crate::query::planner::ReadPlan;
use crate::query::sql_group::{certain_conditions, SqlGroupPlan};
use crate::query::{Filter, ForeignDocuments, Grouping, Pipeline, Stage};
use crate::store::{DocumentFold, GroupInStatement, StoreError};

/// How the stage after the leading read runs in the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushedStage {
    /// From the SQL `COUNT(*)` of the exact filter.
    Count,
    /// A `$group` fed inside the read's statement.
    Fold,
    /// A `$group` run as SQL.
    SqlGroup,
}

impl PushedStage {
    /// Which stage `pipeline` (the stages after the leading read of `plan`) starts with
    /// that the store runs, if any: `group_in` says how the backend runs a `$group`.
    pub fn of(
        plan: &ReadPlan,
        pipeline: &Pipeline,
        group_in: GroupInStatement,
    ) -> Option<PushedStage> {
        if plan.sort.is_some() || plan.text_score {
            return None;
        }
        let first = pipeline.stages.first()?;
        if plan.residual.is_none() && is_counted(first) {
            return Some(PushedStage::Count);
        }
        // The fold runs on the store's thread, not on the compute pool: only a grouping
        // that costs what reading the fields costs (and a residual filter that evaluates
        // no expressions, as a cursor judges inline) goes there.
        let cheap_residual = plan
            .residual
            .as_ref()
            .is_none_or(|filter| !filter.evaluates_expressions());
        let Stage::Group { id, accumulators } = first else {
            return None;
        };
        if !plan.collation.is_simple() {
            // The store groups strings by their bytes, not by a collator.
            return None;
        }
        match group_in {
            GroupInStatement::Fold
                if cheap_residual && Grouping::reads_only_fields(id, accumulators) =>
            {
                Some(PushedStage::Fold)
            }
            GroupInStatement::Sql
                if sql_filter_usable(plan)
                    && plan.scan.order.is_none()
                    && plan.scan.order_index.is_none()
                    && SqlGroupPlan::of(id, accumulators).is_some() =>
            {
                Some(PushedStage::SqlGroup)
            }
            _ => None,
        }
    }
}

/// Whether a `$group` run as SQL can read the rows of `plan`: its SQL is the filter, or
/// narrows the rows to it and the filter is equalities and numeric comparisons the SQL can
/// decide row by row (`sql_group::certain_conditions`), with no skip or limit left to Rust.
fn sql_filter_usable(plan: &ReadPlan) -> bool {
    match &plan.residual {
        None => true,
        Some(filter) => {
            plan.skip == 0 && plan.limit.is_none() && certain_conditions(filter).is_some()
        }
    }
}

/// Runs `pipeline` (the stages after the leading read `plan` of `info`) with its first
/// stage in the store, then the stages after it in Rust (with `foreign`, the collections
/// they read). None when the first stage is not one the store runs ([`PushedStage::of`]).
pub async fn run_pushed(
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    plan: &ReadPlan,
    pipeline: &Pipeline,
    foreign: ForeignDocuments,
) -> Result<Option<Vec<Document>>, OpError> {
    let group_in = scope.state.store.group_in_statement();
    let Some(pushed) = PushedStage::of(plan, pipeline, group_in) else {
        return Ok(None);
    };
    let Some(first) = pipeline.stages.first() else {
        return Ok(None);
    };
    let made = match pushed {
        PushedStage::Count => {
            let total = {
                let mut session = scope.reader().await?;
                session
                    .as_mut()
                    .count(&info.record, &plan.scan.filter)
                    .await?
            };
            // Skip and limit in SQL, and any left to Rust (an exact plan has them in one
            // place or the other).
            let mut n = total.saturating_sub(plan.scan.skip);
            n = plan.scan.limit.map_or(n, |limit| n.min(limit));
            n = n.saturating_sub(plan.skip);
            n = plan.limit.map_or(n, |limit| n.min(limit));
            match counted_output(first, n) {
                Some(documents) => documents,
                // A total past what the types hold: the stages run in Rust.
                None => return Ok(None),
            }
        }
        PushedStage::Fold => {
            let Stage::Group { id, accumulators } = first else {
                return Ok(None);
            };
            fold_group(
                scope,
                info,
                plan,
                Grouping::new(id.clone(), accumulators.clone()),
            )
            .await?
        }
        PushedStage::SqlGroup => {
            let Stage::Group { id, accumulators } = first else {
                return Ok(None);
            };
            let Some(mut grouping) = SqlGroupPlan::of(id, accumulators) else {
                return Ok(None);
            };
            if let Some(residual) = &plan.residual {
                let Some(over_filter) = grouping.over_filter(residual) else {
                    return Ok(None);
                };
                grouping = over_filter;
            }
            let budget = crate::compute::current_interrupt()
                .blocking_memory()
                .map_or(crate::query::memory::BLOCKING_STAGE_LIMIT, |memory| {
                    memory.bytes
                });
            let grouping = grouping.with_max_bytes(budget as u64);
            match sql_group(scope, info, plan, grouping).await? {
                Some(groups) => groups,
                None => return Ok(None),
            }
        }
    };
    let after = pipeline.after(1);
    // The stages after it compare under the read's collation.
    let collation = plan.collation.clone();
    let results =
        crate::compute::run(move || collation.install(|| after.run_with(made, &foreign))).await?;
    Ok(Some(results))
}

/// A `$group` fed inside the statement of the read `plan`: its groups.
async fn fold_group(
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    plan: &ReadPlan,
    grouping: Grouping,
) -> Result<Vec<Document>, OpError> {
    // The skip and limit SQL could not take (after a residual filter) are the fold's.
    let request = plan.scan.clone();
    let (skip, limit) = (plan.skip, plan.limit);
    let state = Arc::new(Mutex::new(GroupFoldState {
        grouping: Some(grouping),
        residual: plan.residual.clone(),
        skip,
        remaining: limit,
        error: None,
    }));
    let fold = Box::new(GroupFold {
        state: Arc::clone(&state),
        interrupt: crate::compute::current_interrupt(),
    });
    let outcome = {
        let mut session = scope.reader().await?;
        session
            .as_mut()
            .fold_scan(&info.record, &request, fold)
            .await
    };
    let (grouping, error) = {
        let mut state = state
            .lock()
            .map_err(|_| OpError::BadValue("a grouping failed".into()))?;
        (state.grouping.take(), state.error.take())
    };
    if let Some(error) = error {
        return Err(error);
    }
    outcome?;
    let grouping = grouping.ok_or_else(|| OpError::BadValue("a grouping failed".into()))?;
    crate::compute::run(move || {
        let groups = grouping.finish()?;
        if crate::query::memory::limited() {
            crate::query::memory::check_group(crate::query::memory::documents_size(&groups))?;
        }
        Ok::<_, OpError>(groups)
    })
    .await
}

/// A `$group` run as SQL over the read `plan`: its groups, or None when the store met a
/// value its SQL cannot group exactly.
async fn sql_group(
    scope: &mut OpScope<'_>,
    info: &CollectionInfo,
    plan: &ReadPlan,
    grouping: SqlGroupPlan,
) -> Result<Option<Vec<Document>>, OpError> {
    let rows = {
        let mut session = scope.reader().await?;
        session
            .as_mut()
            .group_scan(&info.record, &plan.scan, &grouping.request)
            .await?
    };
    scope.state.metrics.sql_group(rows.is_some());
    let Some(rows) = rows else {
        return Ok(None);
    };
    crate::compute::run(move || {
        let groups = grouping.assemble(rows)?;
        if crate::query::memory::limited() {
            crate::query::memory::check_group(crate::query::memory::documents_size(&groups))?;
        }
        Ok::<_, OpError>(Some(groups))
    })
    .await
}

/// What the fold of a `$group` holds while the statement runs.
struct GroupFoldState {
    grouping: Option<Grouping>,
    /// The filter the read's SQL did not evaluate exactly.
    residual: Option<Filter>,
    /// Matching documents still to skip, and still to take (None: all).
    skip: u64,
    remaining: Option<u64>,
    /// Why the fold stopped (the statement's own error is a generic one).
    error: Option<OpError>,
}

/// The fold handed to the store; the caller keeps the other handle on its state.
struct GroupFold {
    state: Arc<Mutex<GroupFoldState>>,
    /// The command's interrupt (`maxTimeMS`, `killOp`), installed while a row is grouped:
    /// the fold runs on the store's thread, not on the compute pool that installs it.
    interrupt: crate::interrupt::Interrupt,
}

impl DocumentFold for GroupFold {
    fn feed(&mut self, document: &[u8]) -> Result<(), StoreError> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| StoreError::Database("a grouping failed".into()))?;
        match self.interrupt.install(|| state.feed(document)) {
            Ok(()) => Ok(()),
            Err(error) => {
                let reason = StoreError::Database(error.to_string());
                state.error = Some(error);
                Err(reason)
            }
        }
    }
}

impl GroupFoldState {
    fn feed(&mut self, bytes: &[u8]) -> Result<(), OpError> {
        if self.remaining == Some(0) {
            return Ok(());
        }
        let decoded = match &self.residual {
            Some(filter) => {
                let document = decode_document(bytes)?;
                if !filter.matches(&document) {
                    return Ok(());
                }
                Some(document)
            }
            None => None,
        };
        if self.skip > 0 {
            self.skip -= 1;
            return Ok(());
        }
        if let Some(remaining) = &mut self.remaining {
            *remaining -= 1;
        }
        let Some(grouping) = &mut self.grouping else {
            return Ok(());
        };
        match decoded {
            Some(document) => grouping.feed(&document)?,
            None => {
                // Decoding only the values the group reads, when it can.
                let raw = bson::RawDocument::from_bytes(bytes)
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?;
                if !grouping.feed_raw(raw)? {
                    grouping.feed(&decode_document(bytes)?)?;
                }
            }
        }
        Ok(())
    }
}
