//! The session fields of a command on the wire — `lsid`, `txnNumber`, `startTransaction`,
//! `autocommit` — and how a command runs with them: plainly, as a retryable write (applied
//! once, its reply recorded with it), or inside its session's multi-document transaction;
//! `commitTransaction` and `abortTransaction`; and the session commands (`startSession`,
//! `refreshSessions`, `endSessions`, `killSessions`, `killAllSessions`,
//! `killAllSessionsByPattern`). Error labels drivers act on are added here
//! (`TransientTransactionError`, `UnknownTransactionCommitResult`).
//!
//! Not for: the session states and their rules (`ops::sessions`), or running the command
//! itself (`dispatch`).

use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, Document};

use super::command_table::Command;
use super::context::CommandContext;
use super::dispatch::{run_with_retry, CommandReply};
use super::error::{CommandResult, OpError, ReplyResult};
use super::request::CommandRequest;
use crate::ops::sessions::SessionKey;
use crate::ops::transaction::SessionTransaction;
use crate::store::{StoreError, WriteRecord};

/// What a command says about its session.
#[derive(Debug, Default, PartialEq)]
pub struct SessionFields {
    /// `lsid.id`, a UUID's bytes.
    pub session: Option<Vec<u8>>,
    pub txn_number: Option<i64>,
    /// `startTransaction: true`.
    pub start: bool,
    /// `autocommit: false`: the command is part of a multi-document transaction.
    pub in_transaction: bool,
}

impl SessionFields {
    /// Reads and checks the fields as MongoDB does.
    pub fn parse(body: &Document) -> Result<SessionFields, OpError> {
        let session = match body.get("lsid") {
            None => None,
            Some(Bson::Document(lsid)) => match lsid.get("id") {
                Some(Bson::Binary(id)) => Some(id.bytes.clone()),
                _ => {
                    return Err(OpError::TypeMismatch(
                        "lsid.id must be a UUID (BinData subtype 4)".into(),
                    ))
                }
            },
            Some(_) => return Err(OpError::TypeMismatch("lsid must be an object".into())),
        };
        let txn_number = match body.get("txnNumber") {
            None => None,
            Some(Bson::Int64(n)) => Some(*n),
            Some(Bson::Int32(n)) => Some(i64::from(*n)),
            Some(_) => {
                return Err(OpError::TypeMismatch(
                    "txnNumber must be a 64-bit integer".into(),
                ))
            }
        };
        let start = match body.get("startTransaction") {
            None => false,
            Some(Bson::Boolean(true)) => true,
            Some(_) => {
                return Err(OpError::InvalidOptions(
                    "startTransaction must be true if specified".into(),
                ))
            }
        };
        let in_transaction = match body.get("autocommit") {
            None => false,
            Some(Bson::Boolean(false)) => true,
            Some(_) => {
                return Err(OpError::InvalidOptions(
                    "autocommit must be false if specified".into(),
                ))
            }
        };
        if txn_number.is_some_and(|n| n < 0) {
            return Err(OpError::BadValue("txnNumber must not be negative".into()));
        }
        if txn_number.is_some() && session.is_none() {
            return Err(OpError::InvalidOptions(
                "Transaction number requires a session ID to also be specified".into(),
            ));
        }
        if in_transaction && txn_number.is_none() {
            return Err(OpError::InvalidOptions(
                "'autocommit' field requires a transaction number to also be specified".into(),
            ));
        }
        if start && !in_transaction {
            return Err(OpError::InvalidOptions(
                "'startTransaction' field requires 'autocommit' field to also be specified".into(),
            ));
        }
        Ok(SessionFields {
            session,
            txn_number,
            start,
            in_transaction,
        })
    }
}

/// Whether `command` may run inside a multi-document transaction.
fn allowed_in_transaction(command: Command) -> bool {
    matches!(
        command,
        Command::Find
            | Command::GetMore
            | Command::Aggregate
            | Command::Distinct
            | Command::Insert
            | Command::Update
            | Command::Delete
            | Command::FindAndModify
            | Command::KillCursors
            | Command::CommitTransaction
            | Command::AbortTransaction
    )
}

