//! Decimal128 in exact arithmetic: decoding the BID encoding, exact decimal values
//! ([`ExactDecimal`]) with addition, multiplication and half-even rounding, and encoding back
//! with IEEE 754's preferred exponents (so 0.10 + 0.20 is 0.30, like MongoDB).
//!
//! Not for: comparing or widening across numeric types (`value/number.rs`).

use bson::Decimal128;
use std::cmp::Ordering;

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
    pub fn normalized(negative: bool, mut digits: Vec<u8>, mut exponent: i32) -> Self {
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

pub(super) fn decimal_from_exact_str(s: &str) -> Decimal128 {
    s.parse::<Decimal128>()
        .unwrap_or(Decimal128::from_bytes([0; 16]))
}

pub(super) fn multiply_exact(a: &ExactDecimal, b: &ExactDecimal) -> ExactDecimal {
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

/// The exponent a Decimal128 is stored with (its quantum), for finite values.
pub fn raw_exponent(d: &Decimal128) -> Option<i32> {
    let bits = u128::from_le_bytes(d.bytes());
    let combination = (bits >> 122) & 0x1f;
    if combination >= 0x1e {
        return None;
    }
    let exponent_bits = if (bits >> 125) & 0x3 == 0x3 {
        (bits >> 111) & 0x3fff
    } else {
        (bits >> 113) & 0x3fff
    };
    Some(exponent_bits as i32 - 6176)
}

/// `x` as Decimal128 with the exponent IEEE 754 prefers for an exact result (`ideal`, e.g.
/// the smaller operand exponent of a sum), or the closest exponent that still represents `x`
/// exactly in 34 digits; inexact values are rounded to 34 significant digits.
pub fn decimal_with_ideal_exponent(x: &ExactDecimal, ideal: i32) -> Decimal128 {
    let ideal = ideal.clamp(-6176, 6111);
    if x.is_zero() {
        return decimal_from_exact_str(&format!("0E{ideal}"));
    }
    let length = x.digits.len() as i32;
    if length > 34 {
        return decimal_from_exact(x);
    }
    let last = x.exponent - length;
    let exponent = if last > ideal {
        ideal.max(last - (34 - length))
    } else {
        last
    };
    let mut text = String::with_capacity(40);
    if x.negative {
        text.push('-');
    }
    for d in &x.digits {
        text.push((b'0' + d) as char);
    }
    for _ in 0..(last - exponent) {
        text.push('0');
    }
    text.push('E');
    text.push_str(&exponent.to_string());
    decimal_from_exact_str(&text)
}

/// `a / b` to 34 significant digits, with IEEE 754's preferred exponent `ideal` when the
/// quotient is exact (e.g. 6.0 / 2 = 3.0); `None` when `b` is zero.
pub fn divide_decimal(a: &ExactDecimal, b: &ExactDecimal, ideal: i32) -> Option<Decimal128> {
    if b.is_zero() {
        return None;
    }
    if a.is_zero() {
        return Some(decimal_with_ideal_exponent(a, ideal));
    }
    // b = B × 10^last_b with B an integer of at most 34 digits, so B < 2^113 and the long
    // division's remainder × 10 + digit stays within u128.
    let divisor = b
        .digits
        .iter()
        .take(34)
        .fold(0u128, |acc, d| acc * 10 + u128::from(*d));
    let last_b = b.exponent - b.digits.len().min(34) as i32;
    let mut remainder: u128 = 0;
    let mut digits = Vec::with_capacity(a.digits.len() + 40);
    for position in 0..a.digits.len() + 40 {
        let digit = a.digits.get(position).copied().unwrap_or(0);
        remainder = remainder * 10 + u128::from(digit);
        digits.push((remainder / divisor) as u8);
        remainder %= divisor;
    }
    let quotient = ExactDecimal::normalized(a.negative != b.negative, digits, a.exponent - last_b);
    if remainder == 0 && quotient.digits.len() <= 34 {
        Some(decimal_with_ideal_exponent(&quotient, ideal))
    } else {
        Some(decimal_from_exact(&quotient))
    }
}
