//! `$redact`: the expression is evaluated at the document and, for `$$DESCEND`, at every
//! embedded document (also inside arrays) with `$$CURRENT` at that level; `$$PRUNE` drops the
//! level, `$$KEEP` keeps it whole, anything else is MongoDB's error 17053.
//!
//! Not for: the system variables themselves, which the evaluator binds only for `$redact`
//! (`expr::Scope::for_redact`).

use crate::query::error::QueryError;
use crate::query::expr::{redact_marker, Expression, Scope};
use bson::{Bson, Document};

enum Decision {
    Descend,
    Prune,
    Keep,
}

fn decide(expr: &Expression, root: &Document, current: &Document) -> Result<Decision, QueryError> {
    let mut scope = Scope::for_redact(root, current);
    let value = expr.eval(&mut scope)?;
    for (name, decision) in [
        ("DESCEND", Decision::Descend),
        ("PRUNE", Decision::Prune),
        ("KEEP", Decision::Keep),
    ] {
        if value.as_ref() == Some(&redact_marker(name)) {
            return Ok(decision);
        }
    }
    Err(QueryError::location(
        17053,
        format!(
            "$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned {}",
            value.map(|v| v.to_string()).unwrap_or_else(|| "MISSING".to_string())
        ),
    ))
}

/// The redacted form of one level, or `None` when pruned.
fn redact_level(
    expr: &Expression,
    root: &Document,
    current: &Document,
) -> Result<Option<Document>, QueryError> {
    crate::interrupt::check()?;
    match decide(expr, root, current)? {
        Decision::Prune => Ok(None),
        Decision::Keep => Ok(Some(current.clone())),
        Decision::Descend => {
            let mut out = Document::new();
            for (key, value) in current {
                if let Some(v) = redact_value(expr, root, value)? {
                    out.insert(key.clone(), v);
                }
            }
            Ok(Some(out))
        }
    }
}

fn redact_value(
    expr: &Expression,
    root: &Document,
    value: &Bson,
) -> Result<Option<Bson>, QueryError> {
    match value {
        Bson::Document(d) => Ok(redact_level(expr, root, d)?.map(Bson::Document)),
        Bson::Array(items) => {
            let mut kept = Vec::with_capacity(items.len());
            for item in items {
                if let Some(v) = redact_value(expr, root, item)? {
                    kept.push(v);
                }
            }
            Ok(Some(Bson::Array(kept)))
        }
        other => Ok(Some(other.clone())),
    }
}

/// Runs `$redact` over the documents.
pub fn run_redact(expr: &Expression, docs: Vec<Document>) -> Result<Vec<Document>, QueryError> {
    let mut out = Vec::with_capacity(docs.len());
    for doc in &docs {
        if let Some(d) = redact_level(expr, doc, doc)? {
            out.push(d);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::query::aggregate::Pipeline;
    use bson::doc;

    #[test]
    fn the_manuals_forecasts_example() {
        let forecast = doc! {
            "_id": 1, "title": "123 Department Report", "tags": ["G", "STLW"], "year": 2014,
            "subsections": [
                {"subtitle": "Section 1: Overview", "tags": ["SI", "G"], "content": "Section 1: This is the content of section 1."},
                {"subtitle": "Section 2: Analysis", "tags": ["STLW"], "content": "Section 2: This is the content of section 2."},
                {"subtitle": "Section 3: Budgeting", "tags": ["TK"], "content": {"text": "Section 3: This is the content of section 3.", "tags": ["HCS"]}},
            ]
        };
        let p = Pipeline::parse(&[
            doc! {"$match": {"year": 2014}},
            doc! {"$redact": {"$cond": {
            "if": {"$gt": [{"$size": {"$setIntersection": ["$tags", ["STLW", "G"]]}}, 0]},
            "then": "$$DESCEND", "else": "$$PRUNE"}}},
        ])
        .unwrap();
        assert_eq!(
            p.run(vec![forecast]).unwrap(),
            vec![doc! {
                "_id": 1, "title": "123 Department Report", "tags": ["G", "STLW"], "year": 2014,
                "subsections": [
                    {"subtitle": "Section 1: Overview", "tags": ["SI", "G"], "content": "Section 1: This is the content of section 1."},
                    {"subtitle": "Section 2: Analysis", "tags": ["STLW"], "content": "Section 2: This is the content of section 2."},
                ]
            }]
        );
    }

    #[test]
    fn keep_and_errors() {
        let docs = vec![doc! {"level": 1, "a": {"level": 5}}, doc! {"level": 5}];
        let p = Pipeline::parse(&[
            doc! {"$redact": {"$cond": [{"$lte": ["$level", 3]}, "$$KEEP", "$$PRUNE"]}},
        ])
        .unwrap();
        assert_eq!(
            p.run(docs.clone()).unwrap(),
            vec![doc! {"level": 1, "a": {"level": 5}}]
        );
        let p = Pipeline::parse(&[doc! {"$redact": "$level"}]).unwrap();
        assert_eq!(p.run(docs).unwrap_err().code, 17053);
        let p = Pipeline::parse(&[doc! {"$project": {"x": "$$KEEP"}}]).unwrap();
        assert_eq!(p.run(vec![doc! {}]).unwrap_err().code, 17276);
    }
}
