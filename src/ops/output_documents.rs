//! The documents `$out` and `$merge` write, handed to the writer a chunk at a time: a result
//! computed whole (a `$group`'s groups, a REST aggregate), or a streamed pipeline's result
//! spooled as it is read.
//!
//! A streamed pipeline is read to its end before the first write, so the writer never sees
//! its own writes (a `$merge` into the collection it reads would otherwise meet the
//! documents it merged, as the keyset reads of a stream resume after a position), and the
//! write transaction stays as short as the writing. The spool holds up to the command's
//! blocking-stage limit and writes the rest to temporary files, whatever `allowDiskUse`
//! says (`ExternalSort::spool_for_command`): MongoDB writes `$out`'s documents as they come
//! and holds none of them, so refusing disk use gives its limit no stage to answer 292 for,
//! and holding them would leave a large `$out` unbounded.
//!
//! Not for: the writing (`aggregate_writes`) or running the pipeline (`aggregate`).

use bson::raw::RawDocumentBuf;
use bson::{Bson, Document};

use super::cursors::{fold_result, ResultSource};
use super::pipeline_output::PipelineOutput;
use super::transaction::OpScope;
use super::OpError;
use crate::query::spill::{ExternalSort, SortedOutput};

/// A pipeline's result as `$out`/`$merge` take it.
pub struct OutputDocuments {
    source: Source,
}

enum Source {
    Held(std::vec::IntoIter<Document>),
    /// None while a chunk is read from it on the compute pool.
    Spooled(Option<Box<SortedOutput>>),
}

impl OutputDocuments {
    /// A result computed whole.
    pub fn held(documents: Vec<Document>) -> OutputDocuments {
        OutputDocuments {
            source: Source::Held(documents.into_iter()),
        }
    }

    /// What a pipeline made: held as it is, or spooled ([`OutputDocuments::spooled`]).
    pub async fn of(
        scope: &mut OpScope<'_>,
        made: PipelineOutput,
    ) -> Result<OutputDocuments, OpError> {
        match made {
            PipelineOutput::Held(documents) => Ok(OutputDocuments::held(documents)),
            PipelineOutput::Streamed(first, rest) => {
                OutputDocuments::spooled(scope, first, rest).await
            }
        }
    }

    /// Reads a streamed pipeline's result to its end — `first`, then every batch of
    /// `rest` — into a spool that spills past the command's blocking-stage limit.
    pub async fn spooled(
        scope: &mut OpScope<'_>,
        first: Vec<RawDocumentBuf>,
        rest: ResultSource,
    ) -> Result<OutputDocuments, OpError> {
        // Made here, on the command's task, where its memory budget is found.
        let memory = crate::compute::current_interrupt().blocking_memory();
        let spool = (ExternalSort::spool_within(memory), 0i64);
        let push = |(spool, position): &mut (ExternalSort, i64), row: RawDocumentBuf| {
            spool.push(vec![Bson::Int64(*position)], row.into_bytes())?;
            *position += 1;
            Ok(())
        };
        let spool = fold_result(scope, first, rest, spool, push).await?;
        let output = crate::compute::run(move || Ok::<_, OpError>(spool.0.finish()?)).await?;
        Ok(OutputDocuments {
            source: Source::Spooled(Some(Box::new(output))),
        })
    }

    /// The next (at most) `size` documents, in the result's order; None at the end.
    pub async fn next_chunk(&mut self, size: usize) -> Result<Option<Vec<Document>>, OpError> {
        let chunk = match &mut self.source {
            Source::Held(documents) => documents.by_ref().take(size).collect(),
            Source::Spooled(output) => {
                let Some(mut reading) = output.take() else {
                    return Ok(None);
                };
                let (read, chunk) = crate::compute::run(move || {
                    let mut chunk = Vec::with_capacity(size.min(1024));
                    while chunk.len() < size {
                        match reading.next_decoded()? {
                            Some((_, document)) => chunk.push(document),
                            None => break,
                        }
                    }
                    Ok::<_, OpError>((reading, chunk))
                })
                .await?;
                *output = Some(read);
                chunk
            }
        };
        Ok((!chunk.is_empty()).then_some(chunk))
    }
}
