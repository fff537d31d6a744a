//! Order- and equality-preserving byte keys for BSON values: `encode_key(a) < encode_key(b)`
//! bytewise exactly when `compare_values(a, b)` is `Less`, and the keys are equal exactly when
//! the values compare equal (so 1, NumberLong(1), 1.0 and Decimal128("1.0") share one key).
//! Used as the stored `_id` key and for secondary index keys.
//!
//! Not for: storing documents (keys are lossy: they keep order, not types) or decoding back.
//!
//! Layout: a type-rank byte, then a self-delimiting body. Numbers: the value rounded to the
//! nearest double as 8 order-preserving bytes (NaN lowest), then the exact remainder
//! `value - rounded` as a signed decimal (one byte when zero). Strings and field names: bytes
//! with 0x00 escaped as 0x00 0xFF, ended by 0x00 0x00. Documents: per field the value's rank,
//! the name, the value body; arrays: per element rank and body; both end with 0x00.

use crate::query::value::compare::type_rank;
use crate::query::value::number::{decimal_to_f64, DecimalValue, ExactDecimal};
use bson::{Bson, Document};

/// The byte key of a value (see the module documentation for the layout).
pub fn encode_key(v: &Bson) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    out.push(type_rank(v));
    encode_body(v, &mut out);
    out
}

fn encode_body(v: &Bson, out: &mut Vec<u8>) {
    match v {
        Bson::MinKey | Bson::MaxKey | Bson::Null | Bson::Undefined => {}
        Bson::Int32(i) => encode_integer(i64::from(*i), out),
        Bson::Int64(i) => encode_integer(*i, out),
        Bson::Double(d) => {
            encode_double(*d, out);
            out.push(REMAINDER_ZERO);
        }
        Bson::Decimal128(d) => encode_decimal(d, out),
        Bson::String(s) | Bson::Symbol(s) | Bson::JavaScriptCode(s) => {
            encode_string(s.as_bytes(), out)
        }
        Bson::Document(d) => encode_document(d, out),
        Bson::Array(items) => {
            for item in items {
                out.push(type_rank(item));
                encode_body(item, out);
            }
            out.push(0);
        }
        Bson::Binary(b) => {
            out.extend_from_slice(&(b.bytes.len() as u64).to_be_bytes());
            out.push(u8::from(b.subtype));
            out.extend_from_slice(&b.bytes);
        }
        Bson::ObjectId(oid) => out.extend_from_slice(&oid.bytes()),
        Bson::Boolean(b) => out.push(u8::from(*b)),
        Bson::DateTime(dt) => {
            let flipped = (dt.timestamp_millis() as u64) ^ (1u64 << 63);
            out.extend_from_slice(&flipped.to_be_bytes());
        }
        Bson::Timestamp(ts) => {
            out.extend_from_slice(&ts.time.to_be_bytes());
            out.extend_from_slice(&ts.increment.to_be_bytes());
        }
        Bson::RegularExpression(re) => {
            encode_string(re.pattern.as_str().as_bytes(), out);
            encode_string(re.options.as_str().as_bytes(), out);
        }
        Bson::DbPointer(p) => encode_string(format!("{p:?}").as_bytes(), out),
        Bson::JavaScriptCodeWithScope(c) => {
            encode_string(c.code.as_bytes(), out);
            encode_document(&c.scope, out);
        }
    }
}

#[cfg(test)]
/// The keys a (multikey) index on `path` holds for `doc`, sorted and without duplicates:
/// one per value at the path with arrays expanded (through arrays of documents too), null
/// when the path is missing, undefined for an empty array — the values a query on the path
/// can match, so an index lookup by [`encode_key`] of an equality operand finds the document.
pub fn index_keys(doc: &Document, path: &str) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for candidate in crate::query::value::path::candidates(doc, path) {
        match candidate.value {
            None => keys.push(encode_key(&Bson::Null)),
            Some(Bson::Array(items)) if !candidate.from_leaf_array => {
                if items.is_empty() {
                    keys.push(encode_key(&Bson::Undefined));
                }
            }
            Some(v) => keys.push(encode_key(v)),
        }
    }
    if keys.is_empty() {
        keys.push(encode_key(&Bson::Null));
    }
    keys.sort();
    keys.dedup();
    keys
}

fn encode_document(d: &Document, out: &mut Vec<u8>) {
    for (name, value) in d {
        out.push(type_rank(value));
        encode_string(name.as_bytes(), out);
        encode_body(value, out);
    }
    out.push(0);
}

