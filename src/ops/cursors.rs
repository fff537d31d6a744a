//! Server-side cursors: what is left of a `find`/`aggregate` result after its first batch,
//! handed out by `getMore` and ended by exhaustion, `killCursors`, the end of their logical
//! session, or being idle longer than the cursor timeout (MongoDB's `cursorTimeoutMillis`,
//! 10 minutes by default).
//!
//! What a cursor holds is a [`ResultSource`]: a streaming read ([`ReadCursor`]: a position
//! in a scan, never the rest of the result) for every `find` whose order the store produces,
//! the merge of a sort in Rust that may have spilled to temporary files ([`SortedResult`],
//! deleted with the cursor), or the remaining documents of a result that had to be computed
//! whole (an aggregation pipeline, a catalog listing). Documents are BSON bytes: stored documents go to
//! the client as the store returned them.
//!
//! Ownership follows MongoDB: a cursor belongs to the logical session (`lsid`) and the user
//! that created it, not to a TCP connection, because drivers pool connections and may send
//! `getMore` on any of them. A `getMore` from another session or another user, and a
//! `killCursors` from another user, is refused with 13 Unauthorized, and the cursor lives on
//! for its owner. A cursor is read by one `getMore` at a time (143 CursorInUse otherwise);
//! one that fails is closed.
//!
//! Limits: at most `max_open` cursors in the process and `max_open_per_session` per logical
//! session (146 ExceededMemoryLimit beyond), each holding at most one batch's worth of
//! documents while a `getMore` reads (a streaming read holds none between batches).
//!
//! Not for: producing results (`find`, `aggregate`, `read_cursor`) or reply encoding.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bson::{Bson, RawDocumentBuf};

use super::error::OpError;
use super::read_cursor::{BatchLimit, ReadCursor};
use super::sorted_read::SortedResult;
use super::transaction::OpScope;

/// A batch stops growing once it passes this many bytes (MongoDB's 16 MiB reply budget).
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024 - 16 * 1024;
/// Documents in a first batch when the client does not say (MongoDB's default).
pub const DEFAULT_FIRST_BATCH: usize = 101;
/// How long a `getMore` on a tailable `awaitData` cursor waits for new documents when it
/// does not say (`maxTimeMS` on the `getMore`; MongoDB's default is one second).
pub const DEFAULT_MAX_AWAIT: Duration = Duration::from_secs(1);

/// The operator's limits on cursors (`[limits]`, `--max-open-cursors`,
/// `--max-open-cursors-per-session`, `--cursor-timeout-ms`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CursorLimits {
    /// Open cursors in the whole process.
    pub max_open: usize,
    /// Open cursors of one logical session.
    pub max_open_per_session: usize,
    /// A cursor idle this long is closed (unless opened with `noCursorTimeout`).
    pub idle_timeout: Duration,
}

impl Default for CursorLimits {
    fn default() -> Self {
        CursorLimits {
            max_open: 20_000,
            max_open_per_session: 2_000,
            idle_timeout: Duration::from_secs(600),
        }
    }
}

/// Who a cursor belongs to, and who asks for one: the logical session id (`lsid.id`) and
/// the authenticated user (authentication database, name), either absent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CursorOwner {
    pub session: Option<Bson>,
    pub user: Option<(String, String)>,
}

impl CursorOwner {
    /// Why `requester` may not use a cursor owned by `self`, if it may not. A cursor opened
    /// without a session or a user is not tied to one. `getMore` must come from the
    /// cursor's session and user; `killCursors` from its user (as in MongoDB, any session:
    /// drivers send it with or without one).
    fn refusal(&self, requester: &CursorOwner, id: i64, verb: &str) -> Option<OpError> {
        let same_session_needed = verb != "kill";
        if same_session_needed && self.session.is_some() && self.session != requester.session {
            return Some(OpError::Unauthorized(format!(
                "Cannot {verb} cursor {id}, which was created in another session"
            )));
        }
        if self.user.is_some() && self.user != requester.user {
            return Some(OpError::Unauthorized(format!(
                "cursor id {id} was not created by the authenticated user; not authorized to {verb} it"
            )));
        }
        None
    }
}

