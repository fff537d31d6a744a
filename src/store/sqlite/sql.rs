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
//! - `KeyEquals`/`KeyIn` compare the `k` column, served by its unique index. Up to
//!   `INLINE_KEYS` keys are bound one per `?`; more are bound as one JSON array of hex
//!   strings and expanded with `json_each`, which the planner still drives through the index.
//! - `PathEquals` over-selects as `scan.rs` allows: any document where a prefix of the path
//!   is an array is returned, and `true` equals `1` (`->>` yields 1 for true).
//!
//! Not for: writes (`write.rs`) or the catalog (`catalog.rs`).

use rusqlite::types::Value;

use super::super::scan::{KeyOrder, PathValue, Predicate, ScanRequest};

/// Above this many keys, `KeyIn` binds a single JSON array instead of one `?` per key.
const INLINE_KEYS: usize = 50;

/// A statement text with its bound values, in order.
#[derive(Debug)]
pub(super) struct Sql {
    pub(super) text: String,
    pub(super) params: Vec<Value>,
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
pub(super) fn select(table: &str, columns: &str, request: &ScanRequest) -> Sql {
    let mut sql = Sql {
        text: format!("SELECT {columns} FROM {} WHERE ", quote_ident(table)),
        params: Vec::new(),
    };
    push_predicate(&request.filter, &mut sql);
    sql.text.push_str(match request.order {
        Some(KeyOrder::Ascending) => " ORDER BY k ASC",
        Some(KeyOrder::Descending) => " ORDER BY k DESC",
        None => " ORDER BY rowid",
    });
    if request.limit.is_some() || request.skip > 0 {
        let limit = request.limit.map_or(-1, clamp);
        sql.text.push_str(" LIMIT ? OFFSET ?");
        sql.params.push(Value::Integer(limit));
        sql.params.push(Value::Integer(clamp(request.skip)));
    }
    sql
}

/// `SELECT COUNT(*) FROM <table> WHERE …`.
pub(super) fn count(table: &str, filter: &Predicate) -> Sql {
    let mut sql = Sql {
        text: format!("SELECT COUNT(*) FROM {} WHERE ", quote_ident(table)),
        params: Vec::new(),
    };
    push_predicate(filter, &mut sql);
    sql
}

fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn push_predicate(predicate: &Predicate, sql: &mut Sql) {
    match predicate {
        Predicate::True => sql.text.push('1'),
        Predicate::KeyEquals(key) => {
            sql.text.push_str("k = ?");
            sql.params.push(Value::Blob(key.clone()));
        }
        Predicate::KeyIn(keys) if keys.is_empty() => sql.text.push('0'),
        Predicate::KeyIn(keys) if keys.len() <= INLINE_KEYS => {
            sql.text.push_str("k IN (");
            for (i, key) in keys.iter().enumerate() {
                sql.text.push_str(if i == 0 { "?" } else { ", ?" });
                sql.params.push(Value::Blob(key.clone()));
            }
            sql.text.push(')');
        }
        Predicate::KeyIn(keys) => {
            sql.text
                .push_str("k IN (SELECT unhex(value) FROM json_each(?))");
            sql.params.push(Value::Text(hex_array(keys)));
        }
        Predicate::PathEquals { path, value } => push_path_equals(path, value, sql),
        Predicate::And(parts) => push_junction(parts, " AND ", '1', sql),
        Predicate::Or(parts) => push_junction(parts, " OR ", '0', sql),
    }
}

fn push_junction(parts: &[Predicate], op: &str, empty: char, sql: &mut Sql) {
    if parts.is_empty() {
        sql.text.push(empty);
        return;
    }
    sql.text.push('(');
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            sql.text.push_str(op);
        }
        push_predicate(part, sql);
    }
    sql.text.push(')');
}

/// `(j ->> '$."a"."b"' = ? OR json_type(j, '$."a"') = 'array' OR json_type(j, '$."a"."b"') = 'array')`
fn push_path_equals(path: &[String], value: &PathValue, sql: &mut Sql) {
    let bound = match value {
        PathValue::String(s) => Value::Text(s.clone()),
        PathValue::Number(n) if n.is_finite() => Value::Real(*n),
        // NaN and ±Inf live in the image as tagged objects: no pushdown.
        PathValue::Number(_) => return sql.text.push('1'),
        PathValue::Bool(b) => Value::Integer(i64::from(*b)),
    };
    let Some(prefixes) = json_path_prefixes(path) else {
        return sql.text.push('1');
    };
    let Some(full) = prefixes.last() else {
        return sql.text.push('1');
    };
    sql.text.push_str(&format!("(j ->> {full} = ?"));
    sql.params.push(bound);
    for prefix in &prefixes {
        sql.text
            .push_str(&format!(" OR json_type(j, {prefix}) = 'array'"));
    }
    sql.text.push(')');
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
fn hex_array(keys: &[Vec<u8>]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(keys.iter().map(|k| k.len() * 2 + 3).sum::<usize>() + 2);
    out.push('[');
    for (i, key) in keys.iter().enumerate() {
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
    fn hex_array_encodes() {
        assert_eq!(hex_array(&[vec![0, 255], vec![]]), r#"["00ff",""]"#);
    }
}
