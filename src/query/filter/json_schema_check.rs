//! Judging a value against a parsed [`JsonSchema`], and saying why it fails in the shape of
//! MongoDB 7.0's document validation errors (`schemaRulesNotSatisfied` and the keyword
//! details under it: `operatorName`, `specifiedAs`, `reason`, `consideredValue`,
//! `missingProperties`, `propertiesNotSatisfied`, …).
//!
//! A keyword that applies to one kind of value (`minimum` to numbers, `minLength` to
//! strings, `properties` to objects, …) holds for every other kind, as in JSON Schema; only
//! `type`/`bsonType` restrict the kind. `properties` never traverses arrays.
//!
//! Not for: parsing schemas (`json_schema.rs`) or the details of query-operator validators
//! (`query::validator`).

use std::cmp::Ordering;

use bson::{doc, Bson, Document};

use super::eval::has_type;
use super::json_schema::{Additional, Bound, Dependency, Items, JsonSchema, Limit};
use super::TypeSelector;
use crate::query::value::compare::{bson_type_name, compare_values, values_equal};
use crate::query::value::number::{compare_numbers, Number};

impl JsonSchema {
    /// Whether the top-level document meets the schema.
    pub fn matches_document(&self, document: &Document) -> bool {
        self.failures(Subject::Object(document), true).is_empty()
    }

    /// The `$jsonSchema` details of error 121 for a document that fails the schema.
    pub fn explain_document(&self, document: &Document) -> Document {
        let mut details = doc! {"operatorName": "$jsonSchema"};
        self.append_annotations(&mut details);
        details.insert(
            "schemaRulesNotSatisfied",
            self.failures(Subject::Object(document), false),
        );
        details
    }

    fn append_annotations(&self, details: &mut Document) {
        if let Some(title) = &self.title {
            details.insert("title", title.clone());
        }
        if let Some(description) = &self.description {
            details.insert("description", description.clone());
        }
    }

    fn holds(&self, subject: Subject<'_>) -> bool {
        self.failures(subject, true).is_empty()
    }

    /// The details of every keyword `value` fails (empty: it meets the schema); with
    /// `first_only` it stops at the first.
    fn failures(&self, subject: Subject<'_>, first_only: bool) -> Vec<Bson> {
        let mut out = Vec::new();
        // MongoDB's order: scalar, array, object and logical keywords, then the type.
        for group in 0..5 {
            match (group, subject) {
                (0, Subject::Value(value)) => self.check_scalar(value, &mut out),
                (1, Subject::Value(value)) => self.check_array(value, &mut out),
                (2, _) => self.check_object(subject, &mut out),
                (3, _) => self.check_logical(subject, &mut out),
                (4, _) => self.check_type(subject, &mut out),
                _ => {}
            }
            if first_only && !out.is_empty() {
                break;
            }
        }
        out
    }

    fn check_type(&self, subject: Subject<'_>, out: &mut Vec<Bson>) {
        let Some(types) = &self.types else { return };
        let accepted = match subject {
            Subject::Object(_) => types.accepted.contains(&TypeSelector::Code(3)),
            Subject::Value(value) => types.accepted.iter().any(|t| has_type(value, *t)),
        };
        if accepted {
            return;
        }
        let value = &subject.to_bson();
        let mut detail = doc! {"operatorName": types.keyword};
        let mut specified = Document::new();
        specified.insert(types.keyword, types.specified.clone());
        detail.insert("specifiedAs", specified);
        detail.insert("reason", "type did not match");
        detail.insert("consideredValue", value.clone());
        detail.insert("consideredType", bson_type_name(value));
        out.push(detail.into());
    }

