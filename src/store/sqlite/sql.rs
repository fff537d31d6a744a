//! SQL text for reads: a pushdown `Predicate` becomes a `WHERE` clause with bound values, a
//! `ScanRequest` becomes a `SELECT` with `ORDER BY` / `LIMIT` / `OFFSET`.
//!
//! Rules:
//! - values are always bound (`?`), never spliced;
//! - the table name comes from the catalog (`dgc_<n>`) and is quoted anyway;
//! - JSON paths are spliced as SQL string literals so that a future expression index on the
//!   same path can match; a path component is only spliced when it can be quoted exactly in
//!   SQLite's JSON path syntax (`$."a"."b"`: no `"`, `\` or control characters, not empty).
//!   Otherwise the predicate becomes `1` (select everything): correct, because pushdown may
//!   over-select, just slower.
//! - `KeyEquals`/`KeyIn`/`KeyRange` compare the `k` column, served by its unique index. Up to
//!   `INLINE_KEYS` keys are bound one per `?`; more are bound as one JSON array of hex
//!   strings and expanded with `json_each`, which the planner still drives through the index.
//! - `PathEquals` over-selects as `scan.rs` allows: any document where a prefix of the path
//!   is an array is returned, and `true` equals `1` (`->>` yields 1 for true).
//! - `PathRange` over-selects the same way, and keeps tagged non-finite numbers (see
//!   `push_path_range`); numbers are compared only where `json_type` says the value is one,
//!   so strings (which SQLite orders after every number) and booleans are not selected.
//! - `Or` merges its key operands into one `KeyIn` and its `PathEquals` operands on one path
//!   into one `IN (SELECT value FROM json_each(?))`, and every junction is emitted as a
//!   balanced tree of parentheses: a `$in` of 10,000 values is one bound value and stays far
//!   below SQLite's limits (32766 bound values, expression depth 1000).
//!
//! The clause's shape (balanced junctions, merged `Or` operands, key and index ranges) is
//! `store::where_clause`'s; this module supplies SQLite's leaves and the `SELECT` around it.
//!
//! Not for: writes (`write.rs`) or the catalog (`catalog.rs`).

use rusqlite::types::Value;

use super::super::where_clause::{push_predicate, push_resume, WhereClause};
use crate::query::scan::{
    KeyOrder, PathValue, Predicate, RangeSide, RangeValue, ScanPosition, ScanRequest,
};

/// Above this many keys, `KeyIn` binds a single JSON array instead of one `?` per key.
const INLINE_KEYS: usize = 50;
/// Bound values per statement we allow ourselves (SQLite's limit is 32766); past it,
/// inexact predicates degrade to `1` and key sets to one JSON array.
const PARAM_BUDGET: usize = 30_000;

/// A statement text with its bound values, in order.
#[derive(Debug)]
pub(super) struct Sql {
    pub(super) text: String,
    pub(super) params: Vec<Value>,
    /// The entries table an index-ordered scan walks (`select` with `order_index`).
    walked: Option<String>,
}

/// `"name"` with embedded quotes doubled.
pub(super) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `'text'` with embedded quotes doubled.
fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `SELECT <columns> FROM <table> WHERE … ORDER BY … LIMIT … OFFSET …`.
///
/// With `order_index`, the scan walks that index's entries in key order and joins each to
/// its document (the entries table's columns are renamed so `k`, `j`, `doc` and `rowid`
/// keep meaning the collection's columns in the predicate). An `IndexRange` on that same
/// index bounds the walk itself (`dg_o.dg_ik`) instead of probing the entries table again,
/// so a range with a sort on its index and a limit reads only the rows it returns.
///
/// With `after`, only the rows strictly after that position in the scan's order are read
/// (a cursor's next batch; see `where_clause::push_resume`).
pub(super) fn select(
    table: &str,
    columns: &str,
    request: &ScanRequest,
    after: Option<&ScanPosition>,
) -> Sql {
    let quoted = quote_ident(table);
    let from = match &request.order_index {
        Some(index) => format!(
            "(SELECT ik AS dg_ik, k AS dg_k FROM {}) AS dg_o JOIN {quoted} ON {quoted}.k = dg_o.dg_k",
            quote_ident(index)
        ),
        None => quoted,
    };
    let mut sql = Sql {
        text: format!("SELECT {columns} FROM {from} WHERE ("),
        params: Vec::new(),
        walked: request.order_index.clone(),
    };
    push_predicate(&request.filter, &mut sql);
    sql.text.push(')');
    if let Some(after) = after {
        push_resume(request, after, &mut sql);
    }
    // A single `_id` key selects at most one row: nothing to order.
    let single_row = matches!(request.filter, Predicate::KeyEquals(_));
    sql.text
        .push_str(match (&request.order_index, request.order) {
            _ if single_row => "",
            // Equal index keys are walked in `_id` order: deterministic, and resumable.
            (Some(_), Some(KeyOrder::Descending)) => " ORDER BY dg_o.dg_ik DESC, dg_o.dg_k DESC",
            (Some(_), _) => " ORDER BY dg_o.dg_ik ASC, dg_o.dg_k ASC",
            (None, Some(KeyOrder::Ascending)) => " ORDER BY k ASC",
            (None, Some(KeyOrder::Descending)) => " ORDER BY k DESC",
            (None, None) => " ORDER BY rowid",
        });
    if request.limit.is_some() || request.skip > 0 {
        // Literals, not bound values: SQLite re-prepares a statement whose LIMIT is bound
        // each time it is bound again, which would defeat the statement cache. They are
        // integers docgate produces, never client text.
        let limit = request.limit.map_or(-1, clamp);
        sql.text
            .push_str(&format!(" LIMIT {limit} OFFSET {}", clamp(request.skip)));
    }
    sql
}

