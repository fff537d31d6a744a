//! Multi-document transactions (issue 16): what a small transaction costs through docgate
//! against the same writes in a raw SQL transaction, how transactions fare when they all
//! want one document, and what a plain write does while a transaction is open.
//!
//! 1. Small transactions. Collections of `DOCGATE_BENCH_TX_DOCS` (1,000) documents of ~200
//!    bytes (`common::sample_doc`), one per side, loaded through docgate (same table layout,
//!    same indexes). `DOCGATE_BENCH_TXNS` (1,000) transactions, each `$inc: {n: 1}` on two
//!    different documents picked by a seeded PRNG (the same pairs for every side of a round),
//!    one after the other on one connection. Every round times each side once, in rotating
//!    order, over `DOCGATE_BENCH_ROUNDS` (3) rounds:
//!    - (a) the thin wire client (`common::wire_client`): `update` with `lsid`, `txnNumber`,
//!      `autocommit: false` and `startTransaction: true`, a second `update`, then
//!      `commitTransaction` on `admin`: three round trips;
//!    - (a') the `mongodb` driver: `start_transaction()`, two `update_one(...).session(..)`,
//!      `commit_transaction()` — only when `hello` answers a `setName` (the replica-set face
//!      the driver needs for transactions); otherwise the row says it was skipped;
//!    - (c) raw SQL on docgate's own table, one connection: SQLite `BEGIN` (deferred, as
//!      docgate begins a transaction), PostgreSQL `BEGIN ISOLATION LEVEL REPEATABLE READ;
//!      SET LOCAL lock_timeout = '200ms'` (the text docgate sends, one round trip); then two
//!      prepared `UPDATE t SET doc = …, j = … WHERE k = …` (SQLite `j = jsonb(?)`, PostgreSQL
//!      `j = $2::text::jsonb`, as `src/store/*/write.rs` replace a document) with the key
//!      (`docgate::query::encode_key`), the new BSON and its JSON text (serde_json) computed
//!      before the clock starts; then `COMMIT`.
//!
//!    The raw side does not read the document, apply the update, take docgate's
//!    `LOCK TABLE … ROW EXCLUSIVE` or check the index guard (`write.rs`), keep session state,
//!    or parse and answer commands: that is what the ratio prices. At the end the bench
//!    checks that the raw side wrote the same `doc` bytes and an equal `j` as docgate did
//!    (each collection got the same increments) and prints it.
//!    No read runs before the timed transactions, so each `update` finds its collection by
//!    reading the catalog inside its transaction (`Catalog::collection_info_in`: three
//!    queries on PostgreSQL, the whole collection and index lists): only reads
//!    (`Catalog::snapshot`) fill docgate's catalog cache, so a client that only writes pays
//!    that on every write, and this bench measures that case.
//!    Printed per backend: mean ms per transaction (over all rounds), best (the best round's),
//!    transactions per second (mean), and the ratios a/c and a'/c.
//! 2. Contention: `WRITERS` (8) concurrent tokio tasks, each on its own connection and
//!    session (thin wire client), for `DOCGATE_BENCH_SECONDS` (5) seconds run transactions
//!    of one `update` (`$inc` of one hot document) and `commitTransaction`; a reply with
//!    `TransientTransactionError` (112 WriteConflict) is answered as the drivers' convenient
//!    API does: `abortTransaction` (its reply ignored) and the transaction again, at once, with
//!    the next `txnNumber`; a commit answered `UnknownTransactionCommitResult` is sent again.
//!    Printed: commits/s, conflicts/s, retries per commit, and the hot document's counter,
//!    which must equal the commits (asserted: no lost update). Run on every backend
//!    (the issue asks for PostgreSQL; SQLite's one write lock is shown next to it).
//! 3. A plain write while a transaction is open: another connection sends a plain `update`
//!    (no session) of a document the transaction has not written — with no transaction open
//!    (the reference); while one session's transaction has updated one document and sits
//!    idle; and while one has updated one and keeps sending a `find` in it every 100 ms until
//!    the plain update answers. Printed: how long the plain update took, whether it
//!    succeeded or its error code, and what the transaction's `commitTransaction` answered.
//!
//! Nothing but answers and the no-lost-update counter is asserted.
//!
//! Run: `cargo bench --bench transactions` (`DOCGATE_BENCH_PG=0` for SQLite only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{doc, Bson, Document, RawDocument};
use common::wire_client::{ok, WireClient};
use common::{
    backends, connect_pg, env_usize, open_sqlite, pg_table, print_table, ratio, sample_doc,
    sqlite_table, Backend, Rng, Server, BENCH_PASSWORD, BENCH_USER,
};
use docgate::query::encode_key;