    fn check_scalar(&self, value: &Bson, out: &mut Vec<Bson>) {
        if let Some(number) = Number::from_bson(value) {
            if let Some(divisor) = &self.multiple_of {
                if !is_multiple(number, divisor) {
                    out.push(
                        doc! {
                            "operatorName": "multipleOf",
                            "specifiedAs": {"multipleOf": divisor.clone()},
                            "reason": "considered value is not a multiple of the specified value",
                            "consideredValue": value.clone(),
                        }
                        .into(),
                    );
                }
            }
            for (keyword, bound, fails_when) in [
                ("maximum", &self.maximum, Ordering::Greater),
                ("minimum", &self.minimum, Ordering::Less),
            ] {
                if let Some(bound) = bound {
                    if bound_fails(number, bound, fails_when) {
                        out.push(
                            doc! {
                                "operatorName": keyword,
                                "specifiedAs": bound.specified.clone(),
                                "reason": "comparison failed",
                                "consideredValue": value.clone(),
                            }
                            .into(),
                        );
                    }
                }
            }
        }
        if let Bson::String(text) = value {
            if let Some((regex, specified)) = &self.pattern {
                if !regex.is_match(text) {
                    out.push(
                        doc! {
                            "operatorName": "pattern",
                            "specifiedAs": {"pattern": specified.clone()},
                            "reason": "regular expression did not match",
                            "consideredValue": value.clone(),
                        }
                        .into(),
                    );
                }
            }
            let length = text.chars().count() as u64;
            for (keyword, limit, fails) in [
                (
                    "maxLength",
                    &self.max_length,
                    length_over as fn(u64, u64) -> bool,
                ),
                ("minLength", &self.min_length, length_under),
            ] {
                if let Some(limit) = limit {
                    if fails(length, limit.limit) {
                        out.push(
                            limit_detail(keyword, limit)
                                .with("reason", "specified string length was not satisfied")
                                .with("consideredValue", value.clone())
                                .into(),
                        );
                    }
                }
            }
        }
    }

    fn check_array(&self, value: &Bson, out: &mut Vec<Bson>) {
        let Bson::Array(items) = value else { return };
        let count = items.len() as u64;
        for (keyword, limit, fails) in [
            (
                "minItems",
                &self.min_items,
                length_under as fn(u64, u64) -> bool,
            ),
            ("maxItems", &self.max_items, length_over),
        ] {
            if let Some(limit) = limit {
                if fails(count, limit.limit) {
                    out.push(
                        limit_detail(keyword, limit)
                            .with("reason", "array did not match specified length")
                            .with("consideredValue", value.clone())
                            .with("numberOfItems", count as i32)
                            .into(),
                    );
                }
            }
        }
        if self.unique_items {
            if let Some(duplicate) = first_duplicate(items) {
                out.push(
                    doc! {
                        "operatorName": "uniqueItems",
                        "specifiedAs": {"uniqueItems": true},
                        "reason": "found a duplicate item",
                        "consideredValue": value.clone(),
                        "duplicatedValue": duplicate.clone(),
                    }
                    .into(),
                );
            }
        }
        self.check_items(items, out);
    }

    /// `items` and `additionalItems`.
    fn check_items(&self, items: &[Bson], out: &mut Vec<Bson>) {
        match &self.items {
            Some(Items::Each(schema)) => {
                if let Some((index, details)) = first_failing_item(schema, items, 0) {
                    let mut detail = doc! {"operatorName": "items"};
                    schema.append_annotations(&mut detail);
                    detail.insert("reason", "At least one item did not match the sub-schema");
                    detail.insert("itemIndex", index as i32);
                    detail.insert("details", details);
                    out.push(detail.into());
                }
            }
            Some(Items::Positional(schemas)) => {
                let mut failing = Vec::new();
                for (index, (schema, item)) in schemas.iter().zip(items.iter()).enumerate() {
                    let details = schema.failures(Subject::Value(item), false);
                    if !details.is_empty() {
                        failing.push(Bson::Document(
                            doc! {"itemIndex": index as i32, "details": details},
                        ));
                    }
                }
                if !failing.is_empty() {
                    out.push(doc! {"operatorName": "items", "details": failing}.into());
                }
                match &self.additional_items {
                    Some(Additional::Allowed(false)) if items.len() > schemas.len() => {
                        out.push(
                            doc! {
                                "operatorName": "additionalItems",
                                "specifiedAs": {"additionalItems": false},
                                "reason": "found additional items",
                                "additionalItems": items[schemas.len()..].to_vec(),
                            }
                            .into(),
                        );
                    }
                    Some(Additional::Schema(schema)) => {
                        if let Some((index, details)) =
                            first_failing_item(schema, items, schemas.len())
                        {
                            let mut detail = doc! {"operatorName": "additionalItems"};
                            schema.append_annotations(&mut detail);
                            detail.insert(
                                "reason",
                                "At least one additional item did not match the sub-schema",
                            );
                            detail.insert("itemIndex", index as i32);
                            detail.insert("details", details);
                            out.push(detail.into());
                        }
                    }
                    _ => {}
                }
            }
            None => {}
        }
    }

