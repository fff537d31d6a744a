//! What every write shares inside its transaction: the collection it writes to (created
//! implicitly, as MongoDB does), and the indexes it makes multikey; both note the metadata
//! change on the transaction, which invalidates the catalog when it commits.
//!
//! Not for: the statements themselves (`update`, `delete`, the front ends' inserts).

use std::sync::Arc;

use bson::Document;

use super::namespace::check_collection_name;
use super::transaction::Transaction;
use super::OpError;
use crate::catalog::{CollectionIndex, CollectionInfo};

/// The collection `db.name` with its indexes, created if missing, inside the operation's
/// transaction (a created collection invalidates the catalog when it commits).
pub async fn collection_for_write(
    transaction: &mut Transaction<'_>,
    db: &str,
    name: &str,
) -> Result<Arc<CollectionInfo>, OpError> {
    if let Some(existing) = transaction.collection_info(db, name).await? {
        return Ok(existing);
    }
    check_collection_name(db, name)?;
    match transaction
        .session()
        .create_collection(db, name, &Document::new())
        .await
    {
        Ok(record) => {
            transaction.changed_catalog();
            Ok(Arc::new(CollectionInfo::without_indexes(record)?))
        }
        Err(crate::store::StoreError::AlreadyExists(_)) => {
            // Created by someone else since our snapshot: read it inside this transaction.
            crate::catalog::read_snapshot(transaction.session())
                .await?
                .info(db, name)
                .cloned()
                .ok_or_else(|| OpError::NamespaceNotFound(format!("{db}.{name}")))
        }
        Err(other) => Err(other.into()),
    }
}

/// Records in the store, inside the operation's transaction, that the indexes at
/// `positions` became multikey (the catalog is invalidated when it commits).
pub async fn mark_multikey(
    transaction: &mut Transaction<'_>,
    indexes: &[CollectionIndex],
    positions: &std::collections::BTreeSet<usize>,
) -> Result<(), OpError> {
    for position in positions {
        if let Some(index) = indexes.get(*position) {
            transaction.session().mark_multikey(&index.record).await?;
            transaction.changed_catalog();
        }
    }
    Ok(())
}
