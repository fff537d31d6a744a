//! The pushdown vocabulary: what the query planner may ask a backend to evaluate in SQL.
//! Predicates are about keys and JSON paths, not MongoDB operators; the planner
//! (`planner.rs`) translates a MongoDB filter into them and keeps whatever cannot be
//! expressed exactly as a residual that Rust re-checks. The store consumes these types (and
//! re-exports them); they live here because the planner builds them and `query` must not
//! depend on the store.
//!
//! Not for: SQL text (each backend writes its own from these) or choosing what to push.

/// A scalar value compared against a field of the queryable image.
#[derive(Clone, Debug, PartialEq)]
pub enum PathValue {
    String(String),
    /// Any BSON number (int, long, double) that is finite; compared numerically.
    Number(f64),
    Bool(bool),
}

/// A filter the store evaluates in SQL.
#[derive(Clone, Debug, PartialEq)]
pub enum Predicate {
    /// Every document.
    True,
    /// `_id` key equals (exact; served by the `_id` index).
    KeyEquals(Vec<u8>),
    /// `_id` key is one of (exact; served by the `_id` index).
    KeyIn(Vec<Vec<u8>>),
    /// `_id` key within the bounds, bytewise (exact: `_id` is never an array, so the keys in
    /// a comparison's range are exactly the documents it matches; served by the `_id` index).
    KeyRange {
        lower: Option<IndexBound>,
        upper: Option<IndexBound>,
    },
    /// Some value at `path` (field names, no numeric components) equals `value` by MongoDB
    /// equality, where any array along the path is traversed. OVER-SELECTS: the store may
    /// return every document in which any prefix of the path is an array, and may treat
    /// `true` like `1`. The caller always re-checks it.
    PathEquals {
        path: Vec<String>,
        value: PathValue,
    },
    /// Some value at `path` (field names, no numeric components) of `value`'s kind — a
    /// number for a number, a date for a date — lies on `side` of `value`, bound included
    /// (a strict `$gt`/`$lt` is pushed inclusive: an image number may be the nearest double
    /// of a long or a decimal, so only the inclusive bound never misses a match), where any
    /// array along the path is traversed. OVER-SELECTS: the store may return every document
    /// in which any prefix of the path is an array, or whose value at the path is an object
    /// (non-finite numbers are tagged objects in the image). The caller always re-checks it.
    PathRange {
        path: Vec<String>,
        side: RangeSide,
        value: RangeValue,
    },
    /// Documents with at least one entry in the secondary index stored in `table` (an
    /// `IndexRecord::table`) within the bounds (bytewise on the index key). Exact.
    IndexRange {
        table: String,
        lower: Option<IndexBound>,
        upper: Option<IndexBound>,
    },
    /// Documents with an entry in the text index stored in `table` that holds one of
    /// `tokens` as a word, found by the backend's full-text engine (SQLite FTS5, PostgreSQL
    /// `tsvector` and GIN). An entry is space-separated words of ASCII letters and digits
    /// (`query::text::tokenize::engine_token`), so every engine splits it the same way.
    /// Exact for the tokens; no tokens selects nothing. The caller re-checks the `$text`.
    TextTerms {
        table: String,
        tokens: Vec<String>,
    },
    And(Vec<Predicate>),
    Or(Vec<Predicate>),
}

/// A bound of a range the store narrows a scan to ([`Predicate::PathRange`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RangeValue {
    /// A finite number (an int, a long within 2^53, a double), compared numerically.
    Number(f64),
    /// A date, by its milliseconds since the epoch (the image's `v` of a tagged date).
    Date(i64),
}

/// Which side of its bound a [`Predicate::PathRange`] keeps, bound included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeSide {
    /// Values at or above the bound (`$gt`, `$gte`).
    AtLeast,
    /// Values at or below the bound (`$lt`, `$lte`).
    AtMost,
}

/// One end of an index range.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexBound {
    pub key: Vec<u8>,
    pub inclusive: bool,
}

/// Order of a scan by `_id` key (the key encoding preserves MongoDB's `_id` order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOrder {
    Ascending,
    Descending,
}

/// A scan: filter, optional order, and skip/limit (only meaningful when the filter is exact).
#[derive(Clone, Debug, PartialEq)]
pub struct ScanRequest {
    pub filter: Predicate,
    /// Direction of the order; by `_id` key unless `order_index` names an index.
    pub order: Option<KeyOrder>,
    /// The entries table of a non-multikey secondary index whose key orders the scan (every
    /// document has exactly one entry in it).
    pub order_index: Option<String>,
    pub skip: u64,
    pub limit: Option<u64>,
}

impl Default for ScanRequest {
    fn default() -> Self {
        ScanRequest::all()
    }
}

impl ScanRequest {
    /// Every document in insertion order.
    pub fn all() -> Self {
        ScanRequest {
            filter: Predicate::True,
            order: None,
            order_index: None,
            skip: 0,
            limit: None,
        }
    }
}

/// Where a scan resumes: strictly after this row, in the scan's order. A cursor holds one
/// instead of the rest of its result (see `ops::read_cursor`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScanPosition {
    /// Natural (insertion) order: the row's storage sequence number.
    Natural(i64),
    /// `_id` key order: the row's `_id` key.
    Key(Vec<u8>),
    /// An index walk (`ScanRequest::order_index`): the entry's index key, then the `_id`
    /// key that breaks ties between equal index keys.
    IndexEntry { index_key: Vec<u8>, key: Vec<u8> },
}

/// One row of a positioned scan: the stored document and where the scan is after it.
#[derive(Clone, Debug)]
pub struct PositionedRow {
    pub position: ScanPosition,
    pub document: Vec<u8>,
}
