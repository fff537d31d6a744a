//! Numbers across BSON's four numeric types: exact comparison of Int32, Int64, Double and
//! Decimal128 with each other, Decimal128 decoding, and the arithmetic that update operators
//! and aggregation share (with MongoDB's int → long → double promotion on overflow).
//!
//! Not for: ordering of non-numeric values (see `value/compare.rs`) or key encoding (`value/keys.rs`).

pub use crate::query::value::decimal::{
    decimal_from_exact, decimal_to_f64, round_half_even, DecimalValue, ExactDecimal,
};
use crate::query::value::decimal::{
    decimal_from_exact_str, decimal_with_ideal_exponent, multiply_exact, raw_exponent,
};
use bson::{Bson, Decimal128};
use std::cmp::Ordering;

/// A BSON number viewed without its storage width.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// Int32 or Int64.
    Int(i64),
    /// Double.
    Double(f64),
    /// Decimal128.
    Decimal(Decimal128),
}

impl Number {
    /// The number inside a numeric BSON value, `None` for any other type.
    pub fn from_bson(v: &Bson) -> Option<Number> {
        match v {
            Bson::Int32(i) => Some(Number::Int(i64::from(*i))),
            Bson::Int64(i) => Some(Number::Int(*i)),
            Bson::Double(d) => Some(Number::Double(*d)),
            Bson::Decimal128(d) => Some(Number::Decimal(*d)),
            _ => None,
        }
    }

    /// The value rounded to the nearest double (decimals beyond the double range give ±inf).
    pub fn to_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Double(d) => d,
            Number::Decimal(d) => decimal_to_f64(&d),
        }
    }

    /// True for double or decimal NaN.
    pub fn is_nan(self) -> bool {
        match self {
            Number::Int(_) => false,
            Number::Double(d) => d.is_nan(),
            Number::Decimal(d) => matches!(DecimalValue::decode(&d), DecimalValue::NaN),
        }
    }

    /// The value as an i64 when it is integral and within range (truncation not applied).
    pub fn to_exact_i64(self) -> Option<i64> {
        match self {
            Number::Int(i) => Some(i),
            Number::Double(d) => {
                if d.fract() == 0.0
                    && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&d)
                {
                    Some(d as i64)
                } else {
                    None
                }
            }
            Number::Decimal(d) => match DecimalValue::decode(&d) {
                DecimalValue::Finite(x) => x.to_i64_exact(),
                _ => None,
            },
        }
    }
}

/// A number placed on the extended real line for comparison.
enum Extended {
    NaN,
    NegInf,
    Finite(FiniteNumber),
    PosInf,
}

enum FiniteNumber {
    Int(i64),
    Double(f64),
    Decimal(ExactDecimal),
}

fn extend(n: Number) -> Extended {
    match n {
        Number::Int(i) => Extended::Finite(FiniteNumber::Int(i)),
        Number::Double(d) if d.is_nan() => Extended::NaN,
        Number::Double(d) if d == f64::INFINITY => Extended::PosInf,
        Number::Double(d) if d == f64::NEG_INFINITY => Extended::NegInf,
        Number::Double(d) => Extended::Finite(FiniteNumber::Double(d)),
        Number::Decimal(d) => match DecimalValue::decode(&d) {
            DecimalValue::NaN => Extended::NaN,
            DecimalValue::Infinity(true) => Extended::NegInf,
            DecimalValue::Infinity(false) => Extended::PosInf,
            DecimalValue::Finite(x) => Extended::Finite(FiniteNumber::Decimal(x)),
        },
    }
}

fn extended_rank(e: &Extended) -> u8 {
    match e {
        Extended::NaN => 0,
        Extended::NegInf => 1,
        Extended::Finite(_) => 2,
        Extended::PosInf => 3,
    }
}

/// Exact comparison of an i64 with a finite double.
fn compare_i64_f64(i: i64, d: f64) -> Ordering {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if d >= TWO_63 {
        return Ordering::Less;
    }
    if d < -TWO_63 {
        return Ordering::Greater;
    }
    let floor = d.floor();
    let whole = floor as i64; // exact: |floor| < 2^63
    match i.cmp(&whole) {
        Ordering::Equal if d > floor => Ordering::Less,
        other => other,
    }
}

fn compare_finite(a: &FiniteNumber, b: &FiniteNumber) -> Ordering {
    match (a, b) {
        (FiniteNumber::Int(x), FiniteNumber::Int(y)) => x.cmp(y),
        (FiniteNumber::Double(x), FiniteNumber::Double(y)) => {
            x.partial_cmp(y).unwrap_or(Ordering::Equal)
        }
        (FiniteNumber::Int(x), FiniteNumber::Double(y)) => compare_i64_f64(*x, *y),
        (FiniteNumber::Double(x), FiniteNumber::Int(y)) => compare_i64_f64(*y, *x).reverse(),
        _ => to_exact(a).cmp(&to_exact(b)),
    }
}

