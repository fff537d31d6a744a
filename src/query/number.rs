//! Numbers across BSON's four numeric types: exact comparison of Int32, Int64, Double and
//! Decimal128 with each other, Decimal128 decoding, and the arithmetic that update operators
//! and aggregation share (with MongoDB's int → long → double promotion on overflow).
//!
//! Not for: ordering of non-numeric values (see `compare.rs`) or key encoding (`keys.rs`).

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

/// Decoded Decimal128.
#[derive(Clone, Debug, PartialEq)]
pub enum DecimalValue {
    /// Not a number.
    NaN,
    /// Positive (false) or negative (true) infinity.
    Infinity(bool),
    /// A finite value, exactly.
    Finite(ExactDecimal),
}

impl DecimalValue {
    /// Decodes the IEEE 754-2008 BID encoding that BSON uses (little-endian bytes).
    pub fn decode(d: &Decimal128) -> DecimalValue {
        let bits = u128::from_le_bytes(d.bytes());
        let negative = bits >> 127 == 1;
        let combination = (bits >> 122) & 0x1f;
        if combination == 0x1f {
            return DecimalValue::NaN;
        }
        if combination == 0x1e {
            return DecimalValue::Infinity(negative);
        }
        let (exponent_bits, coefficient) = if (bits >> 125) & 0x3 == 0x3 {
            // Coefficient would exceed 10^34: non-canonical, treated as zero.
            ((bits >> 111) & 0x3fff, 0u128)
        } else {
            ((bits >> 113) & 0x3fff, bits & ((1u128 << 113) - 1))
        };
        let coefficient = if coefficient >= 10u128.pow(34) {
            0
        } else {
            coefficient
        };
        let exponent = exponent_bits as i32 - 6176;
        DecimalValue::Finite(ExactDecimal::from_parts(negative, coefficient, exponent))
    }
}

/// An exact finite decimal: `±0.d1d2d3… × 10^exponent` with no leading or trailing zero
/// digits; zero has no digits (and is never negative).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExactDecimal {
    /// True for values below zero.
    pub negative: bool,
    /// Significant digits, each 0..=9, first and last non-zero.
    pub digits: Vec<u8>,
    /// Decimal exponent of the point placed before the first digit.
    pub exponent: i32,
}

impl ExactDecimal {
    /// Zero.
    pub fn zero() -> Self {
        ExactDecimal {
            negative: false,
            digits: Vec::new(),
            exponent: 0,
        }
    }

    /// `±coefficient × 10^exponent`.
    pub fn from_parts(negative: bool, coefficient: u128, exponent: i32) -> Self {
        let digits: Vec<u8> = coefficient.to_string().bytes().map(|b| b - b'0').collect();
        let point = exponent + digits.len() as i32;
        Self::normalized(negative, digits, point)
    }

    /// Strips leading and trailing zeros; `exponent` is the position of the decimal point
    /// relative to the start of `digits`.
    fn normalized(negative: bool, mut digits: Vec<u8>, mut exponent: i32) -> Self {
        let leading = digits.iter().take_while(|d| **d == 0).count();
        digits.drain(..leading);
        exponent -= leading as i32;
        while digits.last() == Some(&0) {
            digits.pop();
        }
        if digits.is_empty() {
            return Self::zero();
        }
        ExactDecimal {
            negative,
            digits,
            exponent,
        }
    }

    /// The exact decimal value of a finite double.
    pub fn from_f64(v: f64) -> Self {
        if v == 0.0 || !v.is_finite() {
            return Self::zero();
        }
        // 800 fractional digits of scientific notation is beyond the 767 significant digits
        // any double can have, so the rendering is exact.
        let text = format!("{:.800e}", v.abs());
        let (mantissa, exp) = match text.split_once('e') {
            Some(parts) => parts,
            None => return Self::zero(),
        };
        let exp: i32 = exp.parse().unwrap_or(0);
        let digits: Vec<u8> = mantissa
            .bytes()
            .filter(u8::is_ascii_digit)
            .map(|b| b - b'0')
            .collect();
        Self::normalized(v < 0.0, digits, exp + 1)
    }

