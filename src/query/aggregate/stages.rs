//! The pipeline stages that combine or fan out: `$facet`, `$bucket`, `$sample`, and the
//! stages that read other collections, `$lookup` (equality form, and uncorrelated
//! `pipeline` form) and `$unionWith`, which take those collections' documents from the
//! caller (see [`crate::query::aggregate::Pipeline::foreign_collections`]).
//!
//! Not for: the single-collection stages (`aggregate/mod.rs`), correlated `$lookup` with `let`
//! (rejected as unsupported) or `$graphLookup` (`graph_lookup.rs`).

use crate::query::aggregate::accumulators::AccumulatorSpec;
use crate::query::aggregate::Grouping;
use crate::query::aggregate::Pipeline;
use crate::query::error::QueryError;
use crate::query::expr::Expression;
use crate::query::value::collation::Collation;
use crate::query::value::compare::compare_values;
use crate::query::value::path::candidates;
use bson::{Bson, Document};
use std::collections::HashMap;

/// Documents of other collections, by name, for `$lookup`, `$unionWith` and
/// `$graphLookup`, read once per command. A `$graphLookup`'s search over one of them (its
/// `restrictSearchWithMatch` applied, its `connectToField` values taken) and an equality
/// `$lookup`'s index of one by its `foreignField` ([`JoinIndex`]) are prepared once and
/// shared by every call that runs the stage — one per document when the pipeline streams;
/// changing the documents forgets them.
#[derive(Debug, Default)]
pub struct ForeignDocuments {
    collections: HashMap<String, Vec<Document>>,
    searches: std::sync::Mutex<HashMap<String, std::sync::Arc<super::graph_lookup::Search>>>,
    joins: std::sync::Mutex<HashMap<(String, String), BuiltJoin>>,
    /// What an uncorrelated `$lookup` sub-pipeline made, by collection and pipeline.
    uncorrelated: std::sync::Mutex<HashMap<(String, String), RanOnce>>,
}

/// An uncorrelated `$lookup`'s result, with the collation it ran under.
type RanOnce = (Collation, std::sync::Arc<Vec<Document>>);

/// A [`JoinIndex`] by collection and field, with the collation its keys were made under.
type BuiltJoin = (Collation, std::sync::Arc<JoinIndex>);

/// The documents of a collection an equality `$lookup` reads, by the values at its
/// `foreignField`: each value's key ([`join_key`]) to the positions of the documents that
/// have it, ascending. A document matches once per value it has, so its position is listed
/// once per key.
#[derive(Debug, Default)]
pub struct JoinIndex {
    positions: HashMap<Vec<u8>, Vec<usize>>,
}

/// The key of a value `$lookup` compares: equal keys exactly when the values are equal
/// under the installed collation (1, 1.0 and NumberLong(1) share one; strings by the
/// collator's sort key).
fn join_key(value: &Bson) -> Vec<u8> {
    crate::query::value::keys::encode_key(&crate::query::value::collation::equality_image(value))
}

impl JoinIndex {
    /// `documents` by the values at `field` (as `$lookup` takes them: array elements and
    /// the array itself, null when missing).
    fn build(documents: &[Document], field: &str) -> Result<JoinIndex, QueryError> {
        let mut positions: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
        for (position, document) in documents.iter().enumerate() {
            if position % 1024 == 0 {
                crate::interrupt::check()?;
            }
            let mut keys: Vec<Vec<u8>> =
                lookup_keys(document, field).iter().map(join_key).collect();
            keys.sort_unstable();
            keys.dedup();
            for key in keys {
                positions.entry(key).or_default().push(position);
            }
        }
        Ok(JoinIndex { positions })
    }

    /// The positions of the documents with a value equal to one of `values`, ascending.
    fn matching(&self, values: &[Bson]) -> Vec<usize> {
        let mut found: Vec<usize> = values
            .iter()
            .filter_map(|value| self.positions.get(&join_key(value)))
            .flatten()
            .copied()
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }
}

impl ForeignDocuments {
    /// No other collection.
    pub fn new() -> ForeignDocuments {
        ForeignDocuments::default()
    }

