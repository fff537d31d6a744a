//! Update documents: replacement (`{a: 1}`), operator updates (`{$set: …, $inc: …}`) and
//! pipeline updates (`[{$set: …}]`), parsed with MongoDB's errors (unknown modifiers,
//! conflicting paths, `_id` immutability) and applied to a document, including the upsert
//! case that starts from the query's equalities.
//!
//! Not for: each operator's semantics (`update/ops.rs`), path writing (`update/path.rs`) or
//! choosing which documents to update.

mod ops;
mod path;

use crate::query::error::QueryError;
use crate::query::update::ops::{
    apply_operation, parse_operation, UpdateOperation, UpdateOperator,
};
pub use crate::query::update::path::UpdateContext;
use crate::query::value::compare::{documents_identical, identical};
use bson::{Bson, Document};

/// A parsed update.
#[derive(Clone, Debug, PartialEq)]
pub enum UpdateSpec {
    /// Replace the whole document (keeping `_id`).
    Replacement(Document),
    /// Apply `$`-operators, in path order.
    Operators(Vec<UpdateOperation>),
    /// Run aggregation stages ($set/$addFields, $unset, $project, $replaceRoot/$replaceWith).
    Pipeline(crate::query::aggregate::Pipeline),
}

impl UpdateSpec {
    /// Parses an update document.
    pub fn parse(update: &Document) -> Result<UpdateSpec, QueryError> {
        let first_is_operator = update
            .keys()
            .next()
            .map(|k| k.starts_with('$'))
            .unwrap_or(false);
        if !first_is_operator {
            for key in update.keys() {
                if key.starts_with('$') {
                    return Err(QueryError {
                        code: 52,
                        code_name: "DollarPrefixedFieldName",
                        message: format!(
                            "The dollar ($) prefixed field '{key}' in '{key}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith."
                        ),
                    });
                }
            }
            return Ok(UpdateSpec::Replacement(update.clone()));
        }
        let mut operations = Vec::new();
        for (name, fields) in update {
            let operator = UpdateOperator::from_name(name).ok_or_else(|| {
                QueryError::failed_to_parse(format!("Unknown modifier: {name}. Expected a valid update modifier or pipeline-style update specified as an array"))
            })?;
            let Bson::Document(fields) = fields else {
                return Err(QueryError::failed_to_parse(format!(
                    "Modifiers operate on fields but we found type {} instead. For example: {{$mod: {{<field>: ...}}}} not {{{name}: {fields}}}",
                    crate::query::expr::ops::type_name(Some(fields))
                )));
            };
            for (path, argument) in fields {
                operations.push(parse_operation(operator, path, argument)?);
            }
        }
        check_conflicts(&operations)?;
        operations.sort_by(|a, b| path_order(&a.path, &b.path));
        Ok(UpdateSpec::Operators(operations))
    }

    /// Parses a pipeline-style update (an array of stages).
    pub fn parse_pipeline(stages: &[Document]) -> Result<UpdateSpec, QueryError> {
        for stage in stages {
            let name = stage.keys().next().map(String::as_str).unwrap_or("");
            if !matches!(
                name,
                "$addFields" | "$set" | "$project" | "$unset" | "$replaceRoot" | "$replaceWith"
            ) {
                return Err(QueryError::invalid_pipeline_operator(format!(
                    "{name} is not allowed to be used within an update"
                )));
            }
        }
        Ok(UpdateSpec::Pipeline(
            crate::query::aggregate::Pipeline::parse(stages)?,
        ))
    }

    /// Applies the update; returns whether the document changed.
    pub fn apply(&self, doc: &mut Document) -> Result<bool, QueryError> {
        self.apply_with_context(doc, &UpdateContext::default())
    }

