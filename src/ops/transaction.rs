//! Where an operation's statements run, and the transaction boundary of every operation
//! that writes.
//!
//! - [`OpScope`]: what an operation runs in — on its own (each write its own transaction,
//!   each read a pooled connection), or joined to a [`SessionTransaction`] that spans several
//!   commands (a MongoDB multi-document transaction, or a retryable write whose record must
//!   commit with it). Operations take a scope and never ask which: reads see the joined
//!   transaction's own writes, writes join it.
//! - [`Transaction`]: one operation's transaction: a store session with one open
//!   transaction, and whether the operation changed metadata (created a collection, made an
//!   index multikey, built or dropped an index). Committing invalidates the shared catalog
//!   when it did, after the commit, so no front end has to remember to. Joined, committing
//!   only hands the metadata change on to the session transaction, which invalidates when it
//!   commits.
//!
//! Dropping a `Transaction` or a `SessionTransaction` without committing rolls it back (the
//! store session does when it goes back to the pool).
//!
//! Not for: what the operation writes (`write`, `update`, `delete`, `insert`); the session
//! layer's rules (numbers, states, lifetimes: `sessions`).

use std::sync::Arc;

use super::OpError;
use crate::catalog::{Catalog, CollectionInfo};
use crate::state::AppState;
use crate::store::{Store, StoreSession};

/// A SQL transaction that spans several operations: it holds one pooled connection for its
/// whole life and gives it back on commit, rollback or drop.
pub struct SessionTransaction {
    /// Behind a mutex only so that a command context holding the transaction is `Sync`
    /// (connections are `Send`, not `Sync`); every access is through `&mut self`, which
    /// never locks (`Mutex::get_mut`).
    session: std::sync::Mutex<Box<dyn StoreSession>>,
    catalog_changed: bool,
    /// A snapshot read outside a multi-document transaction (`readConcern: snapshot`):
    /// cursors read their whole result in it, since later batches could not see the
    /// same snapshot.
    whole_results: bool,
    /// The transaction of one retryable write, not of several commands.
    single_write: bool,
    /// The capped collections (UUIDs) inserted into: their tailable cursors are woken once
    /// this transaction has committed (`take_capped_inserts`).
    capped_inserts: Vec<Vec<u8>>,
}

impl SessionTransaction {
    /// A multi-document transaction: snapshot reads, the write lock taken late (see
    /// `StoreSession::begin_snapshot`).
    pub async fn begin_snapshot(store: &dyn Store) -> Result<SessionTransaction, OpError> {
        let mut session = store.session().await?;
        session.begin_snapshot().await?;
        Ok(SessionTransaction {
            session: std::sync::Mutex::new(session),
            catalog_changed: false,
            whole_results: false,
            single_write: false,
            capped_inserts: Vec::new(),
        })
    }

    /// The transaction of one read at `readConcern: snapshot` outside a multi-document
    /// transaction: every document of its result read in one snapshot.
    pub async fn begin_snapshot_read(store: &dyn Store) -> Result<SessionTransaction, OpError> {
        let mut transaction = SessionTransaction::begin_snapshot(store).await?;
        transaction.whole_results = true;
        Ok(transaction)
    }

    /// The transaction of one retryable write: like an operation's own transaction, kept
    /// open so that the write's record joins it.
    pub async fn begin_write(store: &dyn Store) -> Result<SessionTransaction, OpError> {
        let mut session = store.session().await?;
        session.begin().await?;
        Ok(SessionTransaction {
            session: std::sync::Mutex::new(session),
            catalog_changed: false,
            whole_results: false,
            single_write: true,
            capped_inserts: Vec::new(),
        })
    }

