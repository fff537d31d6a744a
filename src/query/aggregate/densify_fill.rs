//! `$densify` (new documents at every `step` of a numeric or date field, per partition, over
//! the `full` range, each `partition`'s own or explicit bounds) and `$fill` (null and missing
//! fields set from a `value` expression, or by `locf`/`linear`, which MongoDB itself runs as
//! `$setWindowFields` with `$locf`/`$linearFill`: so does docgate), with MongoDB's errors.
//! The documents are densified as a stream (`densify_stream.rs`), held or not.
//!
//! Not for: the window functions themselves (`window_functions.rs`).

use super::window::parse_set_window_fields;
use super::Stage;
use crate::query::error::QueryError;
use crate::query::expr::ops::date::DateOperator;
use crate::query::expr::ops::date_math;
use crate::query::expr::Expression;
use crate::query::sort::SortSpec;
use crate::query::value::compare::compare_values;
use crate::query::value::number::{arithmetic, Arithmetic, Number};
use crate::query::value::path::get_path;
use bson::{Bson, Document};
use std::cmp::Ordering;

/// A parsed `$densify`.
#[derive(Clone, Debug, PartialEq)]
pub struct Densify {
    /// The field densified.
    pub field: String,
    /// `partitionByFields`.
    pub partition_fields: Vec<String>,
    /// `range.step`.
    pub step: Bson,
    /// `range.unit`, for dates.
    pub unit: Option<String>,
    /// `range.bounds`.
    pub bounds: DensifyBounds,
}

/// `range.bounds` of `$densify`.
#[derive(Clone, Debug, PartialEq)]
pub enum DensifyBounds {
    /// "full": the smallest to the largest value of all documents.
    Full,
    /// "partition": each partition's smallest to largest value.
    Partition,
    /// `[lower, upper)`.
    Explicit(Box<(Bson, Bson)>),
}

fn loc(code: i32, message: &str) -> QueryError {
    QueryError::location(code, message)
}

