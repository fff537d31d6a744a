//! MongoDB's built-in roles as data, and the check "may these role grants do this action on
//! this database".
//!
//! The action sets follow MongoDB's built-in role definitions (the server's
//! `role_graph_builtin_roles.cpp` and the "Built-In Roles" manual page):
//!
//! - `read`: changeStream, collStats, dbHash, dbStats, find, killCursors, listCollections,
//!   listIndexes, planCacheRead on the role's database.
//! - `readWrite`: `read` plus convertToCapped, createCollection, createIndex, dropCollection,
//!   dropIndex, insert, remove, renameCollectionSameDB, update.
//! - `dbAdmin`: bypassDocumentValidation, collMod, collStats, compact, convertToCapped,
//!   createCollection, createIndex, dbStats, dropCollection, dropDatabase, dropIndex,
//!   enableProfiler, listCollections, listIndexes, planCache*, reIndex, renameCollectionSameDB,
//!   validate. It does not read or write documents.
//! - `userAdmin`: changeCustomData, changePassword, createRole, createUser, dropRole, dropUser,
//!   grantRole, revokeRole, viewRole, viewUser.
//! - `dbOwner`: `readWrite` + `dbAdmin` + `userAdmin`.
//! - `readAnyDatabase`, `readWriteAnyDatabase`, `userAdminAnyDatabase`,
//!   `dbAdminAnyDatabase`: the single-database role on every database except `local` and
//!   `config`, plus listDatabases on the cluster (`userAdminAnyDatabase` also
//!   invalidateUserCache).
//! - `clusterMonitor`: connPoolStats, getCmdLineOpts, getLog, getParameter, hostInfo, inprog,
//!   listDatabases, listSessions, netstat, serverStatus, top on the cluster; collStats,
//!   dbStats, indexStats on every database.
//! - `root`: everything.
//!
//! As in MongoDB, the database roles exist in every database and the others only in `admin`:
//! a grant of `root` in any other database grants nothing. Unknown role names (user-defined
//! roles, not supported yet) grant nothing.

/// A privilege action (MongoDB's names via [`Action::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    // Database actions.
    /// `find`
    Find,
    /// `insert`
    Insert,
    /// `update`
    Update,
    /// `remove`
    Remove,
    /// `createCollection`
    CreateCollection,
    /// `dropCollection`
    DropCollection,
    /// `createIndex`
    CreateIndex,
    /// `dropIndex`
    DropIndex,
    /// `listCollections`
    ListCollections,
    /// `listIndexes`
    ListIndexes,
    /// `collStats`
    CollStats,
    /// `dbStats`
    DbStats,
    /// `dbHash`
    DbHash,
    /// `killCursors` (on another user's cursors; anyone may kill their own)
    KillCursors,
    /// `changeStream`
    ChangeStream,
    /// `convertToCapped`
    ConvertToCapped,
    /// `renameCollectionSameDB`
    RenameCollectionSameDb,
    /// `bypassDocumentValidation`
    BypassDocumentValidation,
    /// `collMod`
    CollMod,
    /// `compact`
    Compact,
    /// `dropDatabase`
    DropDatabase,
    /// `enableProfiler`
    EnableProfiler,
    /// `validate`
    Validate,
    /// `reIndex`
    ReIndex,
    /// `planCacheRead`
    PlanCacheRead,
    /// `planCacheWrite`
    PlanCacheWrite,
    /// `indexStats`
    IndexStats,
    // User administration (database actions).
    /// `changeCustomData`
    ChangeCustomData,
    /// `changePassword`
    ChangePassword,
    /// `createRole`
    CreateRole,
    /// `createUser`
    CreateUser,
    /// `dropRole`
    DropRole,
    /// `dropUser`
    DropUser,
    /// `grantRole`
    GrantRole,
    /// `revokeRole`
    RevokeRole,
    /// `viewRole`
    ViewRole,
    /// `viewUser`
    ViewUser,
    // Cluster actions (the database does not matter).
    /// `listDatabases`
    ListDatabases,
    /// `serverStatus`
    ServerStatus,
    /// `hostInfo`
    HostInfo,
    /// `getCmdLineOpts`
    GetCmdLineOpts,
    /// `getLog`
    GetLog,
    /// `getParameter`
    GetParameter,
    /// `setParameter`
    SetParameter,
    /// `connPoolStats`
    ConnPoolStats,
    /// `listSessions`
    ListSessions,
    /// `killAnySession`
    KillAnySession,
    /// `killop`
    KillOp,
    /// `inprog`
    Inprog,
    /// `top`
    Top,
    /// `netstat`
    Netstat,
    /// `invalidateUserCache`
    InvalidateUserCache,
    /// `shutdown`
    Shutdown,
    /// `fsync`
    Fsync,
}

