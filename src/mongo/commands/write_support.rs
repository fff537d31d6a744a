//! What the commands share: checking out a store session, finding (or implicitly creating)
//! a collection inside the command's transaction, building cursor replies, and the
//! `writeErrors` entries of write commands.
//!
//! Not for: command-specific logic.

use std::collections::VecDeque;

use bson::{doc, Bson, Document, RawDocumentBuf};

use crate::catalog::{CollectionIndex, CollectionInfo};
use crate::mongo::cursors::Batch;
use crate::mongo::dispatch::{CommandContext, CommandReply};
use crate::mongo::error::{CommandError, ReplyResult};
use crate::mongo::namespace::check_collection_name;
use crate::mongo::request::{opt_document, opt_i64, CommandRequest};
use crate::query::index_spec::IndexSpec;
use crate::store::{DocumentIndexKeys, StoreSession, StoredDocument};
use std::sync::Arc;

/// A pooled store session for one command.
pub async fn open_session(
    context: &CommandContext<'_>,
) -> Result<Box<dyn StoreSession>, CommandError> {
    Ok(context.server.state.store.session().await?)
}

/// The collection `db.name` with its indexes, created if missing, inside the session's
/// open transaction. Returns whether it was created (the caller invalidates the catalog
/// after commit).
pub async fn collection_for_write(
    catalog: &crate::catalog::Catalog,
    session: &mut dyn StoreSession,
    db: &str,
    name: &str,
) -> Result<(Arc<CollectionInfo>, bool), CommandError> {
    if let Some(existing) = catalog.collection_info_in(session, db, name).await? {
        return Ok((existing, false));
    }
    check_collection_name(db, name)?;
    let created = |record| {
        Arc::new(CollectionInfo {
            record,
            indexes: Vec::new(),
        })
    };
    match session.create_collection(db, name, &Document::new()).await {
        Ok(record) => Ok((created(record), true)),
        Err(crate::store::StoreError::AlreadyExists(_)) => {
            // Created by someone else since our snapshot: read it inside this transaction.
            crate::catalog::read_snapshot(session)
                .await?
                .info(db, name)
                .cloned()
                .map(|info| (info, false))
                .ok_or_else(|| CommandError::NamespaceNotFound(format!("{db}.{name}")))
        }
        Err(other) => Err(other.into()),
    }
}

/// A cursor reply, encoded: `{cursor: {firstBatch|nextBatch: [...], id, ns}, ok: 1}`. The
/// batch's documents are copied in as they are, never decoded.
pub fn cursor_reply(namespace: &str, batch: Batch, first: bool) -> ReplyResult {
    let key = if first { "firstBatch" } else { "nextBatch" };
    encode_cursor_reply(key, &batch.documents, batch.cursor_id, namespace)
        .map(CommandReply::Encoded)
        .ok_or_else(|| {
            CommandError::DocumentTooLarge("the reply exceeds the BSON size limit".into())
        })
}

/// Writes `{cursor: {<batch_key>: [documents…], id, ns}, ok: 1.0}` in one pass into a buffer
/// of the final size (None only past 2 GiB, which a batch never reaches). bson's document
/// builders grow their buffer a push at a time and copy the batch once per nesting level:
/// for a batch of 100 documents of 200 bytes they cost ~1,500 instructions per document,
/// this a memcpy.
fn encode_cursor_reply(
    batch_key: &str,
    documents: &[RawDocumentBuf],
    cursor_id: i64,
    namespace: &str,
) -> Option<RawDocumentBuf> {
    let payload: usize = documents.iter().map(|d| d.as_bytes().len() + 8).sum();
    let mut out = Vec::with_capacity(payload + namespace.len() + 64);
    let reply = open_document(&mut out);
    put_element_name(&mut out, 0x03, "cursor");
    let cursor = open_document(&mut out);
    put_element_name(&mut out, 0x04, batch_key);
    let array = open_document(&mut out);
    for (index, document) in documents.iter().enumerate() {
        out.push(0x03);
        put_decimal(&mut out, index);
        out.push(0);
        out.extend_from_slice(document.as_bytes());
    }
    close_document(&mut out, array)?;
    put_element_name(&mut out, 0x12, "id");
    out.extend_from_slice(&cursor_id.to_le_bytes());
    put_element_name(&mut out, 0x02, "ns");
    out.extend_from_slice(&i32::try_from(namespace.len() + 1).ok()?.to_le_bytes());
    out.extend_from_slice(namespace.as_bytes());
    out.push(0);
    close_document(&mut out, cursor)?;
    put_element_name(&mut out, 0x01, "ok");
    out.extend_from_slice(&1.0f64.to_le_bytes());
    close_document(&mut out, reply)?;
    RawDocumentBuf::from_bytes(out).ok()
}