    /// What the uncorrelated sub-pipeline of `lookup` (no `localField`, no `let`) makes over
    /// its collection under the installed collation: the same for every document, so run
    /// once per command by `run`, as MongoDB caches it.
    fn uncorrelated(
        &self,
        lookup: &Lookup,
        run: impl FnOnce() -> Result<Vec<Document>, QueryError>,
    ) -> Result<std::sync::Arc<Vec<Document>>, QueryError> {
        let key = (lookup.from.clone(), format!("{:?}", lookup.pipeline_source));
        let collation = Collation::installed();
        let lock = || {
            self.uncorrelated
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some((ran_under, made)) = lock().get(&key) {
            if *ran_under == collation {
                return Ok(std::sync::Arc::clone(made));
            }
        }
        // Run without the lock: the sub-pipeline may hold `$lookup`s of its own.
        let made = std::sync::Arc::new(run()?);
        lock().insert(key, (collation, std::sync::Arc::clone(&made)));
        Ok(made)
    }

    /// The [`JoinIndex`] of collection `from` by `field` under the installed collation,
    /// built on first use.
    fn join(&self, from: &str, field: &str) -> Result<std::sync::Arc<JoinIndex>, QueryError> {
        let key = (from.to_string(), field.to_string());
        let collation = Collation::installed();
        let mut joins = self
            .joins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((built_under, join)) = joins.get(&key) {
            if *built_under == collation {
                return Ok(std::sync::Arc::clone(join));
            }
        }
        let documents = self.collections.get(from).map_or(&[][..], Vec::as_slice);
        let join = std::sync::Arc::new(JoinIndex::build(documents, field)?);
        joins.insert(key, (collation, std::sync::Arc::clone(&join)));
        Ok(join)
    }

    /// The search `key` names, prepared by `prepare` on first use.
    pub(super) fn search(
        &self,
        key: &str,
        prepare: impl FnOnce() -> Result<super::graph_lookup::Search, QueryError>,
    ) -> Result<std::sync::Arc<super::graph_lookup::Search>, QueryError> {
        let mut searches = self
            .searches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(search) = searches.get(key) {
            return Ok(std::sync::Arc::clone(search));
        }
        let search = std::sync::Arc::new(prepare()?);
        searches.insert(key.to_string(), std::sync::Arc::clone(&search));
        Ok(search)
    }
}

impl std::ops::Deref for ForeignDocuments {
    type Target = HashMap<String, Vec<Document>>;

    fn deref(&self) -> &Self::Target {
        &self.collections
    }
}

impl std::ops::DerefMut for ForeignDocuments {
    fn deref_mut(&mut self) -> &mut Self::Target {
        // The documents may change: prepared searches over them no longer hold.
        self.searches
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.joins
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.uncorrelated
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        &mut self.collections
    }
}

/// The `output` of `$bucket` and `$bucketAuto`: its accumulators, `{count: {$sum: 1}}` when
/// absent; None when it is not an object (each stage has its own error for that).
pub(crate) fn bucket_output(
    output: Option<&Bson>,
) -> Result<Option<Vec<AccumulatorSpec>>, QueryError> {
    Ok(match output {
        None => Some(vec![AccumulatorSpec::parse(
            "count",
            &Bson::Document(bson::doc! {"$sum": 1}),
        )?]),
        Some(Bson::Document(o)) => Some(
            o.iter()
                .map(|(field, accumulator)| AccumulatorSpec::parse(field, accumulator))
                .collect::<Result<_, _>>()?,
        ),
        Some(_) => None,
    })
}

/// `$lookup`.
#[derive(Clone, Debug, PartialEq)]
pub struct Lookup {
    /// Foreign collection.
    pub from: String,
    /// `localField` / `foreignField`, when given.
    pub fields: Option<(String, String)>,
    /// Sub-pipeline run over the (matching) foreign documents.
    pub pipeline: Option<Pipeline>,
    /// `let` variables, evaluated against each input document.
    pub variables: Vec<(String, Expression)>,
    /// The command's `let` variables where the stage was parsed (the sub-pipeline sees them).
    pub command_variables: Vec<(String, Bson)>,
    /// The sub-pipeline as given, re-parsed per input document when it uses `let` variables.
    pub pipeline_source: Vec<Document>,
    /// Output array field.
    pub as_field: String,
}

/// `$bucket`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    /// `groupBy` expression.
    pub group_by: Expression,
    /// Sorted boundaries (at least two).
    pub boundaries: Vec<Bson>,
    /// `default` bucket id for values outside the boundaries.
    pub default: Option<Bson>,
    /// Output accumulators (`count: {$sum: 1}` when not given).
    pub output: Vec<AccumulatorSpec>,
}

