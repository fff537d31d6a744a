//! Test support: a deterministic generator of mixed BSON values, filters and updates for
//! property and robustness tests (no test-only dependency needed).
//!
//! Not for: production code (compiled only for tests).

use bson::{doc, spec::BinarySubtype, Binary, Bson, Decimal128};

fn dec(s: &str) -> Bson {
    Bson::Decimal128(
        s.parse::<Decimal128>()
            .unwrap_or(Decimal128::from_bytes([0; 16])),
    )
}

/// Deterministic xorshift generator: a property test without a test-only dependency
/// (the failing pair is printed, and the seed makes every run reproducible).
pub struct Generator(u64);

impl Generator {
    /// A generator with a fixed seed (non-zero).
    pub fn new(seed: u64) -> Self {
        Generator(seed.max(1))
    }

    /// The next raw 64-bit value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// One of `items`.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }

    /// A random non-container value of a mixed type.
    pub fn leaf(&mut self) -> Bson {
        match self.below(16) {
            0 => [Bson::Null, Bson::MinKey, Bson::MaxKey, Bson::Undefined][self.below(4) as usize]
                .clone(),
            1 => Bson::Boolean(self.below(2) == 1),
            2 => Bson::Int32(self.below(7) as i32 - 3),
            3 => Bson::Int32(self.next_u64() as i32),
            4 => Bson::Int64(self.next_u64() as i64),
            5 => Bson::Int64((1i64 << 53) + self.below(9) as i64 - 4),
            6 => Bson::Double(((1i64 << 53) + self.below(9) as i64 - 4) as f64),
            7 => Bson::Double(
                [
                    f64::NAN,
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    -0.0,
                    0.1,
                    9.2e18,
                    0.5,
                ][self.below(7) as usize],
            ),
            8 => Bson::Double(f64::from_bits(self.next_u64())),
            9 => Bson::Double((self.below(81) as f64 - 40.0) / 4.0),
            10 => dec(self.pick(&[
                "0.1",
                "1.0",
                "-2.50",
                "NaN",
                "-Infinity",
                "Infinity",
                "9007199254740993",
                "1E+400",
                "-1E-400",
                "0.5",
                "3",
                "-0",
                "-0.25",
                "10",
            ])),
            11 => dec(&format!(
                "{}E{}",
                self.below(199) as i64 - 99,
                self.below(7) as i64 - 3
            )),
            12 => Bson::String(
                (0..self.below(4))
                    .map(|_| ['a', 'b', 'c', '\0'][self.below(4) as usize])
                    .collect(),
            ),
            13 => Bson::Binary(Binary {
                subtype: BinarySubtype::Generic,
                bytes: (0..self.below(3)).map(|_| self.below(3) as u8).collect(),
            }),
            14 => Bson::DateTime(bson::DateTime::from_millis(self.below(5) as i64 - 2)),
            _ => Bson::Symbol(self.pick(&["a", "b", ""]).to_string()),
        }
    }

    /// A random value, documents and arrays nested up to `depth`.
    pub fn value(&mut self, depth: u32) -> Bson {
        if depth == 0 || self.below(4) != 0 {
            return self.leaf();
        }
        if self.below(2) == 0 {
            Bson::Array((0..self.below(3)).map(|_| self.value(depth - 1)).collect())
        } else {
            let mut d = doc! {};
            for _ in 0..self.below(3) {
                let key = self.pick(&["", "a", "b", "ab"]).to_string();
                let v = self.value(depth - 1);
                d.insert(key, v);
            }
            Bson::Document(d)
        }
    }

    /// A random path of up to three components, some numeric.
    pub fn path(&mut self) -> String {
        let parts = 1 + self.below(3);
        (0..parts)
            .map(|_| self.pick(&["a", "b", "c", "0", "1", "_id"]).to_string())
            .collect::<Vec<_>>()
            .join(".")
    }

