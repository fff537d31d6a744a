//! Aggregation truthiness of a value, shared by expressions (`$and`, `$cond`, `$filter`, …),
//! `$expr` in filters and conversions to bool.
//!
//! Not for: the truthiness of `$exists` and projection flags (`filter::truthy`).

use crate::query::value::number::{exact_value, Number};
use bson::Bson;

/// Aggregation truthiness: false, null, undefined, missing and numeric zero are false.
pub fn truthy(v: &Bson) -> bool {
    match v {
        Bson::Boolean(b) => *b,
        Bson::Null | Bson::Undefined => false,
        Bson::Int32(i) => *i != 0,
        Bson::Int64(i) => *i != 0,
        Bson::Double(d) => *d != 0.0,
        Bson::Decimal128(_) => Number::from_bson(v)
            .and_then(exact_value)
            .map(|x| !x.is_zero())
            .unwrap_or(true),
        _ => true,
    }
}