    /// [`apply`](Self::apply) with a matched array position and array filters.
    pub fn apply_with_context(
        &self,
        doc: &mut Document,
        context: &UpdateContext,
    ) -> Result<bool, QueryError> {
        self.check_array_filters(context)?;
        let before = doc.clone();
        let updated = self.compute(&before, context, false)?;
        check_id_unchanged(&before, &updated)?;
        let changed = !documents_identical(&before, &updated);
        *doc = updated;
        Ok(changed)
    }

    /// MongoDB's checks between `$[identifier]` paths and `arrayFilters`: every identifier
    /// needs a filter (BadValue) and every filter must be used (FailedToParse).
    pub fn check_array_filters(&self, context: &UpdateContext) -> Result<(), QueryError> {
        let UpdateSpec::Operators(operations) = self else {
            if let Some((id, _)) = context.array_filters.first() {
                return Err(QueryError::failed_to_parse(format!(
                    "The array filter for identifier '{id}' was not used in the update"
                )));
            }
            return Ok(());
        };
        let mut used: Vec<&str> = Vec::new();
        for operation in operations {
            for component in operation.path.split('.') {
                let Some(id) = component
                    .strip_prefix("$[")
                    .and_then(|c| c.strip_suffix(']'))
                else {
                    continue;
                };
                if id.is_empty() {
                    continue;
                }
                if !context.array_filters.iter().any(|(name, _)| name == id) {
                    return Err(QueryError::bad_value(format!(
                        "No array filter found for identifier '{id}' in path '{}'",
                        operation.path
                    )));
                }
                used.push(id);
            }
        }
        for (id, _) in &context.array_filters {
            if !used.contains(&id.as_str()) {
                return Err(QueryError::failed_to_parse(format!(
                    "The array filter for identifier '{id}' was not used in the update"
                )));
            }
        }
        Ok(())
    }

    /// The document an upsert inserts: `seed` (the query's equalities, see
    /// `filter::equality_fields`) updated, `$setOnInsert` included; `_id` placed first and
    /// generated as an ObjectId if neither the query nor the update supplied one.
    pub fn apply_for_upsert(&self, seed: Document) -> Result<Document, QueryError> {
        let mut result = match self {
            UpdateSpec::Replacement(replacement) => {
                let mut out = Document::new();
                match (seed.get("_id"), replacement.get("_id")) {
                    (Some(a), Some(b)) if !identical(a, b) => {
                        return Err(QueryError::immutable_field(format!(
                            "The _id field cannot be changed from {{_id: {a}}} to {{_id: {b}}}."
                        )))
                    }
                    (Some(a), None) => {
                        out.insert("_id", a.clone());
                    }
                    _ => {}
                }
                out.extend(replacement.clone());
                out
            }
            _ => {
                let updated = self.compute(&seed, &UpdateContext::default(), true)?;
                if let Some(original) = seed.get("_id") {
                    if updated
                        .get("_id")
                        .is_none_or(|now| !identical(original, now))
                    {
                        return Err(id_changed_error());
                    }
                }
                updated
            }
        };
        let id = result
            .remove("_id")
            .unwrap_or_else(|| Bson::ObjectId(bson::oid::ObjectId::new()));
        let mut ordered = Document::new();
        ordered.insert("_id", id);
        ordered.extend(std::mem::take(&mut result));
        Ok(ordered)
    }

