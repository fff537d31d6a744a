//! A document made ready to store, as MongoDB checks it before an insert, a replacement or
//! an upsert: `_id` first (an ObjectId added when missing) and of an allowed type, nesting
//! and size within the limits ([`DocumentLimits`]: MongoDB's, or lower ones the operator
//! set), encoded, and its keys computed for every secondary
//! index of the collection.
//!
//! Not for: writing it (the store) or the statement around it (`update`, the front ends).

use bson::{Bson, Document};

use super::validation::ValidationCheck;
use super::OpError;
use crate::catalog::CollectionIndex;
use crate::store::{DocumentIndexKeys, StoredDocument};

/// Largest document MongoDB stores (`maxBsonObjectSize`, 16 MiB).
pub const MAX_BSON_OBJECT_SIZE: i32 = 16 * 1024 * 1024;

/// Deepest nesting of documents and arrays MongoDB stores (the top-level document is 1).
pub const MAX_DOCUMENT_NESTING: usize = 100;

/// The size and nesting a stored document may have (`--max-document-bytes`,
/// `--max-nesting-depth`): MongoDB's limits unless the operator set lower ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocumentLimits {
    /// Largest encoded document (`maxBsonObjectSize` in `hello`).
    pub max_bytes: usize,
    /// Deepest nesting of documents and arrays.
    pub max_depth: usize,
}

impl Default for DocumentLimits {
    fn default() -> Self {
        DocumentLimits {
            max_bytes: MAX_BSON_OBJECT_SIZE as usize,
            max_depth: MAX_DOCUMENT_NESTING,
        }
    }
}

/// Depth of the deepest embedded document or array (iterative: input may be deep).
pub fn nesting_depth(document: &Document) -> usize {
    let mut deepest = 1;
    let mut stack: Vec<(&Bson, usize)> = document.values().map(|v| (v, 2)).collect();
    while let Some((value, depth)) = stack.pop() {
        match value {
            Bson::Document(inner) => {
                deepest = deepest.max(depth);
                stack.extend(inner.values().map(|v| (v, depth + 1)));
            }
            Bson::Array(items) => {
                deepest = deepest.max(depth);
                stack.extend(items.iter().map(|v| (v, depth + 1)));
            }
            _ => {}
        }
    }
    deepest
}

/// Checks an `_id` value as MongoDB does before storing it.
pub fn check_id(id: &Bson) -> Result<(), OpError> {
    match id {
        Bson::Array(_) => Err(OpError::BadValue("can't use an array for _id".into())),
        Bson::RegularExpression(_) => Err(OpError::BadValue("can't use a regex for _id".into())),
        Bson::Undefined => Err(OpError::BadValue("can't use a undefined for _id".into())),
        Bson::Document(fields) => check_id_fields(fields),
        _ => Ok(()),
    }
}

/// MongoDB's storage rule for an `_id` document: no `$`-prefixed field at any depth (a DBRef's
/// `$ref`, `$id` and `$db` excepted), 52 DollarPrefixedFieldName.
fn check_id_fields(fields: &Document) -> Result<(), OpError> {
    for (name, value) in fields {
        if name.starts_with('$') && !matches!(name.as_str(), "$ref" | "$id" | "$db") {
            return Err(crate::query::QueryError::dollar_prefixed_field(format!(
                "_id fields may not contain '$'-prefixed fields: {name} is not valid for storage."
            ))
            .into());
        }
        match value {
            Bson::Document(inner) => check_id_fields(inner)?,
            Bson::Array(items) => {
                for item in items {
                    if let Bson::Document(inner) = item {
                        check_id_fields(inner)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// A document ready to write.
pub struct PreparedDocument {
    pub stored: StoredDocument,
    pub id: Bson,
    /// Positions (in the collection's index list) of indexes this document makes multikey
    /// for the first time.
    pub new_multikey: Vec<usize>,
}

/// Makes a document ready to store: `_id` first (an ObjectId added when missing), size and
/// nesting checked, validated against its collection's validator as `validation` says,
/// encoded, and its keys computed for every secondary index.
pub fn prepare_for_storage(
    document: Document,
    indexes: &[CollectionIndex],
    limits: DocumentLimits,
    validation: &ValidationCheck<'_>,
) -> Result<PreparedDocument, OpError> {
    let mut ordered = Document::new();
    let id = match document.get("_id") {
        Some(id) => id.clone(),
        None => Bson::ObjectId(bson::oid::ObjectId::new()),
    };
    check_id(&id)?;
    ordered.insert("_id", id.clone());
    for (key, value) in document {
        if key != "_id" {
            ordered.insert(key, value);
        }
    }
    if nesting_depth(&ordered) > limits.max_depth {
        return Err(OpError::BadValue(format!(
            "BSONObj exceeds maximum nested object depth: {}",
            limits.max_depth
        )));
    }
    validation.check(&ordered)?;
    let mut index_keys = Vec::with_capacity(indexes.len());
    let mut new_multikey = Vec::new();
    for (position, index) in indexes.iter().enumerate() {
        let entries = index.spec.entries(&ordered)?;
        if entries.as_ref().is_some_and(|e| e.multikey) && !index.record.multikey {
            new_multikey.push(position);
        }
        index_keys.push(DocumentIndexKeys {
            table: index.record.table.clone(),
            index: index.record.name.clone(),
            unique: index.record.unique,
            keys: entries.map(|e| e.keys).unwrap_or_default(),
        });
    }
    let bytes = ordered
        .to_vec()
        .map_err(|e| OpError::BadValue(format!("cannot encode document: {e}")))?;
    let max = limits.max_bytes;
    if bytes.len() > max {
        return Err(OpError::DocumentTooLarge(format!(
            "object to insert too large. size in bytes: {}, max size: {max}",
            bytes.len()
        )));
    }
    let key = crate::query::encode_key(&id);
    Ok(PreparedDocument {
        stored: StoredDocument {
            key,
            bson: bytes,
            index_keys,
        },
        id,
        new_multikey,
    })
}