    fn check_object(&self, subject: Subject<'_>, out: &mut Vec<Bson>) {
        let fields = match subject {
            Subject::Object(fields) | Subject::Value(Bson::Document(fields)) => fields,
            Subject::Value(_) => return,
        };
        let mut unmet = Vec::new();
        for (name, schema) in &self.properties {
            if let Some(property) = fields.get(name) {
                let details = schema.failures(Subject::Value(property), false);
                if !details.is_empty() {
                    let mut entry = doc! {"propertyName": name.clone()};
                    schema.append_annotations(&mut entry);
                    entry.insert("details", details);
                    unmet.push(Bson::Document(entry));
                }
            }
        }
        if !unmet.is_empty() {
            out.push(doc! {"operatorName": "properties", "propertiesNotSatisfied": unmet}.into());
        }
        self.check_allowed_properties(fields, out);
        if let Some(specified) = &self.required {
            let missing: Vec<&String> = self
                .required_names
                .iter()
                .filter(|name| !fields.contains_key(name.as_str()))
                .collect();
            if !missing.is_empty() {
                out.push(
                    doc! {
                        "operatorName": "required",
                        "specifiedAs": {"required": specified.clone()},
                        "missingProperties": missing,
                    }
                    .into(),
                );
            }
        }
        let count = fields.len() as u64;
        for (keyword, limit, fails) in [
            (
                "minProperties",
                &self.min_properties,
                length_under as fn(u64, u64) -> bool,
            ),
            ("maxProperties", &self.max_properties, length_over),
        ] {
            if let Some(limit) = limit {
                if fails(count, limit.limit) {
                    out.push(
                        limit_detail(keyword, limit)
                            .with("reason", "specified number of properties was not satisfied")
                            .with("numberOfProperties", count as i32)
                            .into(),
                    );
                }
            }
        }
        let mut failing = Vec::new();
        for (name, dependency) in &self.dependencies {
            if !fields.contains_key(name) {
                continue;
            }
            match dependency {
                Dependency::Properties(needed) => {
                    let missing: Vec<&String> = needed
                        .iter()
                        .filter(|n| !fields.contains_key(n.as_str()))
                        .collect();
                    if !missing.is_empty() {
                        failing.push(Bson::Document(
                            doc! {"conditionalProperty": name.clone(), "missingProperties": missing},
                        ));
                    }
                }
                Dependency::Schema(schema) => {
                    let details = schema.failures(subject, false);
                    if !details.is_empty() {
                        failing.push(Bson::Document(
                            doc! {"conditionalProperty": name.clone(), "details": details},
                        ));
                    }
                }
            }
        }
        if !failing.is_empty() {
            out.push(doc! {"operatorName": "dependencies", "failingDependencies": failing}.into());
        }
    }

