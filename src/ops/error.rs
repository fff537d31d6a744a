//! The one error type of the core: every operation — a wire command or a REST request —
//! fails with an [`OpError`], which carries MongoDB's code and code name (the core's
//! semantics are MongoDB's). It gathers the query core's [`QueryError`], the store's
//! [`StoreError`] and authentication's [`AuthError`]. Each front end maps it once: to a
//! MongoDB reply in `mongo/error.rs`, to an HTTP response in `rest/error.rs`.
//!
//! Not for: `writeErrors` entries of individual statements (the wire front end builds
//! those from the same codes).

use bson::Document;
use thiserror::Error;

use crate::auth::AuthError;
use crate::query::QueryError;
use crate::store::StoreError;

/// A failed operation, as the client will see it.
#[derive(Debug, Error)]
pub enum OpError {
    #[error("no such command: '{0}'")]
    CommandNotFound(String),
    #[error("{0}")]
    BadValue(String),
    #[error("{0}")]
    FailedToParse(String),
    #[error("{0}")]
    TypeMismatch(String),
    #[error("{0}")]
    InvalidNamespace(String),
    #[error("{0}")]
    NamespaceNotFound(String),
    #[error("{0}")]
    NamespaceExists(String),
    #[error("cursor id {0} not found")]
    CursorNotFound(i64),
    #[error("{0}")]
    InvalidOptions(String),
    #[error("{0}")]
    NotSupported(String),
    #[error("{0}")]
    DocumentTooLarge(String),
    #[error("{0}")]
    IllegalOperation(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    InvalidLength(String),
    /// A unique-key conflict raised as a command error (findAndModify): the `writeErrors`
    /// entry that describes it (`errmsg`, `keyPattern`, `keyValue`).
    #[error("{}", .0.get_str("errmsg").unwrap_or("E11000 duplicate key error"))]
    DuplicateKey(Box<Document>),
    /// 121 DocumentValidationFailure: a document did not meet its collection's validator;
    /// the `errInfo` (`failingDocumentId`, `details`).
    #[error("Document failed validation")]
    DocumentValidationFailure(Box<Document>),
    /// A field the command does not know (MongoDB's IDL error 40415).
    #[error("BSON field '{0}' is an unknown field.")]
    UnknownField(String),
    #[error("{0}")]
    Query(#[from] QueryError),
    #[error("{0}")]
    Store(#[from] StoreError),
    /// Authentication and authorization failures (18, 13, 334, 2, 6).
    #[error("{0}")]
    Auth(#[from] AuthError),
    /// 11 UserNotFound.
    #[error("{0}")]
    UserNotFound(String),
    /// 31 RoleNotFound.
    #[error("{0}")]
    RoleNotFound(String),
    /// 51003: createUser for a user that exists.
    #[error("{0}")]
    UserExists(String),
    /// 51002: createRole for a role that exists.
    #[error("{0}")]
    RoleExists(String),
    /// 17 ProtocolError: saslContinue without a conversation.
    #[error("{0}")]
    ProtocolError(String),
    /// 143 CursorInUse: a `getMore` for a cursor another `getMore` is reading.
    #[error("{0}")]
    CursorInUse(String),
    /// 146 ExceededMemoryLimit: a limit that bounds the server's memory was reached (open
    /// cursors).
    #[error("{0}")]
    ExceededMemoryLimit(String),
    /// 175 QueryPlanKilled: a cursor's collection or index went away under it.
    #[error("{0}")]
    QueryPlanKilled(String),
    /// 175 QueryPlanKilled, for the first batch of a read whose collection's table is gone
    /// (dropped, renamed or replaced by `$out` since the read was planned; nothing was
    /// answered yet): the command runs once more with a fresh catalog (`ops::retry`), and is
    /// answered with this when that read meets another replacement too.
    #[error("{0}")]
    CollectionReplacedBeforeRead(String),
    /// 323 APIStrictError: a command outside the Stable API version the client declared with
    /// `apiStrict: true`.
    #[error("{0}")]
    ApiStrict(String),
    /// 322 APIVersionError: an `apiVersion` the server does not support.
    #[error("{0}")]
    ApiVersion(String),
    /// 251 NoSuchTransaction: the session has no open transaction of that number (never
    /// started, aborted, expired or killed).
    #[error("{0}")]
    NoSuchTransaction(String),
    /// 256 TransactionCommitted: the transaction has committed; it cannot be aborted or
    /// continued.
    #[error("{0}")]
    TransactionCommitted(String),
    /// 225 TransactionTooOld: a transaction number older than the session's latest.
    #[error("{0}")]
    TransactionTooOld(String),
    /// 263 OperationNotSupportedInTransaction.
    #[error("{0}")]
    NotInTransaction(String),
    /// 50768 NotARetryableWriteCommand: a `txnNumber` on a command that is neither in a
    /// transaction nor a retryable write.
    #[error("{0}")]
    NotRetryable(String),
    /// 117 ConflictingOperationInProgress.
    #[error("{0}")]
    ConflictingOperation(String),
    /// 239 SnapshotTooOld: a snapshot at a time whose history is not kept.
    #[error("{0}")]
    SnapshotTooOld(String),
    /// 24 LockTimeout: a lock (or a slot) could not be had in time.
    #[error("{0}")]
    LockTimeout(String),
    /// 206 NoSuchSession.
    #[error("{0}")]
    NoSuchSession(String),
    /// 23: `replSetInitiate` on a replica set that is initiated already.
    #[error("{0}")]
    AlreadyInitialized(String),
    /// 76: a replication command on a server that presents itself as standalone.
    #[error("{0}")]
    NoReplicationEnabled(String),
    /// 103: a replica set configuration docgate cannot take (its one member is fixed).
    #[error("{0}")]
    NewReplicaSetConfigurationIncompatible(String),
    /// 209: a gossiped `$clusterTime` too far ahead of the wall clock.
    #[error("{0}")]
    ClusterTimeFailsRateLimiter(String),
    /// 136 CappedPositionLost: the document a tailable cursor stood on was removed from its
    /// capped collection (overwritten by newer ones, or deleted).
    #[error("{0}")]
    CappedPositionLost(String),
    /// 51024: a command field outside the range MongoDB's command definition allows
    /// ("BSON field 'size' value must be >= 1, actual value '0'").
    #[error("{0}")]
    FieldOutOfRange(String),
}

/// An evaluation stopped part way (time limit, client gone, shutdown, memory limit) is the
/// store-side interruption error, so both paths answer the same code.
impl From<crate::interrupt::Interruption> for OpError {
    fn from(reason: crate::interrupt::Interruption) -> Self {
        OpError::Store(StoreError::Interrupted(reason))
    }
}

impl OpError {
    /// MongoDB's error for a required field that is absent (`path` like `find.filter`).
    pub fn missing_field(path: &str) -> OpError {
        OpError::FailedToParse(format!(
            "BSON field '{path}' is missing but a required field"
        ))
    }

    /// MongoDB's numeric code.
    pub fn code(&self) -> i32 {
        match self {
            OpError::CommandNotFound(_) => 59,
            OpError::BadValue(_) => 2,
            OpError::FailedToParse(_) => 9,
            OpError::TypeMismatch(_) => 14,
            OpError::InvalidNamespace(_) => 73,
            OpError::NamespaceNotFound(_) => 26,
            OpError::NamespaceExists(_) => 48,
            OpError::CursorNotFound(_) => 43,
            OpError::InvalidOptions(_) => 72,
            OpError::NotSupported(_) => 115,
            OpError::DocumentTooLarge(_) => 10334,
            OpError::IllegalOperation(_) => 20,
            OpError::Unauthorized(_) => 13,
            OpError::UnknownField(_) => 40415,
            OpError::InvalidLength(_) => 16,
            OpError::DuplicateKey(_) => 11000,
            OpError::DocumentValidationFailure(_) => 121,
            OpError::Query(e) => e.code,
            OpError::Store(e) => store_error_code(e).0,
            OpError::Auth(e) => e.code(),
            OpError::UserNotFound(_) => 11,
            OpError::RoleNotFound(_) => 31,
            OpError::UserExists(_) => 51003,
            OpError::RoleExists(_) => 51002,
            OpError::ProtocolError(_) => 17,
            OpError::CursorInUse(_) => 143,
            OpError::ExceededMemoryLimit(_) => 146,
            OpError::QueryPlanKilled(_) | OpError::CollectionReplacedBeforeRead(_) => 175,
            OpError::ApiStrict(_) => 323,
            OpError::ApiVersion(_) => 322,
            OpError::NoSuchTransaction(_) => 251,
            OpError::TransactionCommitted(_) => 256,
            OpError::TransactionTooOld(_) => 225,
            OpError::NotInTransaction(_) => 263,
            OpError::NotRetryable(_) => 50768,
            OpError::NoSuchSession(_) => 206,
            OpError::LockTimeout(_) => 24,
            OpError::SnapshotTooOld(_) => 239,
            OpError::ConflictingOperation(_) => 117,
            OpError::AlreadyInitialized(_) => 23,
            OpError::NoReplicationEnabled(_) => 76,
            OpError::NewReplicaSetConfigurationIncompatible(_) => 103,
            OpError::ClusterTimeFailsRateLimiter(_) => 209,
            OpError::CappedPositionLost(_) => 136,
            OpError::FieldOutOfRange(_) => 51024,
        }
    }

    /// MongoDB's code name.
    pub fn code_name(&self) -> &'static str {
        match self {
            OpError::CommandNotFound(_) => "CommandNotFound",
            OpError::BadValue(_) => "BadValue",
            OpError::FailedToParse(_) => "FailedToParse",
            OpError::TypeMismatch(_) => "TypeMismatch",
            OpError::InvalidNamespace(_) => "InvalidNamespace",
            OpError::NamespaceNotFound(_) => "NamespaceNotFound",
            OpError::NamespaceExists(_) => "NamespaceExists",
            OpError::CursorNotFound(_) => "CursorNotFound",
            OpError::InvalidOptions(_) => "InvalidOptions",
            OpError::NotSupported(_) => "CommandNotSupported",
            OpError::DocumentTooLarge(_) => "BSONObjectTooLarge",
            OpError::IllegalOperation(_) => "IllegalOperation",
            OpError::Unauthorized(_) => "Unauthorized",
            OpError::UnknownField(_) => "Location40415",
            OpError::InvalidLength(_) => "InvalidLength",
            OpError::DuplicateKey(_) => "DuplicateKey",
            OpError::DocumentValidationFailure(_) => "DocumentValidationFailure",
            OpError::Query(e) => e.code_name,
            OpError::Store(e) => store_error_code(e).1,
            OpError::Auth(e) => e.code_name(),
            OpError::UserNotFound(_) => "UserNotFound",
            OpError::RoleNotFound(_) => "RoleNotFound",
            OpError::UserExists(_) => "Location51003",
            OpError::RoleExists(_) => "Location51002",
            OpError::ProtocolError(_) => "ProtocolError",
            OpError::CursorInUse(_) => "CursorInUse",
            OpError::ExceededMemoryLimit(_) => "ExceededMemoryLimit",
            OpError::QueryPlanKilled(_) | OpError::CollectionReplacedBeforeRead(_) => {
                "QueryPlanKilled"
            }
            OpError::ApiStrict(_) => "APIStrictError",
            OpError::ApiVersion(_) => "APIVersionError",
            OpError::NoSuchTransaction(_) => "NoSuchTransaction",
            OpError::TransactionCommitted(_) => "TransactionCommitted",
            OpError::TransactionTooOld(_) => "TransactionTooOld",
            OpError::NotInTransaction(_) => "OperationNotSupportedInTransaction",
            OpError::NotRetryable(_) => "NotARetryableWriteCommand",
            OpError::NoSuchSession(_) => "NoSuchSession",
            OpError::LockTimeout(_) => "LockTimeout",
            OpError::SnapshotTooOld(_) => "SnapshotTooOld",
            OpError::ConflictingOperation(_) => "ConflictingOperationInProgress",
            OpError::AlreadyInitialized(_) => "AlreadyInitialized",
            OpError::NoReplicationEnabled(_) => "NoReplicationEnabled",
            OpError::NewReplicaSetConfigurationIncompatible(_) => {
                "NewReplicaSetConfigurationIncompatible"
            }
            OpError::ClusterTimeFailsRateLimiter(_) => "ClusterTimeFailsRateLimiter",
            OpError::CappedPositionLost(_) => "CappedPositionLost",
            OpError::FieldOutOfRange(_) => "Location51024",
        }
    }

    /// Whether this error is a write conflict (112), which a whole transaction may retry.
    pub fn is_write_conflict(&self) -> bool {
        matches!(self, OpError::Store(StoreError::WriteConflict(_)))
    }

    /// Error labels drivers act on (retryability) outside a transaction; inside one the
    /// session layer decides (`TransientTransactionError`, `UnknownTransactionCommitResult`).
    pub fn labels(&self) -> &'static [&'static str] {
        match self {
            OpError::Store(StoreError::PoolTimeout(_) | StoreError::Unavailable(_)) => {
                &["RetryableWriteError"]
            }
            _ => &[],
        }
    }

    /// The message the client sees: a backend's own words are logged instead.
    pub fn client_message(&self) -> String {
        match self {
            OpError::Store(error) => {
                if error.withholds_detail() {
                    tracing::warn!(%error, "backend error (the client was told docgate's wording)");
                }
                error.client_message()
            }
            other => other.to_string(),
        }
    }
}

/// Code and code name for a store failure.
fn store_error_code(error: &StoreError) -> (i32, &'static str) {
    match error {
        StoreError::AlreadyExists(_) => (48, "NamespaceExists"),
        StoreError::DuplicateKey | StoreError::IndexKeyConflict { .. } => (11000, "DuplicateKey"),
        StoreError::Unsupported(_) => (115, "CommandNotSupported"),
        StoreError::StaleCatalog(_) => (13388, "StaleConfig"),
        StoreError::PoolTimeout(_) => (89, "NetworkTimeout"),
        StoreError::Unavailable(_) => (6, "HostUnreachable"),
        StoreError::WriteConflict(_) => (112, "WriteConflict"),
        StoreError::Database(_) => (1, "InternalError"),
        StoreError::Corrupt(_) => (1, "InternalError"),
        StoreError::OutOfDiskSpace(_) => (14031, "OutOfDiskSpace"),
        StoreError::Interrupted(reason) => (reason.code(), reason.code_name()),
    }
}
