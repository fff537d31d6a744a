//! A small aggregation pipeline over documents in memory: the [`Stage`] list, parsing a
//! pipeline and running it, with MongoDB's stage errors (e.g. 40324 for an unknown stage).
//! $match, $sort, $skip, $limit, $count, $project, $unset, $replaceRoot/$replaceWith and
//! $sortByCount are here; $group is in `group.rs`, $addFields/$set and $unwind in
//! `reshape.rs`, $facet, $bucket, $sample, $lookup and $unionWith in `stages.rs`, the
//! accumulator specs in `accumulators.rs`.
//!
//! Which stages' output follows from their input's count alone is in `counted.rs`.
//!
//! $out and $merge are parsed in `output.rs` (the core writes their result), $documents and
//! $listLocalSessions of `aggregate: 1` in `collectionless.rs`. $setWindowFields is in
//! `window.rs` (its functions in `window_functions.rs`, its input past memory in
//! `window_stream.rs`), $densify and $fill in `densify_fill.rs` (a stream of them in
//! `densify_stream.rs`), $bucketAuto in `bucket_auto.rs`, $redact in `redact.rs`,
//! $graphLookup in `graph_lookup.rs`. A pipeline split into per-document segments around
//! its blocking stages, to stream, is a [`Chain`] (`chain.rs`).
//!
//! Not for: $geoNear and $search (rejected as unsupported) or pushdown decisions (the
//! planner reads [`Pipeline::leading_read`]).

pub mod accumulators;
pub mod bucket_auto;
mod chain;
pub mod collectionless;
pub mod counted;
pub mod densify_fill;
pub mod densify_stream;
pub mod graph_lookup;
mod group;
pub use group::Grouping;
pub mod output;
#[cfg(test)]
mod output_tests;
mod redact;
mod reshape;
pub mod sql_group;
pub mod stages;
#[cfg(test)]
mod tests;
pub mod window;
mod window_functions;
mod window_numbers;
pub mod window_stream;

use crate::query::error::QueryError;
use crate::query::expr::Expression;
use crate::query::filter::Filter;
use crate::query::projection::Projection;
use crate::query::sort::SortSpec;
use crate::query::value::number::Number;
use accumulators::AccumulatorSpec;
use bson::{Bson, Document};
pub use chain::{Chain, ChainStep};
use group::{group, parse_group};
use reshape::{add_fields, parse_unwind, unwind};
pub use stages::ForeignDocuments;

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
    /// `$out` or `$merge`: the last stage; the core writes what reaches it.
    Output(Box<output::OutputStage>),
    /// `$documents`: the first stage of `aggregate: 1`.
    Documents(Expression),
    /// `$listLocalSessions`: the first stage of `aggregate: 1`; the core supplies them.
    ListLocalSessions(collectionless::SessionListing),
    /// `$currentOp`: the first stage of `aggregate: 1` on `admin`; the front end supplies the
    /// operations.
    CurrentOp(collectionless::CurrentOpOptions),
    /// `$setWindowFields` (and the window part of `$fill`).
    SetWindowFields(Box<window::SetWindowFields>),
    /// `$densify`.
    Densify(Box<densify_fill::Densify>),
    /// `$bucketAuto`.
    BucketAuto(Box<bucket_auto::BucketAuto>),
    /// `$redact` with its expression.
    Redact(Expression),
    /// `$graphLookup`.
    GraphLookup(Box<graph_lookup::GraphLookup>),
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

