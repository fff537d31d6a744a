//! String expression operators: $concat, $toUpper, $toLower, $strLenBytes, $strLenCP,
//! $substrCP, $split, $trim, $ltrim, $rtrim, $substrBytes/$substr, $indexOfCP, $strcasecmp
//! and $regexMatch.
//!
//! Not for: converting values to strings (`convert.rs`) or dates (`date.rs`).

use super::args::*;
use super::more::MoreOperator;
use super::operator::{
    arg, integer_arg, is_nullish, misrouted, some, type_name, value_to_string, Operator,
};
use crate::query::error::QueryError;
use crate::query::value::regex_match::RegexPredicate;
use bson::Bson;

/// Applies the string operators (arity already checked by the parser).
pub(super) fn apply(op: Operator, args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    use Operator::*;
    match op {
        Concat => concat(args),
        ToUpper | ToLower => {
            let text = match arg(args, 0) {
                None | Some(Bson::Null) | Some(Bson::Undefined) => String::new(),
                Some(Bson::String(s)) | Some(Bson::Symbol(s)) => s.clone(),
                Some(
                    v @ (Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)),
                ) => value_to_string(v),
                Some(other) => {
                    return Err(QueryError::location(
                        16007,
                        format!(
                            "can't convert from BSON type {} to String",
                            type_name(Some(other))
                        ),
                    ))
                }
            };
            some(Bson::String(if op == ToUpper {
                text.to_uppercase()
            } else {
                text.to_lowercase()
            }))
        }
        StrLenBytes | StrLenCodePoints => match arg(args, 0) {
            Some(Bson::String(s)) => some(Bson::Int32(if op == StrLenBytes {
                s.len() as i32
            } else {
                s.chars().count() as i32
            })),
            other => Err(QueryError::location(
                34471,
                format!(
                    "{} requires a string argument, found: {}",
                    if op == StrLenBytes {
                        "$strLenBytes"
                    } else {
                        "$strLenCP"
                    },
                    type_name(other)
                ),
            )),
        },
        SubstrCodePoints => substr_code_points(args),
        Split => split(args),
        _ => Err(misrouted(op)),
    }
}

/// Applies the string operators to evaluated arguments.
pub(super) fn apply_more(
    op: MoreOperator,
    args: &[Option<Bson>],
) -> Result<Option<Bson>, QueryError> {
    use MoreOperator::*;
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    let null = Ok(Some(Bson::Null));
    Ok(Some(match op {
        Trim | LeftTrim | RightTrim => {
            if nullish(arg(0)) {
                return null;
            }
            let name = match op {
                Trim => "$trim",
                LeftTrim => "$ltrim",
                _ => "$rtrim",
            };
            let input = string(arg(0), name, 50699)?;
            let chars: Vec<char> = match arg(1) {
                None | Some(Bson::Null) => vec![
                    ' ', '\t', '\n', '\r', '\u{b}', '\u{c}', '\0', '\u{a0}', '\u{2000}',
                    '\u{200a}', '\u{3000}',
                ],
                other => string(other, name, 50700)?.chars().collect(),
            };
            let trimmed = match op {
                Trim => input.trim_matches(chars.as_slice()),
                LeftTrim => input.trim_start_matches(chars.as_slice()),
                _ => input.trim_end_matches(chars.as_slice()),
            };
            Bson::String(trimmed.to_string())
        }
        SubstrBytes => {
            let text = match arg(0) {
                None | Some(Bson::Null) | Some(Bson::Undefined) => String::new(),
                Some(Bson::String(s)) => s.clone(),
                Some(other) => crate::query::expr::ops::value_to_string(other),
            };
            let start = integer(arg(1), "$substrBytes: starting index", 16034)?;
            let length = integer(arg(2), "$substrBytes: length", 16035)?;
            let start = usize::try_from(start).unwrap_or(0).min(text.len());
            let end = if length < 0 {
                text.len()
            } else {
                start.saturating_add(length as usize).min(text.len())
            };
            match text.get(start..end) {
                Some(s) => Bson::String(s.to_string()),
                None => return Err(QueryError::location(
                    28656,
                    "$substrBytes:  Invalid range, starting index is a UTF-8 continuation byte.",
                )),
            }
        }
        IndexOfCodePoint => {
            if nullish(arg(0)) {
                return null;
            }
            let haystack: Vec<char> = string(arg(0), "$indexOfCP", 40093)?.chars().collect();
            let needle: Vec<char> = string(arg(1), "$indexOfCP", 40094)?.chars().collect();
            let start = if args.len() > 2 {
                integer(arg(2), "$indexOfCP start", 40096)?.max(0) as usize
            } else {
                0
            };
            let end = if args.len() > 3 {
                (integer(arg(3), "$indexOfCP end", 40097)?.max(0) as usize).min(haystack.len())
            } else {
                haystack.len()
            };
            let found = (start..=end.saturating_sub(needle.len()))
                .filter(|i| *i + needle.len() <= end)
                .find(|i| haystack[*i..*i + needle.len()] == needle[..]);
            Bson::Int32(found.map(|i| i as i32).unwrap_or(-1))
        }
        StrCaseCmp => {
            let text = |v: Option<&Bson>| match v {
                None | Some(Bson::Null) => String::new(),
                Some(other) => crate::query::expr::ops::value_to_string(other).to_lowercase(),
            };
            Bson::Int32(match text(arg(0)).cmp(&text(arg(1))) {
                std::cmp::Ordering::Less => -1,
                std::cmp::Ordering::Equal => 0,
                std::cmp::Ordering::Greater => 1,
            })
        }
        RegexMatch => {
            if nullish(arg(0)) {
                return Ok(Some(Bson::Boolean(false)));
            }
            let input = string(arg(0), "$regexMatch", 51104)?;
            let options = match arg(2) {
                None | Some(Bson::Null) => String::new(),
                Some(Bson::String(s)) => s.clone(),
                Some(other) => {
                    return Err(QueryError::location(
                        51106,
                        format!(
                            "$regexMatch needs 'options' to be of type string, found {}",
                            type_name(Some(other))
                        ),
                    ))
                }
            };
            let re = match arg(1) {
                Some(Bson::String(p)) => RegexPredicate::new(p, &options)?,
                Some(Bson::RegularExpression(r)) => {
                    let mut all = r.options.as_str().to_string();
                    all.push_str(&options);
                    RegexPredicate::new(r.pattern.as_str(), &all)?
                }
                None | Some(Bson::Null) => return Ok(Some(Bson::Boolean(false))),
                Some(other) => {
                    return Err(QueryError::location(
                        51105,
                        format!(
                            "$regexMatch needs 'regex' to be of type string or regex, found {}",
                            type_name(Some(other))
                        ),
                    ))
                }
            };
            Bson::Boolean(re.is_match(input))
        }
        _ => return Err(misrouted(op)),
    }))
}

