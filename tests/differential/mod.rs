//! The differential suite's support code, used by `tests/query_differential.rs`: the
//! fixture (one server with the corpus loaded into collections with and without indexes),
//! the runtime, and the explain helper that names the index a `find` scans. The corpus
//! lives in `corpus.rs`, the cases in `cases.rs`, the comparison with the reference in
//! `compare.rs`.

pub mod cases;
pub mod compare;
pub mod corpus;

use mongodb::bson::{doc, Document};
use mongodb::{Collection, Database};

use crate::common::TestServer;
use corpus::{corpus, index_specs};

// ---------------------------------------------------------------------------
// the fixture
// ---------------------------------------------------------------------------

/// One server, the corpus loaded into several collections (with and without indexes).
pub struct Fixture {
    /// (name, collection) pairs, each holding the whole corpus.
    pub collections: Vec<(String, Collection<Document>)>,
    pub db: Database,
    pub corpus: Vec<Document>,
    // Last, so the server outlives the driver handles above.
    _server: TestServer,
}

async fn load(db: &Database, name: &str, docs: &[Document], indexes: &[Document]) {
    if !indexes.is_empty() {
        db.run_command(doc! {"createIndexes": name, "indexes": indexes.to_vec()})
            .await
            .unwrap_or_else(|e| panic!("createIndexes on {name}: {e}"));
    }
    db.collection::<Document>(name)
        .insert_many(docs.to_vec())
        .await
        .unwrap_or_else(|e| panic!("insert into {name}: {e}"));
}

/// Starts a server and loads `corpus` into one collection per `(name, indexes)`.
pub async fn fixture(corpus: Vec<Document>, layouts: &[(&str, Vec<Document>)]) -> Fixture {
    let server = TestServer::start();
    let client = server.client().await;
    let db = client.database("differential");
    let mut collections = Vec::new();
    for (name, indexes) in layouts {
        load(&db, name, &corpus, indexes).await;
        collections.push((name.to_string(), db.collection(name)));
    }
    Fixture {
        collections,
        db,
        corpus,
        _server: server,
    }
}

/// The main corpus with all its indexes, and without any.
pub async fn main_fixture() -> Fixture {
    fixture(
        corpus(),
        &[("indexed", index_specs()), ("plain", Vec::new())],
    )
    .await
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The index a `find` is explained to scan on `collection` (None for a COLLSCAN), and
/// whether the sort was pushed.
pub async fn planned_index(
    fx: &Fixture,
    collection: &str,
    filter: &Document,
    sort: Option<&Document>,
) -> (Option<String>, bool) {
    let mut find = doc! {"find": collection, "filter": filter.clone()};
    if let Some(sort) = sort {
        find.insert("sort", sort.clone());
        find.insert("limit", 5);
    }
    let reply = fx
        .db
        .run_command(doc! {"explain": find, "verbosity": "queryPlanner"})
        .await
        .expect("explain");
    let plan = reply
        .get_document("queryPlanner")
        .and_then(|q| q.get_document("winningPlan"))
        .expect("winningPlan")
        .clone();
    let pushed_sort = plan
        .get_document("docgate")
        .and_then(|d| d.get_bool("pushedSort"))
        .unwrap_or(false);
    let mut stage = Some(plan);
    while let Some(s) = stage {
        if s.get_str("stage").ok() == Some("IXSCAN") {
            return (s.get_str("indexName").ok().map(str::to_string), pushed_sort);
        }
        stage = s.get_document("inputStage").ok().cloned();
    }
    (None, pushed_sort)
}