/// `n` in decimal ASCII: an array element's key (`format!` costs ~250 instructions a key).
fn put_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

/// Starts a document: a length placeholder; returns where it is.
fn open_document(out: &mut Vec<u8>) -> usize {
    out.extend_from_slice(&[0; 4]);
    out.len() - 4
}

/// Ends the document opened at `start`: the terminator, and its length written in.
fn close_document(out: &mut Vec<u8>, start: usize) -> Option<()> {
    out.push(0);
    let length = i32::try_from(out.len() - start).ok()?;
    out.get_mut(start..start + 4)?
        .copy_from_slice(&length.to_le_bytes());
    Some(())
}

/// An element's type byte and name (names here are constants without NUL bytes).
fn put_element_name(out: &mut Vec<u8>, element_type: u8, name: &str) {
    out.push(element_type);
    out.extend_from_slice(name.as_bytes());
    out.push(0);
}

/// Documents built by a command (projections, pipeline results, catalog entries) encoded for
/// a cursor; a document BSON cannot hold (a key with a NUL byte, say) is BadValue.
pub fn encode_documents(documents: &[Document]) -> Result<Vec<RawDocumentBuf>, CommandError> {
    documents
        .iter()
        .map(|document| {
            RawDocumentBuf::try_from(document).map_err(|error| {
                CommandError::BadValue(format!("a result document cannot be encoded: {error}"))
            })
        })
        .collect()
}

/// A whole result as a cursor reply: first batch now, the rest behind a cursor.
pub fn first_batch_reply(
    context: &CommandContext<'_>,
    request: &CommandRequest,
    namespace: &str,
    results: Vec<RawDocumentBuf>,
    batch_size: Option<usize>,
    single_batch: bool,
) -> ReplyResult {
    let owner = context.cursor_owner(request);
    let batch = context.server.cursors.first_batch(
        namespace,
        VecDeque::from(results),
        batch_size,
        single_batch,
        owner,
    );
    cursor_reply(namespace, batch, true)
}

/// `cursor: {batchSize: n}` of `aggregate`, `listCollections`, `listIndexes`.
pub fn cursor_batch_size(body: &Document) -> Result<Option<usize>, CommandError> {
    match opt_document(body, "cursor")? {
        Some(cursor) => match opt_i64(cursor, "batchSize")? {
            Some(n) if n < 0 => Err(CommandError::BadValue(
                "batchSize must be non-negative".into(),
            )),
            Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            None => Ok(None),
        },
        None => Ok(None),
    }
}

/// A count as MongoDB reports it: int32 when it fits, else int64.
pub fn count_bson(n: u64) -> Bson {
    match i32::try_from(n) {
        Ok(small) => Bson::Int32(small),
        Err(_) => Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX)),
    }
}

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

/// The `writeErrors` entry for a failed statement.
pub fn command_write_error(index: usize, error: &CommandError) -> Document {
    let message = match error {
        CommandError::Store(store) => store.client_message(),
        other => other.to_string(),
    };
    write_error(index, error.code(), message)
}

