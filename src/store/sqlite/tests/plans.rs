//! Query plan tests: `EXPLAIN QUERY PLAN` shows the `_id` index serving key lookups and
//! ordered scans with a limit (invariant 3), and `count` stays in SQL.

use bson::doc;

use super::super::super::{KeyOrder, Predicate, ScanRequest, StoreSession};
use super::{create, ok, open_in, session, stored, tempdir};

fn uses_key_index(plan: &[String], table: &str) -> bool {
    let index = format!("{table}_id");
    plan.iter().any(|line| line.contains(&index))
        && !plan.iter().any(|l| l == &format!("SCAN {table}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_lookups_and_ordered_limits_use_the_index() {
    let dir = tempdir();
    let store = open_in(&dir);
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "plans").await;
    let docs: Vec<_> = (0..300)
        .map(|i| stored(&format!("{i:04}"), doc! {"i": i}))
        .collect();
    ok(s.insert(&coll, &docs, true).await);
    let t = coll.table.clone();
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
    assert!(uses_key_index(&plan, &t), "{plan:?}");
    let few = Predicate::KeyIn((0..10).map(key).collect());
    let plan = ok(s.explain(&coll, &req(few, None, None)).await);
    assert!(uses_key_index(&plan, &t), "{plan:?}");
    let many = Predicate::KeyIn((0..200).map(key).collect());
    let plan = ok(s.explain(&coll, &req(many.clone(), None, None)).await);
    assert!(uses_key_index(&plan, &t), "{plan:?}");
    assert_eq!(ok(s.scan(&coll, &req(many, None, None)).await).len(), 200);
    for order in [KeyOrder::Ascending, KeyOrder::Descending] {
        let plan = ok(s
            .explain(&coll, &req(Predicate::True, Some(order), Some(5)))
            .await);
        assert!(uses_key_index(&plan, &t), "{plan:?}");
        assert!(!plan.iter().any(|l| l.contains("TEMP B-TREE")), "{plan:?}");
    }
}