    /// A random operator document for one field (valid or not).
    pub fn field_operators(&mut self, depth: u32) -> Bson {
        let mut d = doc! {};
        for _ in 0..1 + self.below(2) {
            let op = self.pick(&[
                "$eq",
                "$ne",
                "$gt",
                "$gte",
                "$lt",
                "$lte",
                "$in",
                "$nin",
                "$exists",
                "$type",
                "$regex",
                "$size",
                "$all",
                "$elemMatch",
                "$mod",
                "$not",
                "$bitsAllSet",
                "$bitsAnyClear",
                "$options",
                "$foo",
            ]);
            let arg = match op {
                "$in" | "$nin" | "$all" => {
                    Bson::Array((0..self.below(3)).map(|_| self.value(1)).collect())
                }
                "$elemMatch" | "$not" if depth > 0 => {
                    if self.below(2) == 0 {
                        self.field_operators(depth - 1)
                    } else {
                        Bson::Document(self.filter(depth - 1))
                    }
                }
                "$regex" => Bson::String(self.pick(&["^a", "b+", "(", "a|b", ""]).to_string()),
                "$mod" => Bson::Array(vec![self.leaf(), self.leaf()]),
                "$type" => Bson::String(
                    self.pick(&["number", "string", "array", "bogus"])
                        .to_string(),
                ),
                _ => self.value(1),
            };
            d.insert(op, arg);
        }
        Bson::Document(d)
    }

    /// A random filter document (valid or not).
    pub fn filter(&mut self, depth: u32) -> bson::Document {
        let mut d = doc! {};
        for _ in 0..self.below(3) {
            match self.below(6) {
                0 if depth > 0 => {
                    let op = self.pick(&["$and", "$or", "$nor"]);
                    let clauses = (0..self.below(3))
                        .map(|_| Bson::Document(self.filter(depth - 1)))
                        .collect();
                    d.insert(op, Bson::Array(clauses));
                }
                1 => {
                    let a = format!("${}", self.pick(&["a", "b"]));
                    let op = self.pick(&["$gt", "$eq", "$divide", "$add", "$size"]);
                    d.insert("$expr", doc! {op: [a, self.leaf()]});
                }
                2 | 3 => {
                    let p = self.path();
                    let v = self.field_operators(depth);
                    d.insert(p, v);
                }
                _ => {
                    let p = self.path();
                    let v = self.value(2);
                    d.insert(p, v);
                }
            }
        }
        d
    }

    /// A random update document (operators or replacement, valid or not).
    pub fn update(&mut self) -> bson::Document {
        let mut d = doc! {};
        for _ in 0..1 + self.below(3) {
            let op = self.pick(&[
                "$set",
                "$unset",
                "$inc",
                "$mul",
                "$min",
                "$max",
                "$rename",
                "$push",
                "$addToSet",
                "$pop",
                "$pull",
                "$pullAll",
                "$bit",
                "$setOnInsert",
                "$currentDate",
                "x",
            ]);
            let mut fields = doc! {};
            for _ in 0..1 + self.below(2) {
                let mut p = self.path();
                if self.below(6) == 0 {
                    p.push_str(self.pick(&[".$[]", ".$", ".99"]));
                }
                let v = match op {
                    "$rename" => Bson::String(self.path()),
                    "$push" | "$addToSet" if self.below(2) == 0 => Bson::Document(doc! {
                        "$each": Bson::Array((0..self.below(3)).map(|_| self.leaf()).collect()),
                        "$slice": self.leaf(),
                    }),
                    "$bit" => {
                        Bson::Document(doc! {self.pick(&["and", "or", "xor", "nand"]): self.leaf()})
                    }
                    _ => self.value(1),
                };
                fields.insert(p, v);
            }
            d.insert(op, fields);
        }
        d
    }

    /// A random projection document (valid or not).
    pub fn projection(&mut self) -> bson::Document {
        let mut d = doc! {};
        for _ in 0..self.below(3) {
            let p = self.path();
            let v = match self.below(5) {
                0 => Bson::Int32(self.below(2) as i32),
                1 => Bson::Boolean(self.below(2) == 0),
                2 => Bson::String(format!("${}", self.path())),
                3 => Bson::Document(doc! {"$slice": self.leaf()}),
                _ => self.value(1),
            };
            d.insert(p, v);
        }
        d
    }
}
