//! An aggregation pipeline as a chain ([`Chain`]): per-document stages separated by
//! blocking stages, each of which can take its input as a stream and hand out its output as
//! one (`ops::chained_read` runs them). A `$facet` is a blocking stage whose sub-pipelines
//! are chains of their own.
//!
//! Not for: running the stages (`ops::chained_read`, the stages' own modules).

use super::{bucket_auto, densify_fill, stages, window, Grouping, Pipeline, Stage};
use crate::query::sort::SortSpec;

/// A pipeline as per-document stages separated by blocking stages ([`Pipeline::chain`]).
pub struct Chain {
    /// The per-document stages before the first blocking stage.
    pub first: Pipeline,
    /// Each blocking stage and the per-document stages after it.
    pub steps: Vec<(ChainStep, Pipeline)>,
}

/// A blocking stage of a [`Chain`].
pub enum ChainStep {
    /// `$sort`, then `skip` documents, then at most `limit` (the `$skip`s and `$limit`s
    /// right after it).
    Sort {
        /// The order.
        spec: SortSpec,
        /// Sorted documents dropped first.
        skip: u64,
        /// Sorted documents kept after those.
        limit: Option<u64>,
    },
    /// `$group`.
    Group(Box<Grouping>),
    /// `$setWindowFields`.
    Window(Box<window::SetWindowFields>),
    /// `$count` into the named field.
    Count(String),
    /// `$bucket`.
    Bucket(Box<stages::BucketGrouping>),
    /// `$bucketAuto`.
    BucketAuto(Box<bucket_auto::BucketAuto>),
    /// `$sample` of this many documents: a sort by a random key, keeping that many.
    Sample(u64),
    /// `$densify`: its input sorted by partition and field, the missing steps generated as
    /// the sorted documents are read back.
    Densify(Box<densify_fill::Densify>),
    /// `$facet`: each named sub-pipeline as a chain of its own (one without a blocking
    /// stage has no steps), all fed the same input.
    Facet(Vec<(String, Chain)>),
    /// `$unionWith`: the input as it comes, then the other collection's documents (through
    /// its pipeline).
    UnionWith {
        /// The other collection.
        collection: String,
        /// Stages applied to its documents first.
        pipeline: Option<Pipeline>,
    },
    /// `$skip`s and `$limit`s after a per-document stage: `skip` documents dropped, then at
    /// most `limit` kept (the input stops being read once they are).
    Slice {
        /// Documents dropped first.
        skip: u64,
        /// Documents kept after those.
        limit: Option<u64>,
    },
}

impl ChainStep {
    /// The stage it stands for, as `explain` names it.
    pub fn stage_name(&self) -> &'static str {
        match self {
            ChainStep::Sort { .. } => "$sort",
            ChainStep::Group(_) => "$group",
            ChainStep::Window(_) => "$setWindowFields",
            ChainStep::Count(_) => "$count",
            ChainStep::Bucket(_) => "$bucket",
            ChainStep::BucketAuto(_) => "$bucketAuto",
            ChainStep::Sample(_) => "$sample",
            ChainStep::Densify(_) => "$densify",
            ChainStep::Facet(_) => "$facet",
            ChainStep::UnionWith { .. } => "$unionWith",
            ChainStep::Slice { limit: Some(_), .. } => "$limit",
            ChainStep::Slice { limit: None, .. } => "$skip",
        }
    }
}

impl Pipeline {
    /// The pipeline as a chain ([`Chain`]): per-document stages, then blocking stages —
    /// `$sort` (with the `$skip`s and `$limit`s right after it), `$group`, `$bucket`,
    /// `$bucketAuto`, `$setWindowFields`, `$count`, `$sample`, `$densify`, `$unionWith`, or
    /// `$skip`s and `$limit`s after a per-document stage — each followed by per-document
    /// stages.
    /// Each blocking stage can then take its input as a stream and hand out its output as
    /// one, through temporary files past the memory limit. A `$facet` is a step whose
    /// sub-pipelines are chains of their own. None when the pipeline has no blocking stage
    /// or a stage of another kind (`$out`, `$merge`, …).
    pub fn chain(&self) -> Option<Chain> {
        self.segments().filter(|chain| !chain.steps.is_empty())
    }

    /// The pipeline as per-document segments around blocking steps ([`Pipeline::chain`]),
    /// also when it has no blocking step. None when a stage fits neither.
    fn segments(&self) -> Option<Chain> {
        let mut first = Vec::new();
        let mut steps: Vec<(ChainStep, Pipeline)> = Vec::new();
        for stage in &self.stages {
            let step = match stage {
                Stage::Sort(spec) => ChainStep::Sort {
                    spec: spec.clone(),
                    skip: 0,
                    limit: None,
                },
                Stage::Group { id, accumulators } => {
                    ChainStep::Group(Box::new(Grouping::new(id.clone(), accumulators.clone())))
                }
                Stage::SetWindowFields(window) => ChainStep::Window(window.clone()),
                Stage::Count(field) => ChainStep::Count(field.clone()),
                Stage::Bucket(bucket) => {
                    ChainStep::Bucket(Box::new(stages::BucketGrouping::new((**bucket).clone())))
                }
                Stage::BucketAuto(spec) => ChainStep::BucketAuto(spec.clone()),
                Stage::Sample(size) => ChainStep::Sample(*size),
                Stage::Densify(spec) => ChainStep::Densify(spec.clone()),
                Stage::Facet(facets) => {
                    let mut branches = Vec::with_capacity(facets.len());
                    for (name, pipeline) in facets {
                        branches.push((name.clone(), pipeline.segments()?));
                    }
                    ChainStep::Facet(branches)
                }
                Stage::UnionWith {
                    collection,
                    pipeline,
                } => ChainStep::UnionWith {
                    collection: collection.clone(),
                    pipeline: pipeline.clone(),
                },
                Stage::Skip(n) | Stage::Limit(n) => {
                    // Right after a `$sort` or another `$skip`/`$limit`: the same slice.
                    let slice = match steps.last_mut() {
                        Some((ChainStep::Sort { skip, limit, .. }, after))
                        | Some((ChainStep::Slice { skip, limit }, after))
                            if after.stages.is_empty() =>
                        {
                            Some((skip, limit))
                        }
                        _ => None,
                    };
                    let fresh = slice.is_none();
                    let (mut own_skip, mut own_limit) = (0, None);
                    let (skip, limit) = slice.unwrap_or((&mut own_skip, &mut own_limit));
                    if let Stage::Skip(_) = stage {
                        *skip = skip.saturating_add(*n);
                        *limit = limit.map(|l| l.saturating_sub(*n));
                    } else {
                        *limit = Some(limit.map_or(*n, |l| l.min(*n)));
                    }
                    if !fresh {
                        continue;
                    }
                    ChainStep::Slice {
                        skip: own_skip,
                        limit: own_limit,
                    }
                }
                other => {
                    let segment = match steps.last_mut() {
                        Some((_, after)) => &mut after.stages,
                        None => &mut first,
                    };
                    segment.push(other.clone());
                    continue;
                }
            };
            steps.push((step, Pipeline { stages: Vec::new() }));
        }
        let first = Pipeline { stages: first };
        let per_document =
            first.is_per_document() && steps.iter().all(|(_, after)| after.is_per_document());
        per_document.then_some(Chain { first, steps })
    }
}