/// How a cursor hands out its result: the first batch's size, whether the first batch is
/// all there is (`singleBatch`, a negative `limit`), and whether the idle timeout spares
/// it (`noCursorTimeout`).
#[derive(Clone, Copy, Debug, Default)]
pub struct BatchOptions {
    pub batch_size: Option<usize>,
    pub single_batch: bool,
    pub no_timeout: bool,
}

impl BatchOptions {
    /// The first batch's bound.
    pub fn first_batch_limit(&self) -> BatchLimit {
        BatchLimit {
            documents: self.batch_size.unwrap_or(DEFAULT_FIRST_BATCH),
            bytes: MAX_BATCH_BYTES,
        }
    }
}

/// The bound of a `getMore` batch of `batch_size` documents (none: up to the byte budget).
pub fn next_batch_limit(batch_size: Option<usize>) -> BatchLimit {
    BatchLimit {
        documents: batch_size.filter(|n| *n > 0).unwrap_or(usize::MAX),
        bytes: MAX_BATCH_BYTES,
    }
}

/// What a cursor hands out next.
pub enum ResultSource {
    /// The rest of a result computed whole.
    Documents(VecDeque<RawDocumentBuf>),
    /// A streaming read, positioned after the last document returned.
    Stream(Box<ReadCursor>),
    /// A sort in Rust that may have spilled: the merge of its runs, read as it is drained.
    Sorted(Box<SortedResult>),
}

impl ResultSource {
    fn is_exhausted(&self) -> bool {
        match self {
            ResultSource::Documents(documents) => documents.is_empty(),
            ResultSource::Stream(read) => read.is_exhausted(),
            ResultSource::Sorted(sorted) => sorted.is_exhausted(),
        }
    }

    /// Whether this is a tailable `awaitData` cursor (a `getMore` on it may wait).
    fn awaits_data(&self) -> bool {
        matches!(self, ResultSource::Stream(read) if read.tail().is_some_and(|t| t.await_data))
    }

    async fn next_batch(
        &mut self,
        scope: &mut OpScope<'_>,
        limit: BatchLimit,
        max_await: Option<Duration>,
    ) -> Result<Vec<RawDocumentBuf>, OpError> {
        let awaits = self.awaits_data();
        match self {
            ResultSource::Documents(documents) => Ok(take_batch(documents, limit)),
            ResultSource::Stream(read) if awaits => {
                let max_await = max_await.unwrap_or(DEFAULT_MAX_AWAIT);
                read.next_batch_awaiting(scope, limit, max_await).await
            }
            ResultSource::Stream(read) => read.next_batch(scope, limit).await,
            ResultSource::Sorted(sorted) => sorted.next_batch(limit).await,
        }
    }
}

/// Hands every document of a result that is read in one command — `first`, then each batch
/// of `rest` until it ends — to `push` with `state`, batch by batch on the compute pool, and
/// answers the state: what a command that consumes a stream itself (a `$out`'s spool, a
/// `distinct`) runs instead of a cursor.
pub async fn fold_result<S: Send + 'static>(
    scope: &mut OpScope<'_>,
    first: Vec<RawDocumentBuf>,
    mut rest: ResultSource,
    mut state: S,
    push: impl Fn(&mut S, RawDocumentBuf) -> Result<(), OpError> + Clone + Send + 'static,
) -> Result<S, OpError> {
    let mut rows = first;
    loop {
        let push = push.clone();
        state = crate::compute::run(move || {
            for row in rows {
                crate::interrupt::check()?;
                push(&mut state, row)?;
            }
            Ok::<_, OpError>(state)
        })
        .await?;
        if rest.is_exhausted() {
            return Ok(state);
        }
        rows = rest.next_batch(scope, next_batch_limit(None), None).await?;
    }
}

