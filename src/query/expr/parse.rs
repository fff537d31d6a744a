//! Parsing `{$operator: arguments}` into expression nodes: the operator table with each
//! operator's arity, and the named-argument forms ($cond, $let, $map, $filter, $reduce,
//! $switch, $literal).
//!
//! Not for: evaluation (`expr/mod.rs`, `expr/ops/`).

use crate::query::error::QueryError;
use crate::query::expr::ops::Operator;
use crate::query::expr::variables::{check_user_variable_name, shadowing};
use crate::query::expr::{parse_nested, Expression, Node};
use bson::{Bson, Document};

/// Arity bounds: (minimum, maximum) argument count; `None` maximum is unbounded.
fn lookup(name: &str) -> Option<(Operator, usize, Option<usize>)> {
    use Operator::*;
    let entry = match name {
        "$add" => (Add, 0, None),
        "$subtract" => (Subtract, 2, Some(2)),
        "$multiply" => (Multiply, 0, None),
        "$divide" => (Divide, 2, Some(2)),
        "$mod" => (Mod, 2, Some(2)),
        "$abs" => (Abs, 1, Some(1)),
        "$ceil" => (Ceil, 1, Some(1)),
        "$floor" => (Floor, 1, Some(1)),
        "$trunc" => (Trunc, 1, Some(1)),
        "$eq" => (Eq, 2, Some(2)),
        "$ne" => (Ne, 2, Some(2)),
        "$gt" => (Gt, 2, Some(2)),
        "$gte" => (Gte, 2, Some(2)),
        "$lt" => (Lt, 2, Some(2)),
        "$lte" => (Lte, 2, Some(2)),
        "$cmp" => (Cmp, 2, Some(2)),
        "$and" => (And, 0, None),
        "$or" => (Or, 0, None),
        "$not" => (Not, 1, Some(1)),
        "$ifNull" => (IfNull, 2, None),
        "$concat" => (Concat, 0, None),
        "$toUpper" => (ToUpper, 1, Some(1)),
        "$toLower" => (ToLower, 1, Some(1)),
        "$strLenBytes" => (StrLenBytes, 1, Some(1)),
        "$strLenCP" => (StrLenCodePoints, 1, Some(1)),
        "$substrCP" => (SubstrCodePoints, 3, Some(3)),
        "$split" => (Split, 2, Some(2)),
        "$size" => (Size, 1, Some(1)),
        "$arrayElemAt" => (ArrayElemAt, 2, Some(2)),
        "$first" => (First, 1, Some(1)),
        "$last" => (Last, 1, Some(1)),
        "$in" => (In, 2, Some(2)),
        "$isArray" => (IsArray, 1, Some(1)),
        "$concatArrays" => (ConcatArrays, 0, None),
        "$type" => (Type, 1, Some(1)),
        "$isNumber" => (IsNumber, 1, Some(1)),
        "$max" => (Max, 1, None),
        "$min" => (Min, 1, None),
        "$sum" => (Sum, 1, None),
        "$avg" => (Avg, 1, None),
        "$toString" => (ToString, 1, Some(1)),
        "$toInt" => (ToInt, 1, Some(1)),
        "$toLong" => (ToLong, 1, Some(1)),
        "$toDouble" => (ToDouble, 1, Some(1)),
        "$toDecimal" => (ToDecimal, 1, Some(1)),
        "$toBool" => (ToBool, 1, Some(1)),
        _ => {
            if let Some((op, names)) = crate::query::expr::ops::date::named_operator(name) {
                return Some((Date(op), names.len(), Some(names.len())));
            }
            if let Some((op, min, max)) = crate::query::expr::ops::date::lookup(name) {
                return Some((Date(op), min, max.map(|m| m.max(2))));
            }
            if name == "$dateToString" {
                return Some((
                    Date(crate::query::expr::ops::date::DateOperator::DateToString),
                    2,
                    Some(4),
                ));
            }
            let (op, min, max) = crate::query::expr::ops::more::lookup(name)?;
            return Some((More(op), min, max));
        }
    };
    Some(entry)
}

