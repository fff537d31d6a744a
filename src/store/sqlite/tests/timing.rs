//! Rough timings, ignored by default: `cargo test --release -- --ignored --nocapture timing`.
//! Not a benchmark (see `benches/`); a quick sanity check that the store is not the
//! bottleneck of a bulk insert or a find by `_id`.

use std::time::Instant;

use bson::doc;

use super::super::super::{Predicate, ScanRequest, StoreSession};
use super::{create, ok, open_in, session, stored, tempdir};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn timing_bulk_insert_and_find_by_key() {
    let dir = tempdir();
    let store = open_in(&dir);
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "timing").await;
    let docs: Vec<_> = (0..100_000)
        .map(|i| {
            stored(
                &format!("{i:08}"),
                doc! {"i": i, "name": format!("name {i}"), "tags": ["a", "b"]},
            )
        })
        .collect();
    let t = Instant::now();
    let out = ok(s.insert(&coll, &docs, true).await);
    eprintln!("insert 100k: {:?} ({} inserted)", t.elapsed(), out.inserted);
    let t = Instant::now();
    for i in 0..10_000 {
        let filter = Predicate::KeyEquals(format!("{:08}", i * 7).into_bytes());
        let got = ok(s
            .scan(
                &coll,
                &ScanRequest {
                    filter,
                    ..ScanRequest::all()
                },
            )
            .await);
        assert_eq!(got.len(), 1);
    }
    eprintln!("find by key: {:?} per call", t.elapsed() / 10_000);
    let t = Instant::now();
    let replaced = ok(s.replace(&coll, &docs).await);
    eprintln!("replace 100k: {:?} ({replaced})", t.elapsed());
    let t = Instant::now();
    eprintln!(
        "count: {} in {:?}",
        ok(s.count(&coll, &Predicate::True).await),
        t.elapsed()
    );
}
