//! TLS on the MongoDB listener, driven by the Rust `mongodb` driver against the real binary
//! with the test certificates in `fixtures/tls`: `required` serves TLS clients and refuses
//! plain ones, `allowed` serves both, a client that trusts another CA is refused, a broken
//! or silent handshake costs one connection for at most the handshake timeout and nothing
//! else, and bad TLS settings stop the server at start with a message naming the problem.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use common::TestServer;
use mongodb::bson::{doc, Document};
use mongodb::error::ErrorKind;

/// A file of `fixtures/tls` as an absolute path.
fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/tls")
        .join(name)
        .display()
        .to_string()
}

/// Starts a server with the test certificate and `--tls-mode mode`.
fn start_tls_server(mode: &str) -> TestServer {
    let cert = fixture("server.pem");
    let key = fixture("server.key");
    TestServer::start_with_args(&["--tls-cert", &cert, "--tls-key", &key, "--tls-mode", mode])
}

/// URI options of a TLS client that trusts only the CA in `ca_file` (of `fixtures/tls`).
fn tls_options(ca_file: &str) -> String {
    format!("tls=true&tlsCAFile={}", fixture(ca_file))
}

/// A TLS client that trusts the CA that signed the server's certificate.
async fn trusted_tls_client(server: &TestServer) -> mongodb::Client {
    let options = format!("{}&serverSelectionTimeoutMS=10000", tls_options("ca.pem"));
    server
        .client_with_uri(&server.uri_with_options(&options))
        .await
}

/// A client that gives up on server selection quickly: for connections that must fail.
const FAILING_CLIENT_OPTIONS: &str = "serverSelectionTimeoutMS=2000&connectTimeoutMS=2000";

/// Inserts a document through `client` and reads it back.
async fn insert_and_find(client: &mongodb::Client, collection: &str) -> mongodb::error::Result<()> {
    let items = client.database("tls").collection::<Document>(collection);
    items.insert_one(doc! {"_id": 1, "over": "tls"}).await?;
    let found = items.find_one(doc! {"_id": 1}).await?;
    assert_eq!(found, Some(doc! {"_id": 1, "over": "tls"}));
    Ok(())
}

/// Asserts that a ping through `client` fails with a server selection error.
async fn assert_refused(client: &mongodb::Client, what: &str) {
    let error = client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .expect_err(what);
    assert!(
        matches!(*error.kind, ErrorKind::ServerSelection { .. }),
        "{what}: {error}"
    );
}

#[tokio::test]
async fn required_serves_tls_clients_and_refuses_plain_ones() {
    let server = start_tls_server("required");
    let log = server.stderr_log();
    assert!(
        log.lines()
            .any(|line| line.contains("listening") && line.contains("tls=required")),
        "{log}"
    );

    let secure = trusted_tls_client(&server).await;
    insert_and_find(&secure, "required")
        .await
        .expect("TLS client");

    let plain = server
        .client_with_uri(&server.uri_with_options(FAILING_CLIENT_OPTIONS))
        .await;
    assert_refused(&plain, "a plain client of a TLS-only server").await;

    // The refused client cost nothing: TLS clients are still served.
    let count = secure
        .database("tls")
        .collection::<Document>("required")
        .count_documents(doc! {})
        .await
        .expect("count after the refused client");
    assert_eq!(count, 1);
}

#[tokio::test]
async fn allowed_serves_tls_and_plain_clients() {
    let server = start_tls_server("allowed");
    let secure = trusted_tls_client(&server).await;
    insert_and_find(&secure, "over_tls")
        .await
        .expect("TLS client");
    let plain = server.client().await;
    insert_and_find(&plain, "plain")
        .await
        .expect("plain client");
}

#[tokio::test]
async fn a_client_trusting_another_ca_is_refused() {
    let server = start_tls_server("required");
    let options = format!(
        "{}&{FAILING_CLIENT_OPTIONS}",
        tls_options("untrusted-ca.pem")
    );
    let client = server
        .client_with_uri(&server.uri_with_options(&options))
        .await;
    assert_refused(&client, "a client that trusts only another CA").await;
}

#[tokio::test]
async fn broken_and_silent_handshakes_leave_the_server_serving() {
    let server = start_tls_server("allowed");
    let address = format!("127.0.0.1:{}", server.port());

    // A record header that promises a ClientHello, then garbage, then a close.
    let mut garbage = TcpStream::connect(&address).expect("connect");
    garbage
        .write_all(&[
            0x16, 0x03, 0x01, 0x00, 0x40, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x11,
        ])
        .expect("write garbage");
    garbage.write_all(&[0x5a; 64]).expect("write garbage");
    drop(garbage);
    // Half a record header, then silence with the socket held open.
    let mut silent = TcpStream::connect(&address).expect("connect");
    silent.write_all(&[0x16]).expect("write one byte");
    // A complete record header with a truncated body, held open.
    let mut half = TcpStream::connect(&address).expect("connect");
    half.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .expect("write half a hello");

    let secure = trusted_tls_client(&server).await;
    insert_and_find(&secure, "after_garbage")
        .await
        .expect("TLS client after broken handshakes");
    let plain = server.client().await;
    insert_and_find(&plain, "plain_after_garbage")
        .await
        .expect("plain client after broken handshakes");

    // The silent clients do not keep their connection slots: the server gives up on the
    // handshake after its timeout (10 s) and closes them.
    for (name, mut stream) in [("silent", silent), ("half", half)] {
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .expect("read timeout");
        let mut buffer = [0u8; 64];
        match stream.read(&mut buffer) {
            Ok(0) => {}
            Ok(n) => panic!("{name}: the server answered {n} bytes to half a handshake"),
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(error) => panic!("{name}: not closed by the server: {error}"),
        }
    }
}

/// Runs the binary with `args` (it must refuse to start) and returns its stderr.
fn refused_start(args: &[&str]) -> String {
    let data = tempfile::tempdir().expect("temp dir");
    let output = common::launcher::docgate_command()
        .arg("--listen")
        .arg(format!("127.0.0.1:{}", common::launcher::free_port()))
        .args(["--admin-listen", "off"])
        .arg("--backend")
        .arg(format!("sqlite:{}", data.path().display()))
        .args(args)
        .output()
        .expect("run docgate");
    assert!(!output.status.success(), "started with {args:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn bad_tls_settings_stop_the_server_at_start_naming_the_problem() {
    let stderr = refused_start(&["--tls-mode", "required"]);
    assert!(stderr.contains("--tls-cert"), "{stderr}");

    let missing = fixture("no-such-cert.pem");
    let key = fixture("server.key");
    let stderr = refused_start(&["--tls-cert", &missing, "--tls-key", &key]);
    assert!(stderr.contains(&missing), "{stderr}");

    // A key file given as the certificate: no certificate in it.
    let stderr = refused_start(&["--tls-cert", &key, "--tls-key", &key]);
    assert!(stderr.contains(&key), "{stderr}");

    // The certificate with another certificate's key.
    let cert = fixture("server.pem");
    let wrong_key = fixture("ca.key");
    let stderr = refused_start(&["--tls-cert", &cert, "--tls-key", &wrong_key]);
    assert!(stderr.contains(&wrong_key), "{stderr}");
}
