//! Authentication on the wire: `saslStart` / `saslContinue` (SCRAM-SHA-256, SCRAM-SHA-1,
//! PLAIN), `saslSupportedMechs` and `speculativeAuthenticate` in `hello`, `logout`,
//! `authenticate` (MONGODB-X509, not offered), `connectionStatus`, and the check every
//! command passes before it runs ([`authorize`]).
//!
//! PLAIN verifies against the users of the named database; `$external` (what drivers send
//! for PLAIN by default) means the users of `admin`, or PostgreSQL roles with
//! `auth.source = database`. It goes through the fast verification path, so a client
//! reconnecting with the same password pays PBKDF2 (or the database logon) once.
//!
//! Not for: user and role management (`users.rs`) or the roles themselves (`crate::auth`).

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, Document};

use crate::auth::service::IdentitySource;
use crate::auth::{
    allows, may_run, Access, Action, AuthError, AuthenticatedUser, CommandPrivilege,
    PlainCredentials, ScramConversation, ScramMechanism,
};
use crate::mongo::command_table::{self, Command, CommandSpec};
use crate::mongo::context::CommandContext;
use crate::mongo::error::{CommandResult, OpError};
use crate::mongo::request::{opt_document, opt_str, CommandRequest};
use crate::state::{MechanismCounters, ServerCounters};

/// What one connection knows about its authentication.
#[derive(Debug, Default)]
pub struct ConnectionAuth {
    /// The user this connection authenticated as.
    pub user: Option<AuthenticatedUser>,
    /// What `user` was last computed from (see `AuthService::refresh`).
    identity_source: Option<IdentitySource>,
    /// SCRAM conversations in progress, by `conversationId`.
    conversations: HashMap<i32, PendingConversation>,
    next_conversation_id: i32,
    /// Decided by [`authorize`] for the command being run: the access rule, and the user as
    /// the catalog has it now (roles granted or revoked since authenticating apply at once).
    pub access: Option<Access>,
}

impl ConnectionAuth {
    /// The connection is now `user` (roles as of now).
    fn set_user(&mut self, user: AuthenticatedUser) {
        self.user = Some(user);
        self.identity_source = None;
    }
}

#[derive(Debug)]
struct PendingConversation {
    db: String,
    conversation: ScramConversation,
    /// Started inside `hello` (counted as a speculative authentication).
    speculative: bool,
}

/// Most conversations one connection may leave open (a client that starts many and never
/// finishes them must not grow memory).
const MAX_OPEN_CONVERSATIONS: usize = 8;

/// `saslStart`.
pub async fn sasl_start(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let mechanism = opt_str(&request.body, "mechanism")?
        .ok_or_else(|| OpError::missing_field("saslStart.mechanism"))?
        .to_owned();
    let payload = payload_of(&request.body)?;
    let skip_empty = opt_document(&request.body, "options")?
        .and_then(|options| options.get("skipEmptyExchange"))
        .is_some_and(|value| matches!(value, Bson::Boolean(true)));
    count(context, &mechanism, |m| &m.authenticate_received);
    start(
        context,
        &request.db,
        &mechanism,
        &payload,
        skip_empty,
        false,
    )
    .await
}

/// Bumps one of a mechanism's counters.
fn count(
    context: &CommandContext<'_>,
    mechanism: &str,
    counter: impl Fn(&MechanismCounters) -> &AtomicU64,
) {
    if let Some(m) = context.server.state.counters.mechanism(mechanism) {
        ServerCounters::add(counter(m), 1);
    }
}

