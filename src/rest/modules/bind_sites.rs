//! Where a bind placeholder (`":name"`) may stand in a handler's source, and what its value
//! becomes there, so that a bound value can never change the shape of the query:
//!
//! | site | what the value becomes |
//! |---|---|
//! | a field's value in a filter (`{"name": ":name"}`) | an equality, `{"$eq": value}` |
//! | an operator's argument in a filter (`{"$gt": ":min"}`, `{"$in": [":a"]}`) | that argument |
//! | an expression (`$expr`, `$project`, `$addFields`/`$set`, `$group`, `$replaceWith`, …, projections, update pipelines) | a literal, `{"$literal": value}` |
//! | data: documents to insert, values of update operators (`{"$set": {"a": ":v"}}`) | the value |
//! | a count or a direction (`$limit`, `$skip`, `$sample.size`, sort directions) | the value, which must be an integer |
//!
//! Anywhere else — field names, `$unwind` paths, `$lookup`'s collection and fields, stages
//! docgate does not know — a placeholder is refused when the module is saved. Filter
//! positions are those of MongoDB: `filter`, `update.filter`, `delete`, `$match`,
//! `$elemMatch`, each branch of `$and`/`$or`/`$nor`; `$expr` inside a filter is an
//! expression.
//!
//! The same walk serves two purposes: at request time it substitutes the request's values
//! ([`BindResolver`] is `Binds`); when a module is saved it runs with a resolver that answers
//! a stand-in for every site, so a placeholder in a refused site fails the definition, not a
//! request.
//!
//! Not for: where values come from or which types a value may have (`binds`).

use bson::{doc, Bson, Document};

use crate::rest::error::{RestError, RestResult};

/// What a placeholder stands for, which decides the value's form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindSite {
    /// A field's value in a filter: bound as `{$eq: value}`.
    FilterValue,
    /// An argument of a filter operator, or data: bound as the value itself.
    Value,
    /// Inside an aggregation expression: bound as `{$literal: value}`.
    Expression,
    /// A count or a sort direction: bound as the value, which must be an integer.
    Integer,
}

/// Answers the value a placeholder binds to at a site.
pub trait BindResolver {
    fn resolve(&self, name: &str, site: BindSite) -> RestResult<Bson>;
}

/// Stand-in values for checking a definition: every allowed site resolves.
pub struct DefinitionCheck;

impl BindResolver for DefinitionCheck {
    fn resolve(&self, _name: &str, site: BindSite) -> RestResult<Bson> {
        Ok(match site {
            BindSite::Integer => Bson::Int32(1),
            _ => Bson::Null,
        })
    }
}

/// `":name"` → `name`, for identifiers only.
pub fn placeholder(text: &str) -> Option<&str> {
    let name = text.strip_prefix(':')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(name)
}

fn placeholder_of(value: &Bson) -> Option<&str> {
    match value {
        Bson::String(text) => placeholder(text),
        _ => None,
    }
}

/// Whether `value` holds any placeholder (a spec without one is used as it is).
pub fn has_placeholders(value: &Bson) -> bool {
    match value {
        Bson::String(text) => placeholder(text).is_some(),
        Bson::Document(document) => document.values().any(has_placeholders),
        Bson::Array(items) => items.iter().any(has_placeholders),
        _ => false,
    }
}

fn refused(name: &str, place: &str) -> RestError {
    RestError::BadRequest(format!(
        "the bind variable :{name} cannot stand in {place}: binds stand for values only (filter values, operator arguments, expression literals, data)"
    ))
}

/// Refuses any placeholder inside `value` (a site where none may stand).
pub fn no_placeholder(value: &Bson, place: &str) -> RestResult<()> {
    match value {
        Bson::String(text) => match placeholder(text) {
            Some(name) => Err(refused(name, place)),
            None => Ok(()),
        },
        Bson::Document(document) => document
            .values()
            .try_for_each(|value| no_placeholder(value, place)),
        Bson::Array(items) => items
            .iter()
            .try_for_each(|item| no_placeholder(item, place)),
        _ => Ok(()),
    }
}

/// A filter with its placeholders bound.
pub fn bind_filter(filter: &Document, binds: &dyn BindResolver) -> RestResult<Document> {
    let mut out = Document::new();
    for (key, value) in filter {
        if key.starts_with(':') && placeholder(key).is_some() {
            return Err(refused(key.trim_start_matches(':'), "a field name"));
        }
        let bound = match key.as_str() {
            "$and" | "$or" | "$nor" => bind_filter_list(key, value, binds)?,
            "$expr" => bind_expression(value, binds)?,
            _ if key.starts_with('$') => bind_value(value, binds)?,
            _ => bind_condition(value, binds)?,
        };
        out.insert(key.clone(), bound);
    }
    Ok(out)
}

