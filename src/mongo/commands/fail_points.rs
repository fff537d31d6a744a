//! MongoDB's test commands, on with `--enable-test-commands` (MongoDB's
//! `enableTestCommands`; off, `configureFailPoint` is 59 CommandNotFound): the registry of
//! active fail points ([`FailPoints`], held by `MongoServer`), `configureFailPoint`, and the
//! one fail point docgate has, `failCommand`, as MongoDB's wiki page "The failCommand fail
//! point" and the drivers' specifications use it.
//!
//! `failCommand` takes a `mode` — `"alwaysOn"`, `"off"`, `{times: n}` (the next n matching
//! commands, then off) or `{skip: n}` (let n matching commands pass, then always) — and
//! `data`: `failCommands` (the command names, aliases included, it applies to; never
//! `configureFailPoint` itself), `closeConnection` (hang up without a reply), `errorCode`
//! (answer that error instead of running the command), `errorLabels` (the labels of that
//! error, or of the write concern error, instead of the server's own), `blockConnection`
//! with `blockTimeMS` (wait that long first; then the command fails as configured, or runs),
//! `writeConcernError` (a write command runs, then its reply carries this document),
//! `appName` (only connections whose client metadata `application.name` is this),
//! `namespace` (only commands on this `db.collection`) and `failInternalCommands` (docgate
//! has no internal clients — no replica-set peers, no mongos — so every command is a
//! client's and the flag changes nothing). A closed connection or an error takes precedence
//! over `writeConcernError`, as in MongoDB. `activationProbability`, `threadName` and
//! `errorExtraInfo` are refused (BadValue): docgate would not honour them.
//!
//! Not for: where the interception happens (the dispatcher calls [`FailPoints::before_command`]
//! and [`FailPoints::after_command`]), or closing the socket (the connection does, when
//! `ConnectionInfo::hang_up` is set).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use bson::{doc, Bson, Document};

use crate::mongo::command_table::{Command, CommandSpec};
use crate::mongo::context::{CommandContext, ConnectionInfo};
use crate::mongo::dispatch::CommandReply;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::{as_bool, as_i64, type_name, CommandRequest};

/// The fail points that are configured, and how often each was entered.
#[derive(Debug, Default)]
pub struct FailPoints {
    fail_command: Mutex<Option<FailCommand>>,
    /// Times `failCommand` fired since the process started (`configureFailPoint`'s `count`).
    entered: AtomicI64,
}

/// When the fail point fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    AlwaysOn,
    /// Fires this many more times, then turns off.
    Times(i64),
    /// Lets this many more matching commands pass, then fires every time.
    Skip(i64),
}

/// `failCommand`'s configuration.
#[derive(Debug, Clone)]
struct FailCommand {
    mode: Mode,
    commands: Vec<String>,
    close_connection: bool,
    error_code: Option<i32>,
    error_labels: Option<Vec<Bson>>,
    block: Option<Duration>,
    write_concern_error: Option<Document>,
    app_name: Option<String>,
    namespace: Option<String>,
}

/// What the dispatcher does with a command after [`FailPoints::before_command`].
#[derive(Debug)]
pub enum Intercept {
    /// Run it.
    Run,
    /// Answer this instead (when `ConnectionInfo::hang_up` was set, nothing is sent).
    Reply(Document),
}

/// The write commands a `writeConcernError` applies to (those that take a write concern).
fn takes_write_concern(command: Command) -> bool {
    matches!(
        command,
        Command::Insert
            | Command::Update
            | Command::Delete
            | Command::FindAndModify
            | Command::Create
            | Command::CollMod
            | Command::Drop
            | Command::DropDatabase
            | Command::CreateIndexes
            | Command::DropIndexes
            | Command::RenameCollection
            | Command::CreateUser
            | Command::UpdateUser
            | Command::DropUser
            | Command::DropAllUsersFromDatabase
            | Command::GrantRolesToUser
            | Command::RevokeRolesFromUser
            | Command::CreateRole
            | Command::DropRole
    )
}