fn field_string(d: &Document, field: &str, stage: &str, code: i32) -> Result<String, QueryError> {
    match d.get(field) {
        Some(Bson::String(s)) => Ok(s.clone()),
        _ => Err(QueryError::location(
            code,
            format!("{stage} requires '{field}' to be a string"),
        )),
    }
}

fn sub_pipeline(v: Option<&Bson>) -> Result<Option<Pipeline>, QueryError> {
    match v {
        None => Ok(None),
        Some(Bson::Array(stages)) => {
            let mut docs = Vec::with_capacity(stages.len());
            for s in stages {
                match s {
                    Bson::Document(d) => docs.push(d.clone()),
                    _ => {
                        return Err(QueryError::failed_to_parse(
                            "pipeline stages must be objects",
                        ))
                    }
                }
            }
            Ok(Some(Pipeline::parse(&docs)?))
        }
        Some(_) => Err(QueryError::failed_to_parse("'pipeline' must be an array")),
    }
}

/// Parses `$lookup`.
pub fn parse_lookup(spec: &Bson) -> Result<Lookup, QueryError> {
    let Bson::Document(d) = spec else {
        return Err(QueryError::failed_to_parse(
            "the $lookup stage specification must be an object",
        ));
    };
    for key in d.keys() {
        if !matches!(
            key.as_str(),
            "from" | "localField" | "foreignField" | "as" | "pipeline" | "let"
        ) {
            return Err(QueryError::failed_to_parse(format!(
                "unknown argument to $lookup: {key}"
            )));
        }
    }
    let variables = match d.get("let") {
        None => Vec::new(),
        Some(Bson::Document(vars)) => vars
            .iter()
            .map(|(name, value)| Ok((name.clone(), Expression::parse(value)?)))
            .collect::<Result<_, QueryError>>()?,
        Some(_) => {
            return Err(QueryError::failed_to_parse(
                "$lookup argument 'let' must be an object",
            ))
        }
    };
    let pipeline_source: Vec<Document> = match d.get("pipeline") {
        Some(Bson::Array(stages)) => stages
            .iter()
            .filter_map(|s| match s {
                Bson::Document(stage) => Some(stage.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    // The command's `let` variables, for a correlated sub-pipeline parsed again later.
    let command_variables = crate::query::expr::visible_constants();
    if !variables.is_empty() {
        // Check the pipeline parses with the variables in place.
        let placeholders: Vec<(String, Bson)> = variables
            .iter()
            .map(|(name, _)| (name.clone(), Bson::Null))
            .collect();
        crate::query::expr::parse_with_variables(&placeholders, || {
            Pipeline::parse(&pipeline_source)
        })?;
    }
    let fields = match (d.contains_key("localField"), d.contains_key("foreignField")) {
        (true, true) => Some((
            field_string(d, "localField", "$lookup", 4570)?,
            field_string(d, "foreignField", "$lookup", 4570)?,
        )),
        (false, false) => None,
        _ => return Err(QueryError::failed_to_parse(
            "$lookup requires both or neither of 'localField' and 'foreignField' to be specified",
        )),
    };
    let pipeline = if variables.is_empty() {
        sub_pipeline(d.get("pipeline"))?
    } else {
        None
    };
    if fields.is_none() && pipeline.is_none() && pipeline_source.is_empty() {
        return Err(QueryError::failed_to_parse(
            "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified",
        ));
    }
    Ok(Lookup {
        from: field_string(d, "from", "$lookup", 40321)?,
        fields,
        pipeline,
        variables,
        command_variables,
        pipeline_source,
        as_field: field_string(d, "as", "$lookup", 40321)?,
    })
}

/// Parses `$unionWith` (`"coll"` or `{coll, pipeline}`).
pub fn parse_union_with(spec: &Bson) -> Result<(String, Option<Pipeline>), QueryError> {
    match spec {
        Bson::String(coll) => Ok((coll.clone(), None)),
        Bson::Document(d) => Ok((
            field_string(d, "coll", "$unionWith", 40602)?,
            sub_pipeline(d.get("pipeline"))?,
        )),
        _ => Err(QueryError::failed_to_parse(
            "the $unionWith stage specification must be an object or string",
        )),
    }
}

/// Parses `$facet`.
pub fn parse_facet(spec: &Bson) -> Result<Vec<(String, Pipeline)>, QueryError> {
    let Bson::Document(d) = spec else {
        return Err(QueryError::location(
            15947,
            "the $facet specification must be an object",
        ));
    };
    if d.is_empty() {
        return Err(QueryError::location(
            40169,
            "the $facet specification must be a non-empty object",
        ));
    }
    let mut facets = Vec::with_capacity(d.len());
    for (name, stages) in d {
        let pipeline = sub_pipeline(Some(stages))?.unwrap_or(Pipeline { stages: Vec::new() });
        facets.push((name.clone(), pipeline));
    }
    Ok(facets)
}

/// Parses `$bucket`.
pub fn parse_bucket(spec: &Bson) -> Result<Bucket, QueryError> {
    let Bson::Document(d) = spec else {
        return Err(QueryError::location(
            40201,
            "Argument to $bucket stage must be an object",
        ));
    };
    let group_by = Expression::parse(d.get("groupBy").ok_or_else(|| {
        QueryError::location(
            40198,
            "$bucket requires 'groupBy' and 'boundaries' to be specified",
        )
    })?)?;
    let Some(Bson::Array(boundaries)) = d.get("boundaries") else {
        return Err(QueryError::location(
            40200,
            "The $bucket 'boundaries' field must be an array",
        ));
    };
    if boundaries.len() < 2 {
        return Err(QueryError::location(
            40192,
            "The $bucket 'boundaries' field must have at least 2 values",
        ));
    }
    if boundaries
        .windows(2)
        .any(|w| compare_values(&w[0], &w[1]) != std::cmp::Ordering::Less)
    {
        return Err(QueryError::location(
            40194,
            "The 'boundaries' option to $bucket must be sorted in ascending order",
        ));
    }
    let default = d.get("default").cloned();
    if let Some(dflt) = &default {
        let inside = compare_values(dflt, &boundaries[0]) != std::cmp::Ordering::Less
            && compare_values(dflt, &boundaries[boundaries.len() - 1]) == std::cmp::Ordering::Less;
        if inside {
            return Err(QueryError::location(40199, "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary"));
        }
    }
    let output = match bucket_output(d.get("output"))? {
        Some(output) => output,
        None => {
            return Err(QueryError::location(
                40196,
                "The $bucket 'output' field must be an object",
            ))
        }
    };
    Ok(Bucket {
        group_by,
        boundaries: boundaries.clone(),
        default,
        output,
    })
}

/// Runs `$bucket` over `docs`.
pub fn run_bucket(bucket: &Bucket, docs: Vec<Document>) -> Result<Vec<Document>, QueryError> {
    let mut buckets = BucketGrouping::new(bucket.clone());
    for doc in &docs {
        buckets.feed(doc)?;
    }
    buckets.finish()
}

/// A `$bucket` fed one document at a time: grouped by boundary like a `$group` (within the
/// memory limit, spilling past it).
pub struct BucketGrouping {
    bucket: Bucket,
    grouping: Grouping,
}

impl BucketGrouping {
    /// An empty `bucket`.
    pub fn new(bucket: Bucket) -> BucketGrouping {
        BucketGrouping {
            grouping: Grouping::keyed(bucket.output.clone()),
            bucket,
        }
    }

    /// Adds `doc` to its bucket: 40066 when it falls outside the boundaries and there is no
    /// `default`.
    pub fn feed(&mut self, doc: &Document) -> Result<(), QueryError> {
        crate::interrupt::check()?;
        let bucket = &self.bucket;
        let value = bucket.group_by.evaluate(doc)?;
        let slot = bucket.boundaries.windows(2).position(|w| {
            compare_values(&value, &w[0]) != std::cmp::Ordering::Less
                && compare_values(&value, &w[1]) == std::cmp::Ordering::Less
        });
        let id = match (slot, &bucket.default) {
            (Some(i), _) => bucket.boundaries[i].clone(),
            (None, Some(d)) => d.clone(),
            (None, None) => {
                return Err(QueryError::location(
                    40066,
                    format!("$switch could not find a matching branch for an input, and no default was specified. (value {value} is outside the $bucket boundaries)"),
                ))
            }
        };
        self.grouping.feed_keyed(id, doc)
    }

    /// The buckets in boundary order.
    pub fn finish(self) -> Result<Vec<Document>, QueryError> {
        let mut groups = self.grouping.finish()?;
        groups.sort_by(|a, b| {
            compare_values(
                a.get("_id").unwrap_or(&Bson::Null),
                b.get("_id").unwrap_or(&Bson::Null),
            )
        });
        Ok(groups)
    }
}

/// Runs `$lookup`: each input document gets the matching foreign documents as an array, in
/// their collection's order. An equality match is a hash join: the foreign collection is
/// indexed by `foreignField` once per command ([`JoinIndex`]), not scanned per document; an
/// uncorrelated sub-pipeline runs once per command.
pub fn run_lookup(
    lookup: &Lookup,
    docs: Vec<Document>,
    foreign: &ForeignDocuments,
) -> Result<Vec<Document>, QueryError> {
    let empty = Vec::new();
    let others = foreign.get(&lookup.from).unwrap_or(&empty);
    let join = match &lookup.fields {
        Some((_, foreign_field)) => Some(foreign.join(&lookup.from, foreign_field)?),
        None => None,
    };
    let uncorrelated = match (&lookup.fields, &lookup.pipeline) {
        (None, Some(pipeline)) => {
            Some(foreign.uncorrelated(lookup, || pipeline.run_with(others.clone(), foreign))?)
        }
        _ => None,
    };
    let mut out = Vec::with_capacity(docs.len());
    for mut doc in docs {
        let matched: Vec<Document> = match (&uncorrelated, &lookup.fields, &join) {
            (Some(made), _, _) => made.as_ref().clone(),
            (None, Some((local, _)), Some(join)) => {
                let keys = lookup_keys(&doc, local);
                let found = join.matching(&keys).into_iter();
                let matched = found.filter_map(|at| others.get(at).cloned()).collect();
                correlated(lookup, &doc, matched, foreign)?
            }
            (None, _, _) => correlated(lookup, &doc, others.clone(), foreign)?,
        };
        doc.insert(
            lookup.as_field.clone(),
            Bson::Array(matched.into_iter().map(Bson::Document).collect()),
        );
        out.push(doc);
    }
    Ok(out)
}

/// The sub-pipeline of a `$lookup` (if any) run for `doc` over the foreign documents
/// `matched`, with its `let` variables bound to what they evaluate to on `doc`.
fn correlated(
    lookup: &Lookup,
    doc: &Document,
    matched: Vec<Document>,
    foreign: &ForeignDocuments,
) -> Result<Vec<Document>, QueryError> {
    if let Some(pipeline) = &lookup.pipeline {
        return pipeline.run_with(matched, foreign);
    }
    if lookup.variables.is_empty() {
        return Ok(matched);
    }
    let mut bound = lookup.command_variables.clone();
    for (name, expression) in &lookup.variables {
        bound.push((name.clone(), expression.evaluate(doc)?));
    }
    let pipeline = crate::query::expr::parse_with_variables(&bound, || {
        Pipeline::parse(&lookup.pipeline_source)
    })?;
    pipeline.run_with(matched, foreign)
}

/// The values `$lookup` compares at a path: array elements (and the array itself), null for
/// a missing field.
fn lookup_keys(doc: &Document, path: &str) -> Vec<Bson> {
    let mut keys: Vec<Bson> = candidates(doc, path)
        .into_iter()
        .map(|c| c.value.cloned().unwrap_or(Bson::Null))
        .collect();
    if keys.is_empty() {
        keys.push(Bson::Null);
    }
    keys
}

/// Runs `$facet`: one document with each facet's results.
pub fn run_facet(
    facets: &[(String, Pipeline)],
    docs: Vec<Document>,
    foreign: &ForeignDocuments,
) -> Result<Vec<Document>, QueryError> {
    let mut out = Document::new();
    for (name, pipeline) in facets {
        let results = pipeline.run_with(docs.clone(), foreign)?;
        out.insert(
            name.clone(),
            Bson::Array(results.into_iter().map(Bson::Document).collect()),
        );
    }
    crate::query::memory::check_facet_output(crate::query::memory::document_size(&out))?;
    Ok(vec![out])
}

/// Runs `$sample`: `size` documents chosen at random (all of them, shuffled, if fewer).
pub fn run_sample(size: u64, mut docs: Vec<Document>) -> Vec<Document> {
    let mut state = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x9e37_79b9)
        | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in (1..docs.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        docs.swap(i, j);
    }
    docs.truncate(usize::try_from(size).unwrap_or(usize::MAX));
    docs
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn lookup_facet_bucket_union() {
        let orders = vec![
            doc! {"_id": 1, "item": "a"},
            doc! {"_id": 2, "item": ["b", "c"]},
            doc! {"_id": 3},
        ];
        let mut foreign = ForeignDocuments::new();
        foreign.insert(
            "inventory".into(),
            vec![
                doc! {"sku": "a", "n": 1},
                doc! {"sku": "c", "n": 2},
                doc! {"n": 3},
            ],
        );
        let p = Pipeline::parse(&[doc! {"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku", "as": "inv"}}, doc! {"$project": {"inv.n": 1}}]).unwrap();
        assert_eq!(p.foreign_collections(), vec!["inventory".to_string()]);
        let out = p.run_with(orders.clone(), &foreign).unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": 1, "inv": [{"n": 1}]},
                doc! {"_id": 2, "inv": [{"n": 2}]},
                doc! {"_id": 3, "inv": [{"n": 3}]},
            ]
        );
        let p = Pipeline::parse(&[doc! {"$lookup": {
            "from": "inventory",
            "let": {"wanted": "$item"},
            "pipeline": [
                {"$match": {"$expr": {"$in": ["$sku", {"$ifNull": [{"$concatArrays": [["$$wanted"]]}, []]}]}}},
                {"$project": {"_id": 0, "n": 1}}
            ],
            "as": "inv"
        }}])
        .unwrap();
        let out = p.run_with(orders.clone(), &foreign).unwrap();
        assert_eq!(
            out[0].get_array("inv").unwrap(),
            &vec![Bson::Document(doc! {"n": 1})]
        );
        assert!(out[2].get_array("inv").unwrap().is_empty());
        let p = Pipeline::parse(&[doc! {"$facet": {"count": [{"$count": "n"}], "first": [{"$limit": 1}, {"$project": {"_id": 1}}]}}]).unwrap();
        assert_eq!(
            p.run(orders.clone()).unwrap(),
            vec![doc! {"count": [{"n": 3}], "first": [{"_id": 1}]}]
        );
        let p = Pipeline::parse(&[
            doc! {"$bucket": {"groupBy": "$_id", "boundaries": [0, 2, 10], "default": "other"}},
        ])
        .unwrap();
        assert_eq!(
            p.run(orders.clone()).unwrap(),
            vec![doc! {"_id": 0, "count": 1}, doc! {"_id": 2, "count": 2}]
        );
        let p = Pipeline::parse(&[
            doc! {"$unionWith": {"coll": "inventory", "pipeline": [{"$match": {"n": {"$gt": 2}}}]}},
            doc! {"$count": "n"},
        ])
        .unwrap();
        assert_eq!(
            p.run_with(orders.clone(), &foreign).unwrap(),
            vec![doc! {"n": 4}]
        );
        let p = Pipeline::parse(&[doc! {"$sample": {"size": 2}}]).unwrap();
        assert_eq!(p.run(orders).unwrap().len(), 2);
    }
}