/// Whether `command` is a retryable write (applied once per `txnNumber`).
fn retryable_write(command: Command) -> bool {
    matches!(
        command,
        Command::Insert | Command::Update | Command::Delete | Command::FindAndModify
    )
}

/// Runs `request` with its session fields: plainly, as a retryable write, or in its
/// session's transaction.
pub async fn run(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
    command: Command,
) -> ReplyResult {
    let fields = SessionFields::parse(&request.body)?;
    after_cluster_time(context, request)?;
    if !fields.in_transaction && snapshot_read(request, command)? {
        let state = &context.server.state;
        let mut snapshot = SessionTransaction::begin_snapshot_read(state.store.as_ref()).await?;
        let mut joined = CommandContext {
            server: context.server,
            connection: &mut *context.connection,
            transaction: Some(&mut snapshot),
        };
        let reply = run_with_retry(&mut joined, request, command).await;
        snapshot.rollback().await?;
        return reply;
    }
    let Some(id) = fields.session.clone() else {
        if matches!(
            command,
            Command::CommitTransaction | Command::AbortTransaction
        ) {
            return Err(OpError::InvalidOptions(format!(
                "{} must be run within a session",
                request.name
            )));
        }
        return run_with_retry(context, request, command).await;
    };
    let key = SessionKey {
        id,
        user: context.cursor_owner(request).user,
    };
    let slot = context.server.sessions.touch(&key);
    match fields.txn_number {
        None => {
            if matches!(
                command,
                Command::CommitTransaction | Command::AbortTransaction
            ) {
                return Err(OpError::InvalidOptions(format!(
                    "{} requires a txnNumber",
                    request.name
                )));
            }
            run_with_retry(context, request, command).await
        }
        Some(txn) if !fields.in_transaction => {
            if !retryable_write(command) {
                return Err(OpError::NotRetryable(format!(
                    "txnNumber may only be provided for multi-document transactions and retryable write commands. autocommit:false was not provided, and {} is not a retryable write command.",
                    request.name
                )));
            }
            let mut session = slot.enter().await;
            session.begin_retryable_write(txn)?;
            retryable(context, request, command, &key, txn).await
        }
        Some(txn) => {
            if fields.start
                && matches!(
                    command,
                    Command::CommitTransaction | Command::AbortTransaction | Command::KillCursors
                )
            {
                return Err(OpError::NotInTransaction(format!(
                    "Cannot start a transaction with {}",
                    request.name
                )));
            }
            if !allowed_in_transaction(command) {
                return Err(OpError::NotInTransaction(format!(
                    "Cannot run '{}' in a multi-document transaction.",
                    request.name
                )));
            }
            let mut session = slot.enter().await;
            let result = match command {
                Command::CommitTransaction => {
                    let catalog = &context.server.state.catalog;
                    session
                        .commit(txn, catalog)
                        .await
                        .map(|()| CommandReply::from(Document::new()))
                        .map_err(|error| (error, Phase::Commit))
                }
                Command::AbortTransaction => session
                    .abort_transaction(txn)
                    .map(|()| CommandReply::from(Document::new()))
                    .map_err(|error| (error, Phase::Abort)),
                _ => {
                    let result =
                        in_transaction(context, request, command, &fields, &mut session).await;
                    if result.as_ref().is_ok_and(has_write_errors) || result.is_err() {
                        session.abort("a command in it failed");
                    }
                    result.map_err(|error| (error, Phase::Statement))
                }
            };
            result.or_else(|(error, phase)| Ok(labelled(&error, phase).into()))
        }
    }
}

/// Runs one command of transaction `fields.txn_number` on its session.
async fn in_transaction(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
    command: Command,
    fields: &SessionFields,
    session: &mut crate::ops::sessions::ServerSession,
) -> ReplyResult {
    let txn = fields.txn_number.unwrap_or_default();
    check_concerns(request, fields.start)?;
    let store = context.server.state.store.as_ref();
    let open = session
        .enter_transaction(store, txn, fields.start, context.connection.id)
        .await?;
    let mut joined = CommandContext {
        server: context.server,
        connection: &mut *context.connection,
        transaction: Some(&mut open.transaction),
    };
    let result = run_with_retry(&mut joined, request, command).await;
    open.command_done();
    result
}

