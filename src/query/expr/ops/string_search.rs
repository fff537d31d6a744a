//! String search and replace expressions: $indexOfBytes, $regexFind and $regexFindAll
//! (`{match, idx, captures}` with `idx` in code points and unmatched groups as null, compiled
//! by the same `value/regex_match.rs` that serves `$regexMatch`), $replaceOne and
//! $replaceAll (literal, not pattern, replacement).
//!
//! Not for: $indexOfCP, $regexMatch and the other string operators (`string.rs`), or the
//! named-argument parsing of $replaceOne/$replaceAll (`expr/parse_more.rs`).

use super::args::nullish;
use super::more::MoreOperator;
use super::operator::{misrouted, type_name};
use crate::query::error::QueryError;
use crate::query::value::number::Number;
use crate::query::value::regex_match::RegexPredicate;
use bson::{doc, Bson};

/// Applies the search and replace operators to evaluated arguments.
pub(super) fn apply_more(
    op: MoreOperator,
    args: &[Option<Bson>],
) -> Result<Option<Bson>, QueryError> {
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    match op {
        MoreOperator::IndexOfBytes => index_of_bytes(args),
        MoreOperator::RegexFind | MoreOperator::RegexFindAll => {
            let all = op == MoreOperator::RegexFindAll;
            let name = if all { "$regexFindAll" } else { "$regexFind" };
            let nothing = || Some(if all { Bson::Array(vec![]) } else { Bson::Null });
            let Some(re) = compile(name, arg(1), arg(2))? else {
                return Ok(nothing());
            };
            let input = match arg(0) {
                None | Some(Bson::Null) | Some(Bson::Undefined) => return Ok(nothing()),
                Some(Bson::String(s)) => s.as_str(),
                Some(other) => {
                    return Err(QueryError::location(
                        51104,
                        format!(
                            "{name} needs 'input' to be of type string, found {}",
                            type_name(Some(other))
                        ),
                    ))
                }
            };
            let mut found = re
                .compiled()
                .captures_iter(input)
                .map(|captures| match_document(input, &captures));
            Ok(Some(if all {
                Bson::Array(found.collect())
            } else {
                found.next().unwrap_or(Bson::Null)
            }))
        }
        MoreOperator::ReplaceOne | MoreOperator::ReplaceAll => {
            let name = if op == MoreOperator::ReplaceOne {
                "$replaceOne"
            } else {
                "$replaceAll"
            };
            let mut texts = Vec::with_capacity(3);
            for (i, (what, code)) in [("input", 51746), ("find", 51745), ("replacement", 51744)]
                .into_iter()
                .enumerate()
            {
                match arg(i) {
                    None | Some(Bson::Null) | Some(Bson::Undefined) => texts.push(None),
                    Some(Bson::String(s)) => texts.push(Some(s.as_str())),
                    Some(other) => {
                        return Err(QueryError::location(
                            code,
                            format!("{name} requires that '{what}' be a string, found: {other}"),
                        ))
                    }
                }
            }
            let [Some(input), Some(find), Some(replacement)] = texts[..] else {
                return Ok(Some(Bson::Null));
            };
            Ok(Some(Bson::String(if op == MoreOperator::ReplaceOne {
                input.replacen(find, replacement, 1)
            } else if find.is_empty() {
                // MongoDB inserts the replacement between every character and at both ends.
                let mut out = String::from(replacement);
                for c in input.chars() {
                    out.push(c);
                    out.push_str(replacement);
                }
                out
            } else {
                input.replace(find, replacement)
            })))
        }
        _ => Err(misrouted(op)),
    }
}

