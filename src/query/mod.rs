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
//! The planner ([`planner`]) is the one part that talks to the store: it turns a filter,
//! sort, skip and limit into a store `ScanRequest` plus a residual checked here in Rust.
//!
//! Not for: SQL, wire protocol or command shapes.

pub mod aggregate;
pub mod error;
pub mod expr;
pub mod filter;
pub mod index;
pub mod index_ranges;
pub mod planner;
pub mod projection;
#[cfg(test)]
mod robustness_tests;
pub mod sort;
pub mod ttl;
pub mod update;
pub mod value;

pub use aggregate::{ForeignDocuments, Pipeline};
pub use error::QueryError;
pub use filter::{upsert_seed, Filter};
pub use index::IndexSpec;
pub use projection::Projection;
pub use sort::SortSpec;
pub use update::{UpdateContext, UpdateSpec};
pub use value::compare::{bson_type_name, compare_values};
pub use value::keys::encode_key;
pub use value::path::get_path;
