//! Collection validators: the `validator`, `validationLevel` and `validationAction` options of
//! a collection, checked as MongoDB checks them and compiled once (the catalog keeps the
//! result with the collection), and the `details` of error 121 DocumentValidationFailure for a
//! document that fails — MongoDB 7.0's shapes: `$jsonSchema` with `schemaRulesNotSatisfied`,
//! `$and`/`$or` with `clausesNotSatisfied`, `$nor` with `clausesSatisfied`, `$not` with
//! `details`, and leaf operators with `specifiedAs`, `reason` and `consideredValue(s)`.
//!
//! Not for: when a write is validated (`ops::validation`) or the filter semantics themselves
//! (`filter/`).

use bson::{doc, Bson, Document};

use super::error::QueryError;
use super::filter::Filter;
use super::value::compare::bson_type_name;

/// `validationLevel`: which writes are validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValidationLevel {
    /// No validation.
    Off,
    /// Every insert and update (MongoDB's default).
    Strict,
    /// Inserts, and updates of documents that met the validator before the update.
    Moderate,
}

/// `validationAction`: what a failing document does to the write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValidationAction {
    /// The write fails with 121 DocumentValidationFailure (MongoDB's default).
    Error,
    /// The write succeeds and the failure is logged.
    Warn,
}

impl ValidationLevel {
    /// Parses the option as MongoDB's IDL does (BadValue for an unknown name).
    pub fn parse(command: &str, value: &Bson) -> Result<ValidationLevel, QueryError> {
        match enum_name(command, "validationLevel", value)? {
            "off" => Ok(ValidationLevel::Off),
            "strict" => Ok(ValidationLevel::Strict),
            "moderate" => Ok(ValidationLevel::Moderate),
            other => Err(unknown_enum(command, "validationLevel", other)),
        }
    }
}

impl ValidationAction {
    /// Parses the option as MongoDB 7.0's IDL does (`errorAndLog` came with 8.1).
    pub fn parse(command: &str, value: &Bson) -> Result<ValidationAction, QueryError> {
        match enum_name(command, "validationAction", value)? {
            "error" => Ok(ValidationAction::Error),
            "warn" => Ok(ValidationAction::Warn),
            other => Err(unknown_enum(command, "validationAction", other)),
        }
    }
}

fn enum_name<'a>(command: &str, field: &str, value: &'a Bson) -> Result<&'a str, QueryError> {
    match value {
        Bson::String(name) => Ok(name),
        other => Err(QueryError::type_mismatch(format!(
            "BSON field '{command}.{field}' is the wrong type '{}', expected type 'string'",
            bson_type_name(other)
        ))),
    }
}

fn unknown_enum(command: &str, field: &str, name: &str) -> QueryError {
    QueryError::bad_value(format!(
        "Enumeration value '{name}' for field '{command}.{field}' is not a valid value."
    ))
}

/// Operators a validator may not use (MongoDB's QueryFeatureNotAllowed, 224).
const REFUSED_IN_VALIDATORS: &[&str] = &[
    "$where",
    "$text",
    "$near",
    "$nearSphere",
    "$geoNear",
    "$function",
    "$accumulator",
];

/// A collection's compiled validation settings.
#[derive(Clone, Debug)]
pub struct CollectionValidator {
    /// The validator as given (the source of `specifiedAs`).
    pub source: Document,
    pub filter: Filter,
    pub level: ValidationLevel,
    pub action: ValidationAction,
}

impl CollectionValidator {
    /// Parses a validator document as `create` and `collMod` take it: a filter without the
    /// operators MongoDB refuses in validators.
    pub fn parse_validator(validator: &Document) -> Result<Filter, QueryError> {
        if let Some(operator) = refused_operator(validator, 0) {
            return Err(QueryError::coded(
                224,
                "QueryFeatureNotAllowed",
                format!("{operator} is not allowed in this context"),
            ));
        }
        Filter::parse(validator)
    }

    /// The validation settings kept in a collection's options, compiled; `None` when the
    /// collection has no validator (absent or `{}`), which is also what `validationLevel:
    /// "off"` leaves to check.
    pub fn from_options(options: &Document) -> Result<Option<CollectionValidator>, QueryError> {
        let source = match options.get("validator") {
            Some(Bson::Document(validator)) if !validator.is_empty() => validator.clone(),
            _ => return Ok(None),
        };
        let level = match options.get("validationLevel") {
            Some(value) => ValidationLevel::parse("create", value)?,
            None => ValidationLevel::Strict,
        };
        let action = match options.get("validationAction") {
            Some(value) => ValidationAction::parse("create", value)?,
            None => ValidationAction::Error,
        };
        if level == ValidationLevel::Off {
            return Ok(None);
        }
        let filter = CollectionValidator::parse_validator(&source)?;
        Ok(Some(CollectionValidator {
            source,
            filter,
            level,
            action,
        }))
    }