const DB: &str = "bench";
const WIRE_COLL: &str = "tx_wire";
const DRIVER_COLL: &str = "tx_driver";
const RAW_COLL: &str = "tx_raw";
const HOT_COLL: &str = "tx_hot";
const OPEN_COLL: &str = "tx_open";
const WRITERS: usize = 8;
const SIDES: [&str; 3] = [
    "(a) docgate, thin wire client",
    "(a') docgate, mongodb driver",
    "(c) raw SQL transaction",
];

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let docs = env_usize("DOCGATE_BENCH_TX_DOCS", 1000).max(2);
    let txns = env_usize("DOCGATE_BENCH_TXNS", 1000).max(1);
    let rounds = env_usize("DOCGATE_BENCH_ROUNDS", 3).max(1);
    let seconds = env_usize("DOCGATE_BENCH_SECONDS", 5).max(1);
    let dir = tempfile::Builder::new()
        .prefix("docgate-bench-tx-")
        .tempdir()
        .expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!(
        "transactions: {txns} transactions of two $inc updates over {docs} documents, {rounds} round(s); \
         {WRITERS} writers on one document for {seconds} s; a plain write while a transaction is open"
    );
    let mut open_rows = Vec::new();
    for backend in &backends {
        let server = Server::start(backend, dir.path(), &[]);
        let client = server.client().await;
        small_transactions(backend, &server, &client, docs, txns, rounds).await;
        contention(backend, &server, &client, seconds).await;
        open_rows.extend(plain_write_while_open(backend, &server, &client).await);
        client.shutdown().await;
        drop(server);
    }
    println!();
    println!("a plain update of another document while a transaction that has written is open");
    print_table(
        &[
            "backend",
            "transaction",
            "plain update",
            "took ms",
            "its commit",
        ],
        &open_rows,
    );
}

// ---------------------------------------------------------------------------------------
// The wire side: sessions and transactions sent field by field.

/// Why a command of a transaction did not succeed.
#[derive(Debug)]
struct Failure {
    code: i32,
    labels: Vec<String>,
    text: String,
}

impl Failure {
    fn transient(&self) -> bool {
        self.labels.iter().any(|l| l == "TransientTransactionError")
    }
    fn unknown_commit(&self) -> bool {
        self.labels
            .iter()
            .any(|l| l == "UnknownTransactionCommitResult")
    }
}

/// The outcome of a reply: `ok: 1` without write errors, else the (first) error.
fn outcome(reply: &RawDocument) -> Result<(), Failure> {
    let labels = || -> Vec<String> {
        reply
            .get_array("errorLabels")
            .map(|a| {
                a.into_iter()
                    .filter_map(|l| l.ok().and_then(|l| l.as_str().map(str::to_owned)))
                    .collect()
            })
            .unwrap_or_default()
    };
    let text = || format!("{:?}", Document::try_from(reply));
    if !ok(reply) {
        let code = reply.get_i32("code").unwrap_or(-1);
        return Err(Failure {
            code,
            labels: labels(),
            text: text(),
        });
    }
    if let Ok(errors) = reply.get_array("writeErrors") {
        if let Some(Ok(first)) = errors.into_iter().next() {
            let code = first
                .as_document()
                .and_then(|d| d.get_i32("code").ok())
                .unwrap_or(-1);
            return Err(Failure {
                code,
                labels: labels(),
                text: text(),
            });
        }
    }
    Ok(())
}

