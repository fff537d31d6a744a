//! `$bucketAuto`: documents sorted by `groupBy` and cut into `buckets` groups of about the
//! same size (equal values never split), each `{_id: {min, max}, <output accumulators>}`;
//! with a `granularity`, boundaries are rounded to a preferred-number series (Renard R5–R80,
//! E6–E192, 1-2-5) or powers of two, as MongoDB's rounders do.
//!
//! Past the command's memory limit the documents are sorted through runs on disk
//! (`query::spill`) and cut into buckets as the merge goes by; a chained pipeline feeds
//! them one at a time ([`BucketAutoInput`]).
//!
//! Not for: `$bucket` with explicit boundaries (`stages.rs`) or the accumulators
//! (`accumulators.rs`).

use super::accumulators::{feed, AccumulatorSpec, AccumulatorState};
use crate::query::error::QueryError;
use crate::query::expr::ops::type_name;
use crate::query::expr::Expression;
use crate::query::sort::{SortDirection, SortSpec};
use crate::query::spill::ExternalSort;
use crate::query::value::collation::Collation;
use crate::query::value::compare::compare_values;
use crate::query::value::number::Number;
use bson::{Bson, Document};
use std::cmp::Ordering;

/// A parsed `$bucketAuto`.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketAuto {
    /// `groupBy`.
    pub group_by: Expression,
    /// `buckets`.
    pub buckets: usize,
    /// `output` (`count: {$sum: 1}` when not given).
    pub output: Vec<AccumulatorSpec>,
    /// `granularity`.
    pub granularity: Option<Granularity>,
}

/// A `granularity` rounder.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Granularity {
    /// A preferred-number series (its mantissas times powers of ten).
    Series(&'static [f64]),
    /// "POWERSOF2".
    PowersOf2,
}

