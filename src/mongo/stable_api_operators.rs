//! The operators `apiStrict: true` refuses inside a V1 command (323 APIStrictError): the
//! aggregation expression operators, and the arguments and `$meta` keywords of V1 operators,
//! that MongoDB 7.0 (the version docgate claims) registers outside API Version 1.
//!
//! MongoDB checks an operator when it parses it as an aggregation expression, wherever that
//! happens: a stage's expressions, `$group` accumulators and `$setWindowFields` window
//! functions, `$expr` in a filter (`find`, `$match`, `count`, the `q` of `update`/`delete`,
//! `findAndModify`'s `query`, a validator), a `find` projection, `let` variables and update
//! pipelines. This module walks those places and only those: a query operator with the same
//! spelling in a filter (`{a: {$bitsAllSet: 1}}`), a field name inside `$literal`, a sort key
//! or an index key is never taken for an expression.
//!
//! Not for: commands, command fields and stages outside API V1 (`stable_api`), or whether an
//! operator is valid at all (the query engine answers that when the command runs).

use bson::{Bson, Document};

use super::error::OpError;

/// Expression operators outside API Version 1 on MongoDB 7.0. The bitwise operators were
/// registered `kNeverInVersion1` in 7.0 and entered API V1 in 7.1 (MongoDB's Stable API
/// changelog); `$sigmoid` came later and is `kNeverInVersion1` where it exists.
const UNSTABLE_EXPRESSIONS: &[&str] = &["$bitAnd", "$bitOr", "$bitXor", "$bitNot", "$sigmoid"];

/// `$meta` keywords outside API Version 1 (MongoDB's `$meta` manual page for 7.0).
const UNSTABLE_META_FIELDS: &[&str] = &["textScore", "indexKey", "searchScore", "searchHighlights"];

/// MongoDB's 323 for an operator registered `kNeverInVersion1`.
fn not_in_v1(what: &str) -> OpError {
    OpError::ApiStrict(format!(
        "{what} is not allowed with 'apiStrict: true' in API Version 1"
    ))
}

/// The operators in an aggregation expression (a value in expression context).
pub fn check_expression(value: &Bson) -> Result<(), OpError> {
    match value {
        Bson::Array(items) => items.iter().try_for_each(check_expression),
        Bson::Document(doc) => match doc.keys().next() {
            Some(name) if name.starts_with('$') => check_operator(name, doc),
            // An object literal: its values are expressions, its field names are not.
            _ => doc.values().try_for_each(check_expression),
        },
        _ => Ok(()),
    }
}

/// One `{$operator: arguments}` object of expression context.
fn check_operator(name: &str, doc: &Document) -> Result<(), OpError> {
    if UNSTABLE_EXPRESSIONS.contains(&name) {
        return Err(not_in_v1(name));
    }
    let Some(arguments) = doc.get(name) else {
        return Ok(());
    };
    match (name, arguments) {
        // A constant: whatever it holds is data.
        ("$literal" | "$const", _) => Ok(()),
        ("$meta", Bson::String(keyword)) => check_meta(keyword),
        ("$filter", Bson::Document(spec)) if spec.contains_key("limit") => {
            Err(not_in_v1("limit argument of $filter operator"))
        }
        // Named arguments (`{input: …, as: …}`); `sortBy` (of `$sortArray`, `$top`, …) names
        // fields and directions, not expressions.
        (_, Bson::Document(spec)) if !spec.keys().next().is_some_and(|k| k.starts_with('$')) => {
            spec.iter()
                .filter(|(key, _)| key.as_str() != "sortBy")
                .try_for_each(|(_, value)| check_expression(value))
        }
        // One operand, itself an expression (`{$abs: {$bitNot: "$a"}}`) or a list of them.
        (_, operand) => check_expression(operand),
    }
}

/// `{$meta: keyword}`: the keywords MongoDB keeps out of API V1.
fn check_meta(keyword: &str) -> Result<(), OpError> {
    if UNSTABLE_META_FIELDS.contains(&keyword) {
        return Err(OpError::ApiStrict(format!(
            "Provided apiStrict is true with an unstable meta field \"{keyword}\""
        )));
    }
    Ok(())
}

