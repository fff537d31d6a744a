//! SQL text for reads in Oracle's dialect: a pushdown `Predicate` becomes a `WHERE` clause
//! with bound values (`:1`, `:2`, … in text order, each placeholder once), a `ScanRequest`
//! becomes a `SELECT` with `ORDER BY` / `OFFSET … ROWS FETCH NEXT … ROWS ONLY`.
//!
//! Leaves (the clause's shape is `store::where_clause`'s):
//! - `KeyEquals` is `k = :n`; `KeyIn` is `k IN (:n, …)` in lists of at most 1,000 (Oracle's
//!   limit per list, ORA-01795) joined by `OR`, all served by the unique index on `k` (RAW
//!   compares bytewise, the key encoding's order); `KeyRange` is `k >= :n AND k < :m`.
//! - `PathEquals` is `JSON_EXISTS(j, '$."a"."b"?(@.double() == $v1 || @ == $v2)' PASSING
//!   :n AS "v1", :m AS "v2")` over the `JSON` image. The path must be a literal in Oracle;
//!   only field names are in it, quoted, and a name holding `"`, `\` or a control character
//!   is not pushed (the leaf becomes `1=1`, selecting everything: pushdown may
//!   over-select). Every value is bound through `PASSING`: strings as VARCHAR2 (at most
//!   4,000 bytes, else not pushed; Oracle's empty string is NULL, which `PASSING` binds as
//!   the empty JSON string), numbers as BINARY_DOUBLE compared with `@.double()` (the image
//!   holds each number as the shortest text of the same double, so equal values compare
//!   equal; NaN and ±Inf are not pushed), booleans as SQL BOOLEAN (23ai). Lax mode unwraps
//!   arrays along the path and in the filter, like PostgreSQL's jsonpath, so arrays match
//!   as MongoDB's equality does and nested arrays may over-select; the core re-checks.
//! - `PathRange` is not pushed: `1=1` (no Oracle database here to check a range's
//!   `JSON_EXISTS` against; pushdown may over-select).
//! - A cursor resumes an index walk with `(dg_o.dg_ik > :a OR (dg_o.dg_ik = :b AND
//!   dg_o.dg_k > :c))`: Oracle has no row-value `<`/`>`.
//! - Oracle takes at most 65,535 bound values per statement; a predicate needing more is an
//!   error rather than a silently different query.
//!
//! Not for: writes (`write.rs`) or the catalog (`catalog.rs`).

use std::fmt::Write as _;

use super::super::image::nul_free;
use super::super::where_clause::{push_predicate, push_resume, WhereClause};
use super::super::StoreError;
use super::conn::Bind;
use crate::query::scan::{
    KeyOrder, PathValue, Predicate, RangeSide, RangeValue, ScanPosition, ScanRequest,
};

/// Oracle's limit on bound values in one statement.
const MAX_BINDS: usize = 65_535;
/// Oracle's limit on expressions in one `IN` list.
const MAX_IN_LIST: usize = 1_000;
/// Longest string bound as a VARCHAR2 in SQL (MAX_STRING_SIZE = STANDARD).
const MAX_VARCHAR2: usize = 4_000;

/// A statement text with its bound values, in placeholder order.
#[derive(Clone, Debug, PartialEq)]
pub struct Sql {
    pub text: String,
    pub binds: Vec<Bind>,
    /// The entries table an index-ordered scan walks (see `select`).
    walked: Option<String>,
}

impl Sql {
    pub fn new(text: String) -> Self {
        Sql {
            text,
            binds: Vec::new(),
            walked: None,
        }
    }

    /// Binds a value and appends its placeholder.
    pub(super) fn bind(&mut self, value: Bind) {
        self.binds.push(value);
        let _ = write!(self.text, ":{}", self.binds.len());
    }

    fn checked(self) -> Result<Sql, StoreError> {
        if self.binds.len() > MAX_BINDS {
            return Err(StoreError::Database(format!(
                "predicate needs {} bound values; Oracle allows {MAX_BINDS}",
                self.binds.len()
            )));
        }
        Ok(self)
    }
}

