//! The running numeric total behind `$sum` and `$avg`, as MongoDB keeps it: integers summed
//! exactly, doubles with double-double (compensated) summation so that ten 0.1s make 1,
//! decimals summed exactly apart from the rest; the result takes the widest type seen
//! (Int32 → Int64 → Double on overflow, Decimal128 when any decimal was added).
//!
//! Not for: arithmetic between two values (`value/number.rs`) or accumulator dispatch
//! (`expr/accumulator.rs`).

use crate::query::value::decimal::{decimal_with_ideal_exponent, raw_exponent};
use crate::query::value::number::{
    decimal_from_exact, to_decimal, DecimalValue, ExactDecimal, Number,
};
use bson::Bson;

/// A compensated double sum (Knuth's TwoSum): `high + low` carries the rounding error.
#[derive(Clone, Copy, Debug, Default)]
struct DoubleDouble {
    high: f64,
    low: f64,
}

impl DoubleDouble {
    fn add(&mut self, x: f64) {
        if !x.is_finite() || !self.high.is_finite() {
            self.high += x;
            return;
        }
        let sum = self.high + x;
        let virtual_x = sum - self.high;
        let error = (self.high - (sum - virtual_x)) + (x - virtual_x);
        self.high = sum;
        self.low += error;
    }

    fn value(&self) -> f64 {
        if self.high.is_finite() {
            self.high + self.low
        } else {
            self.high
        }
    }
}

/// Which numeric type the total has grown to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
enum Width {
    #[default]
    Int32,
    Int64,
    Double,
    Decimal,
}

/// A running `$sum` / `$avg`.
#[derive(Clone, Debug, Default)]
pub struct NumericSum {
    width: Width,
    /// Whether any double was added.
    saw_double: bool,
    /// How many Int32/Int64/Double values were added.
    non_decimal_count: u64,
    integers: i128,
    doubles: DoubleDouble,
    decimals: Option<ExactDecimal>,
    /// NaN or infinities met among decimals.
    decimal_special: Option<f64>,
    /// The smallest exponent among the decimals added (the sum's preferred exponent).
    decimal_exponent: Option<i32>,
    count: u64,
}

impl NumericSum {
    /// Adds a value; non-numbers are ignored (returns whether it counted).
    pub fn add(&mut self, value: &Bson) -> bool {
        match value {
            Bson::Int32(i) => self.add_integer(i64::from(*i), Width::Int32),
            Bson::Int64(i) => self.add_integer(*i, Width::Int64),
            Bson::Double(d) => {
                self.width = self.width.max(Width::Double);
                self.saw_double = true;
                self.non_decimal_count += 1;
                self.doubles.add(*d);
            }
            Bson::Decimal128(d) => {
                self.width = Width::Decimal;
                if let Some(e) = raw_exponent(d) {
                    self.decimal_exponent = Some(self.decimal_exponent.map_or(e, |m| m.min(e)));
                }
                match DecimalValue::decode(d) {
                    DecimalValue::Finite(x) => {
                        let total = self.decimals.take().unwrap_or_else(ExactDecimal::zero);
                        self.decimals = Some(total.add(&x));
                    }
                    DecimalValue::NaN => self.decimal_special = Some(f64::NAN),
                    DecimalValue::Infinity(negative) => {
                        let inf = if negative {
                            f64::NEG_INFINITY
                        } else {
                            f64::INFINITY
                        };
                        self.decimal_special = Some(self.decimal_special.unwrap_or(0.0) + inf);
                    }
                }
            }
            _ => return false,
        }
        self.count += 1;
        true
    }

    fn add_integer(&mut self, i: i64, width: Width) {
        self.width = self.width.max(width);
        self.non_decimal_count += 1;
        self.integers += i128::from(i);
        // Exact split of the integer into two doubles for the compensated sum.
        let high = i as f64;
        let low = (i128::from(i) - high as i128) as f64;
        self.doubles.add(high);
        self.doubles.add(low);
    }

