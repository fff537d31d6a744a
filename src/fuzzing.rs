//! Entry points for the fuzz targets in `fuzz/` (cargo feature `fuzzing`, never in the
//! server): each takes the bytes libFuzzer generates, runs them through the same functions
//! the server runs, and answers `Err` with a description when an invariant breaks. The fuzz
//! target turns that into a crash; a panic inside is a crash by itself.
//!
//! - [`command`]: a wire frame → `OP_MSG`/`OP_QUERY` → `CommandRequest` → the command's
//!   argument parsing (`mongo::commands::fuzzing`); every error reply encodes as BSON.
//! - [`filter_plan`]: a filter (with a sort, indexes and documents) → the planner → the SQL of
//!   both dialects. On SQLite every statement prepares, binds exactly its values and runs on
//!   a scratch collection, and the rows agree with the Rust evaluator (exact plans select
//!   exactly the matches, others over-select, never under-select); on PostgreSQL the
//!   placeholders are exactly the bound values.
//! - [`update`]: an update (with arrayFilters, a document, a query for the upsert) parsed and
//!   applied; an update that reports no change left the document identical.
//! - [`extended_json`]: a REST body parsed as Extended JSON; what docgate writes back of it
//!   parses again to the same text.
//!
//! Not for: the wire codec alone (the `wire` target uses `docgate-wire` directly) or anything
//! that needs a running server.

use bson::{doc, Bson, Document};
use docgate_wire::{decode_frame, Incoming, Op, MAX_MESSAGE_SIZE_BYTES};

use crate::catalog::CollectionIndex;
use crate::mongo::request::CommandRequest;
use crate::ops::prepare::prepare_for_storage;
use crate::ops::validation::{DocumentValidation, ValidationCheck};
use crate::query::planner::ReadPlan;
use crate::query::{upsert_seed, Filter, IndexSpec, SortSpec, UpdateContext, UpdateSpec};
use crate::store::sqlite::fuzzing::ScratchCollection;
use crate::store::{KeyOrder, ScanPosition, ScanRequest};

/// The result of one fuzz input: `Err` names the broken invariant.
pub type Checked = Result<(), String>;

/// One wire frame, as a connection would read it, through command parsing.
pub fn command(frame: &[u8]) -> Checked {
    let Incoming::Message(message) = decode_frame(frame, MAX_MESSAGE_SIZE_BYTES) else {
        return Ok(());
    };
    let request = match message.op {
        Op::Msg(msg) => CommandRequest::from_op_msg(msg),
        Op::Query(query) => CommandRequest::from_op_query(query),
        Op::Reply(_) | Op::RawMsg(_) => return Ok(()),
    };
    let results = match request {
        Ok(request) => {
            let _ = request.collection();
            crate::mongo::commands::fuzzing::parse_arguments(&request)
        }
        Err(error) => vec![Err(error)],
    };
    for error in results.into_iter().filter_map(Result::err) {
        let reply = error.to_reply();
        reply
            .to_vec()
            .map_err(|e| format!("error reply {reply:?} does not encode: {e}"))?;
    }
    Ok(())
}

/// Indexes the scratch collection has when the input names none.
fn default_indexes() -> Vec<Document> {
    vec![
        doc! {"a": 1},
        doc! {"b.c": -1},
        doc! {"a": 1, "b": 1},
        doc! {"s": 1},
    ]
}

/// Documents the scratch collection holds when the input gives none.
fn default_documents() -> Vec<Document> {
    vec![
        doc! {"_id": 1, "a": 1, "b": {"c": "x"}, "s": "abc"},
        doc! {"_id": 2, "a": [1, 2, 3], "b": [{"c": "x"}, {"c": 5}], "s": "abd"},
        doc! {"_id": "k", "a": 2.5, "b": {"c": null}, "s": ["a", "b"]},
        doc! {"_id": 4, "a": "1", "b": 7, "s": true},
        doc! {"_id": 5, "a": {"b": 1}, "c": [[1, 2], [3]], "s": 1},
        doc! {"_id": 6, "a": null},
        doc! {"_id": 7},
        doc! {"_id": bson::oid::ObjectId::from_bytes([1; 12]), "a": true, "b": {"c": [1, "x"]}},
        doc! {"_id": 9, "a": -0.0, "s": "", "b": {"c": {"d": 1}}},
        doc! {"_id": 10, "a": i64::MAX, "s": "ABC", "b": {"c": 2}},
    ]
}

