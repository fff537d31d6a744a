//! `$graphLookup`: a breadth-first search of another collection from each input document's
//! `startWith` values, following `connectFromField` → `connectToField` up to `maxDepth`,
//! only through documents matching `restrictSearchWithMatch`; every document reached once,
//! with its depth in `depthField`. The other collection's documents come from the caller,
//! like `$lookup`'s ([`ForeignDocuments`]).
//!
//! Not for: `$lookup` (`stages.rs`).

use super::stages::ForeignDocuments;
use crate::query::error::QueryError;
use crate::query::expr::Expression;
use crate::query::filter::Filter;
use crate::query::value::compare::values_equal;
use crate::query::value::path::candidates;
use bson::{Bson, Document};
use std::sync::Arc;

/// A parsed `$graphLookup`.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphLookup {
    /// The collection searched.
    pub from: String,
    /// `startWith`.
    pub start_with: Expression,
    /// `connectFromField`.
    pub connect_from: String,
    /// `connectToField`.
    pub connect_to: String,
    /// `as`.
    pub as_field: String,
    /// `maxDepth` (unbounded when `None`).
    pub max_depth: Option<u64>,
    /// `depthField`.
    pub depth_field: Option<String>,
    /// `restrictSearchWithMatch`.
    pub restrict: Option<Filter>,
}

fn loc(code: i32, message: impl Into<String>) -> QueryError {
    QueryError::location(code, message)
}

fn string_argument(d: &Document, field: &str) -> Result<Option<String>, QueryError> {
    match d.get(field) {
        None => Ok(None),
        Some(Bson::String(s)) => {
            if field != "from" && s.starts_with('$') {
                return Err(loc(
                    16410,
                    format!("FieldPath field names may not start with '$'. ({s})"),
                ));
            }
            Ok(Some(s.clone()))
        }
        Some(other) => Err(loc(
            40103,
            format!(
                "expected string as argument for {field}, found: {}",
                crate::query::expr::ops::type_name(Some(other))
            ),
        )),
    }
}

/// Parses `$graphLookup`.
pub fn parse_graph_lookup(spec: &Bson) -> Result<GraphLookup, QueryError> {
    let Bson::Document(d) = spec else {
        return Err(QueryError::failed_to_parse(
            "the $graphLookup stage specification must be an object",
        ));
    };
    for key in d.keys() {
        if !matches!(
            key.as_str(),
            "from"
                | "startWith"
                | "connectFromField"
                | "connectToField"
                | "as"
                | "maxDepth"
                | "depthField"
                | "restrictSearchWithMatch"
        ) {
            return Err(loc(
                40104,
                format!("Unknown argument to $graphLookup: {key}"),
            ));
        }
    }
    let from = match d.get("from") {
        Some(Bson::String(s)) => Some(s.clone()),
        Some(_) => return Err(loc(40103, "expected string as argument for from")),
        None => None,
    };
    let connect_from = string_argument(d, "connectFromField")?;
    let connect_to = string_argument(d, "connectToField")?;
    let as_field = string_argument(d, "as")?;
    let depth_field = string_argument(d, "depthField")?;
    let (Some(from), Some(start), Some(connect_from), Some(connect_to), Some(as_field)) =
        (from, d.get("startWith"), connect_from, connect_to, as_field)
    else {
        return Err(loc(
            40105,
            "from, as, startWith, connectFromField and connectToField must all be specified",
        ));
    };
    let max_depth = match d.get("maxDepth") {
        None => None,
        Some(v) => {
            let Some(n) = crate::query::value::number::Number::from_bson(v) else {
                return Err(loc(40100, format!("maxDepth must be numeric, found: {v}")));
            };
            let Some(n) = n.to_exact_i64() else {
                return Err(loc(
                    40102,
                    format!("maxDepth requires an integral argument, found: {v}"),
                ));
            };
            if n < 0 {
                return Err(loc(
                    40101,
                    format!("maxDepth requires a nonnegative argument, found: {n}"),
                ));
            }
            Some(n as u64)
        }
    };
    let restrict = match d.get("restrictSearchWithMatch") {
        None => None,
        Some(Bson::Document(m)) => Some(Filter::parse(m)?),
        Some(other) => {
            return Err(loc(
                40185,
                format!(
                    "restrictSearchWithMatch must be an object, found {}",
                    crate::query::expr::ops::type_name(Some(other))
                ),
            ))
        }
    };
    Ok(GraphLookup {
        from,
        start_with: Expression::parse(start)?,
        connect_from,
        connect_to,
        as_field,
        max_depth,
        depth_field,
        restrict,
    })
}

