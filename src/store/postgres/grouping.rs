//! A `$group` right after a read, run as one SQL statement (`StoreSession::group_scan`; what
//! is pushed and how its rows are finished: `query::aggregate::sql_group`).
//!
//! The statement reads the scan's rows (`n`, the image `j`, its number types `nt`), gives
//! each value of a grouped, totalled or ordered path a class, groups with `GROUP BY` on the
//! key's image values, and answers per group its size, its first and last rows' documents,
//! the totals, and the documents of the rows holding each `$min`/`$max`.
//!
//! Classes of a value (the image alone cannot tell an Int64 or a Decimal128 from a double:
//! `nt` can):
//! - `i` Int32, `l` Int64 of magnitude < 2^53 (exact in the image, as an integer), `d` finite
//!   Double;
//! - `s` string without U+0000 (the image shows it as U+FFFD, so `nt` marks those), `b`
//!   boolean, `n` null, `m` missing, `a` array, `o` any other object or tagged value;
//! - `x` what no SQL here handles exactly: a Decimal128, a larger Int64, NaN or ±Inf, a
//!   string holding U+0000, a number or string in a row written before `nt` existed (NULL),
//!   or a path of several fields that meets an array or a tagged value (a date, an
//!   ObjectId: `{"$t": …}` in the image) on its way.
//!
//! Exactness, per group (the answer is None when any group fails it):
//! - key values are `i l d s b n m`: `jsonb` equality then is MongoDB's (numbers compare by
//!   value across types, strings by code points), hashing agrees with it;
//! - totalled values are anything but `x`. Integers are summed exactly (`numeric`). Each
//!   double `x` with |x| < 2^53 and no bits below 2^-74 splits exactly into
//!   `trunc(x) + f1·2^-37 + f2·2^-74` with integer `f1`, `f2` (float operations that are
//!   exact: subtracting the integer part, scaling by powers of two), so the exact total
//!   `E` of all the numbers is a `numeric`. Rust's compensated sum (`NumericSum`) of `k`
//!   additions (an integer adds two parts) lands within `b = 1.02·k²·2^-106·Σ|x|` of `E`
//!   (TwoSum's error terms are exact; only their running sum rounds, each time by at most
//!   2^-53 of it), and rounds `high + low` to a double; so when `E - b` and `E + b` round
//!   to the same double, that double (`E::float8`) is Rust's total. The statement checks
//!   that with twice `b`;
//! - the read's filter, when its SQL only narrows the rows (`GroupRequest::certain`): every
//!   row read holds each equality's value at its path, equal in `jsonb` (a number of class
//!   `i l d`) — a row matched only through an array, or by a lossy image, fails;
//! - `$min`/`$max` values are `i l d s n m`: numbers order before strings, numbers by
//!   their exact image values (shortest round-trip decimals keep the doubles' order),
//!   strings by bytes (`COLLATE "C"`, UTF-8 order is code point order), ties to the first
//!   row (`n`).
//!
//! Not for: the scan's SQL (`sql.rs`) or finishing the groups (`query::aggregate::sql_group`).

use std::fmt::Write as _;

use bson::Bson;

use super::super::number_types::{DECIMAL, DOUBLE, INT64};
use super::super::{CollectionRecord, Extreme, GroupRequest, GroupRow, NumberTotals, StoreError};
use super::conn::{Params, PgConn};
use super::sql;
use crate::query::scan::ScanRequest;
use crate::query::sql_group::CertainTest;

/// The image's tag of a date (`{"$t": 9, "v": <milliseconds>}`).
const DATE_TAG: u8 = 9;
/// 2^53: integers up to it are exact in a double (and in the image).
const EXACT_INT: &str = "9007199254740992";
/// 2^37, the scale of each fractional part of a split double.
const SPLIT_SCALE: &str = "137438953472::float8";
/// 2^-37 and 2^-74, exactly.
const TWO_POW_MINUS_37: &str = "0.0000000000072759576141834259033203125";
const TWO_POW_MINUS_74: &str =
    "0.0000000000000000000000529395592033938256113708089590072631835937500";
/// Twice 1.02·2^-106, rounded up: the factor of the compensated sum's error bound.
const ERROR_FACTOR: &str = "2.6e-32::float8";
/// The largest `n`, for ordering ties to the first row under `max`.
const MAX_N: &str = "9223372036854775807";

