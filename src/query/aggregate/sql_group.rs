//! A `$group` right after a read that a store runs as SQL (PostgreSQL's `GROUP BY` over the
//! image: `store/postgres/grouping.rs`), and how the store's rows become exactly the groups
//! [`Grouping`](super::Grouping) would have made of the same documents.
//!
//! What is pushed ([`SqlGroupPlan::of`]): a key that is a literal, a field path or an object
//! of those, and accumulators
//! - `$sum`, `$avg` of a field path (the store totals its numbers: how many of each type,
//!   the integers' exact sum, and the double the compensated sum ends at) or of a constant
//!   that is an integer or no number (`$count`, `$sum: 1`: the group's size times it);
//! - `$min`, `$max` of a field path (the store names the row holding the least / greatest
//!   value, first on ties, and the value is read from that row's document) or a constant;
//! - `$first`, `$last` of a literal, a field path or an object of those (read from the
//!   group's first / last document in the scan's order).
//!
//! The store reads numbers from the lossy image, so it vouches for its answer only when
//! every value it met is one it groups, totals and orders exactly; otherwise it answers
//! None and the caller groups the documents in Rust. The key (`_id`), `$first`, `$last`,
//! `$min` and `$max` are always evaluated here on stored documents, so their values keep
//! their exact type and bytes.
//!
//! Not for: the SQL (`store`), or grouping documents in Rust (`group.rs`).

use bson::{Bson, Document};

use super::accumulators::AccumulatorSpec;
use crate::query::error::QueryError;
use crate::query::expr::accumulator::AccumulatorKind;
use crate::query::expr::Expression;
use crate::query::value::numeric_sum::NumericSum;
use crate::query::{FieldPredicate, Filter};

/// Field names from the document's root (the store checks per row that it meets no array).
pub type FieldPath = Vec<String>;

/// What the store computes for a pushed `$group`.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupRequest {
    /// The key's field paths: rows are grouped by their values together (none: one group).
    pub key: Vec<FieldPath>,
    /// Whether a missing key value groups with null (a key that is one field path:
    /// `_id: "$a"` is null either way); an object key `{a: "$a"}` keeps them apart, as
    /// `{}` and `{a: null}`.
    pub missing_is_null: bool,
    /// Paths whose numbers are totalled.
    pub totals: Vec<FieldPath>,
    /// Paths whose least or greatest value's row is named.
    pub extremes: Vec<(Extreme, FieldPath)>,
    /// Whether each group's last document is wanted (the first always is).
    pub wants_last: bool,
    /// How many bytes of documents (first, last, extremes) the groups may bring back: past
    /// it the store answers None, and the grouping runs in Rust, which spills.
    pub max_bytes: u64,
    /// The read's filter when its SQL only narrows the rows (it over-selects: arrays, lossy
    /// numbers), as conditions ([`certain_conditions`]) the store must decide for every row
    /// it reads — a scalar at the path, no array on the way, an image that is the value — or
    /// answer None. Empty when the read's SQL is the filter.
    pub certain: Vec<(FieldPath, CertainTest)>,
}

/// A condition of a filter the store decides row by row on the image (see
/// [`GroupRequest::certain`]).
#[derive(Clone, Debug, PartialEq)]
pub enum CertainTest {
    /// Equal to a string (without U+0000 or U+FFFD, which the image conflates), a boolean or
    /// a number the image holds exactly: a row that is not equal fails the answer.
    Equals(Bson),
    /// A comparison with a number the image holds exactly, or with a date: a value of the
    /// operand's type bracket held exactly (an exact number; a date, by its milliseconds)
    /// is compared, a value of another bracket fails it, and any other value (an array, a
    /// lossy number) fails the answer.
    Compares(Comparison, Bson),
}

/// The comparison of a [`CertainTest::Compares`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    Greater,
    GreaterOrEqual,
    Less,
    LessOrEqual,
}

impl Comparison {
    /// The SQL operator.
    pub fn operator(self) -> &'static str {
        match self {
            Comparison::Greater => ">",
            Comparison::GreaterOrEqual => ">=",
            Comparison::Less => "<",
            Comparison::LessOrEqual => "<=",
        }
    }
}

/// The filter `filter` as a conjunction of equalities of plain paths to strings (without
/// U+0000 or U+FFFD), booleans or finite numbers an image holds exactly (|n| < 2^53 for
/// integers), and comparisons of plain paths with such numbers or with dates; None for any
/// other filter.
pub fn certain_conditions(filter: &Filter) -> Option<Vec<(FieldPath, CertainTest)>> {
    let mut out = Vec::new();
    collect_conditions(filter, &mut out)?;
    Some(out)
}