// The series as MongoDB stores them (integers scaled by powers of ten), so the products
// match its doubles.
const R5: &[f64] = &[10.0, 16.0, 25.0, 40.0, 63.0];
const R10: &[f64] = &[
    100.0, 125.0, 160.0, 200.0, 250.0, 315.0, 400.0, 500.0, 630.0, 800.0,
];
const R20: &[f64] = &[
    100.0, 112.0, 125.0, 140.0, 160.0, 180.0, 200.0, 224.0, 250.0, 280.0, 315.0, 355.0, 400.0,
    450.0, 500.0, 560.0, 630.0, 710.0, 800.0, 900.0,
];
const R40: &[f64] = &[
    100.0, 106.0, 112.0, 118.0, 125.0, 132.0, 140.0, 150.0, 160.0, 170.0, 180.0, 190.0, 200.0,
    212.0, 224.0, 236.0, 250.0, 265.0, 280.0, 300.0, 315.0, 355.0, 375.0, 400.0, 425.0, 450.0,
    475.0, 500.0, 530.0, 560.0, 600.0, 630.0, 670.0, 710.0, 750.0, 800.0, 850.0, 900.0, 950.0,
];
const R80: &[f64] = &[
    103.0, 109.0, 115.0, 122.0, 128.0, 136.0, 145.0, 155.0, 165.0, 175.0, 185.0, 195.0, 206.0,
    218.0, 230.0, 243.0, 258.0, 272.0, 290.0, 307.0, 325.0, 345.0, 365.0, 387.0, 412.0, 437.0,
    462.0, 487.0, 515.0, 545.0, 575.0, 615.0, 650.0, 690.0, 730.0, 775.0, 825.0, 875.0, 925.0,
    975.0,
];
const ONE_TWO_FIVE: &[f64] = &[10.0, 20.0, 50.0];
const E6: &[f64] = &[10.0, 15.0, 22.0, 33.0, 47.0, 68.0];
const E12: &[f64] = &[
    10.0, 12.0, 15.0, 18.0, 22.0, 27.0, 33.0, 39.0, 47.0, 56.0, 68.0, 82.0,
];
const E24: &[f64] = &[
    10.0, 11.0, 12.0, 13.0, 15.0, 16.0, 18.0, 20.0, 22.0, 24.0, 27.0, 30.0, 33.0, 36.0, 39.0, 43.0,
    47.0, 51.0, 56.0, 62.0, 68.0, 75.0, 82.0, 91.0,
];
const E48: &[f64] = &[
    100.0, 105.0, 110.0, 115.0, 121.0, 127.0, 133.0, 140.0, 147.0, 154.0, 162.0, 169.0, 178.0,
    187.0, 196.0, 205.0, 215.0, 226.0, 237.0, 249.0, 261.0, 274.0, 287.0, 301.0, 316.0, 332.0,
    348.0, 365.0, 383.0, 402.0, 422.0, 442.0, 464.0, 487.0, 511.0, 536.0, 562.0, 590.0, 619.0,
    649.0, 681.0, 715.0, 750.0, 787.0, 825.0, 866.0, 909.0, 953.0,
];
const E96: &[f64] = &[
    100.0, 102.0, 105.0, 107.0, 110.0, 113.0, 115.0, 118.0, 121.0, 124.0, 127.0, 130.0, 133.0,
    137.0, 140.0, 143.0, 147.0, 150.0, 154.0, 158.0, 162.0, 165.0, 169.0, 174.0, 178.0, 182.0,
    187.0, 191.0, 196.0, 200.0, 205.0, 210.0, 215.0, 221.0, 226.0, 232.0, 237.0, 243.0, 249.0,
    255.0, 261.0, 267.0, 274.0, 280.0, 287.0, 294.0, 301.0, 309.0, 316.0, 324.0, 332.0, 340.0,
    348.0, 357.0, 365.0, 374.0, 383.0, 392.0, 402.0, 412.0, 422.0, 432.0, 442.0, 453.0, 464.0,
    475.0, 487.0, 499.0, 511.0, 523.0, 536.0, 549.0, 562.0, 576.0, 590.0, 604.0, 619.0, 634.0,
    649.0, 665.0, 681.0, 698.0, 715.0, 732.0, 750.0, 768.0, 787.0, 806.0, 825.0, 845.0, 866.0,
    887.0, 909.0, 931.0, 953.0, 976.0,
];
const E192: &[f64] = &[
    100.0, 101.0, 102.0, 104.0, 105.0, 106.0, 107.0, 109.0, 110.0, 111.0, 113.0, 114.0, 115.0,
    117.0, 118.0, 120.0, 121.0, 123.0, 124.0, 126.0, 127.0, 129.0, 130.0, 132.0, 133.0, 135.0,
    137.0, 138.0, 140.0, 142.0, 143.0, 145.0, 147.0, 149.0, 150.0, 152.0, 154.0, 156.0, 158.0,
    160.0, 162.0, 164.0, 165.0, 167.0, 169.0, 172.0, 174.0, 176.0, 178.0, 180.0, 182.0, 184.0,
    187.0, 189.0, 191.0, 193.0, 196.0, 198.0, 200.0, 203.0, 205.0, 208.0, 210.0, 213.0, 215.0,
    218.0, 221.0, 223.0, 226.0, 229.0, 232.0, 234.0, 237.0, 240.0, 243.0, 246.0, 249.0, 252.0,
    255.0, 258.0, 261.0, 264.0, 267.0, 271.0, 274.0, 277.0, 280.0, 284.0, 287.0, 291.0, 294.0,
    298.0, 301.0, 305.0, 309.0, 312.0, 316.0, 320.0, 324.0, 328.0, 332.0, 336.0, 340.0, 344.0,
    348.0, 352.0, 357.0, 361.0, 365.0, 370.0, 374.0, 379.0, 383.0, 388.0, 392.0, 397.0, 402.0,
    407.0, 412.0, 417.0, 422.0, 427.0, 432.0, 437.0, 442.0, 448.0, 453.0, 459.0, 464.0, 470.0,
    475.0, 481.0, 487.0, 493.0, 499.0, 505.0, 511.0, 517.0, 523.0, 530.0, 536.0, 542.0, 549.0,
    556.0, 562.0, 569.0, 576.0, 583.0, 590.0, 597.0, 604.0, 612.0, 619.0, 626.0, 634.0, 642.0,
    649.0, 657.0, 665.0, 673.0, 681.0, 690.0, 698.0, 706.0, 715.0, 723.0, 732.0, 741.0, 750.0,
    759.0, 768.0, 777.0, 787.0, 796.0, 806.0, 816.0, 825.0, 835.0, 845.0, 856.0, 866.0, 876.0,
    887.0, 898.0, 909.0, 920.0, 931.0, 942.0, 953.0, 965.0, 976.0, 988.0,
];

