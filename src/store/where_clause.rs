//! The shape of a `WHERE` clause, shared by the SQL dialects: how a pushdown `Predicate`
//! tree becomes SQL. Junctions are balanced trees of parentheses (thousands of operands stay
//! far below any database's expression depth limit); an `Or`'s operands on `_id` keys are
//! merged into one key set and its `PathEquals` operands on one path into one path test (a
//! large `$in` stays one index probe and one bound value); key and index ranges become
//! `column >= … AND column < …` on the `_id` key or on an index's entries table.
//!
//! A dialect (`sqlite::sql`, `postgres::sql`, `oracle::sql`) supplies the leaves through [`WhereClause`]:
//! its spelling of true and false, how a key is bound, how a key set, a path equality and a
//! path range are written, how an entries table is named, how a text index's full-text engine is
//! asked for documents with some terms. Values are always bound, never spliced.
//!
//! A cursor's resumption is here too: the rows strictly after a [`ScanPosition`] in the
//! scan's order (a natural sequence number, an `_id` key, or an index key with the `_id` key
//! that breaks its ties), so each batch is a bounded keyset query on the same index.
//!
//! Not for: `SELECT`, `ORDER BY`, `LIMIT` (each dialect's own `select`) or writes.

use crate::query::scan::{
    IndexBound, KeyOrder, PathValue, Predicate, RangeSide, RangeValue, ScanPosition, ScanRequest,
};

/// A statement being written, in one SQL dialect.
pub(super) trait WhereClause {
    /// The dialect's always-true condition (`TRUE`, or `1` in SQLite).
    const TRUE: &'static str;
    /// The dialect's always-false condition.
    const FALSE: &'static str;
    /// The column numbering a collection's rows in insertion order (`rowid`, `n`).
    const SEQUENCE: &'static str;

    /// The statement text so far.
    fn text(&mut self) -> &mut String;
    /// The entries table the scan walks in index order, if it does (see `select`).
    fn walked(&self) -> Option<&str>;
    /// Appends a placeholder for `key`, bound as a byte string.
    fn bind_key(&mut self, key: &[u8]);
    /// Appends a placeholder for a row's sequence number (see [`WhereClause::SEQUENCE`]).
    fn bind_sequence(&mut self, sequence: i64);
    /// `k` (the `_id` key) is one of `keys` (none: false).
    fn push_keys(&mut self, keys: &[&Vec<u8>]);
    /// Some value at `path` equals one of `values`; may over-select (see `scan.rs`).
    fn push_path_in(&mut self, path: &[String], values: &[&PathValue]);
    /// Some value at `path` lies on `side` of `value`, bound included; may over-select (see
    /// `scan.rs`).
    fn push_path_range(&mut self, path: &[String], side: RangeSide, value: RangeValue);
    /// How the entries table `table` (an `IndexRecord::table`) is written in SQL.
    fn entries_table(&self, table: &str) -> String;
    /// The rows strictly after the walked entry `(index_key, key)` in the walk's direction
    /// (`later` is ` > ` or ` < `): a row-value comparison `(dg_o.dg_ik, dg_o.dg_k) > (?, ?)`
    /// where the dialect has one; dialects without (Oracle) spell it out.
    fn push_entry_after(&mut self, later: &str, index_key: &[u8], key: &[u8]) {
        self.text().push_str("(dg_o.dg_ik, dg_o.dg_k)");
        self.text().push_str(later);
        self.text().push('(');
        self.bind_key(index_key);
        self.text().push_str(", ");
        self.bind_key(key);
        self.text().push(')');
    }

    /// `k` is a document with an entry in the text index `table` holding one of `tokens`
    /// (at least one), asked of the backend's full-text engine. A dialect without one
    /// selects every row (the caller re-checks the `$text`; such a backend refuses to build
    /// text indexes anyway, see `StoreSession::create_text_index`).
    fn push_text_terms(&mut self, table: &str, tokens: &[String]) {
        let _ = (table, tokens);
        self.text().push_str(Self::TRUE);
    }
}

