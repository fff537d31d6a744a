//! Text index tests on every backend: a text index's entries (space-separated words) are
//! found by the backend's full-text engine (`Predicate::TextTerms`: SQLite FTS5, PostgreSQL
//! `tsvector` with GIN), built over existing documents and kept in step by insert, replace
//! and delete; no token selects nothing; dropping the index and the collection removes its
//! tables.

use bson::doc;

use super::super::{CollectionRecord, IndexRecord, Predicate, ScanRequest, StoreSession};
use super::{backends, create, indexed, keys_of, ok, stored};

async fn found(
    s: &mut dyn StoreSession,
    coll: &CollectionRecord,
    index: &IndexRecord,
    tokens: &[&str],
) -> Vec<String> {
    let request = ScanRequest {
        filter: Predicate::TextTerms {
            table: index.table.clone(),
            tokens: tokens.iter().map(|t| t.to_string()).collect(),
        },
        ..ScanRequest::all()
    };
    let mut keys = keys_of(&ok(s.scan(coll, &request).await));
    keys.sort();
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_finds_words_and_follows_writes() {
    for backend in backends().await {
        let store = backend.open().await;
        let mut s = ok(store.session().await);
        let coll = create(&mut *s, "app", "posts").await;
        ok(
            s.insert(&coll, &[stored("1", doc! {}), stored("2", doc! {})], true)
                .await,
        );
        let entries = vec![
            (b"1".to_vec(), vec![b"tcafe tcoffee".to_vec()]),
            (b"2".to_vec(), vec![b"tcake".to_vec(), b"ttea".to_vec()]),
        ];
        let spec = doc! {"v": 2, "key": {"_fts": "text", "_ftsx": 1}, "name": "t"};
        let index = ok(s.create_text_index(&coll, "t", &spec, &entries).await);
        assert_eq!(found(&mut *s, &coll, &index, &["tcoffee"]).await, ["1"]);
        assert_eq!(found(&mut *s, &coll, &index, &["ttea"]).await, ["2"]);
        assert_eq!(
            found(&mut *s, &coll, &index, &["tcoffee", "ttea", "tnone"]).await,
            ["1", "2"]
        );
        assert!(found(&mut *s, &coll, &index, &[]).await.is_empty());
        assert!(found(&mut *s, &coll, &index, &["tcof"]).await.is_empty());

        let third = indexed(stored("3", doc! {}), &[(&index, &[b"tcoffee tmilk"])]);
        ok(s.insert(&coll, &[third], true).await);
        assert_eq!(
            found(&mut *s, &coll, &index, &["tcoffee"]).await,
            ["1", "3"]
        );
        let replaced = indexed(stored("1", doc! {}), &[(&index, &[b"tjuice"])]);
        ok(s.replace(&coll, &[replaced]).await);
        assert_eq!(found(&mut *s, &coll, &index, &["tcoffee"]).await, ["3"]);
        assert_eq!(found(&mut *s, &coll, &index, &["tjuice"]).await, ["1"]);
        ok(s.delete(&coll, &[b"3".to_vec()]).await);
        assert!(found(&mut *s, &coll, &index, &["tcoffee", "tmilk"])
            .await
            .is_empty());

        let listed = ok(s.list_indexes().await);
        assert!(listed.iter().any(|i| i.name == "t" && i.spec == spec));
        ok(s.drop_index(&index).await);
        assert!(ok(s.list_indexes().await).iter().all(|i| i.name != "t"));
        // A new text index after the drop starts empty and works.
        let again = ok(s.create_text_index(&coll, "t2", &spec, &[]).await);
        assert!(found(&mut *s, &coll, &again, &["tjuice"]).await.is_empty());
        ok(s.drop_collection(&coll).await);
    }
}
