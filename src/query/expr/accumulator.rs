//! The running state of one accumulator ($sum, $avg, $min, $max, $first, $last, $push,
//! $addToSet, $count, the standard deviations, $mergeObjects and the `…N`/$top/$bottom
//! selections), shared by `$group` (through `aggregate/accumulators.rs`, which parses the
//! accumulator specs and feeds documents) and by the array forms of `$sum`, `$avg`, `$min`
//! and `$max` used as expressions ([`fold_values`]). `$sum` keeps Int32 while it fits, then
//! Int64, then Double, like MongoDB (the totals themselves are kept by `value/numeric_sum.rs`).
//!
//! Not for: parsing `{$acc: <expr>}` or grouping documents by key (`aggregate/`).

use crate::query::expr::ops::Operator;
use crate::query::sort::SortSpec;
use crate::query::value::compare::compare_values;
use crate::query::value::number::Number;
use crate::query::value::numeric_sum::NumericSum;
use crate::query::value::size::value_size;
use crate::query::value::value_set::ValueSet;
use bson::{Bson, Document};
use std::cmp::Ordering;

/// Which accumulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccumulatorKind {
    /// `$sum`
    Sum,
    /// `$avg`
    Avg,
    /// `$min`
    Min,
    /// `$max`
    Max,
    /// `$first`
    First,
    /// `$last`
    Last,
    /// `$push`
    Push,
    /// `$addToSet`
    AddToSet,
    /// `$count` (sums 1 per document)
    Count,
    /// `$stdDevPop`
    StdDevPop,
    /// `$stdDevSamp`
    StdDevSamp,
    /// `$mergeObjects`
    MergeObjects,
    /// `$firstN` (input, n)
    FirstN,
    /// `$lastN` (input, n)
    LastN,
    /// `$maxN` (input, n)
    MaxN,
    /// `$minN` (input, n)
    MinN,
    /// `$top` (sortBy, output)
    Top,
    /// `$bottom` (sortBy, output)
    Bottom,
    /// `$topN` (sortBy, output, n)
    TopN,
    /// `$bottomN` (sortBy, output, n)
    BottomN,
    /// `$percentile` and `$median` (input, p; method "approximate"): the numbers are kept,
    /// the percentiles computed at the end as the expressions compute them.
    Percentile,
}

/// Running state of one accumulator for one group.
#[derive(Clone, Debug)]
pub struct AccumulatorState {
    kind: AccumulatorKind,
    sum: NumericSum,
    count: u64,
    value: Option<Bson>,
    seen_any: bool,
    items: Vec<Bson>,
    /// The keys of `items`, for `$addToSet`.
    seen: ValueSet,
    /// Welford's running mean and sum of squared deviations, for the standard deviations.
    mean: f64,
    squares: f64,
    /// `n` of the `…N` accumulators, once known.
    limit: Option<usize>,
    /// Sort keys and outputs of `$top`/`$bottom`(`N`).
    keyed: Vec<(Vec<Bson>, Bson)>,
    sort_by: Option<SortSpec>,
    /// The encoded size of the values held (`value`, `items` and their set keys, `keyed`),
    /// for the memory limit of `$group`.
    bytes: usize,
    /// `p` of `$percentile` (an array) or `$median` (0.5).
    percentiles: Option<Bson>,
}

impl AccumulatorState {
    /// Fresh state.
    pub fn new(kind: AccumulatorKind) -> Self {
        AccumulatorState {
            kind,
            sum: NumericSum::default(),
            count: 0,
            value: None,
            seen_any: false,
            items: Vec::new(),
            seen: ValueSet::new(),
            mean: 0.0,
            squares: 0.0,
            limit: None,
            keyed: Vec::new(),
            sort_by: None,
            bytes: 0,
            percentiles: None,
        }
    }

    /// About how many bytes the state holds: the encoded size of the values it keeps.
    pub fn held_bytes(&self) -> usize {
        self.bytes
    }

    /// Fresh state of `$percentile`/`$median` answering the percentiles `p`.
    pub fn with_percentiles(mut self, p: Option<Bson>) -> Self {
        self.percentiles = p;
        self
    }

