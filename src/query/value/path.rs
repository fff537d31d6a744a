//! Dotted field paths ("a.b.0.c") over documents: plain lookup, and the candidate values a
//! query predicate sees when MongoDB implicitly traverses arrays.
//!
//! Not for: writing through paths (update operators do that in `update/path.rs`) or deciding
//! what a candidate means to an operator (`filter/mod.rs`).

use bson::{Bson, Document};

/// Splits a dotted path into its components.
pub fn components(path: &str) -> Vec<&str> {
    path.split('.').collect()
}

/// A component that can index an array: ASCII digits without a sign.
pub fn array_index(component: &str) -> Option<usize> {
    if component.is_empty() || !component.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    component.parse().ok()
}

/// Plain lookup: descends documents by field name and arrays only by numeric components.
pub fn get_path<'a>(doc: &'a Document, path: &str) -> Option<&'a Bson> {
    let mut parts = path.split('.');
    let first = parts.next()?;
    let mut current = doc.get(first)?;
    for part in parts {
        current = step(current, part)?;
    }
    Some(current)
}

fn step<'a>(value: &'a Bson, component: &str) -> Option<&'a Bson> {
    match value {
        Bson::Document(d) => d.get(component),
        Bson::Array(items) => items.get(array_index(component)?),
        _ => None,
    }
}

/// One value a predicate is evaluated against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate<'a> {
    /// The value, or `None` where the path is missing.
    pub value: Option<&'a Bson>,
    /// True when this is an element of an array found at the end of the path (the array
    /// itself is a separate candidate); array-only operators ($size, $all, $elemMatch) skip
    /// such elements.
    pub from_leaf_array: bool,
}

/// Collects the candidates MongoDB's matcher considers for `path` in `doc`:
/// arrays met mid-path are traversed (each document element continues the path, a numeric
/// component also indexes the array), and an array at the end of the path yields itself and
/// each of its elements. Where the path dead-ends a `None` candidate is recorded.
pub fn candidates<'a>(doc: &'a Document, path: &str) -> Vec<Candidate<'a>> {
    let parts = components(path);
    let mut out = Vec::new();
    match parts.split_first() {
        Some((first, rest)) => match doc.get(*first) {
            Some(v) => collect(v, rest, &mut out),
            None => out.push(missing()),
        },
        None => out.push(missing()),
    }
    out
}

/// Candidates for a path inside an arbitrary value (used by `$elemMatch` on elements).
pub fn candidates_in_value<'a>(value: &'a Bson, path: &str) -> Vec<Candidate<'a>> {
    let mut out = Vec::new();
    match value {
        Bson::Document(d) => return candidates(d, path),
        _ => out.push(missing()),
    }
    out
}

fn missing<'a>() -> Candidate<'a> {
    Candidate {
        value: None,
        from_leaf_array: false,
    }
}

fn collect<'a>(value: &'a Bson, rest: &[&str], out: &mut Vec<Candidate<'a>>) {
    let Some((next, tail)) = rest.split_first() else {
        out.push(Candidate {
            value: Some(value),
            from_leaf_array: false,
        });
        if let Bson::Array(items) = value {
            out.extend(items.iter().map(|item| Candidate {
                value: Some(item),
                from_leaf_array: true,
            }));
        }
        return;
    };
    match value {
        Bson::Document(d) => match d.get(*next) {
            Some(v) => collect(v, tail, out),
            None => out.push(missing()),
        },
        Bson::Array(items) => {
            // Only document elements continue a named path (nested arrays and scalars are
            // skipped, contributing nothing: `{"a.b": null}` does not match `a: [1, 2]`);
            // a numeric component also selects the element at that position.
            let index = array_index(next);
            if let Some(item) = index.and_then(|i| items.get(i)) {
                collect(item, tail, out);
            }
            for item in items {
                if let Bson::Document(d) = item {
                    match d.get(*next) {
                        Some(v) => collect(v, tail, out),
                        None if index.is_none() => out.push(missing()),
                        None => {}
                    }
                }
            }
        }
        _ => out.push(missing()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn values(doc: &Document, path: &str) -> Vec<Option<Bson>> {
        candidates(doc, path)
            .into_iter()
            .map(|c| c.value.cloned())
            .collect()
    }

    #[test]
    fn plain_lookup() {
        let d = doc! {"a": {"b": [10, {"c": 3}]}, "x": {"0": "zero"}};
        assert_eq!(get_path(&d, "a.b.0"), Some(&Bson::Int32(10)));
        assert_eq!(get_path(&d, "a.b.1.c"), Some(&Bson::Int32(3)));
        assert_eq!(get_path(&d, "x.0"), Some(&Bson::String("zero".into())));
        assert_eq!(get_path(&d, "a.b.c"), None);
        assert_eq!(get_path(&d, "a.z"), None);
    }

    #[test]
    fn traverses_arrays_of_documents() {
        let d = doc! {"a": [{"b": 1}, {"b": [2, 3]}, {"c": 1}, 7]};
        assert_eq!(
            values(&d, "a.b"),
            vec![
                Some(1.into()),
                Some(Bson::Array(vec![2.into(), 3.into()])),
                Some(2.into()),
                Some(3.into()),
                None
            ]
        );
    }

    #[test]
    fn numeric_component_indexes_and_names() {
        let d = doc! {"a": [{"0": "field"}, "second"]};
        assert_eq!(values(&d, "a.1"), vec![Some("second".into())]);
        let d = doc! {"a": [1, 2]};
        assert_eq!(values(&d, "a.b"), Vec::<Option<Bson>>::new());
        assert_eq!(values(&d, "a.5"), Vec::<Option<Bson>>::new());
        let d = doc! {"a": {"0": 5}};
        assert_eq!(values(&d, "a.0"), vec![Some(5.into())]);
        let d = doc! {"a": 5};
        assert_eq!(values(&d, "a.b"), vec![None]);
    }
}