/// One open cursor. `source` is None while a `getMore` reads it.
struct Cursor {
    namespace: String,
    source: Option<ResultSource>,
    owner: CursorOwner,
    last_used: Instant,
    /// `noCursorTimeout`: never closed for being idle (only by exhaustion, `killCursors`
    /// or the end of its session).
    no_timeout: bool,
    /// More than one batch has been read (`metrics.cursor.moreThanOneBatch`).
    got_more: bool,
    /// What is left of the opening command's `maxTimeMS`: a cursor's time limit covers
    /// the processing of all its batches (idle time does not count).
    time_left: Option<Duration>,
    /// The opening command's `$$NOW` and `$$CLUSTER_TIME`: every batch evaluates with them.
    now: bson::DateTime,
    cluster_time: Option<bson::Timestamp>,
}

/// Every open cursor of the process, with MongoDB's cursor metrics.
pub struct CursorRegistry {
    cursors: Mutex<HashMap<i64, Cursor>>,
    limits: CursorLimits,
    id_hasher: RandomState,
    id_counter: AtomicU64,
    total_opened: AtomicU64,
    timed_out: AtomicU64,
    more_than_one_batch: AtomicU64,
}

impl Default for CursorRegistry {
    fn default() -> Self {
        CursorRegistry::new(CursorLimits::default())
    }
}

/// One batch handed to the client and the cursor id to continue with (0 when exhausted).
#[derive(Debug)]
pub struct Batch {
    pub documents: Vec<RawDocumentBuf>,
    pub cursor_id: i64,
}

/// `serverStatus.metrics.cursor`'s numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CursorMetrics {
    /// Cursors open now.
    pub open: u64,
    /// Of those, opened with `noCursorTimeout`.
    pub open_no_timeout: u64,
    /// Of those, being read by a `getMore` right now (MongoDB's "pinned").
    pub open_pinned: u64,
    /// Cursors opened since start.
    pub total_opened: u64,
    /// Cursors closed for being idle since start.
    pub timed_out: u64,
    /// Cursors that returned more than one batch since start.
    pub more_than_one_batch: u64,
}

impl CursorRegistry {
    pub fn new(limits: CursorLimits) -> CursorRegistry {
        CursorRegistry {
            cursors: Mutex::new(HashMap::new()),
            limits,
            id_hasher: RandomState::new(),
            id_counter: AtomicU64::new(1),
            total_opened: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            more_than_one_batch: AtomicU64::new(0),
        }
    }

