//! Authentication and authorization core: SCRAM-SHA-1 / SCRAM-SHA-256 as MongoDB does them
//! (server side), PLAIN parsing, the fast verification path for PLAIN and HTTP Basic, per-user
//! throttling of failed attempts, and MongoDB's built-in roles as data.
//!
//! `service` ties these to the catalog (users and user-defined roles are metadata records,
//! `users`) as the one [`AuthService`] both front ends share. Nothing here knows BSON, the
//! wire protocol or HTTP: the front ends feed it the raw SASL payloads and turn its
//! [`AuthError`]s into MongoDB error documents with [`AuthError::code`] and
//! [`AuthError::code_name`] (or HTTP statuses).

pub mod credentials;
pub mod plain;
pub mod roles;
pub mod scram;
pub mod service;
pub mod throttle;
pub mod users;
pub mod verifier;

pub use credentials::{ScramCredential, ScramMechanism};
pub use plain::PlainCredentials;
pub use roles::{allows, may_run, Action, BuiltinRole, CommandPrivilege, RoleGrant};
pub use scram::{ClientFirst, CredentialLookup, SaslReply, ScramConversation, ScramServer};
pub use service::{Access, AuthMode, AuthService, AuthSettings, AuthenticatedUser};
pub use throttle::{Throttle, ThrottleSettings};
pub use users::{RoleRecord, UserRecord};
pub use verifier::{PasswordVerifier, VerifierSettings};

/// MongoDB error code 2.
pub const BAD_VALUE: i32 = 2;
/// MongoDB error code 6.
pub const HOST_UNREACHABLE: i32 = 6;
/// MongoDB error code 13.
pub const UNAUTHORIZED: i32 = 13;
/// MongoDB error code 18.
pub const AUTHENTICATION_FAILED: i32 = 18;
/// MongoDB error code 334.
pub const MECHANISM_UNAVAILABLE: i32 = 334;

/// An authentication or authorization failure, carrying MongoDB's code and meaning.
///
/// The `Display` text is what the client may see: [`AuthError::AuthenticationFailed`] never
/// says why (wrong password, unknown user, locked user and a bad proof look the same).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// 18 AuthenticationFailed: wrong password, unknown user, bad proof, locked user.
    #[error("Authentication failed.")]
    AuthenticationFailed,
    /// 334 MechanismUnavailable: the mechanism is unknown or not enabled, or the user has no
    /// credential for it.
    #[error("{0}")]
    MechanismUnavailable(String),
    /// 13 Unauthorized: not authenticated, or no role allows the action.
    #[error("{0}")]
    Unauthorized(String),
    /// 2 BadValue: a malformed SASL message or an unusable password (does not depend on whether
    /// the user exists).
    #[error("{0}")]
    BadValue(String),
    /// 6 HostUnreachable: the users could not be read from the database.
    #[error("cannot read users: {0}")]
    Backend(String),
}

impl AuthError {
    /// MongoDB's numeric error code.
    pub fn code(&self) -> i32 {
        match self {
            AuthError::AuthenticationFailed => AUTHENTICATION_FAILED,
            AuthError::MechanismUnavailable(_) => MECHANISM_UNAVAILABLE,
            AuthError::Unauthorized(_) => UNAUTHORIZED,
            AuthError::BadValue(_) => BAD_VALUE,
            AuthError::Backend(_) => HOST_UNREACHABLE,
        }
    }

    /// MongoDB's error code name (`codeName` in a reply).
    pub fn code_name(&self) -> &'static str {
        match self {
            AuthError::AuthenticationFailed => "AuthenticationFailed",
            AuthError::MechanismUnavailable(_) => "MechanismUnavailable",
            AuthError::Unauthorized(_) => "Unauthorized",
            AuthError::BadValue(_) => "BadValue",
            AuthError::Backend(_) => "HostUnreachable",
        }
    }

    /// 334 for a mechanism name this server does not offer, in MongoDB's words.
    pub fn unknown_mechanism(mechanism: &str) -> Self {
        AuthError::MechanismUnavailable(format!(
            "Received authentication for mechanism {mechanism} which is unknown or not enabled"
        ))
    }

    /// 13 for a command run before authenticating, in MongoDB's words.
    pub fn requires_authentication(command: &str) -> Self {
        AuthError::Unauthorized(format!("Command {command} requires authentication"))
    }

    /// 13 for an authenticated user whose roles do not allow the command on `db`.
    pub fn not_authorized(db: &str, command: &str) -> Self {
        AuthError::Unauthorized(format!(
            "not authorized on {db} to execute command {{ {command}: ... }}"
        ))
    }

    pub(crate) fn bad_value(message: impl Into<String>) -> Self {
        AuthError::BadValue(message.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_mongodb_s() {
        let failed = AuthError::AuthenticationFailed;
        assert_eq!(failed.code(), 18);
        assert_eq!(failed.code_name(), "AuthenticationFailed");
        assert_eq!(failed.to_string(), "Authentication failed.");
        let mech = AuthError::unknown_mechanism("GSSAPI");
        assert_eq!(
            (mech.code(), mech.code_name()),
            (334, "MechanismUnavailable")
        );
        let unauth = AuthError::requires_authentication("find");
        assert_eq!((unauth.code(), unauth.code_name()), (13, "Unauthorized"));
        assert_eq!(unauth.to_string(), "Command find requires authentication");
        assert_eq!(AuthError::bad_value("x").code(), 2);
    }
}
