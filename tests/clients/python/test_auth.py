"""Authentication and authorization as a pymongo user sees them.

These tests never touch the shared server of conftest.py (a user there would lock
every other test out): each server here is a docgate of its own, started with
DocgateServer(fresh_storage=True) on a new data directory (sqlite) or a new
database in the same PostgreSQL cluster (DOCGATE_BACKEND=postgres://...).

The module's main server bootstraps its administrator over the localhost
exception; servers that need other settings (throttling, no verification cache,
--auth off, a user created offline with `docgate user create`) are started by the
tests that need them.
"""

from __future__ import annotations

import hashlib
import re
import time

import pytest
from pymongo import MongoClient
from pymongo.errors import OperationFailure

from conftest import DocgateServer

ADMIN = "dgadmin"
ADMIN_PWD = "admin-secret-1"
AUTH_FAILED = "Authentication failed."


# ------------------------------------------------------------------ servers and clients


def _start(tmp_path_factory, *extra_args, start=True) -> DocgateServer:
    srv = DocgateServer(tmp_path_factory.mktemp("auth"), extra_args=extra_args, fresh_storage=True)
    if start:
        srv.start()
    return srv


def _stop(srv: DocgateServer) -> None:
    died = srv.proc is not None and srv.proc.poll() is not None
    srv.stop()
    if died:
        raise RuntimeError(f"docgate exited with {srv.proc.returncode} during the test:\n{srv.log_tail()}")


@pytest.fixture
def make_server(tmp_path_factory):
    """Starts servers of this test's own (extra command-line flags); stops them after it."""
    servers: list[DocgateServer] = []

    def make(*extra_args, start=True) -> DocgateServer:
        srv = _start(tmp_path_factory, *extra_args, start=start)
        servers.append(srv)
        return srv

    yield make
    for srv in servers:
        _stop(srv)


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory):
    """A server with auth on whose first user (root) came in over the localhost exception."""
    srv = _start(tmp_path_factory)
    try:
        with srv.client() as c:
            c.admin.command("createUser", ADMIN, pwd=ADMIN_PWD, roles=["root"])
        yield srv
    finally:
        _stop(srv)


@pytest.fixture(scope="module")
def admin(auth_server):
    with login(auth_server, ADMIN, ADMIN_PWD) as c:
        yield c


@pytest.fixture
def names(request):
    """A user name and a database name of this test's own."""
    node = request.node.name
    base = re.sub(r"[^A-Za-z0-9_]", "_", node)[:32] + "_" + hashlib.sha1(node.encode()).hexdigest()[:8]
    return base, "db_" + base


def login(srv: DocgateServer, user, pwd, mechanism=None, source="admin", **kwargs) -> MongoClient:
    """A client that authenticates every connection it opens (one connection at most)."""
    kwargs.setdefault("maxPoolSize", 1)
    if mechanism is not None:
        kwargs["authMechanism"] = mechanism
    return srv.client(username=user, password=pwd, authSource=source, **kwargs)


def auth_failure(srv, user, pwd, mechanism=None, source="admin") -> OperationFailure:
    """Logs in with bad credentials; returns the error the first command raised."""
    with login(srv, user, pwd, mechanism, source) as c:
        with pytest.raises(OperationFailure) as err:
            c["anydb"]["x"].find_one()
    return err.value


def assert_auth_failed(err: OperationFailure) -> None:
    assert err.code == 18, err.details
    assert err.details.get("codeName") == "AuthenticationFailed", err.details
    assert err.details.get("errmsg") == AUTH_FAILED, err.details


def assert_unauthorized(err: OperationFailure, pattern: str | None = None) -> None:
    assert err.code == 13, err.details
    assert err.details.get("codeName") == "Unauthorized", err.details
    if pattern is not None:
        assert re.search(pattern, err.details.get("errmsg", "")), err.details


def server_status_auth(client: MongoClient) -> dict:
    return client.admin.command("serverStatus")["security"]["authentication"]


def create_user(admin: MongoClient, user, pwd, roles, db="admin", **extra):
    return admin[db].command("createUser", user, pwd=pwd, roles=roles, **extra)


# ------------------------------------------------------------------ bootstrapping