fn bind_filter_list(key: &str, value: &Bson, binds: &dyn BindResolver) -> RestResult<Bson> {
    match value {
        Bson::Array(branches) => branches
            .iter()
            .map(|branch| match branch {
                Bson::Document(branch) => Ok(Bson::Document(bind_filter(branch, binds)?)),
                other => {
                    no_placeholder(other, &format!("a {key} branch"))?;
                    Ok(other.clone())
                }
            })
            .collect::<RestResult<Vec<_>>>()
            .map(Bson::Array),
        other => {
            no_placeholder(other, &format!("the list of {key}"))?;
            Ok(other.clone())
        }
    }
}

/// What a filter says of one field: a value (equality), or a document of operators.
fn bind_condition(value: &Bson, binds: &dyn BindResolver) -> RestResult<Bson> {
    if let Some(name) = placeholder_of(value) {
        let bound = binds.resolve(name, BindSite::FilterValue)?;
        return Ok(Bson::Document(doc! {"$eq": bound}));
    }
    match value {
        Bson::Document(operators) if is_operator_document(operators) => {
            Ok(Bson::Document(bind_operators(operators, binds)?))
        }
        other => bind_value(other, binds),
    }
}

/// `{$gt: …, $in: […]}`: each operator's argument bound as a value; `$not` and
/// `$elemMatch` hold conditions of their own.
fn bind_operators(operators: &Document, binds: &dyn BindResolver) -> RestResult<Document> {
    let mut out = Document::new();
    for (operator, argument) in operators {
        let bound = match (operator.as_str(), argument) {
            ("$not", Bson::Document(inner)) if is_operator_document(inner) => {
                Bson::Document(bind_operators(inner, binds)?)
            }
            ("$elemMatch", Bson::Document(inner)) => {
                if is_operator_document(inner) {
                    Bson::Document(bind_operators(inner, binds)?)
                } else {
                    Bson::Document(bind_filter(inner, binds)?)
                }
            }
            ("$all", Bson::Array(items)) => Bson::Array(
                items
                    .iter()
                    .map(|item| match item {
                        Bson::Document(inner) if is_operator_document(inner) => {
                            Ok(Bson::Document(bind_operators(inner, binds)?))
                        }
                        other => bind_value(other, binds),
                    })
                    .collect::<RestResult<_>>()?,
            ),
            _ => bind_value(argument, binds)?,
        };
        out.insert(operator.clone(), bound);
    }
    Ok(out)
}

/// A document whose first key is an operator (`{$gt: 1}`), not a literal document.
fn is_operator_document(document: &Document) -> bool {
    document.keys().next().is_some_and(|key| {
        key.starts_with('$') && !matches!(key.as_str(), "$and" | "$or" | "$nor" | "$expr")
    })
}

/// Data: every placeholder is its value, wherever it stands (keys are never bound).
pub fn bind_value(value: &Bson, binds: &dyn BindResolver) -> RestResult<Bson> {
    if let Some(name) = placeholder_of(value) {
        return binds.resolve(name, BindSite::Value);
    }
    match value {
        Bson::Document(document) => {
            let mut out = Document::new();
            for (key, value) in document {
                if let Some(name) = placeholder(key) {
                    return Err(refused(name, "a field name"));
                }
                out.insert(key.clone(), bind_value(value, binds)?);
            }
            Ok(Bson::Document(out))
        }
        Bson::Array(items) => items
            .iter()
            .map(|item| bind_value(item, binds))
            .collect::<RestResult<Vec<_>>>()
            .map(Bson::Array),
        other => Ok(other.clone()),
    }
}

/// An aggregation expression: every placeholder is `{$literal: value}`, so a bound
/// `"$secret"` or `"$$ROOT"` is that string, never a field path or a variable. Inside
/// `$literal` the value itself stands.
pub fn bind_expression(value: &Bson, binds: &dyn BindResolver) -> RestResult<Bson> {
    if let Some(name) = placeholder_of(value) {
        let bound = binds.resolve(name, BindSite::Expression)?;
        return Ok(Bson::Document(doc! {"$literal": bound}));
    }
    match value {
        Bson::Document(document) => {
            let mut out = Document::new();
            for (key, value) in document {
                if let Some(name) = placeholder(key) {
                    return Err(refused(name, "a field name"));
                }
                let bound = if key == "$literal" {
                    bind_value(value, binds)?
                } else {
                    bind_expression(value, binds)?
                };
                out.insert(key.clone(), bound);
            }
            Ok(Bson::Document(out))
        }
        Bson::Array(items) => items
            .iter()
            .map(|item| bind_expression(item, binds))
            .collect::<RestResult<Vec<_>>>()
            .map(Bson::Array),
        other => Ok(other.clone()),
    }
}

