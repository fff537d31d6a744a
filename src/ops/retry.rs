//! The StaleCatalog retry every write gets, whichever front end runs it: another instance
//! changed a collection's indexes after this one planned the write from its cached catalog,
//! so the store wrote nothing and answered `StaleCatalog`; the catalog is re-read and the
//! write runs once more. A read whose first batch found its collection's table gone
//! (`CollectionReplacedBeforeRead`: dropped, renamed or replaced meanwhile) runs once more
//! the same way.
//!
//! Not for: detecting staleness (the store does, by comparing index keys).

use crate::catalog::Catalog;

/// An error that may say "planned from a stale catalog".
pub trait MaybeStaleCatalog {
    /// Whether the store refused the write because the catalog it was planned from is stale.
    fn is_stale_catalog(&self) -> bool;
}

impl MaybeStaleCatalog for crate::store::StoreError {
    fn is_stale_catalog(&self) -> bool {
        matches!(self, crate::store::StoreError::StaleCatalog(_))
    }
}

impl MaybeStaleCatalog for super::OpError {
    fn is_stale_catalog(&self) -> bool {
        match self {
            super::OpError::Store(store) => store.is_stale_catalog(),
            super::OpError::CollectionReplacedBeforeRead(_) => true,
            _ => false,
        }
    }
}

/// Whether a write's `result` says its catalog was stale; if so the catalog is invalidated
/// and the caller runs the write once more (a second failure is answered as it is):
///
/// ```ignore
/// let mut result = write().await;
/// if refreshed_after_stale(catalog, &result).await {
///     result = write().await;
/// }
/// ```
pub async fn refreshed_after_stale<T, E: MaybeStaleCatalog + std::fmt::Display>(
    catalog: &Catalog,
    result: &Result<T, E>,
) -> bool {
    match result {
        Err(error) if error.is_stale_catalog() => {
            tracing::debug!(%error, "retrying with a fresh catalog");
            catalog.invalidate().await;
            true
        }
        _ => false,
    }
}
