//! The stages that reshape each document on its own: `$addFields`/`$set` (dotted paths set
//! through arrays the way MongoDB does) and `$unwind` (parsing, and one document's outputs,
//! linear in the array's length).
//!
//! Not for: `$project` and `$unset` (`projection/`), grouping (`group.rs`) or the stages that
//! read other collections (`stages.rs`).

use super::Stage;
use crate::query::error::QueryError;
use crate::query::expr::Expression;
use bson::{Bson, Document};

pub(super) fn parse_unwind(spec: &Bson) -> Result<Stage, QueryError> {
    let (path, index_field, preserve_empty) = match spec {
        Bson::String(p) => (p.clone(), None, false),
        Bson::Document(d) => {
            let Some(Bson::String(p)) = d.get("path") else {
                return Err(QueryError::location(
                    28812,
                    "no path specified to $unwind stage",
                ));
            };
            let index = match d.get("includeArrayIndex") {
                None => None,
                Some(Bson::String(s)) if !s.is_empty() && !s.starts_with('$') => Some(s.clone()),
                Some(_) => return Err(QueryError::location(
                    28810,
                    "expected a non-empty string for the includeArrayIndex option to $unwind stage",
                )),
            };
            let preserve = match d.get("preserveNullAndEmptyArrays") {
                None => false,
                Some(Bson::Boolean(b)) => *b,
                Some(_) => return Err(QueryError::location(
                    28809,
                    "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage",
                )),
            };
            (p.clone(), index, preserve)
        }
        _ => {
            return Err(QueryError::location(
                15981,
                "expected either a string or an object as specification for $unwind stage",
            ))
        }
    };
    let Some(stripped) = path.strip_prefix('$') else {
        return Err(QueryError::location(
            28818,
            format!("path option to $unwind stage should be prefixed with a '$': {path}"),
        ));
    };
    Ok(Stage::Unwind {
        path: stripped.to_string(),
        index_field,
        preserve_empty,
    })
}

pub(super) fn add_fields(
    fields: &[(String, Expression)],
    doc: Document,
) -> Result<Document, QueryError> {
    let mut values = Vec::with_capacity(fields.len());
    for (path, expr) in fields {
        values.push((path, expr.evaluate_optional(&doc)?));
    }
    let mut out = doc;
    for (path, value) in values {
        set_dotted(&mut out, path, value);
    }
    Ok(out)
}

/// Sets (or, for a missing value, removes) a dotted path the way `$addFields` does: through
/// arrays the rest of the path is applied to every element, and a scalar in the way is
/// replaced by a new document.
pub(super) fn set_dotted(doc: &mut Document, path: &str, value: Option<Bson>) {
    match path.split_once('.') {
        None => match value {
            Some(v) => {
                if let Some(existing) = doc.get_mut(path) {
                    *existing = v;
                } else {
                    doc.insert(path, v);
                }
            }
            None => {
                doc.remove(path);
            }
        },
        Some((head, rest)) => {
            if !doc.contains_key(head) {
                if value.is_none() {
                    return;
                }
                doc.insert(head, Document::new());
            }
            if let Some(existing) = doc.get_mut(head) {
                set_dotted_in_value(existing, rest, value);
            }
        }
    }
}

fn set_dotted_in_value(target: &mut Bson, path: &str, value: Option<Bson>) {
    match target {
        Bson::Document(sub) => set_dotted(sub, path, value),
        Bson::Array(items) => {
            for item in items.iter_mut() {
                set_dotted_in_value(item, path, value.clone());
            }
        }
        other => {
            if value.is_some() {
                let mut fresh = Document::new();
                set_dotted(&mut fresh, path, value);
                *other = Bson::Document(fresh);
            }
        }
    }
}

/// `$unwind` of one document. The array is taken out of the document first, so each output
/// copies the document without it (linear in the array's length, not quadratic).
pub(super) fn unwind(
    mut doc: Document,
    path: &str,
    index_field: Option<&str>,
    preserve: bool,
    out: &mut Vec<Document>,
) {
    let value = match take_path(&mut doc, path) {
        Taken::Value(v) => Some(v),
        Taken::Missing => None,
        Taken::ThroughArray => return unwind_by_copy(doc, path, index_field, preserve, out),
    };
    // `doc` holds null where the value was; `set_dotted` writes each output's value there.
    let emit = |mut d: Document, v: Option<Bson>, i: Option<i64>, out: &mut Vec<Document>| {
        set_dotted(&mut d, path, v);
        if let Some(field) = index_field {
            d.insert(field, i.map(Bson::Int64).unwrap_or(Bson::Null));
        }
        out.push(d);
    };
    match value {
        Some(Bson::Array(items)) if !items.is_empty() => {
            let last = items.len() - 1;
            out.reserve(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let d = if i == last {
                    std::mem::take(&mut doc)
                } else {
                    doc.clone()
                };
                emit(d, Some(item), Some(i as i64), out);
            }
        }
        Some(Bson::Array(_)) | None => {
            if preserve {
                emit(doc, None, None, out);
            }
        }
        Some(Bson::Null) => {
            if preserve {
                emit(doc, Some(Bson::Null), None, out);
            }
        }
        Some(other) => emit(doc, Some(other), None, out),
    }
}

/// What [`take_path`] found.
enum Taken {
    /// The value, replaced by null in the document.
    Value(Bson),
    /// Nothing at the path (a field is absent, or a scalar is in the way).
    Missing,
    /// An array before the end of the path, which `get_path` may index by number.
    ThroughArray,
}

/// Takes the value at a dotted path through documents out of `doc`, leaving null in its place.
fn take_path(doc: &mut Document, path: &str) -> Taken {
    let (parents, leaf) = match path.rsplit_once('.') {
        Some((parents, leaf)) => (Some(parents), leaf),
        None => (None, path),
    };
    let mut current = doc;
    for part in parents.into_iter().flat_map(|p| p.split('.')) {
        match current.get_mut(part) {
            Some(Bson::Document(d)) => current = d,
            Some(Bson::Array(_)) => return Taken::ThroughArray,
            _ => return Taken::Missing,
        }
    }
    match current.get_mut(leaf) {
        Some(v) => Taken::Value(std::mem::replace(v, Bson::Null)),
        None => Taken::Missing,
    }
}

/// `$unwind` through an array met mid-path (`"$a.0.b"`): each output is a copy of the whole
/// document with the path set, and setting a path through an array writes into every
/// element, so the outputs themselves hold the array (see [`set_dotted`]).
pub(super) fn unwind_by_copy(
    doc: Document,
    path: &str,
    index_field: Option<&str>,
    preserve: bool,
    out: &mut Vec<Document>,
) {
    let value = crate::query::value::path::get_path(&doc, path).cloned();
    let with = |v: Option<Bson>, i: Option<i64>| {
        let mut d = doc.clone();
        set_dotted(&mut d, path, v);
        if let Some(field) = index_field {
            d.insert(field, i.map(Bson::Int64).unwrap_or(Bson::Null));
        }
        d
    };
    match value {
        Some(Bson::Array(items)) if !items.is_empty() => {
            for (i, item) in items.into_iter().enumerate() {
                out.push(with(Some(item), Some(i as i64)));
            }
        }
        Some(Bson::Array(_)) | None | Some(Bson::Null) => {
            if preserve {
                let kept = match &value {
                    Some(Bson::Null) => Some(Bson::Null),
                    _ => None,
                };
                out.push(with(kept, None));
            }
        }
        Some(other) => out.push(with(Some(other), None)),
    }
}
