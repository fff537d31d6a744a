//! Bulk writes: wall-clock seconds to insert, update and delete `DOCGATE_BENCH_BULK_DOCS`
//! (100,000) documents of ~200 bytes, docgate over the wire against the same rows written
//! with plain SQL on the same backend, interleaved phase by phase in one run:
//!
//! - insert: the driver's `insert_many` (it cuts the batches by the server's
//!   `maxWriteBatchSize`/`maxMessageSizeBytes`) vs, in one transaction, encoding each row
//!   (`_id` key with `docgate::query::encode_key`, BSON, JSON text with serde_json) and
//!   multi-row `INSERT INTO t (k, doc, j) VALUES …` (SQLite: 256 rows a statement, `jsonb(?)`;
//!   PostgreSQL: 1,000 rows a statement, `$n::text::jsonb`);
//! - update: `update_many({}, {$inc: {n: 1}})` vs, in one transaction, reading every
//!   `(k, doc)`, incrementing `n` in Rust and writing doc and JSON back by key (SQLite: one
//!   prepared `UPDATE … WHERE k = ?` per row; PostgreSQL: `UPDATE … FROM unnest(…) WHERE
//!   t.k = u.k`, 1,000 rows a statement);
//! - delete: `delete_many({})` vs deleting the known keys (SQLite: one prepared
//!   `DELETE … WHERE k = ?` per row in one transaction; PostgreSQL: `DELETE … WHERE k =
//!   ANY($1)`, 1,000 keys a statement, in one transaction).
//!
//! The SQL side writes a collection created through docgate (same table, same indexes) next
//! to docgate's own; every round uses fresh collections and alternates which side goes
//! first. Printed per backend and phase: seconds per side (mean over `DOCGATE_BENCH_ROUNDS`,
//! default 2), documents per second, and the ratio docgate/SQL (1.00x = as fast as plain
//! SQL). The DESIGN.md target compares insert and updateMany; nothing is asserted.
//!
//! Run: `cargo bench --bench bulk_writes` (`DOCGATE_BENCH_PG=0` for SQLite only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use bson::{doc, Document};
use common::{
    backends, connect_pg, env_usize, open_sqlite, pg_table, print_table, ratio, sample_doc,
    sqlite_table, Backend, Server,
};
use docgate::query::encode_key;
use rusqlite::types::ToSql;

const DB: &str = "bench";
const SQLITE_INSERT_ROWS: usize = 256;
const PG_CHUNK: usize = 1000;

#[derive(Clone, Copy)]
enum Phase {
    Insert,
    Update,
    Delete,
}

const PHASES: [(Phase, &str); 3] = [
    (Phase::Insert, "insert_many"),
    (Phase::Update, "update_many $inc"),
    (Phase::Delete, "delete_many"),
];

/// The plain-SQL side: a connection on the same database.
enum Raw {
    Sqlite(rusqlite::Connection),
    Postgres(tokio_postgres::Client),
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n = env_usize("DOCGATE_BENCH_BULK_DOCS", 100_000);
    let rounds = env_usize("DOCGATE_BENCH_ROUNDS", 2).max(1);
    let dir = tempfile::Builder::new()
        .prefix("docgate-bench-bulk-")
        .tempdir()
        .expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!("bulk_writes: {n} documents, {rounds} round(s), docgate (driver) vs plain SQL");
    let docs: Vec<Document> = (0..n as i64).map(sample_doc).collect();
    for backend in &backends {
        run(backend, dir.path(), &docs, rounds).await;
    }
}