/// What a positioned scan reads before `doc` to know where each row leaves it, by the
/// scan's order: the sequence number in natural order, the `_id` key in key order, the
/// walked entry's index key and `_id` key in an index walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PositionColumns {
    Sequence,
    Key,
    IndexEntry,
}

impl PositionColumns {
    /// The columns `request`'s order is resumed by.
    pub(super) fn of(request: &ScanRequest) -> PositionColumns {
        match (&request.order_index, request.order) {
            (Some(_), _) => PositionColumns::IndexEntry,
            (None, Some(_)) => PositionColumns::Key,
            (None, None) => PositionColumns::Sequence,
        }
    }

    /// The select list: the position columns, then `doc` (at index [`Self::width`]).
    pub(super) fn select_list<W: WhereClause>(self) -> String {
        match self {
            PositionColumns::Sequence => format!("{}, doc", W::SEQUENCE),
            PositionColumns::Key => "k, doc".into(),
            PositionColumns::IndexEntry => "dg_o.dg_ik, dg_o.dg_k, doc".into(),
        }
    }

    /// The position a row leaves the scan at, from its leading columns: `sequence` reads
    /// column 0 as an integer, `bytes(i)` column `i` as bytes (each backend's row getter).
    pub(super) fn read<E>(
        self,
        sequence: impl FnOnce() -> Result<i64, E>,
        mut bytes: impl FnMut(usize) -> Result<Vec<u8>, E>,
    ) -> Result<ScanPosition, E> {
        Ok(match self {
            PositionColumns::Sequence => ScanPosition::Natural(sequence()?),
            PositionColumns::Key => ScanPosition::Key(bytes(0)?),
            PositionColumns::IndexEntry => ScanPosition::IndexEntry {
                index_key: bytes(0)?,
                key: bytes(1)?,
            },
        })
    }

    /// How many position columns come before `doc`.
    pub(super) fn width(self) -> usize {
        match self {
            PositionColumns::IndexEntry => 2,
            _ => 1,
        }
    }
}

/// ` AND ` the rows strictly after `after` in `request`'s order. The comparison is on the
/// columns the order walks, so the resumed scan seeks the same index instead of counting
/// an offset.
pub(super) fn push_resume<W: WhereClause>(
    request: &ScanRequest,
    after: &ScanPosition,
    sql: &mut W,
) {
    let later = match request.order {
        Some(KeyOrder::Descending) => " < ",
        _ => " > ",
    };
    sql.text().push_str(" AND ");
    match after {
        ScanPosition::Natural(sequence) => {
            sql.text().push_str(W::SEQUENCE);
            sql.text().push_str(" > ");
            sql.bind_sequence(*sequence);
        }
        ScanPosition::Key(key) => {
            sql.text().push('k');
            sql.text().push_str(later);
            sql.bind_key(key);
        }
        ScanPosition::IndexEntry { index_key, key } => sql.push_entry_after(later, index_key, key),
    }
}

