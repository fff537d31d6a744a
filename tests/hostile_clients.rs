//! Hostile clients on the wire, against the real binary: what a reader, or a client that
//! never logged in, must not be able to do to other users — kill their cursors, lock the
//! administrator out, take the server's memory or connections, freeze it with one query.
//! Each test reproduces an attack that once worked and checks what a user would: the
//! victim's cursor still answers, the administrator still logs in, `hello` still answers.
//!
//! Runs on SQLite, and on PostgreSQL when `DOCGATE_TEST_BACKEND` names one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

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

/// A raw connection to the server from `local` (any 127.0.0.0/8 address is this machine).
async fn connect_from(server: &TestServer, local: [u8; 4]) -> std::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(std::net::SocketAddr::from((local, 0)))
        .expect("bind a loopback source address");
    let stream = socket
        .connect(std::net::SocketAddr::from(([127, 0, 0, 1], server.port())))
        .await
        .expect("connect");
    let stream = stream.into_std().expect("std stream");
    stream.set_nonblocking(false).expect("blocking");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("timeout");
    stream
}

#[tokio::test]
async fn an_outsiders_failures_do_not_lock_the_administrator_out_elsewhere() {
    let server = server_with_root(&[]).await;
    // An outsider at 127.0.0.2 guesses root's password wrong five times, then even the
    // right password is refused from there.
    let mut outsider = connect_from(&server, [127, 0, 0, 2]).await;
    for _ in 0..5 {
        let reply = raw_plain_login(&mut outsider, "admin", "root", "guess");
        assert_eq!(reply.get_i32("code").ok(), Some(18), "{reply}");
    }
    let locked = raw_plain_login(&mut outsider, "admin", "root", "rootpw");
    assert_eq!(locked.get_i32("code").ok(), Some(18), "locked: {locked}");

    // The administrator, from another address, still logs in: PLAIN, SCRAM and REST Basic.
    let mut admin = connect_from(&server, [127, 0, 0, 1]).await;
    let reply = raw_plain_login(&mut admin, "admin", "root", "rootpw");
    assert_eq!(raw_wire::ok_of(&reply), 1.0, "{reply}");
    let root = login(&server, "root", "rootpw", "admin").await;
    let status = root
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .expect("serverStatus as root");
    let lockouts = status
        .get_document("security")
        .and_then(|s| s.get_document("authentication"))
        .and_then(|a| a.get_document("lockouts"))
        .expect("security.authentication.lockouts");
    assert_eq!(lockouts.get_i64("current").unwrap(), 1, "{lockouts}");
    let listed = lockouts.get_array("locked").unwrap();
    let first = listed[0].as_document().unwrap();
    assert_eq!(first.get_str("user").unwrap(), "admin.root");
    assert_eq!(first.get_str("client").unwrap(), "127.0.0.2");

    let basic = |local: [u8; 4]| {
        reqwest::Client::builder()
            .local_address(std::net::IpAddr::from(local))
            .build()
            .expect("http client")
    };
    let url = format!("{}/ords/admin/soda/latest/", server.rest_base());
    let from_outsider = basic([127, 0, 0, 2])
        .get(&url)
        .basic_auth("root", Some("rootpw"))
        .send()
        .await
        .expect("GET");
    assert_eq!(from_outsider.status().as_u16(), 401);
    let from_admin = basic([127, 0, 0, 1])
        .get(&url)
        .basic_auth("root", Some("rootpw"))
        .send()
        .await
        .expect("GET");
    assert_eq!(from_admin.status().as_u16(), 200);
    assert!(
        server
            .stderr_log()
            .contains("user locked for this client address"),
        "the lock is logged"
    );
}

