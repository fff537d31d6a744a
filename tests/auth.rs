//! Authentication and authorization through the official Rust `mongodb` driver against a real
//! `docgate` process: the localhost exception, SCRAM-SHA-256, SCRAM-SHA-1 and PLAIN, wrong
//! passwords and unknown users (18), role checks (13), password changes, grants, revokes and
//! dropped users taking effect at once, throttling, speculative authentication in the
//! handshake, the PLAIN fast path, `--auth off`, and `docgate user create`.
//!
//! Every test starts its own server: creating a user turns authentication on for the whole
//! server. Runs on SQLite, and on PostgreSQL when `DOCGATE_TEST_BACKEND` names one.
//!
//! Not for: several instances sharing users (`postgres_instances.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;

use common::TestServer;
use driver_support::server_code;
use mongodb::bson::{doc, Document};
use mongodb::error::{Error, ErrorKind};
use mongodb::Client;

/// A server with a `root` user (password `rootpw`) created through the localhost exception.
async fn server_with_root(args: &[&str]) -> TestServer {
    let server = TestServer::start_with_args(args);
    let open = server.client().await;
    open.database("admin")
        .run_command(doc! {"createUser": "root", "pwd": "rootpw", "roles": ["root"]})
        .await
        .expect("createUser through the localhost exception");
    server
}

/// A client authenticating as `user`/`password` against `source` with `mechanism`.
async fn login(
    server: &TestServer,
    user: &str,
    password: &str,
    source: &str,
    mechanism: &str,
) -> Client {
    let uri = format!(
        "mongodb://{user}:{password}@127.0.0.1:{}/?directConnection=true&authSource={}&authMechanism={mechanism}&serverSelectionTimeoutMS=10000",
        server.port(),
        source.replace('$', "%24")
    );
    server.client_with_uri(&uri).await
}

/// Connects (drivers authenticate on their first command) and answers who the connection
/// is, as `connectionStatus` says (an error if authentication failed).
async fn whoami(client: &Client) -> Result<Option<Document>, Error> {
    let status = client
        .database("admin")
        .run_command(doc! {"connectionStatus": 1})
        .await?;
    let users = status
        .get_document("authInfo")
        .and_then(|info| info.get_array("authenticatedUsers"))
        .expect("authInfo.authenticatedUsers");
    Ok(users.first().and_then(|u| u.as_document()).cloned())
}

fn is_auth_failure(result: &Result<Option<Document>, Error>) -> bool {
    match result {
        Err(e) => matches!(&*e.kind, ErrorKind::Authentication { message, .. }
            if message.contains("Authentication failed")),
        Ok(_) => false,
    }
}

async fn server_status(client: &Client) -> Document {
    client
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .expect("serverStatus")
}

fn counter(status: &Document, path: &[&str]) -> i64 {
    let mut current = status;
    for key in &path[..path.len() - 1] {
        current = current
            .get_document(key)
            .unwrap_or_else(|_| panic!("{path:?} in {status}"));
    }
    current
        .get_i64(path[path.len() - 1])
        .unwrap_or_else(|_| panic!("{path:?} in {status}"))
}

#[tokio::test]
async fn every_mechanism_authenticates_and_unauthenticated_clients_are_refused() {
    let server = server_with_root(&[]).await;
    let anonymous = server.client().await;
    let refused = anonymous
        .database("test")
        .collection::<Document>("x")
        .insert_one(doc! {"a": 1})
        .await
        .expect_err("a write without authentication");
    assert_eq!(server_code(&refused), Some(13), "{refused}");
    // The handshake and ping stay open.
    anonymous
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .expect("ping needs no authentication");

    for (mechanism, source) in [
        ("SCRAM-SHA-256", "admin"),
        ("SCRAM-SHA-1", "admin"),
        ("PLAIN", "$external"),
        ("PLAIN", "admin"),
    ] {
        let client = login(&server, "root", "rootpw", source, mechanism).await;
        let coll = client.database("test").collection::<Document>("x");
        coll.insert_one(doc! {"by": mechanism})
            .await
            .unwrap_or_else(|e| panic!("{mechanism} on {source}: {e}"));
        let status = client
            .database("admin")
            .run_command(doc! {"connectionStatus": 1})
            .await
            .expect("connectionStatus");
        let info = status.get_document("authInfo").expect("authInfo");
        assert_eq!(
            info.get_array("authenticatedUsers").expect("users"),
            &vec![doc! {"user": "root", "db": "admin"}.into()],
            "{mechanism}: {status}"
        );
        assert_eq!(
            info.get_array("authenticatedUserRoles").expect("roles"),
            &vec![doc! {"role": "root", "db": "admin"}.into()]
        );
    }
    let admin = login(&server, "root", "rootpw", "admin", "SCRAM-SHA-256").await;
    let count = admin
        .database("test")
        .collection::<Document>("x")
        .count_documents(doc! {})
        .await
        .expect("count");
    assert_eq!(count, 4);
}