/// `SELECT <columns> FROM <table> WHERE … ORDER BY … OFFSET … FETCH …`.
///
/// With `order_index`, the scan walks that index's entries in key order and joins each to
/// its document (the entries table's columns are renamed so `k`, `j` and `doc` keep meaning
/// the collection's columns in the predicate). With `after`, only the rows strictly after
/// that position in the scan's order are read (a cursor's next batch).
pub fn select(
    table: &str,
    columns: &str,
    request: &ScanRequest,
    after: Option<&ScanPosition>,
) -> Result<Sql, StoreError> {
    let from = match &request.order_index {
        Some(index) => format!(
            "(SELECT ik AS dg_ik, k AS dg_k FROM {index}) dg_o JOIN {table} ON {table}.k = dg_o.dg_k"
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
    let single_row = matches!(request.filter, Predicate::KeyEquals(_));
    sql.text
        .push_str(match (&request.order_index, request.order) {
            (None, _) if single_row => "",
            (Some(_), Some(KeyOrder::Descending)) => " ORDER BY dg_o.dg_ik DESC, dg_o.dg_k DESC",
            (Some(_), _) => " ORDER BY dg_o.dg_ik, dg_o.dg_k",
            (None, Some(KeyOrder::Ascending)) => " ORDER BY k",
            (None, Some(KeyOrder::Descending)) => " ORDER BY k DESC",
            (None, None) => " ORDER BY n",
        });
    if request.skip > 0 {
        sql.text.push_str(" OFFSET ");
        sql.bind(Bind::Int(clamp(request.skip)));
        sql.text.push_str(" ROWS");
    }
    if let Some(limit) = request.limit {
        sql.text.push_str(" FETCH NEXT ");
        sql.bind(Bind::Int(clamp(limit)));
        sql.text.push_str(" ROWS ONLY");
    }
    sql.checked()
}

/// `SELECT COUNT(*) FROM <table> WHERE …`.
pub fn count(table: &str, filter: &Predicate) -> Result<Sql, StoreError> {
    let mut sql = Sql::new(format!("SELECT COUNT(*) FROM {table} WHERE "));
    push_predicate(filter, &mut sql);
    sql.checked()
}

fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl WhereClause for Sql {
    const TRUE: &'static str = "1=1";
    const FALSE: &'static str = "1=0";
    const SEQUENCE: &'static str = "n";

    fn text(&mut self) -> &mut String {
        &mut self.text
    }

    fn walked(&self) -> Option<&str> {
        self.walked.as_deref()
    }

    fn bind_key(&mut self, key: &[u8]) {
        self.bind(Bind::Raw(key.to_vec()));
    }

    fn bind_sequence(&mut self, sequence: i64) {
        self.bind(Bind::Int(sequence));
    }

    fn push_keys(&mut self, keys: &[&Vec<u8>]) {
        push_keys(keys, self);
    }

    fn push_path_in(&mut self, path: &[String], values: &[&PathValue]) {
        push_path_in(path, values, self);
    }

    /// Not pushed on Oracle (no live database here to check its `JSON_EXISTS` ranges
    /// against): every document, which the core re-checks.
    fn push_path_range(&mut self, _path: &[String], _side: RangeSide, _value: RangeValue) {
        self.text.push_str("1=1");
    }

    /// Entries tables come from the catalog already quoted.
    fn entries_table(&self, table: &str) -> String {
        table.to_string()
    }

    fn push_entry_after(&mut self, later: &str, index_key: &[u8], key: &[u8]) {
        self.text.push_str("(dg_o.dg_ik");
        self.text.push_str(later);
        self.bind_key(index_key);
        self.text.push_str(" OR (dg_o.dg_ik = ");
        self.bind_key(index_key);
        self.text.push_str(" AND dg_o.dg_k");
        self.text.push_str(later);
        self.bind_key(key);
        self.text.push_str("))");
    }
}

fn push_keys(keys: &[&Vec<u8>], sql: &mut Sql) {
    match keys {
        [] => sql.text.push_str(Sql::FALSE),
        [one] => {
            sql.text.push_str("k = ");
            sql.bind_key(one);
        }
        _ => {
            let lists = keys.chunks(MAX_IN_LIST).count();
            if lists > 1 {
                sql.text.push('(');
            }
            for (i, list) in keys.chunks(MAX_IN_LIST).enumerate() {
                if i > 0 {
                    sql.text.push_str(" OR ");
                }
                sql.text.push_str("k IN (");
                for (j, key) in list.iter().enumerate() {
                    if j > 0 {
                        sql.text.push_str(", ");
                    }
                    sql.bind_key(key);
                }
                sql.text.push(')');
            }
            if lists > 1 {
                sql.text.push(')');
            }
        }
    }
}

/// `JSON_EXISTS(j, '<path>?(…)' PASSING …)`, or `1=1` when it cannot be written exactly
/// (see the module doc).
fn push_path_in(path: &[String], values: &[&PathValue], sql: &mut Sql) {
    let Some(steps) = path_steps(path) else {
        sql.text.push_str(Sql::TRUE);
        return;
    };
    let Some(variables) = values
        .iter()
        .map(|v| variable(v))
        .collect::<Option<Vec<_>>>()
    else {
        sql.text.push_str(Sql::TRUE);
        return;
    };
    if variables.is_empty() {
        sql.text.push_str(Sql::TRUE);
        return;
    }
    let mut filter = String::new();
    let comparisons: Vec<String> = variables
        .iter()
        .enumerate()
        .map(|(i, (item, _))| format!("@{item} == $v{}", i + 1))
        .collect();
    push_any(&comparisons, &mut filter);
    let _ = write!(sql.text, "JSON_EXISTS(j, '{steps}?({filter})' PASSING ");
    for (i, (_, bind)) in variables.into_iter().enumerate() {
        if i > 0 {
            sql.text.push_str(", ");
        }
        sql.bind(bind);
        let _ = write!(sql.text, " AS \"v{}\"", i + 1);
    }
    sql.text.push(')');
}

/// `a || b …` as a balanced tree of parentheses.
fn push_any(terms: &[String], out: &mut String) {
    match terms {
        [] => out.push_str("false"),
        [one] => out.push_str(one),
        _ => {
            let (left, right) = terms.split_at(terms.len() / 2);
            out.push('(');
            push_any(left, out);
            out.push_str(" || ");
            push_any(right, out);
            out.push(')');
        }
    }
}

/// `$."a"."b"` with single quotes doubled for the SQL literal; `None` for an empty path or
/// a name that cannot be quoted safely.
pub(super) fn path_steps(path: &[String]) -> Option<String> {
    if path.is_empty() {
        return None;
    }
    let mut text = String::from("$");
    for name in path {
        let unsafe_char = |c: char| c == '"' || c == '\\' || (c as u32) < 0x20;
        if name.is_empty() || name.chars().any(unsafe_char) {
            return None;
        }
        let _ = write!(text, ".\"{}\"", name.replace('\'', "''"));
    }
    Some(text)
}

/// The item method the filter applies to `@` and the bound value, for one value; `None`
/// when it cannot be compared exactly (see the module doc).
fn variable(value: &PathValue) -> Option<(&'static str, Bind)> {
    match value {
        PathValue::String(s) => {
            let s = nul_free(s);
            (s.len() <= MAX_VARCHAR2).then(|| ("", Bind::Text(s.into_owned())))
        }
        PathValue::Number(n) if n.is_finite() => Some((".double()", Bind::Double(*n))),
        PathValue::Number(_) => None,
        PathValue::Bool(b) => Some(("", Bind::Bool(*b))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn path_tests_bind_every_value() {
        let mut sql = Sql::new(String::new());
        let (s, n, b) = (
            PathValue::String("it's".into()),
            PathValue::Number(5.0),
            PathValue::Bool(true),
        );
        push_path_in(&path(&["a", "o'k"]), &[&s, &n, &b], &mut sql);
        assert_eq!(
            sql.text,
            "JSON_EXISTS(j, '$.\"a\".\"o''k\"?((@ == $v1 || (@.double() == $v2 || @ == $v3)))' \
             PASSING :1 AS \"v1\", :2 AS \"v2\", :3 AS \"v3\")"
        );
        assert_eq!(
            sql.binds,
            vec![
                Bind::Text("it's".into()),
                Bind::Double(5.0),
                Bind::Bool(true)
            ]
        );
    }

    #[test]
    fn unquotable_names_and_values_select_everything() {
        for (p, v) in [
            (path(&["a\"b"]), PathValue::Bool(true)),
            (path(&["a\\b"]), PathValue::Bool(true)),
            (path(&[]), PathValue::Bool(true)),
            (path(&["a"]), PathValue::Number(f64::NAN)),
            (path(&["a"]), PathValue::String("x".repeat(4001))),
        ] {
            let mut sql = Sql::new(String::new());
            push_path_in(&p, &[&v], &mut sql);
            assert_eq!(sql.text, "1=1");
            assert!(sql.binds.is_empty());
        }
    }

    #[test]
    fn long_key_lists_stay_within_oracles_in_list_limit() {
        let keys: Vec<Vec<u8>> = (0..2500u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let refs: Vec<&Vec<u8>> = keys.iter().collect();
        let mut sql = Sql::new(String::new());
        push_keys(&refs, &mut sql);
        assert_eq!(sql.text.matches("k IN (").count(), 3);
        assert_eq!(sql.binds.len(), 2500);
    }
}
