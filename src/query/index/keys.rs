//! Index key extraction for `index/mod.rs`: the values each indexed path yields in a
//! document (as `keys::index_keys` sees them), traced through the arrays they came from so
//! that MongoDB's parallel-array rule can be checked, then combined into compound keys.
//!
//! Not for: parsing specs or choosing indexes.

use super::{
    cannot_create, error, IndexDirection, IndexEntries, QueryError, MAX_KEYS_PER_DOCUMENT,
};
use crate::query::value::keys::encode_key;
use crate::query::value::path::array_index;
use bson::{Bson, Document};
use std::collections::HashMap;

/// The sorted, distinct keys `doc` contributes to an index on `fields` and whether some
/// path went through an array; None when `sparse` and every key is made of missing paths.
/// Keys are the cartesian product of each field's keys (descending components inverted).
pub(super) fn document_keys(
    fields: &[(String, IndexDirection)],
    doc: &Document,
    sparse: bool,
) -> Result<Option<IndexEntries>, QueryError> {
    let mut names = HashMap::new();
    let traced: Vec<Vec<Traced>> = fields
        .iter()
        .map(|(path, _)| trace(doc, path, &mut names))
        .collect();
    check_parallel(&traced, &names)?;
    let multikey = traced.iter().flatten().any(|t| !t.trail.is_empty());
    // (key so far, every component so far came from a missing path)
    let mut keys: Vec<(Vec<u8>, bool)> = vec![(Vec::new(), true)];
    for ((_, direction), field) in fields.iter().zip(&traced) {
        let components = components(field);
        if keys.len().saturating_mul(components.len()) > MAX_KEYS_PER_DOCUMENT {
            return Err(cannot_create(format!(
                "a document would add more than {MAX_KEYS_PER_DOCUMENT} index keys"
            )));
        }
        let mut next = Vec::with_capacity(keys.len() * components.len());
        for (prefix, prefix_missing) in &keys {
            for (bytes, missing) in &components {
                let mut key = prefix.clone();
                match direction {
                    IndexDirection::Ascending => key.extend_from_slice(bytes),
                    IndexDirection::Descending => key.extend(bytes.iter().map(|b| !b)),
                }
                next.push((key, *prefix_missing && *missing));
            }
        }
        keys = next;
    }
    if sparse {
        keys.retain(|(_, missing)| !missing);
    }
    let mut keys: Vec<Vec<u8>> = keys.into_iter().map(|(k, _)| k).collect();
    if keys.is_empty() {
        return Ok(None);
    }
    keys.sort();
    keys.dedup();
    Ok(Some(IndexEntries { keys, multikey }))
}

/// One value an indexed path yields, with the arrays traversed to reach it.
struct Traced {
    key: Vec<u8>,
    /// Null standing for a missing path (sparse indexes skip keys made only of these).
    missing: bool,
    /// (array identity, element index) for every array expanded on the way, outermost first.
    trail: Vec<(usize, usize)>,
}

/// The values at `path` as `keys::index_keys` sees them (see `path::candidates`), traced.
fn trace(doc: &Document, path: &str, names: &mut HashMap<usize, String>) -> Vec<Traced> {
    let mut out = Vec::new();
    let parts: Vec<&str> = path.split('.').collect();
    match parts.split_first() {
        Some((first, rest)) => match doc.get(*first) {
            Some(v) => walk(v, first, rest, &mut Vec::new(), &mut out, names),
            None => out.push(missing(&[])),
        },
        None => out.push(missing(&[])),
    }
    if out.is_empty() {
        out.push(missing(&[]));
    }
    out
}

/// The key of one indexed value: under an installed collation (a collated index) strings
/// are keyed by the hex image of their sort key, which keeps the collator's order.
fn leaf_key(value: &Bson) -> Vec<u8> {
    encode_key(&crate::query::value::collation::equality_image(value))
}

fn missing(trail: &[(usize, usize)]) -> Traced {
    Traced {
        key: encode_key(&Bson::Null),
        missing: true,
        trail: trail.to_vec(),
    }
}

fn walk(
    value: &Bson,
    name: &str,
    rest: &[&str],
    trail: &mut Vec<(usize, usize)>,
    out: &mut Vec<Traced>,
    names: &mut HashMap<usize, String>,
) {
    let Some((next, tail)) = rest.split_first() else {
        let Bson::Array(items) = value else {
            out.push(Traced {
                key: leaf_key(value),
                missing: false,
                trail: trail.clone(),
            });
            return;
        };
        let id = std::ptr::from_ref(items) as usize;
        names.insert(id, name.to_string());
        if items.is_empty() {
            let mut t = trail.clone();
            t.push((id, usize::MAX));
            out.push(Traced {
                key: encode_key(&Bson::Undefined),
                missing: false,
                trail: t,
            });
        }
        for (i, item) in items.iter().enumerate() {
            let mut t = trail.clone();
            t.push((id, i));
            out.push(Traced {
                key: leaf_key(item),
                missing: false,
                trail: t,
            });
        }
        return;
    };
    match value {
        Bson::Document(d) => match d.get(*next) {
            Some(v) => walk(v, next, tail, trail, out, names),
            None => out.push(missing(trail)),
        },
        Bson::Array(items) => {
            let index = array_index(next);
            if let Some(item) = index.and_then(|i| items.get(i)) {
                walk(item, next, tail, trail, out, names);
            }
            let id = std::ptr::from_ref(items) as usize;
            names.insert(id, name.to_string());
            for (i, item) in items.iter().enumerate() {
                if let Bson::Document(d) = item {
                    trail.push((id, i));
                    match d.get(*next) {
                        Some(v) => walk(v, next, tail, trail, out, names),
                        None if index.is_none() => out.push(missing(trail)),
                        None => {}
                    }
                    trail.pop();
                }
            }
        }
        _ => out.push(missing(trail)),
    }
}

/// MongoDB refuses a document where two indexed paths expand different arrays from the same
/// place (the same array reached by both, as in {"a.b": 1, "a.c": 1}, is fine).
fn check_parallel(
    traced: &[Vec<Traced>],
    names: &HashMap<usize, String>,
) -> Result<(), QueryError> {
    let first_arrays: Vec<HashMap<&[(usize, usize)], usize>> = traced
        .iter()
        .map(|field| {
            let mut map = HashMap::new();
            for t in field {
                for k in 0..t.trail.len() {
                    map.insert(&t.trail[..k], t.trail[k].0);
                }
            }
            map
        })
        .collect();
    for (j, later) in first_arrays.iter().enumerate() {
        for earlier in &first_arrays[..j] {
            for (context, array) in later {
                match earlier.get(context) {
                    Some(other) if other != array => {
                        let name = |id| names.get(id).map_or("", String::as_str);
                        return Err(error(
                            171,
                            "CannotIndexParallelArrays",
                            format!(
                                "cannot index parallel arrays [{}] [{}]",
                                name(array),
                                name(other)
                            ),
                        ));
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// One field's distinct key components; a component is "missing" only when every value
/// that produced it was a missing path.
fn components(field: &[Traced]) -> Vec<(Vec<u8>, bool)> {
    let mut all: Vec<(&[u8], bool)> = field.iter().map(|t| (&t.key[..], t.missing)).collect();
    all.sort();
    let mut out: Vec<(Vec<u8>, bool)> = Vec::with_capacity(all.len());
    for (key, missing) in all {
        match out.last_mut() {
            Some((last, last_missing)) if last.as_slice() == key => {
                *last_missing = *last_missing && missing
            }
            _ => out.push((key.to_vec(), missing)),
        }
    }
    out
}
