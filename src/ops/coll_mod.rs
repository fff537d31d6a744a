//! `collMod`'s changes to a collection's indexes, for every front end: `hidden` (the index is
//! kept up to date and enforces its constraints, but the planner and `hint` never use it),
//! `expireAfterSeconds` (the TTL monitor reads it from the index's specification, so a
//! change takes effect on its next pass), and the conversion to a unique index MongoDB's way:
//! `prepareUnique: true` first (new duplicate keys are refused), then `unique: true`.
//!
//! `prepareUnique` is kept by a unique entries table: setting it rebuilds the index's entries
//! as unique in one transaction (the collection locked against writers meanwhile), which
//! refuses every new duplicate exactly, under concurrency too. MongoDB also keeps duplicates
//! that exist when the mode is set (and lists them at `unique: true`); docgate's storage
//! cannot hold those, so setting the mode over them is refused with the documents listed,
//! to be resolved first. `unique: true` then only rewrites the specification. The other
//! changes rewrite the index's recorded specification only; the entries are untouched.
//! A view's redefinition is `views::modify_view`.
//!
//! Not for: parsing the command (`mongo::commands::coll_mod`), the validator settings (the
//! validation core owns them).

use std::collections::HashMap;

use bson::{doc, Bson, Document};

use super::read;
use super::transaction::Transaction;
use super::OpError;
use crate::catalog::{CollectionIndex, CollectionInfo, NO_INDEXES};
use crate::query::planner::ReadPlan;
use crate::query::{encode_key, Filter, QueryError};
use crate::state::AppState;

/// Which index `collMod`'s `index` names.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexSelector {
    Name(String),
    KeyPattern(Document),
}

/// The options `collMod` changes on one index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexChange {
    pub hidden: Option<bool>,
    pub expire_after_seconds: Option<i64>,
    pub prepare_unique: Option<bool>,
    /// Only `true` (making an index non-unique is refused by the front end).
    pub unique: Option<bool>,
    /// `dryRun`: check the `unique: true` conversion, change nothing.
    pub dry_run: bool,
}

/// Document ids listed in the refusal of `prepareUnique` over duplicates, at most.
const LISTED_VIOLATIONS: usize = 10;

/// Largest `expireAfterSeconds` MongoDB accepts on a secondary TTL index.
const MAX_EXPIRE_AFTER_SECONDS: i64 = i32::MAX as i64;

fn invalid_options(message: impl Into<String>) -> OpError {
    OpError::InvalidOptions(message.into())
}