/// Runs `group` over the rows `request` selects; None when a value is one the SQL cannot
/// handle exactly, the scan is not in natural order, or the documents the groups name pass
/// `group.max_bytes` (the statement stops sending them at the first group past it).
pub(super) async fn group_scan(
    conn: &mut PgConn,
    coll: &CollectionRecord,
    request: &ScanRequest,
    group: &GroupRequest,
) -> Result<Option<Vec<GroupRow>>, StoreError> {
    if request.order.is_some() || request.order_index.is_some() {
        return Ok(None);
    }
    let scan = sql::select(&coll.table, "n, j, nt", request, None)?;
    let mut statement = Statement {
        params: scan.params,
        paths: Vec::new(),
    };
    let text = statement.text(&coll.table, &scan.text, group);
    let rows = conn.query(&text, &statement.params).await?;
    let mut groups = Vec::with_capacity(rows.len());
    for row in rows {
        let mut column = ColumnReader { row: &row, next: 0 };
        let count: i64 = column.get()?;
        let exact: bool = column.get()?;
        if !exact {
            return Ok(None);
        }
        let first: Vec<u8> = column.get()?;
        let last: Option<Vec<u8>> = if group.wants_last {
            Some(column.get()?)
        } else {
            None
        };
        let mut totals = Vec::with_capacity(group.totals.len());
        for _ in &group.totals {
            let int32_count: i64 = column.get()?;
            let int64_count: i64 = column.get()?;
            let double_count: i64 = column.get()?;
            let integers: String = column.get()?;
            let rounded: f64 = column.get()?;
            totals.push(NumberTotals {
                int32_count: unsigned(int32_count),
                int64_count: unsigned(int64_count),
                double_count: unsigned(double_count),
                integers: integers
                    .parse()
                    .map_err(|e| StoreError::Corrupt(format!("integer total {integers}: {e}")))?,
                rounded,
            });
        }
        let mut extremes = Vec::with_capacity(group.extremes.len());
        for _ in &group.extremes {
            extremes.push(column.get::<Option<Vec<u8>>>()?);
        }
        let _row_bytes: i32 = column.get()?;
        let bytes: i64 = column.get()?;
        if unsigned(bytes) > group.max_bytes {
            // Past the budget: Rust's grouping, which spills, runs instead.
            return Ok(None);
        }
        groups.push(GroupRow {
            count: unsigned(count),
            first,
            last,
            totals,
            extremes,
        });
    }
    Ok(Some(groups))
}

fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Reads a row's columns in order.
struct ColumnReader<'a> {
    row: &'a tokio_postgres::Row,
    next: usize,
}

impl ColumnReader<'_> {
    fn get<'b, T: tokio_postgres::types::FromSql<'b>>(&'b mut self) -> Result<T, StoreError> {
        let i = self.next;
        self.next += 1;
        self.row
            .try_get(i)
            .map_err(|e| StoreError::Corrupt(format!("grouped row, column {i}: {e}")))
    }
}

/// The statement being written: its bound values (the scan's first) and the paths bound.
struct Statement {
    params: Params,
    paths: Vec<(Vec<String>, String)>,
}

impl Statement {
    /// The placeholder of `path` as a `text[]`, bound once.
    fn path(&mut self, path: &[String]) -> String {
        if let Some((_, placeholder)) = self.paths.iter().find(|(p, _)| p == path) {
            return placeholder.clone();
        }
        self.params.push(Box::new(path.to_vec()));
        let placeholder = format!("${}::text[]", self.params.len());
        self.paths.push((path.to_vec(), placeholder.clone()));
        placeholder
    }

