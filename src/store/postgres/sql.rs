//! SQL text for reads: a pushdown `Predicate` becomes a `WHERE` clause with bound values, a
//! `ScanRequest` becomes a `SELECT` with `ORDER BY` / `LIMIT` / `OFFSET`.
//!
//! Rules:
//! - values are always bound (`$n`), never spliced; the table name comes from the catalog
//!   and is already a quoted, schema-qualified identifier;
//! - `KeyEquals` is `k = $n` and `KeyIn` is `k = ANY($n::bytea[])`: one bound array however
//!   many keys, served by the unique index on `k` (bytea compares like `memcmp`, which is the
//!   key encoding's order, so `ORDER BY k` walks the same index); `KeyRange` is `k >= $n AND
//!   k < $m` on that index;
//! - `PathEquals` is `j @? $n::text::jsonpath` with a bound path such as
//!   `$."a"."b" ? (@ == "x")`. jsonpath's lax mode unwraps arrays at every step and in the
//!   filter, and compares numbers numerically (5 = 5.0), so this selects every document
//!   MongoDB's equality would (arrays along the path included), and may select a few more
//!   (nested arrays), which the core re-checks. `true` never equals `1` here. Keys and
//!   string literals are escaped as jsonpath strings; U+0000, which jsonpath and jsonb cannot
//!   hold, is mapped to U+FFFD like in the image. A non-finite number or an empty path
//!   selects everything (correct, since pushdown may over-select). `@?` is also the operator
//!   a future GIN `jsonb_path_ops` index serves.
//! - `PathRange` is the same `@?` with a comparison, e.g. `$."a" ? (@ >= 5.0 || @."$t" == 1
//!   || @."$t" == 19)` (the tagged non-finite doubles and decimals are kept: they may lie in
//!   the range), or `$."d" ? (@."$t" == 9 && @."v" <= 1700000000000)` for a date; comparing
//!   a number with another type is unknown in jsonpath, so only numbers (dates) are selected.
//! - `Or` merges its key operands into one `ANY` and its `PathEquals` operands on one path
//!   into one jsonpath with a balanced `||` tree; junctions are balanced trees of
//!   parentheses, so thousands of operands stay far below PostgreSQL's stack depth limit.
//!   PostgreSQL takes at most 65,535 bound values; a predicate needing more is an error
//!   rather than a silently different query (the planner never produces one).
//!
//! The clause's shape (balanced junctions, merged `Or` operands, key and index ranges) is
//! `store::where_clause`'s; this module supplies PostgreSQL's leaves and the `SELECT` around
//! it.
//!
//! Not for: writes (`write.rs`) or the catalog (`catalog.rs`).

use std::fmt::Write as _;

use super::super::image::nul_free;
use super::super::where_clause::{push_predicate, push_resume, WhereClause};
use super::super::StoreError;
use super::conn::Params;
use crate::query::scan::{
    KeyOrder, PathValue, Predicate, RangeSide, RangeValue, ScanPosition, ScanRequest,
};

/// PostgreSQL's limit on bound values in one statement.
const MAX_PARAMS: usize = 65_535;

/// A statement text with its bound values, in `$n` order.
pub(super) struct Sql {
    pub(super) text: String,
    pub(super) params: Params,
    /// The entries table an index-ordered scan walks (see `select`).
    walked: Option<String>,
}

impl Sql {
    fn new(text: String) -> Self {
        Sql {
            text,
            params: Vec::new(),
            walked: None,
        }
    }

    /// Binds a value and appends its placeholder (with `cast`, e.g. `::bytea[]`).
    fn bind<T: tokio_postgres::types::ToSql + Sync + Send + 'static>(
        &mut self,
        value: T,
        cast: &str,
    ) {
        self.params.push(Box::new(value));
        let _ = write!(self.text, "${}{cast}", self.params.len());
    }

    fn checked(self) -> Result<Sql, StoreError> {
        if self.params.len() > MAX_PARAMS {
            return Err(StoreError::Database(format!(
                "predicate needs {} bound values; PostgreSQL allows {MAX_PARAMS}",
                self.params.len()
            )));
        }
        Ok(self)
    }
}