fn collect_conditions(filter: &Filter, out: &mut Vec<(FieldPath, CertainTest)>) -> Option<()> {
    match filter {
        Filter::And(parts) => parts
            .iter()
            .try_for_each(|part| collect_conditions(part, out)),
        Filter::Field { path, predicates } => {
            let path: FieldPath = path.split('.').map(str::to_owned).collect();
            if path.iter().any(String::is_empty) {
                return None;
            }
            for predicate in predicates {
                let test = match predicate {
                    FieldPredicate::Eq(value) => {
                        let held_exactly = match value {
                            Bson::String(s) => !s.contains(['\0', '\u{fffd}']),
                            Bson::Boolean(_) => true,
                            other => exact_number(other),
                        };
                        held_exactly.then(|| CertainTest::Equals(value.clone()))?
                    }
                    FieldPredicate::Gt(value) if comparable(value) => {
                        CertainTest::Compares(Comparison::Greater, value.clone())
                    }
                    FieldPredicate::Gte(value) if comparable(value) => {
                        CertainTest::Compares(Comparison::GreaterOrEqual, value.clone())
                    }
                    FieldPredicate::Lt(value) if comparable(value) => {
                        CertainTest::Compares(Comparison::Less, value.clone())
                    }
                    FieldPredicate::Lte(value) if comparable(value) => {
                        CertainTest::Compares(Comparison::LessOrEqual, value.clone())
                    }
                    _ => return None,
                };
                out.push((path.clone(), test));
            }
            Some(())
        }
        _ => None,
    }
}

/// A finite number the image holds exactly (an integer within 2^53).
fn exact_number(value: &Bson) -> bool {
    match value {
        Bson::Int32(_) => true,
        Bson::Int64(n) => n.unsigned_abs() < 1 << 53,
        Bson::Double(d) => d.is_finite(),
        _ => false,
    }
}

/// An operand a comparison decided on the image may have: an exact number or a date.
fn comparable(value: &Bson) -> bool {
    exact_number(value) || matches!(value, Bson::DateTime(_))
}

/// Which end of the values in MongoDB's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extreme {
    Least,
    Greatest,
}

/// One group as the store answers it, in the order of its first document.
#[derive(Clone, Debug)]
pub struct GroupRow {
    /// How many documents the group has.
    pub count: u64,
    /// The stored BSON of its first and (when asked) last document in the scan's order.
    pub first: Vec<u8>,
    pub last: Option<Vec<u8>>,
    /// Per [`GroupRequest::totals`] path.
    pub totals: Vec<NumberTotals>,
    /// Per [`GroupRequest::extremes`] entry: the stored BSON of the row holding it (None:
    /// no value that counts).
    pub extremes: Vec<Option<Vec<u8>>>,
}

/// The numbers one path held across a group (non-numbers are ignored, as `$sum` does).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NumberTotals {
    pub int32_count: u64,
    pub int64_count: u64,
    pub double_count: u64,
    /// The exact sum of the Int32 and Int64 values.
    pub integers: i128,
    /// The double the compensated sum of all of them ends at (read only with doubles).
    pub rounded: f64,
}

/// Where one accumulator's value comes from in a [`GroupRow`].
#[derive(Clone, Debug)]
enum Source {
    /// `$sum`/`$avg` of a field: that index of `totals`.
    Total(usize),
    /// `$sum`/`$avg`/`$count` of a constant: the group's size times it.
    Repeated(Bson),
    /// `$min`/`$max` of a field: the argument on that index of `extremes`.
    Extreme(usize),
    /// The argument on the first document.
    First,
    /// The argument on the last document.
    Last,
}

/// A `$group` the store can run as SQL, and how to finish its rows.
#[derive(Clone, Debug)]
pub struct SqlGroupPlan {
    pub request: GroupRequest,
    id: Expression,
    accumulators: Vec<AccumulatorSpec>,
    sources: Vec<Source>,
}