    /// `additionalProperties` and `patternProperties`, judged together as MongoDB does: a
    /// property is additional when no `properties` entry names it and no pattern matches it.
    fn check_allowed_properties(&self, fields: &Document, out: &mut Vec<Bson>) {
        if self.additional_properties.is_none() && self.pattern_properties.is_empty() {
            return;
        }
        let additional: Vec<(&String, &Bson)> = fields
            .iter()
            .filter(|(name, _)| {
                !self.properties.iter().any(|(p, _)| p == *name)
                    && !self
                        .pattern_properties
                        .iter()
                        .any(|(regex, _, _)| regex.is_match(name))
            })
            .collect();
        match &self.additional_properties {
            Some(Additional::Allowed(false)) if !additional.is_empty() => {
                let names: Vec<&String> = additional.iter().map(|(name, _)| *name).collect();
                out.push(
                    doc! {
                        "operatorName": "additionalProperties",
                        "specifiedAs": {"additionalProperties": false},
                        "additionalProperties": names,
                    }
                    .into(),
                );
            }
            Some(Additional::Schema(schema)) => {
                let failing = additional.iter().find_map(|(name, value)| {
                    let details = schema.failures(Subject::Value(value), false);
                    (!details.is_empty()).then_some((*name, details))
                });
                if let Some((name, details)) = failing {
                    let mut detail = doc! {"operatorName": "additionalProperties"};
                    schema.append_annotations(&mut detail);
                    detail.insert(
                        "reason",
                        "at least one additional property did not match the subschema",
                    );
                    detail.insert("failingProperty", name.clone());
                    detail.insert("details", details);
                    out.push(detail.into());
                }
            }
            _ => {}
        }
        let mut pattern_failures = Vec::new();
        for (regex, pattern, schema) in &self.pattern_properties {
            let failing = fields.iter().find_map(|(name, value)| {
                if !regex.is_match(name) {
                    return None;
                }
                let details = schema.failures(Subject::Value(value), false);
                (!details.is_empty()).then_some((name, details))
            });
            if let Some((name, details)) = failing {
                let mut entry = doc! {"propertyName": name.clone()};
                schema.append_annotations(&mut entry);
                entry.insert("regexMatched", pattern.clone());
                entry.insert("details", details);
                pattern_failures.push(Bson::Document(entry));
            }
        }
        if !pattern_failures.is_empty() {
            out.push(
                doc! {"operatorName": "patternProperties", "details": pattern_failures}.into(),
            );
        }
    }

    fn check_logical(&self, subject: Subject<'_>, out: &mut Vec<Bson>) {
        for (keyword, schemas, fails_when_any_fails) in [
            ("allOf", &self.all_of, true),
            ("anyOf", &self.any_of, false),
        ] {
            if schemas.is_empty() {
                continue;
            }
            let unmet = unmet_schemas(schemas, subject);
            let fails = if fails_when_any_fails {
                !unmet.is_empty()
            } else {
                unmet.len() == schemas.len()
            };
            if fails {
                out.push(doc! {"operatorName": keyword, "schemasNotSatisfied": unmet}.into());
            }
        }
        if !self.one_of.is_empty() {
            let matching: Vec<i32> = self
                .one_of
                .iter()
                .enumerate()
                .filter(|(_, schema)| schema.holds(subject))
                .map(|(index, _)| index as i32)
                .collect();
            if matching.is_empty() {
                out.push(
                    doc! {
                        "operatorName": "oneOf",
                        "schemasNotSatisfied": unmet_schemas(&self.one_of, subject),
                    }
                    .into(),
                );
            } else if matching.len() > 1 {
                out.push(
                    doc! {
                        "operatorName": "oneOf",
                        "reason": "more than one subschema matched",
                        "matchingSchemaIndexes": matching,
                    }
                    .into(),
                );
            }
        }
        if let Some(schema) = &self.not {
            if schema.holds(subject) {
                out.push(doc! {"operatorName": "not", "reason": "child expression matched"}.into());
            }
        }
        if let Some(values) = &self.enumeration {
            let owned;
            let value = match subject {
                Subject::Value(value) => value,
                Subject::Object(_) => {
                    owned = subject.to_bson();
                    &owned
                }
            };
            if !values.iter().any(|candidate| enum_equal(candidate, value)) {
                out.push(
                    doc! {
                        "operatorName": "enum",
                        "specifiedAs": {"enum": values.clone()},
                        "reason": "value was not found in enum",
                        "consideredValue": value.clone(),
                    }
                    .into(),
                );
            }
        }
    }
}