/// Parses `{name: arg}` where `name` starts with `$`.
pub fn parse_operator(name: &str, arg: &Bson, depth: usize) -> Result<Expression, QueryError> {
    let node = match name {
        "$literal" => Node::Literal(arg.clone()),
        "$cond" => parse_cond(arg, depth)?,
        "$let" => parse_let(arg, depth)?,
        "$map" => parse_map(arg, depth)?,
        "$filter" => parse_filter(arg, depth)?,
        "$reduce" => parse_reduce(arg, depth)?,
        "$switch" => parse_switch(arg, depth)?,
        "$convert" => parse_convert(arg, depth)?,
        _ if crate::query::expr::parse_more::handles(name) => {
            crate::query::expr::parse_more::parse(name, arg, depth)?
        }
        _ => {
            let Some((op, min, max)) = lookup(name) else {
                return Err(QueryError::invalid_pipeline_operator(format!(
                    "Unrecognized expression '{name}'"
                )));
            };
            let args: Vec<Expression> = match named_layout(name, arg) {
                Some(names) => parse_named(name, arg, names, depth)?,
                None => match arg {
                    Bson::Array(items) => items
                        .iter()
                        .map(|i| parse_nested(i, depth))
                        .collect::<Result<_, _>>()?,
                    other if name == "$getField" => vec![
                        parse_nested(other, depth)?,
                        parse_nested(&Bson::String("$$CURRENT".into()), depth)?,
                    ],
                    other => vec![parse_nested(other, depth)?],
                },
            };
            if args.len() < min || max.is_some_and(|m| args.len() > m) {
                let expected = match (min, max) {
                    (a, Some(b)) if a == b => format!("exactly {a}"),
                    (a, Some(b)) => format!("between {a} and {b}"),
                    (a, None) => format!("at least {a}"),
                };
                return Err(QueryError::location(
                    16020,
                    format!(
                        "Expression {name} takes {expected} arguments. {} were passed in.",
                        args.len()
                    ),
                ));
            }
            Node::Call { op, args }
        }
    };
    Ok(Expression { node })
}

/// The argument names of operators written with named arguments, when `arg` uses that form.
fn named_layout(name: &str, arg: &Bson) -> Option<&'static [&'static str]> {
    let Bson::Document(d) = arg else {
        return None;
    };
    if name == "$dateToString" {
        return Some(&crate::query::expr::ops::date::DATE_TO_STRING_ARGS);
    }
    if let Some((_, names)) = crate::query::expr::ops::date::named_operator(name) {
        return Some(names);
    }
    if crate::query::expr::ops::date::lookup(name).is_some() && d.contains_key("date") {
        return Some(&["date", "timezone"]);
    }
    let names = crate::query::expr::ops::more::named_arguments(name)?;
    // `{$getField: {$concat: …}}` is an expression argument, not the named form.
    match d.keys().next() {
        Some(first) if first.starts_with('$') => None,
        _ => Some(names),
    }
}

fn parse_named(
    name: &str,
    arg: &Bson,
    names: &[&str],
    depth: usize,
) -> Result<Vec<Expression>, QueryError> {
    let d = named_args(arg, name)?;
    for key in d.keys() {
        if !names.contains(&key.as_str()) {
            return Err(QueryError::location(
                40517,
                format!("{name} found an unknown argument: {key}"),
            ));
        }
    }
    let required = names.first().copied().unwrap_or("");
    let required = if name == "$dateToString" {
        "date"
    } else {
        required
    };
    if !d.contains_key(required) {
        return Err(QueryError::location(
            40539,
            format!("{name} requires '{required}' to be specified"),
        ));
    }
    names
        .iter()
        .map(|n| match d.get(*n) {
            Some(v) => parse_nested(v, depth),
            None if name == "$getField" && *n == "input" => {
                parse_nested(&Bson::String("$$CURRENT".into()), depth)
            }
            None => parse_nested(&Bson::String("$$REMOVE".into()), depth),
        })
        .collect()
}

fn named_args<'a>(arg: &'a Bson, op: &str) -> Result<&'a Document, QueryError> {
    match arg {
        Bson::Document(d) => Ok(d),
        _ => Err(QueryError::location(
            40092,
            format!("{op} only supports an object as its argument"),
        )),
    }
}

fn required<'a>(d: &'a Document, field: &str, op: &str, code: i32) -> Result<&'a Bson, QueryError> {
    d.get(field)
        .ok_or_else(|| QueryError::location(code, format!("Missing '{field}' parameter to {op}")))
}

fn parse_cond(arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    let (condition, then, otherwise) = match arg {
        Bson::Array(items) if items.len() == 3 => (&items[0], &items[1], &items[2]),
        Bson::Array(items) => {
            return Err(QueryError::location(
                16020,
                format!(
                    "Expression $cond takes exactly 3 arguments. {} were passed in.",
                    items.len()
                ),
            ))
        }
        Bson::Document(d) => {
            for key in d.keys() {
                if !matches!(key.as_str(), "if" | "then" | "else") {
                    return Err(QueryError::location(
                        17083,
                        format!("Unrecognized parameter to $cond: {key}"),
                    ));
                }
            }
            (
                required(d, "if", "$cond", 17080)?,
                required(d, "then", "$cond", 17081)?,
                required(d, "else", "$cond", 17082)?,
            )
        }
        _ => {
            return Err(QueryError::location(
                16020,
                "Expression $cond takes exactly 3 arguments. 1 were passed in.",
            ))
        }
    };
    Ok(Node::Cond(Box::new([
        parse_nested(condition, depth)?,
        parse_nested(then, depth)?,
        parse_nested(otherwise, depth)?,
    ])))
}

