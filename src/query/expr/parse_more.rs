//! Parsing the MongoDB 7.0 operators whose arguments the generic operator table cannot
//! check: $setField/$unsetField (a constant string field), $firstN/$lastN/$maxN/$minN
//! (`{input, n}`), $replaceOne/$replaceAll (three required names), $regexMatch/$regexFind/
//! $regexFindAll (51103/31022/31023/31024), $zip (literal arrays of inputs and defaults),
//! $percentile/$median (IDL-style fields, method "approximate"), $rand (an empty object or
//! array), and the names docgate refuses with MongoDB's error rather than 168: $meta
//! (17307/17308; for metadata other than textScore, which reads the score a `$text` read
//! left on the document, docgate's "not supported" 2 BadValue) and $function (31264, there is no JavaScript
//! engine).
//!
//! Each parser answers the argument layout its evaluator in `expr/ops/` documents.
//!
//! Not for: the generic table (`expr/parse.rs`) or evaluating anything.

use crate::query::error::QueryError;
use crate::query::expr::ops::more::MoreOperator;
use crate::query::expr::ops::{type_name, Operator};
use crate::query::expr::{parse_nested, Expression, Node};
use bson::Bson;

/// The operator names [`parse`] takes.
pub(super) fn handles(name: &str) -> bool {
    matches!(
        name,
        "$setField"
            | "$unsetField"
            | "$firstN"
            | "$lastN"
            | "$maxN"
            | "$minN"
            | "$replaceOne"
            | "$replaceAll"
            | "$regexMatch"
            | "$regexFind"
            | "$regexFindAll"
            | "$zip"
            | "$percentile"
            | "$median"
            | "$rand"
            | "$meta"
            | "$function"
    )
}

/// Parses `{name: arg}` for a name [`handles`] takes.
pub(super) fn parse(name: &str, arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    match name {
        "$setField" | "$unsetField" => parse_set_field(name, arg, depth),
        "$firstN" | "$lastN" | "$maxN" | "$minN" => parse_n(name, arg, depth),
        "$replaceOne" | "$replaceAll" => parse_replace(name, arg, depth),
        "$regexMatch" | "$regexFind" | "$regexFindAll" => parse_regex(name, arg, depth),
        "$zip" => parse_zip(arg, depth),
        "$percentile" | "$median" => parse_percentile(name, arg, depth),
        "$rand" => match arg {
            Bson::Document(d) if d.is_empty() => Ok(call(MoreOperator::Rand, vec![])),
            Bson::Array(items) if items.is_empty() => Ok(call(MoreOperator::Rand, vec![])),
            Bson::Document(_) | Bson::Array(_) => Err(QueryError::location(
                3040501,
                "$rand does not currently accept arguments",
            )),
            _ => Err(QueryError::location(
                10065,
                "invalid parameter: expected an object ($rand)",
            )),
        },
        "$meta" if matches!(arg, Bson::String(kind) if kind == "textScore") => Ok(call(
            MoreOperator::TextScore,
            vec![Expression {
                node: Node::FieldPath(vec![crate::query::text::TEXT_SCORE_FIELD.to_string()]),
            }],
        )),
        "$meta" => Err(refuse_meta(arg)),
        "$function" => Err(QueryError::location(
            31264,
            "Cannot run server-side javascript without the javascript engine enabled",
        )),
        other => Err(QueryError::invalid_pipeline_operator(format!(
            "Unrecognized expression '{other}'"
        ))),
    }
}

fn call(op: MoreOperator, args: Vec<Expression>) -> Node {
    Node::Call {
        op: Operator::More(op),
        args,
    }
}

fn literal(value: Bson) -> Expression {
    Expression {
        node: Node::Literal(value),
    }
}