/// Error codes after which MongoDB labels a retryable write's error `RetryableWriteError`
/// (the retryable-writes specification's list).
const RETRYABLE_WRITE_CODES: &[i32] = &[
    6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436,
];

impl FailPoints {
    /// Whether `failCommand` applies to this command on this connection (its mode aside).
    fn matches(
        config: &FailCommand,
        spec: &CommandSpec,
        request: &CommandRequest,
        connection: &ConnectionInfo,
    ) -> bool {
        if spec.command == Command::ConfigureFailPoint {
            return false;
        }
        if let Some(app_name) = &config.app_name {
            let client_app = connection
                .client_metadata
                .as_ref()
                .and_then(|client| client.get_document("application").ok())
                .and_then(|application| application.get_str("name").ok());
            if client_app != Some(app_name.as_str()) {
                return false;
            }
        }
        if let Some(namespace) = &config.namespace {
            let target = match request.target() {
                Bson::String(collection) => format!("{}.{collection}", request.db),
                _ => request.db.clone(),
            };
            if &target != namespace {
                return false;
            }
        }
        config
            .commands
            .iter()
            .any(|name| name == spec.name || spec.aliases.iter().any(|alias| alias == name))
    }

    /// Fires the fail point for a matching command if `wanted` says this configuration acts
    /// on it, counting the activation against `times`/`skip`; answers the configuration.
    fn fire(
        &self,
        spec: &CommandSpec,
        request: &CommandRequest,
        connection: &ConnectionInfo,
        wanted: impl Fn(&FailCommand) -> bool,
    ) -> Option<FailCommand> {
        let mut slot = self
            .fail_command
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let config = slot.as_mut()?;
        if !Self::matches(config, spec, request, connection) || !wanted(config) {
            return None;
        }
        match &mut config.mode {
            Mode::AlwaysOn => {}
            Mode::Skip(left) if *left > 0 => {
                *left -= 1;
                return None;
            }
            Mode::Skip(_) => {}
            Mode::Times(left) => {
                *left -= 1;
            }
        }
        let fired = config.clone();
        if fired.mode == Mode::Times(0) {
            *slot = None;
        }
        self.entered.fetch_add(1, Ordering::Relaxed);
        Some(fired)
    }

    /// Before a command runs (after its authorization): blocks, hangs up or fails it as
    /// `failCommand` says.
    pub async fn before_command(
        &self,
        spec: &CommandSpec,
        request: &CommandRequest,
        connection: &mut ConnectionInfo,
    ) -> Intercept {
        let Some(config) = self.fire(spec, request, connection, |config| {
            config.close_connection || config.error_code.is_some() || config.block.is_some()
        }) else {
            return Intercept::Run;
        };
        if let Some(block) = config.block {
            tokio::time::sleep(block).await;
        }
        if config.close_connection {
            connection.hang_up = true;
            return Intercept::Reply(error_reply(
                91,
                "Failing command due to 'failCommand' failpoint",
                None,
            ));
        }
        match config.error_code {
            Some(code) => {
                let labels = config
                    .error_labels
                    .clone()
                    .or_else(|| server_labels(spec, request, code));
                Intercept::Reply(error_reply(
                    code,
                    "Failing command via 'failCommand' failpoint",
                    labels,
                ))
            }
            None => Intercept::Run,
        }
    }

    /// After a write command ran: adds `failCommand`'s `writeConcernError` to its successful
    /// reply.
    pub fn after_command(
        &self,
        spec: &CommandSpec,
        request: &CommandRequest,
        connection: &ConnectionInfo,
        reply: &mut CommandReply,
    ) {
        let CommandReply::Document(body) = reply else {
            return;
        };
        if !takes_write_concern(spec.command) || body.get_f64("ok").ok() != Some(1.0) {
            return;
        }
        let Some(config) = self.fire(spec, request, connection, |config| {
            config.write_concern_error.is_some()
        }) else {
            return;
        };
        if let Some(error) = config.write_concern_error {
            body.insert("writeConcernError", error);
        }
        if let Some(labels) = config.error_labels {
            body.insert("errorLabels", labels);
        }
    }
}

