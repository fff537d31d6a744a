//! A small aggregation pipeline over documents in memory: $match, $group, $sort, $skip,
//! $limit, $count, $project, $addFields/$set, $unset, $replaceRoot/$replaceWith, $unwind and
//! $sortByCount, with MongoDB's stage errors (e.g. 40324 for an unknown stage).
//!
//! Not for: stages that need other collections or the server ($lookup, $out, $merge,
//! $facet, $geoNear, $search) — they are rejected as unsupported — or pushdown decisions
//! (the planner reads [`Pipeline::leading_match`]).

pub mod accumulators;
pub mod stages;
#[cfg(test)]
mod tests;

use crate::query::error::QueryError;
use crate::query::expr::Expression;
use crate::query::filter::Filter;
use crate::query::projection::Projection;
use crate::query::sort::SortSpec;
use crate::query::value::keys::encode_key;
use crate::query::value::number::Number;
use accumulators::{feed, AccumulatorSpec, AccumulatorState};
use bson::{Bson, Document};
pub use stages::ForeignDocuments;
use std::collections::HashMap;

/// One parsed stage.
#[derive(Clone, Debug, PartialEq)]
pub enum Stage {
    /// `$match` with its original document (for pushdown).
    Match {
        /// The parsed filter.
        filter: Filter,
        /// The filter as given.
        source: Document,
    },
    /// `$group`.
    Group {
        /// The `_id` expression.
        id: Expression,
        /// Output accumulators in spec order.
        accumulators: Vec<AccumulatorSpec>,
    },
    /// `$sort`.
    Sort(SortSpec),
    /// `$skip`.
    Skip(u64),
    /// `$limit`.
    Limit(u64),
    /// `$count` into the named field.
    Count(String),
    /// `$project` / `$unset`.
    Project(Projection),
    /// `$addFields` / `$set`: dotted paths and their expressions.
    AddFields(Vec<(String, Expression)>),
    /// `$replaceRoot` / `$replaceWith`.
    ReplaceRoot(Expression),
    /// `$facet`: named sub-pipelines over the same input.
    Facet(Vec<(String, Pipeline)>),
    /// `$bucket`.
    Bucket(Box<stages::Bucket>),
    /// `$sample` of this many documents.
    Sample(u64),
    /// `$lookup`.
    Lookup(Box<stages::Lookup>),
    /// `$unionWith` a collection, through an optional pipeline.
    UnionWith {
        /// The other collection.
        collection: String,
        /// Stages applied to its documents first.
        pipeline: Option<Pipeline>,
    },
    /// `$unwind`.
    Unwind {
        /// Path without the leading `$`.
        path: String,
        /// `includeArrayIndex`.
        index_field: Option<String>,
        /// `preserveNullAndEmptyArrays`.
        preserve_empty: bool,
    },
}

/// A parsed pipeline.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    /// Stages in order.
    pub stages: Vec<Stage>,
}

impl Pipeline {
    /// Parses a list of stage documents.
    pub fn parse(stages: &[Document]) -> Result<Pipeline, QueryError> {
        let mut parsed = Vec::with_capacity(stages.len());
        for stage in stages {
            parse_stage(stage, &mut parsed)?;
        }
        Ok(Pipeline { stages: parsed })
    }

    /// Parses stages that may use the command's `let` variables (`"$$name"`), each bound
    /// once as a literal.
    pub fn parse_with_variables(
        stages: &[Document],
        variables: &Document,
    ) -> Result<Pipeline, QueryError> {
        let bound = crate::query::expr::bind_variables(variables)?;
        Pipeline::parse(&crate::query::expr::substitute_variables(stages, &bound))
    }

    /// The filter of a first `$match` stage, for pushdown.
    pub fn leading_match(&self) -> Option<&Document> {
        match self.stages.first() {
            Some(Stage::Match { source, .. }) => Some(source),
            _ => None,
        }
    }

    /// Runs the pipeline over `input`; `$lookup`/`$unionWith` see empty collections.
    pub fn run(&self, input: Vec<Document>) -> Result<Vec<Document>, QueryError> {
        self.run_with(input, &ForeignDocuments::new())
    }

    /// Runs the pipeline with the documents of the collections it reads besides its input
    /// (those named by [`foreign_collections`](Self::foreign_collections)).
    pub fn run_with(
        &self,
        input: Vec<Document>,
        foreign: &ForeignDocuments,
    ) -> Result<Vec<Document>, QueryError> {
        let mut docs = input;
        for stage in &self.stages {
            crate::interrupt::check_now()?;
            docs = match stage {
                Stage::Facet(facets) => stages::run_facet(facets, docs, foreign)?,
                Stage::Lookup(lookup) => stages::run_lookup(lookup, docs, foreign)?,
                Stage::UnionWith {
                    collection,
                    pipeline,
                } => {
                    let others = foreign.get(collection).cloned().unwrap_or_default();
                    let others = match pipeline {
                        Some(p) => p.run_with(others, foreign)?,
                        None => others,
                    };
                    docs.extend(others);
                    docs
                }
                other => run_stage(other, docs)?,
            };
        }
        Ok(docs)
    }

