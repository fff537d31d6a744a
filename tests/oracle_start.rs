//! Starting docgate with `--backend oracle://…` where it cannot work says why and exits
//! non-zero, without a panic and without the password: a build with `--features oracle` on
//! a machine without the Oracle Instant Client (like this project's CI) answers ODPI-C's
//! `DPI-1047` and how to install the client; a build without the feature says how to build
//! one that has the backend. Skipped when `DOCGATE_TEST_ORACLE` names a live database (then
//! the client is there and the start would succeed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;

const SECRET: &str = "Never-Shown-5Tq";

#[test]
fn starting_on_oracle_without_what_it_needs_says_so_and_exits_non_zero() {
    if std::env::var("DOCGATE_TEST_ORACLE").is_ok_and(|url| !url.is_empty()) {
        eprintln!("note: DOCGATE_TEST_ORACLE is set; the Oracle client is installed here");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let output = common::launcher::docgate_command()
        .current_dir(dir.path())
        .args(["--listen", "127.0.0.1:0", "--backend"])
        .arg(format!("oracle://app:{SECRET}@127.0.0.1:1/FREEPDB1"))
        .output()
        .expect("run docgate");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let all = format!("{stdout}{stderr}");
    assert_eq!(output.status.code(), Some(1), "{all}");
    assert!(!all.contains("panicked"), "{all}");
    assert!(!all.contains(SECRET), "{all}");
    if cfg!(feature = "oracle") {
        assert!(all.contains("DPI-1047"), "{all}");
        assert!(
            all.contains("Cannot locate a 64-bit Oracle Client library"),
            "{all}"
        );
        assert!(all.contains("Instant Client"), "{all}");
    } else {
        assert!(all.contains("built without the Oracle backend"), "{all}");
        assert!(all.contains("--features oracle"), "{all}");
    }
}
