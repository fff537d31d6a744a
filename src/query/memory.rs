//! The memory limit of blocking stages. MongoDB lets a sort or a `$group` hold 100 MB; past
//! that it writes temporary files — by default since 6.0 (`allowDiskUseByDefault`) — unless
//! the command said `allowDiskUse: false`, which turns the overflow into 292
//! QueryExceededMemoryLimitNoDiskUseAllowed. The limit and where to spill travel with the
//! command's interrupt ([`crate::interrupt::blocking_memory`]): [`check_sort`] and
//! [`check_group`] answer 292 for a command that refused disk use; the stages that spill read
//! the directory from there (`crate::query::spill`); a `$setWindowFields` partition measures
//! itself and answers [`exceeded_without_disk_use`].
//!
//! Not for: the stages themselves, the temporary files (`crate::query::spill`), or the time
//! limit (`crate::interrupt`).

use bson::Document;

use crate::interrupt::Interruption;
use crate::query::error::QueryError;

/// MongoDB's limit for a blocking sort (`internalQueryMaxBlockingSortMemoryUsageBytes`) and
/// a `$group` (`internalDocumentSourceGroupMaxMemoryBytes`): 100 MiB.
pub const BLOCKING_STAGE_LIMIT: usize = 100 * 1024 * 1024;

/// A sort holding `bytes`: MongoDB's error when the command refused disk use and they are
/// too many.
pub fn check_sort(bytes: usize) -> Result<(), Interruption> {
    match refused_limit() {
        Some(limit) if bytes > limit => Err(Interruption::SortMemoryLimit),
        _ => Ok(()),
    }
}

/// A `$group` holding `bytes` of groups: MongoDB's error past the limit of a command that
/// refused disk use.
pub fn check_group(bytes: usize) -> Result<(), Interruption> {
    match refused_limit() {
        Some(limit) if bytes > limit => Err(Interruption::GroupMemoryLimit),
        _ => Ok(()),
    }
}

/// Whether a stage that does not spill must measure what it holds: the command refused
/// disk use, so past the limit it answers 292.
pub fn limited() -> bool {
    refused_limit().is_some()
}

/// MongoDB's 292 for `stage`, past the limit of a command that refused disk use, for a stage
/// that measures what it holds itself (a `$setWindowFields` partition).
pub fn exceeded_without_disk_use(stage: &str) -> QueryError {
    QueryError::coded(
        292,
        "QueryExceededMemoryLimitNoDiskUseAllowed",
        format!(
            "Exceeded memory limit for {stage}, but didn't allow external sort. Pass allowDiskUse:true to opt in."
        ),
    )
}

/// The document a `$facet` builds, `bytes` long: MongoDB's 4031700 past 100 MiB (the
/// command's limit when it set a smaller one), whatever `allowDiskUse` says — a `$facet`
/// does not spill.
pub fn check_facet_output(bytes: usize) -> Result<(), QueryError> {
    let limit = crate::interrupt::blocking_memory().map_or(BLOCKING_STAGE_LIMIT, |memory| {
        memory.bytes.min(BLOCKING_STAGE_LIMIT)
    });
    if bytes <= limit {
        return Ok(());
    }
    Err(QueryError::location(
        4031700,
        format!("document constructed by $facet is {bytes} bytes, which exceeds the limit of {limit} bytes"),
    ))
}

/// The limit of a command that refused disk use.
fn refused_limit() -> Option<usize> {
    crate::interrupt::blocking_memory()
        .filter(|memory| memory.spill_dir.is_none())
        .map(|memory| memory.bytes)
}

pub use crate::query::value::size::{document_size, value_size};

/// The size of `documents` encoded as BSON (what MongoDB counts for a sort).
pub fn documents_size(documents: &[Document]) -> usize {
    documents.iter().map(document_size).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::sync::Arc;

    #[test]
    fn no_limit_without_an_installed_one() {
        assert!(check_sort(usize::MAX).is_ok());
        let interrupt = crate::interrupt::Interrupt::new(None);
        interrupt.limit_blocking_memory(crate::interrupt::BlockingMemory {
            bytes: 10,
            spill_dir: None,
            spool_dir: None,
        });
        interrupt.install(|| {
            assert!(limited());
            assert!(check_sort(10).is_ok());
            assert_eq!(check_sort(11).unwrap_err().code(), 292);
            assert_eq!(check_group(11).unwrap_err().code(), 292);
        });
        assert!(!limited());
    }

    #[test]
    fn a_command_that_may_spill_is_not_refused() {
        let interrupt = crate::interrupt::Interrupt::new(None);
        let dir: Arc<Path> = Arc::from(std::env::temp_dir().as_path());
        interrupt.limit_blocking_memory(crate::interrupt::BlockingMemory {
            bytes: 10,
            spill_dir: Some(dir.clone()),
            spool_dir: None,
        });
        interrupt.install(|| {
            assert!(!limited());
            assert!(check_sort(11).is_ok());
            assert_eq!(
                crate::interrupt::blocking_memory().and_then(|memory| memory.spill_dir),
                Some(dir)
            );
        });
    }
}
