//! The pushdown vocabulary: what the query planner may ask a backend to evaluate in SQL.
//! Predicates are about keys and JSON paths, not MongoDB operators; the planner in
//! `src/query/` translates a MongoDB filter into them and keeps whatever cannot be expressed
//! exactly as a residual that Rust re-checks.

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
    /// Some value at `path` (field names, no numeric components) equals `value` by MongoDB
    /// equality, where any array along the path is traversed. OVER-SELECTS: the store may
    /// return every document in which any prefix of the path is an array, and may treat
    /// `true` like `1`. The caller always re-checks it.
    PathEquals {
        path: Vec<String>,
        value: PathValue,
    },
    And(Vec<Predicate>),
    Or(Vec<Predicate>),
}

impl Predicate {
    /// True when the store evaluates this predicate exactly (no re-check needed).
    pub fn is_exact(&self) -> bool {
        match self {
            Predicate::True | Predicate::KeyEquals(_) | Predicate::KeyIn(_) => true,
            Predicate::PathEquals { .. } => false,
            Predicate::And(parts) | Predicate::Or(parts) => parts.iter().all(Predicate::is_exact),
        }
    }
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
    pub order: Option<KeyOrder>,
    pub skip: u64,
    pub limit: Option<u64>,
}

impl ScanRequest {
    /// Every document in insertion order.
    pub fn all() -> Self {
        ScanRequest {
            filter: Predicate::True,
            order: None,
            skip: 0,
            limit: None,
        }
    }
}