/// One connection with one logical session, sending the transaction fields itself.
struct WireSession {
    client: WireClient,
    lsid: Document,
    txn: i64,
}

impl WireSession {
    async fn open(port: u16) -> WireSession {
        WireSession {
            client: WireClient::connect_as(port, BENCH_USER, BENCH_PASSWORD).await,
            lsid: doc! { "id": bson::Uuid::new() },
            txn: 0,
        }
    }

    /// The fields of a command of the current transaction.
    fn fields(&self, body: &mut Document, start: bool) {
        body.insert("lsid", self.lsid.clone());
        body.insert("txnNumber", self.txn);
        if start {
            body.insert("startTransaction", true);
        }
        body.insert("autocommit", false);
    }

    /// `update coll {_id: id} {$inc: {n: 1}}` in the current transaction (the first command
    /// of it with `start`); checks that it matched one document.
    async fn inc(&mut self, coll: &str, id: i64, start: bool) -> Result<(), Failure> {
        let mut body = inc_command(coll, id);
        self.fields(&mut body, start);
        let reply = self.client.reply(body).await;
        outcome(reply)?;
        assert_eq!(
            reply.get_i32("n").ok(),
            Some(1),
            "update of _id {id} matched no document"
        );
        Ok(())
    }

    async fn commit(&mut self) -> Result<(), Failure> {
        let mut body = doc! { "commitTransaction": 1, "$db": "admin" };
        self.fields(&mut body, false);
        outcome(self.client.reply(body).await)
    }

    /// `abortTransaction`, its answer ignored (the transaction may be gone already).
    async fn abort(&mut self) {
        let mut body = doc! { "abortTransaction": 1, "$db": "admin" };
        self.fields(&mut body, false);
        let _ = self.client.reply(body).await;
    }

    /// A transaction: `$inc` on each of `ids`, then commit. On a failure the transaction is
    /// aborted (as drivers do) and the failure answered.
    async fn transaction(&mut self, coll: &str, ids: &[i64]) -> Result<(), Failure> {
        self.txn += 1;
        let mut result = Ok(());
        for (i, id) in ids.iter().enumerate() {
            result = self.inc(coll, *id, i == 0).await;
            if result.is_err() {
                break;
            }
        }
        if let Err(failure) = result {
            self.abort().await;
            return Err(failure);
        }
        loop {
            match self.commit().await {
                Err(f) if f.unknown_commit() => continue,
                other => return other,
            }
        }
    }
}

/// A plain (session-less) `update coll {_id: id} {$inc: {n: 1}}`.
fn inc_command(coll: &str, id: i64) -> Document {
    doc! {
        "update": coll,
        "updates": [{ "q": { "_id": id }, "u": { "$inc": { "n": 1 } } }],
        "ordered": true,
        "$db": DB,
    }
}

/// Whether `hello` names a replica set (the face the driver needs for transactions).
async fn replica_set_face(port: u16) -> Option<String> {
    let mut client = WireClient::connect(port).await;
    let reply = client.command(doc! { "hello": 1, "$db": "admin" }).await;
    reply.get_str("setName").ok().map(str::to_owned)
}

// ---------------------------------------------------------------------------------------
// 1. Small transactions.

/// The raw SQL side: a connection on docgate's database and its prepared update.
enum Raw {
    Sqlite {
        conn: rusqlite::Connection,
        update: String,
    },
    Postgres {
        client: tokio_postgres::Client,
        update: tokio_postgres::Statement,
    },
}

/// What the raw side writes for one update: key, new BSON, its JSON text.
type RawWrite = (Vec<u8>, Vec<u8>, String);