/// `SELECT COUNT(*) FROM <table> WHERE …`.
pub(super) fn count(table: &str, filter: &Predicate) -> Sql {
    let mut sql = Sql {
        text: format!("SELECT COUNT(*) FROM {} WHERE ", quote_ident(table)),
        params: Vec::new(),
        walked: None,
    };
    push_predicate(filter, &mut sql);
    sql
}

fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl WhereClause for Sql {
    const TRUE: &'static str = "1";
    const FALSE: &'static str = "0";
    const SEQUENCE: &'static str = "rowid";

    fn text(&mut self) -> &mut String {
        &mut self.text
    }

    fn walked(&self) -> Option<&str> {
        self.walked.as_deref()
    }

    fn bind_key(&mut self, key: &[u8]) {
        self.text.push('?');
        self.params.push(Value::Blob(key.to_vec()));
    }

    fn bind_sequence(&mut self, sequence: i64) {
        self.text.push('?');
        self.params.push(Value::Integer(sequence));
    }

    fn push_keys(&mut self, keys: &[&Vec<u8>]) {
        push_key_in(keys, self);
    }

    fn push_path_in(&mut self, path: &[String], values: &[&PathValue]) {
        push_path_in(path, values, self);
    }

    fn push_path_range(&mut self, path: &[String], side: RangeSide, value: RangeValue) {
        push_path_range(path, side, value, self);
    }

    fn entries_table(&self, table: &str) -> String {
        quote_ident(table)
    }

    /// The FTS5 table over the entries (`index.rs`): `MATCH` with the tokens ORed, each a
    /// quoted string (FTS5 query syntax reads nothing in it).
    fn push_text_terms(&mut self, table: &str, tokens: &[String]) {
        let words: Vec<String> = tokens.iter().map(|t| format!("\"{t}\"")).collect();
        self.text.push_str(&format!(
            "k IN (SELECT k FROM {} WHERE rowid IN (SELECT rowid FROM {fts} WHERE {fts} MATCH ?))",
            quote_ident(table),
            fts = quote_ident(&super::index::fts_table(table)),
        ));
        self.params.push(Value::Text(words.join(" OR ")));
    }
}

fn push_key_in(keys: &[&Vec<u8>], sql: &mut Sql) {
    let n = keys.len();
    if n == 0 {
        sql.text.push('0');
    } else if n == 1 || (n <= INLINE_KEYS && sql.params.len() + n <= PARAM_BUDGET) {
        sql.text.push_str(if n == 1 { "k = ?" } else { "k IN (" });
        for (i, key) in keys.iter().enumerate() {
            if i > 0 {
                sql.text.push_str(", ");
            }
            if n > 1 {
                sql.text.push('?');
            }
            sql.params.push(Value::Blob(key.to_vec()));
        }
        if n > 1 {
            sql.text.push(')');
        }
    } else {
        sql.text
            .push_str("k IN (SELECT unhex(value) FROM json_each(?))");
        sql.params
            .push(Value::Text(hex_array(keys.iter().copied())));
    }
}

