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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn timing_inserts_with_secondary_indexes() {
    use super::indexed;
    let dir = tempdir();
    let store = open_in(&dir);
    let mut s = session(&store).await;
    for unique in [false, true] {
        let coll = create(&mut s, "app", &format!("timing_{unique}")).await;
        let a = ok(s
            .create_index(&coll, "a", &doc! {}, false, false, &[])
            .await);
        let b = ok(s
            .create_index(&coll, "b", &doc! {}, unique, false, &[])
            .await);
        let docs: Vec<_> = (0..100_000)
            .map(|i| {
                let (ka, kb) = (format!("a{}", i % 100), format!("b{i:08}"));
                let doc = stored(&format!("{i:08}"), doc! {"i": i, "name": format!("n {i}")});
                indexed(doc, &[(&a, &[ka.as_bytes()]), (&b, &[kb.as_bytes()])])
            })
            .collect();
        let t = Instant::now();
        let out = ok(s.insert(&coll, &docs, true).await);
        eprintln!(
            "insert 100k, 2 indexes, unique {unique}: {:?} ({} inserted)",
            t.elapsed(),
            out.inserted
        );
        let t = Instant::now();
        ok(s.replace(&coll, &docs[..10_000]).await);
        eprintln!("replace 10k: {:?}", t.elapsed());
        let keys: Vec<Vec<u8>> = docs[..10_000].iter().map(|d| d.key.clone()).collect();
        let t = Instant::now();
        ok(s.delete(&coll, &keys).await);
        eprintln!("delete 10k: {:?}", t.elapsed());
    }
}