fn to_exact(n: &FiniteNumber) -> ExactDecimal {
    match n {
        FiniteNumber::Int(i) => ExactDecimal::from_i64(*i),
        FiniteNumber::Double(d) => ExactDecimal::from_f64(*d),
        FiniteNumber::Decimal(x) => x.clone(),
    }
}

/// Exact total order of numbers: NaN (any) < -inf < finite values < +inf; -0 == 0.
pub fn compare_numbers(a: Number, b: Number) -> Ordering {
    let (ea, eb) = (extend(a), extend(b));
    match (&ea, &eb) {
        (Extended::Finite(x), Extended::Finite(y)) => compare_finite(x, y),
        _ => extended_rank(&ea).cmp(&extended_rank(&eb)),
    }
}

/// The exact decimal value of a finite number; `None` for NaN and infinities.
pub fn exact_value(n: Number) -> Option<ExactDecimal> {
    match extend(n) {
        Extended::Finite(f) => Some(to_exact(&f)),
        _ => None,
    }
}

/// The BSON value of an i64 result: Int32 when `prefer_int32` and it fits, else Int64.
fn int_result(value: i64, prefer_int32: bool) -> Bson {
    match i32::try_from(value) {
        Ok(small) if prefer_int32 => Bson::Int32(small),
        _ => Bson::Int64(value),
    }
}

/// Converts any number to Decimal128 (exactly for ints and doubles up to 34 digits).
pub fn to_decimal(n: Number) -> Decimal128 {
    match n {
        Number::Decimal(d) => d,
        Number::Int(i) => decimal_with_ideal_exponent(&ExactDecimal::from_i64(i), 0),
        Number::Double(d) if d.is_nan() => decimal_from_exact_str("NaN"),
        Number::Double(d) if d.is_infinite() => {
            decimal_from_exact_str(if d > 0.0 { "Infinity" } else { "-Infinity" })
        }
        Number::Double(d) => {
            // MongoDB converts doubles to decimal with 15 significant digits.
            let text = format!("{:.14e}", d);
            text.parse::<Decimal128>()
                .unwrap_or_else(|_| decimal_from_exact(&ExactDecimal::from_f64(d)))
        }
    }
}

/// Which width an arithmetic result takes.
fn widest(a: &Bson, b: &Bson) -> u8 {
    let width = |v: &Bson| match v {
        Bson::Int32(_) => 0,
        Bson::Int64(_) => 1,
        Bson::Double(_) => 2,
        Bson::Decimal128(_) => 3,
        _ => 0,
    };
    width(a).max(width(b))
}

/// Arithmetic operation shared by `$inc`/`$add` and `$mul`/`$multiply`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arithmetic {
    /// a + b
    Add,
    /// a - b
    Subtract,
    /// a × b
    Multiply,
}

/// `a op b` for numeric BSON values with MongoDB's type rules: the wider type wins; Int32
/// overflowing becomes Int64, Int64 overflowing becomes Double. `None` if either is not a number.
pub fn arithmetic(op: Arithmetic, a: &Bson, b: &Bson) -> Option<Bson> {
    let (x, y) = (Number::from_bson(a)?, Number::from_bson(b)?);
    let result = match widest(a, b) {
        0 | 1 => {
            let prefer_int32 = widest(a, b) == 0;
            let (p, q) = (x.to_exact_i64()?, y.to_exact_i64()?);
            let exact = match op {
                Arithmetic::Add => p.checked_add(q),
                Arithmetic::Subtract => p.checked_sub(q),
                Arithmetic::Multiply => p.checked_mul(q),
            };
            match exact {
                Some(v) => int_result(v, prefer_int32),
                None => {
                    let (pf, qf) = (p as f64, q as f64);
                    Bson::Double(match op {
                        Arithmetic::Add => pf + qf,
                        Arithmetic::Subtract => pf - qf,
                        Arithmetic::Multiply => pf * qf,
                    })
                }
            }
        }
        2 => {
            let (p, q) = (x.to_f64(), y.to_f64());
            Bson::Double(match op {
                Arithmetic::Add => p + q,
                Arithmetic::Subtract => p - q,
                Arithmetic::Multiply => p * q,
            })
        }
        _ => Bson::Decimal128(decimal_arithmetic(op, x, y)),
    };
    Some(result)
}

