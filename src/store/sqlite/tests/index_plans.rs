//! Index-ordered scans and query plans of secondary indexes: `order_index` returns documents
//! in index key order (ascending, descending, with skip and limit) without a sort step, and
//! `IndexRange` is served by the entries table (invariant 3). Indexes survive reopening.

use bson::doc;

use super::super::super::{IndexBound, KeyOrder, Predicate, ScanRequest, StoreSession};
use super::{create, indexed, keys_of, ok, open_in, range, session, stored, tempdir};

/// Index key of document `i`: descending in `i`, so index order is the reverse of `_id`
/// and insertion order.
fn key_of(i: usize, n: usize) -> Vec<u8> {
    format!("v{:05}", n - i).into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn order_index_scans_and_plans() {
    let dir = tempdir();
    let n = 2000;
    let (coll, index) = {
        let store = open_in(&dir);
        let mut s = session(&store).await;
        let coll = create(&mut s, "app", "ordered").await;
        let index = ok(s
            .create_index(&coll, "v_1", &doc! {}, false, false, &[])
            .await);
        let docs: Vec<_> = (0..n)
            .map(|i| {
                let key = key_of(i, n);
                indexed(
                    stored(&format!("{i:05}"), doc! {"i": i as i64}),
                    &[(&index, &[&key])],
                )
            })
            .collect();
        assert_eq!(ok(s.insert(&coll, &docs, true).await).inserted, n as u64);
        (coll, index)
    };
    // Everything below runs on a reopened store.
    let store = open_in(&dir);
    let mut s = session(&store).await;
    assert_eq!(ok(s.list_indexes().await), vec![index.clone()]);
    let ordered = |order, skip, limit| ScanRequest {
        filter: Predicate::True,
        order: Some(order),
        order_index: Some(index.table.clone()),
        skip,
        limit,
    };
    let ids = |range: std::ops::Range<usize>| -> Vec<String> {
        range.map(|i| format!("{i:05}")).collect()
    };

    let asc = keys_of(&ok(s
        .scan(&coll, &ordered(KeyOrder::Ascending, 0, Some(3)))
        .await));
    assert_eq!(asc, ["01999", "01998", "01997"]);
    let asc = keys_of(&ok(s
        .scan(&coll, &ordered(KeyOrder::Ascending, 10, Some(2)))
        .await));
    assert_eq!(asc, ["01989", "01988"]);
    let desc = keys_of(&ok(s
        .scan(&coll, &ordered(KeyOrder::Descending, 5, Some(3)))
        .await));
    assert_eq!(desc, ids(5..8));
    let all = keys_of(&ok(s
        .scan(&coll, &ordered(KeyOrder::Descending, 0, None))
        .await));
    assert_eq!(all, ids(0..n));

    // Ordered by the index within a range of it.
    let within = ScanRequest {
        filter: range(
            &index,
            Some(IndexBound {
                key: key_of(100, n),
                inclusive: true,
            }),
            None,
        ),
        ..ordered(KeyOrder::Descending, 0, Some(2))
    };
    assert_eq!(keys_of(&ok(s.scan(&coll, &within).await)), ids(0..2));

    // Plans: the walk follows the entries table's primary key with no sort step.
    let t = &index.table;
    for order in [KeyOrder::Ascending, KeyOrder::Descending] {
        let plan = ok(s.explain(&coll, &ordered(order, 20, Some(5))).await);
        assert!(!plan.iter().any(|l| l.contains("TEMP B-TREE")), "{plan:?}");
        assert!(
            plan.iter().any(|l| l.starts_with(&format!("SCAN {t}"))),
            "{plan:?}"
        );
        assert!(
            plan.iter()
                .any(|l| l.contains(&format!("{}_id", coll.table))),
            "{plan:?}"
        );
    }
    let plan = ok(s.explain(&coll, &within).await);
    assert!(!plan.iter().any(|l| l.contains("TEMP B-TREE")), "{plan:?}");
    let walked = format!("SEARCH {t} USING PRIMARY KEY (ik>?)");
    assert!(plan.iter().any(|l| l == &walked), "{plan:?}");

    // A range uses the entries table's primary key, then the `_id` index.
    let mut next = key_of(7, n);
    next.push(0);
    let equal = ScanRequest {
        filter: range(
            &index,
            Some(IndexBound {
                key: key_of(7, n),
                inclusive: true,
            }),
            Some(IndexBound {
                key: next,
                inclusive: false,
            }),
        ),
        ..ScanRequest::all()
    };
    assert_eq!(keys_of(&ok(s.scan(&coll, &equal).await)), ids(7..8));
    let plan = ok(s.explain(&coll, &equal).await);
    let searched = format!("SEARCH {t} USING PRIMARY KEY (ik>? AND ik<?)");
    assert!(plan.iter().any(|l| l == &searched), "{plan:?}");
    assert!(
        plan.iter()
            .any(|l| l.contains(&format!("{}_id", coll.table))),
        "{plan:?}"
    );
    assert!(
        !plan.iter().any(|l| l == &format!("SCAN {}", coll.table)),
        "{plan:?}"
    );

    // `$in`: an `Or` of equalities, each served by the entries table.
    let any_of = ScanRequest {
        filter: Predicate::Or(vec![equal.filter.clone(), {
            let mut next = key_of(9, n);
            next.push(0);
            range(
                &index,
                Some(IndexBound {
                    key: key_of(9, n),
                    inclusive: true,
                }),
                Some(IndexBound {
                    key: next,
                    inclusive: false,
                }),
            )
        }]),
        ..ScanRequest::all()
    };
    assert_eq!(
        keys_of(&ok(s.scan(&coll, &any_of).await)),
        ["00007", "00009"]
    );
    let plan = ok(s.explain(&coll, &any_of).await);
    assert!(plan.iter().any(|l| l == &searched), "{plan:?}");
    assert!(
        !plan.iter().any(|l| l == &format!("SCAN {}", coll.table)),
        "{plan:?}"
    );
}