/// `SELECT <columns> FROM <table> WHERE … ORDER BY … LIMIT … OFFSET …`.
///
/// With `order_index`, the scan walks that index's entries in key order and joins each to
/// its document (the entries table's columns are renamed so `k`, `j` and `doc` keep meaning
/// the collection's columns in the predicate).
///
/// With `after`, only the rows strictly after that position in the scan's order are read
/// (a cursor's next batch; see `where_clause::push_resume`).
pub(super) fn select(
    table: &str,
    columns: &str,
    request: &ScanRequest,
    after: Option<&ScanPosition>,
) -> Result<Sql, StoreError> {
    let from = match &request.order_index {
        Some(index) => format!(
            "(SELECT ik AS dg_ik, k AS dg_k FROM {index}) AS dg_o JOIN {table} ON {table}.k = dg_o.dg_k"
        ),
        None => table.to_string(),
    };
    let mut sql = Sql::new(format!("SELECT {columns} FROM {from} WHERE ("));
    sql.walked = request.order_index.clone();
    push_predicate(&request.filter, &mut sql);
    sql.text.push(')');
    if let Some(after) = after {
        push_resume(request, after, &mut sql);
    }
    // `k` is the primary key: a lookup by one `_id` finds at most one row, which needs no sort.
    let single_row = matches!(request.filter, Predicate::KeyEquals(_));
    sql.text
        .push_str(match (&request.order_index, request.order) {
            (None, _) if single_row => "",
            // Equal index keys are walked in `_id` order: deterministic, and resumable.
            (Some(_), Some(KeyOrder::Descending)) => " ORDER BY dg_o.dg_ik DESC, dg_o.dg_k DESC",
            (Some(_), _) => " ORDER BY dg_o.dg_ik, dg_o.dg_k",
            (None, Some(KeyOrder::Ascending)) => " ORDER BY k",
            (None, Some(KeyOrder::Descending)) => " ORDER BY k DESC",
            (None, None) => " ORDER BY n",
        });
    if let Some(limit) = request.limit {
        sql.text.push_str(" LIMIT ");
        sql.bind(clamp(limit), "");
    }
    if request.skip > 0 {
        sql.text.push_str(" OFFSET ");
        sql.bind(clamp(request.skip), "");
    }
    sql.checked()
}

/// `SELECT count(*) FROM <table> WHERE …`.
pub(super) fn count(table: &str, filter: &Predicate) -> Result<Sql, StoreError> {
    let mut sql = Sql::new(format!("SELECT count(*) FROM {table} WHERE "));
    push_predicate(filter, &mut sql);
    sql.checked()
}

fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl WhereClause for Sql {
    const TRUE: &'static str = "TRUE";
    const FALSE: &'static str = "FALSE";
    const SEQUENCE: &'static str = "n";

    fn text(&mut self) -> &mut String {
        &mut self.text
    }

    fn walked(&self) -> Option<&str> {
        self.walked.as_deref()
    }

    fn bind_key(&mut self, key: &[u8]) {
        self.bind(key.to_vec(), "");
    }

    fn bind_sequence(&mut self, sequence: i64) {
        self.bind(sequence, "");
    }

    fn push_keys(&mut self, keys: &[&Vec<u8>]) {
        push_keys(keys, self);
    }

    fn push_path_in(&mut self, path: &[String], values: &[&PathValue]) {
        push_path_in(path, values, self);
    }

    fn push_path_range(&mut self, path: &[String], side: RangeSide, value: RangeValue) {
        match range_path(path, side, value) {
            Some(text) => {
                self.text.push_str("j @? ");
                self.bind(text, "::text::jsonpath");
            }
            None => self.text.push_str("TRUE"),
        }
    }

    /// Entries tables come from the catalog already quoted and schema-qualified.
    fn entries_table(&self, table: &str) -> String {
        table.to_string()
    }

    /// The entries' `tsv` column (GIN-indexed, `index.rs`) against the tokens ORed.
    fn push_text_terms(&mut self, table: &str, tokens: &[String]) {
        self.text.push_str(&format!(
            "k IN (SELECT k FROM {table} WHERE tsv @@ to_tsquery('simple', "
        ));
        self.bind(tokens.join(" | "), "::text");
        self.text.push_str("))");
    }
}

