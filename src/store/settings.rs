//! The store's settings: where the data lives ([`BackendUrl`], parsed from `sqlite:DIR`, a
//! `postgres://` or an `oracle://` URL, never shown with its password, or a [`BackendUrlError`]) and the connection pool's sizes and
//! timeout ([`PoolSettings`], ORDS's `pool.*`).
//!
//! Not for: reading them from flags, environment or file (`crate::config` does), or opening
//! the backend (`crate::state`).

use std::path::PathBuf;
use std::time::Duration;

/// Connection pool settings (ORDS `pool.*`).
#[derive(Clone, Debug, PartialEq)]
pub struct PoolSettings {
    pub min: usize,
    pub max: usize,
    pub wait_timeout: Duration,
    pub statement_cache: bool,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            min: 2,
            max: 16,
            wait_timeout: Duration::from_secs(10),
            statement_cache: true,
        }
    }
}

/// A backend URL docgate cannot open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendUrlError {
    #[error("sqlite backend needs a directory: sqlite:DIR")]
    SqliteWithoutDirectory,
    /// Neither `sqlite:`, `postgres://` nor `oracle://`; the URL is kept without its password.
    #[error(
        "unknown backend {redacted:?}: expected sqlite:DIR, postgres://user@host:port/dbname \
         or oracle://user:password@host:port/service"
    )]
    Unknown { redacted: String },
}

/// Where the data lives.
#[derive(Clone, PartialEq, Eq)]
pub enum BackendUrl {
    /// `sqlite:DIR`: a data directory holding the SQLite database file.
    Sqlite(PathBuf),
    /// `postgres://user:pass@host:port/dbname`: a PostgreSQL database.
    Postgres(String),
    /// `oracle://user:pass@host:port/service`: an Oracle Database 23ai service (needs a
    /// docgate built with the `oracle` feature and the Oracle Instant Client at run time).
    Oracle(String),
}

impl std::fmt::Debug for BackendUrl {
    /// Never shows a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackendUrl::Sqlite(dir) => write!(f, "sqlite:{}", dir.display()),
            BackendUrl::Postgres(url) | BackendUrl::Oracle(url) => {
                write!(f, "{}", redact_password(url))
            }
        }
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
pub fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_string();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
    }
}

impl BackendUrl {
    /// Parses `sqlite:DIR` (also `sqlite://DIR`), `postgres://…` (also `postgresql://…`) and
    /// `oracle://…`.
    pub fn parse(url: &str) -> Result<BackendUrl, BackendUrlError> {
        if let Some(rest) = url.strip_prefix("sqlite:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err(BackendUrlError::SqliteWithoutDirectory);
            }
            return Ok(BackendUrl::Sqlite(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(BackendUrl::Postgres(url.to_string()));
        }
        if url.starts_with("oracle://") {
            return Ok(BackendUrl::Oracle(url.to_string()));
        }
        Err(BackendUrlError::Unknown {
            redacted: redact_password(url),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_urls() {
        assert_eq!(
            BackendUrl::parse("sqlite:./data").unwrap(),
            BackendUrl::Sqlite(PathBuf::from("./data"))
        );
        assert_eq!(
            BackendUrl::parse("sqlite:///var/lib/dg").unwrap(),
            BackendUrl::Sqlite(PathBuf::from("/var/lib/dg"))
        );
        assert!(BackendUrl::parse("sqlite:").is_err());
        assert!(BackendUrl::parse("mysql://x").is_err());
        assert!(matches!(
            BackendUrl::parse("postgres://u@h/db"),
            Ok(BackendUrl::Postgres(_))
        ));
        assert!(matches!(
            BackendUrl::parse("oracle://u:p@h:1521/FREEPDB1"),
            Ok(BackendUrl::Oracle(_))
        ));
    }

    #[test]
    fn postgres_urls_never_show_passwords() {
        let url = BackendUrl::parse("postgres://app:s3cret@db:5432/prod").unwrap();
        assert_eq!(format!("{url:?}"), "postgres://app:***@db:5432/prod");
        let url = BackendUrl::parse("oracle://app:s3cret@db:1521/FREEPDB1").unwrap();
        assert_eq!(format!("{url:?}"), "oracle://app:***@db:1521/FREEPDB1");
        assert!(!BackendUrl::parse("mysql://app:s3cret@db")
            .unwrap_err()
            .to_string()
            .contains("s3cret"));
    }
}