/// Adds `writeErrors` to a write reply when there are any.
pub fn with_write_errors(mut reply: Document, errors: Vec<Document>) -> Document {
    if !errors.is_empty() {
        reply.insert(
            "writeErrors",
            errors.into_iter().map(Bson::Document).collect::<Vec<_>>(),
        );
    }
    reply
}

/// Deepest nesting of documents and arrays MongoDB stores (the top-level document is 1).
pub const MAX_DOCUMENT_NESTING: usize = 100;

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
pub fn check_id(id: &Bson) -> Result<(), CommandError> {
    match id {
        Bson::Array(_) => Err(CommandError::BadValue("can't use an array for _id".into())),
        Bson::RegularExpression(_) => {
            Err(CommandError::BadValue("can't use a regex for _id".into()))
        }
        Bson::Undefined => Err(CommandError::BadValue(
            "can't use a undefined for _id".into(),
        )),
        _ => Ok(()),
    }
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
/// nesting checked, encoded, and its keys computed for every secondary index.
pub fn prepare_for_storage(
    document: Document,
    indexes: &[CollectionIndex],
) -> Result<PreparedDocument, CommandError> {
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
    if nesting_depth(&ordered) > MAX_DOCUMENT_NESTING {
        return Err(CommandError::BadValue(format!(
            "BSONObj exceeds maximum nested object depth: {MAX_DOCUMENT_NESTING}"
        )));
    }
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
        .map_err(|e| CommandError::BadValue(format!("cannot encode document: {e}")))?;
    let max = super::handshake::MAX_BSON_OBJECT_SIZE as usize;
    if bytes.len() > max {
        return Err(CommandError::DocumentTooLarge(format!(
            "object to insert too large. size in bytes: {}, max size: {max}",
            bytes.len()
        )));
    }
    let key = crate::query::keys::encode_key(&id);
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

/// Records in the store, inside the command's transaction, that the indexes at
/// `positions` became multikey. Returns whether any was marked (the catalog then needs
/// invalidating after commit).
pub async fn mark_multikey(
    session: &mut dyn StoreSession,
    indexes: &[CollectionIndex],
    positions: &std::collections::BTreeSet<usize>,
) -> Result<bool, CommandError> {
    for position in positions {
        if let Some(index) = indexes.get(*position) {
            session.mark_multikey(&index.record).await?;
        }
    }
    Ok(!positions.is_empty())
}

/// The E11000 `writeErrors` entry for a unique secondary index: `keyPattern` is the index's
/// key pattern, `keyValue` the document's values at its fields.
pub fn duplicate_index_error(
    index: usize,
    namespace: &str,
    spec: &IndexSpec,
    document: &Document,
) -> Document {
    let mut key_value = Document::new();
    for (path, _) in &spec.fields {
        let value = crate::query::path::get_path(document, path)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass encoder writes exactly what bson writes for the same document, for
    /// empty, small and multi-digit-index batches.
    #[test]
    fn cursor_replies_are_the_bson_of_the_same_document() {
        for count in [0usize, 1, 11, 120] {
            let documents: Vec<Document> = (0..count)
                .map(|i| doc! {"_id": i as i64, "s": "x".repeat(i % 7), "a": [1, {"b": null}]})
                .collect();
            let raw = encode_documents(&documents).unwrap();
            for (key, id, namespace) in [("firstBatch", 0i64, "db.c"), ("nextBatch", 77, "d.é x")]
            {
                let encoded = encode_cursor_reply(key, &raw, id, namespace).unwrap();
                let batch: Vec<Bson> = documents.iter().cloned().map(Bson::Document).collect();
                let expected = doc! {"cursor": {key: batch, "id": id, "ns": namespace}, "ok": 1.0};
                assert_eq!(encoded.as_bytes(), expected.to_vec().unwrap().as_slice());
            }
        }
    }
}