    /// The capped collections this transaction inserted into, to announce once it has
    /// committed (`CappedInserts::announce`).
    pub fn take_capped_inserts(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.capped_inserts)
    }

    /// The session the statements run on.
    pub fn session(&mut self) -> &mut (dyn StoreSession + 'static) {
        self.session
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .as_mut()
    }

    /// Commits; then, if an operation in it changed metadata, invalidates the catalog.
    pub async fn commit(mut self, catalog: &Catalog) -> Result<(), OpError> {
        self.session().commit().await?;
        if self.catalog_changed {
            catalog.invalidate().await;
        }
        Ok(())
    }

    /// Rolls back everything the transaction wrote.
    pub async fn rollback(mut self) -> Result<(), OpError> {
        self.session().rollback().await?;
        Ok(())
    }
}

/// A store session for one operation's statements: a pooled one of its own, or the joined
/// transaction's.
pub enum ScopedSession<'s> {
    Pooled(Box<dyn StoreSession>),
    Joined(&'s mut (dyn StoreSession + 'static)),
}

impl AsMut<dyn StoreSession> for ScopedSession<'_> {
    /// The session to run statements on.
    fn as_mut(&mut self) -> &mut (dyn StoreSession + 'static) {
        match self {
            ScopedSession::Pooled(session) => session.as_mut(),
            ScopedSession::Joined(session) => &mut **session,
        }
    }
}

/// What an operation runs in: on its own, or joined to a session transaction.
pub struct OpScope<'s> {
    pub state: &'s AppState,
    joined: Option<&'s mut SessionTransaction>,
}

impl<'s> OpScope<'s> {
    /// Each write its own transaction, each read a pooled connection.
    pub fn autocommit(state: &'s AppState) -> OpScope<'s> {
        OpScope {
            state,
            joined: None,
        }
    }

    /// Every statement inside `transaction`.
    pub fn joined(state: &'s AppState, transaction: &'s mut SessionTransaction) -> OpScope<'s> {
        OpScope {
            state,
            joined: Some(transaction),
        }
    }

    /// Whether the operation runs inside a transaction that spans several commands.
    pub fn in_transaction(&self) -> bool {
        self.joined.is_some()
    }

    /// Whether the operation runs inside a transaction of several commands (a MongoDB
    /// multi-document transaction or a snapshot read), not a retryable write's own.
    pub fn in_multi_document_transaction(&self) -> bool {
        self.joined
            .as_ref()
            .is_some_and(|joined| !joined.single_write)
    }

    /// Wakes the tailable `awaitData` cursors of the capped collection `uuid` after an
    /// insert into it committed: at once on its own, or when the joined transaction commits
    /// (a retryable write's, whose commit comes after the operation).
    pub fn announce_capped_insert(&mut self, uuid: &[u8]) {
        match &mut self.joined {
            Some(joined) => joined.capped_inserts.push(uuid.to_vec()),
            None => self.state.capped_inserts.announce(uuid),
        }
    }

    /// Whether a cursor must read its whole result now (a snapshot read outside a
    /// multi-document transaction), rather than batch by batch later.
    pub fn reads_whole(&self) -> bool {
        self.joined
            .as_ref()
            .is_some_and(|joined| joined.whole_results)
    }

    /// The shared catalog.
    pub fn catalog(&self) -> &'s Catalog {
        &self.state.catalog
    }

    /// A store session for reads: the joined transaction's (its snapshot and its own
    /// writes), else a pooled one.
    pub async fn reader(&mut self) -> Result<ScopedSession<'_>, OpError> {
        Ok(match &mut self.joined {
            Some(transaction) => ScopedSession::Joined(transaction.session()),
            None => ScopedSession::Pooled(self.state.store.session().await?),
        })
    }

    /// The collection `db.name` with its indexes, if it exists — inside the joined
    /// transaction, as that transaction sees it (a collection it created is there).
    pub async fn collection_info(
        &mut self,
        db: &str,
        name: &str,
    ) -> Result<Option<Arc<CollectionInfo>>, OpError> {
        let catalog = &self.state.catalog;
        Ok(match &mut self.joined {
            Some(transaction) => {
                let committed = !transaction.catalog_changed;
                catalog
                    .collection_info_through(transaction.session(), db, name, committed)
                    .await?
            }
            None => catalog.collection_info(db, name).await?,
        })
    }

    /// The operation's transaction: its own (begun now), or the joined one.
    pub async fn begin(&mut self) -> Result<Transaction<'_>, OpError> {
        let catalog = &self.state.catalog;
        Ok(match &mut self.joined {
            Some(joined) => {
                let SessionTransaction {
                    session,
                    catalog_changed: joined_catalog_changed,
                    ..
                } = &mut **joined;
                let session = session
                    .get_mut()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                Transaction {
                    session: ScopedSession::Joined(session.as_mut()),
                    catalog,
                    catalog_changed: false,
                    joined_catalog_changed: Some(joined_catalog_changed),
                }
            }
            None => {
                let mut session = self.state.store.session().await?;
                session.begin().await?;
                Transaction {
                    session: ScopedSession::Pooled(session),
                    catalog,
                    catalog_changed: false,
                    joined_catalog_changed: None,
                }
            }
        })
    }
}

