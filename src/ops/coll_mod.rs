//! `collMod`'s changes to a collection's indexes, for every front end: `hidden` (the index is
//! kept up to date and enforces its constraints, but the planner and `hint` never use it)
//! and `expireAfterSeconds` (the TTL monitor reads it from the index's specification, so a
//! change takes effect on its next pass). Each change rewrites the index's recorded
//! specification in one catalog change; the entries are untouched. A view's redefinition
//! is `views::modify_view`.
//!
//! Not for: parsing the command (`mongo::commands::coll_mod`), the validator settings (the
//! validation core owns them), converting an index to unique (refused until docgate has a
//! `prepareUnique` mode that stops new duplicates).

use bson::{Bson, Document};

use super::OpError;
use crate::catalog::{CollectionIndex, CollectionInfo};
use crate::query::QueryError;
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
}

/// Largest `expireAfterSeconds` MongoDB accepts on a secondary TTL index.
const MAX_EXPIRE_AFTER_SECONDS: i64 = i32::MAX as i64;

fn invalid_options(message: impl Into<String>) -> OpError {
    OpError::InvalidOptions(message.into())
}

/// Applies `change` to the index of `info` that `selector` names and answers MongoDB's
/// reply fields (`hidden_old`/`hidden_new`, `expireAfterSeconds_old`/`_new`); a change to
/// what the index already is writes nothing.
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
