//! What a write command's reply is made of, as MongoDB writes it: counts (`n`,
//! `nModified`) as int32 when they fit, and `writeErrors` when there are any.
//!
//! Not for: the `writeErrors` entries themselves (`crate::ops::write_errors`).

use bson::{Bson, Document};

/// A count as MongoDB reports it: int32 when it fits, else int64.
pub fn count_bson(n: u64) -> Bson {
    match i32::try_from(n) {
        Ok(small) => Bson::Int32(small),
        Err(_) => Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX)),
    }
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
