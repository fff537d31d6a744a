//! Golden files of the Oracle backend's SQL (feature `oracle`): for every pushdown case of
//! the differential suite that SQLite and PostgreSQL run (`tests/differential`: the
//! hand-written filters, the field × operator × operand table, the sorted/skipped/limited
//! shapes, MongoDB's documented cases), the case is planned as the core plans it — on the
//! corpus's indexed collection and on the plain one — and the Oracle `SELECT` (and the
//! `COUNT(*)` of an exact filter, and for a sorted case the `SELECT` of a cursor's next
//! batch resumed after a position) with its bound values is compared with a reviewed file
//! under `fixtures/oracle_sql/`, so a change to the SQL shows in review. Every statement
//! also passes a grammar-level check (`lint`): string literals and quoted identifiers
//! closed, parentheses balanced, placeholders `:1..:n` each once in order with exactly one
//! bound value each, every string literal a JSON path (values are bound, never spliced),
//! every `$vN` of a path passed by `PASSING … AS "vN"`.
//!
//! `DOCGATE_BLESS=1 cargo test --features oracle --test oracle_sql` rewrites the files (then
//! review the diff). Not here: running the SQL (no Oracle database can run on CI; with one,
//! `DOCGATE_TEST_ORACLE` runs the suites on it).
#![cfg(feature = "oracle")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "differential"]
mod differential_cases {
    #![allow(dead_code)]
    pub mod cases;
    pub mod corpus;
}

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use differential_cases::cases::{
    documented_cases, hand_written_filters, shaped_cases, table_cases, Case,
};
use differential_cases::corpus::{corpus, index_specs};
use docgate::query::planner::{IndexCandidate, ReadPlan};
use docgate::query::{Filter, IndexSpec, SortSpec};
use docgate::store::oracle::sql::{count, select, Sql};
use docgate::store::ScanPosition;
use mongodb::bson::{Bson, Document};

/// The collection table and the entries tables, as the catalog would name them.
const TABLE: &str = "\"DG_C1\"";

struct GoldenIndex {
    spec: IndexSpec,
    table: String,
    multikey: bool,
}

impl IndexCandidate for GoldenIndex {
    fn spec(&self) -> &IndexSpec {
        &self.spec
    }
    fn entries_table(&self) -> &str {
        &self.table
    }
    fn is_multikey(&self) -> bool {
        self.multikey
    }
}

/// Whether some document meets an array along `path`.
fn meets_array(docs: &[Document], path: &str) -> bool {
    fn walk(value: &Bson, parts: &[&str]) -> bool {
        match value {
            Bson::Array(_) => true,
            Bson::Document(d) => match parts.split_first() {
                Some((first, rest)) => d.get(*first).is_some_and(|v| walk(v, rest)),
                None => false,
            },
            _ => false,
        }
    }
    let parts: Vec<&str> = path.split('.').collect();
    docs.iter()
        .any(|d| walk(&Bson::Document(d.clone()), &parts))
}

/// The indexed collection's indexes, multikey where the corpus makes them so.
fn indexes() -> Vec<GoldenIndex> {
    let docs = corpus();
    index_specs()
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let spec = IndexSpec::parse(spec).unwrap();
            let multikey = spec.fields.iter().any(|(path, _)| meets_array(&docs, path));
            GoldenIndex {
                spec,
                table: format!("\"DG_I{}\"", i + 1),
                multikey,
            }
        })
        .collect()
}

