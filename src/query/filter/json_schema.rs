//! `$jsonSchema`: the JSON Schema draft-4 subset MongoDB accepts (with its `bsonType`
//! extension), parsed once into a [`JsonSchema`] with MongoDB's error codes and messages.
//! Matching a value and explaining why it fails (the `schemaRulesNotSatisfied` details of
//! error 121) live in `json_schema_check.rs`.
//!
//! Supported keywords: `type`, `bsonType`, `required`, `properties`, `additionalProperties`,
//! `patternProperties`, `minProperties`, `maxProperties`, `dependencies`, `enum`, `minimum`,
//! `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`, `minLength`,
//! `maxLength`, `pattern`, `items`, `additionalItems`, `minItems`, `maxItems`,
//! `uniqueItems`, `allOf`, `anyOf`, `oneOf`, `not`, `title`, `description`. MongoDB's
//! omissions (`$ref`, `$schema`, `default`, `definitions`, `format`, `id`) are refused as
//! MongoDB refuses them; `encrypt` (client-side field level encryption) is refused as not
//! supported by docgate.
//!
//! Not for: the other filter operators (`filter/mod.rs`) or collection validators as a whole
//! (`query::validator`).

use bson::{Bson, Document};

use super::{type_code_by_alias, TypeSelector};
use crate::query::error::QueryError;
use crate::query::value::number::Number;
use crate::query::value::regex_match::RegexPredicate;

/// Keywords of JSON Schema MongoDB does not implement; naming one is FailedToParse.
const UNSUPPORTED_KEYWORDS: &[&str] =
    &["$ref", "$schema", "default", "definitions", "format", "id"];

/// One parsed schema (the top-level one or a nested subschema).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct JsonSchema {
    pub title: Option<String>,
    pub description: Option<String>,
    pub types: Option<TypeKeyword>,
    pub maximum: Option<Bound>,
    pub minimum: Option<Bound>,
    pub max_length: Option<Limit>,
    pub min_length: Option<Limit>,
    pub pattern: Option<(RegexPredicate, Bson)>,
    pub multiple_of: Option<Bson>,
    pub items: Option<Items>,
    pub additional_items: Option<Additional>,
    pub max_items: Option<Limit>,
    pub min_items: Option<Limit>,
    pub unique_items: bool,
    pub properties: Vec<(String, JsonSchema)>,
    pub pattern_properties: Vec<(RegexPredicate, String, JsonSchema)>,
    pub additional_properties: Option<Additional>,
    /// `required` as given (for `specifiedAs`); checked in sorted order, as MongoDB lists
    /// `missingProperties`.
    pub required: Option<Bson>,
    pub required_names: Vec<String>,
    pub max_properties: Option<Limit>,
    pub min_properties: Option<Limit>,
    pub dependencies: Vec<(String, Dependency)>,
    pub all_of: Vec<JsonSchema>,
    pub any_of: Vec<JsonSchema>,
    pub one_of: Vec<JsonSchema>,
    pub not: Option<Box<JsonSchema>>,
    pub enumeration: Option<Vec<Bson>>,
}

/// `type` or `bsonType`: the keyword used, its value as given, and the accepted types.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeKeyword {
    pub keyword: &'static str,
    pub specified: Bson,
    pub accepted: Vec<TypeSelector>,
}

/// `minimum`/`maximum` with its `exclusive…` flag.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    pub value: Bson,
    pub exclusive: bool,
    /// `specifiedAs` of the error details: the keyword and, when given, its exclusive flag.
    pub specified: Document,
}

/// A count keyword (`minLength`, `maxItems`, …): its limit and its value as given.
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    pub limit: u64,
    pub specified: Bson,
}

/// `items`: one schema for every element, or one schema per position.
#[derive(Clone, Debug, PartialEq)]
pub enum Items {
    Each(Box<JsonSchema>),
    Positional(Vec<JsonSchema>),
}

/// `additionalProperties` / `additionalItems`: allowed or not, or a schema they must meet.
#[derive(Clone, Debug, PartialEq)]
pub enum Additional {
    Allowed(bool),
    Schema(Box<JsonSchema>),
}

/// One entry of `dependencies`.
#[derive(Clone, Debug, PartialEq)]
pub enum Dependency {
    /// The other properties that must be present.
    Properties(Vec<String>),
    /// A schema the whole object must meet.
    Schema(Box<JsonSchema>),
}

impl JsonSchema {
    /// Parses the argument of `$jsonSchema`.
    pub fn parse_operand(value: &Bson) -> Result<JsonSchema, QueryError> {
        match value {
            Bson::Document(schema) => JsonSchema::parse(schema, 0),
            _ => Err(QueryError::type_mismatch("$jsonSchema must be an object")),
        }
    }

