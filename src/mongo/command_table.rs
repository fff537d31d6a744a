//! The one table of the commands docgate answers: for each, its name, the other spellings
//! drivers send, the help `listCommands` shows, the privilege it needs before it runs, and
//! which handler runs it ([`Command`], matched by the dispatcher, so the compiler checks
//! that every command in the table has one).
//!
//! A name appears here once; the dispatcher, the authorization check, `listCommands` and
//! `explain` all look commands up here instead of spelling their names.
//!
//! Not for: running commands (`dispatch.rs`) or what a role allows (`crate::auth::roles`).

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::auth::roles::Action::{self, *};
use crate::auth::CommandPrivilege::{self, Actions, Authenticated, None as Open};

/// Which handler runs a command (several table entries may share one: `hello` and
/// `isMaster`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    AbortTransaction,
    Aggregate,
    Authenticate,
    BuildInfo,
    CollMod,
    CloneCollectionAsCapped,
    CollStats,
    CommitTransaction,
    ConfigureFailPoint,
    ConnectionStatus,
    ConvertToCapped,
    Count,
    Create,
    CreateIndexes,
    CreateRole,
    CreateUser,
    CurrentOp,
    DbStats,
    Delete,
    Distinct,
    Drop,
    DropAllUsersFromDatabase,
    DropDatabase,
    DropIndexes,
    DropRole,
    DropUser,
    EndSessions,
    Explain,
    Find,
    FindAndModify,
    Fsync,
    FsyncUnlock,
    GetCmdLineOpts,
    GetLog,
    GetMore,
    GetParameter,
    GrantRolesToUser,
    Hello,
    HostInfo,
    Insert,
    KillAllSessions,
    KillAllSessionsByPattern,
    KillCursors,
    KillOp,
    KillSessions,
    ListCollections,
    ListCommands,
    ListDatabases,
    ListIndexes,
    Logout,
    Ping,
    PlanCacheClear,
    PlanCacheClearFilters,
    PlanCacheListFilters,
    Profile,
    RefreshSessions,
    RenameCollection,
    ReplSetGetConfig,
    ReplSetGetStatus,
    ReplSetInitiate,
    ReplSetReconfig,
    RevokeRolesFromUser,
    RolesInfo,
    SaslContinue,
    SaslStart,
    ServerStatus,
    Shutdown,
    StartSession,
    Update,
    UpdateUser,
    UsersInfo,
    Validate,
    WhatsMyUri,
}

impl Command {
    /// Whether the command changes data or metadata (its `operationTime` is a new tick of
    /// the cluster time).
    pub fn writes(self) -> bool {
        matches!(
            self,
            Command::Insert
                | Command::Update
                | Command::Delete
                | Command::FindAndModify
                | Command::CommitTransaction
                | Command::Create
                | Command::CollMod
                | Command::CreateIndexes
                | Command::Drop
                | Command::DropDatabase
                | Command::DropIndexes
                | Command::RenameCollection
                | Command::ConvertToCapped
                | Command::CloneCollectionAsCapped
        )
    }
}

/// One command docgate answers.
#[derive(Debug)]
pub struct CommandSpec {
    /// The name `listCommands` shows and error messages use.
    pub name: &'static str,
    /// Other spellings of the same command (`findandmodify`).
    pub aliases: &'static [&'static str],
    /// What it does, for `listCommands`.
    pub help: &'static str,
    /// What it needs before it runs; some commands need more, depending on their arguments
    /// (`upsert`, `$out`, the explained command: see `commands::auth`).
    pub privilege: CommandPrivilege,
    /// The handler.
    pub command: Command,
}

/// Shorthand for the table below.
const fn spec(
    name: &'static str,
    aliases: &'static [&'static str],
    command: Command,
    privilege: CommandPrivilege,
    help: &'static str,
) -> CommandSpec {
    CommandSpec {
        name,
        aliases,
        help,
        privilege,
        command,
    }
}

const fn needs(actions: &'static [Action]) -> CommandPrivilege {
    Actions(actions)
}