async fn run(backend: &Backend, dir: &std::path::Path, docs: &[Document], rounds: usize) {
    let server = Server::start(backend, dir, &[]);
    let client = server.client().await;
    let db = client.database(DB);
    let mut raw = match backend {
        Backend::Sqlite { .. } => Raw::Sqlite(open_sqlite(&backend.sqlite_file())),
        Backend::Postgres { url } => Raw::Postgres(connect_pg(url).await),
    };
    // [phase][side]: 0 = docgate, 1 = SQL.
    let mut totals = [[Duration::ZERO; 2]; 3];
    for round in 0..rounds {
        let wire_name = format!("wire_{round}");
        let sql_name = format!("sql_{round}");
        for name in [&wire_name, &sql_name] {
            db.collection::<Document>(name).drop().await.expect("drop");
            db.create_collection(name).await.expect("create");
        }
        let wire = db.collection::<Document>(&wire_name);
        let table = match &raw {
            Raw::Sqlite(conn) => sqlite_table(conn, DB, &sql_name),
            Raw::Postgres(client) => pg_table(client, DB, &sql_name).await,
        };
        for (p, (phase, _)) in PHASES.iter().enumerate() {
            for step in 0..2 {
                let side = (round + step) % 2;
                let took = if side == 0 {
                    docgate_phase(&wire, *phase, docs).await
                } else {
                    sql_phase(&mut raw, &table, *phase, docs).await
                };
                totals[p][side] += took;
            }
        }
        for name in [&wire_name, &sql_name] {
            db.collection::<Document>(name).drop().await.expect("drop");
        }
    }

    let n = docs.len() as f64;
    let mut rows = Vec::new();
    for (p, (_, label)) in PHASES.iter().enumerate() {
        let [wire, sql] = totals[p].map(|t| t / rounds as u32);
        rows.push(vec![
            label.to_string(),
            format!("{:.3}", wire.as_secs_f64()),
            format!("{:.3}", sql.as_secs_f64()),
            format!("{:.0}", n / wire.as_secs_f64()),
            format!("{:.0}", n / sql.as_secs_f64()),
            ratio(wire, sql),
        ]);
    }
    println!();
    println!("backend: {}", backend.name());
    print_table(
        &[
            "phase",
            "docgate s",
            "SQL s",
            "docgate docs/s",
            "SQL docs/s",
            "docgate/SQL",
        ],
        &rows,
    );
    client.shutdown().await;
    drop(server);
}

/// Runs one phase through the driver; returns its wall-clock time.
async fn docgate_phase(
    coll: &mongodb::Collection<Document>,
    phase: Phase,
    docs: &[Document],
) -> Duration {
    let n = docs.len() as u64;
    match phase {
        Phase::Insert => {
            let batch = docs.to_vec();
            let started = Instant::now();
            let result = coll.insert_many(batch).await.expect("insert_many");
            let took = started.elapsed();
            assert_eq!(result.inserted_ids.len() as u64, n);
            took
        }
        Phase::Update => {
            let started = Instant::now();
            let result = coll
                .update_many(doc! {}, doc! { "$inc": { "n": 1 } })
                .await
                .expect("update_many");
            let took = started.elapsed();
            assert_eq!(result.modified_count, n);
            took
        }
        Phase::Delete => {
            let started = Instant::now();
            let result = coll.delete_many(doc! {}).await.expect("delete_many");
            let took = started.elapsed();
            assert_eq!(result.deleted_count, n);
            took
        }
    }
}

/// One row as plain SQL writes it: key, BSON, JSON text.
fn encode_row(doc: &Document) -> (Vec<u8>, Vec<u8>, String) {
    let key = encode_key(doc.get("_id").expect("_id"));
    let bson = doc.to_vec().expect("encode BSON");
    let json = serde_json::to_string(doc).expect("encode JSON");
    (key, bson, json)
}

/// The document with `n` incremented, as BSON and JSON.
fn incremented(bytes: &[u8]) -> (Vec<u8>, String) {
    let mut doc = Document::from_reader(bytes).expect("stored BSON");
    let n = doc.get_i32("n").expect("n");
    doc.insert("n", n + 1);
    (
        doc.to_vec().expect("encode BSON"),
        serde_json::to_string(&doc).expect("encode JSON"),
    )
}

/// Runs one phase with plain SQL; returns its wall-clock time.
async fn sql_phase(raw: &mut Raw, table: &str, phase: Phase, docs: &[Document]) -> Duration {
    let started = Instant::now();
    let written = match raw {
        Raw::Sqlite(conn) => sqlite_phase(conn, table, phase, docs),
        Raw::Postgres(client) => pg_phase(client, table, phase, docs).await,
    };
    let took = started.elapsed();
    assert_eq!(written, docs.len() as u64, "SQL side wrote too few rows");
    took
}

