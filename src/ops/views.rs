//! Views for every front end: a view is a catalog record whose options are its definition
//! (`viewOn`, `pipeline`, `collation`) and which has no table. Here: reading a definition,
//! checking one before it is recorded (the pipeline parses and writes nothing, no cycle
//! through `viewOn` and the collections its pipeline reads, at most 20 views deep, the same
//! collation as a view it reads), creating and redefining views, resolving a view down to
//! the collection it reads with the pipelines of every view on the way, and reading a view's
//! documents (its pipeline, then the caller's stages, through `aggregate::run_pipeline`, so a
//! leading `$match`/`$sort`/`$limit` is still planned into the base collection's scan).
//!
//! Not for: turning a `find` or a `count` into stages (the front ends do, as MongoDB does),
//! refusing writes to a view (the write paths ask [`is_view`]).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;

use bson::{Bson, Document};

use super::OpError;
use crate::catalog::{Catalog, CatalogSnapshot};
use crate::query::{Collation, Pipeline, QueryError};
use crate::state::AppState;
use crate::store::{CollectionRecord, StoreError, StoreSession};

/// MongoDB's `ViewGraph::kMaxViewDepth`: views on views, at most this many deep.
pub const MAX_VIEW_DEPTH: usize = 20;

/// Whether `record` is a view (its options name what it is a view on).
pub fn is_view(record: &CollectionRecord) -> bool {
    record.options.contains_key("viewOn")
}

/// MongoDB's 166 CommandNotSupportedOnView for a write or an index on a view.
pub fn not_a_collection(db: &str, name: &str) -> OpError {
    coded(
        166,
        "CommandNotSupportedOnView",
        format!("Namespace {db}.{name} is a view, not a collection"),
    )
}

/// 166 CommandNotSupportedOnView when `record` is a view (commands that need a table:
/// writes, indexes, collection statistics).
pub fn check_not_view(record: &CollectionRecord) -> Result<(), OpError> {
    if is_view(record) {
        return Err(not_a_collection(&record.db, &record.name));
    }
    Ok(())
}

/// An error with MongoDB's code and code name.
fn coded(code: i32, code_name: &'static str, message: String) -> OpError {
    OpError::Query(QueryError::coded(code, code_name, message))
}

/// What a view is: the collection or view it reads, its stages, its default collation (the
/// full specification, none for simple).
#[derive(Clone, Debug, PartialEq)]
pub struct ViewDefinition {
    pub view_on: String,
    pub pipeline: Vec<Document>,
    pub collation: Option<Document>,
}

impl ViewDefinition {
    /// The definition a record holds, if it is a view.
    pub fn of(record: &CollectionRecord) -> Option<ViewDefinition> {
        let view_on = record.options.get_str("viewOn").ok()?.to_owned();
        let pipeline = record
            .options
            .get_array("pipeline")
            .map(|stages| {
                stages
                    .iter()
                    .filter_map(|stage| stage.as_document().cloned())
                    .collect()
            })
            .unwrap_or_default();
        let collation = record.options.get_document("collation").ok().cloned();
        Some(ViewDefinition {
            view_on,
            pipeline,
            collation,
        })
    }

    /// The options recorded for it (what `listCollections` shows back).
    pub fn options(&self) -> Document {
        let mut options = Document::new();
        options.insert("viewOn", self.view_on.clone());
        options.insert(
            "pipeline",
            self.pipeline
                .iter()
                .cloned()
                .map(Bson::Document)
                .collect::<Vec<_>>(),
        );
        if let Some(collation) = &self.collation {
            options.insert("collation", collation.clone());
        }
        options
    }

    /// The view's collation (simple when it has none).
    pub fn default_collation(&self) -> Result<Collation, OpError> {
        match &self.collation {
            Some(collation) => Ok(Collation::parse(collation)?),
            None => Ok(Collation::simple()),
        }
    }

    /// The parsed pipeline; one that writes (`$out`, `$merge`) is MongoDB's 167.
    fn parsed(&self, db: &str, name: &str) -> Result<Pipeline, OpError> {
        let pipeline = Pipeline::parse(&self.pipeline)?;
        if let Some(output) = pipeline.output() {
            return Err(coded(
                167,
                "OptionNotSupportedOnView",
                format!(
                    "The aggregation stage {} in location {} of the pipeline cannot be used \
                     in the view definition of {db}.{name} because it writes to disk",
                    output.name(),
                    self.pipeline.len().saturating_sub(1)
                ),
            ));
        }
        Ok(pipeline)
    }

    /// What the view reads: `viewOn` and the collections its stages read.
    fn references(&self, db: &str, name: &str) -> Result<BTreeSet<String>, OpError> {
        let mut references: BTreeSet<String> = self
            .parsed(db, name)?
            .foreign_collections()
            .into_iter()
            .collect();
        references.insert(self.view_on.clone());
        Ok(references)
    }
}

