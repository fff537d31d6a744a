//! More aggregation expression operators: math ($round, $sqrt, $pow, $exp, $ln, $log10,
//! $log), strings ($trim, $ltrim, $rtrim, $substrBytes/$substr, $indexOfCP, $strcasecmp,
//! $regexMatch), arrays ($reverseArray, $range, $slice, $indexOfArray, set operators,
//! $anyElementTrue, $allElementsTrue) and objects ($mergeObjects, $objectToArray,
//! $arrayToObject, $getField).
//!
//! Not for: the core operators (`expr_ops.rs`), dates (`expr_dates.rs`) or parsing of the
//! named-argument forms (`expr_parse.rs`).

use crate::query::error::QueryError;
use crate::query::expr::ops::type_name;
use crate::query::expr::truthy;
use crate::query::value::compare::values_equal;
use crate::query::value::number::{exact_value, round_half_even, to_decimal, Number};
use crate::query::value::regex_match::RegexPredicate;
use crate::query::value::value_set::{dedup, ValueSet};
use bson::{Bson, Document};

/// The extra operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoreOperator {
    /// `$round` [number, place]
    Round,
    /// `$sqrt`
    Sqrt,
    /// `$pow`
    Pow,
    /// `$exp`
    Exp,
    /// `$ln`
    Ln,
    /// `$log10`
    Log10,
    /// `$log` [number, base]
    Log,
    /// `$trim` (input, chars)
    Trim,
    /// `$ltrim` (input, chars)
    LeftTrim,
    /// `$rtrim` (input, chars)
    RightTrim,
    /// `$substrBytes` / `$substr`
    SubstrBytes,
    /// `$indexOfCP`
    IndexOfCodePoint,
    /// `$strcasecmp`
    StrCaseCmp,
    /// `$regexMatch` (input, regex, options)
    RegexMatch,
    /// `$reverseArray`
    ReverseArray,
    /// `$range`
    Range,
    /// `$slice` (expression)
    Slice,
    /// `$indexOfArray`
    IndexOfArray,
    /// `$setUnion`
    SetUnion,
    /// `$setIntersection`
    SetIntersection,
    /// `$setDifference`
    SetDifference,
    /// `$setEquals`
    SetEquals,
    /// `$setIsSubset`
    SetIsSubset,
    /// `$anyElementTrue`
    AnyElementTrue,
    /// `$allElementsTrue`
    AllElementsTrue,
    /// `$mergeObjects`
    MergeObjects,
    /// `$objectToArray`
    ObjectToArray,
    /// `$arrayToObject`
    ArrayToObject,
    /// `$getField` (field, input)
    GetField,
    /// `$sortArray` (input, sortBy)
    SortArray,
}

/// Named-argument layouts: operator name → argument names in order.
pub fn named_arguments(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "$trim" | "$ltrim" | "$rtrim" => &["input", "chars"],
        "$regexMatch" => &["input", "regex", "options"],
        "$getField" => &["field", "input"],
        "$sortArray" => &["input", "sortBy"],
        _ => return None,
    })
}

/// The operator for a name, with its arity.
pub fn lookup(name: &str) -> Option<(MoreOperator, usize, Option<usize>)> {
    use MoreOperator::*;
    Some(match name {
        "$round" => (Round, 1, Some(2)),
        "$sqrt" => (Sqrt, 1, Some(1)),
        "$pow" => (Pow, 2, Some(2)),
        "$exp" => (Exp, 1, Some(1)),
        "$ln" => (Ln, 1, Some(1)),
        "$log10" => (Log10, 1, Some(1)),
        "$log" => (Log, 2, Some(2)),
        "$trim" => (Trim, 1, Some(2)),
        "$ltrim" => (LeftTrim, 1, Some(2)),
        "$rtrim" => (RightTrim, 1, Some(2)),
        "$substrBytes" | "$substr" => (SubstrBytes, 3, Some(3)),
        "$indexOfCP" => (IndexOfCodePoint, 2, Some(4)),
        "$strcasecmp" => (StrCaseCmp, 2, Some(2)),
        "$regexMatch" => (RegexMatch, 2, Some(3)),
        "$reverseArray" => (ReverseArray, 1, Some(1)),
        "$range" => (Range, 2, Some(3)),
        "$slice" => (Slice, 2, Some(3)),
        "$indexOfArray" => (IndexOfArray, 2, Some(4)),
        "$setUnion" => (SetUnion, 0, None),
        "$setIntersection" => (SetIntersection, 0, None),
        "$setDifference" => (SetDifference, 2, Some(2)),
        "$setEquals" => (SetEquals, 2, None),
        "$setIsSubset" => (SetIsSubset, 2, Some(2)),
        "$anyElementTrue" => (AnyElementTrue, 1, Some(1)),
        "$allElementsTrue" => (AllElementsTrue, 1, Some(1)),
        "$mergeObjects" => (MergeObjects, 0, None),
        "$objectToArray" => (ObjectToArray, 1, Some(1)),
        "$arrayToObject" => (ArrayToObject, 1, Some(1)),
        "$getField" => (GetField, 1, Some(2)),
        "$sortArray" => (SortArray, 2, Some(2)),
        _ => return None,
    })
}