use Action::*;

impl Action {
    /// Every action.
    pub const ALL: &'static [Action] = &[
        Find,
        Insert,
        Update,
        Remove,
        CreateCollection,
        DropCollection,
        CreateIndex,
        DropIndex,
        ListCollections,
        ListIndexes,
        CollStats,
        DbStats,
        DbHash,
        KillCursors,
        ChangeStream,
        ConvertToCapped,
        RenameCollectionSameDb,
        BypassDocumentValidation,
        CollMod,
        Compact,
        DropDatabase,
        EnableProfiler,
        Validate,
        ReIndex,
        PlanCacheRead,
        PlanCacheWrite,
        IndexStats,
        ChangeCustomData,
        ChangePassword,
        CreateRole,
        CreateUser,
        DropRole,
        DropUser,
        GrantRole,
        RevokeRole,
        ViewRole,
        ViewUser,
        ListDatabases,
        ServerStatus,
        HostInfo,
        GetCmdLineOpts,
        GetLog,
        GetParameter,
        SetParameter,
        ConnPoolStats,
        ListSessions,
        KillAnySession,
        KillOp,
        Inprog,
        Top,
        Netstat,
        InvalidateUserCache,
        Shutdown,
        Fsync,
    ];

    /// MongoDB's name for the action.
    pub fn name(self) -> &'static str {
        match self {
            Find => "find",
            Insert => "insert",
            Update => "update",
            Remove => "remove",
            CreateCollection => "createCollection",
            DropCollection => "dropCollection",
            CreateIndex => "createIndex",
            DropIndex => "dropIndex",
            ListCollections => "listCollections",
            ListIndexes => "listIndexes",
            CollStats => "collStats",
            DbStats => "dbStats",
            DbHash => "dbHash",
            KillCursors => "killCursors",
            ChangeStream => "changeStream",
            ConvertToCapped => "convertToCapped",
            RenameCollectionSameDb => "renameCollectionSameDB",
            BypassDocumentValidation => "bypassDocumentValidation",
            CollMod => "collMod",
            Compact => "compact",
            DropDatabase => "dropDatabase",
            EnableProfiler => "enableProfiler",
            Validate => "validate",
            ReIndex => "reIndex",
            PlanCacheRead => "planCacheRead",
            PlanCacheWrite => "planCacheWrite",
            IndexStats => "indexStats",
            ChangeCustomData => "changeCustomData",
            ChangePassword => "changePassword",
            CreateRole => "createRole",
            CreateUser => "createUser",
            DropRole => "dropRole",
            DropUser => "dropUser",
            GrantRole => "grantRole",
            RevokeRole => "revokeRole",
            ViewRole => "viewRole",
            ViewUser => "viewUser",
            ListDatabases => "listDatabases",
            ServerStatus => "serverStatus",
            HostInfo => "hostInfo",
            GetCmdLineOpts => "getCmdLineOpts",
            GetLog => "getLog",
            GetParameter => "getParameter",
            SetParameter => "setParameter",
            ConnPoolStats => "connPoolStats",
            ListSessions => "listSessions",
            KillAnySession => "killAnySession",
            KillOp => "killop",
            Inprog => "inprog",
            Top => "top",
            Netstat => "netstat",
            InvalidateUserCache => "invalidateUserCache",
            Shutdown => "shutdown",
            Fsync => "fsync",
        }
    }

    /// The action with MongoDB's name `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|a| a.name() == name)
    }

    /// Whether the action targets the cluster rather than a database.
    pub fn is_cluster(self) -> bool {
        matches!(
            self,
            ListDatabases
                | ServerStatus
                | HostInfo
                | GetCmdLineOpts
                | GetLog
                | GetParameter
                | SetParameter
                | ConnPoolStats
                | ListSessions
                | KillAnySession
                | KillOp
                | Inprog
                | Top
                | Netstat
                | InvalidateUserCache
                | Shutdown
                | Fsync
        )
    }
}

