//! Positioned scans on every backend: a result read in pages with `scan_from`, each page
//! resuming after the last row of the one before, equals the same scan read at once — in
//! natural order, by `_id` key both ways and along a secondary index both ways (equal index
//! keys broken by `_id` key) — and documents present throughout are read exactly once while
//! others are inserted and deleted between pages.

use super::super::{
    CollectionRecord, KeyOrder, PositionedRow, Predicate, ScanPosition, ScanRequest, StoreSession,
    StoredDocument,
};
use super::index_entries::{ik, make_index, with_keys};
use super::{backends, create, keys_of, ok};

/// Documents in the collection; their index key is `key % TIES`, so keys repeat.
const DOCS: u16 = 30;
const TIES: u16 = 5;

fn key_of(n: u16) -> String {
    format!("{n:02}")
}

/// Reads `request` in pages of `page` rows, calling `between` after each page.
async fn paged(
    s: &mut dyn StoreSession,
    coll: &CollectionRecord,
    request: &ScanRequest,
    page: u64,
    mut between: impl FnMut(usize) -> Option<(Vec<String>, Vec<StoredDocument>)>,
) -> Vec<String> {
    let request = ScanRequest {
        limit: Some(page),
        ..request.clone()
    };
    let mut keys = Vec::new();
    let mut after: Option<ScanPosition> = None;
    for page_number in 0.. {
        let rows: Vec<PositionedRow> = ok(s.scan_from(coll, &request, after.as_ref()).await);
        let documents: Vec<Vec<u8>> = rows.iter().map(|row| row.document.clone()).collect();
        keys.extend(keys_of(&documents));
        let Some(last) = rows.last() else { break };
        after = Some(last.position.clone());
        if (rows.len() as u64) < page {
            break;
        }
        if let Some((deletes, inserts)) = between(page_number) {
            let deletes: Vec<Vec<u8>> = deletes.iter().map(|k| k.as_bytes().to_vec()).collect();
            ok(s.delete(coll, &deletes).await);
            ok(s.insert(coll, &inserts, true).await);
        }
    }
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paged_scans_equal_whole_scans_in_every_order() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "paged").await;
        let index = make_index(&mut *s, &coll, "g_1", false, &[]).await;
        // Inserted out of key order, so natural order and key order differ.
        let docs: Vec<_> = (0..DOCS)
            .map(|i| (i * 7) % DOCS)
            .map(|n| with_keys(&key_of(n), &[(&index, vec![ik(n % TIES)])]))
            .collect();
        ok(s.insert(&coll, &docs, true).await);
        let orders = [
            (None, None),
            (Some(KeyOrder::Ascending), None),
            (Some(KeyOrder::Descending), None),
            (Some(KeyOrder::Ascending), Some(index.table.clone())),
            (Some(KeyOrder::Descending), Some(index.table.clone())),
        ];
        for (order, order_index) in orders {
            let request = ScanRequest {
                order,
                order_index: order_index.clone(),
                ..ScanRequest::all()
            };
            let whole = keys_of(&ok(s.scan(&coll, &request).await));
            assert_eq!(whole.len(), usize::from(DOCS));
            for page in [1, 4, 7, 30, 31] {
                let pages = paged(&mut *s, &coll, &request, page, |_| None).await;
                assert_eq!(pages, whole, "{order:?} {order_index:?}, pages of {page}");
            }
            if order_index.is_some() {
                let mut expected: Vec<(u16, String)> =
                    (0..DOCS).map(|n| (n % TIES, key_of(n))).collect();
                expected.sort();
                if order == Some(KeyOrder::Descending) {
                    expected.reverse();
                }
                let expected: Vec<String> = expected.into_iter().map(|(_, k)| k).collect();
                assert_eq!(whole, expected, "index walk, ties by key");
            }
        }
        // A filter and a position together: a key range read in pages.
        let request = ScanRequest {
            filter: Predicate::KeyIn((10..20).map(|n| key_of(n).into_bytes()).collect()),
            order: Some(KeyOrder::Ascending),
            ..ScanRequest::all()
        };
        let pages = paged(&mut *s, &coll, &request, 3, |_| None).await;
        let expected: Vec<String> = (10..20).map(key_of).collect();
        assert_eq!(pages, expected);
        drop((s, store));
        backend.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_present_throughout_are_read_once_while_others_change() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "moving").await;
        let index = make_index(&mut *s, &coll, "g_1", false, &[]).await;
        let docs: Vec<_> = (0..DOCS)
            .map(|n| with_keys(&key_of(n), &[(&index, vec![ik(n % TIES)])]))
            .collect();
        ok(s.insert(&coll, &docs, true).await);
        for (order, order_index) in [
            (None, None),
            (Some(KeyOrder::Ascending), None),
            (Some(KeyOrder::Ascending), Some(index.table.clone())),
        ] {
            let request = ScanRequest {
                order,
                order_index,
                ..ScanRequest::all()
            };
            // After the first page, the documents whose key ends in 9 go away and new ones
            // (before and after the position) arrive.
            let deleted: Vec<String> = (0..DOCS).filter(|n| n % 10 == 9).map(key_of).collect();
            let arriving = |page: usize| {
                (0..3u16)
                    .map(|i| {
                        let key = format!("{}{page}{i}", if i == 0 { "0" } else { "n" });
                        with_keys(&key, &[(&index, vec![ik(i)])])
                    })
                    .collect::<Vec<_>>()
            };
            let seen = paged(&mut *s, &coll, &request, 4, |page| {
                (page == 0).then(|| (deleted.clone(), arriving(page)))
            })
            .await;
            let mut unique = seen.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), seen.len(), "no document twice: {seen:?}");
            for n in (0..DOCS).filter(|n| n % 10 != 9) {
                assert!(
                    seen.contains(&key_of(n)),
                    "{} missing from {seen:?}",
                    key_of(n)
                );
            }
            // Back to the starting documents for the next order.
            let arrived: Vec<Vec<u8>> = arriving(0).into_iter().map(|d| d.key).collect();
            ok(s.delete(&coll, &arrived).await);
            let back: Vec<_> = deleted
                .iter()
                .map(|k| {
                    let n: u16 = k.parse().unwrap_or(0);
                    with_keys(k, &[(&index, vec![ik(n % TIES)])])
                })
                .collect();
            ok(s.insert(&coll, &back, true).await);
        }
        drop((s, store));
        backend.finish().await;
    }
}