/// The read a pipeline starts with ([`Pipeline::leading_read`]): filter, sort, skip and
/// limit as a `find` would take them, and how many stages they stand for.
#[derive(Clone, Debug, PartialEq)]
pub struct LeadingRead {
    /// The first `$match` (everything without one).
    pub filter: Filter,
    /// The `$sort` right after it.
    pub sort: Option<SortSpec>,
    /// The `$skip`s after those.
    pub skip: u64,
    /// The `$limit`s after those (`Some(0)`: nothing).
    pub limit: Option<u64>,
    /// How many leading stages this read stands for.
    pub stages: usize,
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
        output::check_not_nested(stages)?;
        let mut parsed = Vec::with_capacity(stages.len());
        for stage in stages {
            parse_stage(stage, &mut parsed)?;
        }
        let pipeline = Pipeline { stages: parsed };
        pipeline.check_positions()?;
        Ok(pipeline)
    }

    /// `$out`/`$merge` only last (40601), `$documents`/`$listLocalSessions` only first
    /// (40602), as MongoDB places them.
    fn check_positions(&self) -> Result<(), QueryError> {
        let last = self.stages.len().saturating_sub(1);
        for (position, stage) in self.stages.iter().enumerate() {
            match stage {
                Stage::Output(output) if position != last => {
                    return Err(QueryError::location(
                        40601,
                        format!(
                            "{} can only be the final stage in the pipeline",
                            output.name()
                        ),
                    ))
                }
                Stage::Documents(_) if position != 0 => {
                    return Err(QueryError::location(
                        40602,
                        "$documents is only valid as the first stage in a pipeline",
                    ))
                }
                Stage::ListLocalSessions(_) if position != 0 => {
                    return Err(QueryError::location(
                        40602,
                        "$listLocalSessions is only valid as the first stage in a pipeline",
                    ))
                }
                Stage::CurrentOp(_) if position != 0 => {
                    return Err(QueryError::location(
                        40602,
                        "$currentOp is only valid as the first stage in a pipeline",
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The `$out`/`$merge` the pipeline ends with, if any.
    pub fn output(&self) -> Option<&output::OutputStage> {
        match self.stages.last() {
            Some(Stage::Output(output)) => Some(output),
            _ => None,
        }
    }

    /// The pipeline without its first `skip_first` stages and without its `$out`/`$merge`:
    /// what runs in memory once the core has supplied the input and before it writes.
    pub fn inner(&self, skip_first: usize) -> Pipeline {
        let end = self.stages.len() - usize::from(self.output().is_some());
        Pipeline {
            stages: self
                .stages
                .get(skip_first.min(end)..end)
                .unwrap_or_default()
                .to_vec(),
        }
    }

    /// The filter of the leading `$match` stages, for pushdown: the first one's, or `$and`
    /// of them when several follow each other (as [`Pipeline::leading_read`] reads them).
    pub fn leading_match(&self) -> Option<Document> {
        let sources: Vec<&Document> = self
            .stages
            .iter()
            .map_while(|stage| match stage {
                Stage::Match { source, .. } => Some(source),
                _ => None,
            })
            .collect();
        match sources.as_slice() {
            [] => None,
            [one] => Some((*one).clone()),
            several => Some(bson::doc! {
                "$and": several.iter().map(|s| bson::Bson::Document((*s).clone())).collect::<Vec<_>>()
            }),
        }
    }

    /// The leading stages a store can run as one read of the collection, like a `find`:
    /// the leading `$match` stages, then a `$sort`, then any run of `$skip`/`$limit` (folded into one
    /// skip and limit, in order). The stages after them run in Rust ([`Pipeline::after`]).
    pub fn leading_read(&self) -> LeadingRead {
        let mut read = LeadingRead {
            filter: Filter::And(Vec::new()),
            sort: None,
            skip: 0,
            limit: None,
            stages: 0,
        };
        let mut stages = self.stages.iter().peekable();
        // Consecutive leading `$match` stages (a view's and then a read's) are one filter,
        // as MongoDB's optimizer coalesces them.
        let mut filters = Vec::new();
        while let Some(Stage::Match { filter, .. }) = stages.peek() {
            filters.push(filter.clone());
            read.stages += 1;
            stages.next();
        }
        match filters.len() {
            0 => {}
            1 => read.filter = filters.remove(0),
            _ => read.filter = Filter::And(filters),
        }
        if let Some(Stage::Sort(spec)) = stages.peek() {
            read.sort = Some(spec.clone());
            read.stages += 1;
            stages.next();
        }
        for stage in stages {
            match stage {
                Stage::Skip(n) => {
                    read.skip = read.skip.saturating_add(*n);
                    read.limit = read.limit.map(|limit| limit.saturating_sub(*n));
                }
                Stage::Limit(n) => read.limit = Some(read.limit.map_or(*n, |l| l.min(*n))),
                _ => break,
            }
            read.stages += 1;
        }
        read
    }

    /// Whether every stage looks at one document at a time, with no state across documents
    /// (`$match`, `$project`/`$unset`, `$set`/`$addFields`, `$replaceRoot`, `$unwind`,
    /// `$lookup`, `$graphLookup`, `$redact`), so the pipeline can run over a stream of
    /// documents chunk by chunk.
    pub fn is_per_document(&self) -> bool {
        self.stages.iter().all(|stage| {
            matches!(
                stage,
                Stage::Match { .. }
                    | Stage::Project(_)
                    | Stage::AddFields(_)
                    | Stage::ReplaceRoot(_)
                    | Stage::Unwind { .. }
                    | Stage::Lookup(_)
                    | Stage::GraphLookup(_)
                    | Stage::Redact(_)
            )
        })
    }

    /// The pipeline split at its first `$group` when every stage before it looks at one
    /// document at a time: those stages, a [`Grouping`] for the `$group`, and the stages
    /// after it. The `$group`'s input can then stream; it holds only its groups.
    pub fn split_at_group(&self) -> Option<(Pipeline, Grouping, Pipeline)> {
        let (before, stage, after) =
            self.split_at_first(|stage| matches!(stage, Stage::Group { .. }))?;
        let Stage::Group { id, accumulators } = stage else {
            return None;
        };
        Some((
            before,
            Grouping::new(id.clone(), accumulators.clone()),
            after,
        ))
    }

    /// The stages before the first one `is_split` picks, when they all look at one document
    /// at a time, that stage, and the stages after it.
    fn split_at_first(
        &self,
        is_split: impl Fn(&Stage) -> bool,
    ) -> Option<(Pipeline, &Stage, Pipeline)> {
        let at = self.stages.iter().position(is_split)?;
        let before = Pipeline {
            stages: self.stages[..at].to_vec(),
        };
        if !before.is_per_document() {
            return None;
        }
        Some((before, &self.stages[at], self.after(at + 1)))
    }

    /// The stages after the first `consumed` ones.
    pub fn after(&self, consumed: usize) -> Pipeline {
        Pipeline {
            stages: self.stages.get(consumed..).unwrap_or_default().to_vec(),
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
                Stage::GraphLookup(spec) => graph_lookup::run_graph_lookup(spec, docs, foreign)?,
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
                        let parsed =
                            crate::query::expr::parse_with_variables(&placeholders, || {
                                Pipeline::parse(&lookup.pipeline_source)
                            });
                        if let Ok(p) = parsed {
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
                Stage::GraphLookup(spec) => add(&spec.from, names),
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
        "$out" => Stage::Output(Box::new(output::parse_out(spec)?)),
        "$merge" => Stage::Output(Box::new(output::parse_merge(spec)?)),
        "$documents" => Stage::Documents(collectionless::parse_documents(spec)?),
        "$listLocalSessions" => {
            Stage::ListLocalSessions(collectionless::parse_list_local_sessions(spec)?)
        }
        "$currentOp" => Stage::CurrentOp(collectionless::parse_current_op(spec)?),
        "$setWindowFields" => {
            Stage::SetWindowFields(Box::new(window::parse_set_window_fields(spec)?))
        }
        "$densify" => Stage::Densify(Box::new(densify_fill::parse_densify(spec)?)),
        "$fill" => return densify_fill::parse_fill(spec, out),
        "$bucketAuto" => Stage::BucketAuto(Box::new(bucket_auto::parse_bucket_auto(spec)?)),
        "$redact" => Stage::Redact(Expression::parse(spec)?),
        "$graphLookup" => Stage::GraphLookup(Box::new(graph_lookup::parse_graph_lookup(spec)?)),
        // A leading `$collStats`, `$indexStats` or `$planCacheStats` is taken off by the
        // `aggregate` command before parsing.
        "$collStats" | "$indexStats" | "$planCacheStats" => {
            return Err(QueryError::location(
                40602,
                format!("{name} is only valid as the first stage in a pipeline"),
            ))
        }
        "$geoNear" | "$search" | "$listSessions" | "$changeStream" => {
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
        Stage::Group { id, accumulators } => {
            let groups = group(id, accumulators, docs)?;
            if crate::query::memory::limited() {
                crate::query::memory::check_group(crate::query::memory::documents_size(&groups))?;
            }
            groups
        }
        Stage::Sort(spec) => {
            if crate::query::memory::limited() {
                crate::query::memory::check_sort(crate::query::memory::documents_size(&docs))?;
            }
            // Past the limit (allowDiskUse not false): sorted runs on disk, merged back.
            crate::query::spill::sort_documents(spec, docs)?.0
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
        Stage::SetWindowFields(spec) => window::run_set_window_fields(spec, docs)?,
        Stage::Densify(spec) => densify_fill::run_densify(spec, docs)?,
        Stage::BucketAuto(spec) => bucket_auto::run_bucket_auto(spec, docs)?,
        Stage::Redact(expr) => redact::run_redact(expr, docs)?,
        Stage::Facet(_) | Stage::Lookup(_) | Stage::UnionWith { .. } | Stage::GraphLookup(_) => {
            Pipeline { stages: vec![stage.clone()] }.run_with(docs, &ForeignDocuments::new())?
        }
        Stage::Documents(expression) => collectionless::documents(expression)?,
        Stage::Output(_) | Stage::ListLocalSessions(_) | Stage::CurrentOp(_) => {
            // The core strips these (`Pipeline::inner`): it supplies the sessions and
            // operations and writes the output. Reaching one here means a caller ran the
            // pipeline as a plain read.
            return Err(QueryError::not_supported(
                "$out, $merge, $listLocalSessions and $currentOp run only through the aggregate command",
            ));
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
