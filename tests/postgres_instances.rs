//! docgate over PostgreSQL as a deployment sees it, through the official Rust `mongodb`
//! driver against real `docgate` processes: two docgate processes on one PostgreSQL
//! database, each caching metadata for 10 minutes, see each other's collection and index
//! changes on the very next command (DESIGN.md invariant 5: only invalidation can explain
//! that freshness), each other's documents, and each other's user changes (a new user at
//! once; a changed password or a dropped user as soon as the change notification arrives)
//! although the PLAIN fast path remembers verifications.
//!
//! The test creates a fresh database on the PostgreSQL named by env `DOCGATE_TEST_PG_URL`
//! (dropped when the test passes). `DOCGATE_SKIP_POSTGRES=1` makes it return early with a
//! note, as the PostgreSQL store tests do. Shared helpers live in `postgres_support/`.
//!
//! Not for: PostgreSQL stopping under a client (`postgres_faults.rs`), pool limits
//! (`postgres_pool.rs`), the store's own behaviour (`src/store/conformance`,
//! `src/store/postgres/tests`) or CRUD semantics (`driver_crud.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod postgres_support;

use mongodb::bson::{doc, Bson, Document};
use mongodb::Collection;

use postgres_support::*;

/// Metadata cache settings of the instances in the two-instance test: on, and long enough
/// that only invalidation can make a change visible during the test.
const LONG_CACHE: &[&str] = &[
    "--cache-metadata-enabled",
    "true",
    "--cache-metadata-timeout",
    "10m",
];

// ---------------------------------------------------------------------------
// 1. Two instances on one database
// ---------------------------------------------------------------------------

/// Collection, index, rename and drop made through A are seen by B on its very next
/// command, although B caches metadata for 10 minutes and had the old state cached; each
/// step is repeated so that a race between the change notification and the next command has
/// several chances to show. Documents cross both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_see_each_others_changes_at_once() {
    let Some(db) = TestDb::create().await else {
        return;
    };
    tokio::time::timeout(TEST_TIMEOUT, two_instances_body(&db.url))
        .await
        .expect("the two-instance test did not finish in time");
    db.drop_db().await;
}

/// What B got wrong, collected over all rounds so that one run shows every kind of miss.
#[derive(Default)]
struct Misses(Vec<String>);

impl Misses {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            let what = what();
            eprintln!("MISS: {what}");
            self.0.push(what);
        }
    }
}

/// Inserts `document` through `coll`; a miss unless docgate answers E11000.
async fn check_duplicate(
    misses: &mut Misses,
    what: &str,
    coll: &Collection<Document>,
    document: Document,
) {
    let result = bounded(what, coll.insert_one(document.clone())).await;
    misses.check(
        matches!(&result, Err(e) if server_code(e) == Some(11000)),
        || {
            format!(
                "{what}: inserting {document} answered {}; expected E11000",
                brief_result(&result)
            )
        },
    );
}

/// Expects an empty result (a collection that is gone) without an error.
async fn check_gone(misses: &mut Misses, what: &str, coll: &Collection<Document>) {
    let result = try_find_all(what, coll, doc! {}).await;
    misses.check(matches!(&result, Ok(found) if found.is_empty()), || {
        format!(
            "{what}: expected no documents and no error, got {}",
            brief_result(&result)
        )
    });
}

