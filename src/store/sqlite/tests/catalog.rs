//! SQLite's own catalog tests: opening errors and how the store describes itself. The
//! catalog tests every backend shares are in `store/conformance/catalog.rs`.

use super::{ok, open_in, tempdir};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_reports_errors_and_describes_itself() {
    let dir = tempdir();
    let file = dir.path().join("not_a_dir");
    ok(std::fs::write(&file, b"x"));
    let options = super::super::SqliteOptions::default();
    assert!(super::super::SqliteStore::open(&file, options).is_err());
    let store = open_in(&dir);
    use super::super::super::Store;
    assert_eq!(store.backend_name(), "sqlite");
    assert!(store.describe().ends_with(super::super::DATABASE_FILE));
    assert!(store.file().exists());
}
