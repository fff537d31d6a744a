//! The Oracle backend's own tests that need no database: the start-up failure without an
//! Oracle Client library (the case on every machine without the Instant Client, like CI).
//! The SQL text is checked against reviewed files by `tests/oracle_sql.rs`; the
//! conformance suite runs on a live database when `DOCGATE_TEST_ORACLE` names one.

use super::conn;
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

/// Oracle's error codes map to the store's errors the core acts on.
#[test]
fn oracle_errors_map_to_what_the_core_acts_on() {
    use conn::db_code_err;
    assert!(matches!(db_code_err(1, "unique"), StoreError::DuplicateKey));
    assert!(matches!(
        db_code_err(8177, "can't serialize"),
        StoreError::WriteConflict(_)
    ));
    assert!(matches!(
        db_code_err(60, "deadlock"),
        StoreError::WriteConflict(_)
    ));
    assert!(matches!(
        db_code_err(942, "no such table"),
        StoreError::StaleCatalog(_)
    ));
    assert!(matches!(
        db_code_err(1653, "unable to extend"),
        StoreError::OutOfDiskSpace(_)
    ));
    assert!(matches!(
        db_code_err(3113, "end-of-file"),
        StoreError::Unavailable(_)
    ));
    match db_code_err(904, "invalid identifier") {
        StoreError::Database(text) => assert_eq!(text, "ORA-00904: invalid identifier"),
        other => panic!("{other:?}"),
    }
}

/// The DDL docgate runs, as Oracle will see it (generated names only, quoted).
#[test]
fn collection_and_entries_ddl_name_their_constraints() {
    let ddl = collection_ddl("DG_C7");
    assert!(ddl.starts_with("CREATE TABLE \"DG_C7\" ("), "{ddl}");
    assert!(ddl.contains("CONSTRAINT \"DG_C7_K\" UNIQUE"), "{ddl}");
    assert!(ddl.contains("j JSON NOT NULL"), "{ddl}");
    let [table, index] = entries_ddl("DG_I3", true);
    assert!(
        table.contains("CONSTRAINT \"DG_I3_P\" PRIMARY KEY (ik, k)"),
        "{table}"
    );
    assert!(
        table.contains("CONSTRAINT \"DG_I3_U\" UNIQUE (ik)"),
        "{table}"
    );
    assert_eq!(index, "CREATE INDEX \"DG_I3_K\" ON \"DG_I3\" (k)");
    let [table, _] = entries_ddl("DG_I4", false);
    assert!(!table.contains("UNIQUE"), "{table}");
    assert!(AUTONOMOUS_DDL.contains("PRAGMA AUTONOMOUS_TRANSACTION"));
    assert!(BOOTSTRAP
        .iter()
        .all(|ddl| ddl.starts_with("CREATE TABLE IF NOT EXISTS dg_")));
}