/// The read and write concerns a command in a transaction may carry: a `readConcern` only
/// on its first command (level `local`, `majority` or `snapshot`), a `writeConcern` only on
/// `commitTransaction`/`abortTransaction`.
fn check_concerns(request: &CommandRequest, start: bool) -> Result<(), OpError> {
    if request.body.contains_key("writeConcern") {
        return Err(OpError::InvalidOptions(
            "writeConcern is not allowed within a multi-statement transaction".into(),
        ));
    }
    let Some(read_concern) = request.body.get("readConcern") else {
        return Ok(());
    };
    if !start {
        return Err(OpError::InvalidOptions(
            "Only the first command in a transaction may specify a readConcern".into(),
        ));
    }
    let Bson::Document(read_concern) = read_concern else {
        return Err(OpError::TypeMismatch(
            "readConcern must be an object".into(),
        ));
    };
    match read_concern.get("level") {
        None => Ok(()),
        Some(Bson::String(level)) if ["local", "majority", "snapshot"].contains(&level.as_str()) => {
            Ok(())
        }
        Some(other) => Err(OpError::InvalidOptions(format!(
            "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run in a transaction, not {other}"
        ))),
    }
}

/// `readConcern.afterClusterTime` (causal consistency): the read must see every write
/// acknowledged at or before that time, on any instance. Every write docgate acknowledged
/// is committed in the one database, so each statement sees it already; the clock moves
/// to that time so that this reply's `operationTime` is not earlier.
fn after_cluster_time(
    context: &CommandContext<'_>,
    request: &CommandRequest,
) -> Result<(), OpError> {
    let Some(Bson::Document(read_concern)) = request.body.get("readConcern") else {
        return Ok(());
    };
    match read_concern.get("afterClusterTime") {
        None => Ok(()),
        Some(Bson::Timestamp(time)) => {
            let clock = &context.server.state.cluster_time;
            if !clock.within_drift(*time) {
                return Err(OpError::InvalidOptions(format!(
                    "readConcern afterClusterTime {} is too far ahead of this node's clock",
                    time.time
                )));
            }
            clock.advance_to(*time);
            Ok(())
        }
        Some(other) => Err(OpError::TypeMismatch(format!(
            "readConcern.afterClusterTime must be a timestamp, not {}",
            super::request::type_name(other)
        ))),
    }
}

/// Whether a command outside a transaction reads at `readConcern: snapshot` (find,
/// aggregate and distinct may, as in MongoDB 5.0+): at the current time only — an
/// `atClusterTime` is 239 SnapshotTooOld, since docgate keeps no history.
fn snapshot_read(request: &CommandRequest, command: Command) -> Result<bool, OpError> {
    let Some(Bson::Document(read_concern)) = request.body.get("readConcern") else {
        return Ok(false);
    };
    if read_concern.get_str("level").ok() != Some("snapshot") {
        if read_concern.contains_key("atClusterTime") {
            return Err(OpError::InvalidOptions(
                "readConcern atClusterTime is only valid with level snapshot".into(),
            ));
        }
        return Ok(false);
    }
    if command == Command::GetMore {
        // The cursor read its whole result in the snapshot already.
        return Ok(false);
    }
    if !matches!(
        command,
        Command::Find | Command::Aggregate | Command::Distinct
    ) {
        return Err(OpError::InvalidOptions(format!(
            "readConcern level snapshot is not supported for {} outside a transaction",
            request.name
        )));
    }
    if read_concern.contains_key("atClusterTime") {
        return Err(OpError::SnapshotTooOld(
            "docgate reads only at the current time: it keeps no history for atClusterTime".into(),
        ));
    }
    Ok(true)
}