/// The values at a path, array elements one by one (none for a missing field).
fn values_at(doc: &Document, path: &str) -> Vec<Bson> {
    let mut out = Vec::new();
    for c in candidates(doc, path) {
        match c.value {
            Some(Bson::Array(items)) => out.extend(items.iter().cloned()),
            Some(v) => out.push(v.clone()),
            None => {}
        }
    }
    out
}

/// A `$graphLookup`'s search over its `from` collection: the documents its
/// `restrictSearchWithMatch` keeps (their positions) and each one's `connectToField` values.
#[derive(Debug)]
pub struct Search {
    members: Vec<usize>,
    targets: Vec<Vec<Bson>>,
}

impl GraphLookup {
    /// What names its search among the prepared ones: the collection, the field searched
    /// and the restriction.
    fn search_key(&self) -> String {
        format!(
            "{}\u{0}{}\u{0}{:?}",
            self.from, self.connect_to, self.restrict
        )
    }

    /// Its search over `others`.
    fn prepare(&self, others: &[Document]) -> Search {
        let mut members = Vec::new();
        let mut targets = Vec::new();
        for (position, other) in others.iter().enumerate() {
            if self.restrict.as_ref().is_some_and(|f| !f.matches(other)) {
                continue;
            }
            // Matched like the `{connectToField: {$in: [...]}}` query MongoDB runs: a
            // missing field is null.
            let values = values_at(other, &self.connect_to);
            members.push(position);
            targets.push(if values.is_empty() {
                vec![Bson::Null]
            } else {
                values
            });
        }
        Search { members, targets }
    }
}

