//! Hostile clients on the wire, against the real binary: what a reader, or a client that
//! never logged in, must not be able to do to other users — kill their cursors, lock the
//! administrator out, take the server's memory or connections, freeze it with one query.
//! Each test reproduces an attack that once worked and checks what a user would: the
//! victim's cursor still answers, the administrator still logs in, `hello` still answers.
//!
//! Runs on SQLite, and on PostgreSQL when `DOCGATE_TEST_BACKEND` names one.

mod common;
mod driver_support;
mod raw_wire;

use common::TestServer;
use driver_support::server_code;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Client;

/// A server with a `root` user (password `rootpw`) created through the localhost exception.
async fn server_with_root(args: &[&str]) -> TestServer {
    let server = TestServer::start_with_args(args);
    server
        .client()
        .await
        .database("admin")
        .run_command(doc! {"createUser": "root", "pwd": "rootpw", "roles": ["root"]})
        .await
        .expect("createUser through the localhost exception");
    server
}

/// A client that logs in as `user` of `source` with SCRAM-SHA-256.
async fn login(server: &TestServer, user: &str, password: &str, source: &str) -> Client {
    let uri = format!(
        "mongodb://{user}:{password}@127.0.0.1:{}/?directConnection=true&authSource={source}&serverSelectionTimeoutMS=10000",
        server.port(),
    );
    server.client_with_uri(&uri).await
}

/// Authenticates a raw connection as `user` of `db` with PLAIN; answers the reply.
fn raw_plain_login(
    stream: &mut std::net::TcpStream,
    db: &str,
    user: &str,
    password: &str,
) -> Document {
    let payload = format!("\0{user}\0{password}").into_bytes();
    let reply = raw_wire::command(
        stream,
        1,
        &doc! {
            "saslStart": 1, "mechanism": "PLAIN",
            "payload": Bson::Binary(mongodb::bson::Binary {
                subtype: mongodb::bson::spec::BinarySubtype::Generic,
                bytes: payload,
            }),
            "$db": db,
        },
    );
    reply.body
}

#[tokio::test]
async fn a_reader_cannot_kill_another_users_cursor() {
    let server = server_with_root(&[]).await;
    let root = login(&server, "root", "rootpw", "admin").await;
    let app = root.database("app");
    app.run_command(
        doc! {"createUser": "reader", "pwd": "readerpw", "roles": [{"role": "read", "db": "app"}]},
    )
    .await
    .expect("create reader");
    app.collection::<Document>("c")
        .insert_many((0..10).map(|i| doc! {"_id": i}))
        .await
        .expect("seed");

    let mut session = root.start_session().await.expect("session");
    let first = app
        .run_command(doc! {"find": "c", "batchSize": 1})
        .session(&mut session)
        .await
        .expect("find");
    let id = first.get_document("cursor").unwrap().get_i64("id").unwrap();
    assert_ne!(id, 0);

    // Through a driver: another user, another session.
    let reader = login(&server, "reader", "readerpw", "app").await;
    let refused = reader
        .database("app")
        .run_command(doc! {"killCursors": "c", "cursors": [id]})
        .await
        .expect_err("another user's cursor");
    assert_eq!(server_code(&refused), Some(13), "{refused}");

    // On the raw wire, even with the owner's session id copied into the request: the user
    // is checked too.
    let mut stream = raw_wire::connect(&server);
    let logged_in = raw_plain_login(&mut stream, "app", "reader", "readerpw");
    assert_eq!(raw_wire::ok_of(&logged_in), 1.0, "{logged_in}");
    let forged = raw_wire::command(
        &mut stream,
        2,
        &doc! {"killCursors": "c", "cursors": [id], "lsid": session.id().clone(), "$db": "app"},
    );
    assert_eq!(
        forged.body.get_i32("code").ok(),
        Some(13),
        "{}",
        forged.body
    );
    let forged_more = raw_wire::command(
        &mut stream,
        3,
        &doc! {"getMore": id, "collection": "c", "lsid": session.id().clone(), "$db": "app"},
    );
    assert_eq!(
        forged_more.body.get_i32("code").ok(),
        Some(13),
        "{}",
        forged_more.body
    );

    // The owner's cursor lives on, and the owner may kill it.
    let more = app
        .run_command(doc! {"getMore": id, "collection": "c", "batchSize": 2})
        .session(&mut session)
        .await
        .expect("the owner's getMore after the attempts");
    let batch = more
        .get_document("cursor")
        .unwrap()
        .get_array("nextBatch")
        .unwrap();
    assert_eq!(batch.len(), 2);
    let killed = app
        .run_command(doc! {"killCursors": "c", "cursors": [id]})
        .await
        .expect("the owner kills its cursor");
    assert_eq!(
        killed.get_array("cursorsKilled").unwrap(),
        &vec![Bson::Int64(id)]
    );
}