fn concat(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let mut out = String::new();
    for value in args {
        match value {
            None | Some(Bson::Null) | Some(Bson::Undefined) => return some(Bson::Null),
            Some(Bson::String(s)) | Some(Bson::Symbol(s)) => out.push_str(s),
            Some(other) => {
                return Err(QueryError::location(
                    16702,
                    format!(
                        "$concat only supports strings, not {}",
                        type_name(Some(other))
                    ),
                ))
            }
        }
    }
    some(Bson::String(out))
}

fn substr_code_points(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let text = match arg(args, 0) {
        None | Some(Bson::Null) | Some(Bson::Undefined) => {
            return some(Bson::String(String::new()))
        }
        Some(Bson::String(s)) => s.clone(),
        Some(other) => value_to_string(other),
    };
    let start = integer_arg(arg(args, 1), || {
        QueryError::location(34450, "$substrCP: starting index must be a numeric type")
    })?;
    let length = integer_arg(arg(args, 2), || {
        QueryError::location(34452, "$substrCP: length must be a numeric type")
    })?;
    if start < 0 || length < 0 {
        return Err(QueryError::location(
            34451,
            "$substrCP: starting index and length must be non-negative",
        ));
    }
    some(Bson::String(
        text.chars()
            .skip(start as usize)
            .take(length as usize)
            .collect(),
    ))
}

fn split(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let (text, delimiter) = (
        args.first().cloned().flatten(),
        args.get(1).cloned().flatten(),
    );
    if is_nullish(&text) {
        return some(Bson::Null);
    }
    match (text, delimiter) {
        (Some(Bson::String(s)), Some(Bson::String(d))) if !d.is_empty() => some(Bson::Array(
            s.split(d.as_str()).map(|p| Bson::String(p.to_string())).collect(),
        )),
        (Some(Bson::String(_)), Some(Bson::String(_))) => Err(QueryError::location(
            40087,
            "$split requires a non-empty separator",
        )),
        (Some(Bson::String(_)), other) => Err(QueryError::location(
            40086,
            format!("$split requires an expression that evaluates to a string as a second argument, found: {}", type_name(other.as_ref())),
        )),
        (other, _) => Err(QueryError::location(
            40085,
            format!("$split requires an expression that evaluates to a string as a first argument, found: {}", type_name(other.as_ref())),
        )),
    }
}