/// Some value at `path` equals one of `values`:
/// `(j ->> '$."a"."b"' = ? OR json_type(j, '$."a"') = 'array' OR json_type(j, '$."a"."b"') = 'array')`,
/// with `IN (SELECT value FROM json_each(?))` for several values. Falls back to `1` (all
/// documents) for an unquotable path, a non-finite number (NaN and ±Inf are tagged objects
/// in the image) or when the statement already binds `PARAM_BUDGET` values.
fn push_path_in(path: &[String], values: &[&PathValue], sql: &mut Sql) {
    let n = values.len();
    let Some(prefixes) = json_path_prefixes(path) else {
        return sql.text.push('1');
    };
    let (Some(full), true) = (prefixes.last(), sql.params.len() < PARAM_BUDGET) else {
        return sql.text.push('1');
    };
    let bound = if n == 1 {
        values.first().and_then(|value| bind_value(value))
    } else {
        json_values(values.iter().copied()).map(Value::Text)
    };
    let Some(bound) = bound else {
        return sql.text.push('1');
    };
    if n == 1 {
        sql.text.push_str(&format!("(j ->> {full} = ?"));
    } else {
        sql.text.push_str(&format!(
            "(j ->> {full} IN (SELECT value FROM json_each(?))"
        ));
    }
    sql.params.push(bound);
    for prefix in &prefixes {
        sql.text
            .push_str(&format!(" OR json_type(j, {prefix}) = 'array'"));
    }
    sql.text.push(')');
}

/// Some value at `path` lies on `side` of `value`, bound included, e.g. for a number
/// `((json_type(j, '$."a"') IN ('integer', 'real') AND j ->> '$."a"' >= ?)
///  OR j ->> '$."a"."$t"' IN (1, 19) OR json_type(j, '$."a"') = 'array')` — the tagged
/// non-finite doubles and decimals may lie in the range — and for a date
/// `((j ->> '$."d"."$t"' = 9 AND j ->> '$."d"."v"' <= ?) OR …)`; an array on the path selects
/// the document, as in `push_path_in`. Falls back to `1` like `push_path_in`.
fn push_path_range(path: &[String], side: RangeSide, value: RangeValue, sql: &mut Sql) {
    let member = |name: &str| {
        let mut longer = path.to_vec();
        longer.push(name.to_string());
        json_path_prefixes(&longer).and_then(|mut prefixes| prefixes.pop())
    };
    let (Some(prefixes), Some(tag), Some(millis), true) = (
        json_path_prefixes(path),
        member("$t"),
        member("v"),
        sql.params.len() < PARAM_BUDGET,
    ) else {
        return sql.text.push('1');
    };
    let Some(full) = prefixes.last() else {
        return sql.text.push('1');
    };
    let op = match side {
        RangeSide::AtLeast => ">=",
        RangeSide::AtMost => "<=",
    };
    match value {
        RangeValue::Number(n) if n.is_finite() => {
            sql.text.push_str(&format!(
                "((json_type(j, {full}) IN ('integer', 'real') AND j ->> {full} {op} ?) \
                 OR j ->> {tag} IN (1, 19)"
            ));
            sql.params.push(Value::Real(n));
        }
        RangeValue::Number(_) => return sql.text.push('1'),
        RangeValue::Date(ms) => {
            sql.text
                .push_str(&format!("((j ->> {tag} = 9 AND j ->> {millis} {op} ?)"));
            sql.params.push(Value::Integer(ms));
        }
    }
    for prefix in &prefixes {
        sql.text
            .push_str(&format!(" OR json_type(j, {prefix}) = 'array'"));
    }
    sql.text.push(')');
}

/// The SQL value `->>` yields for an image scalar equal to `value` (true is 1).
fn bind_value(value: &PathValue) -> Option<Value> {
    match value {
        PathValue::String(s) => Some(Value::Text(s.clone())),
        PathValue::Number(n) if n.is_finite() => Some(Value::Real(*n)),
        PathValue::Number(_) => None,
        PathValue::Bool(b) => Some(Value::Integer(i64::from(*b))),
    }
}

/// The values as a JSON array; `json_each` yields them as the same SQL values `bind_value`
/// would bind (text, real, 1/0 for booleans).
fn json_values<'a>(values: impl Iterator<Item = &'a PathValue>) -> Option<String> {
    let mut array = Vec::new();
    for value in values {
        array.push(match value {
            PathValue::String(s) => serde_json::Value::String(s.clone()),
            PathValue::Number(n) => serde_json::Value::Number(serde_json::Number::from_f64(*n)?),
            PathValue::Bool(b) => serde_json::Value::Bool(*b),
        });
    }
    serde_json::to_string(&array).ok()
}