fn push_keys(keys: &[&Vec<u8>], sql: &mut Sql) {
    match keys {
        [] => sql.text.push_str("FALSE"),
        [one] => {
            sql.text.push_str("k = ");
            sql.bind((*one).clone(), "");
        }
        _ => {
            let keys: Vec<Vec<u8>> = keys.iter().map(|key| key.to_vec()).collect();
            sql.text.push_str("k = ANY(");
            sql.bind(keys, "::bytea[]");
            sql.text.push(')');
        }
    }
}

/// `j @? $n::text::jsonpath`, or `TRUE` when the jsonpath cannot be built (see module doc).
fn push_path_in(path: &[String], values: &[&PathValue], sql: &mut Sql) {
    match json_path(path, values) {
        Some(text) => {
            sql.text.push_str("j @? ");
            sql.bind(text, "::text::jsonpath");
        }
        None => sql.text.push_str("TRUE"),
    }
}

/// `$."a"."b" ? (@ == v1 || @ == v2 …)`; `None` for an empty path, no values, or a
/// non-finite number.
pub(super) fn json_path(path: &[String], values: &[&PathValue]) -> Option<String> {
    if path.is_empty() || values.is_empty() {
        return None;
    }
    let mut text = String::from("$");
    for component in path {
        text.push('.');
        push_jsonpath_string(component, &mut text);
    }
    let literals = values
        .iter()
        .map(|v| literal(v))
        .collect::<Option<Vec<String>>>()?;
    text.push_str(" ? (");
    push_any_equal(&literals, &mut text);
    text.push(')');
    Some(text)
}

/// `$."a" ? (@ >= 5.0 || @."$t" == 1 || @."$t" == 19)` for a number (a non-finite double
/// or decimal is a tagged object in the image, and may lie on either side), or
/// `$."a" ? (@."$t" == 9 && @."v" <= 1700000000000)` for a date; `None` for an empty path or
/// a non-finite bound. A jsonpath comparison of a number with a string, a boolean or an
/// object is unknown, so other types are not selected, as MongoDB's type brackets have it.
pub(super) fn range_path(path: &[String], side: RangeSide, value: RangeValue) -> Option<String> {
    if path.is_empty() {
        return None;
    }
    let mut text = String::from("$");
    for component in path {
        text.push('.');
        push_jsonpath_string(component, &mut text);
    }
    let op = match side {
        RangeSide::AtLeast => ">=",
        RangeSide::AtMost => "<=",
    };
    match value {
        RangeValue::Number(n) if n.is_finite() => {
            let _ = write!(text, " ? (@ {op} {n:?} || @.\"$t\" == 1 || @.\"$t\" == 19)");
        }
        RangeValue::Number(_) => return None,
        RangeValue::Date(millis) => {
            let _ = write!(text, " ? (@.\"$t\" == 9 && @.\"v\" {op} {millis})");
        }
    }
    Some(text)
}

/// `@ == a || @ == b …` as a balanced tree.
fn push_any_equal(literals: &[String], out: &mut String) {
    match literals {
        [] => out.push_str("false"),
        [one] => {
            out.push_str("@ == ");
            out.push_str(one);
        }
        _ => {
            let (left, right) = literals.split_at(literals.len() / 2);
            out.push('(');
            push_any_equal(left, out);
            out.push_str(" || ");
            push_any_equal(right, out);
            out.push(')');
        }
    }
}

