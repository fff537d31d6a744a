//! Settings: command-line flags, `DOCGATE_*` environment variables and an optional TOML
//! file, resolved once at start into [`Settings`]: flags in `cli`, the file in `file`, the
//! merging (flag, then environment, then file, then the built-in default) in `resolve`.
//! Used by `main.rs` (and benchmarks that start a server the way it does).
//!
//! Not for: the areas' settings types (each area owns its own; the shared state's are
//! `crate::state::AppSettings`), or anything that changes at run time (catalog metadata lives in
//! the database).

mod cli;
mod error;
mod file;
mod redact;
mod resolve;

pub use cli::{parse_duration, Cli, Command, LimitArgs, LogFormat, RestCommand, UserCommand};
pub use error::{ConfigError, InvalidDuration};
pub use resolve::Settings;
pub use resolve::{
    parse_admin_listen, parse_rest_listen, DEFAULT_ADMIN_LISTEN, DEFAULT_BACKEND, DEFAULT_LISTEN,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_REST_LISTEN, REST_LISTEN_OFF,
};