    /// Whether `document` meets the validator (an `$expr` that fails to evaluate does not).
    pub fn admits(&self, document: &Document) -> bool {
        self.filter.try_matches(document).unwrap_or(false)
    }

    /// The `errInfo` of error 121 for `document`, which does not meet the validator.
    pub fn error_info(&self, document: &Document) -> Document {
        let mut info = Document::new();
        if let Some(id) = document.get("_id") {
            info.insert("failingDocumentId", id.clone());
        }
        info.insert("details", explain_clauses(&self.source, document, false));
        info
    }
}

/// The first refused operator anywhere in a validator (field names and expression operators).
fn refused_operator(validator: &Document, depth: usize) -> Option<String> {
    if depth > 200 {
        return None;
    }
    for (key, value) in validator {
        if REFUSED_IN_VALIDATORS.contains(&key.as_str()) {
            return Some(key.clone());
        }
        let found = match value {
            Bson::Document(inner) => refused_operator(inner, depth + 1),
            Bson::Array(items) => items.iter().find_map(|item| match item {
                Bson::Document(inner) => refused_operator(inner, depth + 1),
                _ => None,
            }),
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Whether the filter `{key: value}` matches (a part that does not parse counts as failing).
fn entry_matches(key: &str, value: &Bson, document: &Document) -> bool {
    let mut part = Document::new();
    part.insert(key, value.clone());
    Filter::parse(&part)
        .and_then(|filter| filter.try_matches(document))
        .unwrap_or(false)
}

/// Details for a filter document. Its clauses are MongoDB's: each top-level entry, except
/// that the operators of one field (`{a: {$gt: 1, $lt: 5}}`) are clauses of their own (its
/// parser adds them to the same `$and`). One clause alone explains itself; several are an
/// `$and` listing the clauses that failed (or, inverted, that matched) by position.
fn explain_clauses(clauses: &Document, document: &Document, inverted: bool) -> Document {
    let mut entries: Vec<(&str, Bson)> = Vec::new();
    for (key, value) in clauses {
        match value {
            _ if key == "$comment" => {}
            Bson::Document(operators)
                if !key.starts_with('$') && super::filter::is_operator_document(operators) =>
            {
                for spec in operator_clauses(operators) {
                    entries.push((key, Bson::Document(spec)));
                }
            }
            other => entries.push((key, other.clone())),
        }
    }
    if let [(key, value)] = entries.as_slice() {
        return explain_entry(key, value, document, inverted);
    }
    let failing = entries
        .iter()
        .enumerate()
        .filter(|(_, (key, value))| entry_matches(key, value, document) == inverted)
        .map(|(index, (key, value))| {
            Bson::Document(doc! {
                "index": index as i32,
                "details": explain_entry(key, value, document, inverted),
            })
        })
        .collect::<Vec<_>>();
    let mut details = doc! {"operatorName": "$and"};
    details.insert(clauses_field(inverted), failing);
    details
}

/// The operators of one field, one document each (`$options` stays with its `$regex`).
fn operator_clauses(operators: &Document) -> Vec<Document> {
    operators
        .iter()
        .filter(|(op, _)| *op != "$options")
        .map(|(op, arg)| {
            let mut spec = Document::new();
            spec.insert(op.clone(), arg.clone());
            if op == "$regex" {
                if let Some(options) = operators.get("$options") {
                    spec.insert("$options", options.clone());
                }
            }
            spec
        })
        .collect()
}

fn clauses_field(inverted: bool) -> &'static str {
    if inverted {
        "clausesSatisfied"
    } else {
        "clausesNotSatisfied"
    }
}

/// Details of one top-level entry of a filter document.
fn explain_entry(key: &str, value: &Bson, document: &Document, inverted: bool) -> Document {
    match (key, value) {
        ("$and" | "$or" | "$nor", Bson::Array(items)) => {
            // $and fails on its failing clauses, $or on all of them, $nor on its matching ones
            // (which explain themselves inverted).
            let child_inverted = if key == "$nor" { !inverted } else { inverted };
            let reported: Vec<Bson> = items
                .iter()
                .enumerate()
                .filter_map(|(index, item)| {
                    let Bson::Document(clause) = item else {
                        return None;
                    };
                    let matches = Filter::parse(clause)
                        .and_then(|filter| filter.try_matches(document))
                        .unwrap_or(false);
                    (matches == child_inverted).then(|| {
                        Bson::Document(doc! {
                            "index": index as i32,
                            "details": explain_clauses(clause, document, child_inverted),
                        })
                    })
                })
                .collect();
            // A failing `$nor` lists the clauses that matched (`clausesSatisfied`): MongoDB
            // flips the sense of its frame before naming them.
            let mut details = doc! {"operatorName": key};
            details.insert(clauses_field(inverted != (key == "$nor")), reported);
            details
        }
        ("$jsonSchema", _) => match super::filter::json_schema::JsonSchema::parse_operand(value) {
            Ok(schema) if !inverted => schema.explain_document(document),
            _ => doc! {"operatorName": "$jsonSchema", "reason": "schema matched"},
        },
        ("$expr", _) => {
            let mut details = doc! {
                "operatorName": "$expr",
                "specifiedAs": {"$expr": value.clone()},
            };
            match super::expr::Expression::parse(value).and_then(|e| e.evaluate_optional(document))
            {
                Ok(result) => {
                    details.insert("reason", reason("$expr", inverted));
                    details.insert("expressionResult", result.unwrap_or(Bson::Null));
                }
                Err(error) => {
                    details.insert("reason", "failed to evaluate aggregation expression");
                    details.insert(
                        "details",
                        doc! {"code": error.code, "codeName": error.code_name, "errmsg": error.message},
                    );
                }
            }
            details
        }
        ("$alwaysFalse" | "$alwaysTrue", _) => doc! {
            "operatorName": key,
            "specifiedAs": {key: value.clone()},
            "reason": reason(key, inverted),
        },
        (path, Bson::Document(operators)) if super::filter::is_operator_document(operators) => {
            explain_field(path, operators, document, inverted)
        }
        (path, literal) => explain_leaf(
            path,
            "$eq",
            doc! {path: literal.clone()},
            document,
            inverted,
        ),
    }
}

/// Details for `{path: {$op: …, …}}`: one operator explains itself; several are an `$and`.
fn explain_field(
    path: &str,
    operators: &Document,
    document: &Document,
    inverted: bool,
) -> Document {
    let parts = operator_clauses(operators);
    let explain_one = |spec: &Document| -> Document {
        let op = spec.keys().next().map(String::as_str).unwrap_or("$eq");
        if op == "$not" {
            let inner = match spec.get("$not") {
                Some(Bson::Document(inner)) => explain_field(path, inner, document, !inverted),
                Some(regex) => explain_leaf(
                    path,
                    "$regex",
                    doc! {path: regex.clone()},
                    document,
                    !inverted,
                ),
                None => Document::new(),
            };
            return doc! {"operatorName": "$not", "details": inner};
        }
        explain_leaf(path, op, doc! {path: spec.clone()}, document, inverted)
    };
    if let [single] = parts.as_slice() {
        return explain_one(single);
    }
    let reported: Vec<Bson> = parts
        .iter()
        .enumerate()
        .filter(|(_, spec)| {
            entry_matches(path, &Bson::Document((*spec).clone()), document) == inverted
        })
        .map(|(index, spec)| {
            Bson::Document(doc! {"index": index as i32, "details": explain_one(spec)})
        })
        .collect();
    let mut details = doc! {"operatorName": "$and"};
    details.insert(clauses_field(inverted), reported);
    details
}

/// MongoDB's reason for a failing (or, inverted, matching) operator.
fn reason(op: &str, inverted: bool) -> &'static str {
    let (normal, flipped) = match op {
        "$in" => (
            "no matching value found in array",
            "matching value found in array",
        ),
        "$nin" => (
            "matching value found in array",
            "no matching value found in array",
        ),
        "$exists" => ("path does not exist", "path does exist"),
        "$type" => ("type did not match", "type did match"),
        "$regex" => (
            "regular expression did not match",
            "regular expression did match",
        ),
        "$size" => (
            "array length was not equal to given size",
            "array length was equal to given size",
        ),
        "$elemMatch" => (
            "array did not satisfy the child predicate",
            "array did satisfy the child predicate",
        ),
        "$all" => (
            "array did not contain all specified values",
            "array did contain all specified values",
        ),
        "$mod" => (
            "$mod did not evaluate to expected remainder",
            "$mod did evaluate to expected remainder",
        ),
        "$bitsAllSet" | "$bitsAllClear" | "$bitsAnySet" | "$bitsAnyClear" => (
            "bitwise operator failed to match",
            "bitwise operator matched successfully",
        ),
        "$expr" => ("expression did not match", "expression did match"),
        "$alwaysFalse" | "$alwaysTrue" => (
            "expression always evaluates to false",
            "expression always evaluates to true",
        ),
        "$ne" => ("comparison succeeded", "comparison failed"),
        _ => ("comparison failed", "comparison succeeded"),
    };
    if inverted {
        flipped
    } else {
        normal
    }
}

/// How many `consideredValues` a leaf lists (MongoDB's
/// `internalQueryMaxDocValidationErrorConsideredValues`, 10); past it the list is cut and
/// `consideredValuesTruncated: true` says so.
const MAX_CONSIDERED_VALUES: usize = 10;

/// Types an operator works on; a path holding none of them is "type did not match".
fn expected_types(op: &str) -> Option<&'static [&'static str]> {
    const NUMBERS: &[&str] = &["decimal", "double", "int", "long"];
    match op {
        "$regex" => Some(&["regex", "string", "symbol"]),
        "$mod" => Some(NUMBERS),
        "$bitsAllSet" | "$bitsAllClear" | "$bitsAnySet" | "$bitsAnyClear" => {
            Some(&["binData", "decimal", "double", "int", "long"])
        }
        "$size" | "$elemMatch" | "$all" => Some(&["array"]),
        _ => None,
    }
}