/// Runs a retryable write once: a retry of `txn` answers what the first attempt recorded;
/// otherwise the write and its record commit in one SQL transaction.
async fn retryable(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
    command: Command,
    key: &SessionKey,
    txn: i64,
) -> ReplyResult {
    let state = &context.server.state;
    let mut write = SessionTransaction::begin_write(state.store.as_ref()).await?;
    if let Some(recorded) = write.session().write_record(&key.id).await? {
        if recorded.txn_number == txn {
            let mut record = Document::from_reader(recorded.reply.as_slice())
                .map_err(|e| StoreError::Corrupt(format!("write record: {e}")))?;
            if record.get_str("command").ok() != Some(request.name.as_str()) {
                return Err(OpError::IllegalOperation(format!(
                    "txnNumber {txn} of this session was used by a {} command; a retry must repeat it",
                    record.get_str("command").unwrap_or("different")
                )));
            }
            let reply = match record.remove("reply") {
                Some(Bson::Document(reply)) => reply,
                _ => return Err(StoreError::Corrupt("write record without a reply".into()).into()),
            };
            return Ok(reply.into());
        }
        if recorded.txn_number > txn {
            return Err(OpError::TransactionTooOld(format!(
                "Retryable write with txnNumber {txn} is prohibited on session because a newer retryable write with txnNumber {} has already started on this session.",
                recorded.txn_number
            )));
        }
    }
    let mut joined = CommandContext {
        server: context.server,
        connection: &mut *context.connection,
        transaction: Some(&mut write),
    };
    let reply = match run_with_retry(&mut joined, request, command).await? {
        CommandReply::Document(reply) => reply,
        CommandReply::Encoded(bytes) => Document::try_from(bytes.as_ref())
            .map_err(|e| StoreError::Corrupt(format!("reply: {e}")))?,
    };
    let record = WriteRecord {
        txn_number: txn,
        reply: doc! {"command": request.name.as_str(), "reply": reply.clone()}
            .to_vec()
            .map_err(|e| StoreError::Corrupt(format!("reply: {e}")))?,
        written_ms: bson::DateTime::now().timestamp_millis(),
    };
    write.session().put_write_record(&key.id, &record).await?;
    let capped_inserts = write.take_capped_inserts();
    write.commit(&state.catalog).await?;
    for uuid in capped_inserts {
        state.capped_inserts.announce(&uuid);
    }
    Ok(reply.into())
}

fn has_write_errors(reply: &CommandReply) -> bool {
    match reply {
        CommandReply::Document(reply) => {
            matches!(reply.get("writeErrors"), Some(Bson::Array(errors)) if !errors.is_empty())
        }
        CommandReply::Encoded(_) => false,
    }
}

/// Which step of a transaction failed, for its labels.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Statement,
    Commit,
    Abort,
}

/// The error reply of a command in a transaction, with the labels MongoDB gives: a
/// conflict, a lost connection or a transaction that is gone can be retried as a whole
/// transaction (`TransientTransactionError`); a commit whose outcome is unknown can be
/// retried as a commit (`UnknownTransactionCommitResult`).
fn labelled(error: &OpError, phase: Phase) -> Document {
    let mut reply = error.to_reply();
    let unavailable = matches!(
        error,
        OpError::Store(StoreError::Unavailable(_) | StoreError::PoolTimeout(_))
    );
    let label = match phase {
        Phase::Commit
            if unavailable || matches!(error, OpError::Store(StoreError::Interrupted(_))) =>
        {
            Some("UnknownTransactionCommitResult")
        }
        Phase::Statement | Phase::Commit
            if error.is_write_conflict()
                || unavailable
                || matches!(
                    error,
                    OpError::NoSuchTransaction(_) | OpError::LockTimeout(_)
                ) =>
        {
            Some("TransientTransactionError")
        }
        _ => None,
    };
    // Inside a transaction the statement is not retried alone: no RetryableWriteError.
    reply.remove("errorLabels");
    if let Some(label) = label {
        reply.insert("errorLabels", vec![label]);
    }
    reply
}

/// `startSession`: a new session id (drivers make their own; mongosh and tools may ask).
pub fn start_session(context: &CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let id = bson::Uuid::new().bytes().to_vec();
    let key = SessionKey {
        id: id.clone(),
        user: context.cursor_owner(request).user,
    };
    context.server.sessions.touch(&key);
    Ok(doc! {
        "id": {"id": session_id_bson(&id)},
        "timeoutMinutes": crate::mongo::limits::LOGICAL_SESSION_TIMEOUT_MINUTES,
    })
}