impl Raw {
    async fn open(backend: &Backend) -> (Raw, String) {
        match backend {
            Backend::Sqlite { .. } => {
                let conn = open_sqlite(&backend.sqlite_file());
                let table = sqlite_table(&conn, DB, RAW_COLL);
                let update = format!("UPDATE {table} SET doc = ?1, j = jsonb(?2) WHERE k = ?3");
                conn.prepare_cached(&update).expect("prepare update");
                (Raw::Sqlite { conn, update }, table)
            }
            Backend::Postgres { url } => {
                let client = connect_pg(url).await;
                let table = pg_table(&client, DB, RAW_COLL).await;
                let update = client
                    .prepare(&format!(
                        "UPDATE {table} SET doc = $1, j = $2::text::jsonb WHERE k = $3"
                    ))
                    .await
                    .expect("prepare update");
                (Raw::Postgres { client, update }, table)
            }
        }
    }

    /// One transaction writing `writes`.
    async fn transaction(&self, writes: &[RawWrite]) {
        match self {
            Raw::Sqlite { conn, update } => {
                conn.prepare_cached("BEGIN")
                    .and_then(|mut s| s.execute([]))
                    .expect("BEGIN");
                let mut stmt = conn.prepare_cached(update).expect("prepare update");
                for (k, d, j) in writes {
                    let n = stmt.execute(rusqlite::params![d, j, k]).expect("UPDATE");
                    assert_eq!(n, 1, "raw UPDATE matched no row");
                }
                conn.prepare_cached("COMMIT")
                    .and_then(|mut s| s.execute([]))
                    .expect("COMMIT");
            }
            Raw::Postgres { client, update } => {
                client
                    .batch_execute(
                        "BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL lock_timeout = '200ms';",
                    )
                    .await
                    .expect("BEGIN");
                for (k, d, j) in writes {
                    let n = client.execute(update, &[d, j, k]).await.expect("UPDATE");
                    assert_eq!(n, 1, "raw UPDATE matched no row");
                }
                client.batch_execute("COMMIT").await.expect("COMMIT");
            }
        }
    }

    /// Rows of `table` whose `doc` or `j` differ from those of `other` (same keys).
    async fn differing(&self, table: &str, other: &str) -> i64 {
        match self {
            Raw::Sqlite { conn, .. } => conn
                .query_row(
                    &format!(
                        "SELECT count(*) FROM {table} a JOIN {other} b ON a.k = b.k
                         WHERE a.doc IS NOT b.doc OR json(a.j) IS NOT json(b.j)"
                    ),
                    [],
                    |r| r.get(0),
                )
                .expect("compare"),
            Raw::Postgres { client, .. } => client
                .query_one(
                    &format!(
                        "SELECT count(*) FROM {table} a JOIN {other} b ON a.k = b.k
                         WHERE a.doc IS DISTINCT FROM b.doc OR a.j IS DISTINCT FROM b.j"
                    ),
                    &[],
                )
                .await
                .expect("compare")
                .get(0),
        }
    }

    async fn table_of(&self, coll: &str) -> String {
        match self {
            Raw::Sqlite { conn, .. } => sqlite_table(conn, DB, coll),
            Raw::Postgres { client, .. } => pg_table(client, DB, coll).await,
        }
    }
}

/// The document `_id` after its `n`-th increment, as the raw side writes it.
fn raw_write(id: i64, n: i32) -> RawWrite {
    let mut doc = sample_doc(id);
    doc.insert("n", n);
    (
        encode_key(&Bson::Int64(id)),
        doc.to_vec().expect("encode BSON"),
        serde_json::to_string(&doc).expect("encode JSON"),
    )
}