def test_localhost_exception_lets_the_first_user_be_created(make_server):
    srv = make_server()
    with srv.client(maxPoolSize=1) as anon:
        # No users yet: a loopback client may do everything.
        anon["le"]["x"].insert_one({"_id": 1})
        assert anon["le"]["x"].find_one() == {"_id": 1}
        assert anon.admin.command("createUser", "first", pwd="first-pwd", roles=["root"])["ok"] == 1.0
        # From now on the same unauthenticated connection is refused.
        with pytest.raises(OperationFailure) as err:
            anon["le"]["x"].find_one()
        assert_unauthorized(err.value, r"^Command find requires authentication$")
        with pytest.raises(OperationFailure) as err:
            anon.admin.command("createUser", "second", pwd="second-pwd", roles=["root"])
        assert_unauthorized(err.value)
    with login(srv, "first", "first-pwd") as c:
        assert c["le"]["x"].find_one() == {"_id": 1}
        users = c.admin.command("usersInfo")["users"]
        assert [u["user"] for u in users] == ["first"]
        c.admin.command("dropUser", "first")
    # With no users left the exception applies again (as in MongoDB).
    with srv.client(maxPoolSize=1) as anon:
        assert anon["le"]["x"].find_one() == {"_id": 1}


def test_unauthenticated_commands_once_a_user_exists(auth_server):
    with auth_server.client(maxPoolSize=1) as anon:
        for cmd in ("find", "insert"):
            with pytest.raises(OperationFailure) as err:
                if cmd == "find":
                    anon["test"]["x"].find_one()
                else:
                    anon["test"]["x"].insert_one({"a": 1})
            assert_unauthorized(err.value, rf"^Command {cmd} requires authentication$")
        with pytest.raises(OperationFailure) as err:
            anon.list_database_names()
        assert_unauthorized(err.value)
        with pytest.raises(OperationFailure) as err:
            anon.admin.command("usersInfo")
        assert_unauthorized(err.value)
        # The handshake and the commands around authentication stay open.
        for cmd in ("ping", "hello", "isMaster", "buildInfo", "whatsmyuri", "listCommands"):
            assert anon.admin.command(cmd)["ok"] == 1.0, cmd
        status = anon.admin.command("connectionStatus")["authInfo"]
        assert status["authenticatedUsers"] == []
        assert status["authenticatedUserRoles"] == []


def test_auth_off_needs_no_login(make_server):
    srv = make_server("--auth", "off")
    with srv.client() as anon:
        anon.admin.command("createUser", "someone", pwd="pwd-1", roles=["read"])
        anon["open"]["x"].insert_one({"_id": 1})
        assert anon["open"]["x"].find_one() == {"_id": 1}


def test_offline_user_create_then_login(make_server):
    srv = make_server(start=False)
    made = srv.cli(
        "user", "create", "--user", "boss", "--db", "admin", "--roles", "root,readWrite@shop",
        env={"DOCGATE_USER_PASSWORD": "boss-pwd-77"},
    )
    assert made.returncode == 0, made.stderr
    assert "boss-pwd-77" not in made.stdout + made.stderr
    made = srv.cli(
        "user", "create", "--user", "clerk", "--db", "shop", "--roles", "read",
        env={"DOCGATE_USER_PASSWORD": "clerk-pwd-77"},
    )
    assert made.returncode == 0, made.stderr
    srv.start()

    with srv.client(maxPoolSize=1) as anon:
        with pytest.raises(OperationFailure) as err:
            anon["shop"]["items"].find_one()
        assert_unauthorized(err.value)
    with login(srv, "boss", "boss-pwd-77") as boss:
        boss["shop"]["items"].insert_one({"_id": 1, "name": "pen"})
        (info,) = boss.admin.command("usersInfo", "boss")["users"]
        assert sorted((r["role"], r["db"]) for r in info["roles"]) == [("readWrite", "shop"), ("root", "admin")]
        assert sorted(info["mechanisms"]) == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
        assert boss.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == [
            {"user": "boss", "db": "admin"}
        ]
    with login(srv, "clerk", "clerk-pwd-77", source="shop") as clerk:
        assert clerk["shop"]["items"].find_one() == {"_id": 1, "name": "pen"}
        with pytest.raises(OperationFailure) as err:
            clerk["shop"]["items"].insert_one({"_id": 2})
        assert_unauthorized(err.value, r"^not authorized on shop to execute command \{ ?insert")
    assert_auth_failed(auth_failure(srv, "boss", "not-his-password"))


# ------------------------------------------------------------------ mechanisms