    /// This `$sum`/`$avg`/`$count` state with `sum` as its running total (one a store
    /// computed in SQL: `query::aggregate::sql_group`).
    pub fn with_sum(mut self, sum: NumericSum) -> Self {
        self.sum = sum;
        self
    }

    /// Whether the `n` of an `…N` accumulator is still to be evaluated.
    pub fn needs_limit(&self) -> bool {
        self.limit.is_none()
    }

    /// Sets the `n` of an `…N` accumulator.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = Some(limit);
    }

    /// Feeds one sort key and output of `$top`/`$bottom`(`N`), ordered by `sort` at the end.
    pub fn add_keyed(&mut self, sort: &SortSpec, key: Vec<Bson>, value: Bson) {
        self.sort_by.get_or_insert_with(|| sort.clone());
        self.bytes += value_size(&value) + key.iter().map(value_size).sum::<usize>();
        self.keyed.push((key, value));
    }

    /// Feeds one evaluated argument (`None` = missing).
    pub fn add(&mut self, value: Option<Bson>) {
        match self.kind {
            AccumulatorKind::Sum | AccumulatorKind::Count | AccumulatorKind::Avg => {
                if let Some(v) = value {
                    self.sum.add(&v);
                }
            }
            AccumulatorKind::Min | AccumulatorKind::Max => {
                let Some(v) = value.filter(|v| !matches!(v, Bson::Null | Bson::Undefined)) else {
                    return;
                };
                let replace = match &self.value {
                    None => true,
                    Some(current) => {
                        let order = compare_values(&v, current);
                        if self.kind == AccumulatorKind::Min {
                            order == Ordering::Less
                        } else {
                            order == Ordering::Greater
                        }
                    }
                };
                if replace {
                    self.bytes = value_size(&v);
                    self.value = Some(v);
                }
            }
            AccumulatorKind::First => {
                if !self.seen_any {
                    self.bytes = value.as_ref().map_or(0, value_size);
                    self.value = value;
                }
            }
            AccumulatorKind::Last => {
                self.bytes = value.as_ref().map_or(0, value_size);
                self.value = value;
            }
            AccumulatorKind::Push => {
                if let Some(v) = value {
                    self.bytes += value_size(&v);
                    self.items.push(v);
                }
            }
            AccumulatorKind::AddToSet => {
                if let Some(v) = value {
                    if self.seen.insert(&v) {
                        // The value and its key in the set.
                        self.bytes += 2 * value_size(&v);
                        self.items.push(v);
                    }
                }
            }
            AccumulatorKind::StdDevPop | AccumulatorKind::StdDevSamp => {
                if let Some(x) = value
                    .as_ref()
                    .and_then(Number::from_bson)
                    .map(Number::to_f64)
                {
                    self.count += 1;
                    let delta = x - self.mean;
                    self.mean += delta / self.count as f64;
                    self.squares += delta * (x - self.mean);
                }
            }
            AccumulatorKind::FirstN | AccumulatorKind::LastN => {
                let item = value.unwrap_or(Bson::Null);
                let size = value_size(&item);
                self.items.push(item);
                let limit = self.limit.unwrap_or(usize::MAX);
                if self.kind == AccumulatorKind::FirstN {
                    if self.items.len() <= limit {
                        self.bytes += size;
                    }
                    self.items.truncate(limit);
                } else if self.items.len() > limit.saturating_mul(2) {
                    // Drop the overflow in batches (amortised O(1) per item; `finish` keeps
                    // the last `limit`), not one front removal per item.
                    let excess = self.items.len() - limit;
                    self.items.drain(..excess);
                    self.bytes = self.items.iter().map(value_size).sum();
                } else {
                    self.bytes += size;
                }
            }
            AccumulatorKind::MaxN | AccumulatorKind::MinN => {
                if let Some(v) = value.filter(|v| !matches!(v, Bson::Null | Bson::Undefined)) {
                    self.bytes += value_size(&v);
                    self.items.push(v);
                }
            }
            // Only numbers count (MongoDB ignores the rest).
            AccumulatorKind::Percentile => {
                if let Some(v) = value.filter(|v| Number::from_bson(v).is_some()) {
                    self.items.push(v);
                }
            }
            AccumulatorKind::Top
            | AccumulatorKind::Bottom
            | AccumulatorKind::TopN
            | AccumulatorKind::BottomN => {}
            AccumulatorKind::MergeObjects => {
                if let Some(Bson::Document(d)) = value {
                    let mut merged = match self.value.take() {
                        Some(Bson::Document(current)) => current,
                        _ => Document::new(),
                    };
                    for (k, v) in d {
                        merged.insert(k, v);
                    }
                    self.bytes = crate::query::value::size::document_size(&merged);
                    self.value = Some(Bson::Document(merged));
                }
            }
        }
        self.seen_any = true;
    }

    /// The accumulated result.
    pub fn finish(self) -> Bson {
        match self.kind {
            AccumulatorKind::Sum | AccumulatorKind::Count => self.sum.total(),
            AccumulatorKind::Avg => self.sum.average(),
            AccumulatorKind::Min | AccumulatorKind::Max => self.value.unwrap_or(Bson::Null),
            AccumulatorKind::First | AccumulatorKind::Last => self.value.unwrap_or(Bson::Null),
            AccumulatorKind::Push | AccumulatorKind::AddToSet => Bson::Array(self.items),
            AccumulatorKind::StdDevPop if self.count > 0 => {
                Bson::Double((self.squares / self.count as f64).sqrt())
            }
            AccumulatorKind::StdDevSamp if self.count > 1 => {
                Bson::Double((self.squares / (self.count - 1) as f64).sqrt())
            }
            AccumulatorKind::StdDevPop | AccumulatorKind::StdDevSamp => Bson::Null,
            AccumulatorKind::MergeObjects => self
                .value
                .unwrap_or_else(|| Bson::Document(Document::new())),
            AccumulatorKind::FirstN => Bson::Array(self.items),
            AccumulatorKind::Percentile => {
                super::ops::percentile(Some(&Bson::Array(self.items)), self.percentiles.as_ref())
                    .ok()
                    .flatten()
                    .unwrap_or(Bson::Null)
            }
            AccumulatorKind::LastN => {
                let mut items = self.items;
                let excess = items.len().saturating_sub(self.limit.unwrap_or(usize::MAX));
                items.drain(..excess);
                Bson::Array(items)
            }
            AccumulatorKind::MaxN | AccumulatorKind::MinN => {
                let mut items = self.items;
                items.sort_by(compare_values);
                if self.kind == AccumulatorKind::MaxN {
                    items.reverse();
                }
                items.truncate(self.limit.unwrap_or(usize::MAX));
                Bson::Array(items)
            }
            AccumulatorKind::Top
            | AccumulatorKind::Bottom
            | AccumulatorKind::TopN
            | AccumulatorKind::BottomN => {
                let mut keyed = self.keyed;
                if let Some(spec) = &self.sort_by {
                    keyed.sort_by(|(a, _), (b, _)| spec.compare_keys(a, b));
                }
                let outputs: Vec<Bson> = keyed.into_iter().map(|(_, v)| v).collect();
                let limit = self.limit.unwrap_or(1);
                match self.kind {
                    AccumulatorKind::Top => outputs.into_iter().next().unwrap_or(Bson::Null),
                    AccumulatorKind::Bottom => outputs.into_iter().last().unwrap_or(Bson::Null),
                    AccumulatorKind::TopN => Bson::Array(outputs.into_iter().take(limit).collect()),
                    _ => {
                        let skip = outputs.len().saturating_sub(limit);
                        Bson::Array(outputs.into_iter().skip(skip).collect())
                    }
                }
            }
        }
    }
}

