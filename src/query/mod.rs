//! The query core: MongoDB semantics over `bson::Document` in pure Rust — BSON comparison
//! order, `_id` key encoding, path traversal, filters, projection, sort, update operators,
//! aggregation expressions and a small aggregation pipeline. This is the reference semantics
//! that SQL pushdown must agree with.
//!
//! This file is the facade: the rest of the crate imports from `crate::query::{…}` only
//! ([`Filter`] / `parse` / `matches` / `try_matches`, [`upsert_seed`], [`Projection`],
//! [`SortSpec`], [`UpdateSpec`] with [`UpdateContext`], [`Pipeline`] with
//! [`ForeignDocuments`], [`IndexSpec`], [`encode_key`], [`compare_values`],
//! [`bson_type_name`], [`get_path`] and [`QueryError`], which carries MongoDB's code and code
//! name). The folders behind it are private and layered, each using only those before it:
//!
//! - `value/` — comparison order, numbers and decimals, byte keys, dotted paths, regexes,
//!   value sets; `error.rs` — [`QueryError`]; `sort.rs` — sort specifications;
//! - `expr/` — aggregation expressions, their variables and `ops/` by operator family;
//! - `filter/` — the filter AST, its parser, matching and positional `$`;
//! - `projection/`, `aggregate/` (accumulators, stages), `update/` (operators, paths,
//!   pipeline updates run through `aggregate`), `index/` (index specifications and keys);
//! - `validator.rs` — collection validators (`validator`, `validationLevel`,
//!   `validationAction`) and the details of error 121;
//! - `planner.rs`, `index_ranges.rs`, `scan.rs` — a filter, sort, skip and limit become a
//!   [`scan::ScanRequest`] (`scan.rs` is the pushdown vocabulary the store executes) plus a
//!   residual checked here in Rust. Nothing here performs I/O: the core (`ops/read.rs`) runs
//!   plans on a store session.
//!
//! Not for: SQL, wire protocol or command shapes.

mod aggregate;
mod collated_pushdown;
mod error;
mod expr;
mod filter;
mod index;
pub mod index_ranges;
pub mod memory;
pub mod planner;
mod projection;
#[cfg(test)]
mod robustness_tests;
pub mod scan;
mod sort;
pub mod spill;
pub mod text;
mod update;
pub mod validator;
mod value;

pub use aggregate::bucket_auto::BucketAutoInput;
pub use aggregate::stages::BucketGrouping;
pub use aggregate::{
    collectionless, counted, densify_stream, output as output_stage, sql_group, window_stream,
    Stage,
};
pub use aggregate::{Chain, ChainStep, ForeignDocuments, Grouping, Pipeline};
pub use error::QueryError;
pub use expr::{bind_variables, parse_with_variables};
pub use filter::{upsert_seed, FieldPredicate, Filter};
pub use index::{cannot_create, IndexSpec};
pub use projection::Projection;
pub use sort::{SortDirection, SortSpec};
pub use update::{UpdateContext, UpdateSpec};
pub use value::collation::Collation;
pub use value::compare::{bson_type_name, compare_values};
pub use value::keys::encode_key;
pub use value::path::get_path;