#[tokio::test]
async fn wrong_passwords_and_unknown_users_fail_alike() {
    let server = server_with_root(&[]).await;
    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-1", "PLAIN"] {
        let source = if mechanism == "PLAIN" {
            "$external"
        } else {
            "admin"
        };
        let wrong = whoami(&login(&server, "root", "nope", source, mechanism).await).await;
        assert!(
            is_auth_failure(&wrong),
            "{mechanism} wrong password: {wrong:?}"
        );
        let unknown = whoami(&login(&server, "ghost", "rootpw", source, mechanism).await).await;
        assert!(
            is_auth_failure(&unknown),
            "{mechanism} unknown user: {unknown:?}"
        );
    }
    // The server and other connections are unaffected.
    let ok = whoami(&login(&server, "root", "rootpw", "admin", "SCRAM-SHA-256").await).await;
    assert!(matches!(ok, Ok(Some(_))), "{ok:?}");
}

#[tokio::test]
async fn roles_are_checked_and_changes_apply_to_open_connections() {
    let server = server_with_root(&[]).await;
    let root = login(&server, "root", "rootpw", "admin", "SCRAM-SHA-256").await;
    let shop = root.database("shop");
    shop.collection::<Document>("items")
        .insert_one(doc! {"_id": 1, "name": "pen"})
        .await
        .expect("root writes");
    shop.run_command(doc! {"createUser": "clerk", "pwd": "clerkpw", "roles": ["read"]})
        .await
        .expect("createUser clerk");

    let clerk = login(&server, "clerk", "clerkpw", "shop", "SCRAM-SHA-256").await;
    let items = clerk.database("shop").collection::<Document>("items");
    assert_eq!(
        items.find_one(doc! {}).await.expect("read role reads"),
        Some(doc! {"_id": 1, "name": "pen"})
    );
    let denied = items
        .insert_one(doc! {"_id": 2})
        .await
        .expect_err("read role writes");
    assert_eq!(server_code(&denied), Some(13), "{denied}");
    let other_db = clerk
        .database("other")
        .collection::<Document>("c")
        .find_one(doc! {})
        .await
        .expect_err("read role on shop reads another database");
    assert_eq!(server_code(&other_db), Some(13));

    // A grant applies to the open connection's next command, a revoke as well.
    shop.run_command(doc! {"grantRolesToUser": "clerk", "roles": ["readWrite"]})
        .await
        .expect("grant");
    items
        .insert_one(doc! {"_id": 2})
        .await
        .expect("write after the grant");
    shop.run_command(doc! {"revokeRolesFromUser": "clerk", "roles": ["readWrite"]})
        .await
        .expect("revoke");
    let revoked = items
        .insert_one(doc! {"_id": 3})
        .await
        .expect_err("after revoke");
    assert_eq!(server_code(&revoked), Some(13));

    // Unknown roles and duplicate users are refused with MongoDB's codes.
    let unknown_role = shop
        .run_command(doc! {"createUser": "x", "pwd": "y", "roles": ["root"]})
        .await
        .expect_err("root exists only in admin");
    assert_eq!(server_code(&unknown_role), Some(31));
    let duplicate = shop
        .run_command(doc! {"createUser": "clerk", "pwd": "y", "roles": []})
        .await
        .expect_err("duplicate user");
    assert_eq!(server_code(&duplicate), Some(51003));
    let missing = shop
        .run_command(doc! {"dropUser": "nobody"})
        .await
        .expect_err("dropUser of a missing user");
    assert_eq!(server_code(&missing), Some(11));

    // A user-defined role bundling built-in ones.
    shop.run_command(doc! {"createRole": "auditor", "privileges": [], "roles": ["read"]})
        .await
        .expect("createRole");
    shop.run_command(doc! {"createUser": "eve", "pwd": "evepw", "roles": ["auditor"]})
        .await
        .expect("createUser with a user-defined role");
    let eve = login(&server, "eve", "evepw", "shop", "SCRAM-SHA-256").await;
    let eve_items = eve.database("shop").collection::<Document>("items");
    assert!(eve_items
        .find_one(doc! {})
        .await
        .expect("inherited read")
        .is_some());
    assert_eq!(
        server_code(&eve_items.insert_one(doc! {}).await.expect_err("no write")),
        Some(13)
    );

    // usersInfo shows users without secrets unless asked.
    let info = shop
        .run_command(doc! {"usersInfo": "clerk"})
        .await
        .expect("usersInfo");
    let users = info.get_array("users").expect("users");
    let clerk_info = users[0].as_document().expect("user document");
    assert_eq!(clerk_info.get_str("_id").ok(), Some("shop.clerk"));
    assert_eq!(
        clerk_info.get_array("roles").expect("roles"),
        &vec![doc! {"role": "read", "db": "shop"}.into()]
    );
    assert!(!clerk_info.contains_key("credentials"), "{clerk_info}");
    let secret = shop
        .run_command(doc! {"usersInfo": "clerk", "showCredentials": true})
        .await
        .expect("usersInfo with credentials");
    let text = secret.to_string();
    assert!(
        text.contains("storedKey") && !text.contains("clerkpw"),
        "{text}"
    );
}