/// The labels MongoDB itself gives error `code` of this command (when the test names none):
/// `RetryableWriteError` on a retryable write or a commit/abort with a retryable code;
/// inside a transaction `TransientTransactionError` on a statement's conflict, lock
/// timeout, missing transaction or retryable code, and on a commit's conflict or missing
/// transaction; `UnknownTransactionCommitResult` on a commit whose outcome is unknown
/// (a retryable code, a time limit, a write concern failure).
fn server_labels(spec: &CommandSpec, request: &CommandRequest, code: i32) -> Option<Vec<Bson>> {
    let retryable_code = RETRYABLE_WRITE_CODES.contains(&code);
    let ends_transaction = matches!(
        spec.command,
        Command::CommitTransaction | Command::AbortTransaction
    );
    let in_transaction = request.body.contains_key("autocommit");
    let mut labels: Vec<&str> = Vec::new();
    if retryable_code && (is_retryable_write(spec, request) || ends_transaction) {
        labels.push("RetryableWriteError");
    }
    if in_transaction {
        match spec.command {
            Command::CommitTransaction => {
                if retryable_code || code == 50 || code == 64 {
                    labels.push("UnknownTransactionCommitResult");
                } else if code == 112 || code == 251 {
                    labels.push("TransientTransactionError");
                }
            }
            Command::AbortTransaction => {}
            _ if retryable_code || [112, 24, 251].contains(&code) => {
                labels.push("TransientTransactionError");
            }
            _ => {}
        }
    }
    (!labels.is_empty()).then(|| labels.into_iter().map(|l| Bson::String(l.into())).collect())
}

/// Whether the command is a retryable write: a write statement with a `txnNumber` outside a
/// transaction.
fn is_retryable_write(spec: &CommandSpec, request: &CommandRequest) -> bool {
    matches!(
        spec.command,
        Command::Insert | Command::Update | Command::Delete | Command::FindAndModify
    ) && request.body.contains_key("txnNumber")
        && !request.body.contains_key("autocommit")
}

/// `{ok: 0, errmsg, code, codeName}` for an error code chosen by the test.
fn error_reply(code: i32, message: &str, labels: Option<Vec<Bson>>) -> Document {
    let mut reply = doc! {
        "ok": 0.0,
        "errmsg": message,
        "code": code,
        "codeName": code_name(code),
    };
    if let Some(labels) = labels {
        reply.insert("errorLabels", labels);
    }
    reply
}

/// MongoDB's name of the codes tests usually inject; others are `Location<code>`, as MongoDB
/// names codes without a symbolic name.
fn code_name(code: i32) -> String {
    let name = match code {
        1 => "InternalError",
        2 => "BadValue",
        6 => "HostUnreachable",
        7 => "HostNotFound",
        11 => "UserNotFound",
        13 => "Unauthorized",
        18 => "AuthenticationFailed",
        20 => "IllegalOperation",
        24 => "LockTimeout",
        26 => "NamespaceNotFound",
        43 => "CursorNotFound",
        50 => "MaxTimeMSExpired",
        59 => "CommandNotFound",
        64 => "WriteConcernFailed",
        89 => "NetworkTimeout",
        91 => "ShutdownInProgress",
        100 => "UnsatisfiableWriteConcern",
        112 => "WriteConflict",
        133 => "FailedToSatisfyReadPreference",
        134 => "ReadConcernMajorityNotAvailableYet",
        175 => "QueryPlanKilled",
        189 => "PrimarySteppedDown",
        234 => "RetryChangeStream",
        237 => "CursorKilled",
        251 => "NoSuchTransaction",
        262 => "ExceededTimeLimit",
        280 => "ChangeStreamFatalError",
        286 => "ChangeStreamHistoryLost",
        9001 => "SocketException",
        10107 => "NotWritablePrimary",
        11000 => "DuplicateKey",
        11600 => "InterruptedAtShutdown",
        11601 => "Interrupted",
        11602 => "InterruptedDueToReplStateChange",
        13388 => "StaleConfig",
        13435 => "NotPrimaryNoSecondaryOk",
        13436 => "NotPrimaryOrSecondary",
        _ => return format!("Location{code}"),
    };
    name.to_string()
}

