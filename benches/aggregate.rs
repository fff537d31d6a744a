//! Aggregation (issue 17): five pipelines over `DOCGATE_BENCH_DOCS` (1,000,000) documents,
//! docgate through the `mongodb` driver against the same question written by hand in SQL on
//! docgate's own tables, side by side, with docgate's peak RSS.
//!
//! The collection is `common::sample_doc` (~200 bytes: `age` = i % 90, `score`, `active`,
//! `address.city` of 100 cities), loaded through docgate in batches of 10,000 with progress,
//! with docgate indexes on `age` and `score`; a second collection `cities` holds the 100
//! cities. The hand-written SQL gets the expression indexes a person would create for it. The
//! server is restarted on the loaded data, so its peak RSS (`VmHWM`) covers the queries only.
//! Each round runs every case on both sides in rotating order, `DOCGATE_BENCH_ROUNDS` (3)
//! rounds:
//!
//! 1. `$match {active: true}` + `$group` by `address.city` with `$sum` of `score` and a count;
//! 2. `$match {age: 42}` + `$lookup` of its city (`localField`/`foreignField`);
//! 3. `$sort {score: -1}` + `$limit 10` (served by the `score` index);
//! 4. `$match {age: 42}` + `$setWindowFields` running `$sum` of `score` in `_id` order;
//! 5. `$match {age: {$lt: 9}}` (a tenth) + `$project` of `score` and `address.city` (the SQL
//!    side reads the image's fields: what a `$project` pushed into SQL would cost).
//!
//! Printed per backend and case: mean and best milliseconds of each side, the ratio
//! docgate / SQL, and the rows each returned (which must agree). A case docgate refuses
//! prints its error instead. Run: `cargo bench --bench aggregate` (`DOCGATE_BENCH_PG=0` for
//! SQLite only, `DOCGATE_BENCH_DOCS=100000` for a quick run).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use bson::{doc, Document};
use common::{
    backends, connect_pg, env_usize, load_with_progress, ms, open_sqlite, pg_table, print_table,
    proc_status_kib, ratio, sqlite_table, Backend, Server,
};
use futures_util::TryStreamExt;

const DB: &str = "bench";
const COLL: &str = "people";
const CITIES: &str = "cities";
const LOAD_BATCH: usize = 10_000;

/// One benchmark case: its label, the pipeline, and the SQL for each backend (`{t}` is the
/// people table, `{c}` the cities table).
struct Case {
    label: &'static str,
    pipeline: Vec<Document>,
    sqlite: &'static str,
    postgres: &'static str,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            label: "$match+$group $sum",
            pipeline: vec![
                doc! {"$match": {"active": true}},
                doc! {"$group": {"_id": "$address.city", "total": {"$sum": "$score"}, "n": {"$sum": 1}}},
            ],
            sqlite: "SELECT j->>'$.address.city', SUM(j->>'$.score'), COUNT(*) FROM {t} \
                     WHERE j->>'$.active' = 1 GROUP BY 1",
            postgres: "SELECT j#>>'{address,city}', SUM((j->>'score')::float8), COUNT(*) FROM {t} \
                       WHERE j->'active' = 'true'::jsonb GROUP BY 1",
        },
        Case {
            label: "$match+$lookup",
            pipeline: vec![
                doc! {"$match": {"age": 42}},
                doc! {"$lookup": {"from": CITIES, "localField": "address.city", "foreignField": "_id", "as": "city"}},
            ],
            sqlite: "SELECT p.doc, c.doc FROM {t} p LEFT JOIN {c} c \
                     ON c.j->>'$._id' = p.j->>'$.address.city' WHERE p.j->>'$.age' = 42",
            postgres: "SELECT p.doc, c.doc FROM {t} p LEFT JOIN {c} c \
                       ON c.j->>'_id' = p.j#>>'{address,city}' WHERE (p.j->>'age')::int = 42",
        },
        Case {
            label: "$sort+$limit (indexed)",
            pipeline: vec![doc! {"$sort": {"score": -1}}, doc! {"$limit": 10}],
            sqlite: "SELECT doc FROM {t} ORDER BY j->>'$.score' DESC LIMIT 10",
            postgres: "SELECT doc FROM {t} ORDER BY (j->>'score')::float8 DESC LIMIT 10",
        },
        Case {
            label: "$setWindowFields running $sum",
            pipeline: vec![
                doc! {"$match": {"age": 42}},
                doc! {"$setWindowFields": {"sortBy": {"_id": 1}, "output": {"running": {"$sum": "$score", "window": {"documents": ["unbounded", "current"]}}}}},
            ],
            sqlite: "SELECT doc, SUM(j->>'$.score') OVER (ORDER BY k ROWS UNBOUNDED PRECEDING) \
                     FROM {t} WHERE j->>'$.age' = 42",
            postgres:
                "SELECT doc, SUM((j->>'score')::float8) OVER (ORDER BY k ROWS UNBOUNDED PRECEDING) \
                       FROM {t} WHERE (j->>'age')::int = 42",
        },
        Case {
            label: "$match+$project two fields",
            pipeline: vec![
                doc! {"$match": {"age": {"$lt": 9}}},
                doc! {"$project": {"score": 1, "address.city": 1}},
            ],
            sqlite: "SELECT j->>'$._id', j->>'$.score', j->>'$.address.city' FROM {t} \
                     WHERE j->>'$.age' < 9",
            postgres: "SELECT j->'_id', j->'score', j#>'{address,city}' FROM {t} \
                       WHERE (j->>'age')::int < 9",
        },
    ]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let docs = env_usize("DOCGATE_BENCH_DOCS", 1_000_000);
    let rounds = env_usize("DOCGATE_BENCH_ROUNDS", 3).max(1);
    let dir = tempfile::Builder::new()
        .prefix("docgate-bench-aggregate-")
        .tempdir()
        .expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!(
        "aggregate: {} pipelines over {docs} documents of ~200 bytes, {rounds} round(s)",
        cases().len()
    );
    for backend in &backends {
        run(backend, dir.path(), docs, rounds).await;
    }
}