#[tokio::test]
async fn password_changes_and_dropped_users_take_effect_at_once() {
    let server = server_with_root(&[]).await;
    let root = login(&server, "root", "rootpw", "admin", "SCRAM-SHA-256").await;
    let app = root.database("app");
    app.run_command(doc! {"createUser": "svc", "pwd": "old", "roles": ["readWrite"]})
        .await
        .expect("createUser");
    // Warm the PLAIN fast path with the old password.
    for _ in 0..2 {
        let plain = whoami(&login(&server, "svc", "old", "app", "PLAIN").await).await;
        assert!(matches!(plain, Ok(Some(_))), "{plain:?}");
    }
    let open = login(&server, "svc", "old", "app", "SCRAM-SHA-256").await;
    assert!(matches!(whoami(&open).await, Ok(Some(_))));

    app.run_command(doc! {"updateUser": "svc", "pwd": "new"})
        .await
        .expect("updateUser");
    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-1", "PLAIN"] {
        let old = whoami(&login(&server, "svc", "old", "app", mechanism).await).await;
        assert!(
            is_auth_failure(&old),
            "{mechanism} with the old password: {old:?}"
        );
        let new = whoami(&login(&server, "svc", "new", "app", mechanism).await).await;
        assert!(
            matches!(new, Ok(Some(_))),
            "{mechanism} with the new password: {new:?}"
        );
    }

    app.run_command(doc! {"dropUser": "svc"})
        .await
        .expect("dropUser");
    let gone = whoami(&login(&server, "svc", "new", "app", "PLAIN").await).await;
    assert!(is_auth_failure(&gone), "{gone:?}");
    let stale = open
        .database("app")
        .collection::<Document>("x")
        .find_one(doc! {})
        .await
        .expect_err("a dropped user's open connection");
    assert_eq!(server_code(&stale), Some(13), "{stale}");
}