    fn text(&mut self, table: &str, scan: &str, group: &GroupRequest) -> String {
        // Every path read, numbered: value `v{i}`, class `c{i}`, number `x{i}`.
        let mut paths: Vec<&[String]> = Vec::new();
        let keys: Vec<usize> = group.key.iter().map(|p| index_of(&mut paths, p)).collect();
        let totals: Vec<usize> = group
            .totals
            .iter()
            .map(|p| index_of(&mut paths, p))
            .collect();
        let extremes: Vec<(Extreme, usize)> = group
            .extremes
            .iter()
            .map(|(e, p)| (*e, index_of(&mut paths, p)))
            .collect();
        let certain: Vec<(usize, &CertainTest)> = group
            .certain
            .iter()
            .map(|(p, test)| (index_of(&mut paths, p), test))
            .collect();
        let paths: Vec<Vec<String>> = paths.into_iter().map(<[String]>::to_vec).collect();

        // A filter equality to a string or a boolean needs no class: an image equal to it is
        // that value (a string holding U+0000 shows U+FFFD, which the value has not).
        let plain_equality = |i: usize| {
            certain.iter().any(|(c, test)| {
                *c == i
                    && matches!(
                        test,
                        CertainTest::Equals(Bson::String(_) | Bson::Boolean(_))
                    )
            })
        };
        let compared = |i: usize| {
            certain
                .iter()
                .any(|(c, test)| *c == i && matches!(test, CertainTest::Compares(..)))
        };
        let needs_class: Vec<bool> = (0..paths.len())
            .map(|i| {
                keys.contains(&i)
                    || totals.contains(&i)
                    || extremes.iter().any(|(_, e)| *e == i)
                    || compared(i)
                    || certain.iter().any(|(c, _)| *c == i) && !plain_equality(i)
            })
            .collect();
        // Every path of several fields is walked: it must meet no array on the way (an array
        // makes MongoDB's value an array, or a missing value a match through it, where the
        // image's path is NULL) and no tagged value (a date's `{"$t": 9, "v": …}` would
        // answer `a.v` with its milliseconds, where MongoDB finds `a.v` missing).
        let needs_walk: Vec<bool> = paths.iter().map(|path| path.len() > 1).collect();

        // Level 1: the paths' image values and number types, and whether each walk meets no
        // array and no tagged value. `OFFSET 0` keeps each level's expressions evaluated once per row.
        let mut read = String::from("SELECT dg_s.n, dg_s.nt IS NOT NULL AS dg_typed");
        for (i, path) in paths.iter().enumerate() {
            let placeholder = self.path(path);
            let _ = write!(
                read,
                ", dg_s.j #> {placeholder} AS v{i}, dg_s.nt #>> {placeholder} AS y{i}"
            );
            if needs_walk[i] {
                let mut walk = String::from("true");
                for end in 1..path.len() {
                    let prefix = self.path(&path[..end]);
                    let _ = write!(
                        walk,
                        " AND jsonb_typeof(dg_s.j #> {prefix}) IS DISTINCT FROM 'array' \
                         AND NOT coalesce(dg_s.j #> {prefix} ? '$t', false)"
                    );
                }
                let _ = write!(read, ", ({walk}) AS w{i}");
            }
        }
        let _ = write!(read, " FROM ({scan}) AS dg_s OFFSET 0");

        // Level 2: classes, and the totalled numbers as doubles.
        let mut classed = String::from("SELECT n");
        for i in 0..paths.len() {
            let _ = write!(classed, ", v{i}");
            if needs_class[i] {
                let _ = write!(classed, ", {} AS c{i}", class(i, needs_walk[i]));
            } else if needs_walk[i] {
                let _ = write!(classed, ", w{i}");
            }
            if totals.contains(&i) {
                let _ = write!(
                    classed,
                    ", CASE WHEN jsonb_typeof(v{i}) = 'number' THEN (v{i})::float8 END AS x{i}"
                );
            }
        }
        let _ = write!(classed, " FROM ({read}) AS dg_r OFFSET 0");

        // Levels 2b and 2c: each totalled double split into its integer part `h` (NULL when
        // it is no double a split holds) and two 37-bit fractions, `m` and the scaled rest `l`
        // (an integer when the double has no bits below 2^-74).
        if !totals.is_empty() {
            let mut halves = String::from("SELECT *");
            let mut split = String::from("SELECT *");
            for i in &totals {
                let _ = write!(
                    halves,
                    ", CASE WHEN c{i} = 'd' AND abs(x{i}) < {EXACT_INT} THEN trunc(x{i}) END AS h{i}, \
                     (x{i} - trunc(x{i})) * {SPLIT_SCALE} AS f{i}"
                );
                let _ = write!(
                    split,
                    ", trunc(f{i}) AS m{i}, (f{i} - trunc(f{i})) * {SPLIT_SCALE} AS l{i}"
                );
            }
            classed = format!(
                "{split} FROM ({halves} FROM ({classed}) AS dg_h OFFSET 0) AS dg_f OFFSET 0"
            );
        }

        // Level 3: the groups.
        let mut exact = vec!["true".to_string()];
        for i in &keys {
            exact.push(format!("c{i} IN ('i','l','d','s','b','n','m')"));
        }
        for i in &totals {
            exact.push(format!("c{i} <> 'x'"));
        }
        for (_, i) in &extremes {
            exact.push(format!("c{i} IN ('i','l','d','s','n','m')"));
        }
        // Rows a comparison certainly rejects: an exact number on the wrong side, or a value
        // of another type bracket (a string, boolean, null, object or missing value).
        let mut rejected = Vec::new();
        for (i, test) in &certain {
            let value = match test {
                CertainTest::Equals(value) | CertainTest::Compares(_, value) => value,
            };
            self.params.push(Box::new(json_literal(value)));
            let literal = format!("${}::text::jsonb", self.params.len());
            // A date is an `o` whose tag is 9; it is compared by its milliseconds.
            let date = format!("(c{i} = 'o' AND coalesce(v{i} ->> '$t', '') = '{DATE_TAG}')");
            exact.push(match test {
                CertainTest::Compares(_, Bson::DateTime(_)) => date.clone(),
                CertainTest::Compares(..) => format!("c{i} IN ('i','l','d')"),
                CertainTest::Equals(_) if needs_class[*i] => {
                    format!("(c{i} IN ('i','l','d','s','b') AND v{i} = {literal})")
                }
                CertainTest::Equals(_) if needs_walk[*i] => format!("(w{i} AND v{i} = {literal})"),
                CertainTest::Equals(_) => format!("v{i} = {literal}"),
            });
            match test {
                CertainTest::Compares(comparison, Bson::DateTime(_)) => {
                    let op = comparison.operator();
                    rejected.push(format!(
                        "c{i} IN ('i','l','d','s','b','n','m') OR (c{i} = 'o' AND NOT {date}) \
                         OR ({date} AND NOT (v{i} -> 'v') {op} {literal})"
                    ));
                }
                CertainTest::Compares(comparison, _) => {
                    let op = comparison.operator();
                    rejected.push(format!(
                        "c{i} IN ('s','b','n','o','m') OR (c{i} IN ('i','l','d') AND NOT v{i} {op} {literal})"
                    ));
                }
                CertainTest::Equals(_) => {}
            }
        }
        let mut grouped = format!(
            "SELECT min(n) AS dg_first, max(n) AS dg_last, count(*) AS dg_count, \
             bool_and({}) AS dg_exact",
            exact.join(" AND ")
        );
        for (t, i) in totals.iter().enumerate() {
            let split = format!("FILTER (WHERE h{i} IS NOT NULL)");
            let _ = write!(
                grouped,
                ", count(*) FILTER (WHERE c{i} = 'i') AS t{t}_i32, \
                 count(*) FILTER (WHERE c{i} = 'l') AS t{t}_i64, \
                 count(*) FILTER (WHERE c{i} = 'd') AS t{t}_dbl, \
                 coalesce(sum((v{i})::numeric) FILTER (WHERE c{i} IN ('i','l')), 0) AS t{t}_ints, \
                 coalesce(sum(h{i}::bigint), 0) AS t{t}_hi, \
                 coalesce(sum(m{i}::bigint) {split}, 0) AS t{t}_mid, \
                 coalesce(sum(l{i}::bigint) {split}, 0) AS t{t}_lo, \
                 coalesce(sum(abs(x{i})) FILTER (WHERE c{i} IN ('i','l') OR h{i} IS NOT NULL), 0) \
                     AS t{t}_abs, \
                 coalesce(bool_and(h{i} IS NOT NULL AND l{i} = trunc(l{i})) \
                     FILTER (WHERE c{i} = 'd'), true) AS t{t}_split"
            );
        }
        for (e, (extreme, i)) in extremes.iter().enumerate() {
            let numbers = format!("FILTER (WHERE c{i} IN ('i','l','d'))");
            let strings = format!("FILTER (WHERE c{i} = 's')");
            let text = format!("(v{i} #>> '{{}}') COLLATE \"C\"");
            let _ = match extreme {
                Extreme::Least => write!(
                    grouped,
                    ", coalesce((min(ARRAY[(v{i})::numeric, n::numeric]) {numbers})[2]::bigint, \
                     (min(ARRAY[{text}, lpad(n::text, 19, '0')]) {strings})[2]::bigint) AS e{e}"
                ),
                Extreme::Greatest => write!(
                    grouped,
                    ", coalesce({MAX_N} - (max(ARRAY[{text}, \
                     lpad(({MAX_N} - n)::text, 19, '0')]) {strings})[2]::bigint, \
                     -((max(ARRAY[(v{i})::numeric, (-n)::numeric]) {numbers})[2]::bigint)) AS e{e}"
                ),
            };
        }
        let _ = write!(grouped, " FROM ({classed}) AS dg_c");
        if !rejected.is_empty() {
            let _ = write!(grouped, " WHERE NOT ({})", rejected.join(" OR "));
        }
        if !keys.is_empty() {
            let by: Vec<String> = keys
                .iter()
                .map(|i| {
                    if group.missing_is_null {
                        format!("coalesce(v{i}, 'null'::jsonb)")
                    } else {
                        format!("v{i}")
                    }
                })
                .collect();
            let _ = write!(grouped, " GROUP BY {}", by.join(", "));
        }

        // Level 4: exact totals, then the documents the groups name.
        let mut with_totals = String::from("SELECT dg_a.*");
        for t in 0..totals.len() {
            let _ = write!(
                with_totals,
                ", dg_a.t{t}_ints + dg_a.t{t}_hi + dg_a.t{t}_mid * {TWO_POW_MINUS_37} \
                 + dg_a.t{t}_lo * {TWO_POW_MINUS_74} AS t{t}_exact, \
                 (dg_a.t{t}_abs * ((2 * (dg_a.t{t}_i32 + dg_a.t{t}_i64) + dg_a.t{t}_dbl)::float8 \
                 ^ 2) * {ERROR_FACTOR})::numeric AS t{t}_bound"
            );
        }
        let _ = write!(with_totals, " FROM ({grouped}) AS dg_a");

        let mut ok = vec!["dg_g.dg_exact".to_string()];
        for t in 0..totals.len() {
            ok.push(format!(
                "(dg_g.t{t}_dbl = 0 OR (dg_g.t{t}_split AND \
                 (dg_g.t{t}_exact - dg_g.t{t}_bound)::float8 \
                 = (dg_g.t{t}_exact + dg_g.t{t}_bound)::float8))"
            ));
        }
        let mut out = format!(
            "SELECT dg_g.dg_count, {} AS dg_ok, dg_first_row.doc AS dg_first_doc",
            ok.join(" AND ")
        );
        let mut row_bytes = String::from("octet_length(dg_first_row.doc)");
        let mut joins = format!(" JOIN {table} AS dg_first_row ON dg_first_row.n = dg_g.dg_first");
        if group.wants_last {
            out.push_str(", dg_last_row.doc AS dg_last_doc");
            row_bytes.push_str(" + octet_length(dg_last_row.doc)");
            let _ = write!(
                joins,
                " JOIN {table} AS dg_last_row ON dg_last_row.n = dg_g.dg_last"
            );
        }
        for t in 0..totals.len() {
            let _ = write!(
                out,
                ", dg_g.t{t}_i32, dg_g.t{t}_i64, dg_g.t{t}_dbl, dg_g.t{t}_ints::text, \
                 dg_g.t{t}_exact::float8"
            );
        }
        for e in 0..extremes.len() {
            let _ = write!(out, ", dg_e{e}.doc AS dg_e{e}_doc");
            let _ = write!(row_bytes, " + coalesce(octet_length(dg_e{e}.doc), 0)");
            let _ = write!(
                joins,
                " LEFT JOIN {table} AS dg_e{e} ON dg_e{e}.n = dg_g.e{e}"
            );
        }
        // The documents answered stop at the first group past the byte budget.
        self.params
            .push(Box::new(i64::try_from(group.max_bytes).unwrap_or(i64::MAX)));
        let budget = format!("${}::bigint", self.params.len());
        format!(
            "SELECT * FROM ({out}, {row_bytes} AS dg_row_bytes, \
             sum({row_bytes}) OVER (ORDER BY dg_g.dg_first ROWS UNBOUNDED PRECEDING) AS dg_bytes \
             FROM ({with_totals}) AS dg_g{joins}) AS dg_out \
             WHERE dg_out.dg_bytes - dg_out.dg_row_bytes <= {budget} ORDER BY dg_out.dg_bytes"
        )
    }
}