const READ: &[Action] = &[
    ChangeStream,
    CollStats,
    DbHash,
    DbStats,
    Find,
    KillCursors,
    ListCollections,
    ListIndexes,
    PlanCacheRead,
];
const READ_WRITE_EXTRA: &[Action] = &[
    ConvertToCapped,
    CreateCollection,
    CreateIndex,
    DropCollection,
    DropIndex,
    Insert,
    Remove,
    RenameCollectionSameDb,
    Update,
];
const DB_ADMIN: &[Action] = &[
    BypassDocumentValidation,
    CollMod,
    CollStats,
    Compact,
    ConvertToCapped,
    CreateCollection,
    CreateIndex,
    DbStats,
    DropCollection,
    DropDatabase,
    DropIndex,
    EnableProfiler,
    ListCollections,
    ListIndexes,
    PlanCacheRead,
    PlanCacheWrite,
    ReIndex,
    RenameCollectionSameDb,
    Validate,
];
const USER_ADMIN: &[Action] = &[
    ChangeCustomData,
    ChangePassword,
    CreateRole,
    CreateUser,
    DropRole,
    DropUser,
    GrantRole,
    RevokeRole,
    ViewRole,
    ViewUser,
];
const CLUSTER_MONITOR_CLUSTER: &[Action] = &[
    ConnPoolStats,
    GetCmdLineOpts,
    GetLog,
    GetParameter,
    HostInfo,
    Inprog,
    ListDatabases,
    ListSessions,
    Netstat,
    ServerStatus,
    Top,
];
const CLUSTER_MONITOR_DB: &[Action] = &[CollStats, DbStats, IndexStats];

/// A built-in role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BuiltinRole {
    /// `read`
    Read,
    /// `readWrite`
    ReadWrite,
    /// `dbAdmin`
    DbAdmin,
    /// `userAdmin`
    UserAdmin,
    /// `dbOwner`
    DbOwner,
    /// `readAnyDatabase` (admin only)
    ReadAnyDatabase,
    /// `readWriteAnyDatabase` (admin only)
    ReadWriteAnyDatabase,
    /// `userAdminAnyDatabase` (admin only)
    UserAdminAnyDatabase,
    /// `dbAdminAnyDatabase` (admin only; part of root)
    DbAdminAnyDatabase,
    /// `clusterMonitor` (admin only)
    ClusterMonitor,
    /// `root` (admin only)
    Root,
}