    /// The exact decimal value of an integer.
    pub fn from_i64(v: i64) -> Self {
        let magnitude = i128::from(v).unsigned_abs();
        Self::from_parts(v < 0, magnitude, 0)
    }

    /// True for zero.
    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    fn cmp_magnitude(&self, other: &Self) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        self.exponent
            .cmp(&other.exponent)
            .then_with(|| self.digits.cmp(&other.digits))
    }

    /// Exact integer value, if integral and within i64.
    pub fn to_i64_exact(&self) -> Option<i64> {
        if self.is_zero() {
            return Some(0);
        }
        if self.exponent < self.digits.len() as i32 || self.exponent > 19 {
            return None;
        }
        let mut value: i128 = 0;
        for i in 0..self.exponent as usize {
            value = value * 10 + i128::from(*self.digits.get(i).unwrap_or(&0));
        }
        if self.negative {
            value = -value;
        }
        i64::try_from(value).ok()
    }

    /// Renders as a plain decimal string usable by `str::parse::<f64>` and `Decimal128::from_str`.
    pub fn to_scientific_string(&self) -> String {
        if self.is_zero() {
            return "0".to_string();
        }
        let mut s = String::new();
        if self.negative {
            s.push('-');
        }
        for d in &self.digits {
            s.push((b'0' + d) as char);
        }
        let exponent = self.exponent - self.digits.len() as i32;
        s.push('E');
        s.push_str(&exponent.to_string());
        s
    }

    /// `self - other`, exactly.
    pub fn subtract(&self, other: &Self) -> Self {
        let mut negated = other.clone();
        if !negated.is_zero() {
            negated.negative = !negated.negative;
        }
        self.add(&negated)
    }

    /// `self + other`, exactly.
    pub fn add(&self, other: &Self) -> Self {
        if self.is_zero() {
            return other.clone();
        }
        if other.is_zero() {
            return self.clone();
        }
        // Align both on a common grid: position p (0 = first digit at `top`).
        let top = self.exponent.max(other.exponent);
        let end = (self.exponent - self.digits.len() as i32)
            .min(other.exponent - other.digits.len() as i32);
        let width = (top - end) as usize;
        let spread = |x: &ExactDecimal| {
            let mut v = vec![0i32; width];
            let offset = (top - x.exponent) as usize;
            for (i, d) in x.digits.iter().enumerate() {
                if let Some(slot) = v.get_mut(offset + i) {
                    *slot = i32::from(*d);
                }
            }
            v
        };
        let a = spread(self);
        let b = spread(other);
        if self.negative == other.negative {
            let mut out = vec![0u8; width + 1];
            let mut carry = 0;
            for i in (0..width).rev() {
                let s = a[i] + b[i] + carry;
                out[i + 1] = (s % 10) as u8;
                carry = s / 10;
            }
            out[0] = carry as u8;
            return Self::normalized(self.negative, out, top + 1);
        }
        // Different signs: subtract the smaller magnitude from the larger.
        let (big, small, negative) = match self.cmp_magnitude(other) {
            Ordering::Equal => return Self::zero(),
            Ordering::Greater => (a, b, self.negative),
            Ordering::Less => (b, a, other.negative),
        };
        let mut out = vec![0u8; width];
        let mut borrow = 0;
        for i in (0..width).rev() {
            let mut s = big[i] - small[i] - borrow;
            if s < 0 {
                s += 10;
                borrow = 1;
            } else {
                borrow = 0;
            }
            out[i] = s as u8;
        }
        Self::normalized(negative, out, top)
    }
}

impl Ord for ExactDecimal {
    fn cmp(&self, other: &Self) -> Ordering {
        let sign = |x: &ExactDecimal| {
            if x.is_zero() {
                0
            } else if x.negative {
                -1
            } else {
                1
            }
        };
        let (sa, sb) = (sign(self), sign(other));
        if sa != sb {
            return sa.cmp(&sb);
        }
        let magnitude = self.cmp_magnitude(other);
        if sa < 0 {
            magnitude.reverse()
        } else {
            magnitude
        }
    }
}

