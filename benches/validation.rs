//! Document validation: insert throughput into a collection with a realistic `$jsonSchema`
//! validator (and one with a query-operator validator) against the same collection without
//! one, docgate over the wire on the same backend, interleaved in one run:
//!
//! - `insert_many`: `DOCGATE_BENCH_VALIDATION_DOCS` (20,000) documents of ~200 bytes
//!   (`common::sample_doc`) through the driver's `insert_many`;
//! - `insert_one`: `DOCGATE_BENCH_VALIDATION_SINGLES` (2,000) sequential `insert_one`s (the
//!   per-command cost, where validation is a smaller share).
//!
//! The `$jsonSchema` checks every field the documents have: `bsonType` of each, `required`,
//! ranges, string lengths, a `pattern` on the e-mail, `enum`-free nested `properties` for the
//! address, `items` for the tags, `additionalProperties: false`. The query validator checks
//! four fields with `$type`, `$gte`/`$lt` and `$exists`. Every round uses fresh collections
//! and rotates which side goes first, after one unmeasured warm-up insert. First, in process,
//! the check alone: microseconds per document for each validator. Printed per backend and phase: seconds per side (mean
//! over `DOCGATE_BENCH_ROUNDS`, default 3), documents per second, and the ratios
//! validated/plain (1.00x = validation costs nothing). Nothing is asserted.
//!
//! Run: `cargo bench --bench validation` (`DOCGATE_BENCH_PG=0` for SQLite only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use bson::{doc, Document};
use common::{backends, env_usize, print_table, ratio, sample_doc, Backend, Server};

const DB: &str = "bench";

/// The collections compared: name and validator (none for the baseline).
fn sides() -> [(&'static str, Option<Document>); 3] {
    [
        ("plain", None),
        (
            "json_schema",
            Some(doc! {"$jsonSchema": {
                "bsonType": "object",
                "required": ["_id", "name", "email", "age", "n", "score", "active", "tags", "address"],
                "additionalProperties": false,
                "properties": {
                    "_id": {"bsonType": ["int", "long"]},
                    "name": {"bsonType": "string", "minLength": 1, "maxLength": 64},
                    "email": {"bsonType": "string", "pattern": "^[^@]+@[^@]+$"},
                    "age": {"bsonType": "int", "minimum": 0, "maximum": 150},
                    "n": {"bsonType": "int"},
                    "score": {"bsonType": "double", "minimum": 0},
                    "active": {"bsonType": "bool"},
                    "tags": {"bsonType": "array", "maxItems": 10, "items": {"bsonType": "string"}},
                    "address": {
                        "bsonType": "object",
                        "required": ["city", "zip"],
                        "properties": {
                            "city": {"bsonType": "string"},
                            "zip": {"bsonType": "string", "minLength": 5, "maxLength": 5},
                        },
                    },
                },
            }}),
        ),
        (
            "query",
            Some(doc! {
                "name": {"$type": "string"},
                "age": {"$gte": 0, "$lt": 150},
                "email": {"$exists": true},
                "address.zip": {"$type": "string"},
            }),
        ),
    ]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n = env_usize("DOCGATE_BENCH_VALIDATION_DOCS", 20_000);
    let singles = env_usize("DOCGATE_BENCH_VALIDATION_SINGLES", 2_000);
    let rounds = env_usize("DOCGATE_BENCH_ROUNDS", 3).max(1);
    let dir = tempfile::Builder::new()
        .prefix("docgate-bench-validation-")
        .tempdir()
        .expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!(
        "validation: insert_many of {n} and {singles} insert_one, {rounds} round(s), \
         without a validator vs a $jsonSchema vs a query-operator validator"
    );
    let docs: Vec<Document> = (0..n as i64).map(sample_doc).collect();
    check_cost(&docs);
    for backend in &backends {
        run(backend, dir.path(), &docs, singles, rounds).await;
    }
}

/// The check itself, in process (no server, no I/O): microseconds per document for each
/// validator, as compiled by the catalog — what validation adds to a write's CPU.
fn check_cost(docs: &[Document]) {
    let mut rows = Vec::new();
    for (name, validator) in sides().into_iter().skip(1) {
        let options = doc! {"validator": validator.expect("a validator")};
        let compiled = docgate::query::validator::CollectionValidator::from_options(&options)
            .expect("compiles")
            .expect("a validator");
        let started = Instant::now();
        let mut admitted = 0usize;
        for _ in 0..5 {
            admitted += docs.iter().filter(|d| compiled.admits(d)).count();
        }
        let took = started.elapsed();
        assert_eq!(
            admitted,
            docs.len() * 5,
            "every sample document meets {name}"
        );
        rows.push(vec![
            name.to_string(),
            format!("{:.2}", took.as_secs_f64() * 1e6 / (docs.len() * 5) as f64),
        ]);
    }
    println!();
    println!("in process: the validator's check per document");
    print_table(&["validator", "µs/document"], &rows);
}

async fn run(
    backend: &Backend,
    dir: &std::path::Path,
    docs: &[Document],
    singles: usize,
    rounds: usize,
) {
    let server = Server::start(backend, dir, &[]);
    let client = server.client().await;
    let db = client.database(DB);
    let sides = sides();
    // One unmeasured insert_many first, so that no side pays the server's warm-up.
    let warm = db.collection::<Document>("warm_up");
    warm.drop().await.expect("drop");
    warm.insert_many(docs.to_vec()).await.expect("warm up");
    warm.drop().await.expect("drop");
    // [phase][side]
    let mut totals = [[Duration::ZERO; 3]; 2];
    for round in 0..rounds {
        for (name, validator) in &sides {
            let name = format!("{name}_{round}");
            db.collection::<Document>(&name).drop().await.expect("drop");
            let mut create = doc! {"create": &name};
            if let Some(validator) = validator {
                create.insert("validator", validator.clone());
            }
            db.run_command(create).await.expect("create");
        }
        for step in 0..sides.len() {
            let side = (round + step) % sides.len();
            let coll = db.collection::<Document>(&format!("{}_{round}", sides[side].0));
            let started = Instant::now();
            let result = coll.insert_many(docs.to_vec()).await.expect("insert_many");
            totals[0][side] += started.elapsed();
            assert_eq!(result.inserted_ids.len(), docs.len());

            let offset = docs.len() as i64;
            let started = Instant::now();
            for i in 0..singles as i64 {
                coll.insert_one(sample_doc(offset + i))
                    .await
                    .expect("insert_one");
            }
            totals[1][side] += started.elapsed();
        }
        for (name, _) in &sides {
            db.collection::<Document>(&format!("{name}_{round}"))
                .drop()
                .await
                .expect("drop");
        }
    }

    let counts = [docs.len() as f64, singles as f64];
    let mut rows = Vec::new();
    for (phase, label) in ["insert_many", "insert_one"].iter().enumerate() {
        let [plain, schema, query] = totals[phase].map(|t| t / rounds as u32);
        rows.push(vec![
            label.to_string(),
            format!("{:.0}", counts[phase] / plain.as_secs_f64()),
            format!("{:.0}", counts[phase] / schema.as_secs_f64()),
            format!("{:.0}", counts[phase] / query.as_secs_f64()),
            ratio(schema, plain),
            ratio(query, plain),
        ]);
    }
    println!();
    println!("backend: {}", backend.name());
    print_table(
        &[
            "phase",
            "plain docs/s",
            "$jsonSchema docs/s",
            "query docs/s",
            "$jsonSchema/plain time",
            "query/plain time",
        ],
        &rows,
    );
    client.shutdown().await;
    drop(server);
}