/// Parses `$densify`.
pub fn parse_densify(spec: &Bson) -> Result<Densify, QueryError> {
    let Bson::Document(d) = spec else {
        return Err(QueryError::failed_to_parse(
            "The $densify stage specification must be an object",
        ));
    };
    for key in d.keys() {
        if !matches!(key.as_str(), "field" | "partitionByFields" | "range") {
            return Err(QueryError::location(
                40415,
                format!("BSON field '$densify.{key}' is an unknown field."),
            ));
        }
    }
    let field = match d.get("field") {
        Some(Bson::String(f)) => f.clone(),
        Some(_) => {
            return Err(QueryError::type_mismatch(
                "BSON field '$densify.field' is the wrong type, expected type 'string'",
            ))
        }
        None => {
            return Err(loc(
                40414,
                "BSON field '$densify.field' is missing but a required field",
            ))
        }
    };
    let partition_fields =
        match d.get("partitionByFields") {
            None => Vec::new(),
            Some(Bson::Array(items)) => items
                .iter()
                .map(|i| match i {
                    Bson::String(s) => Ok(s.clone()),
                    _ => Err(QueryError::type_mismatch(
                        "BSON field '$densify.partitionByFields' must be an array of strings",
                    )),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(QueryError::type_mismatch(
                "BSON field '$densify.partitionByFields' is the wrong type, expected type 'array'",
            )),
        };
    for p in &partition_fields {
        if p.starts_with(&field) {
            return Err(QueryError::location(
                8993000,
                format!("partitionByFields '{p}' cannot include field '{field}' that is being densified."),
            ));
        }
        if field.starts_with(p.as_str()) {
            return Err(QueryError::location(
                9554500,
                format!("field '{field}' that is being densified cannot include partitionByFields '{p}'."),
            ));
        }
    }
    let range = match d.get("range") {
        Some(Bson::Document(r)) => r,
        _ => {
            return Err(loc(
                40414,
                "BSON field '$densify.range' is missing but a required field",
            ))
        }
    };
    let step = range.get("step").cloned().unwrap_or(Bson::Null);
    let positive = Number::from_bson(&step).is_some_and(|n| {
        compare_values(&step, &Bson::Int32(0)) == Ordering::Greater && !n.is_nan()
    });
    if !positive {
        return Err(loc(
            5733401,
            "The step parameter in a range statement must be a strictly positive numeric value",
        ));
    }
    let unit = match range.get("unit") {
        None => None,
        Some(Bson::String(u)) => {
            if Number::from_bson(&step)
                .and_then(Number::to_exact_i64)
                .is_none()
            {
                return Err(loc(6586400, "The step parameter in a range statement must be a whole number when densifying a date range"));
            }
            // The unit is checked by the date arithmetic's own parser.
            date_math::apply(
                DateOperator::DateAdd,
                &[
                    Some(Bson::DateTime(bson::DateTime::from_millis(0))),
                    Some(Bson::String(u.clone())),
                    Some(Bson::Int32(1)),
                    None,
                ],
            )?;
            Some(u.clone())
        }
        Some(_) => return Err(QueryError::type_mismatch("'unit' must be a string")),
    };
    let bounds = match range.get("bounds") {
        Some(Bson::String(s)) if s == "full" => DensifyBounds::Full,
        Some(Bson::String(s)) if s == "partition" => DensifyBounds::Partition,
        Some(Bson::String(_)) => {
            return Err(loc(
                5946802,
                "Bounds string must either be 'full' or 'partition'",
            ))
        }
        Some(Bson::Array(items)) => {
            if items.len() != 2 {
                return Err(loc(
                    5733403,
                    "A bounding array in a range statement must have exactly two elements",
                ));
            }
            let (lo, hi) = (&items[0], &items[1]);
            if compare_values(lo, hi) == Ordering::Greater {
                return Err(loc(5733402, "A bounding array must be an ascending array of either two dates or two numbers"));
            }
            if Number::from_bson(lo).is_some() {
                if unit.is_some() {
                    return Err(loc(5733409, "Numeric bounds may not have unit parameter"));
                }
                if Number::from_bson(hi).is_none() {
                    return Err(loc(5733406, "A bounding array must contain either both dates or both numeric types"));
                }
                if lo.element_type() != hi.element_type() || lo.element_type() != step.element_type() {
                    return Err(loc(5876900, "Upper bound, lower bound, and step must all have the same type"));
                }
            } else if let Bson::DateTime(_) = lo {
                if !matches!(hi, Bson::DateTime(_)) {
                    return Err(loc(5733405, "A bounding array must contain either both dates or both numeric types"));
                }
                if unit.is_none() {
                    return Err(loc(5733410, "A bounding array of dates must specify a unit"));
                }
            } else {
                return Err(loc(5946800, "Explicit bounds must be numeric or dates"));
            }
            DensifyBounds::Explicit(Box::new((lo.clone(), hi.clone())))
        }
        _ => {
            return Err(loc(5733404, "The bounds in a range statement must be the string 'full', 'partition', or an ascending array of two numbers or two dates"))
        }
    };
    if bounds == DensifyBounds::Partition && partition_fields.is_empty() {
        return Err(loc(5733408, "One cannot specify the bounds as 'partition' without specifying a non-empty array of partitionByFields. You may have meant to specify 'full' bounds."));
    }
    Ok(Densify {
        field,
        partition_fields,
        step,
        unit,
        bounds,
    })
}

impl Densify {
    pub(super) fn value_of(&self, doc: &Document) -> Result<Option<Bson>, QueryError> {
        match get_path(doc, &self.field) {
            None | Some(Bson::Null) | Some(Bson::Undefined) => Ok(None),
            Some(v @ Bson::DateTime(_)) if self.unit.is_some() => Ok(Some(v.clone())),
            Some(v) if self.unit.is_none() && Number::from_bson(v).is_some() => Ok(Some(v.clone())),
            Some(_) if self.unit.is_some() => Err(loc(
                5733201,
                "Densify field type must be a date when a unit is given",
            )),
            Some(_) => Err(loc(5733201, "Densify field type must be numeric")),
        }
    }

    pub(super) fn next(&self, value: &Bson) -> Result<Bson, QueryError> {
        match &self.unit {
            Some(unit) => Ok(date_math::apply(
                DateOperator::DateAdd,
                &[
                    Some(value.clone()),
                    Some(Bson::String(unit.clone())),
                    Some(self.step.clone()),
                    None,
                ],
            )?
            .unwrap_or(Bson::Null)),
            None => arithmetic(Arithmetic::Add, value, &self.step)
                .ok_or_else(|| loc(5733201, "Densify field type must be numeric")),
        }
    }
}

/// Runs `$densify`: the documents sorted by partition and field, with the generated ones
/// (holding only the field and the partition fields) in place.
pub fn run_densify(spec: &Densify, docs: Vec<Document>) -> Result<Vec<Document>, QueryError> {
    let mut input = super::densify_stream::DensifyInput::new(spec.clone());
    for doc in docs {
        crate::interrupt::check()?;
        let bytes = doc
            .to_vec()
            .map_err(|error| QueryError::bad_value(format!("cannot encode a document: {error}")))?;
        input.push(&doc, bytes)?;
    }
    let mut output = input.finish()?;
    let mut out = Vec::new();
    while let Some(document) = output.next_document()? {
        out.push(document);
    }
    Ok(out)
}

/// Parses `$fill` into the stages MongoDB runs for it: a `$setWindowFields` with `$locf` /
/// `$linearFill` for the `method` outputs (or a `$sort` when there are none and `sortBy` is
/// given), then `$addFields` with `$ifNull` for the `value` outputs.
pub fn parse_fill(spec: &Bson, out: &mut Vec<Stage>) -> Result<(), QueryError> {
    let Bson::Document(d) = spec else {
        return Err(QueryError::failed_to_parse(
            "The $fill stage specification must be an object",
        ));
    };
    for key in d.keys() {
        if !matches!(
            key.as_str(),
            "partitionBy" | "partitionByFields" | "sortBy" | "output"
        ) {
            return Err(QueryError::location(
                40415,
                format!("BSON field '$fill.{key}' is an unknown field."),
            ));
        }
    }
    let output = match d.get("output") {
        Some(Bson::Document(o)) => o,
        _ => {
            return Err(loc(
                40414,
                "BSON field '$fill.output' is missing but a required field",
            ))
        }
    };
    if d.contains_key("partitionBy") && d.contains_key("partitionByFields") {
        return Err(loc(
            6050204,
            "Maximum one of 'partitionBy' and 'partitionByFields can be specified in '$fill'",
        ));
    }
    let mut window = Document::new();
    if let Some(p) = d.get("partitionBy") {
        window.insert("partitionBy", p.clone());
    }
    if let Some(fields) = d.get("partitionByFields") {
        let Bson::Array(fields) = fields else {
            return Err(QueryError::type_mismatch(
                "BSON field '$fill.partitionByFields' is the wrong type, expected type 'array'",
            ));
        };
        let mut by = Document::new();
        for (i, f) in fields.iter().enumerate() {
            let Bson::String(f) = f else {
                return Err(QueryError::type_mismatch(
                    "BSON field '$fill.partitionByFields' must be an array of strings",
                ));
            };
            by.insert(format!("p{i}"), format!("${f}"));
        }
        window.insert("partitionBy", by);
    }
    let sort_by = match d.get("sortBy") {
        None => None,
        Some(Bson::Document(s)) => Some(s.clone()),
        Some(_) => {
            return Err(QueryError::type_mismatch(
                "BSON field '$fill.sortBy' is the wrong type, expected type 'object'",
            ))
        }
    };
    if let Some(s) = &sort_by {
        window.insert("sortBy", s.clone());
    }
    let mut methods = Document::new();
    let mut values = Vec::new();
    for (field, how) in output {
        let Bson::Document(how) = how else {
            return Err(QueryError::type_mismatch(format!(
                "Fill output for '{field}' must be an object"
            )));
        };
        match (how.get("value"), how.get("method"), how.len()) {
            (Some(value), None, 1) => {
                let filled =
                    Bson::Document(bson::doc! {"$ifNull": [format!("${field}"), value.clone()]});
                values.push((field.clone(), Expression::parse(&filled)?));
            }
            (None, Some(Bson::String(m)), 1) if m == "locf" => {
                methods.insert(field, bson::doc! {"$locf": format!("${field}")});
            }
            (None, Some(Bson::String(m)), 1) if m == "linear" => {
                methods.insert(field, bson::doc! {"$linearFill": format!("${field}")});
            }
            (None, Some(_), 1) => return Err(loc(6050201, "Method must be either locf or linear")),
            _ => {
                return Err(loc(
                    6050202,
                    "Exactly one of 'value' and 'method' must be specified per field",
                ))
            }
        }
    }
    if !methods.is_empty() {
        window.insert("output", methods);
        out.push(Stage::SetWindowFields(Box::new(parse_set_window_fields(
            &Bson::Document(window),
        )?)));
    } else if let Some(s) = &sort_by {
        out.push(Stage::Sort(SortSpec::parse(s)?));
    }
    if !values.is_empty() {
        out.push(Stage::AddFields(values));
    }
    Ok(())
}

#[cfg(test)]
#[path = "densify_fill_tests.rs"]
mod tests;
