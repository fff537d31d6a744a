//! The limits and versions docgate announces to drivers in `hello` and `buildInfo`, and
//! enforces: the write batch size, the wire and server version, the session timeout. (The
//! document limits are the core's, `crate::ops::prepare::DocumentLimits`; the message size
//! limit `settings::MongoLimits::max_message_bytes`, at most the wire crate's.)
//!
//! Not for: the operator-set limits of `[limits]` (`settings::MongoLimits`).

/// Most statements in one write command.
pub const MAX_WRITE_BATCH_SIZE: i32 = 100_000;
/// The wire version of MongoDB 7.0, the server version docgate answers as.
pub const MAX_WIRE_VERSION: i32 = 21;
/// The MongoDB version docgate reports (drivers and mongosh gate features on it).
pub const MONGODB_VERSION: &str = "7.0.0";
/// How long a logical session lives without use.
pub const LOGICAL_SESSION_TIMEOUT_MINUTES: i32 = 30;
