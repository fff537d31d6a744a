//! Object expression operators: $mergeObjects, $objectToArray, $arrayToObject, $getField
//! and $setField (which `$unsetField` is, with the value `$$REMOVE`): the field name is
//! taken literally, dots and `$` included; a missing value removes the field.
//!
//! Not for: checking that `$setField`'s field is a constant string (`expr/parse_more.rs`)
//! or paths in documents (`value/path.rs`).

use super::args::*;
use super::more::MoreOperator;
use super::operator::{misrouted, type_name};
use crate::query::error::QueryError;
use bson::{Bson, Document};

/// Applies the object operators to evaluated arguments.
pub(super) fn apply_more(
    op: MoreOperator,
    args: &[Option<Bson>],
) -> Result<Option<Bson>, QueryError> {
    use MoreOperator::*;
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    let null = Ok(Some(Bson::Null));
    Ok(Some(match op {
        MergeObjects => {
            let mut out = Document::new();
            for a in args {
                match a {
                    None | Some(Bson::Null) | Some(Bson::Undefined) => {}
                    Some(Bson::Document(d)) => {
                        for (k, v) in d {
                            out.insert(k.clone(), v.clone());
                        }
                    }
                    Some(other) => {
                        return Err(QueryError::location(
                            40400,
                            format!(
                            "$mergeObjects requires object inputs, but input {other} is of type {}",
                            type_name(Some(other))
                        ),
                        ))
                    }
                }
            }
            Bson::Document(out)
        }
        ObjectToArray => match arg(0) {
            None | Some(Bson::Null) | Some(Bson::Undefined) => Bson::Null,
            Some(Bson::Document(d)) => Bson::Array(
                d.iter()
                    .map(|(k, v)| Bson::Document(bson::doc! {"k": k.clone(), "v": v.clone()}))
                    .collect(),
            ),
            other => {
                return Err(QueryError::location(
                    40390,
                    format!(
                        "$objectToArray requires a document input, found: {}",
                        type_name(other)
                    ),
                ))
            }
        },
        ArrayToObject => {
            if nullish(arg(0)) {
                return null;
            }
            let mut out = Document::new();
            for item in array(arg(0), "$arrayToObject", 40386)? {
                let (k, v) = match item {
                    Bson::Document(d) if d.len() == 2 => match (d.get("k"), d.get("v")) {
                        (Some(Bson::String(k)), Some(v)) => (k.clone(), v.clone()),
                        _ => return Err(QueryError::location(40393, "$arrayToObject requires an object with keys 'k' and 'v'")),
                    },
                    Bson::Array(pair) if pair.len() == 2 => match &pair[0] {
                        Bson::String(k) => (k.clone(), pair[1].clone()),
                        _ => return Err(QueryError::location(40395, "$arrayToObject requires an array of key-value pairs, where the key must be of type string")),
                    },
                    _ => return Err(QueryError::location(40398, "Unrecognised input type format for $arrayToObject")),
                };
                out.insert(k, v);
            }
            Bson::Document(out)
        }
        GetField => {
            let field = string(arg(0), "$getField", 3041704)?;
            match arg(1) {
                Some(Bson::Document(d)) => return Ok(d.get(field).cloned()),
                None | Some(Bson::Null) | Some(Bson::Undefined) => Bson::Null,
                Some(_) => return Ok(None),
            }
        }
        SetField => {
            let field = string(arg(0), "$setField", 4161107)?;
            let mut doc = match arg(1) {
                None | Some(Bson::Null) | Some(Bson::Undefined) => return null,
                Some(Bson::Document(d)) => d.clone(),
                Some(other) => {
                    return Err(QueryError::location(
                        4161105,
                        format!(
                            "$setField requires 'input' to evaluate to type Object, but got {}",
                            type_name(Some(other))
                        ),
                    ))
                }
            };
            match arg(2) {
                Some(value) => {
                    doc.insert(field, value.clone());
                }
                None => {
                    doc.remove(field);
                }
            }
            Bson::Document(doc)
        }
        _ => return Err(misrouted(op)),
    }))
}
