//! Backups as README's "Backups and restore" tells an operator to take them: while a client
//! keeps inserting, SQLite's online backup (`VACUUM INTO`, what `sqlite3 .backup` also gives)
//! or PostgreSQL's `pg_dump -Fc` is taken of the live database; a second server restored from
//! it (the file put in place / `pg_restore` into an empty database) has every document that
//! was acknowledged before the backup started, nothing that was never acknowledged, the
//! indexes, a clean `validate`, and takes writes.
//!
//! Not for point-in-time recovery or PostgreSQL's continuous archiving (PostgreSQL's own).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{TestBackend, TestServer};
use mongodb::bson::{doc, Document};
use mongodb::IndexModel;

/// Documents inserted before the concurrent writer starts.
const SEEDED: i64 = 3_000;

/// Takes the backup of `server`'s live database into `dir`; returns the backup file.
fn take_backup(server: &TestServer, dir: &Path) -> std::path::PathBuf {
    match server.backend() {
        TestBackend::Sqlite { dir: data } => {
            let target = dir.join("backup.db");
            let live = rusqlite::Connection::open(data.join(docgate::store::sqlite::DATABASE_FILE))
                .expect("open the live database");
            live.busy_timeout(Duration::from_secs(10)).unwrap();
            live.execute("VACUUM INTO ?1", [target.to_str().unwrap()])
                .expect("VACUUM INTO");
            target
        }
        TestBackend::Oracle { .. } => unreachable!("skipped on Oracle"),
        TestBackend::Postgres { .. } => {
            let target = dir.join("docgate.dump");
            run(Command::new("pg_dump")
                .args(["-Fc", "-d", &server.backend().arg(), "-f"])
                .arg(&target));
            target
        }
    }
}

/// Replaces the data of the stopped `server` by `backup`, as README says to restore.
fn restore_into(server: &TestServer, backup: &Path) {
    match server.backend() {
        TestBackend::Sqlite { dir } => {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_file() {
                    std::fs::remove_file(&path).unwrap();
                }
            }
            std::fs::copy(backup, dir.join(docgate::store::sqlite::DATABASE_FILE)).unwrap();
        }
        TestBackend::Oracle { .. } => unreachable!("skipped on Oracle"),
        TestBackend::Postgres { database, .. } => {
            let backend = server.backend();
            backend
                .run_postgres_sql(&format!("DROP DATABASE \"{database}\" WITH (FORCE)"))
                .unwrap();
            backend
                .run_postgres_sql(&format!("CREATE DATABASE \"{database}\""))
                .unwrap();
            run(Command::new("pg_restore")
                .args(["--no-owner", "-d", &backend.arg()])
                .arg(backup));
        }
    }
}

fn run(command: &mut Command) {
    let out = command.output().expect("run the backup tool");
    assert!(
        out.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_online_backup_restores_every_acknowledged_document_and_the_indexes() {
    if std::env::var("DOCGATE_TEST_ORACLE").is_ok_and(|url| !url.is_empty()) {
        eprintln!("note: an Oracle schema is backed up with Data Pump (expdp/impdp); not run here");
        return;
    }
    let source = TestServer::start();
    let client = source.client().await;
    let coll = client.database("shop").collection::<Document>("orders");
    let seed: Vec<Document> = (0..SEEDED)
        .map(|n| doc! {"_id": n, "n": n, "customer": format!("c{}", n % 97)})
        .collect();
    coll.insert_many(seed).await.unwrap();
    coll.create_index(
        IndexModel::builder()
            .keys(doc! {"customer": 1, "n": -1})
            .build(),
    )
    .await
    .unwrap();

    // A writer keeps inserting while the backup is taken.
    let acknowledged = Arc::new(Mutex::new(HashSet::<i64>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (coll, acknowledged, stop) = (coll.clone(), acknowledged.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = SEEDED;
            while !stop.load(Ordering::SeqCst) {
                coll.insert_one(doc! {"_id": n, "n": n, "customer": "late"})
                    .await
                    .unwrap();
                acknowledged.lock().unwrap().insert(n);
                n += 1;
            }
            n
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before_backup = acknowledged.lock().unwrap().clone();
    assert!(!before_backup.is_empty(), "the writer wrote nothing");
    let backups = tempfile::tempdir().unwrap();
    let source_for_backup = &source;
    let backup = tokio::task::block_in_place(|| take_backup(source_for_backup, backups.path()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::SeqCst);
    let sent_up_to = writer.await.unwrap();

    let mut restored = TestServer::start();
    restored.kill();
    restore_into(&restored, &backup);
    restored.restart_same_data();
    if let TestBackend::Sqlite { dir } = restored.backend() {
        assert_eq!(common::sqlite_integrity_check(dir), "ok");
    }

    let client = restored.client().await;
    let coll = client.database("shop").collection::<Document>("orders");
    let ids: HashSet<i64> = coll
        .distinct("_id", doc! {})
        .await
        .unwrap()
        .into_iter()
        .map(|id| {
            id.as_i64()
                .unwrap_or_else(|| i64::from(id.as_i32().unwrap()))
        })
        .collect();
    for n in (0..SEEDED).chain(before_backup.iter().copied()) {
        assert!(
            ids.contains(&n),
            "document {n} acknowledged before the backup is missing"
        );
    }
    assert!(
        ids.iter().all(|n| *n < sent_up_to),
        "the restore has documents that were never sent"
    );
    let count = coll.count_documents(doc! {}).await.unwrap();
    assert_eq!(count as usize, ids.len(), "count and distinct _id disagree");

    let index_names: Vec<String> = coll.list_index_names().await.unwrap();
    assert!(
        index_names.contains(&"customer_1_n_-1".to_string()),
        "indexes after restore: {index_names:?}"
    );
    let plan = client
        .database("shop")
        .run_command(doc! {"explain": {"find": "orders", "filter": {"customer": "c5"}}})
        .await
        .unwrap();
    assert!(
        format!("{plan}").contains("customer_1_n_-1"),
        "the restored index does not serve the query: {plan}"
    );
    let validate = client
        .database("shop")
        .run_command(doc! {"validate": "orders"})
        .await
        .unwrap();
    assert!(validate.get_bool("valid").unwrap_or(false), "{validate}");

    coll.insert_one(doc! {"_id": -1, "n": -1, "customer": "after restore"})
        .await
        .unwrap();
    assert_eq!(
        coll.count_documents(doc! {"customer": "c5"}).await.unwrap(),
        (0..SEEDED).filter(|n| n % 97 == 5).count() as u64
    );
}