async fn start(
    context: &mut CommandContext<'_>,
    db: &str,
    mechanism: &str,
    payload: &[u8],
    skip_empty: bool,
    speculative: bool,
) -> CommandResult {
    let auth = &context.server.state.auth;
    if mechanism == "PLAIN" {
        let credentials = PlainCredentials::parse(payload)?;
        let user = auth
            .verify_password(
                db,
                &credentials.username,
                &credentials.password,
                context.connection.peer.ip(),
            )
            .await?;
        log_authenticated(context, &user, mechanism);
        context.connection.auth.set_user(user);
        count_success(context, mechanism, speculative);
        return Ok(sasl_reply(1, true, Vec::new()));
    }
    let scram = ScramMechanism::from_name(mechanism)
        .filter(|_| db != "$external")
        .ok_or_else(|| AuthError::unknown_mechanism(mechanism))?;
    let (conversation, reply) = auth
        .scram_start(scram, db, payload, skip_empty, context.connection.peer.ip())
        .await?;
    let connection = &mut context.connection.auth;
    if connection.conversations.len() >= MAX_OPEN_CONVERSATIONS {
        connection.conversations.clear();
    }
    connection.next_conversation_id = connection.next_conversation_id.wrapping_add(1).max(1);
    let id = connection.next_conversation_id;
    connection.conversations.insert(
        id,
        PendingConversation {
            db: db.to_owned(),
            conversation,
            speculative,
        },
    );
    Ok(sasl_reply(id, reply.done, reply.payload))
}

/// `saslContinue`.
pub async fn sasl_continue(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
) -> CommandResult {
    let id = match request.body.get("conversationId") {
        Some(Bson::Int32(id)) => *id,
        Some(Bson::Int64(id)) => i32::try_from(*id).unwrap_or(-1),
        Some(Bson::Double(id)) if id.fract() == 0.0 => *id as i32,
        _ => return Err(OpError::missing_field("saslContinue.conversationId")),
    };
    let payload = payload_of(&request.body)?;
    let Some(mut pending) = context.connection.auth.conversations.remove(&id) else {
        return Err(OpError::ProtocolError("No SASL session state found".into()));
    };
    let auth = context.server.state.auth.clone();
    let (reply, user) = auth
        .scram_step(
            &pending.db,
            &mut pending.conversation,
            &payload,
            context.connection.peer.ip(),
        )
        .await?;
    if let Some(user) = user {
        let mechanism = pending.conversation.mechanism().name();
        log_authenticated(context, &user, mechanism);
        context.connection.auth.set_user(user);
        count_success(context, mechanism, pending.speculative);
    }
    if !reply.done {
        context.connection.auth.conversations.insert(id, pending);
    }
    Ok(sasl_reply(id, reply.done, reply.payload))
}

/// Adds `saslSupportedMechs` and `speculativeAuthenticate` answers to a `hello` reply.
pub async fn add_to_hello(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
    reply: &mut Document,
) {
    if let Some(Bson::String(user)) = request.body.get("saslSupportedMechs") {
        if let Some((db, name)) = user.split_once('.') {
            if let Ok(Some(mechanisms)) = context.server.state.auth.mechanisms_of(db, name).await {
                reply.insert("saslSupportedMechs", mechanisms);
            }
        }
    }
    let Some(Bson::Document(speculative)) = request.body.get("speculativeAuthenticate") else {
        return;
    };
    // The driver falls back to a normal conversation when the answer is missing.
    let db = speculative
        .get_str("db")
        .unwrap_or(request.db.as_str())
        .to_owned();
    let Ok(mechanism) = speculative.get_str("mechanism").map(str::to_owned) else {
        return;
    };
    let Ok(payload) = payload_of(speculative) else {
        return;
    };
    let skip_empty = speculative
        .get_document("options")
        .ok()
        .and_then(|o| o.get_bool("skipEmptyExchange").ok())
        .unwrap_or(false);
    count(context, &mechanism, |m| &m.speculative_received);
    match start(context, &db, &mechanism, &payload, skip_empty, true).await {
        Ok(mut answer) => {
            answer.remove("ok");
            reply.insert("speculativeAuthenticate", answer);
        }
        Err(error) => {
            tracing::debug!(%error, "speculative authentication failed");
        }
    }
}