/// `configureFailPoint: "failCommand"`: sets or clears the fail point; answers `count`, the
/// times it was entered so far.
pub fn configure_fail_point(
    context: &CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    if request.db != "admin" {
        return Err(OpError::Unauthorized(
            "configureFailPoint may only be run against the admin database.".into(),
        ));
    }
    let mut arguments = request.arguments();
    let mode = arguments.value("mode");
    let data = arguments.value("data");
    arguments.finish()?;
    let name = match request.target() {
        Bson::String(name) => name.as_str(),
        other => {
            return Err(OpError::TypeMismatch(format!(
                "configureFailPoint takes the fail point's name, not {}",
                type_name(other)
            )))
        }
    };
    if name != "failCommand" {
        return Err(OpError::BadValue(format!(
            "Cannot find failpoint {name}: docgate has only failCommand"
        )));
    }
    let points = &context.server.fail_points;
    let count = points.entered.load(Ordering::Relaxed);
    let mode = match mode {
        Some(mode) => parse_mode(mode)?,
        None => return Err(OpError::BadValue("configureFailPoint needs a mode".into())),
    };
    let config = match mode {
        None => None,
        Some(mode) => Some(parse_data(mode, data)?),
    };
    *points
        .fail_command
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = config;
    Ok(doc! {"count": count})
}

/// `"alwaysOn"`, `"off"` (None), `{times: n}`, `{skip: n}`.
fn parse_mode(mode: &Bson) -> Result<Option<Mode>, OpError> {
    let count = |value: &Bson, what: &str| -> Result<i64, OpError> {
        match as_i64(value) {
            Some(n) if (0..=i64::from(i32::MAX)).contains(&n) => Ok(n),
            _ => Err(OpError::BadValue(format!(
                "'{what}' must be a non-negative 32-bit integer"
            ))),
        }
    };
    match mode {
        Bson::String(mode) if mode == "alwaysOn" => Ok(Some(Mode::AlwaysOn)),
        Bson::String(mode) if mode == "off" => Ok(None),
        Bson::Document(mode) if mode.len() == 1 => match mode.iter().next() {
            Some((key, value)) if key == "times" => match count(value, "times")? {
                0 => Ok(None),
                n => Ok(Some(Mode::Times(n))),
            },
            Some((key, value)) if key == "skip" => Ok(Some(Mode::Skip(count(value, "skip")?))),
            Some((key, _)) if key == "activationProbability" => Err(OpError::BadValue(
                "mode activationProbability is not supported by docgate".into(),
            )),
            _ => Err(OpError::BadValue(format!("invalid fail point mode {mode}"))),
        },
        other => Err(OpError::BadValue(format!(
            "invalid fail point mode {other}: use \"alwaysOn\", \"off\", {{times: n}} or {{skip: n}}"
        ))),
    }
}