/// Applies `change` to the index of `info` that `selector` names and answers MongoDB's
/// reply fields (`hidden_old`/`_new`, `expireAfterSeconds_old`/`_new`, `prepareUnique_old`/
/// `_new`, `unique_new`); a change to what the index already is writes nothing, and a dry
/// run of `unique: true` only checks.
pub async fn modify_index(
    state: &AppState,
    info: &CollectionInfo,
    selector: &IndexSelector,
    change: &IndexChange,
) -> Result<Document, OpError> {
    let namespace = format!("{}.{}", info.record.db, info.record.name);
    let is_id = match selector {
        IndexSelector::Name(name) => name == "_id_",
        IndexSelector::KeyPattern(key) => key.len() == 1 && key.contains_key("_id"),
    };
    if is_id {
        let only_uniqueness = change.hidden.is_none() && change.expire_after_seconds.is_none();
        if only_uniqueness {
            // The `_id` index is unique: converting it is nothing.
            return Ok(Document::new());
        }
        if change.expire_after_seconds.is_some() {
            return Err(invalid_options(
                "the _id field does not support TTL indexes",
            ));
        }
        return Err(OpError::BadValue("can't hide _id index".into()));
    }
    let index = find_index(info, selector, &namespace)?;
    let mut spec = index.record.spec.clone();
    let mut reply = Document::new();
    let modifications = [
        change.hidden.is_some(),
        change.expire_after_seconds.is_some(),
        change.prepare_unique.is_some(),
        change.unique.is_some(),
    ]
    .into_iter()
    .filter(|given| *given)
    .count();
    let unique = index.spec.unique;
    let prepared = index.spec.prepare_unique();
    let switches_prepare = change
        .prepare_unique
        .is_some_and(|wanted| wanted != prepared && !unique);
    if switches_prepare && modifications > 1 {
        return Err(invalid_options(
            "prepareUnique cannot be combined with any other modification.",
        ));
    }
    if change.unique == Some(true) && !unique && !prepared {
        return Err(invalid_options(
            "Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first.",
        ));
    }
    if change.dry_run {
        if modifications > 1 {
            return Err(invalid_options(
                "unique: true cannot be combined with any other modification in dry run mode.",
            ));
        }
        // A prepared index's entries are unique already: nothing violates the conversion.
        return Ok(reply);
    }
    if let (true, Some(wanted)) = (switches_prepare, change.prepare_unique) {
        return rebuild_prepared(state, info, index, wanted).await;
    }
    if change.unique == Some(true) && !unique {
        spec.remove("prepareUnique");
        spec.insert("unique", true);
        reply.insert("unique_new", true);
    }
    if let Some(seconds) = change.expire_after_seconds {
        if !(0..=MAX_EXPIRE_AFTER_SECONDS).contains(&seconds) {
            return Err(invalid_options(format!(
                "TTL index 'expireAfterSeconds' option must be within an acceptable range \
                 [0, {MAX_EXPIRE_AFTER_SECONDS}], got {seconds}"
            )));
        }
        match spec.get("expireAfterSeconds") {
            None if index.spec.key_pattern().len() != 1 => {
                return Err(invalid_options(
                    "TTL indexes are single-field indexes, compound indexes do not support TTL",
                ))
            }
            None => {}
            Some(old)
                if !matches!(
                    old,
                    Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
                ) =>
            {
                return Err(invalid_options(
                    "existing expireAfterSeconds field is not a number",
                ))
            }
            Some(old) => {
                reply.insert("expireAfterSeconds_old", old.clone());
            }
        }
        reply.insert("expireAfterSeconds_new", seconds);
        spec.insert("expireAfterSeconds", seconds);
    }
    if let Some(hidden) = change.hidden {
        let was = index.spec.hidden();
        if was != hidden {
            reply.insert("hidden_old", was);
            reply.insert("hidden_new", hidden);
            if hidden {
                spec.insert("hidden", true);
            } else {
                spec.remove("hidden");
            }
        }
    }
    if spec == index.record.spec {
        return Ok(reply);
    }
    // The new specification must still be one createIndexes would take.
    crate::query::IndexSpec::parse(&spec).map_err(|e| invalid_options(e.message))?;
    let mut session = state.store.session().await?;
    session.set_index_spec(&index.record, &spec).await?;
    state.catalog.invalidate().await;
    Ok(reply)
}