/// A view resolved down to the collection it reads: that collection's name (it may not
/// exist), the stages of every view on the way (innermost first), and the view's collation.
#[derive(Clone, Debug)]
pub struct ResolvedView {
    pub base: String,
    pub pipeline: Vec<Document>,
    pub collation: Collation,
}

impl ResolvedView {
    /// The collation a read of the view runs under: the view's; a read that asks for another
    /// one is MongoDB's 167.
    pub fn collation_for(&self, requested: Option<&Collation>) -> Result<Collation, OpError> {
        match requested {
            Some(requested) if requested.to_document() != self.collation.to_document() => {
                Err(coded(
                    167,
                    "OptionNotSupportedOnView",
                    "Cannot override a view's default collation".into(),
                ))
            }
            _ => Ok(self.collation.clone()),
        }
    }
}

/// Resolves the view `record` through the catalog as `session` sees it.
pub async fn resolve(
    catalog: &Catalog,
    session: &mut dyn StoreSession,
    record: &CollectionRecord,
) -> Result<ResolvedView, OpError> {
    let Some(first) = ViewDefinition::of(record) else {
        return Err(OpError::BadValue(format!(
            "{}.{} is not a view",
            record.db, record.name
        )));
    };
    let collation = first.default_collation()?;
    let mut pipeline = first.pipeline;
    let mut next = first.view_on;
    for _ in 1..=MAX_VIEW_DEPTH {
        let info = catalog
            .collection_info_in(session, &record.db, &next)
            .await?;
        match info
            .as_ref()
            .and_then(|info| ViewDefinition::of(&info.record))
        {
            None => {
                return Ok(ResolvedView {
                    base: next,
                    pipeline,
                    collation,
                })
            }
            Some(inner) => {
                let mut stages = inner.pipeline;
                stages.append(&mut pipeline);
                pipeline = stages;
                next = inner.view_on;
            }
        }
    }
    Err(coded(
        165,
        "ViewDepthLimitExceeded",
        format!("View depth too deep or view cycle detected; maximum depth is {MAX_VIEW_DEPTH}"),
    ))
}

/// The documents of the view `record`: its pipeline, then `stages`, under the view's
/// collation (a read asking for another one is 167), `hint` applying to the collection the
/// view reads. `$lookup`, `$unionWith` and `$graphLookup` read views through here too.
pub fn read<'a>(
    catalog: &'a Catalog,
    session: &'a mut dyn StoreSession,
    record: &'a CollectionRecord,
    stages: &'a [Document],
    hint: Option<&'a Bson>,
    collation: Option<&'a Collation>,
) -> Pin<Box<dyn Future<Output = Result<Vec<Document>, OpError>> + Send + 'a>> {
    Box::pin(async move {
        let resolved = resolve(catalog, session, record).await?;
        let collation = resolved.collation_for(collation)?;
        let mut all = resolved.pipeline;
        all.extend(stages.iter().cloned());
        let pipeline = Pipeline::parse(&all)?;
        super::aggregate::run_pipeline(
            catalog,
            session,
            &record.db,
            &resolved.base,
            &pipeline,
            hint,
            Some(collation),
        )
        .await
    })
}

/// Records the view `db.name` after checking its definition against the committed catalog;
/// answers whether it was created (false: the name is taken).
pub async fn create_view(
    state: &AppState,
    db: &str,
    name: &str,
    definition: &ViewDefinition,
) -> Result<bool, OpError> {
    super::namespace::check_collection_name(db, name)?;
    let snapshot = state.catalog.fresh_snapshot().await?;
    if snapshot.collection(db, name).is_some() {
        return Ok(false);
    }
    check_definition(&snapshot, db, name, definition)?;
    let mut session = state.store.session().await?;
    match session.create_view(db, name, &definition.options()).await {
        Ok(_) => {
            state.catalog.invalidate().await;
            Ok(true)
        }
        Err(StoreError::AlreadyExists(_)) => Ok(false),
        Err(other) => Err(other.into()),
    }
}

/// Redefines the view `record` (`collMod` with `viewOn` and `pipeline`), checked like a new
/// one; its collation stays.
pub async fn modify_view(
    state: &AppState,
    record: &CollectionRecord,
    view_on: Option<String>,
    pipeline: Option<Vec<Document>>,
) -> Result<(), OpError> {
    let Some(mut definition) = ViewDefinition::of(record) else {
        return Err(not_a_collection(&record.db, &record.name));
    };
    if let Some(view_on) = view_on {
        definition.view_on = view_on;
    }
    if let Some(pipeline) = pipeline {
        definition.pipeline = pipeline;
    }
    let snapshot = state.catalog.fresh_snapshot().await?;
    check_definition(&snapshot, &record.db, &record.name, &definition)?;
    let mut session = state.store.session().await?;
    let mut options = record.options.clone();
    for (key, value) in definition.options() {
        options.insert(key, value);
    }
    session.set_collection_options(record, &options).await?;
    state.catalog.invalidate().await;
    Ok(())
}