fn sqlite_phase(
    conn: &mut rusqlite::Connection,
    table: &str,
    phase: Phase,
    docs: &[Document],
) -> u64 {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .expect("begin");
    let mut written = 0u64;
    match phase {
        Phase::Insert => {
            let rows: Vec<_> = docs.iter().map(encode_row).collect();
            for chunk in rows.chunks(SQLITE_INSERT_ROWS) {
                let mut sql = format!("INSERT INTO {table} (k, doc, j) VALUES ");
                for i in 0..chunk.len() {
                    sql.push_str(if i == 0 {
                        "(?, ?, jsonb(?))"
                    } else {
                        ", (?, ?, jsonb(?))"
                    });
                }
                let mut params: Vec<&dyn ToSql> = Vec::with_capacity(chunk.len() * 3);
                for (k, d, j) in chunk {
                    params.push(k);
                    params.push(d);
                    params.push(j);
                }
                let mut stmt = tx.prepare_cached(&sql).expect("prepare insert");
                written += stmt.execute(params.as_slice()).expect("insert") as u64;
            }
        }
        Phase::Update => {
            let current: Vec<(Vec<u8>, Vec<u8>)> = {
                let mut stmt = tx
                    .prepare_cached(&format!("SELECT k, doc FROM {table}"))
                    .expect("prepare select");
                let rows = stmt
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                    .expect("select");
                rows.collect::<Result<_, _>>().expect("rows")
            };
            let mut stmt = tx
                .prepare_cached(&format!(
                    "UPDATE {table} SET doc = ?1, j = jsonb(?2) WHERE k = ?3"
                ))
                .expect("prepare update");
            for (k, d) in &current {
                let (bson, json) = incremented(d);
                written += stmt
                    .execute(rusqlite::params![bson, json, k])
                    .expect("update") as u64;
            }
        }
        Phase::Delete => {
            let mut stmt = tx
                .prepare_cached(&format!("DELETE FROM {table} WHERE k = ?1"))
                .expect("prepare delete");
            for doc in docs {
                let key = encode_key(doc.get("_id").expect("_id"));
                written += stmt.execute([key]).expect("delete") as u64;
            }
        }
    }
    tx.commit().expect("commit");
    written
}

async fn pg_phase(
    client: &mut tokio_postgres::Client,
    table: &str,
    phase: Phase,
    docs: &[Document],
) -> u64 {
    use tokio_postgres::types::ToSql as PgToSql;
    let tx = client.transaction().await.expect("begin");
    let mut written = 0u64;
    match phase {
        Phase::Insert => {
            let rows: Vec<_> = docs.iter().map(encode_row).collect();
            let mut prepared: Option<(usize, tokio_postgres::Statement)> = None;
            for chunk in rows.chunks(PG_CHUNK) {
                let stmt = match &prepared {
                    Some((len, stmt)) if *len == chunk.len() => stmt.clone(),
                    _ => {
                        let mut sql = format!("INSERT INTO {table} (k, doc, j) VALUES ");
                        for i in 0..chunk.len() {
                            if i > 0 {
                                sql.push_str(", ");
                            }
                            let b = i * 3;
                            sql.push_str(&format!(
                                "(${}, ${}, ${}::text::jsonb)",
                                b + 1,
                                b + 2,
                                b + 3
                            ));
                        }
                        let stmt = tx.prepare(&sql).await.expect("prepare insert");
                        prepared = Some((chunk.len(), stmt.clone()));
                        stmt
                    }
                };
                let mut params: Vec<&(dyn PgToSql + Sync)> = Vec::with_capacity(chunk.len() * 3);
                for (k, d, j) in chunk {
                    params.push(k);
                    params.push(d);
                    params.push(j);
                }
                written += tx.execute(&stmt, &params).await.expect("insert");
            }
        }
        Phase::Update => {
            let current = tx
                .query(&format!("SELECT k, doc FROM {table}"), &[])
                .await
                .expect("select");
            let stmt = tx
                .prepare(&format!(
                    "UPDATE {table} AS t SET doc = u.d, j = u.j::jsonb
                     FROM unnest($1::bytea[], $2::bytea[], $3::text[]) AS u(k, d, j)
                     WHERE t.k = u.k"
                ))
                .await
                .expect("prepare update");
            for chunk in current.chunks(PG_CHUNK) {
                let mut keys = Vec::with_capacity(chunk.len());
                let mut bodies = Vec::with_capacity(chunk.len());
                let mut images = Vec::with_capacity(chunk.len());
                for row in chunk {
                    let (bson, json) = incremented(row.get::<_, &[u8]>(1));
                    keys.push(row.get::<_, Vec<u8>>(0));
                    bodies.push(bson);
                    images.push(json);
                }
                written += tx
                    .execute(&stmt, &[&keys, &bodies, &images])
                    .await
                    .expect("update");
            }
        }
        Phase::Delete => {
            let stmt = tx
                .prepare(&format!("DELETE FROM {table} WHERE k = ANY($1::bytea[])"))
                .await
                .expect("prepare delete");
            for chunk in docs.chunks(PG_CHUNK) {
                let keys: Vec<Vec<u8>> = chunk
                    .iter()
                    .map(|d| encode_key(d.get("_id").expect("_id")))
                    .collect();
                written += tx.execute(&stmt, &[&keys]).await.expect("delete");
            }
        }
    }
    tx.commit().await.expect("commit");
    written
}
