//! Rough timings on every backend, ignored by default:
//! `cargo test --release -- --ignored --nocapture conformance::timing`. Not a benchmark (see
//! `benches/`); a quick sanity check that the store is not the bottleneck of a bulk insert
//! or a find by `_id`. The first two were SQLite's, the last PostgreSQL's.

use std::time::Instant;

use bson::doc;

use super::super::{Predicate, ScanRequest};
use super::{backends, create, ok, stored};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn timing_bulk_insert_and_find_by_key() {
    for backend in backends().await {
        eprintln!("{:?}:", backend.kind);
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "timing").await;
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
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn timing_inserts_with_secondary_indexes() {
    for backend in backends().await {
        eprintln!("{:?}:", backend.kind);
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        for unique in [false, true] {
            let coll = create(&mut *s, "app", &format!("timing_{unique}")).await;
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
                    super::indexed(doc, &[(&a, &[ka.as_bytes()]), (&b, &[kb.as_bytes()])])
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
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn timing_insert_in_a_transaction_and_replace_one_by_one() {
    for backend in backends().await {
        eprintln!("{:?}:", backend.kind);
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "timing").await;
        let docs: Vec<_> = (0..100_000)
            .map(|i| stored(&format!("{i:08}"), doc! {"i": i, "s": format!("value {i}")}))
            .collect();
        let started = Instant::now();
        ok(s.begin().await);
        let out = ok(s.insert(&coll, &docs, false).await);
        ok(s.commit().await);
        eprintln!("insert 100,000: {:?}", started.elapsed());
        assert_eq!(out.inserted, 100_000);
        let started = Instant::now();
        let n = 2_000;
        for i in 0..n {
            let request = ScanRequest {
                filter: Predicate::KeyEquals(format!("{:08}", i * 37 % 100_000).into_bytes()),
                ..ScanRequest::all()
            };
            assert_eq!(ok(s.scan(&coll, &request).await).len(), 1);
        }
        eprintln!("find by key: {:?} each", started.elapsed() / n);
        let started = Instant::now();
        for i in 0..n {
            ok(s.begin().await);
            ok(
                s.replace(&coll, &[stored(&format!("{:08}", i), doc! {"v": i})])
                    .await,
            );
            ok(s.commit().await);
        }
        eprintln!(
            "replace one in a transaction: {:?} each",
            started.elapsed() / n
        );
        drop((s, store));
        backend.finish().await;
    }
}