#[tokio::test]
async fn a_reader_gets_unauthorized_for_out_and_merge_before_anything_is_planned() {
    let server = server_with_root(&[]).await;
    let root = login(&server, "root", "rootpw", "admin").await;
    let app = root.database("app");
    app.run_command(
        doc! {"createUser": "reader", "pwd": "readerpw", "roles": [{"role": "read", "db": "app"}]},
    )
    .await
    .expect("create reader");
    app.run_command(doc! {"createUser": "writer", "pwd": "writerpw", "roles": [{"role": "readWrite", "db": "app"}]})
        .await
        .expect("create writer");
    app.collection::<Document>("c")
        .insert_one(doc! {"_id": 1})
        .await
        .expect("seed");
    let reader = login(&server, "reader", "readerpw", "app").await;
    let writer = login(&server, "writer", "writerpw", "app").await;
    let pipelines = [
        vec![doc! {"$out": "copy"}],
        vec![doc! {"$match": {}}, doc! {"$merge": {"into": "copy"}}],
        vec![doc! {"$merge": "copy"}],
        vec![doc! {"$out": {"db": "app", "coll": "copy"}}],
    ];
    for pipeline in &pipelines {
        let refused = reader
            .database("app")
            .run_command(doc! {"aggregate": "c", "pipeline": pipeline.clone(), "cursor": {}})
            .await
            .expect_err("a reader writes nothing");
        assert_eq!(server_code(&refused), Some(13), "{pipeline:?}: {refused}");
        let explained = reader
            .database("app")
            .run_command(
                doc! {"explain": {"aggregate": "c", "pipeline": pipeline.clone(), "cursor": {}}},
            )
            .await
            .expect_err("nor through explain");
        assert_eq!(
            server_code(&explained),
            Some(13),
            "explain {pipeline:?}: {explained}"
        );
        // A writer passes authorization and meets the stage's own answer.
        let answered = writer
            .database("app")
            .run_command(doc! {"aggregate": "c", "pipeline": pipeline.clone(), "cursor": {}})
            .await;
        if let Err(error) = answered {
            assert_ne!(server_code(&error), Some(13), "{pipeline:?}: {error}");
        }
    }
}

/// A write inside a transaction is the transaction's: invisible to others until commit and
/// gone after abort; a command of a transaction that was never started is 251 with the
/// label that makes drivers retry the whole transaction; a retried write lands once.
#[tokio::test]
async fn a_transaction_writes_nothing_until_commit_and_a_retried_write_lands_once() {
    let server = TestServer::start();
    let mut stream = raw_wire::connect(&server);
    let lsid = doc! {"id": Bson::Binary(mongodb::bson::Binary {
        subtype: mongodb::bson::spec::BinarySubtype::Uuid,
        bytes: vec![7; 16],
    })};
    let ledger = server
        .client()
        .await
        .database("app")
        .collection::<Document>("ledger");
    let insert = |id: i32, fields: Document| {
        let mut insert = doc! {
            "insert": "ledger", "documents": [{"_id": id}], "lsid": lsid.clone(), "$db": "app",
        };
        insert.extend(fields);
        insert
    };
    let started = insert(
        0,
        doc! {"txnNumber": 1_i64, "startTransaction": true, "autocommit": false},
    );
    let reply = raw_wire::command(&mut stream, 1, &started).body;
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0), "{reply}");
    let seen = ledger.count_documents(doc! {}).await.expect("count");
    assert_eq!(seen, 0, "another client sees an uncommitted insert");
    let abort = doc! {
        "abortTransaction": 1, "lsid": lsid.clone(), "txnNumber": 1_i64, "autocommit": false,
        "$db": "admin",
    };
    let reply = raw_wire::command(&mut stream, 2, &abort).body;
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0), "{reply}");
    let seen = ledger.count_documents(doc! {}).await.expect("count");
    assert_eq!(seen, 0, "an aborted insert stayed");

    let never_started = insert(1, doc! {"txnNumber": 2_i64, "autocommit": false});
    let reply = raw_wire::command(&mut stream, 3, &never_started).body;
    assert_eq!(reply.get_i32("code").ok(), Some(251), "{reply}");
    assert_eq!(
        reply.get_array("errorLabels").ok(),
        Some(&vec![Bson::String("TransientTransactionError".into())]),
        "{reply}"
    );

    let retryable = insert(2, doc! {"txnNumber": 3_i64});
    let first = raw_wire::command(&mut stream, 4, &retryable).body;
    let again = raw_wire::command(&mut stream, 5, &retryable).body;
    assert_eq!(first.get_i32("n").ok(), Some(1), "{first}");
    assert_eq!(
        again.get_i32("n").ok(),
        Some(1),
        "the retry answers as the first: {again}"
    );
    let seen = ledger.count_documents(doc! {}).await.expect("count");
    assert_eq!(seen, 1, "the retried insert landed {seen} times");
}