/// The grammar-level check of one statement (see the module doc); an error names the
/// problem.
fn lint(sql: &Sql) -> Result<(), String> {
    let text = &sql.text;
    let chars: Vec<char> = text.chars().collect();
    let (mut i, mut depth) = (0, 0i64);
    let mut placeholders = Vec::new();
    let mut literals = Vec::new();
    while i < chars.len() {
        match chars[i] {
            quote @ ('\'' | '"') => {
                let start = i;
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(format!("unclosed {quote} at {start}")),
                        Some(&c) if c == quote && chars.get(i + 1) == Some(&quote) => i += 2,
                        Some(&c) if c == quote => break,
                        Some(_) => i += 1,
                    }
                }
                if quote == '\'' {
                    let before: String = chars[..start].iter().collect();
                    literals.push((before, chars[start + 1..i].iter().collect::<String>()));
                }
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unbalanced ')' at {i}"));
                }
            }
            ';' | '?' => return Err(format!("{:?} outside a literal at {i}", chars[i])),
            ':' => {
                let digits: String = chars[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                if digits.is_empty() {
                    return Err(format!("':' without a number at {i}"));
                }
                placeholders.push(digits.parse::<usize>().unwrap());
                i += digits.len();
            }
            _ => {}
        }
        i += 1;
    }
    if depth != 0 {
        return Err("unbalanced '('".into());
    }
    let expected: Vec<usize> = (1..=sql.binds.len()).collect();
    if placeholders != expected {
        return Err(format!(
            "placeholders {placeholders:?} for {} bound values",
            sql.binds.len()
        ));
    }
    for (before, literal) in literals {
        if !before.ends_with("JSON_EXISTS(j, ") {
            return Err(format!(
                "a string literal that is not a JSON path: '{literal}'"
            ));
        }
        let variables = literal.matches("$v").count();
        for n in 1..=variables {
            if !literal.contains(&format!("$v{n}")) || !text.contains(&format!("AS \"v{n}\"")) {
                return Err(format!("$v{n} of '{literal}' is not passed"));
            }
        }
    }
    if !text.starts_with("SELECT ") {
        return Err("not a SELECT".into());
    }
    Ok(())
}

/// A statement and its binds as the golden file shows them (checked by `lint` first).
fn show(sql: &Sql, out: &mut String) {
    if let Err(problem) = lint(sql) {
        panic!("{problem}\n{}", sql.text);
    }
    let _ = writeln!(out, "{}", sql.text);
    for (i, bind) in sql.binds.iter().enumerate() {
        let _ = writeln!(out, "--   :{} = {}", i + 1, bind.describe());
    }
}

/// One case planned on one collection, as the golden file shows it.
fn plan_case(case: &Case, layout: &str, indexes: &[GoldenIndex], out: &mut String) {
    let _ = writeln!(out, "-- on the {layout} collection:");
    let filter = match Filter::parse(&case.filter) {
        Ok(filter) => filter,
        Err(e) => {
            let _ = writeln!(out, "--   refused before planning: {e}");
            return;
        }
    };
    let sort = match case.sort.as_ref().map(SortSpec::parse).transpose() {
        Ok(sort) => sort,
        Err(e) => {
            let _ = writeln!(out, "--   sort refused: {e}");
            return;
        }
    };
    let limit = case.limit.map(|n| n.unsigned_abs());
    let plan = ReadPlan::new(filter, sort, case.skip, limit, indexes);
    let filter = if plan.residual.is_none() {
        "exact"
    } else {
        "over-selecting, re-checked in Rust"
    };
    let order = match (&case.sort, &plan.sort) {
        (None, _) => "none",
        (Some(_), None) => "pushed",
        (Some(_), Some(_)) => "in Rust",
    };
    let window = match (
        case.skip > 0 || case.limit.is_some(),
        plan.skip > 0 || plan.limit.is_some(),
    ) {
        (false, _) => "none",
        (true, false) => "pushed",
        (true, true) => "in Rust",
    };
    let _ = writeln!(
        out,
        "--   filter: {filter}; sort: {order}; skip/limit: {window}"
    );
    show(&select(TABLE, "doc", &plan.scan, None).unwrap(), out);
    if case.sort.is_some() {
        // A cursor's next batch: the rows strictly after a position in the scan's order.
        let after = match (&plan.scan.order_index, plan.scan.order) {
            (Some(_), _) => ScanPosition::IndexEntry {
                index_key: vec![0x10, 0x01],
                key: vec![0x20, 0x02],
            },
            (None, Some(_)) => ScanPosition::Key(vec![0x20, 0x02]),
            (None, None) => ScanPosition::Natural(41),
        };
        let _ = writeln!(out, "--   resumed after {after:?}:");
        show(
            &select(TABLE, "doc", &plan.scan, Some(&after)).unwrap(),
            out,
        );
    }
    if plan.residual.is_none() && plan.scan.order.is_none() && plan.scan.limit.is_none() {
        show(&count(TABLE, &plan.scan.filter).unwrap(), out);
    }
}

