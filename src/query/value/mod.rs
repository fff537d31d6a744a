//! BSON values as MongoDB sees them, below every query concern: the total comparison order
//! ([`compare`]) and collations ([`collation`]), numbers across the four numeric types ([`number`], [`decimal`],
//! [`numeric_sum`]), order-preserving byte keys ([`keys`]), dotted paths ([`path`]), regular
//! expressions ([`regex_match`]), sets under MongoDB equality ([`value_set`]) and encoded
//! sizes ([`size`]).
//!
//! Not for: anything that parses a query, an expression or an update — those folders build
//! on this one, never the other way round.

pub mod collation;
mod collation_data;
pub mod compare;
pub mod decimal;
pub mod keys;
pub mod number;
pub mod numeric_sum;
pub mod path;
pub mod regex_match;
pub mod size;
#[cfg(test)]
pub mod test_values;
pub mod truthy;
pub mod value_set;