fn encode_string(bytes: &[u8], out: &mut Vec<u8>) {
    for b in bytes {
        out.push(*b);
        if *b == 0 {
            out.push(0xff);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

const REMAINDER_NEGATIVE: u8 = 1;
const REMAINDER_ZERO: u8 = 2;
const REMAINDER_POSITIVE: u8 = 3;

/// 8 bytes whose unsigned order is the numeric order of doubles; NaN first, -0 == 0.
fn encode_double(d: f64, out: &mut Vec<u8>) {
    let bits = if d.is_nan() {
        0
    } else {
        let d = if d == 0.0 { 0.0 } else { d };
        let raw = d.to_bits();
        if raw >> 63 == 1 {
            !raw
        } else {
            raw | (1u64 << 63)
        }
    };
    out.extend_from_slice(&bits.to_be_bytes());
}

fn encode_integer(i: i64, out: &mut Vec<u8>) {
    let rounded = i as f64;
    encode_double(rounded, out);
    // |i| < 2^63 and `rounded` is integral here whenever it differs from i.
    let remainder = i128::from(i) - rounded as i128;
    match remainder {
        0 => out.push(REMAINDER_ZERO),
        r => {
            let magnitude = r.unsigned_abs();
            let exact = ExactDecimal::from_parts(r < 0, magnitude, 0);
            encode_remainder(&exact, out);
        }
    }
}

fn encode_decimal(d: &bson::Decimal128, out: &mut Vec<u8>) {
    match DecimalValue::decode(d) {
        DecimalValue::NaN => {
            encode_double(f64::NAN, out);
            out.push(REMAINDER_ZERO);
        }
        DecimalValue::Infinity(negative) => {
            encode_double(
                if negative {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                },
                out,
            );
            out.push(REMAINDER_ZERO);
        }
        DecimalValue::Finite(exact) => {
            let mut rounded = decimal_to_f64(d);
            if rounded.is_infinite() {
                // Finite values beyond the double range share the ±MAX bucket.
                rounded = if rounded > 0.0 { f64::MAX } else { f64::MIN };
            }
            encode_double(rounded, out);
            let remainder = exact.subtract(&ExactDecimal::from_f64(rounded));
            encode_remainder(&remainder, out);
        }
    }
}

/// Signed exact decimal, order-preserving: sign class, then exponent and digits (inverted for
/// negative values so that larger magnitudes sort lower).
fn encode_remainder(x: &ExactDecimal, out: &mut Vec<u8>) {
    if x.is_zero() {
        out.push(REMAINDER_ZERO);
        return;
    }
    let biased = (x.exponent as i64 + (1i64 << 31)) as u32;
    if x.negative {
        out.push(REMAINDER_NEGATIVE);
        out.extend_from_slice(&(!biased).to_be_bytes());
        out.extend(x.digits.iter().map(|d| 10 - d));
        out.push(0xff);
    } else {
        out.push(REMAINDER_POSITIVE);
        out.extend_from_slice(&biased.to_be_bytes());
        out.extend(x.digits.iter().map(|d| d + 1));
        out.push(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::value::compare::compare_values;
    use crate::query::value::test_values::Generator;
    use bson::Decimal128;

    fn dec(s: &str) -> Bson {
        Bson::Decimal128(s.parse::<Decimal128>().unwrap())
    }

    #[test]
    fn equal_numbers_share_a_key() {
        let one = encode_key(&Bson::Int32(1));
        for v in [
            Bson::Int64(1),
            Bson::Double(1.0),
            dec("1"),
            dec("1.0"),
            dec("0.0001E4"),
        ] {
            assert_eq!(encode_key(&v), one, "{v:?}");
        }
        assert_eq!(encode_key(&Bson::Double(-0.0)), encode_key(&Bson::Int32(0)));
        assert_eq!(encode_key(&dec("-0")), encode_key(&Bson::Int32(0)));
        assert_eq!(encode_key(&Bson::Double(f64::NAN)), encode_key(&dec("NaN")));
        assert_eq!(
            encode_key(&Bson::Int64(9_007_199_254_740_993)),
            encode_key(&dec("9007199254740993"))
        );
        assert_eq!(encode_key(&Bson::Double(0.5)), encode_key(&dec("0.5")));
    }

    #[test]
    fn numeric_edge_cases_share_a_key_exactly_when_equal() {
        // One class per line: every value equals the others of its line and no other line.
        let classes: Vec<Vec<Bson>> = vec![
            vec![
                Bson::Int32(0),
                Bson::Int64(0),
                Bson::Double(0.0),
                Bson::Double(-0.0),
                dec("0"),
                dec("-0"),
                dec("0E-20"),
                dec("-0.000"),
            ],
            vec![
                Bson::Double(f64::NAN),
                Bson::Double(-f64::NAN),
                Bson::Double(f64::from_bits(0x7ff0_0000_0000_0001)),
                dec("NaN"),
                dec("-NaN"),
            ],
            vec![
                Bson::Int32(1),
                Bson::Int64(1),
                Bson::Double(1.0),
                dec("1"),
                dec("1.000"),
                dec("100E-2"),
            ],
            vec![
                Bson::Int32(-1),
                Bson::Int64(-1),
                Bson::Double(-1.0),
                dec("-1.0"),
            ],
            vec![Bson::Double(f64::INFINITY), dec("Infinity")],
            vec![Bson::Double(f64::NEG_INFINITY), dec("-Infinity")],
            vec![Bson::Double(f64::MIN_POSITIVE)],
            vec![Bson::Double(0.1)],
            vec![dec("0.1")],
            vec![Bson::Int64(9_007_199_254_740_993), dec("9007199254740993")],
            vec![
                Bson::Int64(9_007_199_254_740_992),
                Bson::Double(9_007_199_254_740_992.0),
            ],
            vec![Bson::Int64(i64::MAX)],
            vec![
                Bson::Double(9_223_372_036_854_775_808.0),
                dec("9223372036854775808"),
            ],
        ];
        for (i, class) in classes.iter().enumerate() {
            for (j, other) in classes.iter().enumerate() {
                for a in class {
                    for b in other {
                        let same_key = encode_key(a) == encode_key(b);
                        assert_eq!(same_key, i == j, "{a:?} vs {b:?}");
                        assert_eq!(same_key, compare_values(a, b).is_eq(), "{a:?} vs {b:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn big_integers_order_past_double_precision() {
        let a = encode_key(&Bson::Double(9_007_199_254_740_992.0));
        let b = encode_key(&Bson::Int64(9_007_199_254_740_993));
        let c = encode_key(&Bson::Int64(9_007_199_254_740_994));
        assert!(a < b && b < c);
        assert!(encode_key(&Bson::Int64(i64::MAX)) < encode_key(&Bson::Double(1e19)));
        assert!(encode_key(&dec("0.1")) < encode_key(&Bson::Double(0.1)));
        assert!(encode_key(&dec("1E+400")) < encode_key(&Bson::Double(f64::INFINITY)));
        assert!(encode_key(&dec("-1E+400")) > encode_key(&Bson::Double(f64::NEG_INFINITY)));
    }

    #[test]
    fn multikey_index_keys() {
        let d = bson::doc! {"a": [{"b": 1}, {"b": [2, 1.0]}, {"c": 3}], "e": []};
        let keys = index_keys(&d, "a.b");
        assert_eq!(
            keys,
            vec![
                encode_key(&Bson::Null),
                encode_key(&Bson::Int32(1)),
                encode_key(&Bson::Int32(2))
            ]
        );
        assert_eq!(index_keys(&d, "e"), vec![encode_key(&Bson::Undefined)]);
        assert_eq!(index_keys(&d, "zz"), vec![encode_key(&Bson::Null)]);
    }

    #[test]
    fn strings_prefixes_sort_first() {
        let a = encode_key(&Bson::String("a".into()));
        let a0 = encode_key(&Bson::String("a\0".into()));
        let a1 = encode_key(&Bson::String("a\u{1}".into()));
        let ab = encode_key(&Bson::String("ab".into()));
        assert!(a < a0 && a0 < a1 && a1 < ab);
        assert_eq!(
            encode_key(&Bson::Symbol("x".into())),
            encode_key(&Bson::String("x".into()))
        );
    }

    #[test]
    fn key_order_matches_compare_values() {
        let mut generator = Generator::new(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let a = generator.value(3);
            let b = if generator.below(8) == 0 {
                a.clone()
            } else {
                generator.value(3)
            };
            let expected = compare_values(&a, &b);
            let actual = encode_key(&a).cmp(&encode_key(&b));
            assert_eq!(expected, actual, "{a:?} vs {b:?}");
        }
    }
}