fn describe_case(case: &Case) -> String {
    let mut text = format!(
        "-- filter: {}",
        Bson::Document(case.filter.clone()).into_relaxed_extjson()
    );
    if let Some(sort) = &case.sort {
        let _ = write!(
            text,
            " sort: {}",
            Bson::Document(sort.clone()).into_relaxed_extjson()
        );
    }
    if case.skip > 0 {
        let _ = write!(text, " skip: {}", case.skip);
    }
    if let Some(limit) = case.limit {
        let _ = write!(text, " limit: {limit}");
    }
    if let Some(projection) = &case.projection {
        let _ = write!(
            text,
            " projection: {} (applied in Rust)",
            Bson::Document(projection.clone()).into_relaxed_extjson()
        );
    }
    text
}

/// Every golden file's name and contents.
fn golden_files() -> BTreeMap<String, String> {
    let indexes = indexes();
    let render = |cases: &[Case]| {
        let mut out = String::new();
        for case in cases {
            let _ = writeln!(out, "{}", describe_case(case));
            plan_case(case, "plain", &[], &mut out);
            plan_case(case, "indexed", &indexes, &mut out);
            out.push('\n');
        }
        out
    };
    let mut files = BTreeMap::new();
    for (i, filter) in hand_written_filters().into_iter().enumerate() {
        files.insert(
            format!("hand_written_{:03}.sql", i + 1),
            render(&[Case::filter(filter)]),
        );
    }
    for (i, case) in shaped_cases().into_iter().enumerate() {
        files.insert(format!("shaped_{:03}.sql", i + 1), render(&[case]));
    }
    for (i, (filter, sort, _)) in documented_cases().into_iter().enumerate() {
        let case = match sort {
            Some(sort) => Case::sorted(filter, sort, 0, None),
            None => Case::filter(filter),
        };
        files.insert(format!("documented_{:03}.sql", i + 1), render(&[case]));
    }
    // The table: one file per field (its operators × operands).
    let mut by_field: BTreeMap<String, Vec<Case>> = BTreeMap::new();
    for filter in table_cases() {
        let field = filter.keys().next().cloned().unwrap_or_default();
        by_field
            .entry(field)
            .or_default()
            .push(Case::filter(filter));
    }
    for (field, cases) in by_field {
        let name = field.replace(['.', '$'], "_");
        files.insert(format!("table_{name}.sql"), render(&cases));
    }
    files
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/oracle_sql")
}

#[test]
fn oracle_sql_matches_the_reviewed_golden_files() {
    let files = golden_files();
    let dir = golden_dir();
    if std::env::var("DOCGATE_BLESS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "sql") {
                std::fs::remove_file(path).unwrap();
            }
        }
        for (name, text) in &files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        eprintln!("wrote {} golden files to {}", files.len(), dir.display());
        return;
    }
    let mut problems = Vec::new();
    for (name, text) in &files {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(reviewed) if &reviewed == text => {}
            Ok(_) => problems.push(format!("{name} differs")),
            Err(_) => problems.push(format!("{name} is missing")),
        }
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".sql") && !files.contains_key(&name) {
            problems.push(format!("{name} is no longer generated"));
        }
    }
    assert!(
        problems.is_empty(),
        "the Oracle SQL changed ({} files):\n{}\nReview it and rewrite the files with \
         DOCGATE_BLESS=1 cargo test --features oracle --test oracle_sql",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_lint_catches_what_it_is_for() {
    let mut sql = Sql::new("SELECT doc FROM t WHERE k = :1".into());
    assert!(lint(&sql).is_err(), "a placeholder without a value");
    sql.text = "SELECT doc FROM t WHERE s = 'x'".into();
    assert!(lint(&sql).is_err(), "a spliced string");
    sql.text = "SELECT doc FROM t WHERE (k = 1".into();
    assert!(lint(&sql).is_err(), "unbalanced");
    sql.text = "SELECT doc FROM t WHERE JSON_EXISTS(j, '$.\"a\"?(@ == $v1)')".into();
    assert!(lint(&sql).is_err(), "a path variable not passed");
}
