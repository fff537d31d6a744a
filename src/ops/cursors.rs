//! Server-side cursors: the rest of a `find`/`aggregate` result after its first batch,
//! handed out by `getMore` and ended by `killCursors`, by the end of their logical session,
//! or after 10 minutes idle (MongoDB's `cursorTimeoutMillis`).
//!
//! Ownership follows MongoDB: a cursor belongs to the logical session (`lsid`) and the user
//! that created it, not to a TCP connection, because drivers pool connections and may send
//! `getMore` on any of them. A `getMore` from another session or another user, and a
//! `killCursors` from another user, is refused with 13 Unauthorized, and the cursor lives on
//! for its owner.
//!
//! Documents are held as BSON bytes: a batch of stored documents goes to the client as the
//! store returned it, without being decoded.
//!
//! Not for: producing results (commands materialize them and register the remainder here).

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bson::{Bson, RawDocumentBuf};

use super::error::OpError;

/// Idle cursors are closed after this long (MongoDB's default cursorTimeoutMillis).
pub const CURSOR_IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// A batch stops growing once it passes this many bytes (MongoDB's 16 MiB reply budget).
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024 - 16 * 1024;
/// Documents in a first batch when the client does not say (MongoDB's default).
pub const DEFAULT_FIRST_BATCH: usize = 101;

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

/// The rest of one result.
struct Cursor {
    namespace: String,
    remaining: VecDeque<RawDocumentBuf>,
    owner: CursorOwner,
    last_used: Instant,
    /// `noCursorTimeout`: never closed for being idle (only by exhaustion, `killCursors`
    /// or the end of its session).
    no_timeout: bool,
}

/// Every open cursor of the process.
pub struct CursorRegistry {
    cursors: Mutex<HashMap<i64, Cursor>>,
    id_hasher: RandomState,
    id_counter: AtomicU64,
}

impl Default for CursorRegistry {
    fn default() -> Self {
        CursorRegistry {
            cursors: Mutex::new(HashMap::new()),
            id_hasher: RandomState::new(),
            id_counter: AtomicU64::new(1),
        }
    }
}

/// One batch handed to the client and the cursor id to continue with (0 when exhausted).
#[derive(Debug)]
pub struct Batch {
    pub documents: Vec<RawDocumentBuf>,
    pub cursor_id: i64,
}

impl CursorRegistry {
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

    /// Splits off the first batch of `results`; registers a cursor for the rest if any.
    pub fn first_batch(
        &self,
        namespace: &str,
        mut results: VecDeque<RawDocumentBuf>,
        options: BatchOptions,
        owner: CursorOwner,
    ) -> Batch {
        let first_size = options.batch_size.unwrap_or(DEFAULT_FIRST_BATCH);
        let documents = take_batch(&mut results, first_size);
        if results.is_empty() || options.single_batch {
            return Batch {
                documents,
                cursor_id: 0,
            };
        }
        let id = self.new_id();
        let cursor = Cursor {
            namespace: namespace.to_string(),
            remaining: results,
            owner,
            last_used: Instant::now(),
            no_timeout: options.no_timeout,
        };
        self.lock().insert(id, cursor);
        Batch {
            documents,
            cursor_id: id,
        }
    }