fn parse_set_field(name: &str, arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    let Bson::Document(d) = arg else {
        return Err(QueryError::location(
            4161100,
            format!("{name} only supports an object as its argument"),
        ));
    };
    let takes_value = name == "$setField";
    for key in d.keys() {
        if !(key == "field" || key == "input" || (key == "value" && takes_value)) {
            return Err(QueryError::location(
                4161101,
                format!("{name} found an unknown argument: {key}"),
            ));
        }
    }
    let field = d.get("field").ok_or_else(|| {
        QueryError::location(4161102, format!("{name} requires 'field' to be specified"))
    })?;
    let value = match d.get("value") {
        Some(v) => parse_nested(v, depth)?,
        None if takes_value => {
            return Err(QueryError::location(
                4161103,
                format!("{name} requires 'value' to be specified"),
            ))
        }
        None => parse_nested(&Bson::String("$$REMOVE".into()), depth)?,
    };
    let input = d.get("input").ok_or_else(|| {
        QueryError::location(4161109, format!("{name} requires 'input' to be specified"))
    })?;
    let field = match parse_nested(field, depth)?.node {
        Node::Literal(Bson::String(s)) => {
            if s.contains('\0') {
                return Err(QueryError::bad_value(format!(
                    "{name}: 'field' cannot contain an embedded null byte"
                )));
            }
            s
        }
        Node::Literal(other) => {
            return Err(QueryError::location(
                4161107,
                format!(
                    "{name} requires 'field' to evaluate to type String, but got {}",
                    type_name(Some(&other))
                ),
            ))
        }
        Node::FieldPath(_) | Node::Variable { .. } => {
            return Err(QueryError::location(
                4161108,
                format!(
                    "{name} requires 'field' to evaluate to a constant, but got a non-constant \
                     argument: {field}; a field name starting with '$' needs $literal"
                ),
            ))
        }
        _ => {
            return Err(QueryError::location(
                4161106,
                format!(
                    "{name} requires 'field' to evaluate to a constant, but got a non-constant \
                     argument"
                ),
            ))
        }
    };
    Ok(call(
        MoreOperator::SetField,
        vec![
            literal(Bson::String(field)),
            parse_nested(input, depth)?,
            value,
        ],
    ))
}

fn parse_n(name: &str, arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    let Bson::Document(d) = arg else {
        return Err(QueryError::location(
            5787801,
            format!("specification must be an object; found {name}: {arg}"),
        ));
    };
    for key in d.keys() {
        if key != "input" && key != "n" {
            return Err(QueryError::location(
                5787901,
                format!("Unknown argument for 'n' operator: {key}"),
            ));
        }
    }
    let n = d
        .get("n")
        .ok_or_else(|| QueryError::location(5787906, format!("Missing value for 'n' in {name}")))?;
    let input = d.get("input").ok_or_else(|| {
        QueryError::location(5787907, format!("Missing value for 'input' in {name}"))
    })?;
    let op = match name {
        "$firstN" => MoreOperator::FirstN,
        "$lastN" => MoreOperator::LastN,
        "$maxN" => MoreOperator::MaxN,
        _ => MoreOperator::MinN,
    };
    Ok(call(
        op,
        vec![parse_nested(input, depth)?, parse_nested(n, depth)?],
    ))
}

fn parse_replace(name: &str, arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    let Bson::Document(d) = arg else {
        return Err(QueryError::location(
            51751,
            format!("{name} requires an object as an argument, found: {arg}"),
        ));
    };
    for key in d.keys() {
        if !matches!(key.as_str(), "input" | "find" | "replacement") {
            return Err(QueryError::location(
                51750,
                format!("{name} found an unknown argument: {key}"),
            ));
        }
    }
    let mut args = Vec::with_capacity(3);
    for (what, code) in [("input", 51749), ("find", 51748), ("replacement", 51747)] {
        let v = d.get(what).ok_or_else(|| {
            QueryError::location(code, format!("{name} requires '{what}' to be specified"))
        })?;
        args.push(parse_nested(v, depth)?);
    }
    let op = if name == "$replaceOne" {
        MoreOperator::ReplaceOne
    } else {
        MoreOperator::ReplaceAll
    };
    Ok(call(op, args))
}

