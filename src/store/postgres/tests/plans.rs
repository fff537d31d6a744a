//! Query plan tests: `EXPLAIN` shows the `_id` (k) index serving key lookups, key sets and
//! ordered scans with a limit (invariant 3), on a table with 2,000 rows after `ANALYZE`.

use bson::doc;

use super::super::super::{KeyOrder, Predicate, ScanRequest, StoreSession};
use super::{admin, create, ok, open, session, stored};

/// An index scan (plain, index-only or bitmap) on the unique index of `k`, and no
/// sequential scan.
fn uses_key_index(plan: &[String]) -> bool {
    let on_k = |l: &String| {
        (l.contains("Index Scan")
            || l.contains("Index Only Scan")
            || l.contains("Bitmap Index Scan"))
            && l.contains("_k_key")
    };
    plan.iter().any(on_k) && !plan.iter().any(|l| l.contains("Seq Scan"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_lookups_and_ordered_limits_use_the_index() {
    let db = fresh_db!();
    let store = open(&db).await;
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "plans").await;
    let docs: Vec<_> = (0..2000)
        .map(|i| stored(&format!("{i:04}"), doc! {"i": i, "pad": "x".repeat(50)}))
        .collect();
    ok(s.insert(&coll, &docs, true).await);
    ok(admin(&db.url).await.batch_execute("ANALYZE").await);
    let req = |filter, order, limit| ScanRequest {
        order_index: None,
        filter,
        order,
        skip: 0,
        limit,
    };
    let key = |i: usize| format!("{i:04}").into_bytes();

    let plan = ok(s
        .explain(&coll, &req(Predicate::KeyEquals(key(7)), None, None))
        .await);
    assert!(uses_key_index(&plan), "{plan:?}");
    let few = Predicate::KeyIn((0..10).map(key).collect());
    let plan = ok(s.explain(&coll, &req(few, None, None)).await);
    assert!(uses_key_index(&plan), "{plan:?}");
    let more = Predicate::KeyIn((0..40).map(key).collect());
    let plan = ok(s.explain(&coll, &req(more, None, None)).await);
    assert!(uses_key_index(&plan), "{plan:?}");
    // A tenth of the table: PostgreSQL may rightly prefer a sequential scan; the answer is
    // what matters.
    let many = Predicate::KeyIn((0..200).map(key).collect());
    assert_eq!(ok(s.scan(&coll, &req(many, None, None)).await).len(), 200);
    for order in [KeyOrder::Ascending, KeyOrder::Descending] {
        let plan = ok(s
            .explain(&coll, &req(Predicate::True, Some(order), Some(5)))
            .await);
        assert!(uses_key_index(&plan), "{plan:?}");
        assert!(!plan.iter().any(|l| l.contains("Sort")), "{plan:?}");
    }
    // Natural order with a limit walks the internal index on n instead of sorting.
    let plan = ok(s.explain(&coll, &req(Predicate::True, None, Some(5))).await);
    assert!(!plan.iter().any(|l| l.contains("Sort")), "{plan:?}");
    // count stays in SQL.
    let plan = ok(s
        .explain(&coll, &req(Predicate::KeyEquals(key(3)), None, None))
        .await);
    assert!(!plan.is_empty());
    assert_eq!(
        ok(
            s.count(&coll, &Predicate::KeyIn((0..50).map(key).collect()))
                .await
        ),
        50
    );
    drop((s, store));
    db.drop_db().await;
}