/// Sets (`wanted`) or clears `prepareUnique` on `index`: its entries are rebuilt, unique or
/// not, in one transaction with the collection locked against writers. Setting it over keys
/// that already repeat is refused with the documents that hold them.
async fn rebuild_prepared(
    state: &AppState,
    info: &CollectionInfo,
    index: &CollectionIndex,
    wanted: bool,
) -> Result<Document, OpError> {
    let mut spec = index.record.spec.clone();
    if wanted {
        spec.insert("prepareUnique", true);
    } else {
        spec.remove("prepareUnique");
    }
    let parsed = crate::query::IndexSpec::parse(&spec).map_err(|e| invalid_options(e.message))?;
    let mut transaction = Transaction::begin(state.store.as_ref(), &state.catalog).await?;
    transaction
        .session()
        .lock_collection_for_index_build(&info.record)
        .await?;
    let plan = ReadPlan::new(Filter::And(Vec::new()), None, 0, None, NO_INDEXES);
    let documents = read::execute(transaction.session(), &info.record, &plan).await?;
    let (entries, multikey) = super::indexes::index_entries(&parsed, &documents)?;
    if wanted {
        let violations = repeated_keys(&entries, &documents);
        if !violations.is_empty() {
            transaction.rollback().await?;
            let listed: Vec<String> = violations
                .iter()
                .take(LISTED_VIOLATIONS)
                .map(|ids| {
                    let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
                    format!("[{}]", ids.join(", "))
                })
                .collect();
            return Err(OpError::NotSupported(format!(
                "docgate cannot set prepareUnique on index {} while documents share its keys                  (MongoDB keeps them until unique: true; docgate's unique entries cannot):                  resolve these first: {}{}",
                index.record.name,
                listed.join(", "),
                if violations.len() > LISTED_VIOLATIONS { ", ..." } else { "" }
            )));
        }
    }
    let session = transaction.session();
    session.drop_index(&index.record).await?;
    session
        .create_index(
            &info.record,
            &index.record.name,
            &spec,
            wanted,
            multikey || index.record.multikey,
            &entries,
        )
        .await?;
    transaction.changed_catalog();
    transaction.commit().await?;
    Ok(doc! {"prepareUnique_old": !wanted, "prepareUnique_new": wanted})
}

/// The `_id`s of the documents that share a key of an index, one group per repeated key, in
/// the order the keys were first seen.
fn repeated_keys(entries: &super::indexes::IndexEntries, documents: &[Document]) -> Vec<Vec<Bson>> {
    let ids: HashMap<Vec<u8>, &Bson> = documents
        .iter()
        .filter_map(|document| document.get("_id"))
        .map(|id| (encode_key(id), id))
        .collect();
    let mut holders: HashMap<&[u8], Vec<&[u8]>> = HashMap::new();
    let mut order: Vec<&[u8]> = Vec::new();
    for (document_key, keys) in entries {
        for key in keys {
            let held_by = holders.entry(key.as_slice()).or_default();
            if held_by.is_empty() {
                order.push(key.as_slice());
            }
            if !held_by.contains(&document_key.as_slice()) {
                held_by.push(document_key.as_slice());
            }
        }
    }
    order
        .into_iter()
        .filter_map(|key| holders.get(key))
        .filter(|held_by| held_by.len() > 1)
        .map(|held_by| {
            held_by
                .iter()
                .filter_map(|document_key| ids.get(*document_key).map(|id| (*id).clone()))
                .collect()
        })
        .collect()
}

/// The secondary index `selector` names: 27 IndexNotFound when none does, 181
/// AmbiguousIndexKeyPattern when a key pattern names several.
fn find_index<'a>(
    info: &'a CollectionInfo,
    selector: &IndexSelector,
    namespace: &str,
) -> Result<&'a CollectionIndex, OpError> {
    let not_found = |what: String| {
        OpError::Query(QueryError::coded(
            27,
            "IndexNotFound",
            format!("cannot find index {what} for ns {namespace}"),
        ))
    };
    match selector {
        IndexSelector::Name(name) => info
            .indexes
            .iter()
            .find(|index| &index.record.name == name)
            .ok_or_else(|| not_found(name.clone())),
        IndexSelector::KeyPattern(key) => {
            let matching: Vec<&CollectionIndex> = info
                .indexes
                .iter()
                .filter(|index| index.spec.key_pattern() == key)
                .collect();
            match matching.as_slice() {
                [one] => Ok(one),
                [] => Err(not_found(Bson::Document(key.clone()).to_string())),
                [first, second, ..] => Err(OpError::Query(QueryError::coded(
                    181,
                    "AmbiguousIndexKeyPattern",
                    format!(
                        "index keyPattern {key} matches {} indexes, must use index name. \
                         Conflicting indexes:{}, {}",
                        matching.len(),
                        first.record.spec,
                        second.record.spec
                    ),
                ))),
            }
        }
    }
}