/// Every command docgate answers, in `listCommands` order.
#[rustfmt::skip]
pub const COMMANDS: &[CommandSpec] = &[
    spec("abortTransaction", &[], Command::AbortTransaction, Authenticated, "Aborts the session's multi-document transaction."),
    spec("authenticate", &[], Command::Authenticate, Open, "Legacy authentication (MONGODB-X509 is not offered)."),
    spec("aggregate", &[], Command::Aggregate, needs(&[Find]), "Runs an aggregation pipeline ($match, $group, $sort, $skip, $limit, $count, $project, ...)."),
    spec("buildInfo", &["buildinfo"], Command::BuildInfo, Open, "Build details of this server."),
    spec("collMod", &[], Command::CollMod, needs(&[CollMod]), "Redefines a view or changes an index (hidden, expireAfterSeconds)."),
    spec("cloneCollectionAsCapped", &[], Command::CloneCollectionAsCapped, needs(&[Find, Insert, CreateCollection]), "Copies the newest documents of a collection that fit into a new capped collection."),
    spec("collStats", &["collstats"], Command::CollStats, needs(&[CollStats]), "Size and count of a collection."),
    spec("commitTransaction", &[], Command::CommitTransaction, Authenticated, "Commits the session's multi-document transaction."),
    spec("configureFailPoint", &[], Command::ConfigureFailPoint, needs(&[SetParameter]), "Sets the failCommand fail point (only with --enable-test-commands)."),
    spec("connectionStatus", &[], Command::ConnectionStatus, Open, "Authentication state of this connection."),
    spec("convertToCapped", &[], Command::ConvertToCapped, needs(&[ConvertToCapped]), "Replaces a collection by a capped one holding its newest documents that fit."),
    spec("count", &[], Command::Count, needs(&[Find]), "Counts the documents matching a query."),
    spec("create", &[], Command::Create, needs(&[CreateCollection]), "Creates a collection."),
    spec("createRole", &[], Command::CreateRole, needs(&[CreateRole]), "Creates a role that bundles built-in roles."),
    spec("createUser", &[], Command::CreateUser, needs(&[CreateUser]), "Creates a user."),
    spec("createIndexes", &[], Command::CreateIndexes, needs(&[CreateIndex]), "Builds secondary indexes (single field, compound, unique, sparse, partial, TTL)."),
    spec("currentOp", &[], Command::CurrentOp, Authenticated, "The operations running now, with their SQL (all users' need inprog; $ownOps: true lists one's own)."),
    spec("dbStats", &["dbstats"], Command::DbStats, needs(&[DbStats]), "Size and counts of a database."),
    spec("delete", &[], Command::Delete, needs(&[Remove]), "Deletes documents."),
    spec("distinct", &[], Command::Distinct, needs(&[Find]), "Distinct values of a field."),
    spec("drop", &[], Command::Drop, needs(&[DropCollection]), "Drops a collection."),
    spec("dropAllUsersFromDatabase", &[], Command::DropAllUsersFromDatabase, needs(&[DropUser]), "Drops every user of a database."),
    spec("dropRole", &[], Command::DropRole, needs(&[DropRole]), "Drops a user-defined role."),
    spec("dropUser", &[], Command::DropUser, needs(&[DropUser]), "Drops a user."),
    spec("dropIndexes", &["deleteIndexes"], Command::DropIndexes, needs(&[DropIndex]), "Drops secondary indexes."),
    spec("dropDatabase", &[], Command::DropDatabase, needs(&[DropDatabase]), "Drops a database and all its collections."),
    spec("endSessions", &[], Command::EndSessions, Open, "Ends logical sessions, their transactions and their cursors."),
    spec("explain", &[], Command::Explain, needs(&[Find]), "How a find, count, distinct, aggregate, update, delete or findAndModify would run."),
    spec("find", &[], Command::Find, needs(&[Find]), "Queries a collection."),
    spec("findAndModify", &["findandmodify"], Command::FindAndModify, needs(&[Find, Update]), "Updates or removes one document and returns it."),
    spec("fsync", &[], Command::Fsync, needs(&[Fsync]), "Flushes committed writes to the database files (a checkpoint); lock: true is refused."),
    spec("fsyncUnlock", &[], Command::FsyncUnlock, needs(&[Fsync]), "Answers IllegalOperation: fsync never locks in docgate."),
    spec("getCmdLineOpts", &[], Command::GetCmdLineOpts, needs(&[GetCmdLineOpts]), "The command line this server was started with."),
    spec("getLog", &[], Command::GetLog, needs(&[GetLog]), "Recent log lines in MongoDB's structured form (global, startupWarnings)."),
    spec("getMore", &[], Command::GetMore, Authenticated, "Next batch of a cursor."),
    spec("getParameter", &[], Command::GetParameter, needs(&[GetParameter]), "Server parameters."),
    spec("grantRolesToUser", &[], Command::GrantRolesToUser, needs(&[GrantRole]), "Grants roles to a user."),
    spec("hello", &[], Command::Hello, Open, "Handshake: server capabilities and limits."),
    spec("hostInfo", &[], Command::HostInfo, needs(&[HostInfo]), "The machine this server runs on."),
    spec("insert", &[], Command::Insert, needs(&[Insert]), "Inserts documents."),
    spec("isMaster", &["ismaster"], Command::Hello, Open, "Legacy handshake (hello)."),
    spec("killAllSessions", &[], Command::KillAllSessions, needs(&[KillAnySession]), "Kills all sessions (or those of the users listed), their transactions and cursors."),
    spec("killAllSessionsByPattern", &[], Command::KillAllSessionsByPattern, needs(&[KillAnySession]), "Kills the sessions matching patterns (users, lsid)."),
    spec("killCursors", &[], Command::KillCursors, Authenticated, "Closes cursors."),
    spec("killOp", &[], Command::KillOp, Authenticated, "Interrupts a running operation and cancels its SQL (others' need killop)."),
    spec("killSessions", &[], Command::KillSessions, Authenticated, "Kills sessions by id, their transactions and cursors."),
    spec("listCollections", &[], Command::ListCollections, needs(&[ListCollections]), "Lists the collections of a database."),
    spec("listCommands", &[], Command::ListCommands, Open, "Lists the supported commands."),
    spec("listDatabases", &[], Command::ListDatabases, needs(&[ListDatabases]), "Lists databases."),
    spec("listIndexes", &[], Command::ListIndexes, needs(&[ListIndexes]), "Lists the indexes of a collection."),
    spec("logout", &[], Command::Logout, Open, "Ends the connection's authentication."),
    spec("ping", &[], Command::Ping, Open, "Checks that the server answers."),
    spec("planCacheClear", &[], Command::PlanCacheClear, needs(&[PlanCacheWrite]), "Clears a collection's plan cache: docgate caches no plans, so there is nothing to clear."),
    spec("planCacheClearFilters", &[], Command::PlanCacheClearFilters, needs(&[PlanCacheWrite]), "Clears index filters: docgate sets none (planCacheSetFilter is not implemented)."),
    spec("planCacheListFilters", &[], Command::PlanCacheListFilters, needs(&[PlanCacheRead]), "Lists index filters: docgate sets none."),
    spec("profile", &[], Command::Profile, needs(&[EnableProfiler]), "Sets or reads the profiler level, slowms, sampleRate and filter of a database."),
    spec("refreshSessions", &[], Command::RefreshSessions, Authenticated, "Keeps sessions from expiring."),
    spec("renameCollection", &[], Command::RenameCollection, needs(&[RenameCollectionSameDb]), "Renames a collection, possibly into another database."),
    spec("replSetGetConfig", &[], Command::ReplSetGetConfig, needs(&[ServerStatus]), "The configuration of the one-member replica set (rs.conf())."),
    spec("replSetGetStatus", &[], Command::ReplSetGetStatus, needs(&[ServerStatus]), "The state of the one-member replica set (rs.status())."),
    spec("replSetInitiate", &[], Command::ReplSetInitiate, needs(&[SetParameter]), "Refused: the replica set is initiated at start (AlreadyInitialized)."),
    spec("replSetReconfig", &[], Command::ReplSetReconfig, needs(&[SetParameter]), "Refused: the one member is fixed by --replica-set and --advertise."),
    spec("revokeRolesFromUser", &[], Command::RevokeRolesFromUser, needs(&[RevokeRole]), "Revokes roles from a user."),
    spec("rolesInfo", &[], Command::RolesInfo, needs(&[ViewRole]), "Built-in and user-defined roles."),
    spec("saslContinue", &[], Command::SaslContinue, Open, "Continues a SASL authentication conversation."),
    spec("saslStart", &[], Command::SaslStart, Open, "Starts SASL authentication (SCRAM-SHA-256, SCRAM-SHA-1, PLAIN)."),
    spec("serverStatus", &[], Command::ServerStatus, needs(&[ServerStatus]), "Counters and state of this server."),
    spec("shutdown", &[], Command::Shutdown, needs(&[Shutdown]), "Stops the server as SIGTERM does (running commands get --shutdown-grace)."),
    spec("startSession", &[], Command::StartSession, Authenticated, "Starts a logical session."),
    spec("update", &[], Command::Update, needs(&[Update]), "Updates documents."),
    spec("updateUser", &[], Command::UpdateUser, needs(&[ChangePassword]), "Changes a user's password, roles or customData."),
    spec("usersInfo", &[], Command::UsersInfo, needs(&[ViewUser]), "Users of a database."),
    spec("validate", &[], Command::Validate, needs(&[Validate]), "Checks a collection's documents and _id index."),
    spec("whatsmyuri", &[], Command::WhatsMyUri, Open, "The client's address as the server sees it."),
];