async fn two_instances_body(backend: &str) {
    let mut a = Docgate::start("A", backend, LONG_CACHE);
    let mut b = Docgate::start("B", backend, LONG_CACHE);
    let (client_a, client_b) = (a.client().await, b.client().await);
    let (app_a, app_b) = (client_a.database("app"), client_b.database("app"));
    let mut misses = Misses::default();

    // B caches a catalog snapshot (a collection of its own) before A changes anything.
    insert("B: seed", &app_b.collection("seed"), doc! {"_id": 0}).await;
    assert_eq!(
        find_all("B: find seed", &app_b.collection("seed"), doc! {}).await,
        vec![doc! {"_id": 0}]
    );

    const ROUNDS: usize = 5;
    for round in 0..ROUNDS {
        let name = format!("c{round}");
        let renamed = format!("r{round}");
        let (coll_a, coll_b) = (
            app_a.collection::<Document>(&name),
            app_b.collection::<Document>(&name),
        );
        let renamed_b = app_b.collection::<Document>(&renamed);
        let step = |s: &str| format!("round {round}: {s}");

        // B reads the catalog (and caches it) before the change.
        collection_names(&step("B: list before create"), &app_b).await;
        find_all(&step("B: find seed"), &app_b.collection("seed"), doc! {}).await;

        // A creates the collection (create + insert); B lists it on its next command.
        ok(
            &step("A: create"),
            bounded("A: create", app_a.create_collection(&name)).await,
        );
        insert(&step("A: insert"), &coll_a, doc! {"_id": 1, "k": 1, "j": 1}).await;
        let names = collection_names(&step("B: list after create"), &app_b).await;
        misses.check(names.contains(&name), || {
            format!("round {round}: B's listCollections right after A created {name}: {names:?}")
        });
        let found = try_find_all(&step("B: find"), &coll_b, doc! {}).await;
        misses.check(
            matches!(&found, Ok(docs) if *docs == vec![doc! {"_id": 1, "k": 1, "j": 1}]),
            || {
                format!(
                    "round {round}: B's find of the document A wrote: {}",
                    brief_result(&found)
                )
            },
        );

        // A creates a unique index; B's very next command is an insert that violates it.
        create_unique_index(&step("A: create index k_1"), &coll_a, "k").await;
        check_duplicate(
            &mut misses,
            &step("B: insert duplicate k right after A created unique k_1"),
            &coll_b,
            doc! {"_id": 2, "k": 1, "j": 2},
        )
        .await;
        let indexes = index_names(&step("B: list indexes"), &coll_b).await;
        misses.check(indexes == ["_id_", "k_1"], || {
            format!("round {round}: B's listIndexes after A created k_1: {indexes:?}")
        });

        // A creates another unique index; B's very next command lists indexes, then
        // enforces it.
        find_all(&step("B: find before j_1"), &coll_b, doc! {}).await;
        index_names(&step("B: list indexes before j_1"), &coll_b).await;
        create_unique_index(&step("A: create index j_1"), &coll_a, "j").await;
        let indexes = index_names(&step("B: list indexes after j_1"), &coll_b).await;
        misses.check(indexes == ["_id_", "j_1", "k_1"], || {
            format!("round {round}: B's listIndexes right after A created j_1: {indexes:?}")
        });
        check_duplicate(
            &mut misses,
            &step("B: insert duplicate j after A created unique j_1"),
            &coll_b,
            doc! {"_id": 3, "k": 3, "j": 1},
        )
        .await;

        // Documents written through B are read through A; B's duplicates are not there.
        insert(&step("B: insert"), &coll_b, doc! {"_id": 4, "k": 4, "j": 4}).await;
        let seen_by_a = find_all(&step("A: find"), &coll_a, doc! {}).await;
        let ids: Vec<&Bson> = seen_by_a.iter().filter_map(|d| d.get("_id")).collect();
        misses.check(ids.contains(&&Bson::Int32(4)), || {
            format!("round {round}: A does not read the document B wrote: {seen_by_a:?}")
        });
        misses.check(
            !ids.contains(&&Bson::Int32(2)) && !ids.contains(&&Bson::Int32(3)),
            || format!("round {round}: duplicates B let through are stored: {seen_by_a:?}"),
        );

        // A renames; B's very next command reads the old name (nothing), then the new.
        find_all(&step("B: find before rename"), &coll_b, doc! {}).await;
        let rename = doc! {
            "renameCollection": format!("app.{name}"),
            "to": format!("app.{renamed}"),
        };
        ok(
            &step("A: renameCollection"),
            bounded("A: rename", client_a.database("admin").run_command(rename)).await,
        );
        check_gone(
            &mut misses,
            &step("B: find under the old name right after A renamed it"),
            &coll_b,
        )
        .await;
        let names = collection_names(&step("B: list after rename"), &app_b).await;
        misses.check(names.contains(&renamed) && !names.contains(&name), || {
            format!("round {round}: B lists {names:?} after A renamed {name} to {renamed}")
        });
        let found = try_find_all(&step("B: find new name"), &renamed_b, doc! {}).await;
        misses.check(
            matches!(&found, Ok(docs) if docs.len() == seen_by_a.len()),
            || {
                format!(
                    "round {round}: B's find under the new name {renamed}: {}",
                    brief_result(&found)
                )
            },
        );
        // The indexes moved along, and B enforces them under the new name.
        check_duplicate(
            &mut misses,
            &step("B: duplicate k in the renamed collection"),
            &renamed_b,
            doc! {"_id": 5, "k": 4, "j": 5},
        )
        .await;
        insert(
            &step("B: insert into renamed"),
            &renamed_b,
            doc! {"_id": 6, "k": 6, "j": 6},
        )
        .await;
        let found = find_all(
            &step("A: find renamed"),
            &app_a.collection(&renamed),
            doc! {},
        )
        .await;
        misses.check(
            found.iter().any(|d| d.get("_id") == Some(&Bson::Int32(6))),
            || format!("round {round}: A does not read what B wrote under {renamed}: {found:?}"),
        );

        // A drops; B's very next command finds nothing, then lists without it.
        find_all(&step("B: find before drop"), &renamed_b, doc! {}).await;
        ok(
            &step("A: drop"),
            bounded("A: drop", app_a.collection::<Document>(&renamed).drop()).await,
        );
        check_gone(
            &mut misses,
            &step("B: find right after A dropped the collection"),
            &renamed_b,
        )
        .await;
        let names = collection_names(&step("B: list after drop"), &app_b).await;
        misses.check(!names.contains(&renamed) && !names.contains(&name), || {
            format!("round {round}: B lists {names:?} after A dropped {renamed}")
        });
    }

    // A sees B's first collection and its document, too.
    let names = collection_names("A: final list", &app_a).await;
    assert_eq!(names, vec!["seed".to_string()], "A's final list");
    assert_eq!(
        find_all("A: find seed", &app_a.collection("seed"), doc! {}).await,
        vec![doc! {"_id": 0}]
    );
    a.assert_running();
    b.assert_running();
    assert!(
        misses.0.is_empty(),
        "B served stale metadata {} time(s) in {ROUNDS} rounds (DESIGN.md invariant 5):\n  {}",
        misses.0.len(),
        misses.0.join("\n  ")
    );
}

