//! Disk full on SQLite: the data directory sits on a small tmpfs; writes go on until the
//! device is full. The client must get MongoDB's 14031 OutOfDiskSpace (not an internal
//! error), the server stays up, every acknowledged write is still there, writes work again
//! once space returns (tmpfs remounted larger), and `PRAGMA integrity_check` is clean.
//!
//! Needs root (it mounts a tmpfs); returns with a note when the mount fails. SQLite only:
//! on a PostgreSQL `DOCGATE_TEST_BACKEND` it returns with a note.
//!
//! Not for: crashes (tests/crash_recovery.rs) or PostgreSQL going away
//! (tests/postgres_faults.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod driver_support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::launcher::Launch;
use driver_support::server_code;
use mongodb::bson::{doc, Document};

/// A tmpfs mounted on a fresh directory; unmounted (and the directory removed) on drop.
struct Tmpfs {
    dir: PathBuf,
    _parent: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` reads it); None when mounting fails.
    fn mount(size: &str) -> Option<Tmpfs> {
        let parent = tempfile::tempdir().expect("temp dir");
        let dir = parent.path().join("mnt");
        std::fs::create_dir(&dir).expect("create mount point");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs {
            dir,
            _parent: parent,
        })
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.dir)
            .status()
            .expect("run mount");
        assert!(status.success(), "remount {} to {size}", self.dir.display());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

#[tokio::test]
async fn a_full_disk_answers_out_of_disk_space_loses_nothing_and_recovers() {
    let backend = std::env::var("DOCGATE_TEST_BACKEND").unwrap_or_default();
    if !(backend.is_empty() || backend == "sqlite") {
        eprintln!("disk-full test skipped: it runs on SQLite only");
        return;
    }
    let Some(tmpfs) = Tmpfs::mount("8m") else {
        eprintln!("disk-full test skipped: cannot mount a tmpfs (not root?)");
        return;
    };
    let data = tmpfs.dir.join("data");
    std::fs::create_dir(&data).expect("create data dir");
    let logs = tempfile::tempdir().expect("log dir");
    let backend_arg = format!("sqlite:{}", data.display());
    let mut server = Launch::new(&backend_arg)
        .start(|run| logs.path().join(format!("docgate-{run}.log")))
        .unwrap_or_else(|why| panic!("docgate did not start: {why}"));
    let uri = format!(
        "mongodb://127.0.0.1:{}/?directConnection=true&serverSelectionTimeoutMS=10000",
        server.port
    );
    let client = mongodb::Client::with_uri_str(&uri).await.expect("client");
    let coll = client.database("full").collection::<Document>("docs");
    let payload = "x".repeat(16 * 1024);

    // Fill the device: every acknowledged insert is remembered.
    let mut acknowledged = 0_i64;
    let failure = loop {
        match coll
            .insert_one(doc! {"_id": acknowledged, "payload": &payload})
            .await
        {
            Ok(_) => acknowledged += 1,
            Err(e) => break e,
        }
        assert!(acknowledged < 10_000, "8 MB tmpfs never filled up");
    };
    assert_eq!(
        server_code(&failure),
        Some(14031),
        "a full disk answers OutOfDiskSpace, got {failure}"
    );
    let text = failure.to_string();
    assert!(
        !text.contains("SQLITE") && !text.contains(&data.display().to_string()),
        "the client's message names no internals: {text}"
    );
    assert!(acknowledged > 0, "some writes fit before the disk filled");

    // Still up, and everything acknowledged is there.
    client
        .database("admin")
        .run_command(doc! {"ping": 1})
        .await
        .expect("ping while the disk is full");
    let count = coll.count_documents(doc! {}).await.expect("count");
    assert_eq!(
        count as i64, acknowledged,
        "acknowledged writes after disk full"
    );

    // Space returns: writes work again.
    tmpfs.resize("64m");
    let mut later = None;
    for _ in 0..50 {
        match coll
            .insert_one(doc! {"_id": "after", "payload": "small"})
            .await
        {
            Ok(_) => {
                later = Some(());
                break;
            }
            Err(e) => {
                eprintln!("write after remount: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    assert!(later.is_some(), "writes work again once space returns");
    let count = coll.count_documents(doc! {}).await.expect("count");
    assert_eq!(count as i64, acknowledged + 1);

    drop(client);
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(server.child.id().to_string())
        .status();
    let status = server.child.wait().expect("wait for docgate");
    assert!(
        status.success(),
        "docgate exits cleanly on SIGTERM: {status}"
    );
    assert_eq!(common::sqlite_integrity_check(&data), "ok");
}