/// What a schema judges: a value inside the document, or the top-level document itself
/// (judged in place, without copying it into a value).
#[derive(Clone, Copy)]
enum Subject<'a> {
    Value(&'a Bson),
    Object(&'a Document),
}

impl Subject<'_> {
    /// The subject as a value (copied), for the details of a failure.
    fn to_bson(self) -> Bson {
        match self {
            Subject::Value(value) => value.clone(),
            Subject::Object(fields) => Bson::Document(fields.clone()),
        }
    }
}

/// Appending to a details document in a chain.
trait With {
    fn with(self, key: &str, value: impl Into<Bson>) -> Self;
}

impl With for Document {
    fn with(mut self, key: &str, value: impl Into<Bson>) -> Self {
        self.insert(key, value.into());
        self
    }
}

fn limit_detail(keyword: &str, limit: &Limit) -> Document {
    let mut specified = Document::new();
    specified.insert(keyword, limit.specified.clone());
    doc! {"operatorName": keyword, "specifiedAs": specified}
}

fn length_over(length: u64, limit: u64) -> bool {
    length > limit
}

fn length_under(length: u64, limit: u64) -> bool {
    length < limit
}

/// Whether `number` lies beyond `bound` (`fails_when` is the side that fails).
fn bound_fails(number: Number, bound: &Bound, fails_when: Ordering) -> bool {
    let Some(limit) = Number::from_bson(&bound.value) else {
        return false;
    };
    if number.is_nan() {
        // NaN sorts below every number in MongoDB's order.
        return fails_when == Ordering::Less;
    }
    let ordering = compare_numbers(number, limit);
    ordering == fails_when || (bound.exclusive && ordering == Ordering::Equal)
}

fn is_multiple(number: Number, divisor: &Bson) -> bool {
    let Some(divisor) = Number::from_bson(divisor) else {
        return true;
    };
    if let (Some(value), Some(divisor)) = (number.to_exact_i64(), divisor.to_exact_i64()) {
        return divisor != 0 && value % divisor == 0;
    }
    let value = number.to_f64();
    let remainder = value % divisor.to_f64();
    value.is_finite() && remainder == 0.0
}

fn first_failing_item(
    schema: &JsonSchema,
    items: &[Bson],
    from: usize,
) -> Option<(usize, Vec<Bson>)> {
    items
        .iter()
        .enumerate()
        .skip(from)
        .find_map(|(index, item)| {
            let details = schema.failures(Subject::Value(item), false);
            (!details.is_empty()).then_some((index, details))
        })
}

fn unmet_schemas(schemas: &[JsonSchema], subject: Subject<'_>) -> Vec<Bson> {
    schemas
        .iter()
        .enumerate()
        .filter_map(|(index, schema)| {
            let details = schema.failures(subject, false);
            if details.is_empty() {
                return None;
            }
            let mut entry = doc! {"index": index as i32};
            schema.append_annotations(&mut entry);
            entry.insert("details", details);
            Some(Bson::Document(entry))
        })
        .collect()
}

fn first_duplicate(items: &[Bson]) -> Option<&Bson> {
    let mut sorted: Vec<&Bson> = items.iter().collect();
    sorted.sort_by(|a, b| compare_values(a, b));
    sorted
        .windows(2)
        .find(|pair| values_equal(pair[0], pair[1]))
        .map(|pair| pair[1])
}

/// `enum` compares as MongoDB's schema equality: numbers by value, documents regardless of
/// field order.
fn enum_equal(candidate: &Bson, value: &Bson) -> bool {
    match (candidate, value) {
        (Bson::Document(a), Bson::Document(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, item)| b.get(key).is_some_and(|other| enum_equal(item, other)))
        }
        (Bson::Array(a), Bson::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| enum_equal(x, y))
        }
        _ => values_equal(candidate, value),
    }
}