#[tokio::test]
async fn failed_attempts_lock_the_user_for_a_while() {
    let server = server_with_root(&[
        "--security-credentials-attempts",
        "3",
        "--security-credentials-lock-time",
        "2s",
    ])
    .await;
    for _ in 0..3 {
        let wrong = whoami(&login(&server, "root", "bad", "admin", "SCRAM-SHA-256").await).await;
        assert!(is_auth_failure(&wrong));
    }
    // Locked: even the right password fails, the same way.
    for mechanism in ["SCRAM-SHA-256", "PLAIN"] {
        let locked = whoami(&login(&server, "root", "rootpw", "admin", mechanism).await).await;
        assert!(
            is_auth_failure(&locked),
            "{mechanism} while locked: {locked:?}"
        );
    }
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let unlocked = whoami(&login(&server, "root", "rootpw", "admin", "SCRAM-SHA-256").await).await;
    assert!(
        matches!(unlocked, Ok(Some(_))),
        "after the lock time: {unlocked:?}"
    );
}

#[tokio::test]
async fn the_handshake_carries_speculative_authentication() {
    let server = server_with_root(&[]).await;
    for _ in 0..3 {
        let client = login(&server, "root", "rootpw", "admin", "SCRAM-SHA-256").await;
        assert!(matches!(whoami(&client).await, Ok(Some(_))));
    }
    let client = login(&server, "root", "rootpw", "admin", "SCRAM-SHA-1").await;
    let status = server_status(&client).await;
    let mechanisms = ["security", "authentication", "mechanisms"];
    let path = |mechanism: &'static str, kind: &'static str, what: &'static str| {
        let mut p: Vec<&str> = mechanisms.to_vec();
        p.extend([mechanism, kind, what]);
        p
    };
    // Every SCRAM-SHA-256 login finished inside hello: no separate saslStart round trip.
    let speculative = counter(
        &status,
        &path("SCRAM-SHA-256", "speculativeAuthenticate", "successful"),
    );
    assert!(speculative >= 3, "{status}");
    assert_eq!(
        counter(&status, &path("SCRAM-SHA-256", "authenticate", "received")),
        0,
        "{status}"
    );
    assert!(
        counter(
            &status,
            &path("SCRAM-SHA-1", "speculativeAuthenticate", "successful")
        ) >= 1
    );
}

#[tokio::test]
async fn plain_verifies_with_pbkdf2_once_then_from_the_fast_path() {
    let server = server_with_root(&[]).await;
    for _ in 0..4 {
        let client = login(&server, "root", "rootpw", "$external", "PLAIN").await;
        assert!(matches!(whoami(&client).await, Ok(Some(_))));
    }
    let status = server_status(&login(&server, "root", "rootpw", "$external", "PLAIN").await).await;
    let fast = ["security", "authentication", "fastPath"];
    let runs = counter(&status, &[fast[0], fast[1], fast[2], "pbkdf2Runs"]);
    let hits = counter(&status, &[fast[0], fast[1], fast[2], "cacheHits"]);
    assert_eq!(runs, 1, "{status}");
    assert!(hits >= 4, "{status}");

    let slow = server_with_root(&["--auth-cache-enabled", "false"]).await;
    for _ in 0..3 {
        let client = login(&slow, "root", "rootpw", "$external", "PLAIN").await;
        assert!(matches!(whoami(&client).await, Ok(Some(_))));
    }
    let status =
        server_status(&login(&slow, "root", "rootpw", "admin", "SCRAM-SHA-256").await).await;
    assert_eq!(
        counter(&status, &[fast[0], fast[1], fast[2], "pbkdf2Runs"]),
        3
    );
}

#[tokio::test]
async fn auth_off_serves_everyone_even_with_users() {
    let server = server_with_root(&["--auth", "off"]).await;
    let anonymous = server.client().await;
    anonymous
        .database("test")
        .collection::<Document>("x")
        .insert_one(doc! {"a": 1})
        .await
        .expect("no authentication with --auth off");
    assert!(server.stderr_log().contains("auth=off"));
}

