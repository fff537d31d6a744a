//! Sets of BSON values under MongoDB equality (1, 1.0, NumberLong(1) and Decimal128("1") are
//! one member), hashed on [`encode_key`] so that membership costs one key encoding instead of
//! a scan: the set operators, `$addToSet` (accumulator and update operator), `$lookup`'s
//! equality match and `$bucket`'s groups use it to stay linear in their input.
//!
//! Under an installed collation (`value/collation.rs`) strings are keyed by their collation
//! image, so strings equal under it are one member.
//!
//! Not for: ordering values (`value/compare.rs`) or storing them: the set holds only the keys
//! (bytes, about the size of the value's BSON), the caller keeps the values themselves,
//! usually in first-occurrence order beside the set.

use crate::query::value::collation::equality_image;
use crate::query::value::keys::encode_key;
use bson::Bson;
use std::collections::HashSet;

/// The keys of the values seen so far.
#[derive(Clone, Debug, Default)]
pub struct ValueSet {
    keys: HashSet<Box<[u8]>>,
}

impl ValueSet {
    /// An empty set.
    pub fn new() -> Self {
        ValueSet::default()
    }

    /// Adds `value`; true when no equal value was in the set before.
    pub fn insert(&mut self, value: &Bson) -> bool {
        self.keys
            .insert(encode_key(&equality_image(value)).into_boxed_slice())
    }

    /// Whether a value equal to `value` is in the set.
    pub fn contains(&self, value: &Bson) -> bool {
        self.keys
            .contains(encode_key(&equality_image(value)).as_slice())
    }

    /// How many distinct values the set holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.keys.len()
    }
}

/// The values without repeats (by MongoDB equality), each kept where it first occurs, with
/// the set of their keys. Each value is an interruption point (see `crate::interrupt`).
pub fn dedup(
    items: impl IntoIterator<Item = Bson>,
) -> Result<(Vec<Bson>, ValueSet), crate::interrupt::Interruption> {
    let mut set = ValueSet::new();
    let mut out = Vec::new();
    for item in items {
        crate::interrupt::check()?;
        if set.insert(&item) {
            out.push(item);
        }
    }
    Ok((out, set))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::value::compare::{identical, values_equal};
    use crate::query::value::test_values::Generator;

    #[test]
    fn equal_numbers_are_one_member() {
        let dec = |s: &str| Bson::Decimal128(s.parse().unwrap());
        let (kept, set) = dedup([
            Bson::Int32(1),
            Bson::Double(1.0),
            Bson::Int64(1),
            dec("1.00"),
            Bson::Int32(2),
            Bson::Double(0.0),
            Bson::Double(-0.0),
            dec("-0E+3"),
            Bson::Double(f64::NAN),
            dec("NaN"),
            Bson::Double(-f64::NAN),
        ])
        .unwrap();
        let expected = [
            Bson::Int32(1),
            Bson::Int32(2),
            Bson::Double(0.0),
            Bson::Double(f64::NAN),
        ];
        // `identical` rather than `==`: NaN is not `==` to itself.
        assert!(
            identical(&Bson::Array(kept.clone()), &Bson::Array(expected.to_vec())),
            "{kept:?}"
        );
        assert_eq!(set.len(), 4);
        assert!(set.contains(&dec("2")) && set.contains(&Bson::Int64(0)));
        assert!(!set.contains(&Bson::String("1".into())));
    }

    #[test]
    fn membership_agrees_with_values_equal() {
        let mut generator = Generator::new(0x2545_f491_4f6c_dd1d);
        for _ in 0..5_000 {
            let a = generator.value(3);
            let b = generator.value(3);
            let mut set = ValueSet::new();
            set.insert(&a);
            assert_eq!(set.contains(&b), values_equal(&a, &b), "{a:?} vs {b:?}");
        }
    }
}