/// Details of one leaf operator at `path`: `operatorName`, `specifiedAs`, the reason, and the
/// values considered (an array at the end of the path is considered element by element,
/// except by the array operators).
fn explain_leaf(
    path: &str,
    op: &str,
    specified: Document,
    document: &Document,
    inverted: bool,
) -> Document {
    let mut details = doc! {"operatorName": op, "specifiedAs": specified};
    let whole_arrays = matches!(op, "$size" | "$elemMatch" | "$all");
    let values = considered_values(document, path, whole_arrays);
    match &values {
        None => {
            if op == "$exists" || op == "$ne" || op == "$nin" {
                details.insert("reason", reason(op, inverted));
            } else {
                details.insert("reason", "field was missing");
            }
        }
        Some(values) => {
            let type_mismatch = expected_types(op)
                .is_some_and(|types| !values.iter().any(|v| types.contains(&bson_type_name(v))));
            if type_mismatch && !inverted {
                details.insert("reason", "type did not match");
                append_considered_types(&mut details, values);
                if let Some(types) = expected_types(op) {
                    if let [single] = types {
                        details.insert("expectedType", *single);
                    } else {
                        details.insert("expectedTypes", types.to_vec());
                    }
                }
            } else {
                details.insert("reason", reason(op, inverted));
            }
            match values.as_slice() {
                [single] => {
                    details.insert("consideredValue", single.clone());
                }
                many if many.len() > MAX_CONSIDERED_VALUES => {
                    details.insert("consideredValues", many[..MAX_CONSIDERED_VALUES].to_vec());
                    details.insert("consideredValuesTruncated", true);
                }
                many => {
                    details.insert("consideredValues", many.to_vec());
                }
            }
            if op == "$type" {
                append_considered_types(&mut details, values);
            }
        }
    }
    details
}