/// Every name and alias, to its entry's position in `COMMANDS`.
static BY_NAME: LazyLock<HashMap<&'static str, usize>> = LazyLock::new(|| {
    let mut by_name = HashMap::new();
    for (position, spec) in COMMANDS.iter().enumerate() {
        for name in std::iter::once(&spec.name).chain(spec.aliases) {
            by_name.insert(*name, position);
        }
    }
    by_name
});

/// The commands of Stable API version 1 that docgate answers (MongoDB's manual, "Stable API
/// Changelog"; `saslStart`/`saslContinue` are V1 in the server so strict clients can log in).
/// An alias is in the API when its command is (`isMaster` is `hello`'s).
const API_V1: &[Command] = &[
    Command::AbortTransaction,
    Command::Aggregate,
    Command::Authenticate,
    Command::CollMod,
    Command::CommitTransaction,
    Command::Count,
    Command::Create,
    Command::CreateIndexes,
    Command::Delete,
    Command::Drop,
    Command::DropDatabase,
    Command::DropIndexes,
    Command::EndSessions,
    Command::Explain,
    Command::Find,
    Command::FindAndModify,
    Command::GetMore,
    Command::Hello,
    Command::Insert,
    Command::KillCursors,
    Command::ListCollections,
    Command::ListDatabases,
    Command::ListIndexes,
    Command::Ping,
    Command::SaslContinue,
    Command::SaslStart,
    Command::Update,
];