/// `refreshSessions`: marks the sessions used now.
pub fn refresh_sessions(context: &CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let user = context.cursor_owner(request).user;
    for id in session_ids(request, "refreshSessions")? {
        context.server.sessions.touch(&SessionKey {
            id,
            user: user.clone(),
        });
    }
    Ok(Document::new())
}

/// `endSessions` and `killSessions`: the sessions end, their transactions are aborted and
/// their cursors closed.
pub async fn end_sessions(context: &CommandContext<'_>, request: &CommandRequest) -> CommandResult {
    let ids = session_ids(request, &request.name)?;
    end(context, &ids).await;
    Ok(Document::new())
}

/// `killAllSessions` (every session, or those of the users listed) and
/// `killAllSessionsByPattern` (patterns by `users` or `lsid`; an empty list: all).
pub async fn kill_all_sessions(
    context: &CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let Bson::Array(patterns) = request.target() else {
        return Err(OpError::TypeMismatch(format!(
            "{} takes an array",
            request.name
        )));
    };
    let sessions = &context.server.sessions;
    if patterns.is_empty() {
        sessions.end_all(None).await;
        context.server.cursors.kill_all();
        return Ok(Document::new());
    }
    let mut users = Vec::new();
    let mut ids = Vec::new();
    for pattern in patterns {
        let Bson::Document(pattern) = pattern else {
            return Err(OpError::TypeMismatch(
                "a session pattern must be an object".into(),
            ));
        };
        if let Some(Bson::Document(lsid)) = pattern.get("lsid") {
            if let Some(Bson::Binary(id)) = lsid.get("id") {
                ids.push(id.bytes.clone());
            }
        }
        if let Some(Bson::Document(uid)) = pattern.get("users").or(pattern.get("user")) {
            if let (Ok(user), Ok(db)) = (uid.get_str("user"), uid.get_str("db")) {
                users.push((db.to_string(), user.to_string()));
            }
        }
        if let Some(Bson::Array(listed)) = pattern.get("users") {
            for uid in listed.iter().filter_map(Bson::as_document) {
                if let (Ok(user), Ok(db)) = (uid.get_str("user"), uid.get_str("db")) {
                    users.push((db.to_string(), user.to_string()));
                }
            }
        }
    }
    if !users.is_empty() {
        sessions.end_all(Some(&users)).await;
    }
    end(context, &ids).await;
    Ok(Document::new())
}

/// Ends sessions `ids` here: their transactions, cursors and retryable-write records.
async fn end(context: &CommandContext<'_>, ids: &[Vec<u8>]) {
    let server = context.server;
    server.sessions.end(ids).await;
    let as_bson: Vec<Bson> = ids.iter().map(|id| session_id_bson(id)).collect();
    server.cursors.kill_sessions(&as_bson);
    let forgotten = async {
        let mut session = server.state.store.session().await?;
        for id in ids {
            session.delete_write_records(Some(id), 0).await?;
        }
        Ok::<(), StoreError>(())
    };
    if let Err(error) = forgotten.await {
        // They expire with the session timeout anyway (see the listener's reaper).
        tracing::warn!(%error, "could not delete the retryable-write records of ended sessions");
    }
}

/// The ids of an array of `{id: UUID}` session documents.
fn session_ids(request: &CommandRequest, command: &str) -> Result<Vec<Vec<u8>>, OpError> {
    let Bson::Array(sessions) = request.target() else {
        return Err(OpError::TypeMismatch(format!(
            "{command} takes an array of session ids"
        )));
    };
    sessions
        .iter()
        .map(|s| match s {
            Bson::Document(lsid) => match lsid.get("id") {
                Some(Bson::Binary(id)) if id.subtype == BinarySubtype::Uuid => Ok(id.bytes.clone()),
                _ => Err(OpError::TypeMismatch(format!(
                    "{command}: a session's id must be a UUID, not {}",
                    lsid.get("id").map_or("missing", super::request::type_name)
                ))),
            },
            other => Err(OpError::TypeMismatch(format!(
                "{command}: a session must be an object {{id: UUID}}, not {}",
                super::request::type_name(other)
            ))),
        })
        .collect()
}

/// A session id as drivers send it (`lsid.id`): a UUID binary.
pub fn session_id_bson(id: &[u8]) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Uuid,
        bytes: id.to_vec(),
    })
}