    /// The limits this registry enforces.
    pub fn limits(&self) -> CursorLimits {
        self.limits
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Cursor>> {
        // A poisoned lock only means another thread panicked while holding it; the map itself
        // is still consistent (every mutation is a single insert/remove/field update).
        self.cursors
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A fresh, hard-to-guess positive cursor id.
    fn new_id(&self) -> i64 {
        loop {
            let n = self.id_counter.fetch_add(1, Ordering::Relaxed);
            let id = (self.id_hasher.hash_one(n) & (i64::MAX as u64)) as i64;
            if id != 0 {
                return id;
            }
        }
    }

    /// Splits off the first batch of a whole result; registers a cursor for the rest if any.
    pub fn first_batch(
        &self,
        namespace: &str,
        results: Vec<RawDocumentBuf>,
        options: BatchOptions,
        owner: CursorOwner,
    ) -> Result<Batch, OpError> {
        let mut rest = VecDeque::from(results);
        let first = take_batch(&mut rest, options.first_batch_limit());
        self.open(
            namespace,
            first,
            ResultSource::Documents(rest),
            options,
            owner,
        )
    }

    /// Answers `first` as the first batch and, unless `rest` is exhausted or the first batch
    /// is all the client wants, keeps `rest` behind a new cursor — within the limits on
    /// open cursors (146 ExceededMemoryLimit beyond them).
    pub fn open(
        &self,
        namespace: &str,
        first: Vec<RawDocumentBuf>,
        rest: ResultSource,
        options: BatchOptions,
        owner: CursorOwner,
    ) -> Result<Batch, OpError> {
        if rest.is_exhausted() || options.single_batch {
            return Ok(Batch {
                documents: first,
                cursor_id: 0,
            });
        }
        let mut cursors = self.lock();
        if cursors.len() >= self.limits.max_open {
            return Err(OpError::ExceededMemoryLimit(format!(
                "too many open cursors: the server holds at most {} (--max-open-cursors); close or exhaust some",
                self.limits.max_open
            )));
        }
        if let Some(session) = &owner.session {
            let of_session = cursors
                .values()
                .filter(|c| c.owner.session.as_ref() == Some(session))
                .count();
            if of_session >= self.limits.max_open_per_session {
                return Err(OpError::ExceededMemoryLimit(format!(
                    "too many open cursors in this session: at most {} (--max-open-cursors-per-session); close or exhaust some",
                    self.limits.max_open_per_session
                )));
            }
        }
        let id = self.new_id();
        // The opening command's time limit covers every batch, except an `awaitData`
        // cursor's: each `getMore` of it has its own wait (`maxTimeMS` on the getMore).
        let interrupt = crate::compute::current_interrupt();
        let time_left = if rest.awaits_data() {
            None
        } else {
            interrupt
                .deadline()
                .map(|deadline| deadline.saturating_duration_since(Instant::now()))
        };
        cursors.insert(
            id,
            Cursor {
                namespace: namespace.to_string(),
                source: Some(rest),
                owner,
                last_used: Instant::now(),
                no_timeout: options.no_timeout,
                got_more: false,
                time_left,
                now: interrupt.now(),
                cluster_time: interrupt.cluster_time(),
            },
        );
        self.total_opened.fetch_add(1, Ordering::Relaxed);
        Ok(Batch {
            documents: first,
            cursor_id: id,
        })
    }

    /// The next batch of cursor `id` (`getMore`), of at most `batch_size` documents; a
    /// tailable `awaitData` cursor with nothing new waits up to `max_await` (default one
    /// second) for an insert. The
    /// cursor is read outside the registry's lock; it is closed when exhausted and when the
    /// read fails or is abandoned (the client went away, the time limit passed).
    pub async fn next_batch(
        &self,
        scope: &mut OpScope<'_>,
        id: i64,
        namespace: &str,
        batch_size: Option<usize>,
        max_await: Option<Duration>,
        requester: &CursorOwner,
    ) -> Result<Batch, OpError> {
        let started = Instant::now();
        let mut checked_out = self.check_out(id, namespace, requester)?;
        let source = checked_out
            .source
            .as_mut()
            .ok_or(OpError::CursorNotFound(id))?;
        let documents = source
            .next_batch(scope, next_batch_limit(batch_size), max_await)
            .await?;
        let cursor_id = self.hand_back(&mut checked_out, started);
        Ok(Batch {
            documents,
            cursor_id,
        })
    }

    /// Puts a checked-out source back after a batch read from it since `started`; answers
    /// the id to continue with — 0 (and the cursor closed) when it is exhausted or was
    /// killed meanwhile.
    fn hand_back(&self, checked_out: &mut CheckedOut<'_>, started: Instant) -> i64 {
        let id = checked_out.id;
        let source = checked_out.source.take();
        let exhausted = source.as_ref().is_none_or(ResultSource::is_exhausted);
        let mut cursors = self.lock();
        match cursors.get_mut(&id) {
            Some(cursor) if !exhausted => {
                cursor.source = source;
                cursor.last_used = Instant::now();
                cursor.time_left = cursor
                    .time_left
                    .map(|left| left.saturating_sub(started.elapsed()));
                if !cursor.got_more {
                    cursor.got_more = true;
                    self.more_than_one_batch.fetch_add(1, Ordering::Relaxed);
                }
                id
            }
            // Exhausted, or killed while it was being read.
            _ => {
                cursors.remove(&id);
                0
            }
        }
    }

    /// Whether cursor `id` is a tailable `awaitData` cursor (its `getMore` may carry
    /// `maxTimeMS`: how long to wait for new documents).
    pub fn awaits_data(&self, id: i64) -> bool {
        self.lock()
            .get(&id)
            .and_then(|cursor| cursor.source.as_ref())
            .is_some_and(ResultSource::awaits_data)
    }

    /// The time limit of the next `getMore` of cursor `id`: what its opening command's
    /// `maxTimeMS` has left (None: no limit, or no such cursor).
    pub fn time_left(&self, id: i64) -> Option<Duration> {
        self.lock().get(&id).and_then(|cursor| cursor.time_left)
    }

    /// Takes cursor `id`'s source for one `getMore`, after the checks MongoDB makes.
    fn check_out(
        &self,
        id: i64,
        namespace: &str,
        requester: &CursorOwner,
    ) -> Result<CheckedOut<'_>, OpError> {
        let mut cursors = self.lock();
        let cursor = cursors.get_mut(&id).ok_or(OpError::CursorNotFound(id))?;
        if cursor.namespace != namespace {
            return Err(OpError::Unauthorized(format!(
                "Requested getMore on namespace '{namespace}', but cursor belongs to a different namespace {}",
                cursor.namespace
            )));
        }
        if let Some(refusal) = cursor.owner.refusal(requester, id, "run getMore on") {
            return Err(refusal);
        }
        let source = cursor
            .source
            .take()
            .ok_or_else(|| OpError::CursorInUse(format!("cursor id {id} is already in use")))?;
        let interrupt = crate::compute::current_interrupt();
        interrupt.set_now(cursor.now);
        if let Some(time) = cursor.cluster_time {
            interrupt.set_cluster_time(time);
        }
        Ok(CheckedOut {
            registry: self,
            id,
            source: Some(source),
        })
    }

    /// Kills the given cursors of `namespace` for `requester`; returns (killed, not found).
    /// A cursor of another session or user refuses the whole command, and nothing is killed.
    pub fn kill(
        &self,
        namespace: &str,
        ids: &[i64],
        requester: &CursorOwner,
    ) -> Result<(Vec<i64>, Vec<i64>), OpError> {
        let mut cursors = self.lock();
        for id in ids {
            if let Some(cursor) = cursors.get(id).filter(|c| c.namespace == namespace) {
                if let Some(refusal) = cursor.owner.refusal(requester, *id, "kill") {
                    return Err(refusal);
                }
            }
        }
        let mut killed = Vec::new();
        let mut not_found = Vec::new();
        for id in ids {
            match cursors.get(id) {
                Some(cursor) if cursor.namespace == namespace => {
                    cursors.remove(id);
                    killed.push(*id);
                }
                _ => not_found.push(*id),
            }
        }
        Ok((killed, not_found))
    }

    /// Kills every cursor of the given logical sessions (`endSessions`).
    pub fn kill_sessions(&self, sessions: &[Bson]) {
        self.lock().retain(|_, cursor| {
            cursor
                .owner
                .session
                .as_ref()
                .is_none_or(|s| !sessions.contains(s))
        });
    }

    /// Kills every cursor (`killAllSessions`).
    pub fn kill_all(&self) {
        self.lock().clear();
    }

    /// Closes cursors idle for longer than the idle timeout, except `noCursorTimeout` ones
    /// and those being read; returns how many.
    pub fn reap_idle(&self) -> usize {
        self.reap_idle_after(self.limits.idle_timeout)
    }

    fn reap_idle_after(&self, max_idle: Duration) -> usize {
        let mut cursors = self.lock();
        let before = cursors.len();
        cursors.retain(|_, cursor| {
            cursor.no_timeout || cursor.source.is_none() || cursor.last_used.elapsed() < max_idle
        });
        let closed = before - cursors.len();
        self.timed_out.fetch_add(closed as u64, Ordering::Relaxed);
        closed
    }

    /// Number of open cursors.
    pub fn open_count(&self) -> usize {
        self.lock().len()
    }

    /// The numbers `serverStatus.metrics.cursor` reports.
    pub fn metrics(&self) -> CursorMetrics {
        let cursors = self.lock();
        CursorMetrics {
            open: cursors.len() as u64,
            open_no_timeout: cursors.values().filter(|c| c.no_timeout).count() as u64,
            open_pinned: cursors.values().filter(|c| c.source.is_none()).count() as u64,
            total_opened: self.total_opened.load(Ordering::Relaxed),
            timed_out: self.timed_out.load(Ordering::Relaxed),
            more_than_one_batch: self.more_than_one_batch.load(Ordering::Relaxed),
        }
    }
}

/// A cursor's source taken out for one `getMore`. Dropped before it is handed back (the
/// read failed, or its command was cancelled part way), it closes the cursor: a cursor
/// whose read stopped part way cannot say where it is.
struct CheckedOut<'a> {
    registry: &'a CursorRegistry,
    id: i64,
    source: Option<ResultSource>,
}

