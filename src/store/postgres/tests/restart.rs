//! Restart test: the same `PostgresStore` answers again after its PostgreSQL server was
//! restarted (the pool drops dead connections and opens new ones by itself), and the
//! catalog listener reconnects and broadcasts the current version. Runs its own throwaway
//! cluster (`tests/pg_cluster.sh` in a temporary directory) so other tests are not
//! disturbed; needs the PostgreSQL 15 binaries, not `DOCGATE_TEST_PG_URL`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bson::doc;

use super::super::super::conformance::backends::skipped;
use super::super::super::{Predicate, Store, StoreError, StoreSession};
use super::super::{PostgresOptions, PostgresStore};
use super::{create, ok, session, stored};

/// `tests/pg_cluster.sh` of this repository, found from this source file's path (absolute
/// or relative to the crate root), unless env `DOCGATE_PG_CLUSTER_SCRIPT` names it.
fn cluster_script() -> PathBuf {
    if let Some(path) = std::env::var_os("DOCGATE_PG_CLUSTER_SCRIPT") {
        return PathBuf::from(path);
    }
    let here = Path::new(file!());
    let start = if here.is_absolute() {
        here.to_path_buf()
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(here)
    };
    for dir in start.ancestors() {
        let candidate = dir.join("tests").join("pg_cluster.sh");
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!("tests/pg_cluster.sh not found above {}", start.display());
}

async fn cluster(command: &str, dir: &Path) -> String {
    let out = ok(tokio::process::Command::new(cluster_script())
        .arg(command)
        .arg(dir)
        .output()
        .await);
    assert!(
        out.status.success(),
        "pg_cluster.sh {command} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Stops the cluster however the test ends.
struct StopCluster(PathBuf);

impl Drop for StopCluster {
    fn drop(&mut self) {
        let _ = std::process::Command::new(cluster_script())
            .arg("stop")
            .arg(&self.0)
            .output();
    }
}

/// Retries `count` while the server is coming back (`Unavailable` / `PoolTimeout`).
async fn count_when_back(
    store: &PostgresStore,
    coll: &super::super::super::CollectionRecord,
) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let attempt = async {
            let mut s = store.session().await?;
            s.count(coll, &Predicate::True).await
        };
        match attempt.await {
            Ok(n) => return n,
            Err(StoreError::Unavailable(_) | StoreError::PoolTimeout(_))
                if Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("the store did not come back: {e:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_answers_again_after_a_server_restart() {
    if skipped() {
        return;
    }
    let dir = ok(tempfile::tempdir());
    let url = cluster("start", dir.path()).await;
    let _stop = StopCluster(dir.path().to_path_buf());
    assert!(url.starts_with("postgres://postgres@127.0.0.1:"), "{url}");
    let options = PostgresOptions {
        pool_min: 3,
        pool_max: 4,
        pool_wait_timeout: Duration::from_secs(2),
        statement_cache: true,
    };
    let store = ok(PostgresStore::connect(&url, options).await);
    let mut rx = match store.catalog_changes() {
        Some(rx) => rx,
        None => panic!("the PostgreSQL store reports catalog changes"),
    };
    let coll = {
        let mut s = session(&store).await;
        let coll = create(&mut s, "app", "c").await;
        ok(s.insert(&coll, &[stored("a", doc! {})], true).await);
        coll
    };
    let version = {
        let mut s = session(&store).await;
        ok(s.catalog_version().await)
    };
    while rx.try_recv().is_ok() {}

    cluster("restart", dir.path()).await;

    assert_eq!(count_when_back(&store, &coll).await, 1);
    // Every pooled connection works again (the dead ones were replaced).
    let mut sessions = Vec::new();
    for _ in 0..4 {
        sessions.push(session(&store).await);
    }
    for s in &mut sessions {
        assert_eq!(ok(s.count(&coll, &Predicate::True).await), 1);
    }
    drop(sessions);
    // The listener reconnected and said so with the current version.
    match tokio::time::timeout(Duration::from_secs(20), rx.recv()).await {
        Ok(Ok(v)) => assert_eq!(v, version),
        other => panic!("no broadcast after the listener reconnected: {other:?}"),
    }
    // And it listens again: a new change arrives.
    let mut s = session(&store).await;
    create(&mut s, "app", "d").await;
    match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
        Ok(Ok(v)) => assert_eq!(v, version + 1),
        other => panic!("no notification after the restart: {other:?}"),
    }
}