    fn parse(schema: &Document, depth: usize) -> Result<JsonSchema, QueryError> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(QueryError::bad_value(
                "exceeded depth limit of 100 when parsing $jsonSchema",
            ));
        }
        let mut parsed = JsonSchema::default();
        if schema.contains_key("type") && schema.contains_key("bsonType") {
            return Err(QueryError::failed_to_parse(
                "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'",
            ));
        }
        for (keyword, value) in schema {
            let keyword = keyword.as_str();
            match keyword {
                "title" => parsed.title = Some(string_keyword(keyword, value)?),
                "description" => parsed.description = Some(string_keyword(keyword, value)?),
                "type" | "bsonType" => parsed.types = Some(parse_types(keyword, value)?),
                "maximum" | "minimum" => {
                    let exclusive_keyword = if keyword == "maximum" {
                        "exclusiveMaximum"
                    } else {
                        "exclusiveMinimum"
                    };
                    let bound = parse_bound(keyword, value, exclusive_keyword, schema)?;
                    if keyword == "maximum" {
                        parsed.maximum = Some(bound);
                    } else {
                        parsed.minimum = Some(bound);
                    }
                }
                "exclusiveMaximum" | "exclusiveMinimum" => {
                    let Bson::Boolean(_) = value else {
                        return Err(QueryError::type_mismatch(format!(
                            "$jsonSchema keyword '{keyword}' must be a boolean"
                        )));
                    };
                    let bound = if keyword == "exclusiveMaximum" {
                        "maximum"
                    } else {
                        "minimum"
                    };
                    if !schema.contains_key(bound) {
                        return Err(QueryError::failed_to_parse(format!(
                            "$jsonSchema keyword '{bound}' must be a present if {keyword} is present"
                        )));
                    }
                }
                "maxLength" => parsed.max_length = Some(parse_limit(keyword, value)?),
                "minLength" => parsed.min_length = Some(parse_limit(keyword, value)?),
                "maxItems" => parsed.max_items = Some(parse_limit(keyword, value)?),
                "minItems" => parsed.min_items = Some(parse_limit(keyword, value)?),
                "maxProperties" => parsed.max_properties = Some(parse_limit(keyword, value)?),
                "minProperties" => parsed.min_properties = Some(parse_limit(keyword, value)?),
                "pattern" => {
                    let Bson::String(pattern) = value else {
                        return Err(QueryError::type_mismatch(
                            "$jsonSchema keyword 'pattern' must be a string",
                        ));
                    };
                    parsed.pattern = Some((RegexPredicate::new(pattern, "")?, value.clone()));
                }
                "multipleOf" => {
                    let number = Number::from_bson(value).ok_or_else(|| {
                        QueryError::type_mismatch("$jsonSchema keyword 'multipleOf' must be a number")
                    })?;
                    if number.is_nan() || number.to_f64() <= 0.0 {
                        return Err(QueryError::failed_to_parse(
                            "$jsonSchema keyword 'multipleOf' must have a positive value",
                        ));
                    }
                    parsed.multiple_of = Some(value.clone());
                }
                "uniqueItems" => {
                    let Bson::Boolean(unique) = value else {
                        return Err(QueryError::type_mismatch(
                            "$jsonSchema keyword 'uniqueItems' must be a boolean",
                        ));
                    };
                    parsed.unique_items = *unique;
                }
                "items" => {
                    parsed.items = Some(match value {
                        Bson::Document(sub) => Items::Each(Box::new(JsonSchema::parse(sub, depth + 1)?)),
                        Bson::Array(_) => Items::Positional(schema_list(keyword, value, depth, true)?),
                        _ => {
                            return Err(QueryError::type_mismatch(
                                "$jsonSchema keyword 'items' must be an array or an object",
                            ))
                        }
                    })
                }
                "additionalItems" => {
                    parsed.additional_items = Some(parse_additional(keyword, value, depth)?)
                }
                "additionalProperties" => {
                    parsed.additional_properties = Some(parse_additional(keyword, value, depth)?)
                }
                "properties" => {
                    for (name, sub) in object_keyword(keyword, value)? {
                        let Bson::Document(sub) = sub else {
                            return Err(QueryError::type_mismatch(format!(
                                "Nested schema for $jsonSchema property '{name}' must be an object"
                            )));
                        };
                        parsed
                            .properties
                            .push((name.clone(), JsonSchema::parse(sub, depth + 1)?));
                    }
                }
                "patternProperties" => {
                    for (pattern, sub) in object_keyword(keyword, value)? {
                        let Bson::Document(sub) = sub else {
                            return Err(QueryError::type_mismatch(format!(
                                "$jsonSchema keyword 'patternProperties' has property '{pattern}' which is not an object"
                            )));
                        };
                        parsed.pattern_properties.push((
                            RegexPredicate::new(pattern, "")?,
                            pattern.clone(),
                            JsonSchema::parse(sub, depth + 1)?,
                        ));
                    }
                }
                "required" => {
                    parsed.required_names = string_set(keyword, value)?;
                    parsed.required_names.sort();
                    parsed.required = Some(value.clone());
                }
                "dependencies" => {
                    for (name, dependency) in object_keyword(keyword, value)? {
                        let dependency = match dependency {
                            Bson::Document(sub) => {
                                Dependency::Schema(Box::new(JsonSchema::parse(sub, depth + 1)?))
                            }
                            Bson::Array(_) => Dependency::Properties(string_set(
                                &format!("dependencies.{name}"),
                                dependency,
                            )?),
                            _ => {
                                return Err(QueryError::type_mismatch(format!(
                                    "Expected an object or an array for $jsonSchema keyword 'dependencies.{name}'"
                                )))
                            }
                        };
                        parsed.dependencies.push((name.clone(), dependency));
                    }
                }
                "allOf" => parsed.all_of = schema_list(keyword, value, depth, false)?,
                "anyOf" => parsed.any_of = schema_list(keyword, value, depth, false)?,
                "oneOf" => parsed.one_of = schema_list(keyword, value, depth, false)?,
                "not" => {
                    let Bson::Document(sub) = value else {
                        return Err(QueryError::type_mismatch(
                            "$jsonSchema keyword 'not' must be an object",
                        ));
                    };
                    parsed.not = Some(Box::new(JsonSchema::parse(sub, depth + 1)?));
                }
                "enum" => {
                    let Bson::Array(values) = value else {
                        return Err(QueryError::type_mismatch(
                            "$jsonSchema keyword 'enum' must be an array",
                        ));
                    };
                    if values.is_empty() {
                        return Err(QueryError::failed_to_parse(
                            "$jsonSchema keyword 'enum' cannot be an empty array",
                        ));
                    }
                    parsed.enumeration = Some(values.clone());
                }
                "encrypt" | "encryptMetadata" => {
                    return Err(QueryError::not_supported(format!(
                        "$jsonSchema keyword '{keyword}' (client-side field level encryption) is not supported by docgate"
                    )))
                }
                _ if UNSUPPORTED_KEYWORDS.contains(&keyword) => {
                    return Err(QueryError::failed_to_parse(format!(
                        "$jsonSchema keyword '{keyword}' is not currently supported"
                    )))
                }
                _ => {
                    return Err(QueryError::failed_to_parse(format!(
                        "Unknown $jsonSchema keyword: {keyword}"
                    )))
                }
            }
        }
        Ok(parsed)
    }
}