/// The image of a value `sql_group::certain_conditions` takes, as JSON text.
fn json_literal(value: &Bson) -> String {
    match value {
        Bson::String(s) => serde_json::Value::from(s.as_str()).to_string(),
        Bson::Boolean(b) => b.to_string(),
        Bson::Int32(n) => n.to_string(),
        Bson::Int64(n) => n.to_string(),
        Bson::Double(d) => format!("{d:?}"),
        // Compared with a date's `v`.
        Bson::DateTime(date) => date.timestamp_millis().to_string(),
        // Never asked for; matches no image.
        _ => "{\"$t\":0}".to_string(),
    }
}

/// The index of `path` in `paths`, added if new.
fn index_of<'a>(paths: &mut Vec<&'a [String]>, path: &'a [String]) -> usize {
    match paths.iter().position(|p| *p == path) {
        Some(i) => i,
        None => {
            paths.push(path);
            paths.len() - 1
        }
    }
}

/// The class of value `v{i}` (see the module doc); `walked`: whether `w{i}` says if its walk
/// met no array.
fn class(i: usize, walked: bool) -> String {
    let by_type = format!(
        "CASE jsonb_typeof(v{i}) \
         WHEN 'number' THEN CASE WHEN NOT dg_typed THEN 'x' WHEN y{i} IS NULL THEN 'i' \
             WHEN y{i} = '{DOUBLE}' THEN 'd' \
             WHEN y{i} = '{INT64}' AND abs((v{i})::numeric) < {EXACT_INT} THEN 'l' ELSE 'x' END \
         WHEN 'string' THEN CASE WHEN dg_typed AND y{i} IS NULL THEN 's' ELSE 'x' END \
         WHEN 'boolean' THEN 'b' WHEN 'null' THEN 'n' WHEN 'array' THEN 'a' \
         WHEN 'object' THEN CASE WHEN v{i} ->> '$t' IN ('{DOUBLE}', '{DECIMAL}') THEN 'x' ELSE 'o' END \
         ELSE 'm' END"
    );
    if walked {
        format!("CASE WHEN NOT w{i} THEN 'x' ELSE {by_type} END")
    } else {
        by_type
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> Vec<String> {
        p.split('.').map(str::to_owned).collect()
    }

    /// The statement of the benchmark's `$match {active: true}` + `$group` by
    /// `address.city` with `$sum` of `score`, printed for timing by hand (`--nocapture`).
    #[test]
    fn the_statement_binds_every_path_once_and_walks_only_where_needed() {
        let bench = GroupRequest {
            key: vec![path("address.city")],
            missing_is_null: true,
            totals: vec![path("score")],
            extremes: Vec::new(),
            wants_last: false,
            max_bytes: 1000,
            certain: vec![(path("active"), CertainTest::Equals(Bson::Boolean(true)))],
        };
        let mut statement = Statement {
            params: Vec::new(),
            paths: Vec::new(),
        };
        let text = statement.text("t", "SELECT n, j, nt FROM t", &bench);
        println!("{text}");
        // address.city, address (its walk), score, active; the literal; the budget.
        assert_eq!(statement.params.len(), 6);
        assert_eq!(text.matches("$1::text[]").count(), 2, "{text}");
        assert!(text.contains("AS w0") && !text.contains("AS w1") && !text.contains("AS w2"));
        // A total through a component that could index an array checks its walk.
        let indexed = GroupRequest {
            key: Vec::new(),
            totals: vec![path("a.0")],
            certain: Vec::new(),
            ..bench
        };
        let text = statement.text("t", "SELECT n, j, nt FROM t", &indexed);
        assert!(text.contains("AS w0"), "{text}");
    }
}