impl Granularity {
    fn named(name: &str) -> Option<Granularity> {
        Some(Granularity::Series(match name {
            "R5" => R5,
            "R10" => R10,
            "R20" => R20,
            "R40" => R40,
            "R80" => R80,
            "1-2-5" => ONE_TWO_FIVE,
            "E6" => E6,
            "E12" => E12,
            "E24" => E24,
            "E48" => E48,
            "E96" => E96,
            "E192" => E192,
            "POWERSOF2" => return Some(Granularity::PowersOf2),
            _ => return None,
        }))
    }

    /// The smallest series value strictly above `n` (0 and infinity stay).
    fn round_up(self, n: f64) -> f64 {
        if n == 0.0 || n.is_infinite() {
            return n;
        }
        let series = match self {
            Granularity::PowersOf2 => return 2f64.powf(n.log2().floor() + 1.0),
            Granularity::Series(s) => s,
        };
        let (first, last) = (series[0], series[series.len() - 1]);
        let mut multiplier = 1.0;
        while n >= last * multiplier {
            multiplier *= 10.0;
        }
        while n < first * multiplier {
            let previous_min = first * multiplier;
            multiplier /= 10.0;
            if n >= last * multiplier {
                return previous_min;
            }
        }
        let index = series.partition_point(|s| s * multiplier <= n);
        series.get(index).map(|s| s * multiplier).unwrap_or(n)
    }

    /// The largest series value strictly below `n` (0 and infinity stay).
    fn round_down(self, n: f64) -> f64 {
        if n == 0.0 || n.is_infinite() {
            return n;
        }
        let series = match self {
            Granularity::PowersOf2 => return 2f64.powf(n.log2().ceil() - 1.0),
            Granularity::Series(s) => s,
        };
        let (first, last) = (series[0], series[series.len() - 1]);
        let mut multiplier = 1.0;
        while n <= first * multiplier {
            multiplier /= 10.0;
            if multiplier == 0.0 {
                return 0.0;
            }
        }
        while n > last * multiplier {
            let previous_max = last * multiplier;
            multiplier *= 10.0;
            if n <= first * multiplier {
                return previous_max;
            }
        }
        let index = series.partition_point(|s| s * multiplier < n);
        index
            .checked_sub(1)
            .and_then(|i| series.get(i))
            .map(|s| s * multiplier)
            .unwrap_or(n)
    }
}

fn loc(code: i32, message: impl Into<String>) -> QueryError {
    QueryError::location(code, message)
}

/// Parses `$bucketAuto`.
pub fn parse_bucket_auto(spec: &Bson) -> Result<BucketAuto, QueryError> {
    let Bson::Document(d) = spec else {
        return Err(loc(
            40240,
            format!(
                "The argument to $bucketAuto must be an object, but found type: {}",
                type_name(Some(spec))
            ),
        ));
    };
    for key in d.keys() {
        if !matches!(
            key.as_str(),
            "groupBy" | "buckets" | "output" | "granularity"
        ) {
            return Err(loc(
                40245,
                format!("Unrecognized option to $bucketAuto: {key}."),
            ));
        }
    }
    let (Some(group_by), Some(buckets)) = (d.get("groupBy"), d.get("buckets")) else {
        return Err(loc(
            40246,
            "$bucketAuto requires 'groupBy' and 'buckets' to be specified",
        ));
    };
    let is_expression = match group_by {
        Bson::String(s) => s.starts_with('$'),
        Bson::Document(_) => true,
        _ => false,
    };
    if !is_expression {
        return Err(loc(40239, format!("The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: {group_by}")));
    }
    let Some(number) = Number::from_bson(buckets) else {
        return Err(loc(
            40241,
            format!(
                "The $bucketAuto 'buckets' field must be a numeric value, but found type: {}",
                type_name(Some(buckets))
            ),
        ));
    };
    let count = number
        .to_exact_i64()
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| {
            loc(
                40242,
                format!("The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found {buckets}"),
            )
        })?;
    if count <= 0 {
        return Err(loc(
            40243,
            format!("The $bucketAuto 'buckets' field must be greater than 0, but found: {count}"),
        ));
    }
    let output = match super::stages::bucket_output(d.get("output"))? {
        Some(output) => output,
        None => {
            return Err(loc(
                40244,
                format!(
                    "The $bucketAuto 'output' field must be an object, but found type: {}",
                    type_name(d.get("output"))
                ),
            ))
        }
    };
    let granularity = match d.get("granularity") {
        None => None,
        Some(Bson::String(name)) => Some(
            Granularity::named(name)
                .ok_or_else(|| loc(40257, format!("Unknown rounding granularity '{name}'")))?,
        ),
        Some(other) => {
            return Err(loc(
                40261,
                format!(
                    "The $bucketAuto 'granularity' field must be a string, but found type: {}",
                    type_name(Some(other))
                ),
            ))
        }
    };
    Ok(BucketAuto {
        group_by: Expression::parse(group_by)?,
        buckets: count as usize,
        output,
        granularity,
    })
}

