//! Document validation for every write: a document about to be stored is judged against its
//! collection's validator (compiled once, kept by the catalog with the collection) as MongoDB
//! 7.0 judges it — `validationLevel` `strict` (every insert and update), `moderate` (an update
//! of a document that already failed is let through), `off`; `validationAction` `error`
//! (121 DocumentValidationFailure with `errInfo`) or `warn` (a log line, the write goes on);
//! `bypassDocumentValidation: true` skips it. `prepare::prepare_for_storage`, which every
//! write path goes through, takes a [`ValidationCheck`], so no path can skip it unnoticed.
//!
//! Also here: changing a collection's validation options ([`set_validation_options`]), with
//! the checks `create` applies ([`validation_options`]).
//!
//! Not for: the validator's semantics and its error details (`query::validator`), or who may
//! bypass validation (the front ends' authorization).

use bson::{Bson, Document};

use super::transaction::Transaction;
use super::OpError;
use crate::catalog::CollectionInfo;
use crate::query::validator::{CollectionValidator, ValidationAction, ValidationLevel};
use crate::state::AppState;

/// Whether a write is validated (`bypassDocumentValidation` of the write commands).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocumentValidation {
    /// The collection's validator applies (the default).
    Enforce,
    /// `bypassDocumentValidation: true` (its privilege checked by the front end).
    Bypass,
}

impl DocumentValidation {
    /// From the command's `bypassDocumentValidation` flag.
    pub fn from_bypass_flag(bypass: bool) -> DocumentValidation {
        if bypass {
            DocumentValidation::Bypass
        } else {
            DocumentValidation::Enforce
        }
    }
}

/// How one document being written is validated.
pub struct ValidationCheck<'a> {
    /// The collection written to, when its validator applies.
    collection: Option<&'a CollectionInfo>,
    /// The document before an update (`validationLevel: "moderate"` looks at it).
    original: Option<&'a Document>,
}

impl<'a> ValidationCheck<'a> {
    /// A new document (insert, upsert, `$out`, a `$merge` insert) into `collection` (none:
    /// a collection that does not exist yet, which has no validator).
    pub fn new_document(
        collection: Option<&'a CollectionInfo>,
        validation: DocumentValidation,
    ) -> ValidationCheck<'a> {
        ValidationCheck {
            collection: collection.filter(|_| validation == DocumentValidation::Enforce),
            original: None,
        }
    }

    /// A document of `collection` that was `original` before an update.
    pub fn updated_document(
        collection: &'a CollectionInfo,
        validation: DocumentValidation,
        original: &'a Document,
    ) -> ValidationCheck<'a> {
        ValidationCheck {
            collection: (validation == DocumentValidation::Enforce).then_some(collection),
            original: Some(original),
        }
    }

    /// Judges `document` (as it will be stored, `_id` first): Ok when it may be written.
    pub fn check(&self, document: &Document) -> Result<(), OpError> {
        let Some(collection) = self.collection else {
            return Ok(());
        };
        let Some(validator) = collection.validator.as_deref() else {
            return Ok(());
        };
        if validator.admits(document) {
            return Ok(());
        }
        if validator.level == ValidationLevel::Moderate
            && self
                .original
                .is_some_and(|original| !validator.admits(original))
        {
            return Ok(());
        }
        let info = validator.error_info(document);
        match validator.action {
            ValidationAction::Error => Err(OpError::DocumentValidationFailure(Box::new(info))),
            ValidationAction::Warn => {
                tracing::warn!(
                    namespace = %format!("{}.{}", collection.record.db, collection.record.name),
                    document_id = %document.get("_id").cloned().unwrap_or(Bson::Null),
                    err_info = %info,
                    "Document would fail validation"
                );
                Ok(())
            }
        }
    }
}

/// The validation options of a `create` (or `collMod`) command, checked: `validator` an
/// object that parses as a validator (none of the operators MongoDB refuses there), in a
/// database that allows validators, `validationLevel` and `validationAction` among MongoDB
/// 7.0's values. Answers the options to keep, in MongoDB's order; with a validator, the
/// level and action are filled in with their defaults, as MongoDB shows them.
pub fn validation_options(
    command: &str,
    db: &str,
    name: &str,
    validator: Option<&Document>,
    level: Option<&Bson>,
    action: Option<&Bson>,
) -> Result<Document, OpError> {
    let mut options = Document::new();
    let level = level
        .map(|value| ValidationLevel::parse(command, value).map(|_| value.clone()))
        .transpose()?;
    let action = action
        .map(|value| ValidationAction::parse(command, value).map(|_| value.clone()))
        .transpose()?;
    if let Some(validator) = validator {
        if !validator.is_empty()
            && (matches!(db, "admin" | "local" | "config") || name.starts_with("system."))
        {
            return Err(OpError::InvalidOptions(format!(
                "Document validators not allowed on system collection {db}.{name}"
            )));
        }
        CollectionValidator::parse_validator(validator)?;
        options.insert("validator", validator.clone());
        if !validator.is_empty() {
            options.insert(
                "validationLevel",
                level.clone().unwrap_or_else(|| Bson::from("strict")),
            );
            options.insert(
                "validationAction",
                action.clone().unwrap_or_else(|| Bson::from("error")),
            );
        }
    }
    if let Some(level) = level {
        options
            .entry("validationLevel".to_string())
            .or_insert(level);
    }
    if let Some(action) = action {
        options
            .entry("validationAction".to_string())
            .or_insert(action);
    }
    Ok(options)
}

/// Changes the validation options of `db.name` (what `collMod` does with `validator`,
/// `validationLevel` and `validationAction`): the given ones replace the collection's, checked
/// as `create` checks them, in one transaction that bumps the catalog version, so every
/// instance compiles the new validator on its next write. Documents already stored are not
/// re-checked (MongoDB does not either). 26 NamespaceNotFound when the collection is missing.
pub async fn set_validation_options(
    state: &AppState,
    db: &str,
    name: &str,
    validator: Option<&Document>,
    level: Option<&Bson>,
    action: Option<&Bson>,
) -> Result<(), OpError> {
    let changes = validation_options("collMod", db, name, validator, level, action)?;
    let mut transaction = Transaction::begin(state.store.as_ref(), &state.catalog).await?;
    let Some(info) = transaction.collection_info(db, name).await? else {
        transaction.rollback().await?;
        return Err(OpError::NamespaceNotFound(format!(
            "ns does not exist: {db}.{name}"
        )));
    };
    let mut options = info.record.options.clone();
    if validator.is_some_and(Document::is_empty) {
        options.remove("validator");
    }
    for (key, value) in changes {
        if key == "validator" && value.as_document().is_some_and(Document::is_empty) {
            continue;
        }
        options.insert(key, value);
    }
    // The options must still compile as a whole (a level given alone meets the validator
    // already there).
    CollectionValidator::from_options(&options)?;
    transaction
        .session()
        .set_collection_options(&info.record, &options)
        .await?;
    transaction.changed_catalog();
    transaction.commit().await
}

#[cfg(test)]
#[path = "validation_tests.rs"]
mod tests;