/// One operation's open transaction (see the module doc).
pub struct Transaction<'a> {
    session: ScopedSession<'a>,
    catalog: &'a Catalog,
    catalog_changed: bool,
    /// Joined: where the metadata change is handed on to.
    joined_catalog_changed: Option<&'a mut bool>,
}

impl<'a> Transaction<'a> {
    /// Checks out a store session and opens a transaction on it (an operation outside any
    /// session transaction: the TTL monitor, REST).
    pub async fn begin(
        store: &dyn Store,
        catalog: &'a Catalog,
    ) -> Result<Transaction<'a>, OpError> {
        let mut session = store.session().await?;
        session.begin().await?;
        Ok(Transaction {
            session: ScopedSession::Pooled(session),
            catalog,
            catalog_changed: false,
            joined_catalog_changed: None,
        })
    }

    /// The session the statements run on.
    pub fn session(&mut self) -> &mut (dyn StoreSession + 'static) {
        self.session.as_mut()
    }

    /// The shared catalog (metadata read inside the transaction goes through
    /// `Catalog::collection_info_in` with [`Transaction::session`]).
    pub fn catalog(&self) -> &'a Catalog {
        self.catalog
    }

    /// The collection `db.name` with its indexes as this transaction sees it (a collection
    /// it created is there); the committed catalog it reads is cached for everyone. A
    /// transaction writes, so a view is MongoDB's 166 CommandNotSupportedOnView.
    pub async fn collection_info(
        &mut self,
        db: &str,
        name: &str,
    ) -> Result<Option<Arc<CollectionInfo>>, OpError> {
        let found = self.any_collection_info(db, name).await?;
        if found
            .as_ref()
            .is_some_and(|info| super::views::is_view(&info.record))
        {
            return Err(super::views::not_a_collection(db, name));
        }
        Ok(found)
    }

    /// Like [`Transaction::collection_info`], views included (`$out` reports its own error).
    pub async fn any_collection_info(
        &mut self,
        db: &str,
        name: &str,
    ) -> Result<Option<Arc<CollectionInfo>>, OpError> {
        let committed = !self.catalog_changed
            && !self
                .joined_catalog_changed
                .as_deref()
                .copied()
                .unwrap_or(false);
        let catalog = self.catalog;
        Ok(catalog
            .collection_info_through(self.session.as_mut(), db, name, committed)
            .await?)
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
    /// the catalog version the store bumped in the same transaction). Joined: the session
    /// transaction commits later, and invalidates then.
    pub async fn commit(mut self) -> Result<(), OpError> {
        if let Some(joined) = self.joined_catalog_changed.take() {
            *joined |= self.catalog_changed;
            return Ok(());
        }
        self.session.as_mut().commit().await?;
        if self.catalog_changed {
            self.catalog.invalidate().await;
        }
        Ok(())
    }

    /// Rolls back everything the transaction wrote. Joined, nothing is undone here: the
    /// operation fails, and a failed operation aborts the whole session transaction.
    pub async fn rollback(mut self) -> Result<(), OpError> {
        if self.joined_catalog_changed.is_some() {
            return Ok(());
        }
        self.session.as_mut().rollback().await?;
        Ok(())
    }
}