    fn compute(
        &self,
        doc: &Document,
        context: &UpdateContext,
        inserting: bool,
    ) -> Result<Document, QueryError> {
        match self {
            UpdateSpec::Replacement(replacement) => {
                let mut out = Document::new();
                if let Some(id) = doc.get("_id") {
                    if let Some(new_id) = replacement.get("_id") {
                        if !identical(id, new_id) {
                            return Err(QueryError::immutable_field(format!(
                                "After applying the update, the (immutable) field '_id' was found to have been altered to _id: {new_id}"
                            )));
                        }
                    }
                    out.insert("_id", id.clone());
                }
                for (k, v) in replacement {
                    if k != "_id" || !out.contains_key("_id") {
                        out.insert(k.clone(), v.clone());
                    }
                }
                Ok(out)
            }
            UpdateSpec::Operators(operations) => {
                let mut out = doc.clone();
                for operation in operations {
                    if operation.operator == UpdateOperator::SetOnInsert && !inserting {
                        continue;
                    }
                    apply_operation(operation, &mut out, context)?;
                }
                Ok(out)
            }
            UpdateSpec::Pipeline(pipeline) => {
                let mut results = pipeline.run(vec![doc.clone()])?;
                let mut out = results.pop().unwrap_or_default();
                if let Some(id) = doc.get("_id") {
                    if !out.contains_key("_id") {
                        let mut with_id = Document::new();
                        with_id.insert("_id", id.clone());
                        with_id.extend(out);
                        out = with_id;
                    }
                }
                Ok(out)
            }
        }
    }
}

fn id_changed_error() -> QueryError {
    QueryError::immutable_field(
        "Performing an update on the path '_id' would modify the immutable field '_id'",
    )
}

fn check_id_unchanged(before: &Document, after: &Document) -> Result<(), QueryError> {
    match (before.get("_id"), after.get("_id")) {
        (Some(a), Some(b)) if identical(a, b) => Ok(()),
        (None, _) => Ok(()),
        _ => Err(id_changed_error()),
    }
}