/// Appends the condition for `predicate`.
pub(super) fn push_predicate<W: WhereClause>(predicate: &Predicate, sql: &mut W) {
    match predicate {
        Predicate::True => sql.text().push_str(W::TRUE),
        Predicate::KeyEquals(key) => sql.push_keys(&[key]),
        Predicate::KeyIn(keys) => sql.push_keys(&keys.iter().collect::<Vec<_>>()),
        Predicate::PathEquals { path, value } => sql.push_path_in(path, &[value]),
        Predicate::PathRange { path, side, value } => sql.push_path_range(path, *side, *value),
        Predicate::KeyRange { lower, upper } => {
            sql.text().push('(');
            sql.text().push_str(W::TRUE);
            push_bounds("k", lower, upper, sql);
            sql.text().push(')');
        }
        Predicate::IndexRange {
            table,
            lower,
            upper,
        } => {
            // On the index the scan walks (one entry per document), the bounds apply to the
            // walked entry itself: the range and the order are one index walk, no sort.
            let walked = sql.walked() == Some(table.as_str());
            let column = if walked { "dg_o.dg_ik" } else { "ik" };
            if walked {
                sql.text().push('(');
            } else {
                let entries = sql.entries_table(table);
                let text = sql.text();
                text.push_str("k IN (SELECT k FROM ");
                text.push_str(&entries);
                text.push_str(" WHERE ");
            }
            sql.text().push_str(W::TRUE);
            push_bounds(column, lower, upper, sql);
            sql.text().push(')');
        }
        Predicate::TextTerms { tokens, .. } if tokens.is_empty() => sql.text().push_str(W::FALSE),
        Predicate::TextTerms { table, tokens } => sql.push_text_terms(table, tokens),
        Predicate::And(parts) => {
            let terms: Vec<Term<'_>> = parts.iter().map(Term::Predicate).collect();
            push_balanced(&terms, " AND ", W::TRUE, sql);
        }
        Predicate::Or(parts) => push_balanced(&or_terms(parts), " OR ", W::FALSE, sql),
    }
}

/// ` AND column >= ?` / ` AND column < ?` (or `>` / `<=`) for the bounds that are set.
fn push_bounds<W: WhereClause>(
    column: &str,
    lower: &Option<IndexBound>,
    upper: &Option<IndexBound>,
    sql: &mut W,
) {
    let bounds = [(lower, ">=", ">"), (upper, "<=", "<")];
    for (bound, inclusive, exclusive) in bounds {
        if let Some(bound) = bound {
            let op = if bound.inclusive {
                inclusive
            } else {
                exclusive
            };
            let condition = format!(" AND {column} {op} ");
            sql.text().push_str(&condition);
            sql.bind_key(&bound.key);
        }
    }
}

/// One operand of a junction: a predicate, or several `Or` operands merged into one.
enum Term<'a> {
    Predicate(&'a Predicate),
    Keys(Vec<&'a Vec<u8>>),
    PathIn(&'a [String], Vec<&'a PathValue>),
}

/// The operands of an `Or`, with every key operand merged into one key set and the
/// `PathEquals` operands on the same path merged into one path test.
fn or_terms(parts: &[Predicate]) -> Vec<Term<'_>> {
    let mut keys: Vec<&Vec<u8>> = Vec::new();
    let mut paths: Vec<(&[String], Vec<&PathValue>)> = Vec::new();
    let mut terms = Vec::new();
    for part in parts {
        match part {
            Predicate::KeyEquals(key) => keys.push(key),
            Predicate::KeyIn(more) => keys.extend(more),
            Predicate::PathEquals { path, value } => {
                match paths.iter_mut().find(|(p, _)| *p == path.as_slice()) {
                    Some((_, values)) => values.push(value),
                    None => paths.push((path, vec![value])),
                }
            }
            other => terms.push(Term::Predicate(other)),
        }
    }
    if !keys.is_empty() {
        terms.push(Term::Keys(keys));
    }
    terms.extend(
        paths
            .into_iter()
            .map(|(path, values)| Term::PathIn(path, values)),
    );
    terms
}

fn push_term<W: WhereClause>(term: &Term<'_>, sql: &mut W) {
    match term {
        Term::Predicate(p) => push_predicate(p, sql),
        Term::Keys(keys) => sql.push_keys(keys),
        Term::PathIn(path, values) => sql.push_path_in(path, values),
    }
}

/// Operands joined by `op` as a balanced tree of parentheses.
fn push_balanced<W: WhereClause>(terms: &[Term<'_>], op: &str, empty: &str, sql: &mut W) {
    match terms {
        [] => sql.text().push_str(empty),
        [one] => push_term(one, sql),
        _ => {
            let (left, right) = terms.split_at(terms.len() / 2);
            sql.text().push('(');
            push_balanced(left, op, empty, sql);
            sql.text().push_str(op);
            push_balanced(right, op, empty, sql);
            sql.text().push(')');
        }
    }
}
