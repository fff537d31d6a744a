//! Cursor replies as the cursor commands (`find`, `aggregate`, `getMore`, `listCollections`,
//! `listIndexes`) send them: encoded in one pass from the stored bytes, a whole result put
//! behind a cursor after its first batch, and the `cursor.batchSize` argument.
//!
//! Not for: keeping cursors between batches (`crate::ops::cursors`).

use bson::{Document, RawDocumentBuf};

use crate::mongo::context::CommandContext;
use crate::mongo::dispatch::CommandReply;
use crate::mongo::error::{OpError, ReplyResult};
use crate::mongo::request::{opt_i64, CommandRequest};
use crate::ops::cursors::{Batch, BatchOptions};

/// A cursor reply, encoded: `{cursor: {firstBatch|nextBatch: [...], id, ns}, ok: 1}`. The
/// batch's documents are copied in as they are, never decoded.
pub fn cursor_reply(namespace: &str, batch: Batch, first: bool) -> ReplyResult {
    let key = if first { "firstBatch" } else { "nextBatch" };
    encode_cursor_reply(key, &batch.documents, batch.cursor_id, namespace)
        .map(CommandReply::Encoded)
        .ok_or_else(|| OpError::DocumentTooLarge("the reply exceeds the BSON size limit".into()))
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

pub use crate::ops::find::encode_documents;

/// A whole result as a cursor reply: first batch now, the rest behind a cursor.
pub fn first_batch_reply(
    context: &CommandContext<'_>,
    request: &CommandRequest,
    namespace: &str,
    results: Vec<RawDocumentBuf>,
    options: BatchOptions,
) -> ReplyResult {
    let owner = context.cursor_owner(request);
    let batch = context
        .server
        .cursors
        .first_batch(namespace, results, options, owner)?;
    cursor_reply(namespace, batch, true)
}

/// `cursor: {batchSize: n}` of `aggregate`, `listCollections`, `listIndexes`.
pub fn cursor_batch_size(cursor: Option<&Document>) -> Result<Option<usize>, OpError> {
    match cursor {
        Some(cursor) => match opt_i64(cursor, "batchSize")? {
            Some(n) if n < 0 => Err(OpError::BadValue("batchSize must be non-negative".into())),
            Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            None => Ok(None),
        },
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, Bson};

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