/// `{input, regex, options}` of the regex operators into `[input, regex, options]`
/// (51103 not an object, 31024 unknown argument, 31022/31023 missing input/regex).
fn parse_regex(name: &str, arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    let Bson::Document(d) = arg else {
        return Err(QueryError::location(
            51103,
            format!(
                "{name} expects an object of named arguments but found: {}",
                type_name(Some(arg))
            ),
        ));
    };
    for key in d.keys() {
        if !matches!(key.as_str(), "input" | "regex" | "options") {
            return Err(QueryError::location(
                31024,
                format!("{name} found an unknown argument: {key}"),
            ));
        }
    }
    let input = d
        .get("input")
        .ok_or_else(|| QueryError::location(31022, format!("{name} requires 'input' parameter")))?;
    let regex = d
        .get("regex")
        .ok_or_else(|| QueryError::location(31023, format!("{name} requires 'regex' parameter")))?;
    let options = match d.get("options") {
        Some(o) => parse_nested(o, depth)?,
        None => parse_nested(&Bson::String("$$REMOVE".into()), depth)?,
    };
    let op = match name {
        "$regexMatch" => MoreOperator::RegexMatch,
        "$regexFind" => MoreOperator::RegexFind,
        _ => MoreOperator::RegexFindAll,
    };
    Ok(call(
        op,
        vec![
            parse_nested(input, depth)?,
            parse_nested(regex, depth)?,
            options,
        ],
    ))
}

/// `$zip: {inputs: [...], useLongestLength, defaults: [...]}` into
/// `[k, useLongestLength, inputs…, defaults…]`.
fn parse_zip(arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    let Bson::Document(d) = arg else {
        return Err(QueryError::location(
            34460,
            format!(
                "$zip only supports an object as an argument, found {}",
                type_name(Some(arg))
            ),
        ));
    };
    let mut inputs = None;
    let mut defaults = None;
    let mut use_longest = false;
    for (key, value) in d {
        match (key.as_str(), value) {
            ("inputs", Bson::Array(items)) => inputs = Some(items),
            ("inputs", other) => {
                return Err(QueryError::location(
                    34461,
                    format!(
                        "inputs must be an array of expressions, found {}",
                        type_name(Some(other))
                    ),
                ))
            }
            ("defaults", Bson::Array(items)) => defaults = Some(items),
            ("defaults", other) => {
                return Err(QueryError::location(
                    34462,
                    format!(
                        "defaults must be an array of expressions, found {}",
                        type_name(Some(other))
                    ),
                ))
            }
            ("useLongestLength", Bson::Boolean(b)) => use_longest = *b,
            ("useLongestLength", other) => {
                return Err(QueryError::location(
                    34463,
                    format!(
                        "useLongestLength must be a bool, found {}",
                        type_name(Some(other))
                    ),
                ))
            }
            (other, _) => {
                return Err(QueryError::location(
                    34464,
                    format!("$zip found an unknown argument: {other}"),
                ))
            }
        }
    }
    let inputs = match inputs {
        Some(items) if !items.is_empty() => items,
        _ => {
            return Err(QueryError::location(
                34465,
                "$zip requires at least one input array",
            ))
        }
    };
    if let Some(defaults) = defaults {
        if !use_longest {
            return Err(QueryError::location(
                34466,
                "cannot specify defaults unless useLongestLength is true",
            ));
        }
        if defaults.len() != inputs.len() {
            return Err(QueryError::location(
                34467,
                "defaults and inputs must have the same length",
            ));
        }
    }
    let count = i32::try_from(inputs.len())
        .map_err(|_| QueryError::bad_value("$zip has too many inputs"))?;
    let mut args = vec![
        literal(Bson::Int32(count)),
        literal(Bson::Boolean(use_longest)),
    ];
    for item in inputs.iter().chain(defaults.into_iter().flatten()) {
        args.push(parse_nested(item, depth)?);
    }
    Ok(call(MoreOperator::Zip, args))
}

/// `$percentile: {input, p, method}` / `$median: {input, method}` into `[input, p]` with `p`
/// a literal array of numbers, or the number 0.5 for $median.
fn parse_percentile(name: &str, arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    let (input, p) = percentile_arguments(name, arg, depth)?;
    Ok(call(
        MoreOperator::Percentile,
        vec![parse_nested(input, depth)?, literal(p)],
    ))
}

