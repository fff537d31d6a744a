//! Text search: `$text` over `DOCGATE_BENCH_TEXT_DOCS` (1,000,000) short documents
//! `{_id: i, title: "<5 words>"}` (words drawn from a vocabulary of 20,000 made-up words, so a
//! word is in ~250 documents) vs the same search written by hand in raw SQL on the backend's
//! own engine, SQLite and PostgreSQL side by side.
//!
//! The collection is loaded through docgate with a text index on `title` (created first, so
//! the load also measures keeping it: printed). The raw-SQL side is what a SQL user would
//! build over docgate's own table: on SQLite an FTS5 table (`unicode61`, `porter`) over
//! `j->>'$.title'` filled with one `INSERT … SELECT`, on PostgreSQL a GIN expression index on
//! `to_tsvector('english', j->>'title')`. The words are letters that both stemmers leave
//! alone, so both sides find the same documents (checked every time).
//!
//! Cases, each `DOCGATE_BENCH_TEXT_QUERIES` (200) times (+20 warm-up) per side, sides
//! alternating which goes first, random words:
//! - one word: `find({$text: {$search: w}})`, all matches (~250 documents);
//! - three words ORed: `find({$text: {$search: "w1 w2 w3"}})` (~750);
//! - top 10 by score: `find({$text: …}, {score: {$meta: "textScore"}}).sort({score: {$meta:
//!   "textScore"}}).limit(10)` vs `ORDER BY bm25(…)` / `ts_rank(…) DESC LIMIT 10` (the orders
//!   differ: docgate computes MongoDB's score; only the count is compared).
//!
//! Printed per backend and case: p50 and mean in microseconds for docgate (over the wire,
//! the Rust driver) and for raw SQL (in process: rusqlite / tokio-postgres), and docgate/SQL.
//! Nothing is asserted about speed.
//!
//! Run: `cargo bench --bench text_search` (`DOCGATE_BENCH_PG=0` for SQLite only;
//! `DOCGATE_BENCH_TEXT_DOCS=100000` for a quicker run).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use bson::{doc, Document};
use common::{
    backends, connect_pg, env_usize, open_sqlite, pg_table, print_table, ratio, sqlite_table,
    summarize, us, Backend, Rng, Server,
};
use futures_util::TryStreamExt;

const DB: &str = "bench";
const COLL: &str = "posts";
const VOCABULARY: u64 = 20_000;
const WORDS_PER_DOC: u64 = 5;
const BATCH: usize = 10_000;
const WARMUP: usize = 20;
const CASES: [&str; 3] = ["one word", "three words ORed", "top 10 by score"];

/// Word `n` of the vocabulary: three consonant-vowel syllables, vowels a/o/u (no stemmer
/// changes such words).
fn word(n: u64) -> String {
    const CONSONANTS: &[u8] = b"bcdfghjklmnprstvzx";
    const VOWELS: &[u8] = b"aou";
    let syllables = (CONSONANTS.len() * VOWELS.len()) as u64;
    let mut out = String::new();
    let mut rest = n;
    for _ in 0..3 {
        let s = (rest % syllables) as usize;
        rest /= syllables;
        out.push(CONSONANTS[s / VOWELS.len()] as char);
        out.push(VOWELS[s % VOWELS.len()] as char);
    }
    out
}