    /// The other collections `$lookup`, `$unionWith` (also inside `$facet` and
    /// sub-pipelines) read, each once, in order of appearance.
    pub fn foreign_collections(&self) -> Vec<String> {
        let mut names = Vec::new();
        self.collect_foreign(&mut names);
        names
    }

    fn collect_foreign(&self, names: &mut Vec<String>) {
        let add = |name: &String, names: &mut Vec<String>| {
            if !names.contains(name) {
                names.push(name.clone());
            }
        };
        for stage in &self.stages {
            match stage {
                Stage::Lookup(lookup) => {
                    add(&lookup.from, names);
                    if let Some(p) = &lookup.pipeline {
                        p.collect_foreign(names);
                    } else if !lookup.pipeline_source.is_empty() {
                        // A correlated sub-pipeline: its stages with the variables as null.
                        let placeholders: Vec<(String, Bson)> = lookup
                            .variables
                            .iter()
                            .map(|(name, _)| (name.clone(), Bson::Null))
                            .collect();
                        let stages = crate::query::expr::substitute_variables(
                            &lookup.pipeline_source,
                            &placeholders,
                        );
                        if let Ok(p) = Pipeline::parse(&stages) {
                            p.collect_foreign(names);
                        }
                    }
                }
                Stage::UnionWith {
                    collection,
                    pipeline,
                } => {
                    add(collection, names);
                    if let Some(p) = pipeline {
                        p.collect_foreign(names);
                    }
                }
                Stage::Facet(facets) => {
                    for (_, p) in facets {
                        p.collect_foreign(names);
                    }
                }
                _ => {}
            }
        }
    }
}

fn parse_stage(stage: &Document, out: &mut Vec<Stage>) -> Result<(), QueryError> {
    if stage.len() != 1 {
        return Err(QueryError::location(
            40323,
            "A pipeline stage specification object must contain exactly one field.",
        ));
    }
    let Some((name, spec)) = stage.iter().next() else {
        return Ok(());
    };
    let parsed = match name.as_str() {
        "$match" => {
            let source = expect_document(name, spec, 15959)?;
            Stage::Match {
                filter: Filter::parse(source)?,
                source: source.clone(),
            }
        }
        "$group" => parse_group(expect_document(name, spec, 15947)?)?,
        "$sort" => {
            let d = expect_document(name, spec, 15973)?;
            if d.is_empty() {
                return Err(QueryError::location(
                    15976,
                    "$sort stage must have at least one sort key",
                ));
            }
            Stage::Sort(SortSpec::parse(d)?)
        }
        "$skip" => Stage::Skip(non_negative(spec, "$skip", 15956, true)?),
        "$limit" => Stage::Limit(non_negative(spec, "$limit", 15958, false)?),
        "$count" => Stage::Count(parse_count_field(spec)?),
        "$project" => {
            let d = expect_document(name, spec, 15969)?;
            if d.is_empty() {
                return Err(QueryError::location(
                    51272,
                    "$project specification must have at least one field",
                ));
            }
            Stage::Project(Projection::parse_aggregation(d)?)
        }
        "$unset" => {
            let fields: Vec<String> = match spec {
                Bson::String(s) => vec![s.clone()],
                Bson::Array(items) if !items.is_empty() => items
                    .iter()
                    .map(|i| match i {
                        Bson::String(s) => Ok(s.clone()),
                        _ => Err(QueryError::location(31120, "$unset specification must be a string or an array containing only string values")),
                    })
                    .collect::<Result<_, _>>()?,
                _ => return Err(QueryError::location(31002, "$unset specification must be a string or an array with at least one field")),
            };
            let mut spec = Document::new();
            for f in fields {
                spec.insert(f, 0);
            }
            Stage::Project(Projection::parse(&spec)?)
        }
        "$addFields" | "$set" => {
            let d = expect_document(name, spec, 40272)?;
            let mut fields = Vec::with_capacity(d.len());
            for (path, value) in d {
                if path.starts_with('$') {
                    return Err(QueryError::location(
                        16410,
                        format!("FieldPath field names may not start with '$'. ({path})"),
                    ));
                }
                add_field_specs(path, value, &mut fields)?;
            }
            Stage::AddFields(fields)
        }
        "$replaceRoot" => {
            let d = expect_document(name, spec, 40228)?;
            let root = d.get("newRoot").ok_or_else(|| {
                QueryError::location(40231, "no newRoot specified for the $replaceRoot stage")
            })?;
            Stage::ReplaceRoot(Expression::parse(root)?)
        }
        "$replaceWith" => Stage::ReplaceRoot(Expression::parse(spec)?),
        "$unwind" => parse_unwind(spec)?,
        "$sortByCount" => {
            let id = Expression::parse(spec)?;
            out.push(Stage::Group {
                id,
                accumulators: vec![AccumulatorSpec::parse(
                    "count",
                    &Bson::Document(bson::doc! {"$sum": 1}),
                )?],
            });
            Stage::Sort(SortSpec::parse(&bson::doc! {"count": -1})?)
        }
        "$facet" => Stage::Facet(stages::parse_facet(spec)?),
        "$bucket" => Stage::Bucket(Box::new(stages::parse_bucket(spec)?)),
        "$lookup" => Stage::Lookup(Box::new(stages::parse_lookup(spec)?)),
        "$unionWith" => {
            let (collection, pipeline) = stages::parse_union_with(spec)?;
            Stage::UnionWith {
                collection,
                pipeline,
            }
        }
        "$sample" => {
            let size = match spec {
                Bson::Document(d) => d.get("size"),
                _ => None,
            };
            match size
                .and_then(Number::from_bson)
                .and_then(Number::to_exact_i64)
            {
                Some(n) if n >= 0 => Stage::Sample(n as u64),
                _ => {
                    return Err(QueryError::location(
                        28747,
                        "size argument to $sample must be a non-negative number",
                    ))
                }
            }
        }
        "$graphLookup" | "$out" | "$merge" | "$geoNear" | "$search" | "$bucketAuto"
        | "$collStats" | "$indexStats" | "$currentOp" | "$listSessions" | "$redact"
        | "$setWindowFields" | "$densify" | "$fill" | "$documents" | "$changeStream" => {
            return Err(QueryError::not_supported(format!(
                "the {name} stage is not supported by docgate"
            )))
        }
        other => {
            return Err(QueryError::location(
                40324,
                format!("Unrecognized pipeline stage name: '{other}'"),
            ))
        }
    };
    out.push(parsed);
    Ok(())
}