fn nullish(v: Option<&Bson>) -> bool {
    matches!(v, None | Some(Bson::Null) | Some(Bson::Undefined))
}

fn number(v: Option<&Bson>, op: &str, code: i32) -> Result<Option<Number>, QueryError> {
    if nullish(v) {
        return Ok(None);
    }
    match v.and_then(Number::from_bson) {
        Some(n) => Ok(Some(n)),
        None => Err(QueryError::location(
            code,
            format!("{op} only supports numeric types, not {}", type_name(v)),
        )),
    }
}

fn integer(v: Option<&Bson>, what: &str, code: i32) -> Result<i64, QueryError> {
    v.and_then(Number::from_bson)
        .and_then(Number::to_exact_i64)
        .ok_or_else(|| {
            QueryError::location(
                code,
                format!("{what} must be an integral number, found {}", type_name(v)),
            )
        })
}

fn string<'a>(v: Option<&'a Bson>, op: &str, code: i32) -> Result<&'a str, QueryError> {
    match v {
        Some(Bson::String(s)) | Some(Bson::Symbol(s)) => Ok(s),
        other => Err(QueryError::location(
            code,
            format!(
                "{op} requires a string argument, found: {}",
                type_name(other)
            ),
        )),
    }
}

fn array<'a>(v: Option<&'a Bson>, op: &str, code: i32) -> Result<&'a Vec<Bson>, QueryError> {
    match v {
        Some(Bson::Array(items)) => Ok(items),
        other => Err(QueryError::location(
            code,
            format!(
                "{op}'s argument must be an array, but is {}",
                type_name(other)
            ),
        )),
    }
}

fn float_result(n: Number, f: impl Fn(f64) -> f64) -> Bson {
    match n {
        Number::Decimal(_) => Bson::Decimal128(to_decimal(Number::Double(f(n.to_f64())))),
        _ => Bson::Double(f(n.to_f64())),
    }
}

