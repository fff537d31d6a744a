//! The transaction boundary of every operation that writes: one store session with one
//! open transaction, and whether the operation changed metadata (created a collection,
//! made an index multikey, built or dropped an index). Committing invalidates the shared
//! catalog when it did, after the commit, so no front end has to remember to.
//!
//! Dropping a `Transaction` without committing rolls it back (the store session does when
//! it goes back to the pool).
//!
//! Not for: what the operation writes (`write`, `update`, `delete`, `insert`).

use super::OpError;
use crate::catalog::Catalog;
use crate::store::{Store, StoreSession};

/// One operation's open transaction.
pub struct Transaction<'a> {
    session: Box<dyn StoreSession>,
    catalog: &'a Catalog,
    catalog_changed: bool,
}

impl<'a> Transaction<'a> {
    /// Checks out a store session and opens a transaction on it.
    pub async fn begin(
        store: &dyn Store,
        catalog: &'a Catalog,
    ) -> Result<Transaction<'a>, OpError> {
        let mut session = store.session().await?;
        session.begin().await?;
        Ok(Transaction {
            session,
            catalog,
            catalog_changed: false,
        })
    }

    /// The session the statements run on.
    pub fn session(&mut self) -> &mut dyn StoreSession {
        self.session.as_mut()
    }

    /// The shared catalog (metadata read inside the transaction goes through
    /// `Catalog::collection_info_in` with [`Transaction::session`]).
    pub fn catalog(&self) -> &'a Catalog {
        self.catalog
    }

    /// Notes that this transaction changed metadata: the catalog is invalidated after commit.
    pub fn changed_catalog(&mut self) {
        self.catalog_changed = true;
    }

    /// Whether this transaction has changed metadata so far (a fresh transaction whose
    /// `collection_for_write` flips this created the collection).
    pub fn catalog_changed(&self) -> bool {
        self.catalog_changed
    }

    /// Commits; then, if metadata changed, invalidates the catalog (on every instance, through
    /// the catalog version the store bumped in the same transaction).
    pub async fn commit(mut self) -> Result<(), OpError> {
        self.session.commit().await?;
        if self.catalog_changed {
            self.catalog.invalidate().await;
        }
        Ok(())
    }

    /// Rolls back everything the transaction wrote.
    pub async fn rollback(mut self) -> Result<(), OpError> {
        self.session.rollback().await?;
        Ok(())
    }
}