/// Orders paths the way MongoDB applies updates: component by component, numeric
/// components numerically, others by bytes.
fn path_order(a: &str, b: &str) -> std::cmp::Ordering {
    let mut left = a.split('.');
    let mut right = b.split('.');
    loop {
        match (left.next(), right.next()) {
            (None, None) => return std::cmp::Ordering::Equal,
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => {
                let order = match (
                    crate::query::value::path::array_index(x),
                    crate::query::value::path::array_index(y),
                ) {
                    (Some(i), Some(j)) => i.cmp(&j),
                    _ => x.as_bytes().cmp(y.as_bytes()),
                };
                if order != std::cmp::Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

fn check_conflicts(operations: &[UpdateOperation]) -> Result<(), QueryError> {
    let mut paths: Vec<&str> = Vec::new();
    for operation in operations {
        paths.push(&operation.path);
        if let Some(target) = operation.rename_target() {
            paths.push(target);
        }
    }
    for (i, a) in paths.iter().enumerate() {
        for b in paths.iter().skip(i + 1) {
            if let Some(common) = conflict(a, b) {
                return Err(QueryError::conflicting_update_operators(format!(
                    "Updating the path '{b}' would create a conflict at '{common}'"
                )));
            }
        }
    }
    Ok(())
}

/// Two paths conflict when one is a component-wise prefix of the other (or they are equal);
/// returns the shorter one.
fn conflict<'a>(a: &'a str, b: &'a str) -> Option<&'a str> {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if long == short || long.starts_with(&format!("{short}.")) {
        Some(short)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn run(update: Document, mut d: Document) -> Result<(bool, Document), QueryError> {
        let changed = UpdateSpec::parse(&update)?.apply(&mut d)?;
        Ok((changed, d))
    }

    #[test]
    fn set_unset_inc() {
        let (changed, d) = run(
            doc! {"$set": {"a.b": 1, "z": 2}, "$inc": {"n": 1}},
            doc! {"_id": 1, "n": 1},
        )
        .unwrap();
        assert!(changed);
        assert_eq!(d, doc! {"_id": 1, "n": 2, "a": {"b": 1}, "z": 2});
        let (changed, _) = run(doc! {"$set": {"n": 1}}, doc! {"_id": 1, "n": 1}).unwrap();
        assert!(!changed);
        let (changed, d) = run(doc! {"$set": {"n": 1.0}}, doc! {"_id": 1, "n": 1}).unwrap();
        assert!(changed);
        assert_eq!(d.get("n"), Some(&Bson::Double(1.0)));
        let (_, d) = run(
            doc! {"$unset": {"a": "", "b.c": 1, "x.y": 1}},
            doc! {"_id": 1, "a": 1, "b": {"c": 1, "d": 2}},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "b": {"d": 2}});
        let (_, d) = run(doc! {"$inc": {"i": 1}}, doc! {"_id": 1, "i": i32::MAX}).unwrap();
        assert_eq!(d.get("i"), Some(&Bson::Int64(i64::from(i32::MAX) + 1)));
        let (_, d) = run(doc! {"$inc": {"new": 2.5}}, doc! {"_id": 1}).unwrap();
        assert_eq!(d.get("new"), Some(&Bson::Double(2.5)));
    }

    #[test]
    fn arrays_grow_with_nulls_and_paths_can_fail() {
        let (_, d) = run(doc! {"$set": {"a.3": 1}}, doc! {"_id": 1, "a": [0]}).unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [0, null, null, 1]});
        let (_, d) = run(
            doc! {"$set": {"a.1.b": 1}},
            doc! {"_id": 1, "a": [{"b": 0}, {"b": 0}]},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [{"b": 0}, {"b": 1}]});
        let e = run(doc! {"$set": {"a.b": 1}}, doc! {"_id": 1, "a": 5}).unwrap_err();
        assert_eq!(e.code, 28);
        let e = run(doc! {"$inc": {"a": 1}}, doc! {"_id": 1, "a": "x"}).unwrap_err();
        assert_eq!(e.code, 14);
        let e = UpdateSpec::parse(&doc! {"$inc": {"a": "x"}}).unwrap_err();
        assert_eq!(e.code, 14);
    }

    #[test]
    fn parse_errors() {
        let e = UpdateSpec::parse(&doc! {"$foo": {"a": 1}}).unwrap_err();
        assert_eq!(e.code, 9);
        assert!(e.message.starts_with("Unknown modifier: $foo"));
        let e = UpdateSpec::parse(&doc! {"$set": {"a": 1}, "b": 2}).unwrap_err();
        assert_eq!(e.code, 9);
        let e = UpdateSpec::parse(&doc! {"$set": {"a.b": 1}, "$inc": {"a": 1}}).unwrap_err();
        assert_eq!(e.code, 40);
        let e = UpdateSpec::parse(&doc! {"a": 1, "$set": {"b": 2}}).unwrap_err();
        assert_eq!(e.code, 52);
        assert_eq!(
            UpdateSpec::parse(&doc! {}).unwrap(),
            UpdateSpec::Replacement(doc! {})
        );
    }

    #[test]
    fn id_is_immutable() {
        let e = run(doc! {"$set": {"_id": 2}}, doc! {"_id": 1}).unwrap_err();
        assert_eq!(e.code, 66);
        assert!(run(doc! {"$set": {"_id": 1}}, doc! {"_id": 1}).is_ok());
        let (_, d) = run(doc! {"x": 1}, doc! {"_id": 1, "y": 2}).unwrap();
        assert_eq!(d, doc! {"_id": 1, "x": 1});
        let e = run(doc! {"_id": 2, "x": 1}, doc! {"_id": 1}).unwrap_err();
        assert_eq!(e.code, 66);
    }

    #[test]
    fn upsert_seeding() {
        let spec = UpdateSpec::parse(&doc! {"$set": {"b": 2}, "$setOnInsert": {"c": 3}}).unwrap();
        let d = spec
            .apply_for_upsert(doc! {"_id": 5, "a": {"x": 1}})
            .unwrap();
        assert_eq!(d, doc! {"_id": 5, "a": {"x": 1}, "b": 2, "c": 3});
        let d = spec.apply_for_upsert(doc! {"a": 1}).unwrap();
        assert!(matches!(d.get("_id"), Some(Bson::ObjectId(_))));
        assert_eq!(d.keys().next().map(String::as_str), Some("_id"));
        let mut existing = doc! {"_id": 1};
        spec.apply(&mut existing).unwrap();
        assert_eq!(existing, doc! {"_id": 1, "b": 2});
        let replacement = UpdateSpec::parse(&doc! {"z": 1}).unwrap();
        assert_eq!(
            replacement
                .apply_for_upsert(doc! {"_id": 3, "q": 1})
                .unwrap(),
            doc! {"_id": 3, "z": 1}
        );
    }

    #[test]
    fn array_operators() {
        let (_, d) = run(doc! {"$push": {"a": 3}}, doc! {"_id": 1, "a": [1]}).unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [1, 3]});
        let (_, d) = run(
            doc! {"$push": {"a": {"$each": [5, 2, 9], "$sort": 1, "$slice": -3}}},
            doc! {"_id": 1, "a": [1]},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [2, 5, 9]});
        let (_, d) = run(
            doc! {"$push": {"a": {"$each": [0], "$position": 0}}},
            doc! {"_id": 1, "a": [1]},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [0, 1]});
        let e = run(doc! {"$push": {"a": 1}}, doc! {"_id": 1, "a": 1}).unwrap_err();
        assert_eq!(e.code, 2);
        let (_, d) = run(
            doc! {"$addToSet": {"a": {"$each": [1, 2]}}},
            doc! {"_id": 1, "a": [1.0]},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [1.0, 2]});
        let (_, d) = run(doc! {"$pop": {"a": -1}}, doc! {"_id": 1, "a": [1, 2]}).unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [2]});
        let (_, d) = run(
            doc! {"$pull": {"a": {"$gte": 2}}},
            doc! {"_id": 1, "a": [1, 2, 3]},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [1]});
        let (_, d) = run(
            doc! {"$pull": {"a": {"x": 1}}},
            doc! {"_id": 1, "a": [{"x": 1, "y": 2}, {"x": 2}]},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [{"x": 2}]});
        let (_, d) = run(
            doc! {"$pullAll": {"a": [1, 3]}},
            doc! {"_id": 1, "a": [1, 2, 3, 1]},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [2]});
    }

    #[test]
    fn array_operators_with_many_values_keep_mongodb_equality_and_order() {
        let (_, d) = run(
            doc! {"$addToSet": {"a": {"$each": [2_i64, 3, 1, 3.0, 4, 2.0, 0.0]}}},
            doc! {"_id": 1, "a": [1.0, 2, 2, -0.0]},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [1.0, 2, 2, -0.0, 3, 4]});
        let (_, d) = run(
            doc! {"$addToSet": {"a": {"$each": [[1, 2], {"x": 1.0}, [1.0, 2_i64], {"x": 1}]}}},
            doc! {"_id": 1, "a": []},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [[1, 2], {"x": 1.0}]});
        let (_, d) = run(
            doc! {"$push": {"a": {"$each": [7, 8, 9], "$position": 1}}},
            doc! {"_id": 1, "a": [1, 2, 3]},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [1, 7, 8, 9, 2, 3]});
        let (_, d) = run(
            doc! {"$push": {"a": {"$each": [7, 8], "$position": -1}}},
            doc! {"_id": 1, "a": [1, 2, 3]},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [1, 2, 7, 8, 3]});
        let (_, d) = run(
            doc! {"$pullAll": {"a": [1_i64, 3.0, {"x": 1.0}]}},
            doc! {"_id": 1, "a": [1, 2.0, 3, 1.0, {"x": 1}, {"x": 2}, [1]]},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [2.0, {"x": 2}, [1]]});
    }

    #[test]
    fn other_operators() {
        let (_, d) = run(
            doc! {"$min": {"a": 1}, "$max": {"b": 10}, "$mul": {"c": 3, "m": 2}},
            doc! {"_id": 1, "a": 5, "b": 5, "c": 2},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": 1, "b": 10, "c": 6, "m": 0});
        let (_, d) = run(doc! {"$rename": {"a": "b.c"}}, doc! {"_id": 1, "a": 5}).unwrap();
        assert_eq!(d, doc! {"_id": 1, "b": {"c": 5}});
        let (_, d) = run(
            doc! {"$bit": {"a": {"and": 6, "or": 1}}},
            doc! {"_id": 1, "a": 5},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": 5});
        let (_, d) = run(doc! {"$currentDate": {"t": true}}, doc! {"_id": 1}).unwrap();
        assert!(matches!(d.get("t"), Some(Bson::DateTime(_))));
    }

    #[test]
    fn integer_overflow_in_updates_is_an_error() {
        let e = run(doc! {"$inc": {"a": 1}}, doc! {"_id": 1, "a": i64::MAX}).unwrap_err();
        assert_eq!(e.code, 2);
        assert_eq!(
            e.message,
            "Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) for document {_id: 1}"
        );
        let e = run(doc! {"$inc": {"a": i64::MAX}}, doc! {"_id": "x", "a": 42}).unwrap_err();
        assert_eq!(
            e.message,
            "Failed to apply $inc operations to current value ((NumberInt)42) for document {_id: \"x\"}"
        );
        let e = run(doc! {"$mul": {"a": 4}}, doc! {"_id": 1, "a": 1i64 << 62}).unwrap_err();
        assert!(e.message.starts_with("Failed to apply $mul operations"));
        let (_, d) = run(doc! {"$inc": {"a": 1.5}}, doc! {"_id": 1, "a": i64::MAX}).unwrap();
        assert!(matches!(d.get("a"), Some(Bson::Double(_))));
    }

    #[test]
    fn huge_array_index_is_refused() {
        let e = run(
            doc! {"$set": {"a.99999999999": 1}},
            doc! {"_id": 1, "a": []},
        )
        .unwrap_err();
        assert_eq!(e.code, 2);
        let (changed, _) = run(
            doc! {"$unset": {"a.99999999999": 1}},
            doc! {"_id": 1, "a": []},
        )
        .unwrap();
        assert!(!changed);
    }

    #[test]
    fn array_filters_must_match_identifiers() {
        let spec = UpdateSpec::parse(&doc! {"$set": {"a.$[x]": 0}}).unwrap();
        let unused = UpdateContext::with_array_filters(&[doc! {"y": 1}]).unwrap();
        assert_eq!(spec.check_array_filters(&unused).unwrap_err().code, 2);
        let both = UpdateContext::with_array_filters(&[doc! {"x": 1}, doc! {"y": 1}]).unwrap();
        assert_eq!(spec.check_array_filters(&both).unwrap_err().code, 9);
        let exact = UpdateContext::with_array_filters(&[doc! {"x": 1}]).unwrap();
        assert!(spec.check_array_filters(&exact).is_ok());
    }

    #[test]
    fn positional_all_and_array_filters() {
        let (_, d) = run(doc! {"$inc": {"a.$[]": 1}}, doc! {"_id": 1, "a": [1, 2]}).unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [2, 3]});
        let spec = UpdateSpec::parse(&doc! {"$set": {"a.$[x].b": 0}}).unwrap();
        let context = UpdateContext::with_array_filters(&[doc! {"x.b": {"$gt": 1}}]).unwrap();
        let mut d = doc! {"_id": 1, "a": [{"b": 1}, {"b": 5}]};
        spec.apply_with_context(&mut d, &context).unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [{"b": 1}, {"b": 0}]});
        let context = UpdateContext {
            matched_index: Some(0),
            array_filters: vec![],
        };
        let spec = UpdateSpec::parse(&doc! {"$set": {"a.$": 9}}).unwrap();
        let mut d = doc! {"_id": 1, "a": [1, 2]};
        spec.apply_with_context(&mut d, &context).unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [9, 2]});
    }

    /// Examples of the MongoDB manual's `$pull` page.
    #[test]
    fn manual_pull_examples() {
        let (_, d) = run(
            doc! {"$pull": {"fruits": {"$in": ["apples", "oranges"]}, "vegetables": "carrots"}},
            doc! {"_id": 1, "fruits": ["apples", "pears", "oranges", "grapes", "bananas"], "vegetables": ["carrots", "celery", "squash", "carrots"]},
        )
        .unwrap();
        assert_eq!(
            d,
            doc! {"_id": 1, "fruits": ["pears", "grapes", "bananas"], "vegetables": ["celery", "squash"]}
        );
        let (_, d) = run(
            doc! {"$pull": {"votes": {"$gte": 6}}},
            doc! {"_id": 1, "votes": [3, 5, 6, 7, 7, 8]},
        )
        .unwrap();
        assert_eq!(d, doc! {"_id": 1, "votes": [3, 5]});
        let (_, d) = run(
            doc! {"$pull": {"results": {"answers": {"$elemMatch": {"q": 2, "a": {"$gte": 8}}}}}},
            doc! {"_id": 1, "results": [
                {"item": "A", "score": 5, "answers": [{"q": 1, "a": 4}, {"q": 2, "a": 6}]},
                {"item": "B", "score": 8, "answers": [{"q": 1, "a": 8}, {"q": 2, "a": 9}]},
            ]},
        )
        .unwrap();
        assert_eq!(
            d,
            doc! {"_id": 1, "results": [{"item": "A", "score": 5, "answers": [{"q": 1, "a": 4}, {"q": 2, "a": 6}]}]}
        );
    }

    /// Examples of the MongoDB manual's `$push`, `$addToSet` and `$set` pages.
    #[test]
    fn manual_push_and_set_examples() {
        let (_, d) = run(
            doc! {"$push": {"quizzes": {"$each": [{"wk": 5, "score": 8}, {"wk": 6, "score": 7}, {"wk": 7, "score": 6}], "$sort": {"score": -1}, "$slice": 3}}},
            doc! {"_id": 5, "quizzes": [{"wk": 1, "score": 10}, {"wk": 2, "score": 8}, {"wk": 3, "score": 5}, {"wk": 4, "score": 6}]},
        )
        .unwrap();
        assert_eq!(
            d,
            doc! {"_id": 5, "quizzes": [{"wk": 1, "score": 10}, {"wk": 2, "score": 8}, {"wk": 5, "score": 8}]}
        );
        let (_, d) = run(
            doc! {"$addToSet": {"tags": {"$each": ["camera", "electronics", "accessories"]}}},
            doc! {"_id": 2, "item": "cable", "tags": ["electronics", "supplies"]},
        )
        .unwrap();
        assert_eq!(
            d,
            doc! {"_id": 2, "item": "cable", "tags": ["electronics", "supplies", "camera", "accessories"]}
        );
        let (_, d) = run(
            doc! {"$set": {"quantity": 500, "details": {"model": "2600", "make": "Fashionaires"}, "tags": ["coats", "outerwear", "clothing"]}},
            doc! {"_id": 100, "quantity": 250, "instock": true, "reorder": false, "details": {"model": "14QQ", "make": "Clothes Corp"}, "tags": ["apparel", "clothing"], "ratings": [{"by": "Customer007", "rating": 4}]},
        )
        .unwrap();
        assert_eq!(
            d,
            doc! {"_id": 100, "quantity": 500, "instock": true, "reorder": false, "details": {"model": "2600", "make": "Fashionaires"}, "tags": ["coats", "outerwear", "clothing"], "ratings": [{"by": "Customer007", "rating": 4}]}
        );
        let (_, d) = run(
            doc! {"$set": {"ratings.0.rating": 2, "details.make": "Kustom Kidz"}},
            d,
        )
        .unwrap();
        assert_eq!(
            d.get_array("ratings").unwrap()[0],
            Bson::Document(doc! {"by": "Customer007", "rating": 2})
        );
        assert_eq!(
            d.get_document("details").unwrap(),
            &doc! {"model": "2600", "make": "Kustom Kidz"}
        );
    }
}