async fn small_transactions(
    backend: &Backend,
    server: &Server,
    client: &mongodb::Client,
    docs: usize,
    txns: usize,
    rounds: usize,
) {
    let db = client.database(DB);
    for name in [WIRE_COLL, DRIVER_COLL, RAW_COLL] {
        common::load_sample_docs(&db.collection::<Document>(name), docs).await;
    }
    let face = replica_set_face(server.port).await;
    let mut wire = WireSession::open(server.port).await;
    let driver_coll = db.collection::<Document>(DRIVER_COLL);
    let mut driver_session = match face {
        Some(_) => Some(client.start_session().await.expect("start_session")),
        None => None,
    };
    let (raw, raw_table) = Raw::open(backend).await;
    let mut raw_counts = vec![0i32; docs];

    // [side][round]: the round's wall-clock time.
    let mut took: [Vec<Duration>; 3] = Default::default();
    for round in 0..rounds {
        let mut rng = Rng::new(0x7478_0000 + round as u64);
        let pairs: Vec<(i64, i64)> = (0..txns)
            .map(|_| {
                let a = rng.below(docs as u64) as i64;
                let b = (a + 1 + rng.below(docs as u64 - 1) as i64) % docs as i64;
                (a, b)
            })
            .collect();
        let writes: Vec<[RawWrite; 2]> = pairs
            .iter()
            .map(|&(a, b)| {
                let mut next = |id: i64| {
                    raw_counts[id as usize] += 1;
                    raw_write(id, raw_counts[id as usize])
                };
                [next(a), next(b)]
            })
            .collect();
        for step in 0..SIDES.len() {
            let side = (round + step) % SIDES.len();
            let started = Instant::now();
            match side {
                0 => {
                    for &(a, b) in &pairs {
                        if let Err(f) = wire.transaction(WIRE_COLL, &[a, b]).await {
                            panic!("wire transaction failed: {}", f.text);
                        }
                    }
                }
                1 => {
                    let Some(session) = driver_session.as_mut() else {
                        continue;
                    };
                    for &(a, b) in &pairs {
                        session
                            .start_transaction()
                            .await
                            .expect("start_transaction");
                        for id in [a, b] {
                            let r = driver_coll
                                .update_one(doc! { "_id": id }, doc! { "$inc": { "n": 1 } })
                                .session(&mut *session)
                                .await
                                .expect("update_one in a transaction");
                            assert_eq!(r.matched_count, 1);
                        }
                        session
                            .commit_transaction()
                            .await
                            .expect("commit_transaction");
                    }
                }
                _ => {
                    for w in &writes {
                        raw.transaction(w).await;
                    }
                }
            }
            took[side].push(started.elapsed());
        }
    }

    let per_tx = |d: Duration| d / txns as u32;
    let mean = |rs: &[Duration]| {
        if rs.is_empty() {
            Duration::ZERO
        } else {
            per_tx(rs.iter().sum::<Duration>() / rs.len() as u32)
        }
    };
    let best = |rs: &[Duration]| rs.iter().min().map(|d| per_tx(*d)).unwrap_or_default();
    let mut rows = Vec::new();
    for (side, label) in SIDES.iter().enumerate() {
        if took[side].is_empty() {
            rows.push(vec![
                format!("{label} (skipped: hello has no setName)"),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
            continue;
        }
        rows.push(vec![
            label.to_string(),
            ms3(mean(&took[side])),
            ms3(best(&took[side])),
            format!("{:.0}", 1.0 / mean(&took[side]).as_secs_f64()),
        ]);
    }
    for (label, side) in [("ratio a/c", 0), ("ratio a'/c", 1)] {
        if took[side].is_empty() {
            continue;
        }
        rows.push(vec![
            label.to_string(),
            ratio(mean(&took[side]), mean(&took[2])),
            ratio(best(&took[side]), best(&took[2])),
            String::new(),
        ]);
    }
    println!();
    println!(
        "backend: {} — {txns} transactions (start, 2 x update $inc, commit), {rounds} round(s){}",
        backend.name(),
        match &face {
            Some(name) => format!(", replica-set face {name:?}"),
            None => ", no replica-set face (driver side skipped)".into(),
        }
    );
    print_table(&["side", "ms/tx", "best ms/tx", "tx/s"], &rows);

    let wire_table = raw.table_of(WIRE_COLL).await;
    let mut same = vec![format!(
        "raw SQL vs docgate (wire): {} of {docs} documents differ in doc or j",
        raw.differing(&raw_table, &wire_table).await
    )];
    if driver_session.is_some() {
        let driver_table = raw.table_of(DRIVER_COLL).await;
        same.push(format!(
            "raw SQL vs docgate (driver): {} differ",
            raw.differing(&raw_table, &driver_table).await
        ));
    }
    println!("{}", same.join("; "));
}

// ---------------------------------------------------------------------------------------
// 2. Contention on one document.

#[derive(Default, Clone, Copy)]
struct Tally {
    commits: u64,
    conflicts: u64,
}

async fn contention(backend: &Backend, server: &Server, client: &mongodb::Client, seconds: usize) {
    let hot = client.database(DB).collection::<Document>(HOT_COLL);
    hot.drop().await.expect("drop");
    hot.insert_one(doc! { "_id": 0i64, "n": 0i64 })
        .await
        .expect("insert the hot document");
    let mut sessions = Vec::with_capacity(WRITERS);
    for _ in 0..WRITERS {
        sessions.push(WireSession::open(server.port).await);
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds as u64);
    let tasks: Vec<_> = sessions
        .into_iter()
        .map(|mut session| {
            tokio::spawn(async move {
                let mut tally = Tally::default();
                let mut other: Option<Failure> = None;
                while Instant::now() < deadline {
                    match session.transaction(HOT_COLL, &[0]).await {
                        Ok(()) => tally.commits += 1,
                        Err(f) if f.transient() => tally.conflicts += 1,
                        Err(f) => {
                            other = Some(f);
                            break;
                        }
                    }
                }
                (tally, other)
            })
        })
        .collect();
    let mut total = Tally::default();
    let mut codes = Vec::new();
    for task in tasks {
        let (tally, other) = task.await.expect("writer task");
        total.commits += tally.commits;
        total.conflicts += tally.conflicts;
        if let Some(f) = other {
            codes.push(format!("{} ({})", f.code, f.text));
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let counter = hot
        .find_one(doc! { "_id": 0i64 })
        .await
        .expect("read the hot document")
        .expect("the hot document")
        .get_i64("n")
        .expect("n");
    println!();
    println!(
        "backend: {} — {WRITERS} writers, each its own connection and session, $inc of one document for {seconds} s",
        backend.name()
    );
    print_table(
        &[
            "commits",
            "commits/s",
            "conflicts",
            "conflicts/s",
            "retries/commit",
            "counter",
        ],
        &[vec![
            total.commits.to_string(),
            format!("{:.0}", total.commits as f64 / elapsed),
            total.conflicts.to_string(),
            format!("{:.0}", total.conflicts as f64 / elapsed),
            if total.commits == 0 {
                "-".into()
            } else {
                format!("{:.2}", total.conflicts as f64 / total.commits as f64)
            },
            counter.to_string(),
        ]],
    );
    if !codes.is_empty() {
        println!(
            "writers stopped by a non-transient error: {}",
            codes.join("; ")
        );
    }
    assert_eq!(
        counter, total.commits as i64,
        "lost update: the counter is not the number of commits"
    );
}

// ---------------------------------------------------------------------------------------
// 3. A plain write while a transaction is open.

async fn plain_write_while_open(
    backend: &Backend,
    server: &Server,
    client: &mongodb::Client,
) -> Vec<Vec<String>> {
    let coll = client.database(DB).collection::<Document>(OPEN_COLL);
    common::load_sample_docs(&coll, 10).await;
    let mut plain = WireClient::connect_as(server.port, BENCH_USER, BENCH_PASSWORD).await;
    let name = backend.name().to_string();
    let mut rows = Vec::new();

    // No transaction open: the reference.
    let (said, took) = timed_plain_update(&mut plain, 2).await;
    rows.push(vec![
        name.clone(),
        "none open".into(),
        said,
        ms3(took),
        "-".into(),
    ]);

    // A transaction that has written document 1 and then sits idle.
    let mut idle = WireSession::open(server.port).await;
    idle.txn += 1;
    if let Err(f) = idle.inc(OPEN_COLL, 1, true).await {
        panic!("the open transaction's update failed: {}", f.text);
    }
    let (said, took) = timed_plain_update(&mut plain, 2).await;
    rows.push(vec![
        name.clone(),
        "idle after its write".into(),
        said,
        ms3(took),
        commit_outcome(idle.commit().await),
    ]);

    // A transaction that has written document 3 and keeps sending a `find` in it every
    // 100 ms until the plain update has answered.
    let mut busy = WireSession::open(server.port).await;
    busy.txn += 1;
    if let Err(f) = busy.inc(OPEN_COLL, 3, true).await {
        panic!("the busy transaction's update failed: {}", f.text);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let keeper = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut finds = 0u32;
            let mut failed = None;
            while !stop.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let mut body = doc! { "find": OPEN_COLL, "filter": { "_id": 3i64 }, "$db": DB };
                busy.fields(&mut body, false);
                match outcome(busy.client.reply(body).await) {
                    Ok(()) => finds += 1,
                    Err(f) => {
                        failed = Some(f.code);
                        break;
                    }
                }
            }
            (finds, failed, busy.commit().await)
        })
    };
    let (said, took) = timed_plain_update(&mut plain, 4).await;
    stop.store(true, Ordering::SeqCst);
    let (finds, failed, committed) = keeper.await.expect("keeper task");
    rows.push(vec![
        name.clone(),
        format!(
            "busy: a find every 100 ms ({finds} ok{})",
            failed
                .map(|c| format!(", then error {c}"))
                .unwrap_or_default()
        ),
        said,
        ms3(took),
        commit_outcome(committed),
    ]);

    let n = |id: i64| {
        let coll = coll.clone();
        async move {
            coll.find_one(doc! { "_id": id })
                .await
                .expect("find")
                .expect("document")
                .get_i32("n")
                .expect("n")
        }
    };
    println!();
    println!(
        "backend: {name} — afterwards n = {} (idle transaction's document), {} (plain updates'), {} (busy transaction's), {} (plain update during the busy one)",
        n(1).await,
        n(2).await,
        n(3).await,
        n(4).await
    );
    rows
}

fn commit_outcome(result: Result<(), Failure>) -> String {
    match result {
        Ok(()) => "committed".to_string(),
        Err(f) => format!("error {} [{}]", f.code, f.labels.join(", ")),
    }
}

/// A plain `update` of `_id` `id`: its outcome (`ok` or the error code and name) and time.
async fn timed_plain_update(client: &mut WireClient, id: i64) -> (String, Duration) {
    let started = Instant::now();
    let reply = client.reply(inc_command(OPEN_COLL, id)).await;
    let took = started.elapsed();
    let said = match outcome(reply) {
        Ok(()) => "ok".to_string(),
        Err(f) => format!(
            "error {} {}",
            f.code,
            reply
                .get_str("codeName")
                .ok()
                .map(str::to_owned)
                .or_else(|| {
                    reply
                        .get_array("writeErrors")
                        .ok()
                        .and_then(|a| a.into_iter().next())
                        .and_then(|e| e.ok())
                        .and_then(|e| e.as_document().and_then(|d| d.get_str("errmsg").ok()))
                        .map(str::to_owned)
                })
                .unwrap_or_default()
        ),
    };
    (said, took)
}

/// Milliseconds with three decimals.
fn ms3(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}