/// `{filter, sort?, indexes?: [keyPattern], documents?: [document]}`: the filter planned over
/// a scratch SQLite collection and its SQL checked (see the module comment).
pub fn filter_plan(input: &[u8]) -> Checked {
    let Ok(input) = Document::from_reader(input) else {
        return Ok(());
    };
    let Ok(filter_document) = input.get_document("filter") else {
        return Ok(());
    };
    let Ok(filter) = Filter::parse(filter_document) else {
        return Ok(());
    };
    let sort = match input.get_document("sort") {
        Ok(sort) => match SortSpec::parse(sort) {
            Ok(sort) => Some(sort),
            Err(_) => return Ok(()),
        },
        Err(_) => None,
    };
    let patterns = match input.get_array("indexes") {
        Ok(items) => items
            .iter()
            .filter_map(Bson::as_document)
            .cloned()
            .collect(),
        Err(_) => default_indexes(),
    };
    let documents = match input.get_array("documents") {
        Ok(items) => items
            .iter()
            .filter_map(Bson::as_document)
            .cloned()
            .collect(),
        Err(_) => default_documents(),
    };
    let scratch = ScratchCollection::new().map_err(|e| format!("scratch collection: {e}"))?;
    let mut indexes = Vec::new();
    for (n, key) in patterns.iter().take(8).enumerate() {
        let spec_document = doc! {"key": key.clone(), "name": format!("i{n}"), "v": 2};
        let Ok(spec) = IndexSpec::parse(&spec_document) else {
            continue;
        };
        let record = scratch
            .create_index(&spec.name, &spec_document, false)
            .map_err(|e| format!("create index {key:?}: {e}"))?;
        indexes.push(CollectionIndex { record, spec });
    }
    let mut stored = Vec::new();
    let mut kept: Vec<Document> = Vec::new();
    for document in documents.into_iter().take(32) {
        let Ok(prepared) =
            prepare_for_storage(document, &indexes, Default::default(), &unvalidated())
        else {
            continue;
        };
        if stored
            .iter()
            .any(|s: &crate::store::StoredDocument| s.key == prepared.stored.key)
        {
            continue;
        }
        for position in prepared.new_multikey {
            if let Some(index) = indexes.get_mut(position) {
                index.record.multikey = true;
            }
        }
        let Ok(document) = Document::from_reader(prepared.stored.bson.as_slice()) else {
            continue;
        };
        kept.push(document);
        stored.push(prepared.stored);
    }
    if scratch.insert(&stored).is_err() {
        // A document the store refuses (e.g. nested past its image's depth) is not a
        // planner question.
        return Ok(());
    }
    let mut matching = Vec::new();
    for (document, stored) in kept.iter().zip(&stored) {
        match filter.try_matches(document) {
            Ok(true) => matching.push(stored.bson.clone()),
            Ok(false) => {}
            // The read would fail: nothing to compare.
            Err(_) => return check_dialects(&filter, sort, &indexes, &scratch, None),
        }
    }
    check_dialects(&filter, sort, &indexes, &scratch, Some(matching))
}