/// The `input` (unparsed) and `p` of `$percentile: {input, p, method}` / `$median: {input,
/// method}` — `p` a literal array of numbers, or the number 0.5 for $median — with MongoDB's
/// errors; shared by the expressions and the `$group`/`$setWindowFields` accumulators.
pub(crate) fn percentile_arguments<'a>(
    name: &str,
    arg: &'a Bson,
    depth: usize,
) -> Result<(&'a Bson, Bson), QueryError> {
    let takes_p = name == "$percentile";
    let Bson::Document(d) = arg else {
        return Err(QueryError::location(
            if takes_p { 7436200 } else { 7436201 },
            format!("specification must be an object; found {name}: {arg}"),
        ));
    };
    let field = |f: &str| format!("{}.{f}", name.trim_start_matches('$'));
    for key in d.keys() {
        if !(key == "input" || key == "method" || (key == "p" && takes_p)) {
            return Err(QueryError::location(
                40415,
                format!("BSON field '{}' is an unknown field.", field(key)),
            ));
        }
    }
    let missing = |f: &str| {
        QueryError::location(
            40414,
            format!("BSON field '{}' is missing but a required field", field(f)),
        )
    };
    let input = d.get("input").ok_or_else(|| missing("input"))?;
    let p = if takes_p {
        Bson::Array(percentile_p(
            d.get("p").ok_or_else(|| missing("p"))?,
            depth,
        )?)
    } else {
        Bson::Double(0.5)
    };
    match d.get("method").ok_or_else(|| missing("method"))? {
        Bson::String(m) if m == "approximate" => {}
        Bson::String(_) => {
            return Err(QueryError::bad_value(
                "Currently only 'approximate' can be used as percentile 'method'.",
            ))
        }
        other => {
            return Err(QueryError::type_mismatch(format!(
                "BSON field '{}' is the wrong type '{}', expected type 'string'",
                field("method"),
                type_name(Some(other))
            )))
        }
    }
    Ok((input, p))
}

/// `$percentile`'s `p`: a constant (7750300), non-empty array (7750301) of numbers
/// (7750302) in [0, 1] (7750303), as doubles.
fn percentile_p(raw: &Bson, depth: usize) -> Result<Vec<Bson>, QueryError> {
    let not_constant = || {
        QueryError::location(
            7750300,
            format!(
                "The $percentile 'p' field must be an array of constant values, but found \
                 value: {raw}."
            ),
        )
    };
    let value = match raw {
        Bson::Array(items) => {
            let mut values = Vec::with_capacity(items.len());
            for item in items {
                let parsed = parse_nested(item, depth)?;
                values.push(parsed.as_literal().cloned().ok_or_else(not_constant)?);
            }
            Bson::Array(values)
        }
        other => parse_nested(other, depth)?
            .as_literal()
            .cloned()
            .ok_or_else(not_constant)?,
    };
    let bad = |code: i32, shown: String| {
        QueryError::location(
            code,
            format!(
                "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but \
                 found: {shown}"
            ),
        )
    };
    let items = match value {
        Bson::Array(items) if !items.is_empty() => items,
        other => return Err(bad(7750301, other.to_string())),
    };
    items
        .iter()
        .map(|item| {
            let x = crate::query::value::number::Number::from_bson(item)
                .ok_or_else(|| bad(7750302, item.to_string()))?
                .to_f64();
            if !(0.0..=1.0).contains(&x) {
                return Err(bad(7750303, x.to_string()));
            }
            Ok(Bson::Double(x))
        })
        .collect()
}

fn refuse_meta(arg: &Bson) -> QueryError {
    let Bson::String(kind) = arg else {
        return QueryError::location(17307, "$meta only supports string arguments");
    };
    match kind.as_str() {
        "randVal" | "searchScore" | "searchHighlights" | "searchScoreDetails"
        | "geoNearDistance" | "geoNearPoint" | "recordId" | "indexKey" | "sortKey"
        | "vectorSearchScore" => QueryError::not_supported(format!(
            "$meta \"{kind}\" is not supported by docgate (it keeps no such metadata)"
        )),
        other => QueryError::location(17308, format!("Unsupported argument to $meta: {other}")),
    }
}