/// A jsonpath literal for `value`; `None` for NaN and ±Inf (tagged objects in the image).
fn literal(value: &PathValue) -> Option<String> {
    match value {
        PathValue::String(s) => {
            let mut out = String::new();
            push_jsonpath_string(s, &mut out);
            Some(out)
        }
        // `{:?}` prints the shortest round-trip form, like the image, e.g. `5.0`, `-1e-7`.
        PathValue::Number(n) if n.is_finite() => Some(format!("{n:?}")),
        PathValue::Number(_) => None,
        PathValue::Bool(b) => Some(b.to_string()),
    }
}

/// A jsonpath string literal: `"` and `\` escaped, control characters as `\u00XX`, U+0000
/// as U+FFFD (see module doc).
fn push_jsonpath_string(s: &str, out: &mut String) {
    out.push('"');
    for c in nul_free(s).chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn json_paths_are_escaped() {
        let v = PathValue::String("q\"\\\u{1}\u{0}".into());
        assert_eq!(
            json_path(&path(&["a", "it's \"x\""]), &[&v]).as_deref(),
            Some("$.\"a\".\"it's \\\"x\\\"\" ? (@ == \"q\\\"\\\\\\u0001\u{fffd}\")")
        );
        let (five, t) = (PathValue::Number(5.0), PathValue::Bool(true));
        let neg = PathValue::Number(-1e-7);
        assert_eq!(
            json_path(&path(&["n"]), &[&five, &t, &neg]).as_deref(),
            Some("$.\"n\" ? ((@ == 5.0 || (@ == true || @ == -1e-7)))")
        );
        assert_eq!(json_path(&[], &[&five]), None);
        assert_eq!(
            json_path(&path(&["n"]), &[&PathValue::Number(f64::NAN)]),
            None
        );
    }

    #[test]
    fn predicates_bind_every_value() {
        let p = Predicate::Or(vec![
            Predicate::KeyEquals(vec![1]),
            Predicate::PathEquals {
                path: path(&["a"]),
                value: PathValue::Number(1.0),
            },
            Predicate::KeyIn(vec![vec![2], vec![3]]),
        ]);
        let request = ScanRequest {
            order_index: None,
            filter: p,
            order: Some(KeyOrder::Descending),
            skip: 2,
            limit: Some(3),
        };
        let sql = match select("\"s\".\"t\"", "doc", &request, None) {
            Ok(sql) => sql,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            sql.text,
            "SELECT doc FROM \"s\".\"t\" WHERE ((k = ANY($1::bytea[]) OR j @? $2::text::jsonpath)) \
             ORDER BY k DESC LIMIT $3 OFFSET $4"
        );
        assert_eq!(sql.params.len(), 4);
    }

    /// A resumed scan seeks past its position on the columns its order walks, with bound
    /// values, and breaks index-key ties by `_id` key.
    #[test]
    fn resumed_scans_seek_past_their_position() {
        let natural = ScanRequest {
            limit: Some(11),
            ..ScanRequest::all()
        };
        let walk = ScanRequest {
            order: Some(KeyOrder::Descending),
            order_index: Some("\"s\".\"i\"".into()),
            ..ScanRequest::all()
        };
        let cases = [
            (
                &natural,
                ScanPosition::Natural(41),
                "SELECT n, doc FROM t WHERE (TRUE) AND n > $1 ORDER BY n LIMIT $2",
            ),
            (
                &walk,
                ScanPosition::IndexEntry {
                    index_key: vec![7],
                    key: vec![9],
                },
                "SELECT n, doc FROM (SELECT ik AS dg_ik, k AS dg_k FROM \"s\".\"i\") AS dg_o \
                 JOIN t ON t.k = dg_o.dg_k WHERE (TRUE) AND (dg_o.dg_ik, dg_o.dg_k) < ($1, $2) \
                 ORDER BY dg_o.dg_ik DESC, dg_o.dg_k DESC",
            ),
        ];
        for (request, after, expected) in cases {
            let sql = match select("t", "n, doc", request, Some(&after)) {
                Ok(sql) => sql,
                Err(e) => panic!("{e}"),
            };
            assert_eq!(sql.text, expected);
        }
    }
}