/// Nesting allowed for subschemas, as for filters.
const MAX_SCHEMA_DEPTH: usize = 100;

fn string_keyword(keyword: &str, value: &Bson) -> Result<String, QueryError> {
    match value {
        Bson::String(text) => Ok(text.clone()),
        _ => Err(QueryError::type_mismatch(format!(
            "$jsonSchema keyword '{keyword}' must be of type string"
        ))),
    }
}

fn object_keyword<'a>(keyword: &str, value: &'a Bson) -> Result<&'a Document, QueryError> {
    match value {
        Bson::Document(fields) => Ok(fields),
        _ => Err(QueryError::type_mismatch(format!(
            "$jsonSchema keyword '{keyword}' must be an object"
        ))),
    }
}

/// JSON Schema's `type` names (MongoDB refuses `integer`).
fn json_type(name: &str) -> Result<TypeSelector, QueryError> {
    let code = match name {
        "object" => 3,
        "array" => 4,
        "string" => 2,
        "boolean" => 8,
        "null" => 10,
        "number" => return Ok(TypeSelector::Number),
        "integer" => {
            return Err(QueryError::bad_value(
                "$jsonSchema type 'integer' is not currently supported.",
            ))
        }
        _ => {
            return Err(QueryError::bad_value(format!(
                "Unknown type name alias: {name}"
            )))
        }
    };
    Ok(TypeSelector::Code(code))
}

