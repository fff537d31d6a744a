//! Index-ordered scans and query plans of secondary indexes: `order_index` returns documents
//! in index key order (ascending, descending, with skip and limit) without a sort step, and
//! `IndexRange` is served by the entries table (invariant 3). Indexes survive reopening.