@pytest.mark.parametrize(
    "mechanism,source",
    [
        ("SCRAM-SHA-256", "admin"),
        ("SCRAM-SHA-1", "admin"),
        ("PLAIN", "$external"),
        ("PLAIN", "admin"),
    ],
)
def test_each_mechanism_authenticates_and_does_crud(auth_server, admin, names, mechanism, source):
    user, dbname = names
    create_user(admin, user, "crud-pwd", [{"role": "readWrite", "db": dbname}])
    with login(auth_server, user, "crud-pwd", mechanism, source) as c:
        coll = c[dbname]["items"]
        coll.insert_many([{"_id": 1, "n": 1}, {"_id": 2, "n": 2}])
        assert coll.update_one({"_id": 1}, {"$set": {"n": 10}}).modified_count == 1
        assert coll.delete_one({"_id": 2}).deleted_count == 1
        assert list(coll.find()) == [{"_id": 1, "n": 10}]
        status = c.admin.command("connectionStatus")["authInfo"]
        assert status["authenticatedUsers"] == [{"user": user, "db": "admin"}]
        assert status["authenticatedUserRoles"] == [{"role": "readWrite", "db": dbname}]


@pytest.mark.parametrize(
    "mechanism,source",
    [("SCRAM-SHA-256", "admin"), ("SCRAM-SHA-1", "admin"), ("PLAIN", "$external")],
)
def test_wrong_password_and_unknown_user_fail_alike(auth_server, admin, names, mechanism, source):
    user, _ = names
    create_user(admin, user, "right-pwd", ["read"])
    wrong = auth_failure(auth_server, user, "wrong-pwd", mechanism, source)
    unknown = auth_failure(auth_server, user + "_nobody", "right-pwd", mechanism, source)
    assert_auth_failed(wrong)
    assert_auth_failed(unknown)
    # Nothing in the reply tells a wrong password from a user that does not exist.
    # The gossiped cluster time moves on between the two attempts; everything else is equal.
    def reply(error):
        return {k: v for k, v in error.details.items() if k not in ("$clusterTime", "operationTime")}

    assert reply(wrong) == reply(unknown)
    with login(auth_server, user, "right-pwd", mechanism, source) as c:
        c.admin.command("listDatabases")


def test_user_with_only_scram_sha_256_cannot_use_sha_1(auth_server, admin, names):
    user, _ = names
    create_user(admin, user, "only-256", ["read"], mechanisms=["SCRAM-SHA-256"])
    (info,) = admin.admin.command("usersInfo", user)["users"]
    assert info["mechanisms"] == ["SCRAM-SHA-256"]
    with login(auth_server, user, "only-256", "SCRAM-SHA-256") as c:
        c.admin["x"].find_one()
    # As MongoDB answers: the mechanism is unavailable for this user (not a failed password).
    err = auth_failure(auth_server, user, "only-256", "SCRAM-SHA-1")
    assert err.code == 334, err.details
    assert err.details.get("codeName") == "MechanismUnavailable", err.details


# ------------------------------------------------------------------ roles


def test_read_only_user_can_find_but_not_insert(auth_server, admin, names):
    user, dbname = names
    admin[dbname]["items"].insert_one({"_id": 1})
    create_user(admin, user, "reader-pwd", [{"role": "read", "db": dbname}])
    with login(auth_server, user, "reader-pwd") as c:
        assert c[dbname]["items"].find_one() == {"_id": 1}
        assert c[dbname]["items"].count_documents({}) == 1
        with pytest.raises(OperationFailure) as err:
            c[dbname]["items"].insert_one({"_id": 2})
        assert_unauthorized(err.value, rf"^not authorized on {dbname} to execute command \{{ ?insert")
        # read on one database is nothing on another.
        with pytest.raises(OperationFailure) as err:
            c["other_" + dbname]["items"].find_one()
        assert_unauthorized(err.value)
    assert admin[dbname]["items"].count_documents({}) == 1