fn parse_types(keyword: &str, value: &Bson) -> Result<TypeKeyword, QueryError> {
    let one = |name: &Bson| -> Result<TypeSelector, QueryError> {
        let Bson::String(name) = name else {
            return Err(QueryError::type_mismatch(format!(
                "$jsonSchema keyword '{keyword}' must be either a string or an array of strings"
            )));
        };
        if keyword == "type" {
            json_type(name)
        } else {
            type_code_by_alias(name)
                .ok_or_else(|| QueryError::bad_value(format!("Unknown type name alias: {name}")))
        }
    };
    let accepted = match value {
        Bson::Array(names) => {
            if names.is_empty() {
                return Err(QueryError::failed_to_parse(format!(
                    "$jsonSchema keyword '{keyword}' must name at least one type"
                )));
            }
            let mut accepted = Vec::with_capacity(names.len());
            for name in names {
                let selector = one(name)?;
                if accepted.contains(&selector) {
                    return Err(QueryError::failed_to_parse(format!(
                        "$jsonSchema keyword '{keyword}' has duplicate value: {name}"
                    )));
                }
                accepted.push(selector);
            }
            accepted
        }
        other => vec![one(other)?],
    };
    Ok(TypeKeyword {
        keyword: if keyword == "type" {
            "type"
        } else {
            "bsonType"
        },
        specified: value.clone(),
        accepted,
    })
}

fn parse_bound(
    keyword: &str,
    value: &Bson,
    exclusive_keyword: &str,
    schema: &Document,
) -> Result<Bound, QueryError> {
    if Number::from_bson(value).is_none() {
        return Err(QueryError::type_mismatch(format!(
            "$jsonSchema keyword '{keyword}' must be a number"
        )));
    }
    let mut specified = Document::new();
    specified.insert(keyword, value.clone());
    let exclusive = match schema.get(exclusive_keyword) {
        Some(flag @ Bson::Boolean(exclusive)) => {
            specified.insert(exclusive_keyword, flag.clone());
            *exclusive
        }
        _ => false,
    };
    Ok(Bound {
        value: value.clone(),
        exclusive,
        specified,
    })
}

fn parse_limit(keyword: &str, value: &Bson) -> Result<Limit, QueryError> {
    let number = Number::from_bson(value).ok_or_else(|| {
        QueryError::type_mismatch(format!("$jsonSchema keyword '{keyword}' must be a number"))
    })?;
    let whole = number.to_exact_i64().ok_or_else(|| {
        QueryError::failed_to_parse(format!(
            "$jsonSchema keyword '{keyword}' must be a representable as a long integer"
        ))
    })?;
    let limit = u64::try_from(whole).map_err(|_| {
        QueryError::failed_to_parse(format!(
            "$jsonSchema keyword '{keyword}' must be a non-negative integer"
        ))
    })?;
    Ok(Limit {
        limit,
        specified: value.clone(),
    })
}

fn parse_additional(keyword: &str, value: &Bson, depth: usize) -> Result<Additional, QueryError> {
    match value {
        Bson::Boolean(allowed) => Ok(Additional::Allowed(*allowed)),
        Bson::Document(sub) => Ok(Additional::Schema(Box::new(JsonSchema::parse(
            sub,
            depth + 1,
        )?))),
        _ => Err(QueryError::type_mismatch(format!(
            "$jsonSchema keyword '{keyword}' must be either an object or a boolean"
        ))),
    }
}

/// A non-empty array of distinct strings (`required`, a property dependency).
fn string_set(keyword: &str, value: &Bson) -> Result<Vec<String>, QueryError> {
    let Bson::Array(items) = value else {
        return Err(QueryError::type_mismatch(format!(
            "$jsonSchema keyword '{keyword}' must be an array"
        )));
    };
    if items.is_empty() {
        return Err(QueryError::bad_value(format!(
            "$jsonSchema keyword '{keyword}' cannot be an empty array"
        )));
    }
    let mut names: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let Bson::String(name) = item else {
            return Err(QueryError::type_mismatch(format!(
                "$jsonSchema keyword '{keyword}' must be an array of strings, but found an element of type {}",
                crate::query::bson_type_name(item)
            )));
        };
        if names.contains(name) {
            return Err(QueryError::failed_to_parse(format!(
                "$jsonSchema keyword '{keyword}' array cannot contain duplicate values"
            )));
        }
        names.push(name.clone());
    }
    Ok(names)
}

/// A list of subschemas (`allOf`, `anyOf`, `oneOf`, positional `items`).
fn schema_list(
    keyword: &str,
    value: &Bson,
    depth: usize,
    may_be_empty: bool,
) -> Result<Vec<JsonSchema>, QueryError> {
    let Bson::Array(items) = value else {
        return Err(QueryError::type_mismatch(format!(
            "$jsonSchema keyword '{keyword}' must be an array"
        )));
    };
    if items.is_empty() && !may_be_empty {
        return Err(QueryError::bad_value(format!(
            "$jsonSchema keyword '{keyword}' must be a non-empty array"
        )));
    }
    items
        .iter()
        .map(|item| match item {
            Bson::Document(sub) => JsonSchema::parse(sub, depth + 1),
            other => Err(QueryError::type_mismatch(format!(
                "$jsonSchema keyword '{keyword}' must be an array of objects, but found an element of type {}",
                crate::query::bson_type_name(other)
            ))),
        })
        .collect()
}