/// A sort specification: directions may be bound (integers), field names may not.
pub fn bind_sort(sort: &Document, binds: &dyn BindResolver) -> RestResult<Document> {
    let mut out = Document::new();
    for (key, value) in sort {
        if let Some(name) = placeholder(key) {
            return Err(refused(name, "a sort field"));
        }
        out.insert(key.clone(), bind_integer(value, binds, "a sort direction")?);
    }
    Ok(out)
}

/// A count or a direction: a placeholder's value must be an integer.
fn bind_integer(value: &Bson, binds: &dyn BindResolver, place: &str) -> RestResult<Bson> {
    let Some(name) = placeholder_of(value) else {
        no_placeholder(value, place)?;
        return Ok(value.clone());
    };
    match binds.resolve(name, BindSite::Integer)? {
        bound @ (Bson::Int32(_) | Bson::Int64(_)) => Ok(bound),
        other => Err(RestError::BadRequest(format!(
            ":{name} is {place} and must be an integer, not {}",
            crate::query::bson_type_name(&other)
        ))),
    }
}

/// An update: operators take data (`{$set: {a: ":v"}}`), a pipeline takes expressions, a
/// replacement document is data.
pub fn bind_update(update: &Bson, binds: &dyn BindResolver) -> RestResult<Bson> {
    match update {
        Bson::Array(_) => bind_pipeline(update, binds),
        Bson::Document(document) => {
            let mut out = Document::new();
            for (key, value) in document {
                if let Some(name) = placeholder(key) {
                    return Err(refused(name, "an update operator"));
                }
                out.insert(key.clone(), bind_value(value, binds)?);
            }
            Ok(Bson::Document(out))
        }
        other => {
            no_placeholder(other, "the update")?;
            Ok(other.clone())
        }
    }
}

/// A pipeline (an array of stages) with each stage bound by what its stage takes.
pub fn bind_pipeline(pipeline: &Bson, binds: &dyn BindResolver) -> RestResult<Bson> {
    let Bson::Array(stages) = pipeline else {
        no_placeholder(pipeline, "the pipeline")?;
        return Ok(pipeline.clone());
    };
    stages
        .iter()
        .map(|stage| match stage {
            Bson::Document(stage) => bind_stage(stage, binds).map(Bson::Document),
            other => {
                no_placeholder(other, "a pipeline stage")?;
                Ok(other.clone())
            }
        })
        .collect::<RestResult<Vec<_>>>()
        .map(Bson::Array)
}

/// Stages whose whole specification is expressions (or literals where MongoDB wants
/// constants, which a `$literal` then fails, as it should).
const EXPRESSION_STAGES: &[&str] = &[
    "$project",
    "$addFields",
    "$set",
    "$replaceRoot",
    "$replaceWith",
    "$group",
    "$sortByCount",
    "$bucket",
    "$redact",
];

fn bind_stage(stage: &Document, binds: &dyn BindResolver) -> RestResult<Document> {
    let mut out = Document::new();
    for (name, spec) in stage {
        let bound = match name.as_str() {
            "$match" => match spec {
                Bson::Document(filter) => Bson::Document(bind_filter(filter, binds)?),
                other => {
                    no_placeholder(other, "$match")?;
                    other.clone()
                }
            },
            "$limit" | "$skip" => bind_integer(spec, binds, &format!("the count of {name}"))?,
            "$sample" => match spec {
                Bson::Document(sample) => {
                    let mut bound = Document::new();
                    for (key, value) in sample {
                        bound.insert(
                            key.clone(),
                            bind_integer(value, binds, "the size of $sample")?,
                        );
                    }
                    Bson::Document(bound)
                }
                other => {
                    no_placeholder(other, "$sample")?;
                    other.clone()
                }
            },
            "$sort" => match spec {
                Bson::Document(sort) => Bson::Document(bind_sort(sort, binds)?),
                other => {
                    no_placeholder(other, "$sort")?;
                    other.clone()
                }
            },
            "$facet" => match spec {
                Bson::Document(facets) => {
                    let mut bound = Document::new();
                    for (facet, pipeline) in facets {
                        bound.insert(facet.clone(), bind_pipeline(pipeline, binds)?);
                    }
                    Bson::Document(bound)
                }
                other => {
                    no_placeholder(other, "$facet")?;
                    other.clone()
                }
            },
            "$lookup" | "$unionWith" => bind_sub_pipeline_stage(name, spec, binds)?,
            _ if EXPRESSION_STAGES.contains(&name.as_str()) => bind_expression(spec, binds)?,
            _ => {
                no_placeholder(spec, name)?;
                spec.clone()
            }
        };
        out.insert(name.clone(), bound);
    }
    Ok(out)
}

