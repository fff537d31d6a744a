//! How the differential suite compares: the pure-Rust reference answer for a case, running
//! a case on the server, checking a server answer against the reference (byte for byte,
//! as sets, or up to sort ties), the find and `count` differentials over every collection
//! of a fixture, and the failure report.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};

use docgate::query::encode_key;
use docgate::query::Filter;
use docgate::query::Projection;
use docgate::query::SortSpec;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Collection;

use super::cases::Case;
use super::Fixture;

// ---------------------------------------------------------------------------
// cases and their comparison
// ---------------------------------------------------------------------------

fn bytes(d: &Document) -> Vec<u8> {
    let mut out = Vec::new();
    d.to_writer(&mut out).expect("serialize document");
    out
}

fn id_key(d: &Document) -> Vec<u8> {
    encode_key(d.get("_id").unwrap_or(&Bson::Null))
}

/// What the reference evaluator says: the matching documents, sorted (unprojected, before
/// skip and limit), or the error a bad case must produce.
pub fn reference_matches(corpus: &[Document], case: &Case) -> Result<Vec<Document>, String> {
    let filter = Filter::parse(&case.filter).map_err(|e| format!("{e:?}"))?;
    let mut docs: Vec<Document> = Vec::new();
    for d in corpus {
        if filter.try_matches(d).map_err(|e| format!("{e:?}"))? {
            docs.push(d.clone());
        }
    }
    if let Some(sort) = &case.sort {
        SortSpec::parse(sort)
            .map_err(|e| format!("{e:?}"))?
            .sort(&mut docs);
    }
    if let Some(p) = &case.projection {
        Projection::parse(p).map_err(|e| format!("{e:?}"))?;
    }
    Ok(docs)
}

/// Runs the case on the server: raw bytes of each returned document, in order.
pub async fn run(coll: &Collection<Document>, case: &Case) -> Result<Vec<Vec<u8>>, String> {
    let mut find = coll.find(case.filter.clone());
    if let Some(sort) = &case.sort {
        find = find.sort(sort.clone());
    }
    if case.skip > 0 {
        find = find.skip(case.skip);
    }
    if let Some(limit) = case.limit {
        find = find.limit(limit);
    }
    if let Some(p) = &case.projection {
        find = find.projection(p.clone());
    }
    let mut cursor = find.await.map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while cursor.advance().await.map_err(|e| e.to_string())? {
        out.push(cursor.current().as_bytes().to_vec());
    }
    Ok(out)
}

fn show(raw: &[u8]) -> String {
    Document::from_reader(raw)
        .map(|d| d.to_string())
        .unwrap_or_else(|e| format!("<undecodable: {e}>"))
}

fn show_ids(docs: &[Vec<u8>]) -> String {
    let ids: Vec<String> = docs
        .iter()
        .map(|raw| match Document::from_reader(raw.as_slice()) {
            Ok(d) => d
                .get("_id")
                .map(|id| id.to_string())
                .unwrap_or_else(|| d.to_string()),
            Err(e) => format!("<{e}>"),
        })
        .collect();
    format!("[{}]", ids.join(", "))
}

/// The document with its value types spelled out (Int64(1), Double(1.0), Decimal128(…)).
fn exact(d: &Document) -> String {
    format!("{d:?}")
}

/// Whether a sort ends with `_id` (a total order over the corpus).
fn total_order(sort: &Document) -> bool {
    sort.keys().last().is_some_and(|k| k == "_id")
}

