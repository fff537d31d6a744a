//! What every write shares inside its transaction: the collection it writes to (created
//! implicitly, as MongoDB does), and the indexes it makes multikey.
//!
//! Not for: the statements themselves (`update`, `delete`, the front ends' inserts).

use std::sync::Arc;

use bson::Document;

use super::namespace::check_collection_name;
use super::OpError;
use crate::catalog::{CollectionIndex, CollectionInfo};
use crate::store::StoreSession;

/// The collection `db.name` with its indexes, created if missing, inside the session's
/// open transaction. Returns whether it was created (the caller invalidates the catalog
/// after commit).
pub async fn collection_for_write(
    catalog: &crate::catalog::Catalog,
    session: &mut dyn StoreSession,
    db: &str,
    name: &str,
) -> Result<(Arc<CollectionInfo>, bool), OpError> {
    if let Some(existing) = catalog.collection_info_in(session, db, name).await? {
        return Ok((existing, false));
    }
    check_collection_name(db, name)?;
    let created = |record| {
        Arc::new(CollectionInfo {
            record,
            indexes: Vec::new(),
        })
    };
    match session.create_collection(db, name, &Document::new()).await {
        Ok(record) => Ok((created(record), true)),
        Err(crate::store::StoreError::AlreadyExists(_)) => {
            // Created by someone else since our snapshot: read it inside this transaction.
            crate::catalog::read_snapshot(session)
                .await?
                .info(db, name)
                .cloned()
                .map(|info| (info, false))
                .ok_or_else(|| OpError::NamespaceNotFound(format!("{db}.{name}")))
        }
        Err(other) => Err(other.into()),
    }
}

/// Records in the store, inside the command's transaction, that the indexes at
/// `positions` became multikey. Returns whether any was marked (the catalog then needs
/// invalidating after commit).
pub async fn mark_multikey(
    session: &mut dyn StoreSession,
    indexes: &[CollectionIndex],
    positions: &std::collections::BTreeSet<usize>,
) -> Result<bool, OpError> {
    for position in positions {
        if let Some(index) = indexes.get(*position) {
            session.mark_multikey(&index.record).await?;
        }
    }
    Ok(!positions.is_empty())
}