/// What one side of one case returned, and how long it took.
struct Timed {
    elapsed: Duration,
    rows: Result<usize, String>,
}

async fn run(backend: &Backend, dir: &Path, docs: usize, rounds: usize) {
    load(backend, dir, docs).await;
    let server = Server::start(backend, dir, &[]);
    let client = server.client().await;
    let coll = client.database(DB).collection::<Document>(COLL);
    let sql = HandSql::open(backend).await;
    let cases = cases();
    let mut timings: Vec<[Vec<Timed>; 2]> = cases.iter().map(|_| Default::default()).collect();
    for round in 0..rounds {
        for (index, case) in cases.iter().enumerate() {
            for step in 0..2 {
                let side = (round + step) % 2;
                let started = Instant::now();
                let rows = match side {
                    0 => match coll.aggregate(case.pipeline.clone()).await {
                        Ok(cursor) => cursor
                            .try_collect::<Vec<Document>>()
                            .await
                            .map(|docs| docs.len())
                            .map_err(|e| e.to_string()),
                        Err(e) => Err(e.to_string()),
                    },
                    _ => Ok(sql.rows(case).await),
                };
                timings[index][side].push(Timed {
                    elapsed: started.elapsed(),
                    rows,
                });
            }
        }
    }
    let peak = proc_status_kib(server.pid(), "VmHWM:");
    let mean = |ts: &[Timed]| ts.iter().map(|t| t.elapsed).sum::<Duration>() / ts.len() as u32;
    let best = |ts: &[Timed]| ts.iter().map(|t| t.elapsed).min().unwrap_or_default();
    let mut rows = Vec::new();
    for (case, [docgate, hand]) in cases.iter().zip(&timings) {
        let sql_rows = hand[0].rows.clone().unwrap_or_default();
        match &docgate[0].rows {
            Ok(n) => {
                assert_eq!(*n, sql_rows, "{}: docgate and SQL disagree", case.label);
                rows.push(vec![
                    case.label.to_string(),
                    ms(mean(docgate)),
                    ms(best(docgate)),
                    ms(mean(hand)),
                    ms(best(hand)),
                    ratio(mean(docgate), mean(hand)),
                    n.to_string(),
                ]);
            }
            Err(error) => rows.push(vec![
                case.label.to_string(),
                format!(
                    "refused ({})",
                    error
                        .split("Error code ")
                        .nth(1)
                        .and_then(|rest| rest.split(' ').next())
                        .unwrap_or("?")
                ),
                String::new(),
                ms(mean(hand)),
                ms(best(hand)),
                String::new(),
                sql_rows.to_string(),
            ]),
        }
    }
    println!();
    println!("backend: {}", backend.name());
    print_table(
        &[
            "case",
            "docgate ms",
            "best",
            "SQL ms",
            "best",
            "docgate/SQL",
            "rows",
        ],
        &rows,
    );
    println!(
        "docgate peak RSS (VmHWM) over the queries: {} MB",
        peak / 1024
    );
    client.shutdown().await;
    drop(server);
}