impl SqlGroupPlan {
    /// The plan of `$group {_id: id, …accumulators}`, or None when its shape is not one
    /// the store runs (see the module doc).
    pub fn of(id: &Expression, accumulators: &[AccumulatorSpec]) -> Option<SqlGroupPlan> {
        let mut request = GroupRequest {
            key: Vec::new(),
            missing_is_null: id.field_path().is_some(),
            totals: Vec::new(),
            extremes: Vec::new(),
            wants_last: false,
            max_bytes: crate::query::memory::BLOCKING_STAGE_LIMIT as u64,
            certain: Vec::new(),
        };
        key_paths(id, &mut request.key)?;
        let mut sources = Vec::with_capacity(accumulators.len());
        for spec in accumulators {
            if spec.n.is_some() || spec.sort_by.is_some() || spec.percentiles.is_some() {
                return None;
            }
            let argument = &spec.argument;
            let source = match spec.kind {
                AccumulatorKind::Sum | AccumulatorKind::Avg | AccumulatorKind::Count => {
                    match (argument.field_path(), argument.as_literal()) {
                        (Some(path), _) => Source::Total(position(&mut request.totals, path)),
                        (None, Some(Bson::Double(_) | Bson::Decimal128(_))) => return None,
                        (None, Some(constant)) => Source::Repeated(constant.clone()),
                        (None, None) => return None,
                    }
                }
                AccumulatorKind::Min | AccumulatorKind::Max => {
                    let extreme = if spec.kind == AccumulatorKind::Min {
                        Extreme::Least
                    } else {
                        Extreme::Greatest
                    };
                    match (argument.field_path(), argument.as_literal()) {
                        (Some(path), _) => {
                            request.extremes.push((extreme, path.to_vec()));
                            Source::Extreme(request.extremes.len() - 1)
                        }
                        (None, Some(_)) => Source::First,
                        (None, None) => return None,
                    }
                }
                AccumulatorKind::First if argument.reads_raw() => Source::First,
                AccumulatorKind::Last if argument.reads_raw() => {
                    request.wants_last = true;
                    Source::Last
                }
                _ => return None,
            };
            sources.push(source);
        }
        Some(SqlGroupPlan {
            request,
            id: id.clone(),
            accumulators: accumulators.to_vec(),
            sources,
        })
    }

    /// This plan with the documents the groups bring back limited to `bytes`.
    pub fn with_max_bytes(mut self, bytes: u64) -> Self {
        self.request.max_bytes = bytes;
        self
    }

    /// This plan over a read whose SQL only narrows the rows to those `filter` matches
    /// (None when the filter is not one [`certain_conditions`] takes).
    pub fn over_filter(mut self, filter: &Filter) -> Option<Self> {
        self.request.certain = certain_conditions(filter)?;
        Some(self)
    }

    /// The groups of `rows`: `_id` and each accumulator's result, in the rows' order.
    pub fn assemble(&self, rows: Vec<GroupRow>) -> Result<Vec<Document>, QueryError> {
        rows.into_iter().map(|row| self.group(row)).collect()
    }

    fn group(&self, row: GroupRow) -> Result<Document, QueryError> {
        crate::interrupt::check()?;
        let first = decode(&row.first)?;
        let last = row.last.as_deref().map(decode).transpose()?;
        let mut out = Document::new();
        out.insert("_id", self.id.evaluate(&first)?);
        for (spec, source) in self.accumulators.iter().zip(&self.sources) {
            let mut state = spec.new_state();
            match source {
                Source::Total(i) => {
                    let totals = row.totals.get(*i).copied().unwrap_or_default();
                    state = state.with_sum(NumericSum::from_totals(
                        totals.int32_count,
                        totals.int64_count,
                        totals.double_count,
                        totals.integers,
                        totals.rounded,
                    ));
                }
                Source::Repeated(constant) => {
                    state = state.with_sum(repeated(constant, row.count));
                }
                Source::Extreme(i) => {
                    if let Some(Some(bytes)) = row.extremes.get(*i) {
                        state.add(spec.argument.evaluate_optional(&decode(bytes)?)?);
                    }
                }
                Source::First => state.add(spec.argument.evaluate_optional(&first)?),
                Source::Last => {
                    let doc = last.as_ref().unwrap_or(&first);
                    state.add(spec.argument.evaluate_optional(doc)?);
                }
            }
            out.insert(spec.field.clone(), state.finish());
        }
        Ok(out)
    }
}

/// Collects the field paths of a key made of literals, field paths and objects of those;
/// None for any other expression.
fn key_paths(id: &Expression, out: &mut Vec<FieldPath>) -> Option<()> {
    if let Some(path) = id.field_path() {
        out.push(path.to_vec());
        return Some(());
    }
    if id.as_literal().is_some() {
        return Some(());
    }
    for (_, field) in id.object_fields()? {
        key_paths(field, out)?;
    }
    Some(())
}

/// The index of `path` in `paths`, added if new.
fn position(paths: &mut Vec<FieldPath>, path: &[String]) -> usize {
    match paths.iter().position(|p| p == path) {
        Some(i) => i,
        None => {
            paths.push(path.to_vec());
            paths.len() - 1
        }
    }
}

/// The running total of `times` copies of `constant` (an integer, or a non-number that
/// counts for nothing).
fn repeated(constant: &Bson, times: u64) -> NumericSum {
    NumericSum::repeated_integer(constant, times).unwrap_or_default()
}