impl Drop for CheckedOut<'_> {
    fn drop(&mut self) {
        if self.source.is_some() {
            self.registry.lock().remove(&self.id);
        }
    }
}

/// Takes up to `limit` documents, stopping early once the batch passes the byte budget.
pub fn take_batch(
    results: &mut VecDeque<RawDocumentBuf>,
    limit: BatchLimit,
) -> Vec<RawDocumentBuf> {
    let mut batch = Vec::new();
    let mut bytes = 0usize;
    while batch.len() < limit.documents {
        let Some(next) = results.front() else { break };
        let size = next.as_bytes().len();
        if !batch.is_empty() && bytes + size > limit.bytes {
            break;
        }
        bytes += size;
        if let Some(doc) = results.pop_front() {
            batch.push(doc);
        }
    }
    batch
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn docs(n: i32) -> Vec<RawDocumentBuf> {
        (0..n)
            .map(|i| RawDocumentBuf::try_from(&doc! {"i": i}).unwrap())
            .collect()
    }

    fn options(batch_size: Option<usize>, single_batch: bool) -> BatchOptions {
        BatchOptions {
            batch_size,
            single_batch,
            no_timeout: false,
        }
    }

    /// `getMore` on a whole-result cursor, without a store (its documents are in memory).
    fn next(
        registry: &CursorRegistry,
        id: i64,
        namespace: &str,
        size: Option<usize>,
        who: &CursorOwner,
    ) -> Result<Batch, OpError> {
        let mut checked_out = registry.check_out(id, namespace, who)?;
        let Some(ResultSource::Documents(rest)) = checked_out.source.as_mut() else {
            panic!("a whole-result cursor");
        };
        let documents = take_batch(rest, next_batch_limit(size));
        let cursor_id = registry.hand_back(&mut checked_out, Instant::now());
        Ok(Batch {
            documents,
            cursor_id,
        })
    }

    #[test]
    fn batches_until_exhausted() {
        let registry = CursorRegistry::default();
        let anyone = CursorOwner::default();
        let first = registry
            .first_batch("d.c", docs(10), options(Some(4), false), anyone.clone())
            .unwrap();
        assert_eq!(first.documents.len(), 4);
        assert_ne!(first.cursor_id, 0);
        let second = next(&registry, first.cursor_id, "d.c", Some(4), &anyone).unwrap();
        assert_eq!(
            bson::Document::try_from(&second.documents[0]).unwrap(),
            doc! {"i": 4}
        );
        let third = next(&registry, first.cursor_id, "d.c", Some(4), &anyone).unwrap();
        assert_eq!((third.documents.len(), third.cursor_id), (2, 0));
        let gone = next(&registry, first.cursor_id, "d.c", None, &anyone).unwrap_err();
        assert_eq!(gone.code(), 43);
    }

    #[test]
    fn single_batch_and_small_results_open_no_cursor() {
        let registry = CursorRegistry::default();
        let open = |n, single| {
            registry
                .first_batch(
                    "d.c",
                    docs(n),
                    options(None, single),
                    CursorOwner::default(),
                )
                .unwrap()
                .cursor_id
        };
        assert_eq!(open(3, false), 0);
        assert_eq!(open(300, true), 0);
        assert_eq!(registry.open_count(), 0);
    }

    #[test]
    fn other_sessions_users_and_namespaces_are_refused() {
        let registry = CursorRegistry::default();
        let mine = CursorOwner {
            session: Some(Bson::Int32(1)),
            user: Some(("admin".into(), "root".into())),
        };
        let other_session = CursorOwner {
            session: Some(Bson::Int32(2)),
            ..mine.clone()
        };
        let other_user = CursorOwner {
            user: Some(("app".into(), "reader".into())),
            ..mine.clone()
        };
        let batch = registry
            .first_batch("d.c", docs(10), options(Some(1), false), mine.clone())
            .unwrap();
        let id = batch.cursor_id;
        for stranger in [&other_session, &other_user] {
            assert_eq!(
                next(&registry, id, "d.c", None, stranger)
                    .unwrap_err()
                    .code(),
                13
            );
        }
        assert_eq!(
            registry.kill("d.c", &[id], &other_user).unwrap_err().code(),
            13
        );
        assert!(next(&registry, id, "d.other", None, &mine).is_err());
        assert_eq!(
            next(&registry, id, "d.c", Some(1), &mine)
                .unwrap()
                .cursor_id,
            id
        );
        registry.kill_sessions(&[Bson::Int32(1)]);
        assert_eq!(registry.open_count(), 0);
    }

    #[test]
    fn kill_and_reap() {
        let registry = CursorRegistry::default();
        let open = || {
            registry
                .first_batch(
                    "d.c",
                    docs(10),
                    options(Some(1), false),
                    CursorOwner::default(),
                )
                .unwrap()
                .cursor_id
        };
        let a = open();
        let (killed, not_found) = registry
            .kill("d.c", &[a, 42], &CursorOwner::default())
            .unwrap();
        assert_eq!((killed, not_found), (vec![a], vec![42]));
        open();
        assert_eq!(registry.reap_idle_after(Duration::ZERO), 1);
        assert_eq!(registry.metrics().timed_out, 1);
        assert_eq!(registry.metrics().total_opened, 2);
    }

    #[test]
    fn no_cursor_timeout_survives_the_reaper() {
        let registry = CursorRegistry::default();
        let kept = BatchOptions {
            no_timeout: true,
            ..options(Some(1), false)
        };
        let id = registry
            .first_batch("d.c", docs(3), kept, CursorOwner::default())
            .unwrap()
            .cursor_id;
        registry
            .first_batch(
                "d.c",
                docs(3),
                options(Some(1), false),
                CursorOwner::default(),
            )
            .unwrap();
        assert_eq!(registry.reap_idle_after(Duration::ZERO), 1);
        let rest = next(&registry, id, "d.c", None, &CursorOwner::default()).unwrap();
        assert_eq!(rest.documents.len(), 2);
    }

    #[test]
    fn open_cursors_are_limited_in_total_and_per_session() {
        let registry = CursorRegistry::new(CursorLimits {
            max_open: 3,
            max_open_per_session: 2,
            ..CursorLimits::default()
        });
        let in_session = |n: i32| CursorOwner {
            session: Some(Bson::Int32(n)),
            user: None,
        };
        let open = |owner: CursorOwner| {
            registry.first_batch("d.c", docs(5), options(Some(1), false), owner)
        };
        let first = open(in_session(1)).unwrap().cursor_id;
        open(in_session(1)).unwrap();
        assert_eq!(open(in_session(1)).unwrap_err().code(), 146);
        open(in_session(2)).unwrap();
        assert_eq!(open(in_session(3)).unwrap_err().code(), 146);
        // A result that fits in its first batch needs no cursor, so no slot.
        assert_eq!(
            registry
                .first_batch("d.c", docs(1), options(None, false), in_session(3))
                .unwrap()
                .cursor_id,
            0
        );
        registry.kill("d.c", &[first], &in_session(1)).unwrap();
        open(in_session(3)).unwrap();
    }

    #[test]
    fn a_cursor_is_read_by_one_get_more_at_a_time_and_closed_when_abandoned() {
        let registry = CursorRegistry::default();
        let anyone = CursorOwner::default();
        let id = registry
            .first_batch("d.c", docs(5), options(Some(1), false), anyone.clone())
            .unwrap()
            .cursor_id;
        let reading = registry.check_out(id, "d.c", &anyone).unwrap();
        assert_eq!(registry.metrics().open_pinned, 1);
        assert_eq!(
            registry
                .check_out(id, "d.c", &anyone)
                .err()
                .map(|e| e.code()),
            Some(143)
        );
        drop(reading);
        assert_eq!(registry.open_count(), 0);
    }
}