def test_grant_and_revoke_take_effect_on_the_next_command(auth_server, admin, names):
    user, dbname = names
    create_user(admin, user, "gr-pwd", [{"role": "read", "db": dbname}])
    with login(auth_server, user, "gr-pwd") as c:
        coll = c[dbname]["items"]
        with pytest.raises(OperationFailure) as err:
            coll.insert_one({"_id": 1})
        assert_unauthorized(err.value)

        admin.admin.command("grantRolesToUser", user, roles=[{"role": "readWrite", "db": dbname}])
        coll.insert_one({"_id": 1})  # same connection, no new login
        roles = c.admin.command("connectionStatus")["authInfo"]["authenticatedUserRoles"]
        assert sorted((r["role"], r["db"]) for r in roles) == [("read", dbname), ("readWrite", dbname)]

        admin.admin.command("revokeRolesFromUser", user, roles=[{"role": "readWrite", "db": dbname}])
        with pytest.raises(OperationFailure) as err:
            coll.insert_one({"_id": 2})
        assert_unauthorized(err.value)
        assert list(coll.find()) == [{"_id": 1}]


@pytest.mark.parametrize("role", ["userAdmin", "dbOwner"])
def test_user_admin_of_one_database_cannot_grant_roles_of_another(auth_server, admin, names, role):
    """userAdmin (also part of dbOwner) on a database manages that database's users and roles
    only: granting a role of another database needs grantRole there (MongoDB: 13), else
    userAdmin@shop is as good as root."""
    user, dbname = names
    create_user(admin, user, "ua-pwd", [role], db=dbname)
    with login(auth_server, user, "ua-pwd", source=dbname) as ua:
        # Its own database's roles it may grant.
        ua[dbname].command("createUser", user + "_rw", pwd="rw-pwd", roles=["readWrite"])
        # Each on its own: none of them changes this user's roles but the last.
        escalations = [
            ("createUser in admin", lambda: ua.admin.command("createUser", user + "_evil2", pwd="evil-pwd", roles=["root"])),
            ("createRole inheriting readWriteAnyDatabase@admin", lambda: ua[dbname].command(
                "createRole", "evil_role", privileges=[], roles=[{"role": "readWriteAnyDatabase", "db": "admin"}])),
            ("createUser with root@admin", lambda: ua[dbname].command(
                "createUser", user + "_evil", pwd="evil-pwd", roles=[{"role": "root", "db": "admin"}])),
            ("grantRolesToUser itself root@admin", lambda: ua[dbname].command(
                "grantRolesToUser", user, roles=[{"role": "root", "db": "admin"}])),
        ]
        refused = []
        for label, run in escalations:
            try:
                run()
            except OperationFailure as err:
                refused.append(label)
                assert_unauthorized(err)
        allowed = [label for label, _ in escalations if label not in refused]
        assert allowed == [], f"{role}@{dbname} was allowed: {allowed}"
    (info,) = admin[dbname].command("usersInfo", user)["users"]
    assert [(r["role"], r["db"]) for r in info["roles"]] == [(role, dbname)]
    assert admin[dbname].command("usersInfo", user + "_evil")["users"] == []


def test_connection_status_shows_role_changes_at_once(auth_server, admin, names):
    """Roles are re-read per command: connectionStatus, too, shows the roles of now."""
    user, dbname = names
    create_user(admin, user, "csr-pwd", [{"role": "read", "db": dbname}])
    with login(auth_server, user, "csr-pwd") as c:

        def roles():
            info = c.admin.command("connectionStatus")["authInfo"]
            return sorted((r["role"], r["db"]) for r in info["authenticatedUserRoles"])

        assert roles() == [("read", dbname)]
        admin.admin.command("grantRolesToUser", user, roles=[{"role": "readWrite", "db": dbname}])
        assert roles() == [("read", dbname), ("readWrite", dbname)]
        admin.admin.command("revokeRolesFromUser", user, roles=[{"role": "read", "db": dbname}])
        assert roles() == [("readWrite", dbname)]
        admin.admin.command("dropUser", user)
        info = c.admin.command("connectionStatus")["authInfo"]
        assert info == {"authenticatedUsers": [], "authenticatedUserRoles": []}, info


def test_user_defined_role_inherits_built_in_roles(auth_server, admin, names):
    user, dbname = names
    admin[dbname]["items"].insert_one({"_id": 1})
    admin[dbname].command("createRole", "reader", privileges=[], roles=[{"role": "read", "db": dbname}])
    (role,) = admin[dbname].command("rolesInfo", "reader")["roles"]
    assert (role["role"], role["db"]) == ("reader", dbname)
    assert [(r["role"], r["db"]) for r in role["roles"]] == [("read", dbname)]
    create_user(admin, user, "role-pwd", [{"role": "reader", "db": dbname}])
    with login(auth_server, user, "role-pwd") as c:
        assert c[dbname]["items"].find_one() == {"_id": 1}
        with pytest.raises(OperationFailure) as err:
            c[dbname]["items"].insert_one({"_id": 2})
        assert_unauthorized(err.value)
    admin[dbname].command("dropRole", "reader")
    assert admin[dbname].command("rolesInfo", "reader")["roles"] == []


