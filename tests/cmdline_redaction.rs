//! A password given on docgate's command line never reaches a client: `getCmdLineOpts`
//! (which any `clusterMonitor` user may run) answers `argv` with the connection string's
//! password replaced by `<password>`, and the store's description in `parsed.storage` has
//! none either. PostgreSQL only — a SQLite `--backend` carries no password (the test says
//! so and returns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;

use common::launcher::Launch;
use common::TestBackend;
use mongodb::bson::{doc, Bson};

const SECRET: &str = "Redact-Me-7Qx";

#[tokio::test]
async fn get_cmd_line_opts_redacts_the_backend_password() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let backend = TestBackend::for_new_server(scratch.path());
    let url = backend.arg();
    let Some(rest) = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))
    else {
        eprintln!("redaction test skipped: a SQLite --backend holds no password");
        return;
    };
    // The test cluster trusts its superuser, so the password is carried but not needed.
    let (user, host_and_db) = rest.split_once('@').expect("the admin URL names its user");
    let with_password = format!("postgres://{user}:{SECRET}@{host_and_db}");
    let mut server = Launch::new(&with_password)
        .start(|run| scratch.path().join(format!("docgate-{run}.log")))
        .unwrap_or_else(|why| panic!("docgate did not start: {why}"));
    let uri = format!(
        "mongodb://127.0.0.1:{}/?directConnection=true&serverSelectionTimeoutMS=10000",
        server.port
    );
    let client = mongodb::Client::with_uri_str(&uri).await.expect("client");
    let reply = client
        .database("admin")
        .run_command(doc! {"getCmdLineOpts": 1})
        .await
        .expect("getCmdLineOpts");

    let argv: Vec<&str> = reply
        .get_array("argv")
        .expect("argv")
        .iter()
        .filter_map(Bson::as_str)
        .collect();
    let expected = format!("postgres://{user}:<password>@{host_and_db}");
    assert!(
        argv.contains(&expected.as_str()),
        "argv shows the backend with its password redacted: {argv:?}"
    );
    let whole_reply = format!("{reply:?}");
    assert!(
        !whole_reply.contains(SECRET),
        "the password appears nowhere in the reply: {whole_reply}"
    );
    let log = std::fs::read_to_string(&server.log).unwrap_or_default();
    assert!(!log.contains(SECRET), "nor in the server's log: {log}");

    server.child.kill().ok();
    server.child.wait().ok();
    backend.release();
}