    /// The next batch of cursor `id` (`getMore`).
    pub fn next_batch(
        &self,
        id: i64,
        namespace: &str,
        batch_size: Option<usize>,
        requester: &CursorOwner,
    ) -> Result<Batch, OpError> {
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
        let documents = take_batch(&mut cursor.remaining, batch_size.unwrap_or(usize::MAX));
        cursor.last_used = Instant::now();
        if cursor.remaining.is_empty() {
            cursors.remove(&id);
            return Ok(Batch {
                documents,
                cursor_id: 0,
            });
        }
        Ok(Batch {
            documents,
            cursor_id: id,
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

    /// Closes cursors idle for longer than `max_idle`, except `noCursorTimeout` ones;
    /// returns how many.
    pub fn reap_idle(&self, max_idle: Duration) -> usize {
        let mut cursors = self.lock();
        let before = cursors.len();
        cursors.retain(|_, cursor| cursor.no_timeout || cursor.last_used.elapsed() < max_idle);
        before - cursors.len()
    }

    /// Number of open cursors.
    pub fn open_count(&self) -> usize {
        self.lock().len()
    }
}

/// Takes up to `max_docs` documents, stopping early once the batch passes the byte budget.
fn take_batch(results: &mut VecDeque<RawDocumentBuf>, max_docs: usize) -> Vec<RawDocumentBuf> {
    let mut batch = Vec::new();
    let mut bytes = 0usize;
    while batch.len() < max_docs {
        let Some(next) = results.front() else { break };
        let size = next.as_bytes().len();
        if !batch.is_empty() && bytes + size > MAX_BATCH_BYTES {
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

    fn docs(n: i32) -> VecDeque<RawDocumentBuf> {
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

    #[test]
    fn batches_until_exhausted() {
        let registry = CursorRegistry::default();
        let anyone = CursorOwner::default();
        let first = registry.first_batch("d.c", docs(10), options(Some(4), false), anyone.clone());
        assert_eq!(first.documents.len(), 4);
        assert_ne!(first.cursor_id, 0);
        let second = registry
            .next_batch(first.cursor_id, "d.c", Some(4), &anyone)
            .unwrap();
        assert_eq!(
            bson::Document::try_from(&second.documents[0]).unwrap(),
            doc! {"i": 4}
        );
        let third = registry
            .next_batch(first.cursor_id, "d.c", Some(4), &anyone)
            .unwrap();
        assert_eq!((third.documents.len(), third.cursor_id), (2, 0));
        let gone = registry
            .next_batch(first.cursor_id, "d.c", None, &anyone)
            .unwrap_err();
        assert_eq!(gone.code(), 43);
    }

    #[test]
    fn single_batch_and_small_results_open_no_cursor() {
        let registry = CursorRegistry::default();
        assert_eq!(
            registry
                .first_batch("d.c", docs(3), options(None, false), CursorOwner::default())
                .cursor_id,
            0
        );
        assert_eq!(
            registry
                .first_batch(
                    "d.c",
                    docs(300),
                    options(None, true),
                    CursorOwner::default()
                )
                .cursor_id,
            0
        );
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
        let batch = registry.first_batch("d.c", docs(10), options(Some(1), false), mine.clone());
        let id = batch.cursor_id;
        for stranger in [&other_session, &other_user] {
            assert_eq!(
                registry
                    .next_batch(id, "d.c", None, stranger)
                    .unwrap_err()
                    .code(),
                13
            );
        }
        assert_eq!(
            registry.kill("d.c", &[id], &other_user).unwrap_err().code(),
            13
        );
        assert!(registry.next_batch(id, "d.other", None, &mine).is_err());
        assert_eq!(
            registry
                .next_batch(id, "d.c", Some(1), &mine)
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
        let a = registry
            .first_batch(
                "d.c",
                docs(10),
                options(Some(1), false),
                CursorOwner::default(),
            )
            .cursor_id;
        let (killed, not_found) = registry
            .kill("d.c", &[a, 42], &CursorOwner::default())
            .unwrap();
        assert_eq!((killed, not_found), (vec![a], vec![42]));
        registry.first_batch(
            "d.c",
            docs(10),
            options(Some(1), false),
            CursorOwner::default(),
        );
        assert_eq!(registry.reap_idle(Duration::ZERO), 1);
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
            .cursor_id;
        registry.first_batch(
            "d.c",
            docs(3),
            options(Some(1), false),
            CursorOwner::default(),
        );
        assert_eq!(registry.reap_idle(Duration::ZERO), 1);
        let next = registry
            .next_batch(id, "d.c", None, &CursorOwner::default())
            .unwrap();
        assert_eq!(next.documents.len(), 2);
    }
}
