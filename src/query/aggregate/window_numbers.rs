//! The arithmetic of the window functions that compute rather than accumulate
//! (`$expMovingAvg`, `$derivative`, `$integral`, `$covariancePop`/`$covarianceSamp`,
//! `$linearFill`): in doubles, or — when an input of the partition is a Decimal128 — in
//! Decimal128, as MongoDB computes them (the result is then a Decimal128). One generic
//! computation serves both ([`WindowNumber`]).
//!
//! Not for: the functions themselves (`window_functions.rs`) or decimal arithmetic
//! (`value/decimal.rs`, `value/number.rs`).

use bson::{Bson, Decimal128};

use crate::query::value::decimal::{divide_decimal, DecimalValue};
use crate::query::value::number::{arithmetic, compare_numbers, to_decimal, Arithmetic, Number};

/// A number the computing window functions work in.
pub(super) trait WindowNumber: Clone {
    /// The value of a BSON number (a date's milliseconds are given as an Int64 number).
    fn from_number(n: Number) -> Self;
    fn from_f64(x: f64) -> Self;
    fn add(&self, other: &Self) -> Self;
    fn sub(&self, other: &Self) -> Self;
    fn mul(&self, other: &Self) -> Self;
    /// `self / other`; callers check a zero divisor where MongoDB answers null.
    fn div(&self, other: &Self) -> Self;
    /// Numeric equality.
    fn same(&self, other: &Self) -> bool;
    fn into_bson(self) -> Bson;
}

impl WindowNumber for f64 {
    fn from_number(n: Number) -> Self {
        n.to_f64()
    }
    fn from_f64(x: f64) -> Self {
        x
    }
    fn add(&self, other: &Self) -> Self {
        self + other
    }
    fn sub(&self, other: &Self) -> Self {
        self - other
    }
    fn mul(&self, other: &Self) -> Self {
        self * other
    }
    fn div(&self, other: &Self) -> Self {
        self / other
    }
    fn same(&self, other: &Self) -> bool {
        self == other
    }
    fn into_bson(self) -> Bson {
        Bson::Double(self)
    }
}

/// A Decimal128 in the window functions' arithmetic (each operation rounded to 34 digits, as
/// MongoDB's Decimal128 operations are).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Decimal(Decimal128);

impl Decimal {
    fn apply(&self, op: Arithmetic, other: &Self) -> Self {
        match arithmetic(op, &Bson::Decimal128(self.0), &Bson::Decimal128(other.0)) {
            Some(Bson::Decimal128(d)) => Decimal(d),
            _ => Decimal::from_f64(f64::NAN),
        }
    }
}

impl WindowNumber for Decimal {
    fn from_number(n: Number) -> Self {
        Decimal(to_decimal(n))
    }
    fn from_f64(x: f64) -> Self {
        Decimal(to_decimal(Number::Double(x)))
    }
    fn add(&self, other: &Self) -> Self {
        self.apply(Arithmetic::Add, other)
    }
    fn sub(&self, other: &Self) -> Self {
        self.apply(Arithmetic::Subtract, other)
    }
    fn mul(&self, other: &Self) -> Self {
        self.apply(Arithmetic::Multiply, other)
    }
    fn div(&self, other: &Self) -> Self {
        match (
            DecimalValue::decode(&self.0),
            DecimalValue::decode(&other.0),
        ) {
            (DecimalValue::Finite(a), DecimalValue::Finite(b)) => {
                divide_decimal(&a, &b, 0).map_or_else(|| Decimal::from_f64(f64::NAN), Decimal)
            }
            _ => {
                let (a, b) = (
                    Number::Decimal(self.0).to_f64(),
                    Number::Decimal(other.0).to_f64(),
                );
                Decimal::from_f64(a / b)
            }
        }
    }
    fn same(&self, other: &Self) -> bool {
        compare_numbers(Number::Decimal(self.0), Number::Decimal(other.0)).is_eq()
    }
    fn into_bson(self) -> Bson {
        Bson::Decimal128(self.0)
    }
}

/// Whether any of the values is a Decimal128 (the partition is then computed in decimal).
pub(super) fn any_decimal<'a>(values: impl IntoIterator<Item = &'a Option<Bson>>) -> bool {
    values
        .into_iter()
        .any(|v| matches!(v, Some(Bson::Decimal128(_))))
}
