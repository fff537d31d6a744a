//! Tests of the built-in roles, one per role, and of command privileges.

use super::*;

fn grant(role: &str, db: &str) -> Vec<RoleGrant> {
    vec![RoleGrant::new(role, db)]
}

fn can(roles: &[RoleGrant], actions: &[Action], db: &str) -> bool {
    actions.iter().all(|a| allows(roles, *a, db))
}

fn cannot(roles: &[RoleGrant], actions: &[Action], db: &str) -> bool {
    actions.iter().all(|a| !allows(roles, *a, db))
}

#[test]
fn read() {
    let r = grant("read", "shop");
    assert!(can(
        &r,
        &[
            Find,
            ListCollections,
            ListIndexes,
            CollStats,
            DbStats,
            KillCursors
        ],
        "shop"
    ));
    assert!(cannot(
        &r,
        &[Insert, Update, Remove, CreateCollection, DropCollection],
        "shop"
    ));
    assert!(cannot(
        &r,
        &[CreateIndex, DropIndex, DropDatabase, CreateUser],
        "shop"
    ));
    assert!(cannot(&r, &[Find], "other"));
    assert!(cannot(&r, &[ListDatabases, ServerStatus], "shop"));
}

#[test]
fn read_write() {
    let r = grant("readWrite", "shop");
    assert!(can(
        &r,
        &[
            Find,
            Insert,
            Update,
            Remove,
            CreateCollection,
            DropCollection
        ],
        "shop"
    ));
    assert!(can(
        &r,
        &[CreateIndex, DropIndex, RenameCollectionSameDb, ListIndexes],
        "shop"
    ));
    assert!(cannot(
        &r,
        &[DropDatabase, Validate, CollMod, CreateUser, ViewUser],
        "shop"
    ));
    assert!(cannot(&r, &[Find, Insert], "other"));
    assert!(cannot(&r, &[ListDatabases], "shop"));
}

#[test]
fn db_admin() {
    let r = grant("dbAdmin", "shop");
    assert!(can(
        &r,
        &[CreateCollection, DropCollection, CreateIndex, DropIndex],
        "shop"
    ));
    assert!(can(
        &r,
        &[DropDatabase, Validate, CollStats, DbStats, ListCollections],
        "shop"
    ));
    // dbAdmin administers but does not read or write documents, nor manage users.
    assert!(cannot(
        &r,
        &[Find, Insert, Update, Remove, CreateUser, ViewUser],
        "shop"
    ));
    assert!(cannot(&r, &[DropDatabase], "other"));
}

#[test]
fn user_admin() {
    let r = grant("userAdmin", "shop");
    assert!(can(
        &r,
        &[CreateUser, DropUser, ViewUser, GrantRole, RevokeRole],
        "shop"
    ));
    assert!(can(
        &r,
        &[
            ChangePassword,
            ChangeCustomData,
            CreateRole,
            DropRole,
            ViewRole
        ],
        "shop"
    ));
    assert!(cannot(
        &r,
        &[Find, Insert, DropDatabase, ListCollections],
        "shop"
    ));
    assert!(cannot(&r, &[CreateUser], "other"));
}

#[test]
fn db_owner() {
    let r = grant("dbOwner", "shop");
    assert!(can(
        &r,
        &[Find, Insert, Update, Remove, DropDatabase, Validate],
        "shop"
    ));
    assert!(can(
        &r,
        &[CreateUser, DropUser, GrantRole, CreateIndex],
        "shop"
    ));
    assert!(cannot(&r, &[Find, CreateUser], "other"));
    assert!(cannot(&r, &[ListDatabases, ServerStatus], "shop"));
}