/// `logout`: forget the connection's user.
pub fn logout(context: &mut CommandContext<'_>) -> CommandResult {
    context.connection.auth.user = None;
    context.connection.auth.identity_source = None;
    context.connection.auth.conversations.clear();
    Ok(Document::new())
}

/// `authenticate` (MONGODB-X509 and the legacy MONGODB-CR): not offered.
pub fn authenticate(request: &CommandRequest) -> CommandResult {
    let mechanism = opt_str(&request.body, "mechanism")?.unwrap_or("MONGODB-CR");
    Err(AuthError::unknown_mechanism(mechanism).into())
}

/// `connectionStatus`: who this connection is, with the roles the catalog has now (a dropped
/// user is no longer authenticated).
pub async fn connection_status(context: &mut CommandContext<'_>) -> CommandResult {
    let connection = &mut context.connection.auth;
    let auth = &context.server.state.auth;
    auth.refresh(&mut connection.user, &mut connection.identity_source)
        .await?;
    let (users, roles) = match &context.connection.auth.user {
        Some(user) => (
            vec![Bson::Document(doc! {"user": &user.name, "db": &user.db})],
            user.roles
                .iter()
                .map(|g| Bson::Document(doc! {"role": &g.role, "db": &g.db}))
                .collect(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    Ok(doc! {"authInfo": {"authenticatedUsers": users, "authenticatedUserRoles": roles}})
}

/// Checks that the connection may run `request`; remembers the access rule and the user's
/// current roles for the handler. Unknown commands pass (they answer 59 CommandNotFound).
///
/// Commands open to everyone (`hello`, `ping`, `saslStart`, ...) are answered without
/// deciding the access rule: that decision may read the user list from the database, and a
/// handshake must not wait for (or fail with) a busy pool.
pub async fn authorize(
    context: &mut CommandContext<'_>,
    request: &CommandRequest,
    spec: Option<&CommandSpec>,
) -> Result<(), OpError> {
    let Some(spec) = spec else {
        return Ok(());
    };
    if spec.privilege == CommandPrivilege::None {
        return Ok(());
    }
    let name = spec.name;
    let auth = context.server.state.auth.clone();
    let access = auth
        .access(context.connection.peer.ip().is_loopback())
        .await?;
    context.connection.auth.access = Some(access);
    if access == Access::Open {
        return Ok(());
    }
    let connection = &mut context.connection.auth;
    auth.refresh(&mut connection.user, &mut connection.identity_source)
        .await?;
    let Some(user) = &context.connection.auth.user else {
        return Err(AuthError::requires_authentication(name).into());
    };
    let allowed = match spec.command {
        // Every user may list databases; the list shows only theirs without the privilege.
        Command::ListDatabases => true,
        // Every user may look at themselves.
        Command::UsersInfo if asks_only_about(request, user) => true,
        _ => {
            may_run(&user.roles, true, spec.privilege, &request.db)
                && extra_privileges(spec.command, request)
                    .iter()
                    .all(|(action, db)| allows(&user.roles, *action, db))
                && (spec.command != Command::Aggregate
                    || !lists_others_sessions(&request.body, user)
                    || allows(&user.roles, Action::ListSessions, "admin"))
        }
    };
    if allowed {
        Ok(())
    } else {
        Err(AuthError::not_authorized(&request.db, name).into())
    }
}

/// Whether the connection's user may see every database (`listDatabases` filters otherwise);
/// None when no authentication applies.
pub fn visible_databases(context: &CommandContext<'_>) -> Option<Vec<String>> {
    if context.connection.auth.access != Some(Access::Required) {
        return None;
    }
    let user = context.connection.auth.user.as_ref()?;
    if allows(&user.roles, Action::ListDatabases, "admin") {
        return None;
    }
    let mut dbs: Vec<String> = user.roles.iter().map(|g| g.db.clone()).collect();
    dbs.sort();
    dbs.dedup();
    Some(dbs)
}

/// Privileges a command needs beyond its base one, from its arguments: `(action, database)`.
fn extra_privileges(command: Command, request: &CommandRequest) -> Vec<(Action, String)> {
    let mut needed = privileges_of_arguments(command, request);
    // `bypassDocumentValidation: true` needs its own action where the command writes (the
    // built-in dbAdmin, dbOwner, dbAdminAnyDatabase and root have it).
    let bypasses = matches!(
        request.body.get("bypassDocumentValidation"),
        Some(Bson::Boolean(true))
    );
    if bypasses
        && matches!(
            command,
            Command::Insert | Command::Update | Command::FindAndModify | Command::Aggregate
        )
    {
        let mut dbs: Vec<String> = needed.iter().map(|(_, db)| db.clone()).collect();
        dbs.push(request.db.clone());
        dbs.sort();
        dbs.dedup();
        needed.extend(
            dbs.into_iter()
                .map(|db| (Action::BypassDocumentValidation, db)),
        );
    }
    needed
}

/// What a command needs beyond its base privilege, by its arguments.
fn privileges_of_arguments(command: Command, request: &CommandRequest) -> Vec<(Action, String)> {
    let db = || request.db.clone();
    let flag = |body: &Document, key: &str| matches!(body.get(key), Some(Bson::Boolean(true)));
    match command {
        Command::Update => {
            let upserts = matches!(request.body.get("updates"), Some(Bson::Array(updates))
                if updates.iter().any(|u| matches!(u, Bson::Document(u) if flag(u, "upsert"))));
            if upserts {
                vec![(Action::Insert, db())]
            } else {
                Vec::new()
            }
        }
        Command::FindAndModify if flag(&request.body, "remove") => {
            vec![(Action::Remove, db())]
        }
        Command::FindAndModify if flag(&request.body, "upsert") => {
            vec![(Action::Insert, db())]
        }
        // A pipeline that writes needs the writes it makes, decided before it is planned.
        Command::Aggregate => output_stage_privileges(&request.body, &request.db),
        // explain needs what the explained command needs.
        Command::Explain => match request.target() {
            Bson::Document(explained) => {
                let inner = explained
                    .keys()
                    .next()
                    .and_then(|name| command_table::lookup(name))
                    .map(|spec| spec.command);
                let actions: &[Action] = match inner {
                    Some(Command::Update) => &[Action::Update],
                    Some(Command::Delete) => &[Action::Remove],
                    Some(Command::FindAndModify) => &[Action::Update, Action::Remove],
                    _ => &[],
                };
                let mut needed: Vec<(Action, String)> =
                    actions.iter().map(|a| (*a, db())).collect();
                if inner == Some(Command::Aggregate) {
                    needed.extend(output_stage_privileges(explained, &request.db));
                }
                needed
            }
            _ => Vec::new(),
        },
        // Granting a role needs grantRole on the role's own database (revoking, revokeRole):
        // a userAdmin of one database must not hand out roles of another.
        Command::CreateUser
        | Command::UpdateUser
        | Command::GrantRolesToUser
        | Command::CreateRole => role_databases(request)
            .map(|role_db| (Action::GrantRole, role_db))
            .collect(),
        Command::RevokeRolesFromUser => role_databases(request)
            .map(|role_db| (Action::RevokeRole, role_db))
            .collect(),
        _ => Vec::new(),
    }
}

/// What an `aggregate` body's `$out` or `$merge` stage writes needs, as MongoDB requires it:
/// `insert` and `remove` on the output database for `$out` (it replaces the collection),
/// `insert` and `update` for `$merge`. Stages anywhere in the pipeline count, so the check
/// does not depend on where the planner would refuse them.
fn output_stage_privileges(body: &Document, db: &str) -> Vec<(Action, String)> {
    let Some(Bson::Array(stages)) = body.get("pipeline") else {
        return Vec::new();
    };
    let mut needed = Vec::new();
    for stage in stages {
        let Bson::Document(stage) = stage else {
            continue;
        };
        let output_db = |target: &Bson| match target {
            Bson::Document(spec) => spec.get_str("db").unwrap_or(db).to_owned(),
            _ => db.to_owned(),
        };
        if let Some(target) = stage.get("$out") {
            let out_db = output_db(target);
            needed.push((Action::Insert, out_db.clone()));
            needed.push((Action::Remove, out_db));
        }
        if let Some(spec) = stage.get("$merge") {
            let into = match spec {
                Bson::Document(spec) => spec.get("into").cloned().unwrap_or(Bson::Null),
                other => other.clone(),
            };
            let merge_db = output_db(&into);
            needed.push((Action::Insert, merge_db.clone()));
            needed.push((Action::Update, merge_db));
        }
    }
    needed
}

/// Whether an `aggregate` body's `$listLocalSessions` lists sessions of users other than
/// `user` (`allUsers: true`, or `users` naming someone else): that needs `listSessions` on
/// the cluster, as MongoDB requires it; the caller's own sessions need nothing more.
fn lists_others_sessions(body: &Document, user: &AuthenticatedUser) -> bool {
    let Some(Bson::Array(stages)) = body.get("pipeline") else {
        return false;
    };
    let Some(Bson::Document(spec)) = stages
        .first()
        .and_then(Bson::as_document)
        .and_then(|stage| stage.get("$listLocalSessions"))
    else {
        return false;
    };
    if matches!(spec.get("allUsers"), Some(Bson::Boolean(true))) {
        return true;
    }
    match spec.get("users") {
        Some(Bson::Array(users)) => users.iter().any(|named| {
            let named = named.as_document();
            named.and_then(|n| n.get_str("user").ok()) != Some(user.name.as_str())
                || named.and_then(|n| n.get_str("db").ok()) != Some(user.db.as_str())
        }),
        _ => false,
    }
}

/// The databases of the roles a user command names (`"read"` is in the command's database).
fn role_databases(request: &CommandRequest) -> impl Iterator<Item = String> + '_ {
    let roles = match request.body.get("roles") {
        Some(Bson::Array(roles)) => roles.as_slice(),
        _ => &[],
    };
    roles.iter().map(|role| match role {
        Bson::Document(spec) => spec.get_str("db").unwrap_or(&request.db).to_owned(),
        _ => request.db.clone(),
    })
}

fn asks_only_about(request: &CommandRequest, user: &AuthenticatedUser) -> bool {
    match request.target() {
        Bson::String(name) => *name == user.name && request.db == user.db,
        Bson::Document(spec) => {
            spec.get_str("user").is_ok_and(|n| n == user.name)
                && spec.get_str("db").is_ok_and(|d| d == user.db)
        }
        _ => false,
    }
}

fn payload_of(body: &Document) -> Result<Vec<u8>, OpError> {
    match body.get("payload") {
        Some(Bson::Binary(binary)) => Ok(binary.bytes.clone()),
        Some(Bson::String(text)) => Ok(text.as_bytes().to_vec()),
        Some(_) => Err(OpError::TypeMismatch("payload must be binary data".into())),
        None => Err(OpError::missing_field("payload")),
    }
}

fn sasl_reply(conversation_id: i32, done: bool, payload: Vec<u8>) -> Document {
    doc! {
        "conversationId": conversation_id,
        "done": done,
        "payload": Binary { subtype: BinarySubtype::Generic, bytes: payload },
        "ok": 1.0,
    }
}

fn count_success(context: &CommandContext<'_>, mechanism: &str, speculative: bool) {
    if speculative {
        count(context, mechanism, |m| &m.speculative_successful);
    } else {
        count(context, mechanism, |m| &m.authenticate_successful);
    }
}

fn log_authenticated(context: &CommandContext<'_>, user: &AuthenticatedUser, mechanism: &str) {
    tracing::debug!(
        connection = context.connection.id,
        user = %user.name,
        db = %user.db,
        mechanism,
        "authenticated"
    );
}