/// Checks a definition of `db.name` against the other views of `db` in `snapshot`: the
/// pipeline parses and does not write, the views it reads share its collation, and with it
/// the graph of what views read has no cycle (160 GraphContainsCycle) and no path through
/// it longer than [`MAX_VIEW_DEPTH`] views (165 ViewDepthLimitExceeded).
pub fn check_definition(
    snapshot: &CatalogSnapshot,
    db: &str,
    name: &str,
    definition: &ViewDefinition,
) -> Result<(), OpError> {
    if definition.view_on.is_empty() {
        return Err(OpError::BadValue("'viewOn' cannot be empty.".into()));
    }
    super::namespace::check_collection_name(db, &definition.view_on)?;
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for record in snapshot.collections_in(db) {
        if record.name == name {
            continue;
        }
        if let Some(other) = ViewDefinition::of(record) {
            // A stored view whose pipeline no longer parses still reads its `viewOn`.
            let references = other
                .references(db, &record.name)
                .unwrap_or_else(|_| BTreeSet::from([other.view_on.clone()]));
            graph.insert(record.name.clone(), references);
        }
    }
    graph.insert(name.to_owned(), definition.references(db, name)?);
    if let Some(cycle) = cycle_through(&graph, name) {
        let path: Vec<String> = cycle.iter().map(|view| format!("{db}.{view}")).collect();
        return Err(coded(
            160,
            "GraphContainsCycle",
            format!("View cycle detected: {}", path.join(" => ")),
        ));
    }
    let below = views_below(&graph, name, &mut BTreeMap::new(), 0);
    let above = views_above(&graph, name, &mut BTreeMap::new(), 0);
    if below + above - 1 > MAX_VIEW_DEPTH {
        return Err(coded(
            165,
            "ViewDepthLimitExceeded",
            format!("View depth limit exceeded; maximum depth is {MAX_VIEW_DEPTH}"),
        ));
    }
    // A view on a view has that view's collation (MongoDB's 167).
    if let Some(under) = snapshot.collection(db, &definition.view_on) {
        if let Some(inner) = ViewDefinition::of(under) {
            if inner.default_collation()?.to_document()
                != definition.default_collation()?.to_document()
            {
                return Err(coded(
                    167,
                    "OptionNotSupportedOnView",
                    format!(
                        "View {db}.{name} has a collation that does not match the collation \
                         of view {db}.{}",
                        definition.view_on
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The views from `start` back to itself, if what it reads leads back to it.
fn cycle_through(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(at).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if graph.contains_key(next) && seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, start, next, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_owned()];
    walk(graph, start, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

/// The longest chain of views from `view` down to a collection, `view` included (bounded:
/// past the limit the answer is already too deep, which also ends a walk round a cycle that
/// does not pass through the view being checked).
fn views_below(
    graph: &BTreeMap<String, BTreeSet<String>>,
    view: &str,
    known: &mut BTreeMap<String, usize>,
    depth: usize,
) -> usize {
    if depth > MAX_VIEW_DEPTH {
        return MAX_VIEW_DEPTH + 1;
    }
    if let Some(height) = known.get(view) {
        return *height;
    }
    let mut height = 1;
    for next in graph.get(view).into_iter().flatten() {
        if graph.contains_key(next) && next != view {
            height = height.max(1 + views_below(graph, next, known, depth + 1));
        }
    }
    known.insert(view.to_owned(), height);
    height
}

/// The longest chain of views reading `view`, `view` included (bounded like
/// [`views_below`]).
fn views_above(
    graph: &BTreeMap<String, BTreeSet<String>>,
    view: &str,
    known: &mut BTreeMap<String, usize>,
    depth: usize,
) -> usize {
    if depth > MAX_VIEW_DEPTH {
        return MAX_VIEW_DEPTH + 1;
    }
    if let Some(height) = known.get(view) {
        return *height;
    }
    let mut height = 1;
    for (reader, reads) in graph {
        if reader != view && reads.contains(view) {
            height = height.max(1 + views_above(graph, reader, known, depth + 1));
        }
    }
    known.insert(view.to_owned(), height);
    height
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> BTreeMap<String, BTreeSet<String>> {
        edges
            .iter()
            .map(|(view, reads)| {
                (
                    view.to_string(),
                    reads.iter().map(|r| r.to_string()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn cycles_and_depths() {
        let g = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"])]);
        assert_eq!(
            cycle_through(&g, "a"),
            Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
        );
        let g = graph(&[("a", &["b", "coll"]), ("b", &["coll"]), ("top", &["a"])]);
        assert_eq!(cycle_through(&g, "a"), None);
        assert_eq!(views_below(&g, "a", &mut BTreeMap::new(), 0), 2);
        assert_eq!(views_above(&g, "a", &mut BTreeMap::new(), 0), 2);
    }
}
