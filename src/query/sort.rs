//! Sort specifications and MongoDB's document order for `sort`: per key, an ascending sort
//! uses the smallest value found at the path (array elements included), a descending sort the
//! largest; a missing field sorts as null and an empty array below null. Stable.
//!
//! Not for: the comparison of two single values (`value/compare.rs`) or pushing ORDER BY into SQL.

use super::error::QueryError;
use crate::query::value::compare::compare_values;
use crate::query::value::number::Number;
use crate::query::value::path::candidates;
use bson::{Bson, Document};
use std::cmp::Ordering;

/// Direction of one sort key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortDirection {
    /// 1
    Ascending,
    /// -1
    Descending,
}

/// A parsed sort specification such as `{a: 1, "b.c": -1}`.
#[derive(Clone, Debug, PartialEq)]
pub struct SortSpec {
    /// Keys in priority order.
    pub keys: Vec<(String, SortDirection)>,
    /// `{$natural: ±1}`: storage order was asked for (forward or reverse).
    pub natural: Option<SortDirection>,
}

impl SortSpec {
    /// Parses a sort document; values must be 1 or -1 (any numeric type).
    pub fn parse(spec: &Document) -> Result<SortSpec, QueryError> {
        let mut keys = Vec::with_capacity(spec.len());
        let mut natural = None;
        for (field, value) in spec {
            if field.is_empty() {
                return Err(QueryError::location(
                    15981,
                    "FieldPath cannot be constructed with empty string",
                ));
            }
            let direction = match value {
                Bson::Document(meta)
                    if meta.len() == 1
                        && matches!(meta.get("$meta"), Some(Bson::String(k)) if k == "textScore") =>
                {
                    // Highest score first; the read leaves each document's score on it.
                    keys.push((
                        crate::query::text::TEXT_SCORE_FIELD.to_string(),
                        SortDirection::Descending,
                    ));
                    continue;
                }
                Bson::Document(meta) if meta.contains_key("$meta") => {
                    return Err(QueryError::not_supported(format!(
                        "sorting by {{$meta: {}}} is not supported by docgate",
                        meta.get("$meta").map(|m| m.to_string()).unwrap_or_default()
                    )))
                }
                other => parse_direction(other)?,
            };
            if field == "$natural" {
                natural = Some(direction);
            } else {
                keys.push((field.clone(), direction));
            }
        }
        Ok(SortSpec { keys, natural })
    }

    /// Whether a key is `{$meta: "textScore"}`.
    pub fn uses_text_score(&self) -> bool {
        self.keys
            .iter()
            .any(|(path, _)| path == crate::query::text::TEXT_SCORE_FIELD)
    }

    /// Whether there is nothing to sort by.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Compares two documents by the keys in order.
    pub fn compare(&self, a: &Document, b: &Document) -> Ordering {
        for (path, direction) in &self.keys {
            let order = compare_values(
                &sort_key(a, path, *direction),
                &sort_key(b, path, *direction),
            );
            let order = match direction {
                SortDirection::Ascending => order,
                SortDirection::Descending => order.reverse(),
            };
            if order != Ordering::Equal {
                return order;
            }
        }
        Ordering::Equal
    }

    /// Sorts in place, stably (sort keys computed once per document).
    pub fn sort(&self, docs: &mut Vec<Document>) {
        if self.keys.is_empty() {
            return;
        }
        let keyed = std::mem::take(docs)
            .into_iter()
            .map(|doc| (self.keys_of(&doc), doc))
            .collect();
        *docs = self.order_by_keys(keyed);
    }

    /// This sort with ties broken by `_id` (in the first key's direction, as an index walk
    /// breaks them), so equal keys come back in one deterministic order whatever the
    /// storage order; unchanged when `_id` is already a key or there are no keys.
    pub fn with_id_tie_break(mut self) -> SortSpec {
        let Some(&(_, direction)) = self.keys.first() else {
            return self;
        };
        if !self.keys.iter().any(|(path, _)| path == "_id") {
            self.keys.push(("_id".to_string(), direction));
        }
        self
    }

    /// The sort key of `doc` (one value per spec key, from [`sort_key`]).
    pub fn keys_of(&self, doc: &Document) -> Vec<Bson> {
        self.keys
            .iter()
            .map(|(path, direction)| sort_key(doc, path, *direction))
            .collect()
    }

    /// The top-level fields the sort paths start with: a document holding just these has
    /// the same sort key as the whole document.
    pub fn top_level_fields(&self) -> impl Iterator<Item = &str> {
        self.keys
            .iter()
            .map(|(path, _)| path.split('.').next().unwrap_or(path))
    }

    /// The items of `keyed` ordered stably by their precomputed sort keys.
    pub fn order_by_keys<T>(&self, mut keyed: Vec<(Vec<Bson>, T)>) -> Vec<T> {
        keyed.sort_by(|(a, _), (b, _)| self.compare_keys(a, b));
        keyed.into_iter().map(|(_, item)| item).collect()
    }

    /// Compares precomputed sort keys (one per spec key, from [`sort_key`]).
    pub fn compare_keys(&self, a: &[Bson], b: &[Bson]) -> Ordering {
        for (((_, direction), x), y) in self.keys.iter().zip(a).zip(b) {
            let order = compare_values(x, y);
            let order = match direction {
                SortDirection::Ascending => order,
                SortDirection::Descending => order.reverse(),
            };
            if order != Ordering::Equal {
                return order;
            }
        }
        Ordering::Equal
    }
}

