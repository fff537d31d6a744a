//! The positional operator's position: which element of the first array on a queried path
//! made the query match, as `$` in an update (`{"a.$": 1}`) and the `a.$` projection need it.
//!
//! Not for: `$[]` or `$[identifier]` (array filters, in `update/path.rs`), or matching itself
//! (`filter/eval.rs`).

use crate::query::filter::eval::{element_matches, predicate_holds};
use crate::query::filter::{FieldPredicate, Filter};
use crate::query::value::path::{array_index, candidates_in_value, Candidate};
use bson::{Bson, Document};

/// The position, in the first array met along some queried path, of the first element that
/// satisfies that path's predicates; `None` when no queried path runs through an array or no
/// single element explains the match. The first such field in the filter wins, like MongoDB.
pub fn matched_array_position(filter: &Filter, doc: &Document) -> Option<usize> {
    match filter {
        Filter::And(children) => children
            .iter()
            .find_map(|child| matched_array_position(child, doc)),
        Filter::Field { path, predicates } => field_position(doc, path, predicates),
        _ => None,
    }
}

fn field_position(doc: &Document, path: &str, predicates: &[FieldPredicate]) -> Option<usize> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut current: &Bson = doc.get(*parts.first()?)?;
    let mut consumed = 1;
    loop {
        if let Bson::Array(items) = current {
            let rest = &parts[consumed..];
            // A numeric component right after the array names the element explicitly.
            if let Some(index) = rest.first().and_then(|c| array_index(c)) {
                if index < items.len() {
                    return Some(index);
                }
            }
            return items
                .iter()
                .position(|item| element_explains_match(item, rest, predicates));
        }
        let next = parts.get(consumed)?;
        current = match current {
            Bson::Document(d) => d.get(*next)?,
            _ => return None,
        };
        consumed += 1;
    }
}

fn element_explains_match(item: &Bson, rest: &[&str], predicates: &[FieldPredicate]) -> bool {
    if rest.is_empty() {
        return predicates.iter().all(|p| match p {
            FieldPredicate::ElemMatch(elem) => element_matches(elem, item),
            other => {
                let mut found = vec![Candidate {
                    value: Some(item),
                    from_leaf_array: false,
                }];
                if let Bson::Array(inner) = item {
                    found.extend(inner.iter().map(|v| Candidate {
                        value: Some(v),
                        from_leaf_array: true,
                    }));
                }
                predicate_holds(other, &found)
            }
        });
    }
    let found = candidates_in_value(item, &rest.join("."));
    predicates.iter().all(|p| predicate_holds(p, &found))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn position(filter: Document, d: Document) -> Option<usize> {
        matched_array_position(&Filter::parse(&filter).unwrap(), &d)
    }

    #[test]
    fn finds_the_matching_element() {
        assert_eq!(position(doc! {"a": 5}, doc! {"a": [1, 5, 5]}), Some(1));
        assert_eq!(
            position(doc! {"a": {"$gt": 1}}, doc! {"a": [1, 5]}),
            Some(1)
        );
        assert_eq!(
            position(doc! {"a.b": 2}, doc! {"a": [{"b": 1}, {"b": 2}]}),
            Some(1)
        );
        assert_eq!(
            position(
                doc! {"x": 1, "a": {"$elemMatch": {"b": 2, "c": 3}}},
                doc! {"x": 1, "a": [{"b": 2}, {"b": 2, "c": 3}]}
            ),
            Some(1)
        );
        assert_eq!(
            position(doc! {"o.a": 3}, doc! {"o": {"a": [4, 3]}}),
            Some(1)
        );
        assert_eq!(position(doc! {"a": 5}, doc! {"a": 5}), None);
    }
}