fn variable_name(v: Option<&Bson>, default: &str) -> Result<String, QueryError> {
    match v {
        None => Ok(default.to_string()),
        Some(Bson::String(s)) => {
            check_user_variable_name(s)?;
            Ok(s.clone())
        }
        Some(other) => Err(QueryError::location(
            16866,
            format!("invalid variable name: {other}"),
        )),
    }
}

fn parse_let(arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    let d = named_args(arg, "$let")?;
    let Bson::Document(vars) = required(d, "vars", "$let", 16876)? else {
        return Err(QueryError::location(
            10065,
            "invalid parameter: expected an object (vars)",
        ));
    };
    let mut parsed = Vec::with_capacity(vars.len());
    for (name, value) in vars {
        let name = variable_name(Some(&Bson::String(name.clone())), "")?;
        parsed.push((name, parse_nested(value, depth)?));
    }
    let names: Vec<&str> = parsed.iter().map(|(name, _)| name.as_str()).collect();
    let body = shadowing(&names, || {
        parse_nested(required(d, "in", "$let", 16877)?, depth)
    })?;
    Ok(Node::Let {
        vars: parsed,
        body: Box::new(body),
    })
}

fn parse_map(arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    let d = named_args(arg, "$map")?;
    let name = variable_name(d.get("as"), "this")?;
    let body = shadowing(&[&name], || {
        parse_nested(required(d, "in", "$map", 16882)?, depth)
    })?;
    Ok(Node::Map {
        input: Box::new(parse_nested(required(d, "input", "$map", 16880)?, depth)?),
        name,
        body: Box::new(body),
    })
}

fn parse_filter(arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    let d = named_args(arg, "$filter")?;
    let name = variable_name(d.get("as"), "this")?;
    Ok(Node::FilterArray {
        input: Box::new(parse_nested(
            required(d, "input", "$filter", 28648)?,
            depth,
        )?),
        cond: Box::new(shadowing(&[&name], || {
            parse_nested(required(d, "cond", "$filter", 28650)?, depth)
        })?),
        name,
        limit: match d.get("limit") {
            Some(l) => Some(Box::new(parse_nested(l, depth)?)),
            None => None,
        },
    })
}

fn parse_reduce(arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    let d = named_args(arg, "$reduce")?;
    Ok(Node::Reduce {
        input: Box::new(parse_nested(
            required(d, "input", "$reduce", 40079)?,
            depth,
        )?),
        initial: Box::new(parse_nested(
            required(d, "initialValue", "$reduce", 40080)?,
            depth,
        )?),
        body: Box::new(shadowing(&["this", "value"], || {
            parse_nested(required(d, "in", "$reduce", 40081)?, depth)
        })?),
    })
}

fn parse_convert(arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    let d = named_args(arg, "$convert")?;
    for key in d.keys() {
        if !matches!(key.as_str(), "input" | "to" | "onError" | "onNull") {
            return Err(QueryError::failed_to_parse(format!(
                "$convert found an unknown argument: {key}"
            )));
        }
    }
    let input = d
        .get("input")
        .ok_or_else(|| QueryError::failed_to_parse("Missing 'input' parameter to $convert"))?;
    let to = d
        .get("to")
        .ok_or_else(|| QueryError::failed_to_parse("Missing 'to' parameter to $convert"))?;
    let optional = |name: &str| -> Result<Option<Box<Expression>>, QueryError> {
        match d.get(name) {
            Some(v) => Ok(Some(Box::new(parse_nested(v, depth)?))),
            None => Ok(None),
        }
    };
    Ok(Node::Convert {
        input: Box::new(parse_nested(input, depth)?),
        to: Box::new(parse_nested(to, depth)?),
        on_error: optional("onError")?,
        on_null: optional("onNull")?,
    })
}

fn parse_switch(arg: &Bson, depth: usize) -> Result<Node, QueryError> {
    let d = named_args(arg, "$switch")?;
    let Some(Bson::Array(raw)) = d.get("branches") else {
        return Err(QueryError::location(
            40061,
            "$switch expected an array for 'branches'",
        ));
    };
    let mut branches = Vec::with_capacity(raw.len());
    for branch in raw {
        let Bson::Document(b) = branch else {
            return Err(QueryError::location(
                40061,
                "$switch expected each branch to be an object",
            ));
        };
        branches.push((
            parse_nested(required(b, "case", "$switch", 40064)?, depth)?,
            parse_nested(required(b, "then", "$switch", 40065)?, depth)?,
        ));
    }
    if branches.is_empty() {
        return Err(QueryError::location(
            40068,
            "$switch requires at least one branch",
        ));
    }
    Ok(Node::Switch {
        branches,
        default: match d.get("default") {
            Some(v) => Some(Box::new(parse_nested(v, depth)?)),
            None => None,
        },
    })
}
