//! The operations running now, as `currentOp`, `$currentOp` and `killOp` see them: each
//! command a front end runs is registered here for as long as it runs, with an operation id
//! (`opid`), what it is (`op`, `ns`, the command with its secrets taken out), who sent it
//! (client, connection, user, application), when it started, its [`Interrupt`] (which
//! `killOp` cancels) and, through the interrupt, the SQL statement it runs or ran last.
//!
//! Core state beside the sessions and cursors: a front end registers its commands with
//! [`OperationRegistry::begin`] and keeps the [`RunningGuard`] until the command ends.
//!
//! Not for: the shape of `currentOp`'s reply (the front end builds it from
//! [`RunningOperation`]) or what a user may see and kill (the front end decides with its
//! roles).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use bson::{Bson, Document};

use crate::interrupt::{Interrupt, Interruption};

/// What a value holding a secret reads in `currentOp`, `system.profile` and the log
/// (MongoDB's own spelling for a redacted password).
pub const SECRET: &str = "xxx";

/// Who runs operations: one client connection or REST request, described once and shared
/// by its operations.
#[derive(Debug, Clone, Default)]
pub struct OperationClient {
    /// The client's address.
    pub client: Option<String>,
    /// The connection's number (`connectionId`), for a wire command.
    pub connection_id: Option<i64>,
    /// `desc`: which worker runs it (`conn12`).
    pub desc: String,
    /// The `application.name` of the client's metadata.
    pub app_name: Option<String>,
    /// The client's metadata as sent in its handshake.
    pub client_metadata: Option<Document>,
}

/// What a front end says of an operation when it starts it.
#[derive(Debug, Clone)]
pub struct OperationStart {
    /// MongoDB's `op`: `command`, `query`, `getmore`, `insert`, `update`, `remove`.
    pub op: &'static str,
    /// `db.collection`, or `db.$cmd` for a command on no collection.
    pub ns: String,
    /// The command as the client sent it, secrets taken out ([`without_secrets`]).
    pub command: Document,
    /// Who sent it.
    pub client: Arc<OperationClient>,
    /// The authenticated user (`(db, name)`), if any.
    pub user: Option<(String, String)>,
    /// The command's `lsid`, if it has one.
    pub lsid: Option<Document>,
}

/// One operation running now.
#[derive(Debug)]
pub struct RunningOperation {
    pub opid: u32,
    pub start: OperationStart,
    /// When it started (for `secs_running`/`microsecs_running`).
    pub started: Instant,
    /// The same, as a date (`currentOpTime` is the time of the listing; this is for logs).
    pub started_at: SystemTime,
    /// Cancelled by `killOp`.
    pub interrupt: Interrupt,
}

impl RunningOperation {
    /// Whether `killOp` has asked it to stop.
    pub fn kill_pending(&self) -> bool {
        self.interrupt.cancellation() == Some(Interruption::Killed)
    }

    /// The SQL statement it runs now, or ran last.
    pub fn statement(&self) -> Option<Arc<str>> {
        self.interrupt.statement()
    }
}

/// Every operation running now, by `opid`.
#[derive(Debug)]
pub struct OperationRegistry {
    next_opid: AtomicU32,
    running: Mutex<BTreeMap<u32, Arc<RunningOperation>>>,
}

impl Default for OperationRegistry {
    fn default() -> Self {
        OperationRegistry {
            next_opid: AtomicU32::new(1),
            running: Mutex::new(BTreeMap::new()),
        }
    }
}

/// What [`OperationRegistry::kill`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillOutcome {
    /// The operation was told to stop.
    Killed,
    /// No operation runs with that `opid` (it ended, or never was).
    NotFound,
    /// It belongs to someone the requester may not kill.
    NotAllowed,
}