/// The regex of `$regexFind`/`$regexFindAll` from its `regex` and `options` arguments;
/// `None` when the regex is null or missing.
fn compile(
    name: &str,
    regex: Option<&Bson>,
    options: Option<&Bson>,
) -> Result<Option<RegexPredicate>, QueryError> {
    let options = match options {
        None | Some(Bson::Null) | Some(Bson::Undefined) => None,
        Some(Bson::String(s)) => Some(s.as_str()),
        Some(other) => {
            return Err(QueryError::location(
                51106,
                format!(
                    "{name} needs 'options' to be of type string, found {}",
                    type_name(Some(other))
                ),
            ))
        }
    };
    let (pattern, options) = match regex {
        None | Some(Bson::Null) | Some(Bson::Undefined) => return Ok(None),
        Some(Bson::String(p)) => (p.as_str(), options.unwrap_or("")),
        Some(Bson::RegularExpression(r)) => {
            let own = r.options.as_str();
            if !own.is_empty() && options.is_some_and(|o| !o.is_empty()) {
                return Err(QueryError::location(
                    51107,
                    format!(
                        "{name}: found regex option(s) specified in both 'regex' and 'option' fields"
                    ),
                ));
            }
            (
                r.pattern.as_str(),
                if own.is_empty() {
                    options.unwrap_or("")
                } else {
                    own
                },
            )
        }
        Some(other) => {
            return Err(QueryError::location(
                51105,
                format!(
                    "{name} needs 'regex' to be of type string or regex, found {}",
                    type_name(Some(other))
                ),
            ))
        }
    };
    if pattern.contains('\0') {
        return Err(QueryError::location(
            51109,
            format!("{name}: regular expression cannot contain an embedded null byte"),
        ));
    }
    RegexPredicate::new(pattern, options).map(Some)
}

/// `{match, idx, captures}` for one match; `idx` counts code points, as MongoDB's does.
fn match_document(input: &str, captures: &regex::Captures<'_>) -> Bson {
    let whole = captures.get(0);
    let start = whole.map_or(0, |m| m.start());
    let groups: Vec<Bson> = captures
        .iter()
        .skip(1)
        .map(|g| g.map_or(Bson::Null, |m| Bson::String(m.as_str().to_string())))
        .collect();
    Bson::Document(doc! {
        "match": whole.map_or("", |m| m.as_str()),
        "idx": i32::try_from(input[..start].chars().count()).unwrap_or(i32::MAX),
        "captures": groups,
    })
}

/// `$indexOfBytes: [string, substring, start, end]`: the byte offset of the first
/// occurrence within [start, end), or -1.
fn index_of_bytes(args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    let haystack = match arg(0) {
        v if nullish(v) => return Ok(Some(Bson::Null)),
        Some(Bson::String(s)) => s.as_bytes(),
        other => {
            return Err(QueryError::location(
                40091,
                format!(
                    "$indexOfBytes requires a string as the first argument, found: {}",
                    type_name(other)
                ),
            ))
        }
    };
    let needle = match arg(1) {
        Some(Bson::String(s)) => s.as_bytes(),
        other => {
            return Err(QueryError::location(
                40092,
                format!(
                    "$indexOfBytes requires a string as the second argument, found: {}",
                    type_name(other)
                ),
            ))
        }
    };
    let bound = |i: usize, which: &str, default: usize| -> Result<usize, QueryError> {
        if args.len() <= i {
            return Ok(default);
        }
        let value = arg(i)
            .and_then(Number::from_bson)
            .and_then(Number::to_exact_i64)
            .ok_or_else(|| {
                QueryError::location(
                    40096,
                    format!(
                        "$indexOfBytes requires an integral {which} index, found a value of \
                         type: {}, with value: {}",
                        type_name(arg(i)),
                        arg(i).map_or_else(|| "missing".to_string(), |v| v.to_string())
                    ),
                )
            })?;
        usize::try_from(value).map_err(|_| {
            QueryError::location(
                40097,
                format!("$indexOfBytes requires a nonnegative {which} index, found: {value}"),
            )
        })
    };
    let start = bound(2, "starting", 0)?;
    let end = bound(3, "ending", haystack.len())?.min(haystack.len());
    if start > end {
        return Ok(Some(Bson::Int32(-1)));
    }
    let window = &haystack[start..end];
    let found = if needle.is_empty() {
        Some(0)
    } else {
        window.windows(needle.len()).position(|w| w == needle)
    };
    Ok(Some(Bson::Int32(
        found
            .and_then(|i| i32::try_from(start + i).ok())
            .unwrap_or(-1),
    )))
}