impl BuiltinRole {
    /// Every built-in role.
    pub const ALL: &'static [BuiltinRole] = &[
        BuiltinRole::Read,
        BuiltinRole::ReadWrite,
        BuiltinRole::DbAdmin,
        BuiltinRole::UserAdmin,
        BuiltinRole::DbOwner,
        BuiltinRole::ReadAnyDatabase,
        BuiltinRole::ReadWriteAnyDatabase,
        BuiltinRole::UserAdminAnyDatabase,
        BuiltinRole::DbAdminAnyDatabase,
        BuiltinRole::ClusterMonitor,
        BuiltinRole::Root,
    ];

    /// MongoDB's name for the role.
    pub fn name(self) -> &'static str {
        match self {
            BuiltinRole::Read => "read",
            BuiltinRole::ReadWrite => "readWrite",
            BuiltinRole::DbAdmin => "dbAdmin",
            BuiltinRole::UserAdmin => "userAdmin",
            BuiltinRole::DbOwner => "dbOwner",
            BuiltinRole::ReadAnyDatabase => "readAnyDatabase",
            BuiltinRole::ReadWriteAnyDatabase => "readWriteAnyDatabase",
            BuiltinRole::UserAdminAnyDatabase => "userAdminAnyDatabase",
            BuiltinRole::DbAdminAnyDatabase => "dbAdminAnyDatabase",
            BuiltinRole::ClusterMonitor => "clusterMonitor",
            BuiltinRole::Root => "root",
        }
    }

    /// The built-in role named `name` (exact, case-sensitive as in MongoDB).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|r| r.name() == name)
    }

    /// Whether the role exists only in `admin` (all but the five database roles).
    pub fn admin_only(self) -> bool {
        !matches!(
            self,
            BuiltinRole::Read
                | BuiltinRole::ReadWrite
                | BuiltinRole::DbAdmin
                | BuiltinRole::UserAdmin
                | BuiltinRole::DbOwner
        )
    }

    /// Whether this role, granted in database `grant_db`, allows `action` on database `db`
    /// (`db` is ignored for cluster actions).
    pub fn allows(self, grant_db: &str, action: Action, db: &str) -> bool {
        if self.admin_only() && grant_db != "admin" {
            return false;
        }
        let same_db = grant_db == db;
        let any_db = !matches!(db, "local" | "config");
        let cluster = action.is_cluster();
        let has = |set: &[Action]| set.contains(&action);
        match self {
            BuiltinRole::Root => true,
            BuiltinRole::Read => !cluster && same_db && has(READ),
            BuiltinRole::ReadWrite => !cluster && same_db && (has(READ) || has(READ_WRITE_EXTRA)),
            BuiltinRole::DbAdmin => !cluster && same_db && has(DB_ADMIN),
            BuiltinRole::UserAdmin => !cluster && same_db && has(USER_ADMIN),
            BuiltinRole::DbOwner => {
                !cluster
                    && same_db
                    && (has(READ) || has(READ_WRITE_EXTRA) || has(DB_ADMIN) || has(USER_ADMIN))
            }
            BuiltinRole::ReadAnyDatabase => {
                if cluster {
                    action == ListDatabases
                } else {
                    any_db && has(READ)
                }
            }
            BuiltinRole::ReadWriteAnyDatabase => {
                if cluster {
                    action == ListDatabases
                } else {
                    any_db && (has(READ) || has(READ_WRITE_EXTRA))
                }
            }
            BuiltinRole::UserAdminAnyDatabase => {
                if cluster {
                    matches!(action, ListDatabases | InvalidateUserCache)
                } else {
                    any_db && has(USER_ADMIN)
                }
            }
            BuiltinRole::DbAdminAnyDatabase => {
                if cluster {
                    action == ListDatabases
                } else {
                    any_db && has(DB_ADMIN)
                }
            }
            BuiltinRole::ClusterMonitor => {
                if cluster {
                    has(CLUSTER_MONITOR_CLUSTER)
                } else {
                    has(CLUSTER_MONITOR_DB)
                }
            }
        }
    }
}

/// One role granted to a user: `{ role: "readWrite", db: "shop" }`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RoleGrant {
    /// The role's name.
    pub role: String,
    /// The database the role is granted in.
    pub db: String,
}

impl RoleGrant {
    /// A grant of `role` in `db`.
    pub fn new(role: impl Into<String>, db: impl Into<String>) -> Self {
        RoleGrant {
            role: role.into(),
            db: db.into(),
        }
    }
}

/// Whether any of `roles` allows `action` on database `db`.
pub fn allows(roles: &[RoleGrant], action: Action, db: &str) -> bool {
    roles.iter().any(|grant| {
        BuiltinRole::from_name(&grant.role).is_some_and(|role| role.allows(&grant.db, action, db))
    })
}

/// What a command needs before it may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandPrivilege {
    /// Nothing: the handshake, authentication and harmless introspection.
    None,
    /// Any authenticated user (the command itself checks ownership, e.g. of a cursor).
    Authenticated,
    /// Every one of these actions on the command's database (or the cluster).
    Actions(&'static [Action]),
}

/// Whether `roles` may run a command that needs `privilege` on `db` (only its base privilege:
/// what a command needs beyond it depends on its arguments, and its caller adds that).
pub fn may_run(
    roles: &[RoleGrant],
    authenticated: bool,
    privilege: CommandPrivilege,
    db: &str,
) -> bool {
    match privilege {
        CommandPrivilege::None => true,
        CommandPrivilege::Authenticated => authenticated,
        CommandPrivilege::Actions(actions) => {
            authenticated && actions.iter().all(|a| allows(roles, *a, db))
        }
    }
}

#[cfg(test)]
#[path = "roles_tests.rs"]
mod tests;