fn granular_value(value: &Bson) -> Result<f64, QueryError> {
    if let Bson::Decimal128(_) = value {
        // MongoDB rounds decimal boundaries in decimal; docgate's rounders are doubles.
        return Err(QueryError::not_supported(
            "$bucketAuto 'granularity' over Decimal128 values is not supported by docgate",
        ));
    }
    let Some(n) = Number::from_bson(value) else {
        return Err(loc(40258, format!("$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a value with type: {}", type_name(Some(value)))));
    };
    let n = n.to_f64();
    if n.is_nan() {
        return Err(loc(
            40259,
            "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a NaN",
        ));
    }
    if n < 0.0 {
        return Err(loc(40260, "$bucketAuto can specify a 'granularity' with non-negative numbers only, but found a negative number"));
    }
    Ok(n)
}

/// Runs `$bucketAuto`: sorted in memory while the documents fit the command's limit, else
/// through sorted runs on disk (292 if the command refused disk use), then cut into buckets
/// as the sorted documents go by.
pub fn run_bucket_auto(
    spec: &BucketAuto,
    docs: Vec<Document>,
) -> Result<Vec<Document>, QueryError> {
    let n = docs.len();
    let memory = crate::interrupt::blocking_memory();
    let fits = memory
        .as_ref()
        .is_none_or(|memory| crate::query::memory::documents_size(&docs) <= memory.bytes);
    if fits {
        let mut keyed = Vec::with_capacity(n);
        for doc in docs {
            crate::interrupt::check()?;
            keyed.push((group_value(spec, &doc)?, doc));
        }
        keyed.sort_by(|(a, _), (b, _)| compare_values(a, b));
        return cut_into_buckets(spec, n, keyed.into_iter().map(Ok));
    }
    let mut input = BucketAutoInput::new(spec.clone());
    for doc in docs {
        crate::interrupt::check()?;
        let bytes = doc
            .to_vec()
            .map_err(|error| QueryError::bad_value(format!("cannot encode a document: {error}")))?;
        input.push(&doc, bytes)?;
    }
    input.finish()
}

/// A `$bucketAuto` fed one document at a time: the documents sorted by their `groupBy`
/// values (through runs on disk past the command's limit; 292 if it refused disk use),
/// cut into buckets once the last is in. It holds its sort, then only the buckets.
pub struct BucketAutoInput {
    spec: BucketAuto,
    sort: ExternalSort,
    count: usize,
}

impl BucketAutoInput {
    /// An empty input under the budget and collation of the command on this thread.
    pub fn new(spec: BucketAuto) -> BucketAutoInput {
        let by_value = SortSpec {
            keys: vec![("_id".to_string(), SortDirection::Ascending)],
            natural: None,
        };
        BucketAutoInput {
            spec,
            sort: ExternalSort::for_command(by_value, Collation::installed()),
            count: 0,
        }
    }

    /// Adds `document`, whose BSON bytes are `bytes`.
    pub fn push(&mut self, document: &Document, bytes: Vec<u8>) -> Result<(), QueryError> {
        let value = group_value(&self.spec, document)?;
        self.sort.push(vec![value], bytes)?;
        self.count += 1;
        Ok(())
    }

    /// The buckets, in order.
    pub fn finish(self) -> Result<Vec<Document>, QueryError> {
        let mut sorted = self.sort.finish()?;
        let items = std::iter::from_fn(move || match sorted.next_decoded() {
            Ok(Some((mut key, doc))) => Some(Ok((key.pop().unwrap_or(Bson::Null), doc))),
            Ok(None) => None,
            Err(error) => Some(Err(error)),
        });
        cut_into_buckets(&self.spec, self.count, items)
    }
}