impl PartialOrd for ExactDecimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Decimal128 rounded to the nearest double (correctly rounded through the decimal string).
pub fn decimal_to_f64(d: &Decimal128) -> f64 {
    match DecimalValue::decode(d) {
        DecimalValue::NaN => f64::NAN,
        DecimalValue::Infinity(true) => f64::NEG_INFINITY,
        DecimalValue::Infinity(false) => f64::INFINITY,
        DecimalValue::Finite(x) => x.to_scientific_string().parse().unwrap_or(f64::NAN),
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

/// Rounds to `place` decimal places (negative: left of the point), half to even.
pub fn round_half_even(x: &ExactDecimal, place: i64) -> ExactDecimal {
    if x.is_zero() {
        return x.clone();
    }
    let keep = i64::from(x.exponent) + place;
    if keep >= x.digits.len() as i64 {
        return x.clone();
    }
    if keep < 0 {
        return ExactDecimal::zero();
    }
    let keep = keep as usize;
    let mut digits: Vec<u8> = x.digits[..keep].to_vec();
    let next = x.digits[keep];
    let rest_nonzero = x.digits[keep + 1..].iter().any(|d| *d != 0);
    let last_odd = digits.last().is_some_and(|d| d % 2 == 1);
    let round_up = next > 5 || (next == 5 && (rest_nonzero || last_odd));
    let mut exponent = x.exponent;
    if round_up {
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, 1);
                exponent += 1;
                break;
            }
            i -= 1;
            if digits[i] == 9 {
                digits[i] = 0;
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    ExactDecimal::normalized(x.negative, digits, exponent)
}

/// An exact decimal as Decimal128 (rounded to 34 significant digits).
pub fn decimal_from_exact(x: &ExactDecimal) -> Decimal128 {
    let text = round_to_34_digits(x).to_scientific_string();
    text.parse::<Decimal128>().unwrap_or_else(|_| {
        "NaN"
            .parse::<Decimal128>()
            .unwrap_or(Decimal128::from_bytes([0; 16]))
    })
}

fn round_to_34_digits(x: &ExactDecimal) -> ExactDecimal {
    if x.digits.len() <= 34 {
        return x.clone();
    }
    let mut digits: Vec<u8> = x.digits[..34].to_vec();
    let next = x.digits[34];
    let rest_nonzero = x.digits[35..].iter().any(|d| *d != 0);
    let last_odd = digits[33] % 2 == 1;
    let round_up = next > 5 || (next == 5 && (rest_nonzero || last_odd));
    let mut exponent = x.exponent;
    if round_up {
        let mut i = 33;
        loop {
            if digits[i] == 9 {
                digits[i] = 0;
                if i == 0 {
                    digits.insert(0, 1);
                    exponent += 1;
                    break;
                }
                i -= 1;
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    ExactDecimal::normalized(x.negative, digits, exponent)
}

/// Converts any number to Decimal128 (exactly for ints and doubles up to 34 digits).
pub fn to_decimal(n: Number) -> Decimal128 {
    match n {
        Number::Decimal(d) => d,
        Number::Int(i) => decimal_from_exact(&ExactDecimal::from_i64(i)),
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

fn decimal_from_exact_str(s: &str) -> Decimal128 {
    s.parse::<Decimal128>()
        .unwrap_or(Decimal128::from_bytes([0; 16]))
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
            let exact = match op {
                Arithmetic::Add => p.add(&q),
                Arithmetic::Subtract => p.subtract(&q),
                Arithmetic::Multiply => multiply_exact(&p, &q),
            };
            decimal_from_exact(&exact)
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

fn multiply_exact(a: &ExactDecimal, b: &ExactDecimal) -> ExactDecimal {
    if a.is_zero() || b.is_zero() {
        return ExactDecimal::zero();
    }
    let mut out = vec![0u32; a.digits.len() + b.digits.len()];
    for (i, da) in a.digits.iter().enumerate().rev() {
        for (j, db) in b.digits.iter().enumerate().rev() {
            out[i + j + 1] += u32::from(*da) * u32::from(*db);
        }
    }
    for k in (1..out.len()).rev() {
        let carry = out[k] / 10;
        out[k] %= 10;
        out[k - 1] += carry;
    }
    let digits: Vec<u8> = out.iter().map(|d| *d as u8).collect();
    ExactDecimal::normalized(a.negative != b.negative, digits, a.exponent + b.exponent)
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
