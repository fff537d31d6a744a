//! SASL PLAIN (RFC 4616) message parsing: `[authzid] NUL authcid NUL passwd`.
//!
//! MongoDB accepts both `\0user\0password` and `user\0user\0password`; a non-empty authzid
//! that differs from the user is refused, as MongoDB does. The password is checked by
//! [`super::PasswordVerifier`] against the user's SCRAM credential.

use super::AuthError;

/// Largest PLAIN message accepted.
const MAX_MESSAGE: usize = 8 * 1024;

/// The user name and password from a PLAIN message.
#[derive(Clone, PartialEq, Eq)]
pub struct PlainCredentials {
    /// The user (authentication identity).
    pub username: String,
    /// The clear-text password.
    pub password: String,
}

impl std::fmt::Debug for PlainCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainCredentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

impl PlainCredentials {
    /// Parses a PLAIN message. Errors are 2 BadValue and never echo the password.
    pub fn parse(message: &[u8]) -> Result<Self, AuthError> {
        if message.len() > MAX_MESSAGE {
            return Err(AuthError::bad_value("SASL PLAIN message too long"));
        }
        let mut parts = message.split(|b| *b == 0);
        let (Some(authzid), Some(user), Some(password), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(AuthError::bad_value(
                "Incorrectly formatted PLAIN client message",
            ));
        };
        let text = |bytes: &[u8]| {
            String::from_utf8(bytes.to_vec())
                .map_err(|_| AuthError::bad_value("SASL PLAIN message is not UTF-8"))
        };
        let username = text(user)?;
        let password = text(password)?;
        if username.is_empty() {
            return Err(AuthError::bad_value("SASL PLAIN user name is empty"));
        }
        if password.is_empty() {
            return Err(AuthError::bad_value("SASL PLAIN password is empty"));
        }
        if !authzid.is_empty() && authzid != user {
            return Err(AuthError::bad_value(
                "SASL authorization identity must match authentication identity",
            ));
        }
        Ok(PlainCredentials { username, password })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_from_the_auth_spec() {
        let without = PlainCredentials::parse(b"\0user\0pencil");
        let with = PlainCredentials::parse(b"user\0user\0pencil");
        for parsed in [without, with] {
            let Ok(parsed) = parsed else {
                panic!("{parsed:?}")
            };
            assert_eq!(parsed.username, "user");
            assert_eq!(parsed.password, "pencil");
        }
        let unicode = PlainCredentials::parse("\0jörg\0p\u{2163}".as_bytes());
        assert_eq!(
            unicode.map(|c| c.password).ok().as_deref(),
            Some("p\u{2163}")
        );
    }

    #[test]
    fn malformed_messages_are_bad_values() {
        let cases: &[&[u8]] = &[
            b"",
            b"user",
            b"\0user",
            b"\0user\0pw\0extra",
            b"\0\0pw",
            b"\0user\0",
            b"other\0user\0pw",
            b"\0us\xffer\0pw",
            b"\0user\0p\xffw",
        ];
        for case in cases {
            let parsed = PlainCredentials::parse(case);
            assert_eq!(parsed.map(|_| ()).map_err(|e| e.code()), Err(2), "{case:?}");
        }
        assert!(PlainCredentials::parse(&vec![b'a'; MAX_MESSAGE + 1]).is_err());
    }

    #[test]
    fn debug_never_shows_the_password() {
        let parsed = PlainCredentials::parse(b"\0user\0hunter2");
        let shown = format!("{parsed:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        let error = PlainCredentials::parse(b"x\0user\0hunter2");
        assert!(!format!("{error:?}").contains("hunter2"));
    }
}