/// `$lookup` and `$unionWith`: `let` holds expressions, `pipeline` stages; collection and
/// field names are never bound.
fn bind_sub_pipeline_stage(name: &str, spec: &Bson, binds: &dyn BindResolver) -> RestResult<Bson> {
    let Bson::Document(fields) = spec else {
        no_placeholder(spec, name)?;
        return Ok(spec.clone());
    };
    let mut out = Document::new();
    for (key, value) in fields {
        let bound = match key.as_str() {
            "let" => bind_expression(value, binds)?,
            "pipeline" => bind_pipeline(value, binds)?,
            _ => {
                no_placeholder(value, &format!("{name}.{key}"))?;
                value.clone()
            }
        };
        out.insert(key.clone(), bound);
    }
    Ok(Bson::Document(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Values(HashMap<&'static str, Bson>);

    impl BindResolver for Values {
        fn resolve(&self, name: &str, _site: BindSite) -> RestResult<Bson> {
            self.0
                .get(name)
                .cloned()
                .ok_or_else(|| RestError::BadRequest(format!("no :{name}")))
        }
    }

    fn values(pairs: &[(&'static str, Bson)]) -> Values {
        Values(pairs.iter().cloned().collect())
    }

    #[test]
    fn filter_values_are_equalities_and_arguments_stay_arguments() {
        let binds = values(&[
            ("name", Bson::String("$secret".into())),
            ("min", Bson::Int32(3)),
            ("doc", Bson::Document(doc! {"a": 1})),
        ]);
        let filter = doc! {
            "name": ":name",
            "n": {"$gte": ":min", "$in": [":min", 9]},
            "$or": [{"x": ":doc"}, {"y": {"$elemMatch": {"z": ":min"}}}],
            "$expr": {"$eq": ["$k", ":name"]},
            "lit": {"a": ":min"},
        };
        assert_eq!(
            bind_filter(&filter, &binds).unwrap(),
            doc! {
                "name": {"$eq": "$secret"},
                "n": {"$gte": 3, "$in": [3, 9]},
                "$or": [{"x": {"$eq": {"a": 1}}}, {"y": {"$elemMatch": {"z": {"$eq": 3}}}}],
                "$expr": {"$eq": ["$k", {"$literal": "$secret"}]},
                "lit": {"a": 3},
            }
        );
    }

    #[test]
    fn expressions_get_literals() {
        let binds = values(&[("v", Bson::String("$$ROOT".into()))]);
        let stage = Bson::Array(vec![Bson::Document(doc! {"$addFields": {"echo": ":v"}})]);
        assert_eq!(
            bind_pipeline(&stage, &binds).unwrap(),
            Bson::Array(vec![Bson::Document(
                doc! {"$addFields": {"echo": {"$literal": "$$ROOT"}}}
            )])
        );
    }

    #[test]
    fn counts_must_be_integers_and_names_are_refused() {
        let binds = values(&[("n", Bson::String("5".into())), ("f", Bson::Int32(1))]);
        let limit = Bson::Array(vec![Bson::Document(doc! {"$limit": ":n"})]);
        assert!(bind_pipeline(&limit, &binds).is_err());
        let unwind = Bson::Array(vec![Bson::Document(doc! {"$unwind": ":f"})]);
        assert!(bind_pipeline(&unwind, &DefinitionCheck).is_err());
        assert!(bind_filter(&doc! {":f": 1}, &DefinitionCheck).is_err());
        assert!(bind_sort(&doc! {"a": ":f"}, &binds).is_ok());
        let lookup = Bson::Array(vec![Bson::Document(
            doc! {"$lookup": {"from": ":f", "as": "x", "pipeline": []}},
        )]);
        assert!(bind_pipeline(&lookup, &DefinitionCheck).is_err());
    }

    #[test]
    fn update_operators_take_data_and_pipelines_expressions() {
        let binds = values(&[("v", Bson::String("$other".into()))]);
        assert_eq!(
            bind_update(&Bson::Document(doc! {"$set": {"a": ":v"}}), &binds).unwrap(),
            Bson::Document(doc! {"$set": {"a": "$other"}})
        );
        assert_eq!(
            bind_update(
                &Bson::Array(vec![Bson::Document(doc! {"$set": {"a": ":v"}})]),
                &binds
            )
            .unwrap(),
            Bson::Array(vec![Bson::Document(
                doc! {"$set": {"a": {"$literal": "$other"}}}
            )])
        );
    }
}