#[test]
fn read_any_database() {
    let r = grant("readAnyDatabase", "admin");
    assert!(can(
        &r,
        &[Find, ListCollections, ListIndexes, CollStats],
        "shop"
    ));
    assert!(can(&r, &[Find], "admin"));
    assert!(can(&r, &[ListDatabases], ""));
    assert!(cannot(
        &r,
        &[Insert, Update, Remove, DropCollection],
        "shop"
    ));
    assert!(cannot(&r, &[Find], "local"));
    assert!(cannot(&r, &[Find], "config"));
    assert!(cannot(&r, &[ServerStatus], "admin"));
    // Only granted in admin does it mean anything.
    assert!(cannot(&grant("readAnyDatabase", "shop"), &[Find], "shop"));
}

#[test]
fn read_write_any_database() {
    let r = grant("readWriteAnyDatabase", "admin");
    assert!(can(
        &r,
        &[Find, Insert, Update, Remove, CreateIndex, DropCollection],
        "a"
    ));
    assert!(can(&r, &[Find, Insert], "b"));
    assert!(can(&r, &[ListDatabases], "x"));
    assert!(cannot(&r, &[DropDatabase, CreateUser, ServerStatus], "a"));
    assert!(cannot(&r, &[Insert], "local"));
    assert!(cannot(&grant("readWriteAnyDatabase", "a"), &[Insert], "a"));
}

#[test]
fn user_admin_any_database() {
    let r = grant("userAdminAnyDatabase", "admin");
    assert!(can(&r, &[CreateUser, DropUser, ViewUser, GrantRole], "a"));
    assert!(can(&r, &[CreateUser], "admin"));
    assert!(can(&r, &[ListDatabases, InvalidateUserCache], ""));
    assert!(cannot(&r, &[Find, Insert, DropDatabase, ServerStatus], "a"));
    assert!(cannot(
        &grant("userAdminAnyDatabase", "a"),
        &[CreateUser],
        "a"
    ));
}

#[test]
fn db_admin_any_database() {
    let r = grant("dbAdminAnyDatabase", "admin");
    assert!(can(&r, &[DropDatabase, Validate, CreateIndex], "a"));
    assert!(can(&r, &[ListDatabases], ""));
    assert!(cannot(&r, &[Find, Insert, CreateUser], "a"));
}

#[test]
fn cluster_monitor() {
    let r = grant("clusterMonitor", "admin");
    assert!(can(
        &r,
        &[ServerStatus, HostInfo, GetCmdLineOpts, GetLog, GetParameter],
        ""
    ));
    assert!(can(&r, &[ListDatabases, Top, Inprog, ConnPoolStats], ""));
    assert!(can(&r, &[CollStats, DbStats, IndexStats], "shop"));
    assert!(cannot(
        &r,
        &[Find, Insert, ListCollections, DropDatabase, CreateUser],
        "shop"
    ));
    assert!(cannot(&r, &[KillAnySession, SetParameter, Shutdown], ""));
    assert!(cannot(
        &grant("clusterMonitor", "shop"),
        &[ServerStatus],
        "shop"
    ));
}

#[test]
fn root() {
    let r = grant("root", "admin");
    assert!(can(&r, Action::ALL, "shop"));
    assert!(can(&r, Action::ALL, "admin"));
    assert!(cannot(&grant("root", "shop"), Action::ALL, "shop"));
}

#[test]
fn no_roles_unknown_roles_and_several_roles() {
    assert!(cannot(&[], Action::ALL, "shop"));
    assert!(cannot(&grant("superuser", "admin"), Action::ALL, "shop"));
    assert!(
        cannot(&grant("ReadWrite", "shop"), &[Insert], "shop"),
        "names are exact"
    );
    let r = vec![
        RoleGrant::new("read", "a"),
        RoleGrant::new("readWrite", "b"),
    ];
    assert!(can(&r, &[Find], "a") && can(&r, &[Find, Insert], "b"));
    assert!(cannot(&r, &[Insert], "a"));
}

#[test]
fn names_round_trip() {
    for action in Action::ALL {
        assert_eq!(Action::from_name(action.name()), Some(*action));
    }
    for role in BuiltinRole::ALL {
        assert_eq!(BuiltinRole::from_name(role.name()), Some(*role));
    }
    assert_eq!(Action::from_name("nope"), None);
}