#[tokio::test]
async fn logout_forgets_the_user() {
    let server = server_with_root(&[]).await;
    // One pooled connection: logout and the next command share it.
    let uri = format!(
        "mongodb://root:rootpw@127.0.0.1:{}/?directConnection=true&maxPoolSize=1",
        server.port()
    );
    let client = server.client_with_uri(&uri).await;
    let admin = client.database("admin");
    admin.run_command(doc! {"ping": 1}).await.expect("ping");
    admin.run_command(doc! {"logout": 1}).await.expect("logout");
    let status = admin
        .run_command(doc! {"connectionStatus": 1})
        .await
        .expect("connectionStatus");
    let users = status
        .get_document("authInfo")
        .and_then(|a| a.get_array("authenticatedUsers"))
        .expect("users");
    assert!(users.is_empty(), "{status}");
}

#[test]
fn user_create_on_the_command_line_bootstraps_the_first_user() {
    let mut server = TestServer::start();
    server.kill();
    let output = common::launcher::docgate_command()
        .args([
            "user",
            "create",
            "--backend",
            &server.backend().arg(),
            "--user",
            "boot",
            "--db",
            "admin",
            "--roles",
            "root",
        ])
        .env("DOCGATE_USER_PASSWORD", "bootpw")
        .output()
        .expect("run docgate user create");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    server.restart_same_data();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let anonymous = server.client().await;
        let refused = anonymous
            .database("test")
            .collection::<Document>("x")
            .find_one(doc! {})
            .await
            .expect_err("no user given");
        assert_eq!(server_code(&refused), Some(13));
        let boot = login(&server, "boot", "bootpw", "admin", "SCRAM-SHA-256").await;
        assert_eq!(
            whoami(&boot).await.expect("login"),
            Some(doc! {"user": "boot", "db": "admin"})
        );
    });
    assert!(server.stderr_log().contains("auth=on"));
}

/// `--auth-source database`: a `$external` user is a PostgreSQL role whose password a
/// PostgreSQL logon checks once, the fast path after that; its MongoDB roles come from the
/// `$external` user record. PostgreSQL only.
#[tokio::test]
async fn delegated_verification_logs_on_to_postgresql_once() {
    let backend = std::env::var("DOCGATE_TEST_BACKEND").unwrap_or_default();
    if !backend.starts_with("postgres") {
        eprintln!("note: delegated verification needs the PostgreSQL backend; skipped");
        return;
    }
    let server = TestServer::start_with_args(&["--auth-source", "database"]);
    let role = format!("dg_role_{}", std::process::id());
    server
        .backend()
        .run_postgres_sql(&format!("CREATE ROLE {role} LOGIN PASSWORD 'pg-secret'"))
        .expect("a PostgreSQL backend");
    let open = server.client().await;
    open.database("$external")
        .run_command(doc! {"createUser": &role, "roles": [
            {"role": "readWrite", "db": "app"}, {"role": "clusterMonitor", "db": "admin"}
        ]})
        .await
        .expect("createUser in $external without a password");

    let wrong = whoami(&login(&server, &role, "nope", "$external", "PLAIN").await).await;
    assert!(is_auth_failure(&wrong), "{wrong:?}");
    for _ in 0..3 {
        let client = login(&server, &role, "pg-secret", "$external", "PLAIN").await;
        assert_eq!(
            whoami(&client).await.expect("PostgreSQL role logs in"),
            Some(doc! {"user": &role, "db": "$external"})
        );
        client
            .database("app")
            .collection::<Document>("c")
            .insert_one(doc! {"by": &role})
            .await
            .expect("readWrite on app");
    }
    let client = login(&server, &role, "pg-secret", "$external", "PLAIN").await;
    let status = server_status(&client).await;
    let fast = ["security", "authentication", "fastPath"];
    // One logon for the wrong password, one for the first right one; the rest were hits.
    assert_eq!(
        counter(&status, &[fast[0], fast[1], fast[2], "databaseLogons"]),
        2,
        "{status}"
    );
    server
        .backend()
        .run_postgres_sql(&format!("DROP ROLE {role}"));
}

#[test]
fn delegated_verification_is_refused_on_sqlite_at_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = common::launcher::docgate_command()
        .args([
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "off",
            "--auth-source",
            "database",
            "--backend",
        ])
        .arg(format!("sqlite:{}", dir.path().display()))
        .output()
        .expect("run docgate");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("auth.source = database needs the PostgreSQL backend"),
        "{stderr}"
    );
}