/// Checks one server answer against the reference. `Ok` when they agree.
fn check(
    corpus: &[Document],
    case: &Case,
    got: Result<Vec<Vec<u8>>, String>,
) -> Result<(), String> {
    let expected = match reference_matches(corpus, case) {
        Ok(docs) => docs,
        Err(reference_error) => {
            return match got {
                Err(_) => Ok(()),
                Ok(docs) => Err(format!(
                    "the reference rejects the case ({reference_error}) but the server returned {}",
                    show_ids(&docs)
                )),
            };
        }
    };
    let got = got.map_err(|e| format!("the server failed: {e}"))?;
    let projection = case
        .projection
        .as_ref()
        .map(|p| Projection::parse(p).expect("parsed above"));
    let project = |d: &Document| -> Document {
        match &projection {
            Some(p) => p.apply(d).expect("reference projection"),
            None => d.clone(),
        }
    };
    let skip = usize::try_from(case.skip).unwrap_or(usize::MAX);
    let limit = case
        .limit
        .map(|l| usize::try_from(l.unsigned_abs()).unwrap_or(usize::MAX))
        .filter(|&l| l > 0)
        .unwrap_or(usize::MAX);
    let window: Vec<&Document> = expected.iter().skip(skip).take(limit).collect();
    let expected_bytes: Vec<Vec<u8>> = window.iter().map(|d| bytes(&project(d))).collect();
    let mismatch = |why: String| {
        Err(format!(
            "{why}\n  expected {}\n  got      {}",
            show_ids(&expected_bytes),
            show_ids(&got)
        ))
    };
    if got.len() != window.len() {
        return mismatch(format!(
            "expected {} documents, got {}",
            window.len(),
            got.len()
        ));
    }
    let id_excluded = case
        .projection
        .as_ref()
        .is_some_and(|p| matches!(p.get("_id"), Some(Bson::Int32(0) | Bson::Boolean(false))));
    match &case.sort {
        // Unordered: compare as sets keyed by `_id`.
        None => {
            let key_of = |raw: &Vec<u8>| -> Vec<u8> {
                Document::from_reader(raw.as_slice())
                    .map(|d| id_key(&d))
                    .unwrap_or_default()
            };
            let mut want = expected_bytes.clone();
            let mut have = got.clone();
            if id_excluded {
                want.sort();
                have.sort();
            } else {
                want.sort_by_key(key_of);
                have.sort_by_key(key_of);
            }
            if want != have {
                let first = want
                    .iter()
                    .zip(&have)
                    .find(|(w, h)| w != h)
                    .map(|(w, h)| format!("first difference: want {} have {}", show(w), show(h)))
                    .unwrap_or_default();
                return mismatch(format!("different documents ({first})"));
            }
        }
        // Fully ordered (or `_id` projected away): exact order.
        Some(sort) if total_order(sort) || id_excluded => {
            if let Some(i) = (0..got.len()).find(|&i| got[i] != expected_bytes[i]) {
                return mismatch(format!(
                    "position {i}: want {} have {}",
                    show(&expected_bytes[i]),
                    show(&got[i])
                ));
            }
        }
        // Ties allowed: every returned document is a distinct match whose sort key equals
        // the reference's at the same position, and comes back as the projection of the
        // stored document.
        Some(sort) => {
            let spec = SortSpec::parse(sort).expect("parsed above");
            let by_id: BTreeMap<Vec<u8>, &Document> =
                corpus.iter().map(|d| (id_key(d), d)).collect();
            let matching: HashSet<Vec<u8>> = expected.iter().map(id_key).collect();
            let mut seen = HashSet::new();
            for (i, raw) in got.iter().enumerate() {
                let returned = Document::from_reader(raw.as_slice())
                    .map_err(|e| format!("undecodable document: {e}"))?;
                let key = id_key(&returned);
                let Some(stored) = by_id.get(&key) else {
                    return mismatch(format!("position {i}: unknown document {returned}"));
                };
                if !matching.contains(&key) || !seen.insert(key) {
                    return mismatch(format!(
                        "position {i}: {returned} does not match or is repeated"
                    ));
                }
                if spec.compare(stored, window[i]) != Ordering::Equal {
                    return mismatch(format!(
                        "position {i}: sort key of {stored} differs from the expected {}",
                        window[i]
                    ));
                }
                if bytes(&project(stored)) != *raw {
                    return mismatch(format!(
                        "position {i}: want {} have {returned}",
                        project(stored)
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Runs a case on both collections; the description of every disagreement.
pub async fn differential(fx: &Fixture, case: &Case) -> Vec<String> {
    let mut failures = Vec::new();
    for (name, coll) in &fx.collections {
        let got = run(coll, case).await;
        if let Err(why) = check(&fx.corpus, case, got) {
            failures.push(format!(
                "[{name}] filter {} sort {:?} skip {} limit {:?} projection {:?}: {why}",
                exact(&case.filter),
                case.sort.as_ref().map(exact),
                case.skip,
                case.limit,
                case.projection.as_ref().map(exact)
            ));
        }
    }
    failures
}

/// `count` (the command, which the planner turns into a SQL `COUNT` when it can) on both
/// collections against the reference.
pub async fn count_differential(fx: &Fixture, filter: &Document) -> Vec<String> {
    let Ok(expected) = reference_matches(&fx.corpus, &Case::filter(filter.clone())) else {
        return Vec::new();
    };
    let mut failures = Vec::new();
    for (name, _) in &fx.collections {
        let reply = fx
            .db
            .run_command(doc! {"count": name, "query": filter.clone()})
            .await;
        let n = match reply {
            Ok(reply) => match reply.get("n") {
                Some(Bson::Int32(n)) => i64::from(*n),
                Some(Bson::Int64(n)) => *n,
                other => {
                    failures.push(format!("[{name}] count {}: n is {other:?}", exact(filter)));
                    continue;
                }
            },
            Err(e) => {
                failures.push(format!("[{name}] count {}: {e}", exact(filter)));
                continue;
            }
        };
        if n != expected.len() as i64 {
            failures.push(format!(
                "[{name}] count {}: expected {}, got {n}",
                exact(filter),
                expected.len()
            ));
        }
    }
    failures
}

pub fn report(failures: &[String], total: usize) {
    assert!(
        failures.is_empty(),
        "{} of {total} checks disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