/// Applies an extra operator to evaluated arguments.
pub fn apply(op: MoreOperator, args: &[Option<Bson>]) -> Result<Option<Bson>, QueryError> {
    use MoreOperator::*;
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    let null = Ok(Some(Bson::Null));
    Ok(Some(match op {
        Round => {
            let Some(n) = number(arg(0), "$round", 51081)? else {
                return null;
            };
            let place = if nullish(arg(1)) {
                0
            } else {
                integer(arg(1), "place", 51082)?
            };
            match n {
                Number::Int(_) if place >= 0 => arg(0).cloned().unwrap_or(Bson::Null),
                _ => {
                    // MongoDB rounds doubles through their 15-significant-digit decimal form.
                    let Some(exact) = exact_value(Number::Decimal(to_decimal(n))) else {
                        return Ok(arg(0).cloned());
                    };
                    let rounded = round_half_even(&exact, place.clamp(-40, 40));
                    match (n, arg(0)) {
                        (Number::Decimal(d), _) => {
                            // The result keeps `place` decimals (or the input's, if fewer).
                            let quantum =
                                crate::query::value::decimal::raw_exponent(&d).unwrap_or(0);
                            let ideal = quantum.max(-(place.clamp(-40, 40) as i32));
                            Bson::Decimal128(
                                crate::query::value::decimal::decimal_with_ideal_exponent(
                                    &rounded, ideal,
                                ),
                            )
                        }
                        (_, Some(Bson::Int32(_))) => {
                            Bson::Int32(rounded.to_i64_exact().unwrap_or(0) as i32)
                        }
                        (_, Some(Bson::Int64(_))) => {
                            Bson::Int64(rounded.to_i64_exact().unwrap_or(0))
                        }
                        _ => {
                            Bson::Double(rounded.to_scientific_string().parse().unwrap_or(f64::NAN))
                        }
                    }
                }
            }
        }
        Sqrt => {
            let Some(n) = number(arg(0), "$sqrt", 28765)? else {
                return null;
            };
            if n.to_f64() < 0.0 {
                return Err(QueryError::location(
                    28714,
                    "$sqrt's argument must be greater than or equal to 0",
                ));
            }
            float_result(n, f64::sqrt)
        }
        Exp => match number(arg(0), "$exp", 28765)? {
            Some(n) => float_result(n, f64::exp),
            None => return null,
        },
        Ln | Log10 => {
            let Some(n) = number(arg(0), if op == Ln { "$ln" } else { "$log10" }, 28765)? else {
                return null;
            };
            if n.to_f64() <= 0.0 {
                return Err(QueryError::location(
                    28766,
                    "$ln's argument must be a positive number",
                ));
            }
            float_result(n, if op == Ln { f64::ln } else { f64::log10 })
        }
        Log => {
            let (Some(n), Some(base)) = (
                number(arg(0), "$log", 28756)?,
                number(arg(1), "$log", 28757)?,
            ) else {
                return null;
            };
            if n.to_f64() <= 0.0 || base.to_f64() <= 0.0 || base.to_f64() == 1.0 {
                return Err(QueryError::location(
                    28758,
                    "$log's base must be a positive number not equal to 1",
                ));
            }
            let b = base.to_f64();
            float_result(n, |x| x.ln() / b.ln())
        }
        Pow => {
            let (Some(b), Some(e)) = (
                number(arg(0), "$pow", 28762)?,
                number(arg(1), "$pow", 28763)?,
            ) else {
                return null;
            };
            match (arg(0), arg(1), b.to_exact_i64(), e.to_exact_i64()) {
                (
                    Some(Bson::Int32(_) | Bson::Int64(_)),
                    Some(Bson::Int32(_) | Bson::Int64(_)),
                    Some(base),
                    Some(exp),
                ) if exp >= 0 => match u32::try_from(exp).ok().and_then(|x| base.checked_pow(x)) {
                    Some(v)
                        if matches!(
                            (arg(0), arg(1)),
                            (Some(Bson::Int32(_)), Some(Bson::Int32(_)))
                        ) =>
                    {
                        i32::try_from(v).map(Bson::Int32).unwrap_or(Bson::Int64(v))
                    }
                    Some(v) => Bson::Int64(v),
                    None => Bson::Double((base as f64).powf(exp as f64)),
                },
                _ if b.to_f64() == 0.0 && e.to_f64() < 0.0 => {
                    return Err(QueryError::location(
                        28764,
                        "$pow cannot take a base of 0 and a negative exponent",
                    ))
                }
                _ => {
                    let ex = e.to_f64();
                    if matches!(e, Number::Decimal(_)) {
                        float_result(e, |_| b.to_f64().powf(ex))
                    } else {
                        float_result(b, |x| x.powf(ex))
                    }
                }
            }
        }
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
        ReverseArray => {
            if nullish(arg(0)) {
                return null;
            }
            let mut items = array(arg(0), "$reverseArray", 34435)?.clone();
            items.reverse();
            Bson::Array(items)
        }
        Range => {
            let start = integer(arg(0), "$range start", 34443)?;
            let end = integer(arg(1), "$range end", 34444)?;
            let step = if args.len() > 2 {
                integer(arg(2), "$range step", 34446)?
            } else {
                1
            };
            if step == 0 {
                return Err(QueryError::location(
                    34449,
                    "$range requires a non-zero step value",
                ));
            }
            let in_32_bits = |v: i64| i32::try_from(v).is_ok();
            if !in_32_bits(start) || !in_32_bits(end) || !in_32_bits(step) {
                return Err(QueryError::location(
                    34443,
                    "$range requires values that can be represented as 32-bit integers",
                ));
            }
            let count = ((end - start) as f64 / step as f64).ceil().max(0.0) as usize;
            if count > 2_000_000 {
                return Err(QueryError::location(20, "$range would use too much memory"));
            }
            let mut items = Vec::with_capacity(count);
            for i in 0..count as i64 {
                crate::interrupt::check()?;
                let v = start + step * i;
                items.push(i32::try_from(v).map(Bson::Int32).unwrap_or(Bson::Int64(v)));
            }
            Bson::Array(items)
        }
        Slice => {
            if nullish(arg(0)) {
                return null;
            }
            let items = array(arg(0), "$slice", 28724)?;
            let len = items.len() as i64;
            let (start, count) = if args.len() == 2 {
                let n = integer(arg(1), "$slice count", 28725)?;
                if n >= 0 {
                    (0, n)
                } else {
                    ((len + n).max(0), n.saturating_neg())
                }
            } else {
                let position = integer(arg(1), "$slice position", 28725)?;
                let n = integer(arg(2), "$slice count", 28726)?;
                if n <= 0 {
                    return Err(QueryError::location(
                        28729,
                        "Third argument to $slice must be positive",
                    ));
                }
                let start = if position >= 0 {
                    position.min(len)
                } else {
                    (len + position).max(0)
                };
                (start, n)
            };
            Bson::Array(
                items
                    .iter()
                    .skip(start as usize)
                    .take(count.max(0) as usize)
                    .cloned()
                    .collect(),
            )
        }
        IndexOfArray => {
            if nullish(arg(0)) {
                return null;
            }
            let items = array(arg(0), "$indexOfArray", 40090)?;
            let start = if args.len() > 2 {
                integer(arg(2), "$indexOfArray start", 40096)?.max(0) as usize
            } else {
                0
            };
            let end = if args.len() > 3 {
                (integer(arg(3), "$indexOfArray end", 40097)?.max(0) as usize).min(items.len())
            } else {
                items.len()
            };
            let needle = arg(1).cloned().unwrap_or(Bson::Undefined);
            let found =
                (start..end).find(|i| items.get(*i).is_some_and(|v| values_equal(v, &needle)));
            Bson::Int32(found.map(|i| i as i32).unwrap_or(-1))
        }
        SetUnion | SetIntersection | SetDifference | SetEquals | SetIsSubset => {
            if args.iter().any(|a| nullish(a.as_ref()))
                && matches!(op, SetUnion | SetIntersection | SetDifference)
            {
                return null;
            }
            let mut inputs = Vec::with_capacity(args.len());
            for a in args {
                inputs.push(array(a.as_ref(), "set operator", 17044)?);
            }
            if op == SetUnion {
                return Ok(Some(Bson::Array(
                    dedup(inputs.into_iter().flatten().cloned())?.0,
                )));
            }
            // Each input without repeats, in first-occurrence order, with its keys.
            let sets: Vec<(Vec<Bson>, ValueSet)> = inputs
                .into_iter()
                .map(|items| dedup(items.iter().cloned()))
                .collect::<Result<_, _>>()?;
            match (op, sets.as_slice()) {
                (SetIntersection, [(first, _), ..]) => Bson::Array(
                    first
                        .iter()
                        .filter(|v| sets.iter().all(|(_, s)| s.contains(v)))
                        .cloned()
                        .collect(),
                ),
                (SetIntersection, []) => Bson::Array(Vec::new()),
                (SetDifference, [(a, _), (_, b), ..]) => {
                    Bson::Array(a.iter().filter(|v| !b.contains(v)).cloned().collect())
                }
                (SetIsSubset, [(a, _), (_, b), ..]) => {
                    Bson::Boolean(a.iter().all(|v| b.contains(v)))
                }
                (SetEquals, _) => Bson::Boolean(sets.windows(2).all(|w| {
                    let ((a, a_keys), (b, b_keys)) = (&w[0], &w[1]);
                    a.iter().all(|v| b_keys.contains(v)) && b.iter().all(|v| a_keys.contains(v))
                })),
                _ => {
                    return Err(QueryError::location(
                        17044,
                        "set operator is missing an argument",
                    ))
                }
            }
        }
        AnyElementTrue | AllElementsTrue => {
            let items = array(
                arg(0),
                if op == AnyElementTrue {
                    "$anyElementTrue"
                } else {
                    "$allElementsTrue"
                },
                17041,
            )?;
            Bson::Boolean(if op == AnyElementTrue {
                items.iter().any(truthy)
            } else {
                items.iter().all(truthy)
            })
        }
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
        SortArray => {
            if nullish(arg(0)) {
                return null;
            }
            let mut items = array(arg(0), "$sortArray", 2942504)?.clone();
            match arg(1) {
                Some(Bson::Document(spec)) => {
                    let spec = crate::query::sort::SortSpec::parse(spec)?;
                    let empty = Document::new();
                    items.sort_by(|a, b| {
                        let da = match a {
                            Bson::Document(d) => d,
                            _ => &empty,
                        };
                        let db = match b {
                            Bson::Document(d) => d,
                            _ => &empty,
                        };
                        spec.compare(da, db)
                    });
                }
                other => {
                    let direction = other
                        .and_then(Number::from_bson)
                        .and_then(Number::to_exact_i64);
                    match direction {
                        Some(1) => items.sort_by(crate::query::value::compare::compare_values),
                        Some(-1) => {
                            items.sort_by(|a, b| crate::query::value::compare::compare_values(b, a))
                        }
                        _ => {
                            return Err(QueryError::location(
                                2942505,
                                "$sortArray requires sortBy to be 1, -1 or a sort specification",
                            ))
                        }
                    }
                }
            }
            Bson::Array(items)
        }
        GetField => {
            let field = string(arg(0), "$getField", 3041704)?;
            match arg(1) {
                Some(Bson::Document(d)) => return Ok(d.get(field).cloned()),
                None | Some(Bson::Null) | Some(Bson::Undefined) => Bson::Null,
                Some(_) => return Ok(None),
            }
        }
    }))
}