fn title(rng: &mut Rng) -> String {
    (0..WORDS_PER_DOC)
        .map(|_| word(rng.below(VOCABULARY)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let docs = env_usize("DOCGATE_BENCH_TEXT_DOCS", 1_000_000);
    let queries = env_usize("DOCGATE_BENCH_TEXT_QUERIES", 200).max(1);
    let dir = tempfile::Builder::new()
        .prefix("docgate-bench-text-")
        .tempdir()
        .expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!(
        "text_search: $text over {docs} documents of {WORDS_PER_DOC} words \
         ({VOCABULARY} distinct), {queries} queries per case and side"
    );
    for backend in &backends {
        run(backend, dir.path(), docs, queries).await;
    }
}

async fn run(backend: &Backend, dir: &Path, docs: usize, queries: usize) {
    let server = Server::start(backend, dir, &[]);
    let client = server.client().await;
    let coll = client.database(DB).collection::<Document>(COLL);
    coll.drop().await.expect("drop");
    coll.create_index(
        mongodb::IndexModel::builder()
            .keys(doc! {"title": "text"})
            .build(),
    )
    .await
    .expect("text index");
    let started = Instant::now();
    let mut rng = Rng::new(42);
    for start in (0..docs).step_by(BATCH) {
        let end = (start + BATCH).min(docs);
        let batch: Vec<Document> = (start..end)
            .map(|i| doc! {"_id": i as i64, "title": title(&mut rng)})
            .collect();
        coll.insert_many(batch).await.expect("load");
        eprint!("\r{}: loaded {end} of {docs}", backend.name());
    }
    eprintln!();
    let load = started.elapsed();
    let sql = HandSql::open(backend).await;
    let built = Instant::now();
    sql.build_index().await;
    println!(
        "{}: loaded {docs} documents with the text index in {:.1} s; the hand-written \
         full-text index over them built in {:.1} s",
        backend.name(),
        load.as_secs_f64(),
        built.elapsed().as_secs_f64()
    );
    let mut times: Vec<[Vec<Duration>; 2]> = CASES.iter().map(|_| Default::default()).collect();
    let mut rng = Rng::new(7);
    for round in 0..queries + WARMUP {
        for (case, timing) in times.iter_mut().enumerate() {
            let words: Vec<String> = (0..if case == 1 { 3 } else { 1 })
                .map(|_| word(rng.below(VOCABULARY)))
                .collect();
            let mut counts = [0usize; 2];
            for step in 0..2 {
                let side = (round + step) % 2;
                let begun = Instant::now();
                counts[side] = match side {
                    0 => docgate_search(&coll, case, &words).await,
                    _ => sql.search(case, &words).await,
                };
                if round >= WARMUP {
                    timing[side].push(begun.elapsed());
                }
            }
            assert_eq!(
                counts[0], counts[1],
                "{}: docgate and SQL disagree",
                CASES[case]
            );
        }
    }
    let rows: Vec<Vec<String>> = CASES
        .iter()
        .zip(&times)
        .map(|(case, [docgate, hand])| {
            let (d, h) = (summarize(docgate), summarize(hand));
            vec![
                case.to_string(),
                us(d.p50),
                us(d.mean),
                us(h.p50),
                us(h.mean),
                ratio(d.mean, h.mean),
            ]
        })
        .collect();
    println!();
    println!("backend: {}", backend.name());
    print_table(
        &[
            "case",
            "docgate p50 us",
            "mean",
            "SQL p50 us",
            "mean",
            "docgate/SQL",
        ],
        &rows,
    );
    client.shutdown().await;
    drop(server);
}

/// docgate's answer over the wire: the number of documents.
async fn docgate_search(
    coll: &mongodb::Collection<Document>,
    case: usize,
    words: &[String],
) -> usize {
    let filter = doc! {"$text": {"$search": words.join(" ")}};
    let cursor = match case {
        2 => coll
            .find(filter)
            .projection(doc! {"score": {"$meta": "textScore"}})
            .sort(doc! {"score": {"$meta": "textScore"}})
            .limit(10)
            .await
            .expect("find"),
        _ => coll.find(filter).await.expect("find"),
    };
    cursor
        .try_collect::<Vec<Document>>()
        .await
        .expect("documents")
        .len()
}

/// The hand-written side: a connection to docgate's database and its table.
enum HandSql {
    Sqlite {
        conn: rusqlite::Connection,
        table: String,
    },
    Postgres {
        client: tokio_postgres::Client,
        table: String,
    },
}

impl HandSql {
    async fn open(backend: &Backend) -> HandSql {
        match backend {
            Backend::Sqlite { .. } => {
                let conn = open_sqlite(&backend.sqlite_file());
                let table = sqlite_table(&conn, DB, COLL);
                HandSql::Sqlite { conn, table }
            }
            Backend::Postgres { url } => {
                let client = connect_pg(url).await;
                let table = pg_table(&client, DB, COLL).await;
                HandSql::Postgres { client, table }
            }
        }
    }

    /// The full-text index a SQL user would build over the titles.
    async fn build_index(&self) {
        match self {
            HandSql::Sqlite { conn, table } => conn
                .execute_batch(&format!(
                    "DROP TABLE IF EXISTS bench_fts;
                     CREATE VIRTUAL TABLE bench_fts USING fts5(title, content='',
                         tokenize='porter unicode61');
                     INSERT INTO bench_fts (rowid, title) SELECT rowid, j->>'$.title' FROM {table};"
                ))
                .expect("FTS5 table"),
            HandSql::Postgres { client, table } => client
                .batch_execute(&format!(
                    "CREATE INDEX IF NOT EXISTS bench_fts ON {table}
                         USING gin (to_tsvector('english', j->>'title'));
                     ANALYZE {table};"
                ))
                .await
                .expect("GIN index"),
        }
    }

    /// The same search in SQL: the number of rows.
    async fn search(&self, case: usize, words: &[String]) -> usize {
        match self {
            HandSql::Sqlite { conn, table } => {
                let query = words.join(" OR ");
                let text = match case {
                    2 => format!(
                        "SELECT doc FROM {table} JOIN (SELECT rowid AS r, bm25(bench_fts) AS s
                             FROM bench_fts WHERE bench_fts MATCH ?1 ORDER BY s LIMIT 10)
                         ON rowid = r ORDER BY s"
                    ),
                    _ => format!(
                        "SELECT doc FROM {table} WHERE rowid IN
                             (SELECT rowid FROM bench_fts WHERE bench_fts MATCH ?1)"
                    ),
                };
                let mut statement = conn.prepare_cached(&text).expect("prepare");
                let rows = statement
                    .query_map([&query], |row| row.get::<_, Vec<u8>>(0))
                    .expect("query");
                let mut count = 0;
                for row in rows {
                    let _document: Vec<u8> = row.expect("row");
                    count += 1;
                }
                count
            }
            HandSql::Postgres { client, table } => {
                let query = words.join(" | ");
                let text = match case {
                    2 => format!(
                        "SELECT doc FROM {table}
                         WHERE to_tsvector('english', j->>'title') @@ to_tsquery('english', $1)
                         ORDER BY ts_rank(to_tsvector('english', j->>'title'),
                             to_tsquery('english', $1)) DESC LIMIT 10"
                    ),
                    _ => format!(
                        "SELECT doc FROM {table}
                         WHERE to_tsvector('english', j->>'title') @@ to_tsquery('english', $1)"
                    ),
                };
                client.query(&text, &[&query]).await.expect("query").len()
            }
        }
    }
}
