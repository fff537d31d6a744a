//! User variables of a command's `let` (and `$lookup`'s `let`): binding them to values, and
//! substituting `"$$name"` references in stages or filters by `{$literal: value}` so the
//! substituted text parses with no variable scope. Shared by filters (`$expr` with `let`),
//! `$lookup` sub-pipelines and pipelines run with `let`.
//!
//! Not for: `$let`, `$map`, `$filter` and `$reduce`, whose variables are scoped inside one
//! expression and bound by the evaluator (`expr/mod.rs`).

use crate::query::error::QueryError;
use crate::query::expr::Expression;
use bson::{Bson, Document};

/// Evaluates a command's `let` document into variable bindings (constants or expressions
/// that need no document, such as `$$NOW`).
pub fn bind_variables(variables: &Document) -> Result<Vec<(String, Bson)>, QueryError> {
    let empty = Document::new();
    let mut bound = Vec::with_capacity(variables.len());
    for (name, value) in variables {
        let first = name.chars().next().unwrap_or('$');
        if !first.is_ascii_lowercase() && first.is_ascii() {
            return Err(QueryError::failed_to_parse(format!(
                "'{name}' starts with an invalid character for a user variable name"
            )));
        }
        bound.push((name.clone(), Expression::parse(value)?.evaluate(&empty)?));
    }
    Ok(bound)
}

/// The stages with every `"$$name"` (or `"$$name.path"`) of a `let` variable replaced by
/// `{$literal: value}`, so a correlated sub-pipeline can be parsed for one input document.
pub fn substitute_variables(stages: &[Document], variables: &[(String, Bson)]) -> Vec<Document> {
    fn value(v: &Bson, variables: &[(String, Bson)]) -> Bson {
        match v {
            Bson::String(s) if s.starts_with("$$") => {
                let rest = &s[2..];
                let (name, path) = match rest.split_once('.') {
                    Some((n, p)) => (n, Some(p)),
                    None => (rest, None),
                };
                match variables.iter().find(|(n, _)| n == name) {
                    Some((_, bound)) => {
                        let resolved = match path {
                            Some(p) => super::path_value(
                                bound,
                                &p.split('.').map(str::to_string).collect::<Vec<_>>(),
                            ),
                            None => Some(bound.clone()),
                        };
                        match resolved {
                            Some(r) => Bson::Document(bson::doc! {"$literal": r}),
                            None => Bson::String("$$REMOVE".into()),
                        }
                    }
                    None => v.clone(),
                }
            }
            Bson::Document(d) => Bson::Document(document(d, variables)),
            Bson::Array(items) => Bson::Array(items.iter().map(|i| value(i, variables)).collect()),
            other => other.clone(),
        }
    }
    fn document(d: &Document, variables: &[(String, Bson)]) -> Document {
        d.iter()
            .map(|(k, v)| (k.clone(), value(v, variables)))
            .collect()
    }
    stages.iter().map(|s| document(s, variables)).collect()
}