/// `$addFields` specs: a nested document that is not an expression sets sub-fields
/// (`{specs: {fuel: "x"}}` is `{"specs.fuel": "x"}`, keeping the other fields of `specs`);
/// an empty document is the literal `{}`.
fn add_field_specs(
    path: &str,
    value: &Bson,
    fields: &mut Vec<(String, Expression)>,
) -> Result<(), QueryError> {
    match value {
        Bson::Document(d) if !d.is_empty() && !crate::query::filter::is_operator_document(d) => {
            for (name, inner) in d {
                add_field_specs(&format!("{path}.{name}"), inner, fields)?;
            }
            Ok(())
        }
        other => {
            fields.push((path.to_string(), Expression::parse(other)?));
            Ok(())
        }
    }
}

fn expect_document<'a>(name: &str, spec: &'a Bson, code: i32) -> Result<&'a Document, QueryError> {
    match spec {
        Bson::Document(d) => Ok(d),
        _ => Err(QueryError::location(
            code,
            format!("the {name} stage specification must be an object"),
        )),
    }
}

fn non_negative(spec: &Bson, name: &str, code: i32, zero_ok: bool) -> Result<u64, QueryError> {
    let n = Number::from_bson(spec)
        .and_then(Number::to_exact_i64)
        .ok_or_else(|| {
            QueryError::location(
                code,
                format!("invalid argument to {name} stage: Expected an integer: {name}: {spec}"),
            )
        })?;
    if n < 0 || (n == 0 && !zero_ok) {
        return Err(QueryError::location(
            code,
            if zero_ok {
                format!("invalid argument to {name} stage: Expected a non-negative number in: {name}: {n}")
            } else {
                format!("invalid argument to {name} stage: the limit must be positive")
            },
        ));
    }
    Ok(n as u64)
}

fn parse_count_field(spec: &Bson) -> Result<String, QueryError> {
    let Bson::String(field) = spec else {
        return Err(QueryError::location(
            40156,
            "the count field must be a non-empty string",
        ));
    };
    if field.is_empty() {
        return Err(QueryError::location(
            40157,
            "the count field must be a non-empty string",
        ));
    }
    if field.starts_with('$') {
        return Err(QueryError::location(
            40158,
            "the count field cannot be a $-prefixed path",
        ));
    }
    if field.contains('.') {
        return Err(QueryError::location(
            40160,
            "the count field cannot contain '.'",
        ));
    }
    Ok(field.clone())
}