impl OperationRegistry {
    /// Registers an operation that runs under `interrupt`; it is listed until the guard
    /// is dropped.
    pub fn begin(&self, start: OperationStart, interrupt: Interrupt) -> RunningGuard<'_> {
        let opid = self.next_opid.fetch_add(1, Ordering::Relaxed);
        let operation = Arc::new(RunningOperation {
            opid,
            start,
            started: Instant::now(),
            started_at: SystemTime::now(),
            interrupt,
        });
        if let Ok(mut running) = self.running.lock() {
            running.insert(opid, operation.clone());
        }
        RunningGuard {
            registry: self,
            operation,
        }
    }

    /// The operations running now, oldest first.
    pub fn list(&self) -> Vec<Arc<RunningOperation>> {
        match self.running.lock() {
            Ok(running) => running.values().cloned().collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Asks operation `opid` to stop (11601 Interrupted at its next check, its running
    /// statement cancelled in the database) if `may_kill` allows it.
    pub fn kill(&self, opid: u32, may_kill: impl Fn(&RunningOperation) -> bool) -> KillOutcome {
        let found = match self.running.lock() {
            Ok(running) => running.get(&opid).cloned(),
            Err(_) => None,
        };
        match found {
            None => KillOutcome::NotFound,
            Some(operation) if !may_kill(&operation) => KillOutcome::NotAllowed,
            Some(operation) => {
                tracing::info!(opid, ns = %operation.start.ns, "killing operation");
                operation.interrupt.cancel(Interruption::Killed);
                KillOutcome::Killed
            }
        }
    }
}

/// Keeps an operation listed; dropping it ends the listing.
pub struct RunningGuard<'a> {
    registry: &'a OperationRegistry,
    operation: Arc<RunningOperation>,
}

impl RunningGuard<'_> {
    /// The operation this guard keeps listed.
    pub fn operation(&self) -> &Arc<RunningOperation> {
        &self.operation
    }
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut running) = self.registry.running.lock() {
            running.remove(&self.operation.opid);
        }
    }
}

/// The command `name` with the secrets it carries replaced by [`SECRET`]: the password
/// of `createUser`/`updateUser` (`pwd`), the SASL payload of `saslStart`/`saslContinue`
/// and of a handshake's `speculativeAuthenticate`. What `currentOp`, `system.profile` and
/// the log show of a command goes through here.
pub fn without_secrets(name: &str, command: &Document) -> Document {
    let secret_fields: &[&str] = match name {
        "createUser" | "updateUser" => &["pwd"],
        "saslStart" | "saslContinue" | "authenticate" => &["payload", "key", "nonce"],
        "hello" | "isMaster" | "ismaster" => &["speculativeAuthenticate"],
        _ => &[],
    };
    if secret_fields.is_empty() {
        return command.clone();
    }
    command
        .iter()
        .map(|(key, value)| {
            let value = if secret_fields.contains(&key.as_str()) {
                Bson::String(SECRET.into())
            } else {
                value.clone()
            };
            (key.clone(), value)
        })
        .collect()
}

/// The shape of `command` with every value replaced by `"###"` (MongoDB's
/// `redactClientLogData`): field names stay, values (strings, numbers, array elements)
/// never reach the log.
pub fn shape_of(command: &Document) -> Document {
    command
        .iter()
        .map(|(key, value)| (key.clone(), shape_of_value(value)))
        .collect()
}

fn shape_of_value(value: &Bson) -> Bson {
    match value {
        Bson::Document(document) => Bson::Document(shape_of(document)),
        Bson::Array(items) => Bson::Array(items.iter().map(shape_of_value).collect()),
        _ => Bson::String("###".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn start(ns: &str) -> OperationStart {
        OperationStart {
            op: "command",
            ns: ns.into(),
            command: doc! {"ping": 1},
            client: Arc::new(OperationClient::default()),
            user: None,
            lsid: None,
        }
    }

    #[test]
    fn operations_are_listed_while_they_run_and_killed_by_opid() {
        let registry = OperationRegistry::default();
        let interrupt = Interrupt::default();
        let guard = registry.begin(start("db.c"), interrupt.clone());
        let opid = guard.operation().opid;
        assert_eq!(registry.list().len(), 1);
        assert_eq!(registry.kill(opid, |_| false), KillOutcome::NotAllowed);
        assert_eq!(interrupt.status(), Ok(()));
        assert_eq!(registry.kill(opid, |_| true), KillOutcome::Killed);
        assert_eq!(interrupt.status(), Err(Interruption::Killed));
        assert!(guard.operation().kill_pending());
        drop(guard);
        assert!(registry.list().is_empty());
        assert_eq!(registry.kill(opid, |_| true), KillOutcome::NotFound);
    }

    #[test]
    fn passwords_and_sasl_payloads_never_show() {
        let create = doc! {"createUser": "u", "pwd": "hunter2", "roles": []};
        assert_eq!(
            without_secrets("createUser", &create).get_str("pwd").ok(),
            Some(SECRET)
        );
        let sasl = doc! {"saslStart": 1, "mechanism": "PLAIN", "payload": "\0u\0hunter2"};
        let shown = without_secrets("saslStart", &sasl);
        assert_eq!(shown.get_str("payload").ok(), Some(SECRET));
        assert_eq!(shown.get_str("mechanism").ok(), Some("PLAIN"));
        let find = doc! {"find": "c", "filter": {"a": [1, {"b": "x"}]}};
        assert_eq!(
            shape_of(&find),
            doc! {"find": "###", "filter": {"a": ["###", {"b": "###"}]}}
        );
    }
}