def test_user_command_errors(admin, names):
    user, dbname = names
    create_user(admin, user, "pwd-1", ["read"])
    with pytest.raises(OperationFailure) as err:
        create_user(admin, user, "pwd-2", ["read"])
    assert err.value.code == 51003, err.value.details
    with pytest.raises(OperationFailure) as err:
        create_user(admin, user + "_2", "pwd-1", [{"role": "noSuchRole", "db": dbname}])
    assert err.value.code == 31, err.value.details
    assert err.value.details.get("codeName") == "RoleNotFound", err.value.details
    with pytest.raises(OperationFailure) as err:
        # The *AnyDatabase roles only exist in admin.
        create_user(admin, user + "_3", "pwd-1", [{"role": "readAnyDatabase", "db": dbname}])
    assert err.value.code == 31, err.value.details
    with pytest.raises(OperationFailure) as err:
        admin.admin.command("grantRolesToUser", user, roles=["noSuchRole"])
    assert err.value.code == 31, err.value.details
    for cmd, extra in (("dropUser", {}), ("updateUser", {"pwd": "x-pwd"}), ("grantRolesToUser", {"roles": ["read"]})):
        with pytest.raises(OperationFailure) as err:
            admin.admin.command(cmd, user + "_missing", **extra)
        assert err.value.code == 11, (cmd, err.value.details)
        assert err.value.details.get("codeName") == "UserNotFound", (cmd, err.value.details)


# ------------------------------------------------------------------ changes to users


def test_changed_password(auth_server, admin, names):
    user, dbname = names
    create_user(admin, user, "old-pwd", [{"role": "readWrite", "db": dbname}])
    with login(auth_server, user, "old-pwd") as c:
        c[dbname]["items"].insert_one({"_id": 1})
    admin.admin.command("updateUser", user, pwd="new-pwd")
    for mechanism, source in (("SCRAM-SHA-256", "admin"), ("SCRAM-SHA-1", "admin"), ("PLAIN", "$external")):
        assert_auth_failed(auth_failure(auth_server, user, "old-pwd", mechanism, source))
        with login(auth_server, user, "new-pwd", mechanism, source) as c:
            assert c[dbname]["items"].find_one() == {"_id": 1}


def test_dropped_user(auth_server, admin, names):
    user, dbname = names
    create_user(admin, user, "drop-pwd", [{"role": "readWrite", "db": dbname}])
    with login(auth_server, user, "drop-pwd") as c:
        c[dbname]["items"].insert_one({"_id": 1})
        admin.admin.command("dropUser", user)
        # The connection authenticated before the drop is refused from the next command on.
        with pytest.raises(OperationFailure) as err:
            c[dbname]["items"].find_one()
        assert_unauthorized(err.value)
    assert_auth_failed(auth_failure(auth_server, user, "drop-pwd"))
    assert admin.admin.command("usersInfo", user)["users"] == []


def test_drop_all_users_from_database(auth_server, admin, names):
    user, dbname = names
    create_user(admin, user + "_a", "pwd-a", ["read"], db=dbname)
    create_user(admin, user + "_b", "pwd-b", ["read"], db=dbname)
    reply = admin[dbname].command("dropAllUsersFromDatabase")
    assert reply["n"] == 2, reply
    assert admin[dbname].command("usersInfo")["users"] == []
    assert_auth_failed(auth_failure(auth_server, user + "_a", "pwd-a", source=dbname))
    assert [u["user"] for u in admin.admin.command("usersInfo", ADMIN)["users"]] == [ADMIN]


# ------------------------------------------------------------------ usersInfo, connectionStatus, logout