/// The expressions of a query filter: only `$expr` holds them (also under `$and`/`$or`/`$nor`).
pub fn check_filter(filter: &Document) -> Result<(), OpError> {
    for (key, value) in filter {
        match (key.as_str(), value) {
            ("$expr", expression) => check_expression(expression)?,
            ("$and" | "$or" | "$nor", Bson::Array(clauses)) => clauses
                .iter()
                .filter_map(Bson::as_document)
                .try_for_each(check_filter)?,
            _ => {}
        }
    }
    Ok(())
}

/// A `find`/`findAndModify` projection or the fields of `$project`/`$addFields`: each value
/// is an expression, except `$elemMatch`'s, which is a filter.
pub fn check_projection(projection: &Document) -> Result<(), OpError> {
    for value in projection.values() {
        match value {
            Bson::Document(spec)
                if spec.keys().next().map(String::as_str) == Some("$elemMatch") =>
            {
                if let Ok(filter) = spec.get_document("$elemMatch") {
                    check_filter(filter)?;
                }
            }
            other => check_expression(other)?,
        }
    }
    Ok(())
}

/// `let` variables (of a command, `$lookup` or `$merge`): each value is an expression.
pub fn check_variables(variables: &Document) -> Result<(), OpError> {
    variables.values().try_for_each(check_expression)
}

/// `field: {$accumulator: argument}` entries of `$group`, `$bucket` and `$bucketAuto` output.
fn check_accumulators<'a>(entries: impl Iterator<Item = &'a Bson>) -> Result<(), OpError> {
    entries
        .filter_map(Bson::as_document)
        .flat_map(|entry| entry.iter())
        .try_for_each(|(name, argument)| match name.as_str() {
            name if UNSTABLE_EXPRESSIONS.contains(&name) => Err(not_in_v1(name)),
            _ => check_expression(argument),
        })
}

/// The expressions of one stage, not its nested pipelines (the caller walks those).
pub fn check_stage(name: &str, spec: &Bson) -> Result<(), OpError> {
    let document = spec.as_document();
    match (name, document) {
        ("$match", Some(filter)) => check_filter(filter),
        ("$project" | "$addFields" | "$set", Some(fields)) => check_projection(fields),
        ("$replaceRoot", Some(spec)) => spec.get("newRoot").map_or(Ok(()), check_expression),
        ("$replaceWith" | "$sortByCount" | "$redact", _) => check_expression(spec),
        ("$documents", _) => check_expression(spec),
        ("$group", Some(spec)) => {
            spec.get("_id").map_or(Ok(()), check_expression)?;
            check_accumulators(spec.iter().filter(|(k, _)| *k != "_id").map(|(_, v)| v))
        }
        ("$bucket" | "$bucketAuto", Some(spec)) => {
            spec.get("groupBy").map_or(Ok(()), check_expression)?;
            match spec.get_document("output") {
                Ok(output) => check_accumulators(output.values()),
                Err(_) => Ok(()),
            }
        }
        ("$setWindowFields", Some(spec)) => {
            spec.get("partitionBy").map_or(Ok(()), check_expression)?;
            // `{field: {$function: argument, window: {...}}}`: the bounds hold no operators.
            match spec.get_document("output") {
                Ok(output) => check_accumulators(output.values()),
                Err(_) => Ok(()),
            }
        }
        ("$lookup" | "$merge", Some(spec)) => match spec.get_document("let") {
            Ok(variables) => check_variables(variables),
            Err(_) => Ok(()),
        },
        ("$graphLookup", Some(spec)) => {
            spec.get("startWith").map_or(Ok(()), check_expression)?;
            match spec.get_document("restrictSearchWithMatch") {
                Ok(filter) => check_filter(filter),
                Err(_) => Ok(()),
            }
        }
        ("$geoNear", Some(spec)) => match spec.get_document("query") {
            Ok(filter) => check_filter(filter),
            Err(_) => Ok(()),
        },
        _ => Ok(()),
    }
}