#[cfg(test)]
mod join_tests {
    use super::*;
    use bson::doc;

    /// The `_id`s each output document's `m` array holds.
    fn ids(out: &[Document]) -> Vec<Vec<i32>> {
        out.iter()
            .map(|d| {
                let m = d.get_array("m").unwrap();
                m.iter()
                    .map(|x| x.as_document().unwrap().get_i32("_id").unwrap())
                    .collect()
            })
            .collect()
    }

    /// The equality `$lookup` as MongoDB matches: numbers of any type by value, array
    /// elements, missing as null, strings under the collation; matches in the foreign
    /// collection's order, each once.
    #[test]
    fn lookup_joins_by_equal_values_in_collection_order() {
        let mut foreign = ForeignDocuments::new();
        foreign.insert(
            "items".into(),
            vec![
                doc! {"_id": 0, "k": 1.0},
                doc! {"_id": 1, "k": [2, 1]},
                doc! {"_id": 2, "k": "Ada"},
                doc! {"_id": 3},
                doc! {"_id": 4, "k": Bson::Int64(2)},
                doc! {"_id": 5, "k": "ada"},
            ],
        );
        let stage =
            doc! {"$lookup": {"from": "items", "localField": "v", "foreignField": "k", "as": "m"}};
        let pipeline =
            Pipeline::parse(&[stage, doc! {"$project": {"m._id": 1, "_id": 0}}]).unwrap();
        let input = vec![
            doc! {"v": 1},
            doc! {"v": [2, 1]},
            doc! {"v": Bson::Null},
            doc! {"v": "ADA"},
            doc! {"v": [[2, 1]]},
        ];
        let simple = pipeline.run_with(input.clone(), &foreign).unwrap();
        let expected = vec![vec![0, 1], vec![0, 1, 4], vec![3], vec![], vec![1]];
        assert_eq!(ids(&simple), expected);
        let caseless = Collation::parse(&doc! {"locale": "en", "strength": 2}).unwrap();
        // The index built for the simple collation is not the one for this collation.
        let collated = caseless
            .install(|| pipeline.run_with(input, &foreign))
            .unwrap();
        assert_eq!(ids(&collated)[3], vec![2, 5], "ADA under strength 2");
    }