    fn non_decimal_double(&self) -> f64 {
        if self.saw_double {
            self.doubles.value()
        } else {
            self.integers as f64
        }
    }

    /// The exact decimal total and its preferred exponent (the smallest operand exponent).
    fn decimal_total(&self) -> Option<(ExactDecimal, i32)> {
        if self.decimal_special.is_some() {
            return None;
        }
        let mut ideal = self.decimal_exponent.unwrap_or(0);
        let non_decimal = if self.saw_double {
            let converted = to_decimal(Number::Double(self.doubles.value()));
            ideal = ideal.min(raw_exponent(&converted).unwrap_or(0));
            match DecimalValue::decode(&converted) {
                DecimalValue::Finite(x) => x,
                _ => return None,
            }
        } else {
            if self.non_decimal_count > 0 {
                ideal = ideal.min(0);
            }
            let magnitude = self.integers.unsigned_abs();
            ExactDecimal::from_parts(self.integers < 0, magnitude, 0)
        };
        let total = self
            .decimals
            .clone()
            .unwrap_or_else(ExactDecimal::zero)
            .add(&non_decimal);
        Some((total, ideal))
    }

    fn special_decimal(&self) -> Bson {
        let value = self.decimal_special.unwrap_or(f64::NAN) + self.non_decimal_double();
        Bson::Decimal128(to_decimal(Number::Double(value)))
    }

    /// The `$sum` of `times` copies of the integer `value` (Int32 or Int64), exactly what
    /// adding them one by one totals (the integers are kept exactly, so only the widest type
    /// and the exact total matter). None for any other value.
    pub fn repeated_integer_total(value: &Bson, times: u64) -> Option<Bson> {
        NumericSum::repeated_integer(value, times).map(|sum| sum.total())
    }

    /// The running total of `times` copies of the integer `value` (Int32 or Int64); None
    /// for any other value.
    pub fn repeated_integer(value: &Bson, times: u64) -> Option<NumericSum> {
        let (int32s, int64s, integer) = match value {
            Bson::Int32(i) => (times, 0, i64::from(*i)),
            Bson::Int64(i) => (0, times, *i),
            _ => return None,
        };
        let total = i128::from(integer).checked_mul(i128::from(times))?;
        Some(NumericSum::from_totals(int32s, int64s, 0, total, 0.0))
    }

    /// The running total of Int32, Int64 and Double values added in some order, rebuilt
    /// from what a store computed of them in SQL: how many of each type, the exact sum of the
    /// integers, and `rounded`, the double the compensated sum of all of them (integers
    /// included, as [`NumericSum::add`] feeds them) ends at. The store vouches for
    /// `rounded` (see `store::postgres::grouping`); without doubles it is not read.
    pub fn from_totals(
        int32_count: u64,
        int64_count: u64,
        double_count: u64,
        integers: i128,
        rounded: f64,
    ) -> NumericSum {
        let width = if double_count > 0 {
            Width::Double
        } else if int64_count > 0 {
            Width::Int64
        } else {
            Width::Int32
        };
        let count = int32_count + int64_count + double_count;
        NumericSum {
            width,
            saw_double: double_count > 0,
            non_decimal_count: count,
            integers,
            doubles: DoubleDouble {
                high: rounded,
                low: 0.0,
            },
            count,
            ..NumericSum::default()
        }
    }

    /// The total in the widest type seen (Int32 when nothing was added).
    pub fn total(&self) -> Bson {
        match self.width {
            Width::Int32 | Width::Int64 => {
                if let Ok(small) = i32::try_from(self.integers) {
                    if self.width == Width::Int32 {
                        return Bson::Int32(small);
                    }
                }
                match i64::try_from(self.integers) {
                    Ok(long) => Bson::Int64(long),
                    Err(_) => Bson::Double(self.integers as f64),
                }
            }
            Width::Double => Bson::Double(self.non_decimal_double()),
            Width::Decimal => match self.decimal_total() {
                Some((exact, ideal)) => {
                    Bson::Decimal128(decimal_with_ideal_exponent(&exact, ideal))
                }
                None => self.special_decimal(),
            },
        }
    }

