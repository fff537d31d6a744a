//! The core: the operations as MongoDB defines them, which both front ends call — the wire
//! commands in `mongo` and the REST requests in `rest` — taking typed requests and a store
//! session and answering typed results or one error type, [`OpError`]. It knows neither
//! OP_MSG nor HTTP.
//!
//! - `error`: [`OpError`], MongoDB's codes;
//! - `cluster_time`: the cluster time, a hybrid logical clock that only moves forward;
//! - `namespace`: database and collection name rules;
//! - `prepare`: a document made ready to store (`_id` first, limits, index keys);
//! - `transaction`: where an operation runs (on its own or joined to a session's
//!   transaction), the transaction of an operation that writes, and the catalog
//!   invalidation after it commits;
//! - `sessions`: logical sessions, multi-document transactions, retryable writes;
//! - `collections`: create, drop and rename collections;
//! - `capped`: capped collections' options and limits, the room an insert makes, the
//!   signal that wakes tailable cursors;
//! - `write`: the collection of a write (created implicitly), multikey marking;
//! - `validation`: document validation of every write (`validator`, `validationLevel`,
//!   `validationAction`, `bypassDocumentValidation`) and changing a collection's validation
//!   options;
//! - `insert`: a batch of documents, ordered, unordered or all or nothing;
//! - `write_errors`: MongoDB's `writeErrors` entries;
//! - `retry`: the StaleCatalog retry of every write;
//! - `find`: find and count, and the indexes a hint leaves;
//! - `distinct`: the values at a path, folded from a stream of documents;
//! - `find_and_modify`: one document found, then removed or updated;
//! - `indexes`: building and dropping secondary indexes;
//! - `update`, `delete`: one statement of an update or a delete inside a transaction;
//! - `read`: a planned read run on a store session, the residual filter, sort, skip and
//!   limit in Rust, and the decoding of stored documents;
//! - `sorted_read`: a find (or an aggregate's leading sort) sorted in Rust through an
//!   external sort that spills past the memory limit, drained by its cursor;
//! - `chained_read`: an aggregate of per-document stages and blocking ones (`$sort`,
//!   `$group`, `$setWindowFields`), each blocking stage fed as a stream, drained by its cursor;
//! - `aggregate`: running a pipeline over a collection, or over the input of
//!   `aggregate: 1` (`$documents`, `$listLocalSessions`);
//! - `aggregate_writes`: `$out` and `$merge`, each in one transaction, writing what
//!   `output_documents` hands them a chunk at a time (a streamed result spooled first);
//! - `ttl`: the TTL monitor, which deletes expired documents through `delete`;
//! - `views`: view definitions, their checks, resolving and reading a view;
//! - `pipeline_output`: a pipeline over a collection or a view for a command that consumes
//!   its result itself (`count`/`distinct` of a view, REST), streamed as `aggregate` runs it;
//! - `coll_mod`: `collMod`'s changes to a view or to a collection's indexes;
//! - `operations`: the operations running now (`currentOp`, `killOp`);
//! - `profiler`: profiling levels, `system.profile` and the slow-operation threshold.
//!
//! Not for: command or request shapes (the front ends parse those), SQL (the store), the
//! semantics of filters, updates and pipelines (`query`).

pub mod aggregate;
pub mod aggregate_pushdown;
pub mod aggregate_writes;
pub mod capped;
mod chained_read;
pub mod cluster_time;
pub mod coll_mod;
pub mod collections;
pub mod cursors;
pub mod delete;
pub mod distinct;
pub mod error;
pub mod find;
pub mod find_and_modify;
pub mod index_usage;
pub mod indexes;
pub mod insert;
pub mod namespace;
pub mod operations;
pub mod output_documents;
pub mod pipeline_output;
pub mod prepare;
pub mod profiler;
pub mod read;
pub mod read_cursor;
pub mod retry;
pub mod sessions;
pub mod sorted_read;
pub mod transaction;
pub mod ttl;
pub mod update;
pub mod validation;
pub mod views;
pub mod write;
pub mod write_errors;

pub use error::OpError;