/// Plans `filter` (with and without `sort`, with and without a limit), checks every
/// statement on both dialects and, when `matching` is known, the rows against it.
fn check_dialects(
    filter: &Filter,
    sort: Option<SortSpec>,
    indexes: &[CollectionIndex],
    scratch: &ScratchCollection,
    matching: Option<Vec<Vec<u8>>>,
) -> Checked {
    let sorts = [None, sort];
    for sort in sorts {
        for (skip, limit) in [(0, None), (1, Some(2))] {
            let plan = ReadPlan::new(filter.clone(), sort.clone(), skip, limit, indexes);
            let rows = scratch.check_scan(&plan.scan)?;
            check_postgres(&plan.scan)?;
            let Some(matching) = &matching else { continue };
            if plan.scan.skip != 0 || plan.scan.limit.is_some() {
                continue;
            }
            if let Some(missing) = matching.iter().find(|m| !rows.contains(m)) {
                return Err(format!(
                    "the scan under-selects: {:?} matches but is not in the rows of {:?}",
                    Document::from_reader(missing.as_slice()),
                    plan.scan
                ));
            }
            if plan.residual.is_none() {
                if let Some(extra) = rows.iter().find(|r| !matching.contains(r)) {
                    return Err(format!(
                        "an exact scan over-selects: {:?} does not match but is in the rows of {:?}",
                        Document::from_reader(extra.as_slice()),
                        plan.scan
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The PostgreSQL statements of `scan`, resumed at a position of its order's kind.
fn check_postgres(scan: &ScanRequest) -> Checked {
    let after = match (&scan.order_index, scan.order) {
        (Some(_), _) => ScanPosition::IndexEntry {
            index_key: vec![1],
            key: vec![2],
        },
        (None, Some(KeyOrder::Ascending | KeyOrder::Descending)) => ScanPosition::Key(vec![3]),
        (None, None) => ScanPosition::Natural(4),
    };
    crate::store::postgres::fuzzing::check_scan(r#""docgate"."dgc_1""#, scan, &after)
}

/// `{u: update or pipeline, arrayFilters?, document?, q?}`: the update parsed and applied to
/// the document, and to the upsert seed of `q`.
pub fn update(input: &[u8]) -> Checked {
    let Ok(input) = Document::from_reader(input) else {
        return Ok(());
    };
    let spec = match input.get("u") {
        Some(Bson::Document(update)) => UpdateSpec::parse(update),
        Some(Bson::Array(stages)) => {
            let stages: Vec<Document> = stages
                .iter()
                .filter_map(Bson::as_document)
                .cloned()
                .collect();
            UpdateSpec::parse_pipeline(&stages)
        }
        _ => return Ok(()),
    };
    let Ok(spec) = spec else { return Ok(()) };
    let filters: Vec<Document> = match input.get_array("arrayFilters") {
        Ok(items) => items
            .iter()
            .filter_map(Bson::as_document)
            .cloned()
            .collect(),
        Err(_) => Vec::new(),
    };
    let Ok(context) = UpdateContext::with_array_filters(&filters) else {
        return Ok(());
    };
    if let Ok(document) = input.get_document("document") {
        let mut updated = document.clone();
        if let Ok(false) = spec.apply_with_context(&mut updated, &context) {
            let (before, after) = (document.to_vec(), updated.to_vec());
            if before.is_ok() && before.ok() != after.ok() {
                return Err(format!(
                    "an update that changed nothing changed {document:?} into {updated:?}"
                ));
            }
        }
    }
    if let Ok(query) = input.get_document("q") {
        if let Ok(seed) = Filter::parse(query).and_then(|filter| upsert_seed(&filter)) {
            if let Ok(inserted) = spec.apply_for_upsert(seed) {
                if inserted.keys().next().map(String::as_str) != Some("_id") {
                    return Err(format!(
                        "an upserted document without _id first: {inserted:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A REST request body (and the same text as a `q=` parameter and as a path segment) as
/// Extended JSON.
pub fn extended_json(body: &[u8]) -> Checked {
    use crate::rest::extjson;
    if let Ok(text) = std::str::from_utf8(body) {
        let _ = extjson::parse_document_text(text, "q");
        let _ = extjson::id_candidates(text);
        let _ = extjson::id_to_segment(&extjson::id_from_segment(text));
    }
    let Ok(value) = extjson::parse_json(body, serde_json::Value::Null) else {
        return Ok(());
    };
    let _ = extjson::to_bson(value.clone(), "body");
    let _ = extjson::to_documents(value.clone(), "body");
    let Ok(document) = extjson::to_document(value, "body") else {
        return Ok(());
    };
    let Ok(written) = serde_json::to_string(&extjson::RelaxedDocument(document)) else {
        return Ok(());
    };
    let again = extjson::parse_document_text(&written, "written")
        .map_err(|e| format!("docgate's own output {written} does not parse: {e:?}"))?;
    let rewritten = serde_json::to_string(&extjson::RelaxedDocument(again))
        .map_err(|e| format!("{written} parsed but does not write again: {e}"))?;
    if rewritten != written {
        return Err(format!("{written} written again is {rewritten}"));
    }
    Ok(())
}

/// Documents written by the targets go into collections without a validator.
fn unvalidated() -> ValidationCheck<'static> {
    ValidationCheck::new_document(None, DocumentValidation::Enforce)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scratch collection really holds the documents, and the comparison really fails
    /// when the rows miss a match (so a passing `filter_plan` means something).
    #[test]
    fn the_filter_check_compares_rows_with_matches() {
        let input = doc! {"filter": {"a": {"$gte": 1}}, "sort": {"a": -1}}
            .to_vec()
            .unwrap();
        assert_eq!(filter_plan(&input), Ok(()));
        let scratch = ScratchCollection::new().unwrap();
        let stored: Vec<_> = default_documents()
            .into_iter()
            .map(|d| {
                prepare_for_storage(d, &[], Default::default(), &unvalidated())
                    .unwrap()
                    .stored
            })
            .collect();
        assert_eq!(scratch.insert(&stored).unwrap(), 10);
        assert_eq!(scratch.check_scan(&ScanRequest::all()).unwrap().len(), 10);
        let filter = Filter::parse(&doc! {"_id": 1}).unwrap();
        let planted = vec![stored[1].bson.clone()];
        let error = check_dialects(&filter, None, &[], &scratch, Some(planted)).unwrap_err();
        assert!(error.contains("under-selects"), "{error}");
        let exact_but_more = vec![];
        let error = check_dialects(&filter, None, &[], &scratch, Some(exact_but_more)).unwrap_err();
        assert!(error.contains("over-selects"), "{error}");
    }

    #[test]
    fn the_other_checks_accept_real_inputs() {
        let update = doc! {"u": {"$set": {"a.$[x]": 1}}, "arrayFilters": [{"x": 2}],
        "document": {"_id": 1, "a": [1, 2]}, "q": {"_id": 3}};
        assert_eq!(super::update(&update.to_vec().unwrap()), Ok(()));
        assert_eq!(
            extended_json(br#"{"a": {"$date": "2020-01-01T00:00:00Z"}, "n": 1.5}"#),
            Ok(())
        );
        let mut frame = Vec::new();
        let body = doc! {"find": "c", "filter": {"a": 1}, "$db": "d"}
            .to_vec()
            .unwrap();
        let length = (16 + 4 + 1 + body.len()) as i32;
        for field in [length, 1, 0, 2013, 0] {
            frame.extend_from_slice(&field.to_le_bytes());
        }
        frame.push(0);
        frame.extend_from_slice(&body);
        assert_eq!(command(&frame), Ok(()));
    }
}
