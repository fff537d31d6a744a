//! Applying a parsed projection to a document: copying included paths through documents
//! and arrays of documents, dropping excluded ones, `$slice`, `$elemMatch`, the positional
//! element and computed fields.
//!
//! Not for: parsing or MongoDB's classification rules (`projection/mod.rs`).

use crate::query::error::QueryError;
use crate::query::filter::eval::element_matches;
use crate::query::projection::Action;
use bson::{Bson, Document};

/// What evaluation inside a projection needs besides the sub-document at hand.
pub(super) struct ApplyContext<'a> {
    pub(super) document: &'a Document,
    pub(super) position: Option<usize>,
}

fn slice(items: &[Bson], skip: Option<i64>, limit: i64) -> Vec<Bson> {
    let len = items.len() as i64;
    let (start, count) = match skip {
        None if limit >= 0 => (0, limit),
        None => ((len + limit).max(0), limit.saturating_neg()),
        Some(s) if s >= 0 => (s.min(len), limit),
        Some(s) => ((len + s).max(0), limit),
    };
    items
        .iter()
        .skip(start as usize)
        .take(count.max(0) as usize)
        .cloned()
        .collect()
}

pub(super) fn include_into(
    source: &Document,
    fields: &[(String, Action)],
    root: &ApplyContext<'_>,
    out: &mut Document,
) -> Result<(), QueryError> {
    for (name, value) in source {
        let Some((_, action)) = fields.iter().find(|(n, _)| n == name) else {
            continue;
        };
        match action {
            Action::Include => {
                out.insert(name.clone(), value.clone());
            }
            Action::Nested(children) => {
                if let Some(projected) = include_value(value, children, root)? {
                    out.insert(name.clone(), projected);
                }
            }
            Action::Slice { skip, limit } => {
                let v = match value {
                    Bson::Array(items) => Bson::Array(slice(items, *skip, *limit)),
                    other => other.clone(),
                };
                out.insert(name.clone(), v);
            }
            Action::ElemMatch(elem) => {
                if let Bson::Array(items) = value {
                    if let Some(first) = items.iter().find(|item| element_matches(elem, item)) {
                        out.insert(name.clone(), Bson::Array(vec![first.clone()]));
                    }
                }
            }
            Action::Positional => {
                let Bson::Array(items) = value else {
                    continue;
                };
                match root.position.and_then(|p| items.get(p)) {
                    Some(item) => {
                        out.insert(name.clone(), Bson::Array(vec![item.clone()]));
                    }
                    None => {
                        return Err(QueryError::location(
                            51246,
                            "Executor error during find command :: caused by :: positional operator '.$' couldn't find a matching element in the array",
                        ))
                    }
                }
            }
            Action::Exclude | Action::Computed(_) => {}
        }
    }
    for (name, action) in fields {
        match action {
            Action::Computed(expr) => {
                if let Some(v) = expr.evaluate_optional(root.document)? {
                    out.insert(name.clone(), v);
                }
            }
            Action::Nested(children) if has_computed(children) => {
                let mut sub = match out.get(name) {
                    Some(Bson::Document(d)) => d.clone(),
                    Some(_) => continue,
                    None => Document::new(),
                };
                include_into(&Document::new(), children, root, &mut sub)?;
                out.insert(name.clone(), sub);
            }
            _ => {}
        }
    }
    Ok(())
}

fn has_computed(fields: &[(String, Action)]) -> bool {
    fields.iter().any(|(_, a)| match a {
        Action::Computed(_) => true,
        Action::Nested(children) => has_computed(children),
        _ => false,
    })
}

fn include_value(
    value: &Bson,
    children: &[(String, Action)],
    root: &ApplyContext<'_>,
) -> Result<Option<Bson>, QueryError> {
    match value {
        Bson::Document(d) => {
            let mut sub = Document::new();
            include_into(d, children, root, &mut sub)?;
            Ok(Some(Bson::Document(sub)))
        }
        Bson::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                if let Some(v) = include_value(item, children, root)? {
                    out.push(v);
                }
            }
            Ok(Some(Bson::Array(out)))
        }
        _ if has_computed(children) => {
            let mut sub = Document::new();
            include_into(&Document::new(), children, root, &mut sub)?;
            Ok(Some(Bson::Document(sub)))
        }
        _ => Ok(None),
    }
}

pub(super) fn exclude(source: &Document, fields: &[(String, Action)]) -> Document {
    let mut out = Document::new();
    for (name, value) in source {
        match fields.iter().find(|(n, _)| n == name).map(|(_, a)| a) {
            Some(Action::Exclude) => {}
            Some(Action::Nested(children)) => {
                out.insert(name.clone(), exclude_value(value, children));
            }
            Some(Action::Slice { skip, limit }) => {
                let v = match value {
                    Bson::Array(items) => Bson::Array(slice(items, *skip, *limit)),
                    other => other.clone(),
                };
                out.insert(name.clone(), v);
            }
            Some(Action::ElemMatch(elem)) => {
                if let Bson::Array(items) = value {
                    if let Some(first) = items.iter().find(|item| element_matches(elem, item)) {
                        out.insert(name.clone(), Bson::Array(vec![first.clone()]));
                    }
                }
            }
            _ => {
                out.insert(name.clone(), value.clone());
            }
        }
    }
    out
}

fn exclude_value(value: &Bson, children: &[(String, Action)]) -> Bson {
    match value {
        Bson::Document(d) => Bson::Document(exclude(d, children)),
        Bson::Array(items) => {
            Bson::Array(items.iter().map(|i| exclude_value(i, children)).collect())
        }
        other => other.clone(),
    }
}
