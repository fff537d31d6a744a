//! MongoDB's `writeErrors` entries (`{index, code, errmsg}`, and for duplicate keys
//! `keyPattern` and `keyValue`): how a write statement that failed is described, on the wire
//! in a write reply and for REST in a conflict.
//!
//! Not for: errors that fail a whole command ([`OpError`] and its replies).

use bson::{doc, Bson, Document};

use super::OpError;
use crate::query::IndexSpec;

/// One `writeErrors` entry.
pub fn write_error(index: usize, code: i32, message: impl Into<String>) -> Document {
    doc! {"index": index as i32, "code": code, "errmsg": message.into()}
}

/// The E11000 `writeErrors` entry for a duplicate `_id`.
pub fn duplicate_id_error(index: usize, namespace: &str, id: &Bson) -> Document {
    let mut entry = write_error(
        index,
        11000,
        format!("E11000 duplicate key error collection: {namespace} index: _id_ dup key: {{ _id: {id} }}"),
    );
    entry.insert("keyPattern", doc! {"_id": 1});
    entry.insert("keyValue", doc! {"_id": id.clone()});
    entry
}

/// The `writeErrors` entry for a failed statement (a validation failure carries its
/// `errInfo`, between `code` and `errmsg` as MongoDB orders them).
pub fn command_write_error(index: usize, error: &OpError) -> Document {
    let message = match error {
        OpError::Store(store) => store.client_message(),
        other => other.to_string(),
    };
    if let OpError::DocumentValidationFailure(info) = error {
        return doc! {
            "index": index as i32,
            "code": error.code(),
            "errInfo": info.as_ref().clone(),
            "errmsg": message,
        };
    }
    write_error(index, error.code(), message)
}

/// The E11000 `writeErrors` entry for a unique secondary index: `keyPattern` is the index's
/// key pattern, `keyValue` the document's values at its fields.
pub fn duplicate_index_error(
    index: usize,
    namespace: &str,
    spec: &IndexSpec,
    document: &Document,
) -> Document {
    // The collated `_id` index of a collection with a default collation.
    if spec.is_id_index() {
        let id = document.get("_id").cloned().unwrap_or(Bson::Null);
        return duplicate_id_error(index, namespace, &id);
    }
    let mut key_value = Document::new();
    for (path, _) in &spec.fields {
        let value = crate::query::get_path(document, path)
            .cloned()
            .unwrap_or(Bson::Null);
        key_value.insert(path.clone(), value);
    }
    let mut entry = write_error(
        index,
        11000,
        format!(
            "E11000 duplicate key error collection: {namespace} index: {} dup key: {key_value}",
            spec.name
        ),
    );
    entry.insert("keyPattern", spec.key_pattern().clone());
    entry.insert("keyValue", key_value);
    entry
}