def test_users_info_shape(admin, names):
    user, dbname = names
    pwd = "visible-nowhere-42"
    create_user(admin, user, pwd, ["read", {"role": "readWrite", "db": dbname}], customData={"team": "qa"})
    create_user(admin, user + "_elsewhere", pwd, ["read"], db=dbname)

    def check_user(doc, name, db):
        assert doc["user"] == name and doc["db"] == db, doc
        assert doc["_id"] == f"{db}.{name}", doc
        assert sorted(doc["mechanisms"]) == ["SCRAM-SHA-1", "SCRAM-SHA-256"], doc
        assert "credentials" not in doc, doc
        assert "pwd" not in doc, doc

    replies = [
        admin.admin.command("usersInfo", user),
        admin.admin.command("usersInfo", {"user": user, "db": "admin"}),
        admin.admin.command("usersInfo", [user, {"user": ADMIN, "db": "admin"}]),
        admin.admin.command("usersInfo", 1),
    ]
    for reply in replies:
        assert pwd not in repr(reply)
        (doc,) = [u for u in reply["users"] if u["user"] == user]
        check_user(doc, user, "admin")
        assert sorted((r["role"], r["db"]) for r in doc["roles"]) == [("read", "admin"), ("readWrite", dbname)]
        assert doc["customData"] == {"team": "qa"}, doc
    assert sorted(u["user"] for u in replies[2]["users"]) == sorted([user, ADMIN])
    # usersInfo: 1 lists the users of this database only; forAllDBs lists all.
    assert user + "_elsewhere" not in [u["user"] for u in replies[3]["users"]]
    (other,) = admin[dbname].command("usersInfo", 1)["users"]
    check_user(other, user + "_elsewhere", dbname)
    everyone = admin.admin.command("usersInfo", {"forAllDBs": True})["users"]
    assert {(user, "admin"), (user + "_elsewhere", dbname), (ADMIN, "admin")} <= {
        (u["user"], u["db"]) for u in everyone
    }
    assert admin.admin.command("usersInfo", user + "_missing")["users"] == []

    (shown,) = admin.admin.command("usersInfo", user, showCredentials=True)["users"]
    assert pwd not in repr(shown)
    creds = shown["credentials"]
    assert set(creds) == {"SCRAM-SHA-1", "SCRAM-SHA-256"}, shown
    assert creds["SCRAM-SHA-1"]["iterationCount"] == 10000
    assert creds["SCRAM-SHA-256"]["iterationCount"] == 15000
    for cred in creds.values():
        assert {"salt", "storedKey", "serverKey"} <= set(cred), cred


def test_connection_status_and_logout(auth_server, admin, names):
    user, dbname = names
    create_user(admin, user, "cs-pwd", [{"role": "read", "db": dbname}, "readWrite"])
    with login(auth_server, user, "cs-pwd") as c:
        info = c.admin.command("connectionStatus")["authInfo"]
        assert info["authenticatedUsers"] == [{"user": user, "db": "admin"}]
        assert sorted((r["role"], r["db"]) for r in info["authenticatedUserRoles"]) == [
            ("read", dbname),
            ("readWrite", "admin"),
        ]
        c[dbname]["items"].find_one()
        assert c.admin.command("logout")["ok"] == 1.0
        info = c.admin.command("connectionStatus")["authInfo"]
        assert info["authenticatedUsers"] == []
        assert info["authenticatedUserRoles"] == []
        with pytest.raises(OperationFailure) as err:
            c[dbname]["items"].find_one()
        assert_unauthorized(err.value, r"^Command find requires authentication$")


# ------------------------------------------------------------------ throttling


def test_throttling_locks_a_user_for_the_lock_time(make_server):
    lock_s = 2
    srv = make_server("--security-credentials-attempts", "3", "--security-credentials-lock-time", f"{lock_s}s")
    with srv.client() as anon:
        anon.admin.command("createUser", "root1", pwd="root1-pwd", roles=["root"])
    with login(srv, "root1", "root1-pwd") as root:
        create_user(root, "locky", "locky-pwd", ["read"])
    # A PLAIN login now leaves a remembered verification that the lock must still beat.
    with login(srv, "locky", "locky-pwd", "PLAIN", "$external") as c:
        c.admin["x"].find_one()
    for _ in range(3):
        assert_auth_failed(auth_failure(srv, "locky", "wrong"))
    # Locked: even the right password fails, with the same reply, on every mechanism.
    assert_auth_failed(auth_failure(srv, "locky", "locky-pwd"))
    assert_auth_failed(auth_failure(srv, "locky", "locky-pwd", "SCRAM-SHA-1"))
    assert_auth_failed(auth_failure(srv, "locky", "locky-pwd", "PLAIN", "$external"))
    assert_auth_failed(auth_failure(srv, "nobody_at_all", "locky-pwd"))
    # Other users are not locked.
    with login(srv, "root1", "root1-pwd") as root:
        root["t"]["x"].find_one()
    time.sleep(lock_s + 1)
    # The lock is over and the count starts again: one more failure does not lock.
    assert_auth_failed(auth_failure(srv, "locky", "wrong"))
    with login(srv, "locky", "locky-pwd") as c:
        c.admin["x"].find_one()


