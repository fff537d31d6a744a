//! Command errors of the mongo front end, and their one mapping to MongoDB's error codes,
//! code names and error labels. Every failure a client can see passes through here.
//!
//! Not for: write errors of individual statements inside a successful command (those are
//! `writeErrors` entries, built by the write commands from the same codes).

use bson::{doc, Document};
use thiserror::Error;

use crate::auth::AuthError;
use crate::query::QueryError;
use crate::store::StoreError;

/// A failed command, as the client will see it.
#[derive(Debug, Error)]
pub enum CommandError {
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
}

impl CommandError {
    /// MongoDB's error for a required field that is absent (`path` like `find.filter`).
    pub fn missing_field(path: &str) -> CommandError {
        CommandError::FailedToParse(format!(
            "BSON field '{path}' is missing but a required field"
        ))
    }

    /// MongoDB's numeric code.
    pub fn code(&self) -> i32 {
        match self {
            CommandError::CommandNotFound(_) => 59,
            CommandError::BadValue(_) => 2,
            CommandError::FailedToParse(_) => 9,
            CommandError::TypeMismatch(_) => 14,
            CommandError::InvalidNamespace(_) => 73,
            CommandError::NamespaceNotFound(_) => 26,
            CommandError::NamespaceExists(_) => 48,
            CommandError::CursorNotFound(_) => 43,
            CommandError::InvalidOptions(_) => 72,
            CommandError::NotSupported(_) => 115,
            CommandError::DocumentTooLarge(_) => 10334,
            CommandError::IllegalOperation(_) => 20,
            CommandError::Unauthorized(_) => 13,
            CommandError::UnknownField(_) => 40415,
            CommandError::InvalidLength(_) => 16,
            CommandError::DuplicateKey(_) => 11000,
            CommandError::Query(e) => e.code,
            CommandError::Store(e) => store_error_code(e).0,
            CommandError::Auth(e) => e.code(),
            CommandError::UserNotFound(_) => 11,
            CommandError::RoleNotFound(_) => 31,
            CommandError::UserExists(_) => 51003,
            CommandError::RoleExists(_) => 51002,
            CommandError::ProtocolError(_) => 17,
        }
    }

    /// MongoDB's code name.
    pub fn code_name(&self) -> &'static str {
        match self {
            CommandError::CommandNotFound(_) => "CommandNotFound",
            CommandError::BadValue(_) => "BadValue",
            CommandError::FailedToParse(_) => "FailedToParse",
            CommandError::TypeMismatch(_) => "TypeMismatch",
            CommandError::InvalidNamespace(_) => "InvalidNamespace",
            CommandError::NamespaceNotFound(_) => "NamespaceNotFound",
            CommandError::NamespaceExists(_) => "NamespaceExists",
            CommandError::CursorNotFound(_) => "CursorNotFound",
            CommandError::InvalidOptions(_) => "InvalidOptions",
            CommandError::NotSupported(_) => "CommandNotSupported",
            CommandError::DocumentTooLarge(_) => "BSONObjectTooLarge",
            CommandError::IllegalOperation(_) => "IllegalOperation",
            CommandError::Unauthorized(_) => "Unauthorized",
            CommandError::UnknownField(_) => "Location40415",
            CommandError::InvalidLength(_) => "InvalidLength",
            CommandError::DuplicateKey(_) => "DuplicateKey",
            CommandError::Query(e) => e.code_name,
            CommandError::Store(e) => store_error_code(e).1,
            CommandError::Auth(e) => e.code_name(),
            CommandError::UserNotFound(_) => "UserNotFound",
            CommandError::RoleNotFound(_) => "RoleNotFound",
            CommandError::UserExists(_) => "Location51003",
            CommandError::RoleExists(_) => "Location51002",
            CommandError::ProtocolError(_) => "ProtocolError",
        }
    }

    /// Error labels drivers act on (retryability).
    pub fn labels(&self) -> &'static [&'static str] {
        match self {
            CommandError::Store(StoreError::PoolTimeout(_) | StoreError::Unavailable(_)) => {
                &["RetryableWriteError"]
            }
            _ => &[],
        }
    }

    /// The message the client sees: a backend's own words are logged instead.
    fn client_message(&self) -> String {
        match self {
            CommandError::Store(error) => {
                if error.withholds_detail() {
                    tracing::warn!(%error, "backend error (the client was told docgate's wording)");
                }
                error.client_message()
            }
            other => other.to_string(),
        }
    }

    /// The `{ok: 0, errmsg, code, codeName}` reply.
    pub fn to_reply(&self) -> Document {
        let mut reply = doc! {
            "ok": 0.0,
            "errmsg": self.client_message(),
            "code": self.code(),
            "codeName": self.code_name(),
        };
        if let CommandError::DuplicateKey(entry) = self {
            for field in ["keyPattern", "keyValue"] {
                if let Some(value) = entry.get(field) {
                    reply.insert(field, value.clone());
                }
            }
        }
        let labels = self.labels();
        if !labels.is_empty() {
            reply.insert(
                "errorLabels",
                labels.iter().map(|l| l.to_string()).collect::<Vec<_>>(),
            );
        }
        reply
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
        StoreError::Database(_) => (1, "InternalError"),
        StoreError::Corrupt(_) => (1, "InternalError"),
        StoreError::Interrupted(reason) => (reason.code(), reason.code_name()),
    }
}

/// Result of a command handler.
pub type CommandResult = Result<Document, CommandError>;

/// Result of a handler whose reply may be encoded already (the cursor commands).
pub type ReplyResult = Result<crate::mongo::dispatch::CommandReply, CommandError>;
