//! Collection management for every front end: create, drop (one collection or a whole
//! database) and rename. Each change runs on its own store session (in one transaction when
//! it is several statements) that bumps the catalog version, and the shared catalog is
//! invalidated after it commits — the front ends never invalidate it themselves.
//!
//! Not for: option validation of a front end's command shape (`mongo::commands::namespaces`),
//! the implicit creation by a write (`write::collection_for_write`).

use bson::Document;

use super::namespace::check_collection_name;
use super::transaction::Transaction;
use super::OpError;
use crate::state::AppState;
use crate::store::{CollectionRecord, StoreError};

/// Creates `db.name` with `options`; answers whether it was created (false: it existed
/// already, with whatever options it has). A `collation` in the options gives its `_id`
/// index that collation (built in the same transaction).
pub async fn create_collection(
    state: &AppState,
    db: &str,
    name: &str,
    options: &Document,
) -> Result<bool, OpError> {
    check_collection_name(db, name)?;
    let mut transaction = Transaction::begin(state.store.as_ref(), &state.catalog).await?;
    let created = match transaction
        .session()
        .create_collection(db, name, options)
        .await
    {
        Ok(created) => created,
        Err(StoreError::AlreadyExists(_)) => {
            transaction.rollback().await?;
            return Ok(false);
        }
        Err(other) => return Err(other.into()),
    };
    transaction.changed_catalog();
    super::indexes::build_collated_id_index(transaction.session(), &created, &[]).await?;
    transaction.commit().await?;
    Ok(true)
}

/// Drops the collections `records` and their data, in one transaction.
pub async fn drop_collections(
    state: &AppState,
    records: &[CollectionRecord],
) -> Result<(), OpError> {
    if records.is_empty() {
        return Ok(());
    }
    let mut transaction = Transaction::begin(state.store.as_ref(), &state.catalog).await?;
    for record in records {
        transaction.session().drop_collection(record).await?;
    }
    transaction.changed_catalog();
    transaction.commit().await?;
    for record in records {
        state.capped_inserts.forget(&record.uuid);
    }
    Ok(())
}

/// Renames `record` to `target_db.target_name`, first dropping `drop_first` (the existing
/// target of `dropTarget: true`), in one transaction. A target that appeared meanwhile
/// answers 48 NamespaceExists.
pub async fn rename_collection(
    state: &AppState,
    record: &CollectionRecord,
    drop_first: Option<&CollectionRecord>,
    target_db: &str,
    target_name: &str,
) -> Result<(), OpError> {
    let mut transaction = Transaction::begin(state.store.as_ref(), &state.catalog).await?;
    if let Some(target) = drop_first {
        transaction.session().drop_collection(target).await?;
    }
    match transaction
        .session()
        .rename_collection(record, target_db, target_name)
        .await
    {
        Ok(_) => {}
        Err(StoreError::AlreadyExists(_)) => {
            transaction.rollback().await?;
            return Err(OpError::NamespaceExists("target namespace exists".into()));
        }
        Err(other) => return Err(other.into()),
    }
    transaction.changed_catalog();
    transaction.commit().await
}