/// Runs `$graphLookup` for every input document.
pub fn run_graph_lookup(
    spec: &GraphLookup,
    docs: Vec<Document>,
    foreign: &ForeignDocuments,
) -> Result<Vec<Document>, QueryError> {
    let empty = Vec::new();
    let collection = foreign.get(&spec.from).unwrap_or(&empty);
    // A restriction that evaluates expressions (`$expr`, with `$rand` or a `$lookup`'s
    // variables in it) is prepared afresh for each call.
    let search = match &spec.restrict {
        Some(filter) if filter.evaluates_expressions() => Arc::new(spec.prepare(collection)),
        _ => foreign.search(&spec.search_key(), || Ok(spec.prepare(collection)))?,
    };
    let targets = &search.targets;
    let mut out = Vec::with_capacity(docs.len());
    for mut doc in docs {
        let mut frontier: Vec<Bson> = match spec.start_with.evaluate_optional(&doc)? {
            None => vec![Bson::Null],
            Some(Bson::Array(items)) => items,
            Some(v) => vec![v],
        };
        let mut reached = vec![false; search.members.len()];
        let mut found: Vec<Bson> = Vec::new();
        let mut depth: u64 = 0;
        while !frontier.is_empty() && spec.max_depth.is_none_or(|m| depth <= m) {
            crate::interrupt::check_now()?;
            let mut next = Vec::new();
            for (i, &position) in search.members.iter().enumerate() {
                if reached[i]
                    || !targets[i]
                        .iter()
                        .any(|t| frontier.iter().any(|f| values_equal(t, f)))
                {
                    continue;
                }
                reached[i] = true;
                let Some(other) = collection.get(position) else {
                    continue;
                };
                let mut hit = other.clone();
                if let Some(field) = &spec.depth_field {
                    hit.insert(field.clone(), Bson::Int64(depth as i64));
                }
                next.extend(values_at(other, &spec.connect_from));
                found.push(Bson::Document(hit));
            }
            frontier = next;
            depth += 1;
        }
        doc.insert(spec.as_field.clone(), Bson::Array(found));
        out.push(doc);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::query::aggregate::{ForeignDocuments, Pipeline};
    use bson::{doc, Bson, Document};

    fn employees() -> Vec<Document> {
        vec![
            doc! {"_id": 1, "name": "Dev"},
            doc! {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
            doc! {"_id": 3, "name": "Ron", "reportsTo": "Eliot"},
            doc! {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
            doc! {"_id": 5, "name": "Asya", "reportsTo": "Ron"},
            doc! {"_id": 6, "name": "Dan", "reportsTo": "Andrew"},
        ]
    }

    fn names(doc: &Document, field: &str) -> Vec<(String, Option<i64>)> {
        let mut v: Vec<(String, Option<i64>)> = doc
            .get_array(field)
            .unwrap()
            .iter()
            .filter_map(|b| match b {
                Bson::Document(d) => Some((
                    d.get_str("name").unwrap().to_string(),
                    d.get_i64("depth").ok(),
                )),
                _ => None,
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn reporting_hierarchy() {
        let p = Pipeline::parse(&[doc! {"$graphLookup": {
        "from": "employees", "startWith": "$reportsTo", "connectFromField": "reportsTo",
        "connectToField": "name", "as": "reportingHierarchy", "depthField": "depth"}}])
        .unwrap();
        assert_eq!(p.foreign_collections(), vec!["employees".to_string()]);
        let mut foreign = ForeignDocuments::new();
        foreign.insert("employees".into(), employees());
        let out = p.run_with(employees(), &foreign).unwrap();
        assert!(names(&out[0], "reportingHierarchy").is_empty());
        // A missing startWith is null, and finds the documents without connectToField.
        let mut with_nameless = employees();
        with_nameless.push(doc! {"_id": 7, "title": "vacancy"});
        foreign.insert("employees".into(), with_nameless);
        let out = p.run_with(employees(), &foreign).unwrap();
        assert_eq!(
            out[0].get_array("reportingHierarchy").unwrap(),
            &vec![Bson::Document(
                doc! {"_id": 7, "title": "vacancy", "depth": 0_i64}
            )]
        );
        foreign.insert("employees".into(), employees());
        assert_eq!(
            names(&out[4], "reportingHierarchy"),
            vec![
                ("Dev".into(), Some(2)),
                ("Eliot".into(), Some(1)),
                ("Ron".into(), Some(0))
            ]
        );
        let p = Pipeline::parse(&[doc! {"$graphLookup": {
        "from": "employees", "startWith": "$reportsTo", "connectFromField": "reportsTo",
        "connectToField": "name", "as": "h", "maxDepth": 0,
        "restrictSearchWithMatch": {"_id": {"$ne": 3}}}}])
        .unwrap();
        let out = p.run_with(employees(), &foreign).unwrap();
        assert!(names(&out[4], "h").is_empty());
        assert_eq!(names(&out[5], "h"), vec![("Andrew".into(), None)]);
    }

    #[test]
    fn errors() {
        let code = |spec: Document| {
            Pipeline::parse(&[doc! {"$graphLookup": spec}])
                .unwrap_err()
                .code
        };
        assert_eq!(code(doc! {"from": "e", "startWith": "$a"}), 40105);
        assert_eq!(
            code(
                doc! {"from": "e", "startWith": "$a", "connectFromField": "a", "connectToField": "b", "as": "c", "maxDepth": -1}
            ),
            40101
        );
        assert_eq!(
            code(
                doc! {"from": "e", "startWith": "$a", "connectFromField": "a", "connectToField": "b", "as": "c", "bogus": 1}
            ),
            40104
        );
        assert_eq!(
            code(
                doc! {"from": "e", "startWith": "$a", "connectFromField": 1, "connectToField": "b", "as": "c"}
            ),
            40103
        );
    }
}