fn append_considered_types(details: &mut Document, values: &[Bson]) {
    let mut types: Vec<&str> = values.iter().map(bson_type_name).collect();
    types.sort_unstable();
    types.dedup();
    match types.as_slice() {
        [] => {}
        [single] => {
            details.insert("consideredType", *single);
        }
        many => {
            details.insert("consideredTypes", many.to_vec());
        }
    }
}

/// The values at `path` (arrays met mid-path traversed; an array at the end replaced by its
/// elements unless `whole_arrays`); `None` when the path does not exist.
fn considered_values(document: &Document, path: &str, whole_arrays: bool) -> Option<Vec<Bson>> {
    fn walk(
        value: &Bson,
        rest: &[&str],
        whole_arrays: bool,
        out: &mut Vec<Bson>,
        found: &mut bool,
    ) {
        let Some((next, tail)) = rest.split_first() else {
            *found = true;
            match value {
                Bson::Array(items) if !whole_arrays => out.extend(items.iter().cloned()),
                other => out.push(other.clone()),
            }
            return;
        };
        match value {
            Bson::Document(fields) => {
                if let Some(inner) = fields.get(*next) {
                    walk(inner, tail, whole_arrays, out, found);
                }
            }
            Bson::Array(items) => {
                if let Some(item) = next.parse::<usize>().ok().and_then(|i| items.get(i)) {
                    walk(item, tail, whole_arrays, out, found);
                }
                for item in items {
                    if let Bson::Document(fields) = item {
                        if let Some(inner) = fields.get(*next) {
                            walk(inner, tail, whole_arrays, out, found);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let parts: Vec<&str> = path.split('.').collect();
    let (first, rest) = parts.split_first()?;
    let value = document.get(*first)?;
    let mut out = Vec::new();
    let mut found = false;
    walk(value, rest, whole_arrays, &mut out, &mut found);
    found.then_some(out)
}

#[cfg(test)]
#[path = "validator_tests.rs"]
mod tests;