fn decimal_arithmetic(op: Arithmetic, x: Number, y: Number) -> Decimal128 {
    let (dx, dy) = (to_decimal(x), to_decimal(y));
    let (vx, vy) = (DecimalValue::decode(&dx), DecimalValue::decode(&dy));
    match (vx, vy) {
        (DecimalValue::Finite(p), DecimalValue::Finite(q)) => {
            let (ex, ey) = (
                raw_exponent(&dx).unwrap_or(0),
                raw_exponent(&dy).unwrap_or(0),
            );
            let (exact, ideal) = match op {
                Arithmetic::Add => (p.add(&q), ex.min(ey)),
                Arithmetic::Subtract => (p.subtract(&q), ex.min(ey)),
                Arithmetic::Multiply => (multiply_exact(&p, &q), ex.saturating_add(ey)),
            };
            decimal_with_ideal_exponent(&exact, ideal)
        }
        _ => {
            let (p, q) = (decimal_to_f64(&dx), decimal_to_f64(&dy));
            let r = match op {
                Arithmetic::Add => p + q,
                Arithmetic::Subtract => p - q,
                Arithmetic::Multiply => p * q,
            };
            to_decimal(Number::Double(r))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Number {
        Number::Decimal(s.parse().unwrap())
    }

    #[test]
    fn decodes_decimal128() {
        let v = DecimalValue::decode(&"1.50".parse().unwrap());
        assert_eq!(
            v,
            DecimalValue::Finite(ExactDecimal {
                negative: false,
                digits: vec![1, 5],
                exponent: 1
            })
        );
        assert_eq!(
            DecimalValue::decode(&"NaN".parse().unwrap()),
            DecimalValue::NaN
        );
        assert_eq!(
            DecimalValue::decode(&"-Infinity".parse().unwrap()),
            DecimalValue::Infinity(true)
        );
        assert_eq!(decimal_to_f64(&"-2.5".parse().unwrap()), -2.5);
    }

    #[test]
    fn exact_cross_type_comparison() {
        let two53 = 9_007_199_254_740_992i64;
        assert_eq!(
            compare_numbers(Number::Int(two53 + 1), Number::Double(two53 as f64)),
            Ordering::Greater
        );
        assert_eq!(
            compare_numbers(Number::Int(5), Number::Double(5.0)),
            Ordering::Equal
        );
        assert_eq!(
            compare_numbers(Number::Int(5), dec("5.00")),
            Ordering::Equal
        );
        assert_eq!(
            compare_numbers(Number::Double(0.1), dec("0.1")),
            Ordering::Greater
        );
        assert_eq!(
            compare_numbers(Number::Double(f64::NAN), Number::Int(i64::MIN)),
            Ordering::Less
        );
        assert_eq!(
            compare_numbers(Number::Double(f64::NAN), dec("NaN")),
            Ordering::Equal
        );
        assert_eq!(
            compare_numbers(Number::Double(-0.0), Number::Int(0)),
            Ordering::Equal
        );
        assert_eq!(
            compare_numbers(Number::Double(f64::INFINITY), dec("1E+6000")),
            Ordering::Greater
        );
        assert_eq!(
            compare_numbers(Number::Int(-3), Number::Double(-2.5)),
            Ordering::Less
        );
    }

    #[test]
    fn arithmetic_promotes_like_mongodb() {
        assert_eq!(
            arithmetic(Arithmetic::Add, &Bson::Int32(i32::MAX), &Bson::Int32(1)),
            Some(Bson::Int64(i64::from(i32::MAX) + 1))
        );
        assert_eq!(
            arithmetic(Arithmetic::Add, &Bson::Int32(1), &Bson::Int32(2)),
            Some(Bson::Int32(3))
        );
        assert_eq!(
            arithmetic(Arithmetic::Add, &Bson::Int64(i64::MAX), &Bson::Int64(1)),
            Some(Bson::Double(i64::MAX as f64 + 1.0))
        );
        assert_eq!(
            arithmetic(Arithmetic::Multiply, &Bson::Int32(3), &Bson::Double(1.5)),
            Some(Bson::Double(4.5))
        );
        let sum = arithmetic(
            Arithmetic::Add,
            &Bson::Decimal128("0.1".parse().unwrap()),
            &Bson::Int32(2),
        );
        assert_eq!(sum, Some(Bson::Decimal128("2.1".parse().unwrap())));
        // IEEE 754 preferred exponents, bit for bit: 0.10 + 0.20 = 0.30, 1.5 × 2 = 3.0.
        let dec = |s: &str| Bson::Decimal128(s.parse().unwrap());
        assert_eq!(
            arithmetic(Arithmetic::Add, &dec("0.10"), &dec("0.20")),
            Some(dec("0.30"))
        );
        assert_eq!(
            arithmetic(Arithmetic::Multiply, &dec("1.5"), &Bson::Int32(2)),
            Some(dec("3.0"))
        );
        assert_eq!(
            arithmetic(Arithmetic::Subtract, &dec("1.00"), &dec("1")),
            Some(dec("0.00"))
        );
        assert_eq!(to_decimal(Number::Int(100)), "100".parse().unwrap());
        assert_eq!(
            arithmetic(Arithmetic::Add, &Bson::Int32(1), &Bson::Null),
            None
        );
    }

    #[test]
    fn exact_decimal_add_and_subtract() {
        let a = ExactDecimal::from_f64(0.5);
        let b = ExactDecimal::from_i64(-3);
        assert_eq!(a.add(&b).to_scientific_string(), "-25E-1");
        assert_eq!(b.subtract(&b), ExactDecimal::zero());
        assert_eq!(ExactDecimal::from_i64(100).to_i64_exact(), Some(100));
    }
}
