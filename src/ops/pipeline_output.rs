//! A pipeline over a collection, the way every command runs one: a first `$group` grouped
//! as its input streams (`aggregate::run_grouped`), else streamed or chained
//! (`aggregate::open_stream`), else over held documents (`aggregate::run_pipeline`) — so
//! no stage holds more than the memory limit lets it ([`run_on`]: the wire's `aggregate`,
//! which hands a stream to a cursor or a `$out`). [`run`] first resolves a view, for the
//! commands that consume the result themselves: `count` and `distinct` of a view, and
//! REST's aggregates, `$out`s and pages of a view.
//!
//! Not for: the rest of the wire's `aggregate` (cursors, explain, leading stages), the
//! stages.

use bson::raw::RawDocumentBuf;
use bson::{Bson, Document};

use super::cursors::{fold_result, ResultSource};
use super::read_cursor::BatchLimit;
use super::transaction::OpScope;
use super::OpError;
use crate::query::{Collation, Pipeline};

/// What the pipeline made.
pub enum PipelineOutput {
    /// Computed whole: the groups of a first `$group`, or a pipeline that does not stream.
    Held(Vec<Document>),
    /// The first batch and the rest of a pipeline that streams.
    Streamed(Vec<RawDocumentBuf>, ResultSource),
}

/// A pipeline's input as a command gives it: a collection or a view, the stages (after a
/// view's own), the hint and the collation.
pub struct PipelineRead<'a> {
    pub db: &'a str,
    pub name: &'a str,
    pub stages: Vec<Document>,
    pub hint: Option<&'a Bson>,
    pub collation: Option<&'a Collation>,
}

/// Runs `read` (on a view: the view's pipeline, then the stages, over the collection it
/// reads, under the view's collation), its first streamed batch within `first`; answers
/// what it made and the collation it ran under.
pub async fn run(
    catalog: &crate::catalog::Catalog,
    scope: &mut OpScope<'_>,
    read: PipelineRead<'_>,
    first: BatchLimit,
) -> Result<(PipelineOutput, Collation), OpError> {
    let (base, all, collation) = match scope.collection_info(read.db, read.name).await? {
        Some(info) if super::views::is_view(&info.record) => {
            let resolved = {
                let mut session = scope.reader().await?;
                super::views::resolve(catalog, session.as_mut(), &info.record).await?
            };
            let collation = resolved.collation_for(read.collation)?;
            let mut all = resolved.pipeline;
            all.extend(read.stages);
            (resolved.base, all, collation)
        }
        Some(info) => {
            let collation = info.collation_for(read.collation.cloned())?;
            (read.name.to_string(), read.stages, collation)
        }
        None => {
            let collation = read.collation.cloned().unwrap_or_default();
            (read.name.to_string(), read.stages, collation)
        }
    };
    let pipeline = Pipeline::parse(&all)?;
    let on = CollectionRead {
        db: read.db,
        collection: &base,
        pipeline: &pipeline,
        hint: read.hint,
        collation: Some(&collation),
    };
    let made = run_on(catalog, scope, on, first).await?;
    Ok((made, collation))
}

/// A parsed pipeline over a collection (a missing one is read as empty), with the hint and
/// the collation the command gave.
pub struct CollectionRead<'a> {
    pub db: &'a str,
    pub collection: &'a str,
    pub pipeline: &'a Pipeline,
    pub hint: Option<&'a Bson>,
    pub collation: Option<&'a Collation>,
}

/// Runs `read`, its first streamed batch within `first`.
pub async fn run_on(
    catalog: &crate::catalog::Catalog,
    scope: &mut OpScope<'_>,
    read: CollectionRead<'_>,
    first: BatchLimit,
) -> Result<PipelineOutput, OpError> {
    let (pipeline, hint, collation) = (read.pipeline, read.hint, read.collation);
    // A missing collection is read as empty, the stages still run (a `$unionWith` reads on).
    if let Some(info) = scope.collection_info(read.db, read.collection).await? {
        let grouped =
            super::aggregate::run_grouped(catalog, scope, &info, pipeline, hint, collation);
        if let Some(groups) = grouped.await? {
            return Ok(PipelineOutput::Held(groups));
        }
        let opened =
            super::aggregate::open_stream(catalog, scope, &info, pipeline, hint, collation, first);
        if let Some((batch, rest)) = opened.await? {
            return Ok(PipelineOutput::Streamed(batch, rest));
        }
    }
    let mut session = scope.reader().await?;
    let held = super::aggregate::run_pipeline(
        catalog,
        session.as_mut(),
        read.db,
        read.collection,
        pipeline,
        hint,
        collation.cloned(),
    )
    .await?;
    Ok(PipelineOutput::Held(held))
}

impl PipelineOutput {
    /// Every document it made, decoded: for an answer that holds its whole result.
    pub async fn collect(self, scope: &mut OpScope<'_>) -> Result<Vec<Document>, OpError> {
        match self {
            PipelineOutput::Held(documents) => Ok(documents),
            PipelineOutput::Streamed(first, rest) => {
                let decode = |documents: &mut Vec<Document>, row: RawDocumentBuf| {
                    documents.push(super::read::decode_document(row.as_bytes())?);
                    Ok(())
                };
                fold_result(scope, first, rest, Vec::new(), decode).await
            }
        }
    }
}