/// The value a document is bucketed by (a number, with a `granularity`).
fn group_value(spec: &BucketAuto, doc: &Document) -> Result<Bson, QueryError> {
    let value = spec.group_by.evaluate(doc)?;
    if spec.granularity.is_some() {
        granular_value(&value)?;
    }
    Ok(value)
}

/// Cuts `n` documents, sorted by their values, into buckets of about `n / buckets` each
/// (equal values never split; with a granularity, boundaries on the series), each fed to
/// its accumulators as it goes by.
fn cut_into_buckets(
    spec: &BucketAuto,
    n: usize,
    items: impl Iterator<Item = Result<(Bson, Document), QueryError>>,
) -> Result<Vec<Document>, QueryError> {
    let size = ((n as f64 / spec.buckets as f64).round() as usize).max(1);
    let mut items = items.peekable();
    let mut out: Vec<Document> = Vec::new();
    let mut previous_max: Option<Bson> = None;
    let mut taken = 0usize;
    while taken < n && out.len() < spec.buckets {
        let last = out.len() + 1 == spec.buckets;
        let nominal = if last { n - taken } else { size.min(n - taken) };
        let mut bucket = Bucket::new(spec);
        while bucket.count < nominal {
            match items.next() {
                Some(item) => bucket.add(spec, item?)?,
                None => break,
            }
        }
        let (Some(first), Some(end)) = (bucket.first.clone(), bucket.last.clone()) else {
            break;
        };
        let min = match (spec.granularity, &previous_max) {
            (Some(_), Some(previous)) => previous.clone(),
            (Some(g), None) => Bson::Double(g.round_down(granular_value(&first)?)),
            (None, _) => first,
        };
        let max = match spec.granularity {
            Some(g) => {
                let boundary = g.round_up(granular_value(&end)?);
                while let Some(next) = peek_value(&mut items)? {
                    if granular_value(&next)? >= boundary {
                        break;
                    }
                    if let Some(item) = items.next() {
                        bucket.add(spec, item?)?;
                    }
                }
                match peek_value(&mut items)? {
                    Some(next) if boundary == 0.0 => {
                        Bson::Double(g.round_down(granular_value(&next)?))
                    }
                    _ => Bson::Double(boundary),
                }
            }
            None => {
                while let Some(next) = peek_value(&mut items)? {
                    if compare_values(&next, &end) != Ordering::Equal {
                        break;
                    }
                    if let Some(item) = items.next() {
                        bucket.add(spec, item?)?;
                    }
                }
                peek_value(&mut items)?.unwrap_or(end)
            }
        };
        taken += bucket.count;
        let mut d = Document::new();
        d.insert("_id", bson::doc! {"min": min, "max": max.clone()});
        for (a, state) in spec.output.iter().zip(bucket.states) {
            d.insert(a.field.clone(), state.finish());
        }
        out.push(d);
        previous_max = Some(max);
    }
    Ok(out)
}

/// The value of the next item, without taking it (its error, if it is one).
fn peek_value<I: Iterator<Item = Result<(Bson, Document), QueryError>>>(
    items: &mut std::iter::Peekable<I>,
) -> Result<Option<Bson>, QueryError> {
    match items.peek() {
        None => Ok(None),
        Some(Ok((value, _))) => Ok(Some(value.clone())),
        Some(Err(_)) => match items.next() {
            Some(Err(error)) => Err(error),
            _ => Ok(None),
        },
    }
}

/// One bucket being filled: its accumulators, how many documents, its first and last values.
struct Bucket {
    states: Vec<AccumulatorState>,
    count: usize,
    first: Option<Bson>,
    last: Option<Bson>,
}

impl Bucket {
    fn new(spec: &BucketAuto) -> Bucket {
        Bucket {
            states: spec.output.iter().map(AccumulatorSpec::new_state).collect(),
            count: 0,
            first: None,
            last: None,
        }
    }

