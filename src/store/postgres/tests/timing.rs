//! Rough timings, ignored by default:
//! `cargo test --release -- --ignored --nocapture postgres::tests::timing`.
//! Not a benchmark (see `benches/`); a quick sanity check that the store is not the
//! bottleneck of a bulk insert or a find by `_id`.

use std::time::Instant;

use bson::doc;

use super::super::super::{Predicate, ScanRequest, StoreSession};
use super::{create, ok, open, session, stored};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn timing_bulk_insert_and_find_by_key() {
    let db = fresh_db!();
    let store = open(&db).await;
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "timing").await;
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
    db.drop_db().await;
}
