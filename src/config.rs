//! Settings: command-line flags, `DOCGATE_*` environment variables and an optional TOML
//! file, resolved once at start into [`Settings`]. Precedence: flag, then environment, then
//! file, then the built-in default.
//!
//! Not for: anything that changes at run time (catalog metadata lives in the database).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use serde::Deserialize;

/// Default MongoDB listener: loopback only (DESIGN.md invariant 7).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:27017";
/// Default REST listener, reserved for the REST front end.
pub const DEFAULT_REST_LISTEN: &str = "127.0.0.1:8080";
/// Default backend: an embedded SQLite database in `./docgate-data`.
pub const DEFAULT_BACKEND: &str = "sqlite:./docgate-data";
/// Default bound on simultaneous client connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// The command line. Every flag also reads a `DOCGATE_*` environment variable.
#[derive(Debug, Parser)]
#[command(
    name = "docgate",
    version,
    about = "A MongoDB-compatible document server over SQL databases"
)]
pub struct Cli {
    /// TOML settings file (keys: backend, listen, rest_listen, log_format, max_connections).
    #[arg(long, env = "DOCGATE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Where the data lives: `sqlite:DIR` (default `sqlite:./docgate-data`).
    #[arg(long, env = "DOCGATE_BACKEND")]
    pub backend: Option<String>,
    /// Address of the MongoDB protocol listener (default 127.0.0.1:27017).
    #[arg(long, env = "DOCGATE_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Address of the REST listener (reserved: the REST front end is not built yet).
    #[arg(long, env = "DOCGATE_REST_LISTEN")]
    pub rest_listen: Option<SocketAddr>,
    /// Log format on stderr.
    #[arg(long, env = "DOCGATE_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
    /// Maximum simultaneous client connections; more wait in the accept queue.
    #[arg(long, env = "DOCGATE_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
}

/// Keys accepted in the `--config` TOML file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    backend: Option<String>,
    listen: Option<SocketAddr>,
    rest_listen: Option<SocketAddr>,
    log_format: Option<LogFormat>,
    max_connections: Option<usize>,
}

/// Where the data lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendUrl {
    /// `sqlite:DIR`: a data directory holding the SQLite database file.
    Sqlite(PathBuf),
}

impl BackendUrl {
    /// Parses `sqlite:DIR` (also `sqlite://DIR`).
    pub fn parse(url: &str) -> Result<BackendUrl, String> {
        if let Some(rest) = url.strip_prefix("sqlite:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err("sqlite backend needs a directory: sqlite:DIR".into());
            }
            return Ok(BackendUrl::Sqlite(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Err("the PostgreSQL backend is not available in this build yet".into());
        }
        Err(format!("unknown backend {url:?}: expected sqlite:DIR"))
    }
}

/// Resolved settings.
#[derive(Clone, Debug)]
pub struct Settings {
    pub backend: BackendUrl,
    pub listen: SocketAddr,
    pub rest_listen: Option<SocketAddr>,
    pub log_format: LogFormat,
    pub max_connections: usize,
    /// The command line as given, for `getCmdLineOpts`.
    pub argv: Vec<String>,
}

impl Settings {
    /// Resolves flags/environment over the optional file over defaults.
    pub fn resolve(cli: Cli, argv: Vec<String>) -> Result<Settings, String> {
        let file = match &cli.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
                toml::from_str::<FileSettings>(&text)
                    .map_err(|e| format!("invalid config file {}: {e}", path.display()))?
            }
            None => FileSettings::default(),
        };
        let backend = cli
            .backend
            .or(file.backend)
            .unwrap_or_else(|| DEFAULT_BACKEND.to_string());
        let default_listen: SocketAddr = DEFAULT_LISTEN
            .parse()
            .map_err(|e| format!("bad default listen address: {e}"))?;
        let max_connections = cli
            .max_connections
            .or(file.max_connections)
            .unwrap_or(DEFAULT_MAX_CONNECTIONS);
        if max_connections == 0 {
            return Err("max_connections must be at least 1".into());
        }
        Ok(Settings {
            backend: BackendUrl::parse(&backend)?,
            listen: cli.listen.or(file.listen).unwrap_or(default_listen),
            rest_listen: cli.rest_listen.or(file.rest_listen),
            log_format: cli
                .log_format
                .or(file.log_format)
                .unwrap_or(LogFormat::Text),
            max_connections,
            argv,
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
    }

    #[test]
    fn flags_win_over_file_over_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("docgate.toml");
        std::fs::write(&file, "listen = \"127.0.0.1:3000\"\nmax_connections = 7\n").unwrap();
        let cli = Cli::parse_from([
            "docgate",
            "--config",
            file.to_str().unwrap(),
            "--max-connections",
            "9",
        ]);
        let settings = Settings::resolve(cli, vec![]).unwrap();
        assert_eq!(settings.listen, "127.0.0.1:3000".parse().unwrap());
        assert_eq!(settings.max_connections, 9);
        assert_eq!(
            settings.backend,
            BackendUrl::Sqlite(PathBuf::from("./docgate-data"))
        );
    }

    #[test]
    fn unknown_file_keys_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("docgate.toml");
        std::fs::write(&file, "listne = \"127.0.0.1:3000\"\n").unwrap();
        let cli = Cli::parse_from(["docgate", "--config", file.to_str().unwrap()]);
        assert!(Settings::resolve(cli, vec![]).is_err());
    }
}
