//! Query plan tests: `EXPLAIN` shows the `_id` (k) index serving key lookups, key sets and
//! ordered scans with a limit (invariant 3), on a table with 2,000 rows after `ANALYZE`.

use bson::doc;

use super::super::super::conformance::indexed;
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

/// The plan of a `find_one` by key `v<last>` of the unique index `index`: it must start from
/// the entries, never walk the whole table in natural order waiting for the first match.
async fn assert_lookup_starts_from_the_entries(
    s: &mut super::super::PostgresSession,
    coll: &crate::store::CollectionRecord,
    index: &crate::store::IndexRecord,
    last: usize,
) {
    use super::super::super::IndexBound;
    let key = format!("v{last:05}");
    let bound = |key: &str, inclusive| IndexBound {
        key: key.as_bytes().to_vec(),
        inclusive,
    };
    let lookup = ScanRequest {
        order_index: None,
        filter: Predicate::IndexRange {
            table: index.table.clone(),
            lower: Some(bound(&key, true)),
            upper: Some(bound(&format!("{key}\u{1}"), false)),
        },
        order: None,
        skip: 0,
        limit: Some(1),
    };
    let plan = ok(s.explain(coll, &lookup).await);
    assert!(
        !plan.iter().any(|l| l.contains("_pkey\" on")),
        "walks the table in natural order: {plan:?}"
    );
    assert_eq!(ok(s.scan(coll, &lookup).await).len(), 1);
}

const LOADED: usize = 20_000;

/// Right after an index was built over a loaded table (nobody ran `ANALYZE`, autovacuum has
/// not come round), a lookup on it with a limit starts from the entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_lookup_with_a_limit_starts_from_the_entries_right_after_the_build() {
    let db = fresh_db!();
    let store = open(&db).await;
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "built_after_load").await;
    let docs: Vec<_> = (0..LOADED)
        .map(|i| stored(&format!("{i:05}"), doc! {"v": i as i64}))
        .collect();
    ok(s.insert(&coll, &docs, true).await);
    let entries: Vec<(Vec<u8>, Vec<Vec<u8>>)> = (0..LOADED)
        .map(|i| {
            let k = format!("{i:05}").into_bytes();
            (k, vec![format!("v{i:05}").into_bytes()])
        })
        .collect();
    let spec = doc! {"v": 2, "key": {"v": 1}, "name": "v_1"};
    let index = ok(s
        .create_index(&coll, "v_1", &spec, true, false, &entries)
        .await);
    assert_lookup_starts_from_the_entries(&mut s, &coll, &index, LOADED - 1).await;
    drop((s, store));
    db.drop_db().await;
}

/// An index created on an empty collection, then a bulk load: the first large insert into
/// the never-analyzed table analyzes it, so a lookup right after starts from the entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_lookup_with_a_limit_starts_from_the_entries_right_after_a_bulk_load() {
    let db = fresh_db!();
    let store = open(&db).await;
    let mut s = session(&store).await;
    let coll = create(&mut s, "app", "loaded_after_build").await;
    let spec = doc! {"v": 2, "key": {"v": 1}, "name": "v_1"};
    let index = ok(s.create_index(&coll, "v_1", &spec, true, false, &[]).await);
    let keys: Vec<Vec<u8>> = (0..LOADED)
        .map(|i| format!("v{i:05}").into_bytes())
        .collect();
    let docs: Vec<_> = (0..LOADED)
        .map(|i| {
            let doc = stored(&format!("{i:05}"), doc! {"v": i as i64});
            indexed(doc, &[(&index, &[keys[i].as_slice()])])
        })
        .collect();
    for batch in docs.chunks(5_000) {
        ok(s.insert(&coll, batch, true).await);
    }
    assert_lookup_starts_from_the_entries(&mut s, &coll, &index, LOADED - 1).await;
    drop((s, store));
    db.drop_db().await;
}
