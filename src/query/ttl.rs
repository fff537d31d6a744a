//! The TTL monitor: every interval (MongoDB's `ttlMonitorSleepSecs`, 60 s by default) it
//! deletes the documents of each collection whose TTL-indexed date is at least
//! `expireAfterSeconds` in the past. The expired documents are found through the index
//! itself (a range of date keys, so non-date values never expire and an array expires when
//! its earliest date does, as in MongoDB), and each index's deletions are one transaction.
//!
//! Not for: creating TTL indexes (see the `createIndexes` command).

use std::sync::Arc;
use std::time::Duration;

use bson::{Bson, DateTime};
use tokio::sync::watch;

use super::index_ranges::comparison_range;
use super::planner::decode_document;
use crate::query::filter::FieldPredicate;
use crate::query::value::keys::encode_key;
use crate::state::AppState;
use crate::store::{Predicate, ScanRequest, StoreError};

/// Deletes every document expired at `now`; returns how many were deleted.
pub async fn expire_once(state: &AppState, now: DateTime) -> Result<u64, StoreError> {
    let snapshot = state.catalog.snapshot().await?;
    let mut deleted = 0;
    for (collection, index) in snapshot.ttl_indexes() {
        let (Some(seconds), Some((_, direction))) =
            (index.spec.expire_after_seconds, index.spec.fields.first())
        else {
            continue;
        };
        let cutoff = DateTime::from_millis(
            now.timestamp_millis()
                .saturating_sub(seconds.saturating_mul(1000)),
        );
        let Some(range) =
            comparison_range(&FieldPredicate::Lte(Bson::DateTime(cutoff)), *direction)
        else {
            continue;
        };
        let request = ScanRequest {
            filter: Predicate::IndexRange {
                table: index.record.table.clone(),
                lower: range.lower,
                upper: range.upper,
            },
            ..ScanRequest::all()
        };
        let mut session = state.store.session().await?;
        session.begin().await?;
        let rows = session.scan(collection, &request).await?;
        let mut keys = Vec::with_capacity(rows.len());
        for row in rows {
            let document = decode_document(&row)?;
            keys.push(encode_key(document.get("_id").unwrap_or(&Bson::Null)));
        }
        if !keys.is_empty() {
            deleted += session.delete(collection, &keys).await?;
        }
        session.commit().await?;
    }
    Ok(deleted)
}

/// Runs [`expire_once`] every `interval` until `shutdown` turns true.
pub async fn run_monitor(
    state: Arc<AppState>,
    interval: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                match expire_once(&state, DateTime::now()).await {
                    Ok(0) => {}
                    Ok(deleted) => tracing::info!(deleted, "TTL monitor deleted expired documents"),
                    Err(error) => tracing::warn!(%error, "TTL monitor pass failed; retrying next interval"),
                }
            }
            _ = shutdown.changed() => break,
        }
    }
}