/// `failCommand`'s `data`.
fn parse_data(mode: Mode, data: Option<&Bson>) -> Result<FailCommand, OpError> {
    let Some(Bson::Document(data)) = data else {
        return Err(OpError::BadValue(
            "failCommand needs a data document with failCommands".into(),
        ));
    };
    let bad = |field: &str, expected: &str| {
        OpError::BadValue(format!(
            "failCommand data field '{field}' must be {expected}"
        ))
    };
    let mut config = FailCommand {
        mode,
        commands: Vec::new(),
        close_connection: false,
        error_code: None,
        error_labels: None,
        block: None,
        write_concern_error: None,
        app_name: None,
        namespace: None,
    };
    let mut block_connection = false;
    let mut block_time = None;
    for (key, value) in data {
        match key.as_str() {
            "failCommands" => {
                let Bson::Array(names) = value else {
                    return Err(bad(key, "an array of command names"));
                };
                for name in names {
                    match name {
                        Bson::String(name) => config.commands.push(name.clone()),
                        _ => return Err(bad(key, "an array of command names")),
                    }
                }
            }
            "closeConnection" => {
                config.close_connection = as_bool(value).ok_or_else(|| bad(key, "a boolean"))?
            }
            "errorCode" => {
                let code = as_i64(value)
                    .and_then(|code| i32::try_from(code).ok())
                    .ok_or_else(|| bad(key, "a 32-bit integer"))?;
                config.error_code = Some(code);
            }
            "errorLabels" => match value {
                Bson::Array(labels) if labels.iter().all(|l| matches!(l, Bson::String(_))) => {
                    config.error_labels = Some(labels.clone())
                }
                _ => return Err(bad(key, "an array of strings")),
            },
            "blockConnection" => {
                block_connection = as_bool(value).ok_or_else(|| bad(key, "a boolean"))?
            }
            "blockTimeMS" => {
                let millis = as_i64(value)
                    .filter(|millis| *millis >= 0)
                    .ok_or_else(|| bad(key, "a non-negative integer"))?;
                block_time = Some(Duration::from_millis(millis as u64));
            }
            "writeConcernError" => match value {
                Bson::Document(error) => config.write_concern_error = Some(error.clone()),
                _ => return Err(bad(key, "a document")),
            },
            "appName" => match value {
                Bson::String(name) => config.app_name = Some(name.clone()),
                _ => return Err(bad(key, "a string")),
            },
            "namespace" => match value {
                Bson::String(namespace) => config.namespace = Some(namespace.clone()),
                _ => return Err(bad(key, "a string")),
            },
            "failInternalCommands" => {
                // docgate has no internal clients: every command is a client's already.
                as_bool(value).ok_or_else(|| bad(key, "a boolean"))?;
            }
            other => {
                return Err(OpError::BadValue(format!(
                    "failCommand data field '{other}' is not supported by docgate"
                )))
            }
        }
    }
    if config.commands.is_empty() {
        return Err(OpError::BadValue(
            "failCommand needs data.failCommands, the names of the commands to fail".into(),
        ));
    }
    if block_connection {
        match block_time {
            Some(time) => config.block = Some(time),
            None => {
                return Err(OpError::InvalidOptions(
                    "blockConnection requires blockTimeMS".into(),
                ))
            }
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(
            parse_mode(&"alwaysOn".into()).ok(),
            Some(Some(Mode::AlwaysOn))
        );
        assert_eq!(parse_mode(&"off".into()).ok(), Some(None));
        assert_eq!(
            parse_mode(&doc! {"times": 3}.into()).ok(),
            Some(Some(Mode::Times(3)))
        );
        assert_eq!(parse_mode(&doc! {"times": 0}.into()).ok(), Some(None));
        assert_eq!(
            parse_mode(&doc! {"skip": 2_i64}.into()).ok(),
            Some(Some(Mode::Skip(2)))
        );
        for bad in [
            Bson::from("on"),
            doc! {"times": -1}.into(),
            doc! {"activationProbability": 0.5}.into(),
            doc! {"times": 1, "skip": 1}.into(),
            Bson::Int32(1),
        ] {
            assert!(parse_mode(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn data() {
        let config = parse_data(
            Mode::AlwaysOn,
            Some(
                &doc! {"failCommands": ["find"], "errorCode": 2, "blockConnection": true,
                "blockTimeMS": 10, "appName": "a", "failInternalCommands": true}
                .into(),
            ),
        )
        .expect("valid");
        assert_eq!(config.commands, vec!["find".to_string()]);
        assert_eq!(config.error_code, Some(2));
        assert_eq!(config.block, Some(Duration::from_millis(10)));
        assert_eq!(config.app_name.as_deref(), Some("a"));
        for bad in [
            doc! {},
            doc! {"failCommands": "find"},
            doc! {"failCommands": ["find"], "blockConnection": true},
            doc! {"failCommands": ["find"], "threadName": "t"},
            doc! {"failCommands": ["find"], "errorExtraInfo": {}},
            doc! {"failCommands": ["find"], "errorLabels": [1]},
        ] {
            assert!(
                parse_data(Mode::AlwaysOn, Some(&bad.clone().into())).is_err(),
                "{bad}"
            );
        }
    }
}
