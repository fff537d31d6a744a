//! The Oracle backend's own tests that need no database: the start-up failure without an
//! Oracle Client library (the case on every machine without the Instant Client, like CI).
//! The SQL text is checked against reviewed files by `tests/oracle_sql.rs`; the
//! conformance suite runs on a live database when `DOCGATE_TEST_ORACLE` names one.

use super::*;

/// Whether this machine can load an Oracle Client library (then the test below does not
/// apply).
fn client_installed() -> bool {
    std::env::var("DOCGATE_TEST_ORACLE").is_ok_and(|url| !url.is_empty())
}

#[tokio::test]
async fn without_an_oracle_client_connect_says_dpi_1047_and_how_to_install() {
    if client_installed() {
        eprintln!("note: DOCGATE_TEST_ORACLE is set; the missing-client test does not apply");
        return;
    }
    let result = OracleStore::connect(
        "oracle://app:secret@127.0.0.1:1/FREEPDB1",
        OracleOptions::default(),
    )
    .await;
    let Err(StoreError::Unavailable(message)) = result else {
        panic!("expected Unavailable, got {:?}", result.err());
    };
    assert!(message.contains("DPI-1047"), "{message}");
    assert!(message.contains("Instant Client"), "{message}");
    assert!(!message.contains("secret"), "{message}");
}