fn parse_direction(value: &Bson) -> Result<SortDirection, QueryError> {
    let direction = Number::from_bson(value).and_then(|n| {
        let f = n.to_f64();
        if f == 1.0 {
            Some(SortDirection::Ascending)
        } else if f == -1.0 {
            Some(SortDirection::Descending)
        } else {
            None
        }
    });
    direction.ok_or_else(|| {
        QueryError::location(
            15975,
            "$sort key ordering must be 1 (for ascending) or -1 (for descending)",
        )
    })
}

/// The value a document sorts by for one key: the minimum (ascending) or maximum
/// (descending) of the values at `path`, arrays expanded; missing is null, an empty array
/// is undefined (below null).
pub fn sort_key(doc: &Document, path: &str, direction: SortDirection) -> Bson {
    let mut best: Option<Bson> = None;
    let mut consider = |v: Bson| {
        let better = match &best {
            None => true,
            Some(current) => {
                let order = compare_values(&v, current);
                match direction {
                    SortDirection::Ascending => order == Ordering::Less,
                    SortDirection::Descending => order == Ordering::Greater,
                }
            }
        };
        if better {
            best = Some(v);
        }
    };
    for candidate in candidates(doc, path) {
        match candidate.value {
            None => consider(Bson::Null),
            Some(Bson::Array(items)) if !candidate.from_leaf_array => {
                if items.is_empty() {
                    consider(Bson::Undefined);
                }
            }
            Some(v) => consider(v.clone()),
        }
    }
    best.unwrap_or(Bson::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn ids(docs: &[Document]) -> Vec<i32> {
        docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
    }

    #[test]
    fn arrays_use_min_ascending_and_max_descending() {
        let mut docs = vec![
            doc! {"_id": 1, "a": 1},
            doc! {"_id": 2, "a": [0, 1]},
            doc! {"_id": 3},
            doc! {"_id": 4, "a": []},
            doc! {"_id": 5, "a": [1]},
            doc! {"_id": 6, "a": [5, -1]},
        ];
        let asc = SortSpec::parse(&doc! {"a": 1}).unwrap();
        asc.sort(&mut docs);
        assert_eq!(ids(&docs), vec![4, 3, 6, 2, 1, 5]);
        let desc = SortSpec::parse(&doc! {"a": -1}).unwrap();
        desc.sort(&mut docs);
        assert_eq!(ids(&docs), vec![6, 2, 1, 5, 3, 4]);
    }

    #[test]
    fn multiple_keys_nested_paths_and_types() {
        let mut docs = vec![
            doc! {"_id": 1, "a": {"b": "x"}, "c": 2},
            doc! {"_id": 2, "a": {"b": 5}, "c": 1},
            doc! {"_id": 3, "a": [{"b": 7}, {"b": 4}], "c": 1},
            doc! {"_id": 4, "a": {"b": 5}, "c": 3},
        ];
        SortSpec::parse(&doc! {"a.b": 1, "c": -1})
            .unwrap()
            .sort(&mut docs);
        assert_eq!(ids(&docs), vec![3, 4, 2, 1]);
    }

    #[test]
    fn parse_rules() {
        assert_eq!(SortSpec::parse(&doc! {"a": 2}).unwrap_err().code, 15975);
        let s = SortSpec::parse(&doc! {"$natural": -1}).unwrap();
        assert_eq!(s.natural, Some(SortDirection::Descending));
        assert!(s.is_empty());
        assert!(SortSpec::parse(&doc! {"a": 1.0, "b": -1i64}).is_ok());
    }

    /// Cases from MongoDB's jstests/core array sort test.
    #[test]
    fn mongodb_array_sort_cases() {
        let mut docs = vec![
            doc! {"_id": 0, "a": [3, 0, 1]},
            doc! {"_id": 1, "a": [8, 4, -1]},
        ];
        SortSpec::parse(&doc! {"a": 1}).unwrap().sort(&mut docs);
        assert_eq!(ids(&docs), vec![1, 0]);
        let mut docs = vec![
            doc! {"_id": 0, "a": [3, 0, 1]},
            doc! {"_id": 1, "a": [0, 4, -1]},
        ];
        SortSpec::parse(&doc! {"a": -1}).unwrap().sort(&mut docs);
        assert_eq!(ids(&docs), vec![1, 0]);
        let mut docs = vec![
            doc! {"_id": 1, "x": [{"y": 1, "z": 7}, {"y": 0, "z": [8, 6]}]},
            doc! {"_id": 0, "x": [{"y": [4, 0, 1], "z": 7}, {"y": 0, "z": 9}]},
        ];
        SortSpec::parse(&doc! {"x.y": 1, "x.z": -1})
            .unwrap()
            .sort(&mut docs);
        assert_eq!(ids(&docs), vec![0, 1]);
        SortSpec::parse(&doc! {"x.y": -1, "x.z": 1})
            .unwrap()
            .sort(&mut docs);
        assert_eq!(ids(&docs), vec![0, 1]);
        let mut docs = vec![
            doc! {"_id": 0, "d": [{"e": {"f": 1, "g": [6, 5, 4]}}, {"e": {"g": [3, 2, 1]}}]},
            doc! {"_id": 1, "d": [{"e": {"f": 2, "g": [5, 4, 3]}}, {"e": {"g": [2, 1, 0]}}]},
        ];
        SortSpec::parse(&doc! {"d.e.g": 1}).unwrap().sort(&mut docs);
        assert_eq!(ids(&docs), vec![1, 0]);
        let mut docs = vec![
            doc! {"_id": 0, "a": [{"x": 2}, {"x": 3}]},
            doc! {"_id": 1, "a": [{"x": 1}, {"x": 4}]},
            doc! {"_id": 2, "a": [{"x": 3}, {"x": 4}]},
        ];
        SortSpec::parse(&doc! {"a.x": 1}).unwrap().sort(&mut docs);
        assert_eq!(ids(&docs), vec![1, 0, 2]);
    }
}