    /// The mean: null when nothing was added, Decimal128 when any decimal was, else Double.
    pub fn average(&self) -> Bson {
        if self.count == 0 {
            return Bson::Null;
        }
        match self.width {
            Width::Decimal => match self.decimal_total() {
                Some((exact, ideal)) => {
                    let quotient = divide(&exact, self.count);
                    if quotient.digits.len() > 34 {
                        Bson::Decimal128(decimal_from_exact(&quotient))
                    } else {
                        Bson::Decimal128(decimal_with_ideal_exponent(&quotient, ideal))
                    }
                }
                None => self.special_decimal(),
            },
            _ => Bson::Double(self.non_decimal_double() / self.count as f64),
        }
    }
}

/// `x / n` to more than 34 significant digits (then rounded by `decimal_from_exact`).
fn divide(x: &ExactDecimal, n: u64) -> ExactDecimal {
    if x.is_zero() || n == 0 {
        return ExactDecimal::zero();
    }
    let divisor = u128::from(n);
    let mut remainder: u128 = 0;
    let mut digits = Vec::with_capacity(x.digits.len() + 40);
    for position in 0..x.digits.len() + 40 {
        let digit = x.digits.get(position).copied().unwrap_or(0);
        remainder = remainder * 10 + u128::from(digit);
        digits.push((remainder / divisor) as u8);
        remainder %= divisor;
    }
    ExactDecimal::normalized(x.negative, digits, x.exponent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(values: &[Bson]) -> NumericSum {
        let mut s = NumericSum::default();
        for v in values {
            s.add(v);
        }
        s
    }

    #[test]
    fn compensated_doubles_and_integer_widths() {
        assert_eq!(sum(&vec![Bson::Double(0.1); 10]).total(), Bson::Double(1.0));
        assert_eq!(
            sum(&[Bson::Int32(1), Bson::Int32(2)]).total(),
            Bson::Int32(3)
        );
        assert_eq!(
            sum(&[Bson::Int32(i32::MAX), Bson::Int32(1)]).total(),
            Bson::Int64(i64::from(i32::MAX) + 1)
        );
        assert_eq!(
            sum(&[Bson::Int64(i64::MAX), Bson::Int64(1)]).total(),
            Bson::Double(9_223_372_036_854_775_808.0)
        );
        assert_eq!(
            sum(&[Bson::Int64(1), Bson::Int32(1)]).total(),
            Bson::Int64(2)
        );
        assert_eq!(sum(&[]).total(), Bson::Int32(0));
        assert_eq!(sum(&[Bson::String("x".into())]).average(), Bson::Null);
        assert_eq!(
            sum(&[Bson::Int32(1), Bson::Int32(2)]).average(),
            Bson::Double(1.5)
        );
    }

    #[test]
    fn decimals_stay_exact() {
        let d = |s: &str| Bson::Decimal128(s.parse().unwrap());
        assert_eq!(sum(&[d("0.1"), d("0.2"), Bson::Int32(1)]).total(), d("1.3"));
        assert_eq!(sum(&[d("1"), d("2")]).average(), d("1.5"));
        assert_eq!(sum(&[d("1"), d("1"), d("1")]).average(), d("1"));
        assert_eq!(sum(&[d("0.10"), d("0.20")]).total(), d("0.30"));
        assert_eq!(sum(&[d("3.00"), d("1.00")]).average(), d("2.00"));
        assert_eq!(
            sum(&[d("1"), d("0"), d("0")]).average(),
            d("0.3333333333333333333333333333333333")
        );
        assert_eq!(
            sum(&[d("1"), d("2")]).average().to_string(),
            d("1.5").to_string()
        );
    }
}