/// Loads the people and cities through a server of its own (progress printed), with the
/// indexes, then gives the hand-written SQL its expression indexes.
async fn load(backend: &Backend, dir: &Path, docs: usize) {
    let server = Server::start(backend, dir, &[]);
    let client = server.client().await;
    let db = client.database(DB);
    let coll = db.collection::<Document>(COLL);
    let started = Instant::now();
    load_with_progress(&coll, docs, LOAD_BATCH, backend.name()).await;
    for key in [doc! {"age": 1}, doc! {"score": -1}] {
        coll.create_index(mongodb::IndexModel::builder().keys(key).build())
            .await
            .expect("index");
    }
    let cities = db.collection::<Document>(CITIES);
    cities.drop().await.expect("drop");
    let city_docs: Vec<Document> = (0..100)
        .map(|i| doc! {"_id": format!("city-{i}"), "region": i % 7})
        .collect();
    cities.insert_many(city_docs).await.expect("cities");
    println!(
        "{}: loaded {docs} documents and built 2 indexes in {:.1} s",
        backend.name(),
        started.elapsed().as_secs_f64()
    );
    client.shutdown().await;
    drop(server);
    HandSql::open(backend).await.create_indexes().await;
}

/// The hand-written side: a connection to docgate's database and its table names.
enum HandSql {
    Sqlite {
        conn: rusqlite::Connection,
        people: String,
        cities: String,
    },
    Postgres {
        client: tokio_postgres::Client,
        people: String,
        cities: String,
    },
}

impl HandSql {
    async fn open(backend: &Backend) -> HandSql {
        match backend {
            Backend::Sqlite { .. } => {
                let conn = open_sqlite(&backend.sqlite_file());
                let people = sqlite_table(&conn, DB, COLL);
                let cities = sqlite_table(&conn, DB, CITIES);
                HandSql::Sqlite {
                    conn,
                    people,
                    cities,
                }
            }
            Backend::Postgres { url } => {
                let client = connect_pg(url).await;
                let people = pg_table(&client, DB, COLL).await;
                let cities = pg_table(&client, DB, CITIES).await;
                HandSql::Postgres {
                    client,
                    people,
                    cities,
                }
            }
        }
    }

    /// The expression indexes a person writing this SQL would create.
    async fn create_indexes(&self) {
        match self {
            HandSql::Sqlite { conn, people, .. } => conn
                .execute_batch(&format!(
                    "CREATE INDEX IF NOT EXISTS bench_age ON {people} (j->>'$.age');
                     CREATE INDEX IF NOT EXISTS bench_score ON {people} (j->>'$.score');
                     ANALYZE;"
                ))
                .expect("SQLite expression indexes"),
            HandSql::Postgres { client, people, .. } => client
                .batch_execute(&format!(
                    "CREATE INDEX IF NOT EXISTS bench_age ON {people} (((j->>'age')::int));
                     CREATE INDEX IF NOT EXISTS bench_score ON {people} (((j->>'score')::float8));
                     ANALYZE;"
                ))
                .await
                .expect("PostgreSQL expression indexes"),
        }
    }

    /// Runs a case's SQL to the last row; the number of rows.
    async fn rows(&self, case: &Case) -> usize {
        match self {
            HandSql::Sqlite {
                conn,
                people,
                cities,
            } => {
                let text = case.sqlite.replace("{t}", people).replace("{c}", cities);
                let mut statement = conn.prepare_cached(&text).expect("prepare");
                let columns = statement.column_count();
                let mut rows = statement.query([]).expect("query");
                let mut count = 0;
                while let Some(row) = rows.next().expect("row") {
                    for column in 0..columns {
                        let _: rusqlite::types::Value = row.get(column).expect("column");
                    }
                    count += 1;
                }
                count
            }
            HandSql::Postgres {
                client,
                people,
                cities,
            } => {
                let text = case.postgres.replace("{t}", people).replace("{c}", cities);
                client.query(&text, &[]).await.expect("query").len()
            }
        }
    }
}