// ---------------------------------------------------------------------------
// 2. Users across instances
// ---------------------------------------------------------------------------

/// Users created, changed and dropped through A apply on B at once, although B caches
/// metadata for 10 minutes and remembers PLAIN verifications (the fast path) for 5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_changed_through_one_instance_apply_on_the_other_at_once() {
    let Some(db) = TestDb::create().await else {
        return;
    };
    tokio::time::timeout(TEST_TIMEOUT, users_body(&db.url))
        .await
        .expect("the users test did not finish in time");
    db.drop_db().await;
}

/// Runs `connectionStatus` as `user` on `instance`: Ok with the user seen, or the error.
async fn login_on(instance: &Docgate, user: &str, password: &str) -> Result<Document, String> {
    let client = instance.client_as(user, password, "app", "PLAIN").await;
    let status = bounded(
        "connectionStatus",
        client
            .database("app")
            .run_command(doc! {"connectionStatus": 1}),
    )
    .await
    .map_err(|e| brief(&e))?;
    Ok(status)
}

async fn users_body(backend: &str) {
    let a = Docgate::start("A", backend, LONG_CACHE);
    let b = Docgate::start("B", backend, LONG_CACHE);
    // B caches the (empty) user list before A creates anyone.
    let anonymous_b = b.client().await;
    let coll_b = anonymous_b.database("app").collection::<Document>("c");
    bounded("B: find before users exist", coll_b.find_one(doc! {}))
        .await
        .expect("no users yet: the localhost exception serves B's client");

    // The first user, through A's localhost exception.
    let anonymous_a = a.client().await;
    ok(
        "A: createUser boss",
        bounded(
            "A: createUser boss",
            anonymous_a
                .database("app")
                .run_command(doc! {"createUser": "boss", "pwd": "bosspw", "roles": ["dbOwner"]}),
        )
        .await,
    );
    // B requires authentication on its very next command.
    let refused = bounded("B: anonymous find", coll_b.find_one(doc! {})).await;
    assert!(
        matches!(&refused, Err(e) if server_code(e) == Some(13)),
        "B still served an anonymous client: {}",
        brief_result(&refused)
    );

    let boss_a = a.client_as("boss", "bosspw", "app", "SCRAM-SHA-256").await;
    let app_a = boss_a.database("app");
    let run = |what: &'static str, command: Document| {
        let app_a = app_a.clone();
        async move { ok(what, bounded(what, app_a.run_command(command)).await) }
    };
    run(
        "A: createUser svc",
        doc! {"createUser": "svc", "pwd": "one", "roles": ["readWrite"]},
    )
    .await;
    for round in 0..2 {
        let status = login_on(&b, "svc", "one").await;
        assert!(
            status.is_ok(),
            "round {round}: B refused the user A created: {status:?}"
        );
    }

    run(
        "A: updateUser svc",
        doc! {"updateUser": "svc", "pwd": "two"},
    )
    .await;
    refused_soon(&b, "svc", "one", "the old password after A changed it").await;
    login_on(&b, "svc", "two")
        .await
        .expect("B: the new password");

    run("A: dropUser svc", doc! {"dropUser": "svc"}).await;
    refused_soon(&b, "svc", "two", "a user A dropped").await;
}

/// How long a user change made through one instance may take to reach another: the change
/// notification (PostgreSQL NOTIFY) is delivered asynchronously, in milliseconds on an idle
/// machine; a busy CI machine can delay it, so the test allows this much before calling the
/// entry stale.
const NOTIFICATION_BOUND: std::time::Duration = std::time::Duration::from_secs(5);

/// Asserts that `instance` refuses `user`/`password` once the change notification has had
/// time to arrive (at most [`NOTIFICATION_BOUND`]), and prints how long that took.
async fn refused_soon(instance: &Docgate, user: &str, password: &str, what: &str) {
    let started = std::time::Instant::now();
    loop {
        let login = login_on(instance, user, password).await;
        if login.is_err() {
            eprintln!("B refused {what} after {:?}", started.elapsed());
            return;
        }
        assert!(
            started.elapsed() < NOTIFICATION_BOUND,
            "B still accepts {what} after {NOTIFICATION_BOUND:?} (a stale fast-path entry): {login:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[test]
fn database_names_replace_the_path() {
    assert_eq!(
        with_dbname("postgres://u@127.0.0.1:5432/postgres", "t1"),
        "postgres://u@127.0.0.1:5432/t1"
    );
    assert_eq!(
        with_dbname("postgresql://u:p@h/db?sslmode=disable", "t2"),
        "postgresql://u:p@h/t2?sslmode=disable"
    );
}