fn parse_group(spec: &Document) -> Result<Stage, QueryError> {
    let id_spec = spec
        .get("_id")
        .ok_or_else(|| QueryError::location(15955, "a group specification must include an _id"))?;
    let id = Expression::parse(id_spec)?;
    let mut accumulators = Vec::new();
    for (field, value) in spec {
        if field == "_id" {
            continue;
        }
        if field.contains('.') {
            return Err(QueryError::location(
                40235,
                format!("The field name '{field}' cannot contain '.'"),
            ));
        }
        if field.starts_with('$') {
            return Err(QueryError::location(
                40236,
                format!("The field name '{field}' cannot be an operator name"),
            ));
        }
        accumulators.push(AccumulatorSpec::parse(field, value)?);
    }
    Ok(Stage::Group { id, accumulators })
}

fn parse_unwind(spec: &Bson) -> Result<Stage, QueryError> {
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

fn run_stage(stage: &Stage, docs: Vec<Document>) -> Result<Vec<Document>, QueryError> {
    Ok(match stage {
        Stage::Match { filter, .. } => {
            let mut kept = Vec::new();
            for d in docs {
                crate::interrupt::check()?;
                if filter.matches(&d) {
                    kept.push(d);
                }
            }
            kept
        }
        Stage::Group { id, accumulators } => group(id, accumulators, docs)?,
        Stage::Sort(spec) => {
            let mut docs = docs;
            spec.sort(&mut docs);
            docs
        }
        Stage::Skip(n) => docs.into_iter().skip(usize::try_from(*n).unwrap_or(usize::MAX)).collect(),
        Stage::Limit(n) => docs.into_iter().take(usize::try_from(*n).unwrap_or(usize::MAX)).collect(),
        Stage::Count(field) => {
            if docs.is_empty() {
                Vec::new()
            } else {
                let count = docs.len() as i64;
                let value = i32::try_from(count).map(Bson::Int32).unwrap_or(Bson::Int64(count));
                let mut d = Document::new();
                d.insert(field.clone(), value);
                vec![d]
            }
        }
        Stage::Project(projection) => docs
            .iter()
            .map(|d| projection.apply(d))
            .collect::<Result<_, _>>()?,
        Stage::AddFields(fields) => docs
            .into_iter()
            .map(|d| add_fields(fields, d))
            .collect::<Result<_, _>>()?,
        Stage::ReplaceRoot(expr) => docs
            .iter()
            .map(|d| match expr.evaluate_optional(d)? {
                Some(Bson::Document(new_root)) => Ok(new_root),
                other => Err(QueryError::location(
                    40228,
                    format!(
                        "'replacement document' must evaluate to an object, but resulting value was: {}. Type of resulting value: '{}'.",
                        other.as_ref().map(|v| v.to_string()).unwrap_or_else(|| "MISSING".to_string()),
                        crate::query::expr::ops::type_name(other.as_ref())
                    ),
                )),
            })
            .collect::<Result<_, _>>()?,
        Stage::Bucket(bucket) => stages::run_bucket(bucket, docs)?,
        Stage::Sample(size) => stages::run_sample(*size, docs),
        Stage::Facet(_) | Stage::Lookup(_) | Stage::UnionWith { .. } => {
            Pipeline { stages: vec![stage.clone()] }.run_with(docs, &ForeignDocuments::new())?
        }
        Stage::Unwind { path, index_field, preserve_empty } => {
            let mut out = Vec::new();
            for d in docs {
                crate::interrupt::check_now()?;
                unwind(d, path, index_field.as_deref(), *preserve_empty, &mut out);
            }
            out
        }
    })
}

fn group(
    id: &Expression,
    accumulators: &[AccumulatorSpec],
    docs: Vec<Document>,
) -> Result<Vec<Document>, QueryError> {
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut groups: Vec<(Bson, Vec<AccumulatorState>)> = Vec::new();
    for doc in &docs {
        crate::interrupt::check()?;
        let key = id.evaluate(doc)?;
        let encoded = encode_key(&key);
        let slot = match index.get(&encoded) {
            Some(i) => *i,
            None => {
                groups.push((
                    key,
                    accumulators
                        .iter()
                        .map(|a| AccumulatorState::new(a.kind))
                        .collect(),
                ));
                index.insert(encoded, groups.len() - 1);
                groups.len() - 1
            }
        };
        if let Some((_, states)) = groups.get_mut(slot) {
            feed(accumulators, states, doc)?;
        }
    }
    Ok(groups
        .into_iter()
        .map(|(key, states)| {
            let mut out = Document::new();
            out.insert("_id", key);
            for (spec, state) in accumulators.iter().zip(states) {
                out.insert(spec.field.clone(), state.finish());
            }
            out
        })
        .collect())
}

fn add_fields(fields: &[(String, Expression)], doc: Document) -> Result<Document, QueryError> {
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
fn set_dotted(doc: &mut Document, path: &str, value: Option<Bson>) {
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
