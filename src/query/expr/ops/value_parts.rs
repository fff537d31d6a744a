//! Operators that read a part or a measure of one BSON value: $bsonSize (encoded size of a
//! document), $binarySize (bytes of a string or BinData), $tsSecond and $tsIncrement (the
//! halves of a Timestamp, as longs), $toObjectId, $toHashedIndexKey (through
//! `hashed_key.rs`; null hashes too), $rand (no argument: a double in [0, 1)) and
//! `{$meta: "textScore"}` (the score a `$text` read left on the document; 40218 without). Null and missing give null; a wrong type answers MongoDB's code (31393, 51276,
//! 5687301, 5687302; 241 ConversionFailure for $toObjectId).
//!
//! Not for: `$convert` with `onError`/`onNull` (`expr/mod.rs` around `convert.rs`) or the
//! parsing of `$rand`'s empty-object argument (`expr/parse_more.rs`).

use super::more::MoreOperator;
use super::operator::{misrouted, type_name};
use crate::query::error::QueryError;
use bson::Bson;

/// Applies the value-part operators to evaluated arguments.
pub(super) fn apply_more(
    op: MoreOperator,
    args: &[Option<Bson>],
) -> Result<Option<Bson>, QueryError> {
    if op == MoreOperator::Rand {
        return Ok(Some(Bson::Double(rand::random::<f64>())));
    }
    let value = args.first().and_then(Option::as_ref);
    if op == MoreOperator::TextScore {
        return match value {
            Some(score) => Ok(Some(score.clone())),
            None => Err(QueryError::location(
                40218,
                "query requires text score metadata, but it is not available",
            )),
        };
    }
    if op == MoreOperator::ToHashedIndexKey {
        return Ok(Some(Bson::Int64(super::hashed_key::hashed_index_key(
            value,
        )?)));
    }
    if matches!(value, None | Some(Bson::Null) | Some(Bson::Undefined)) {
        return Ok(Some(Bson::Null));
    }
    let wrong_type = |code: i32, what: &str| {
        QueryError::location(code, format!("{what}, found: {}", type_name(value)))
    };
    Ok(Some(match (op, value) {
        (MoreOperator::BsonSize, Some(Bson::Document(d))) => {
            let bytes = d
                .to_vec()
                .map_err(|e| QueryError::bad_value(format!("$bsonSize: {e}")))?;
            Bson::Int32(i32::try_from(bytes.len()).unwrap_or(i32::MAX))
        }
        (MoreOperator::BsonSize, _) => {
            return Err(wrong_type(31393, "$bsonSize requires a document input"))
        }
        (MoreOperator::BinarySize, Some(Bson::String(s))) => {
            Bson::Int32(i32::try_from(s.len()).unwrap_or(i32::MAX))
        }
        (MoreOperator::BinarySize, Some(Bson::Binary(b))) => {
            Bson::Int32(i32::try_from(b.bytes.len()).unwrap_or(i32::MAX))
        }
        (MoreOperator::BinarySize, _) => {
            return Err(wrong_type(
                51276,
                "$binarySize requires a string or BinData argument",
            ))
        }
        (MoreOperator::TsSecond, Some(Bson::Timestamp(ts))) => Bson::Int64(i64::from(ts.time)),
        (MoreOperator::TsIncrement, Some(Bson::Timestamp(ts))) => {
            Bson::Int64(i64::from(ts.increment))
        }
        (MoreOperator::TsSecond, _) => {
            return Err(wrong_type(
                5687301,
                "$tsSecond requires a timestamp argument",
            ))
        }
        (MoreOperator::TsIncrement, _) => {
            return Err(wrong_type(
                5687302,
                "$tsIncrement requires a timestamp argument",
            ))
        }
        (MoreOperator::ToObjectId, _) => {
            return crate::query::expr::ops::convert::convert_to(
                value,
                Some(&Bson::String("objectId".into())),
            )
        }
        _ => return Err(misrouted(op)),
    }))
}