# ------------------------------------------------------------------ serverStatus counters


def test_speculative_authentication_saves_the_round_trip(auth_server, admin, names):
    user, dbname = names
    create_user(admin, user, "spec-pwd", [{"role": "readWrite", "db": dbname}])
    before = server_status_auth(admin)["mechanisms"]["SCRAM-SHA-256"]
    with login(auth_server, user, "spec-pwd", "SCRAM-SHA-256") as c:
        c[dbname]["items"].insert_one({"_id": 1})
    after = server_status_auth(admin)["mechanisms"]["SCRAM-SHA-256"]
    assert after["speculativeAuthenticate"]["received"] == before["speculativeAuthenticate"]["received"] + 1
    assert after["speculativeAuthenticate"]["successful"] == before["speculativeAuthenticate"]["successful"] + 1
    # No separate saslStart: the conversation began inside hello.
    assert after["authenticate"] == before["authenticate"], (before, after)


def test_plain_fast_path_runs_pbkdf2_once(auth_server, admin, names):
    user, dbname = names
    create_user(admin, user, "fast-pwd", [{"role": "readWrite", "db": dbname}])
    before = server_status_auth(admin)
    assert before["fastPath"]["enabled"] is True
    connections = 4
    for i in range(connections):
        with login(auth_server, user, "fast-pwd", "PLAIN", "$external") as c:
            c[dbname]["items"].insert_one({"_id": i})
    after = server_status_auth(admin)
    assert after["fastPath"]["pbkdf2Runs"] == before["fastPath"]["pbkdf2Runs"] + 1, (before, after)
    assert after["fastPath"]["cacheHits"] == before["fastPath"]["cacheHits"] + connections - 1, (before, after)
    plain_before, plain_after = before["mechanisms"]["PLAIN"], after["mechanisms"]["PLAIN"]
    assert plain_after["authenticate"]["successful"] == plain_before["authenticate"]["successful"] + connections

    # A remembered verification is no help to a wrong password...
    assert_auth_failed(auth_failure(auth_server, user, "fast-pwd-wrong", "PLAIN", "$external"))
    # ...and is forgotten at once when the password changes.
    admin.admin.command("updateUser", user, pwd="fast-pwd-2")
    assert_auth_failed(auth_failure(auth_server, user, "fast-pwd", "PLAIN", "$external"))
    with login(auth_server, user, "fast-pwd-2", "PLAIN", "$external") as c:
        assert c[dbname]["items"].count_documents({}) == connections
    # A user dropped and created again under the same name does not inherit the old password.
    admin.admin.command("dropUser", user)
    create_user(admin, user, "fast-pwd-3", [{"role": "readWrite", "db": dbname}])
    assert_auth_failed(auth_failure(auth_server, user, "fast-pwd-2", "PLAIN", "$external"))
    with login(auth_server, user, "fast-pwd-3", "PLAIN", "$external") as c:
        assert c[dbname]["items"].count_documents({}) == connections


def test_plain_without_the_verification_cache_runs_pbkdf2_every_time(make_server):
    srv = make_server("--auth-cache-enabled", "false")
    with srv.client() as anon:
        anon.admin.command("createUser", "root1", pwd="root1-pwd", roles=["root"])
    with login(srv, "root1", "root1-pwd") as root:
        before = server_status_auth(root)
        assert before["fastPath"]["enabled"] is False
        connections = 3
        for _ in range(connections):
            with login(srv, "root1", "root1-pwd", "PLAIN", "$external") as c:
                c["t"]["x"].find_one()
        after = server_status_auth(root)
    assert after["fastPath"]["pbkdf2Runs"] == before["fastPath"]["pbkdf2Runs"] + connections, (before, after)
    assert after["fastPath"]["cacheHits"] == before["fastPath"]["cacheHits"], (before, after)