/// SQL literals of the JSON paths of every prefix of `path`, shortest first; `None` when a
/// component cannot be quoted exactly.
fn json_path_prefixes(path: &[String]) -> Option<Vec<String>> {
    let mut json_path = String::from("$");
    let mut prefixes = Vec::with_capacity(path.len());
    for component in path {
        let quotable = !component.is_empty()
            && !component
                .chars()
                .any(|c| c == '"' || c == '\\' || c.is_control());
        if !quotable {
            return None;
        }
        json_path.push_str(".\"");
        json_path.push_str(component);
        json_path.push('"');
        prefixes.push(quote_literal(&json_path));
    }
    Some(prefixes)
}

/// `["00ff…", …]`: keys as a JSON array of lowercase hex strings.
fn hex_array<'a>(keys: impl Iterator<Item = &'a Vec<u8>>) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::from("[");
    for (i, key) in keys.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        for byte in key {
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        out.push('"');
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_equals_sql() {
        let p = Predicate::PathEquals {
            path: vec!["a".into(), "it's".into()],
            value: PathValue::Number(5.0),
        };
        let sql = count("dgc_1", &p);
        assert_eq!(
            sql.text,
            "SELECT COUNT(*) FROM \"dgc_1\" WHERE (j ->> '$.\"a\".\"it''s\"' = ? OR \
             json_type(j, '$.\"a\"') = 'array' OR json_type(j, '$.\"a\".\"it''s\"') = 'array')"
        );
        assert_eq!(sql.params, vec![Value::Real(5.0)]);
    }

    #[test]
    fn unquotable_paths_select_everything() {
        for bad in ["a\"b", "a\\b", "", "a\u{1}"] {
            let p = Predicate::PathEquals {
                path: vec!["x".into(), bad.into()],
                value: PathValue::Bool(true),
            };
            let sql = count("t", &p);
            assert!(sql.text.ends_with("WHERE 1"), "{bad:?}: {}", sql.text);
            assert!(sql.params.is_empty());
        }
    }

    #[test]
    fn a_range_on_the_walked_index_bounds_the_walk() {
        use crate::query::scan::IndexBound;
        let range = |table: &str| Predicate::IndexRange {
            table: table.into(),
            lower: Some(IndexBound {
                key: vec![1],
                inclusive: true,
            }),
            upper: Some(IndexBound {
                key: vec![2],
                inclusive: false,
            }),
        };
        let request = ScanRequest {
            filter: Predicate::And(vec![range("dgi_2"), range("dgi_3")]),
            order: Some(KeyOrder::Descending),
            order_index: Some("dgi_2".into()),
            ..ScanRequest::all()
        };
        let sql = select("dgc_1", "doc", &request, None);
        assert!(
            sql.text.contains(
                "WHERE (((1 AND dg_o.dg_ik >= ? AND dg_o.dg_ik < ?) AND \
                 k IN (SELECT k FROM \"dgi_3\" WHERE 1 AND ik >= ? AND ik < ?))) \
                 ORDER BY dg_o.dg_ik DESC, dg_o.dg_k DESC"
            ),
            "{}",
            sql.text
        );
        assert_eq!(sql.params.len(), 4);
        let unordered = select("dgc_1", "doc", &scan_of(range("dgi_2")), None);
        assert!(unordered.text.contains("k IN (SELECT k FROM \"dgi_2\""));
        assert!(count("dgc_1", &range("dgi_2"))
            .text
            .contains("k IN (SELECT k FROM"));
    }

    /// A resumed scan seeks past its position on the columns its order walks, with bound
    /// values (LIMIT stays a literal for the statement cache).
    #[test]
    fn resumed_scans_seek_past_their_position() {
        let by_key = ScanRequest {
            order: Some(KeyOrder::Ascending),
            limit: Some(11),
            ..ScanRequest::all()
        };
        let sql = select(
            "dgc_1",
            "k, doc",
            &by_key,
            Some(&ScanPosition::Key(vec![5])),
        );
        assert_eq!(
            sql.text,
            "SELECT k, doc FROM \"dgc_1\" WHERE (1) AND k > ? ORDER BY k ASC LIMIT 11 OFFSET 0"
        );
        assert_eq!(sql.params, vec![Value::Blob(vec![5])]);
        let natural = select(
            "dgc_1",
            "rowid, doc",
            &ScanRequest::all(),
            Some(&ScanPosition::Natural(3)),
        );
        assert_eq!(
            natural.text,
            "SELECT rowid, doc FROM \"dgc_1\" WHERE (1) AND rowid > ? ORDER BY rowid"
        );
    }

    fn scan_of(filter: Predicate) -> ScanRequest {
        ScanRequest {
            filter,
            ..ScanRequest::all()
        }
    }

    #[test]
    fn hex_array_encodes() {
        assert_eq!(hex_array([vec![0, 255], vec![]].iter()), r#"["00ff",""]"#);
    }
}