    /// A sub-pipeline with `localField`/`foreignField` and `let` runs per document over its
    /// matches with the variables bound; one with neither is the same for every document.
    #[test]
    fn lookup_sub_pipelines_correlated_and_not() {
        let mut foreign = ForeignDocuments::new();
        foreign.insert(
            "items".into(),
            (0..6)
                .map(|i| doc! {"_id": i, "k": i % 2, "w": i})
                .collect(),
        );
        let input = vec![doc! {"v": 0, "min": 3}, doc! {"v": 1, "min": 4}];
        let both = doc! {"$lookup": {"from": "items", "localField": "v", "foreignField": "k",
        "let": {"min": "$min"}, "pipeline": [{"$match": {"$expr": {"$gte": ["$w", "$$min"]}}}],
        "as": "m"}};
        let out = Pipeline::parse(&[both])
            .unwrap()
            .run_with(input.clone(), &foreign);
        assert_eq!(ids(&out.unwrap()), vec![vec![4], vec![5]]);
        let neither = doc! {"$lookup": {"from": "items",
        "pipeline": [{"$match": {"w": {"$gt": 3}}}], "as": "m"}};
        let out = Pipeline::parse(&[neither])
            .unwrap()
            .run_with(input, &foreign);
        assert_eq!(ids(&out.unwrap()), vec![vec![4, 5], vec![4, 5]]);
    }
}