def test_plain_verification_cache_expires_after_the_timeout(make_server):
    srv = make_server("--auth-cache-timeout", "1s")
    with srv.client() as anon:
        anon.admin.command("createUser", "root1", pwd="root1-pwd", roles=["root"])
    with login(srv, "root1", "root1-pwd") as root:
        before = server_status_auth(root)["fastPath"]
        for _ in range(2):
            with login(srv, "root1", "root1-pwd", "PLAIN", "$external") as c:
                c["t"]["x"].find_one()
        time.sleep(1.5)
        with login(srv, "root1", "root1-pwd", "PLAIN", "$external") as c:
            c["t"]["x"].find_one()
        after = server_status_auth(root)["fastPath"]
    assert after["pbkdf2Runs"] == before["pbkdf2Runs"] + 2, (before, after)
    assert after["cacheHits"] == before["cacheHits"] + 1, (before, after)


# ------------------------------------------------------------------ aggregations that write


def test_out_and_merge_need_write_roles(auth_server, admin, names):
    """A read-only user may aggregate but not $out or $merge (13); readWrite may both."""
    user, dbname = names
    admin[dbname]["src"].insert_many([{"_id": 1, "v": 1}, {"_id": 2, "v": 2}])
    create_user(admin, user + "_r", "reader-pwd", [{"role": "read", "db": dbname}])
    create_user(admin, user + "_rw", "writer-pwd", [{"role": "readWrite", "db": dbname}])
    with login(auth_server, user + "_r", "reader-pwd") as c:
        assert len(list(c[dbname]["src"].aggregate([{"$match": {}}]))) == 2
        for stage in ({"$out": "copy"}, {"$merge": {"into": "copy"}}):
            with pytest.raises(OperationFailure) as err:
                c[dbname]["src"].aggregate([stage])
            assert_unauthorized(err.value, rf"^not authorized on {dbname} to execute command")
        # Writing into another database needs the roles there.
        with pytest.raises(OperationFailure) as err:
            c[dbname]["src"].aggregate([{"$out": {"db": "other_" + dbname, "coll": "copy"}}])
        assert_unauthorized(err.value)
    assert "copy" not in admin[dbname].list_collection_names()
    with login(auth_server, user + "_rw", "writer-pwd") as c:
        c[dbname]["src"].aggregate([{"$out": "copy"}])
        c[dbname]["src"].aggregate([{"$set": {"w": 1}}, {"$merge": {"into": "copy"}}])
        with pytest.raises(OperationFailure) as err:
            c[dbname]["src"].aggregate([{"$out": {"db": "other_" + dbname, "coll": "copy"}}])
        assert_unauthorized(err.value)
    assert list(admin[dbname]["copy"].find().sort("_id", 1)) == [{"_id": 1, "v": 1, "w": 1}, {"_id": 2, "v": 2, "w": 1}]


def test_list_local_sessions_shows_the_users_own_sessions(auth_server, admin, names):
    user, dbname = names
    create_user(admin, user, "sessions-pwd", [{"role": "readWrite", "db": dbname}])
    with login(auth_server, user, "sessions-pwd") as c:
        with c.start_session() as session:
            c[dbname]["items"].insert_one({"_id": 1}, session=session)
            mine = list(c[dbname].aggregate([{"$listLocalSessions": {}}]))
            assert session.session_id["id"] in [s["_id"]["id"] for s in mine]
            assert {s["user"]["name"] for s in mine} == {f"{user}@admin"}
            assert {s["_id"]["uid"] for s in mine} == {hashlib.sha256(f"{user}@admin".encode()).digest()}
            named_self = list(c[dbname].aggregate([{"$listLocalSessions": {"users": [{"user": user, "db": "admin"}]}}]))
            assert session.session_id["id"] in [s["_id"]["id"] for s in named_self]
            # Everyone's sessions, or another user's, need listSessions on the cluster.
            for spec in ({"allUsers": True}, {"users": [{"user": ADMIN, "db": "admin"}]}):
                with pytest.raises(OperationFailure) as err:
                    list(c[dbname].aggregate([{"$listLocalSessions": spec}]))
                assert_unauthorized(err.value)
            everyone = list(admin.admin.aggregate([{"$listLocalSessions": {"allUsers": True}}]))
            assert session.session_id["id"] in [s["_id"]["id"] for s in everyone]
            assert f"{user}@admin" in {s.get("user", {}).get("name") for s in everyone}