    fn add(&mut self, spec: &BucketAuto, (value, doc): (Bson, Document)) -> Result<(), QueryError> {
        crate::interrupt::check()?;
        feed(&spec.output, &mut self.states, &doc)?;
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(value.clone());
        }
        self.last = Some(value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::query::aggregate::Pipeline;
    use bson::{doc, Bson, Document};

    fn run(stage: Document, docs: Vec<Document>) -> Vec<Document> {
        Pipeline::parse(&[doc! {"$bucketAuto": stage}])
            .unwrap()
            .run(docs)
            .unwrap()
    }

    #[test]
    fn even_buckets_never_split_equal_values() {
        let docs: Vec<Document> = [1, 2, 2, 2, 3, 4, 5, 6]
            .iter()
            .map(|v| doc! {"v": *v})
            .collect();
        assert_eq!(
            run(doc! {"groupBy": "$v", "buckets": 3}, docs),
            vec![
                doc! {"_id": {"min": 1, "max": 3}, "count": 4},
                doc! {"_id": {"min": 3, "max": 6}, "count": 3},
                doc! {"_id": {"min": 6, "max": 6}, "count": 1},
            ]
        );
    }

    #[test]
    fn granularity_rounds_boundaries_to_the_series() {
        // The manual's example: _id 0..99 in five R5 buckets gives three.
        let docs: Vec<Document> = (0..100).map(|i| doc! {"_id": i}).collect();
        assert_eq!(
            run(
                doc! {"groupBy": "$_id", "buckets": 5, "granularity": "R5"},
                docs.clone()
            ),
            vec![
                doc! {"_id": {"min": 0.0, "max": 25.0}, "count": 25},
                doc! {"_id": {"min": 25.0, "max": 63.0}, "count": 38},
                doc! {"_id": {"min": 63.0, "max": 100.0}, "count": 37},
            ]
        );
        let got = run(
            doc! {"groupBy": "$_id", "buckets": 5, "granularity": "POWERSOF2"},
            docs,
        );
        let maxes: Vec<Bson> = got
            .iter()
            .map(|d| d.get_document("_id").unwrap().get("max").cloned().unwrap())
            .collect();
        assert_eq!(
            maxes,
            vec![Bson::Double(32.0), Bson::Double(64.0), Bson::Double(128.0)]
        );
    }

    #[test]
    fn errors() {
        let code = |stage: Document| {
            Pipeline::parse(&[doc! {"$bucketAuto": stage}])
                .unwrap_err()
                .code
        };
        assert_eq!(code(doc! {"groupBy": "$v"}), 40246);
        assert_eq!(code(doc! {"groupBy": "v", "buckets": 2}), 40239);
        assert_eq!(code(doc! {"groupBy": "$v", "buckets": 0}), 40243);
        assert_eq!(code(doc! {"groupBy": "$v", "buckets": "2"}), 40241);
        assert_eq!(
            code(doc! {"groupBy": "$v", "buckets": 2, "granularity": "R7"}),
            40257
        );
        assert_eq!(code(doc! {"groupBy": "$v", "buckets": 2, "x": 1}), 40245);
        let err = Pipeline::parse(&[
            doc! {"$bucketAuto": {"groupBy": "$v", "buckets": 2, "granularity": "R5"}},
        ])
        .unwrap()
        .run(vec![doc! {"v": -1}])
        .unwrap_err();
        assert_eq!(err.code, 40260);
    }

    #[test]
    fn spilled_buckets_are_the_buckets_in_memory() {
        use crate::interrupt::{BlockingMemory, Interrupt};
        let dir = tempfile::tempdir().unwrap();
        let docs: Vec<Document> = (0..300_i32)
            .map(|i| doc! {"_id": i, "v": (i * 37) % 101, "pad": "p".repeat(50)})
            .collect();
        for stage in [
            doc! {"groupBy": "$v", "buckets": 7, "output": {"n": {"$sum": 1}, "ids": {"$push": "$_id"}}},
            doc! {"groupBy": "$v", "buckets": 4, "granularity": "R10"},
            doc! {"groupBy": "$v", "buckets": 5, "granularity": "POWERSOF2"},
            doc! {"groupBy": {"$mod": ["$v", 3]}, "buckets": 5},
        ] {
            let expected = run(stage.clone(), docs.clone());
            let interrupt = Interrupt::new(None);
            interrupt.limit_blocking_memory(BlockingMemory {
                bytes: 2_000,
                spill_dir: Some(dir.path().into()),
                spool_dir: None,
            });
            let before = crate::query::spill::totals().sorts;
            let spilled = interrupt.install(|| run(stage.clone(), docs.clone()));
            assert_eq!(spilled, expected, "{stage}");
            assert!(crate::query::spill::totals().sorts > before);
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
