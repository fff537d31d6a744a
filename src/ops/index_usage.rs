//! How often each index was chosen for an operation, for `$indexStats`' `accesses`: in memory,
//! per process, since the server started or the index was built (whichever is later), as
//! MongoDB keeps it. An access is one operation whose plan reads the index (to select
//! documents or to order them): a find, count, distinct, aggregate, update, delete or
//! findAndModify; `explain` plans without running and counts nothing.
//!
//! Also the names of the indexes a plan reads, which `explain` shows.
//!
//! Not for: choosing indexes (`query::planner`), or what `$indexStats` answers besides the
//! counts (the `aggregate` command).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::SystemTime;

use crate::catalog::CollectionInfo;
use crate::query::planner::ReadPlan;
use crate::store::{CollectionRecord, Predicate};

/// The name of the `_id` index.
pub const ID_INDEX: &str = "_id_";

/// One index's accesses: how many, and since when (`None`: since the server started).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Accesses {
    pub ops: u64,
    pub since: Option<SystemTime>,
}

/// One collection's accesses, by index name.
type ByIndexName = HashMap<String, Accesses>;

/// Accesses by collection UUID (a dropped and recreated collection starts afresh, a renamed
/// one keeps its counts), then by index name: two levels, so that counting an access to an
/// index already seen (every `_id` lookup) looks both up by reference, allocating nothing.
static ACCESSES: LazyLock<Mutex<HashMap<Vec<u8>, ByIndexName>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn collection_key(record: &CollectionRecord) -> &[u8] {
    &record.uuid
}

/// Counts one access to each index `plan` reads.
pub fn record(info: &CollectionInfo, plan: &ReadPlan) {
    let names = chosen_indexes(plan, info);
    if names.is_empty() {
        return;
    }
    let Ok(mut accesses) = ACCESSES.lock() else {
        return;
    };
    let uuid = collection_key(&info.record);
    if !accesses.contains_key(uuid) {
        accesses.insert(uuid.to_vec(), ByIndexName::new());
    }
    let Some(by_name) = accesses.get_mut(uuid) else {
        return;
    };
    for name in names {
        match by_name.get_mut(&name) {
            Some(counted) => counted.ops += 1,
            None => by_name.entry(name).or_default().ops += 1,
        }
    }
}

/// An index of `collection` was built now: its count starts again at zero.
pub fn built(collection: &CollectionRecord, index: &str) {
    if let Ok(mut accesses) = ACCESSES.lock() {
        accesses
            .entry(collection_key(collection).to_vec())
            .or_default()
            .insert(
                index.to_string(),
                Accesses {
                    ops: 0,
                    since: Some(SystemTime::now()),
                },
            );
    }
}

/// The accesses of one index of `info`.
pub fn accesses(info: &CollectionInfo, index: &str) -> Accesses {
    ACCESSES
        .lock()
        .ok()
        .and_then(|accesses| {
            accesses
                .get(collection_key(&info.record))
                .and_then(|by_name| by_name.get(index))
                .copied()
        })
        .unwrap_or_default()
}

/// The names of the indexes `plan` reads, the one that selects first: those its predicate
/// searches, the one that orders the scan, and `_id_` for a scan in `_id` order.
pub fn chosen_indexes(plan: &ReadPlan, info: &CollectionInfo) -> Vec<String> {
    let mut names = Vec::new();
    searched_indexes(&plan.scan.filter, info, &mut names);
    if let Some(table) = &plan.scan.order_index {
        if let Some(index) = info.indexes.iter().find(|i| &i.record.table == table) {
            if !names.contains(&index.record.name) {
                names.push(index.record.name.clone());
            }
        }
    }
    if plan.scan.order.is_some()
        && plan.scan.order_index.is_none()
        && !names.iter().any(|n| n == ID_INDEX)
    {
        names.push(ID_INDEX.to_string());
    }
    names
}

/// The index names a predicate searches, in order of appearance.
fn searched_indexes(predicate: &Predicate, info: &CollectionInfo, out: &mut Vec<String>) {
    let mut add = |name: String| {
        if !out.contains(&name) {
            out.push(name);
        }
    };
    match predicate {
        Predicate::KeyEquals(_) | Predicate::KeyIn(_) | Predicate::KeyRange { .. } => {
            add(ID_INDEX.to_string())
        }
        Predicate::IndexRange { table, .. } | Predicate::TextTerms { table, .. } => {
            if let Some(index) = info.indexes.iter().find(|i| &i.record.table == table) {
                add(index.record.name.clone());
            }
        }
        Predicate::And(parts) | Predicate::Or(parts) => {
            for part in parts {
                searched_indexes(part, info, out);
            }
        }
        Predicate::True | Predicate::PathEquals { .. } | Predicate::PathRange { .. } => {}
    }
}