fn decode(bytes: &[u8]) -> Result<Document, QueryError> {
    bson::RawDocument::from_bytes(bytes)
        .and_then(Document::try_from)
        .map_err(|error| QueryError::coded(1, "InternalError", error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn plan(spec: Document) -> Option<SqlGroupPlan> {
        match super::super::group::parse_group(&spec) {
            Ok(crate::query::aggregate::Stage::Group { id, accumulators }) => {
                SqlGroupPlan::of(&id, &accumulators)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn shapes_that_are_pushed_and_not() {
        let Some(p) = plan(doc! {
            "_id": {"c": "$address.city", "k": "x"}, "t": {"$sum": "$score"},
            "a": {"$avg": "$score"}, "n": {"$count": {}}, "lo": {"$min": "$age"},
            "hi": {"$max": "$age"}, "f": {"$first": "$name"}, "l": {"$last": {"x": "$name"}},
        }) else {
            panic!("not pushed");
        };
        assert_eq!(
            p.request.key,
            vec![vec!["address".to_string(), "city".to_string()]]
        );
        assert!(!p.request.missing_is_null);
        assert_eq!(p.request.totals, vec![vec!["score".to_string()]]);
        assert_eq!(p.request.extremes.len(), 2);
        assert!(p.request.wants_last);
        assert!(plan(doc! {"_id": "$a"}).is_some_and(|p| p.request.missing_is_null));
        for refused in [
            doc! {"_id": {"$toUpper": "$a"}},
            doc! {"_id": null, "s": {"$sum": 1.5}},
            doc! {"_id": null, "s": {"$sum": {"$add": ["$a", 1]}}},
            doc! {"_id": null, "p": {"$push": "$a"}},
            doc! {"_id": null, "f": {"$first": {"$toUpper": "$a"}}},
            doc! {"_id": null, "s": {"$sum": "$$ROOT.a"}},
        ] {
            assert!(plan(refused.clone()).is_none(), "{refused}");
        }
    }

    #[test]
    fn rows_become_the_groups_rust_makes() {
        let Some(p) = plan(doc! {
            "_id": "$k", "t": {"$sum": "$v"}, "a": {"$avg": "$v"}, "n": {"$sum": 1},
            "lo": {"$min": "$v"}, "f": {"$first": "$v"}, "l": {"$last": "$v"},
        }) else {
            panic!("not pushed");
        };
        let docs = [doc! {"k": "a", "v": 1}, doc! {"k": "a", "v": 2.5}];
        let bytes = |d: &Document| d.to_vec().unwrap_or_default();
        let row = GroupRow {
            count: 2,
            first: bytes(&docs[0]),
            last: Some(bytes(&docs[1])),
            totals: vec![NumberTotals {
                int32_count: 1,
                double_count: 1,
                integers: 1,
                rounded: 3.5,
                ..NumberTotals::default()
            }],
            extremes: vec![Some(bytes(&docs[0]))],
        };
        let made = p.assemble(vec![row]);
        let mut grouping = super::super::Grouping::new(p.id.clone(), p.accumulators.clone());
        for d in &docs {
            if let Err(e) = grouping.feed(d) {
                panic!("{e:?}");
            }
        }
        match (made, grouping.finish()) {
            (Ok(made), Ok(expected)) => assert_eq!(made, expected),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn conditions_decided_row_by_row_are_equalities_and_numeric_comparisons() {
        let conditions = |filter: Document| match Filter::parse(&filter) {
            Ok(parsed) => certain_conditions(&parsed),
            Err(e) => panic!("{e:?}"),
        };
        let taken = conditions(doc! {"a.b": {"$gt": 5, "$lte": 7.5}, "c": "x"});
        assert_eq!(
            taken,
            Some(vec![
                (
                    vec!["a".to_string(), "b".to_string()],
                    CertainTest::Compares(Comparison::Greater, Bson::Int32(5))
                ),
                (
                    vec!["a".to_string(), "b".to_string()],
                    CertainTest::Compares(Comparison::LessOrEqual, Bson::Double(7.5))
                ),
                (
                    vec!["c".to_string()],
                    CertainTest::Equals(Bson::String("x".into()))
                ),
            ])
        );
        // Strings compare by the database's collation in SQL, decimals and longs past 2^53
        // have lossy images, and other operators are not decided in SQL.
        assert_eq!(
            conditions(doc! {"d": {"$lt": bson::DateTime::from_millis(-5)}}),
            Some(vec![(
                vec!["d".to_string()],
                CertainTest::Compares(
                    Comparison::Less,
                    Bson::DateTime(bson::DateTime::from_millis(-5))
                )
            )])
        );
        for refused in [
            doc! {"a": {"$gt": "x"}},
            doc! {"a": {"$lt": Bson::Int64((1 << 53) + 1)}},
            doc! {"a": {"$gte": f64::NAN}},
            doc! {"a": {"$ne": 5}},
            doc! {"$or": [{"a": 1}, {"b": 2}]},
        ] {
            assert_eq!(conditions(refused.clone()), None, "{refused}");
        }
    }
}