/// `$sum`/`$avg`/`$min`/`$max` over a list of values (their expression forms).
pub fn fold_values(op: Operator, values: &[Bson]) -> Option<Bson> {
    let kind = match op {
        Operator::Sum => AccumulatorKind::Sum,
        Operator::Avg => AccumulatorKind::Avg,
        Operator::Min => AccumulatorKind::Min,
        _ => AccumulatorKind::Max,
    };
    let mut state = AccumulatorState::new(kind);
    for v in values {
        state.add(Some(v.clone()));
    }
    Some(state.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_promotes_on_overflow() {
        let mut s = AccumulatorState::new(AccumulatorKind::Sum);
        s.add(Some(Bson::Int32(i32::MAX)));
        s.add(Some(Bson::Int32(1)));
        s.add(Some(Bson::String("ignored".into())));
        s.add(None);
        assert_eq!(s.finish(), Bson::Int64(i64::from(i32::MAX) + 1));
        let mut s = AccumulatorState::new(AccumulatorKind::Sum);
        s.add(Some(Bson::Int32(1)));
        s.add(Some(Bson::Int32(2)));
        assert_eq!(s.finish(), Bson::Int32(3));
    }

    #[test]
    fn avg_min_max_push_add_to_set() {
        let values = [Bson::Int32(1), Bson::Int32(2), Bson::Null];
        assert_eq!(fold_values(Operator::Avg, &values), Some(Bson::Double(1.5)));
        assert_eq!(fold_values(Operator::Min, &values), Some(Bson::Int32(1)));
        assert_eq!(fold_values(Operator::Max, &[]), Some(Bson::Null));
        let mut s = AccumulatorState::new(AccumulatorKind::AddToSet);
        s.add(Some(Bson::Int32(1)));
        s.add(Some(Bson::Double(1.0)));
        s.add(None);
        assert_eq!(s.finish(), Bson::Array(vec![Bson::Int32(1)]));
        let dec = |s: &str| Bson::Decimal128(s.parse().unwrap());
        let mut s = AccumulatorState::new(AccumulatorKind::AddToSet);
        for v in [
            Bson::Double(2.0),
            Bson::Int64(1),
            Bson::Int32(2),
            dec("1.00"),
            Bson::Double(-0.0),
            Bson::Int32(0),
            dec("NaN"),
            Bson::Double(f64::NAN),
            Bson::String("2".into()),
            Bson::Document(bson::doc! {"a": 1}),
            Bson::Document(bson::doc! {"a": 1.0}),
        ] {
            s.add(Some(v));
        }
        let got = s.finish();
        let expected = Bson::Array(vec![
            Bson::Double(2.0),
            Bson::Int64(1),
            Bson::Double(-0.0),
            dec("NaN"),
            Bson::String("2".into()),
            Bson::Document(bson::doc! {"a": 1}),
        ]);
        assert!(
            crate::query::value::compare::identical(&got, &expected),
            "{got:?}"
        );
        let mut s = AccumulatorState::new(AccumulatorKind::StdDevPop);
        for v in [2, 4, 4, 4, 5, 5, 7, 9] {
            s.add(Some(Bson::Int32(v)));
        }
        assert_eq!(s.finish(), Bson::Double(2.0));
        let mut s = AccumulatorState::new(AccumulatorKind::MergeObjects);
        s.add(Some(Bson::Document(bson::doc! {"a": 1, "b": 1})));
        s.add(None);
        s.add(Some(Bson::Document(bson::doc! {"b": 2})));
        assert_eq!(s.finish(), Bson::Document(bson::doc! {"a": 1, "b": 2}));
    }

    #[test]
    fn last_n_keeps_the_last_items_in_order() {
        for (count, limit) in [(10, 3), (7, 1), (2, 5), (100, 50), (0, 2)] {
            let mut s = AccumulatorState::new(AccumulatorKind::LastN);
            s.limit = Some(limit);
            for v in 0..count {
                s.add(Some(Bson::Int32(v)));
            }
            let expected: Vec<Bson> = ((count - limit as i32).max(0)..count)
                .map(Bson::Int32)
                .collect();
            assert_eq!(s.finish(), Bson::Array(expected), "{count} {limit}");
        }
    }
}
