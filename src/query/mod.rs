//! The query core: MongoDB semantics over `bson::Document` in pure Rust — BSON comparison
//! order, `_id` key encoding, path traversal, filters, projection, sort, update operators,
//! aggregation expressions and a small aggregation pipeline. This is the reference semantics
//! that SQL pushdown must agree with.
//!
//! Entry points: [`filter::Filter::parse`] / `matches` / `try_matches`,
//! [`filter::upsert_seed`], [`projection::Projection::parse`] / `apply` / `apply_with_query`
//! (positional `a.$`), [`sort::SortSpec`], [`update::UpdateSpec`] (with
//! [`update::UpdateContext`] for `$`, `$[]` and array filters),
//! [`aggregate::Pipeline`] (`run`, or `run_with` the foreign collections that `$lookup` and
//! `$unionWith` read), [`expr::Expression`], [`keys::encode_key`] / [`keys::index_keys`],
//! [`compare::compare_values`], [`value_set::ValueSet`] (hashing under MongoDB equality) and
//! [`positional::matched_array_position`]. Every error is a
//! [`QueryError`] carrying MongoDB's code and code name.
//!
//! The planner ([`planner`]) turns a filter, sort, skip and limit into a
//! [`scan::ScanRequest`] the store evaluates plus a residual checked in Rust. Nothing here
//! performs I/O: the core (`ops/read.rs`) runs plans on a store session.
//!
//! Not for: SQL, wire protocol or command shapes.

pub mod accumulate;
pub mod aggregate;
pub mod aggregate_stages;
#[cfg(test)]
mod aggregate_tests;
pub mod compare;
pub mod decimal;
pub mod error;
pub mod expr;
pub mod expr_convert;
pub mod expr_date_math;
pub mod expr_dates;
pub mod expr_more;
pub mod expr_ops;
pub mod expr_parse;
#[cfg(test)]
mod expr_tests;
pub mod filter;
pub mod filter_eval;
#[cfg(test)]
mod filter_tests;
pub mod index_ranges;
pub mod index_spec;
pub mod keys;
pub mod number;
pub mod numeric_sum;
pub mod path;
pub mod planner;
pub mod positional;
pub mod projection;
mod projection_apply;
pub mod regex_match;
#[cfg(test)]
mod robustness_tests;
pub mod scan;
pub mod sort;
#[cfg(test)]
mod test_values;
pub mod update;
pub mod update_ops;
pub mod update_path;
pub mod value_set;

pub use error::QueryError;