impl CommandSpec {
    /// Whether the command belongs to Stable API version 1.
    pub fn in_api_v1(&self) -> bool {
        API_V1.contains(&self.command)
    }
}

/// The command a client names (by its name or an alias), if docgate answers it.
pub fn lookup(name: &str) -> Option<&'static CommandSpec> {
    position(name).and_then(|position| COMMANDS.get(position))
}

/// The position in [`COMMANDS`] of the command a client names, if docgate answers it.
pub fn position(name: &str) -> Option<usize> {
    BY_NAME.get(name).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{may_run, RoleGrant};

    #[test]
    fn the_stable_api_holds_crud_and_not_administration() {
        let v1 = |name: &str| lookup(name).is_some_and(CommandSpec::in_api_v1);
        for name in [
            "find",
            "insert",
            "aggregate",
            "hello",
            "isMaster",
            "saslStart",
            "count",
        ] {
            assert!(v1(name), "{name} is in API V1");
        }
        for name in [
            "distinct",
            "serverStatus",
            "createUser",
            "buildInfo",
            "dbStats",
        ] {
            assert!(!v1(name), "{name} is not in API V1");
        }
    }

    #[test]
    fn no_name_appears_twice() {
        let mut seen = std::collections::HashSet::new();
        for spec in COMMANDS {
            for name in std::iter::once(&spec.name).chain(spec.aliases) {
                assert!(seen.insert(*name), "{name} twice");
            }
            assert!(!spec.help.is_empty(), "{} has no help", spec.name);
        }
        assert_eq!(seen.len(), BY_NAME.len());
    }

    #[test]
    fn aliases_reach_the_same_handler() {
        for (alias, name) in [
            ("findandmodify", "findAndModify"),
            ("deleteIndexes", "dropIndexes"),
            ("ismaster", "isMaster"),
            ("buildinfo", "buildInfo"),
        ] {
            assert_eq!(lookup(alias).map(|s| s.name), Some(name));
        }
        assert_eq!(lookup("isMaster").map(|s| s.command), Some(Command::Hello));
        assert!(lookup("shutdownServer").is_none());
        assert!(lookup("FIND").is_none(), "names are case-sensitive");
    }

    fn grant(role: &str, db: &str) -> Vec<RoleGrant> {
        vec![RoleGrant::new(role, db)]
    }

    /// Whether `roles` may run the command named `name` (unknown commands: no).
    fn may(roles: &[RoleGrant], authenticated: bool, name: &str, db: &str) -> bool {
        lookup(name).is_some_and(|spec| may_run(roles, authenticated, spec.privilege, db))
    }

    #[test]
    fn privileges_follow_the_roles() {
        let reader = grant("read", "shop");
        assert!(may(&[], false, "hello", "admin"));
        assert!(may(&[], false, "saslStart", "admin"));
        assert!(!may(&[], false, "find", "shop"));
        assert!(!may(&[], false, "getMore", "shop"));
        assert!(may(&reader, true, "getMore", "shop"));
        assert!(may(&reader, true, "find", "shop"));
        assert!(!may(&reader, true, "insert", "shop"));
        assert!(!may(&reader, true, "findAndModify", "shop"));
        assert!(!may(&reader, true, "findandmodify", "shop"));
        assert!(may(
            &grant("readWrite", "shop"),
            true,
            "findAndModify",
            "shop"
        ));
        assert!(!may(&reader, true, "serverStatus", "shop"));
        assert!(may(
            &grant("clusterMonitor", "admin"),
            true,
            "serverStatus",
            "shop"
        ));
        assert!(!may(&grant("root", "admin"), true, "noSuchCommand", "shop"));
        // Roles without authentication count for nothing.
        assert!(!may(&reader, false, "find", "shop"));
    }
}
