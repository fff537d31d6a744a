//! Query filters: the public AST of a MongoDB filter document, its parser (with MongoDB's
//! error codes and messages) and the upsert seed derived from its equalities. Matching a
//! document lives in `filter/eval.rs`.
//!
//! Not for: deciding what SQL can evaluate (the planner pattern-matches this AST) or
//! aggregation expressions (`expr/mod.rs`, reached through `$expr`).

pub mod eval;
pub mod json_schema;
mod json_schema_check;
pub mod positional;
#[cfg(test)]
mod tests;

use crate::query::error::QueryError;
use crate::query::expr::Expression;
use crate::query::text::TextSearch;
use crate::query::value::regex_match::RegexPredicate;
use bson::{Bson, Document};

/// A parsed filter. `{}` is `And(vec![])`, `{a: 5}` is a single `Field`, and several
/// top-level entries are an `And` of their parts in document order.
#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    /// Every child matches (an empty list matches everything).
    And(Vec<Filter>),
    /// At least one child matches.
    Or(Vec<Filter>),
    /// No child matches.
    Nor(Vec<Filter>),
    /// Every predicate holds for the values at `path` (each judged on its own over arrays).
    Field {
        /// Dotted path, e.g. "a.b.0".
        path: String,
        /// Predicates combined with AND.
        predicates: Vec<FieldPredicate>,
    },
    /// `$expr`: an aggregation expression judged truthy.
    Expr(Box<Expression>),
    /// `$jsonSchema`: the document meets a JSON Schema.
    JsonSchema(Box<json_schema::JsonSchema>),
    /// `$alwaysTrue`.
    AlwaysTrue,
    /// `$alwaysFalse`.
    AlwaysFalse,
    /// `$text`: a text search, bound to the collection's text index by the planner.
    Text(Box<TextSearch>),
}

/// One condition on the values at a path.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldPredicate {
    /// Equal (null also matches a missing field; arrays match by element or as a whole).
    Eq(Bson),
    /// Not `Eq`.
    Ne(Bson),
    /// Greater than, within the operand's type bracket.
    Gt(Bson),
    /// Greater or equal, within the operand's type bracket.
    Gte(Bson),
    /// Less than, within the operand's type bracket.
    Lt(Bson),
    /// Less or equal, within the operand's type bracket.
    Lte(Bson),
    /// Equal to any listed value; regular expressions in the list match as `$regex`.
    In(Vec<Bson>),
    /// Not `In`.
    Nin(Vec<Bson>),
    /// The path exists (true) or does not (false).
    Exists(bool),
    /// The value has one of the given types.
    Type(Vec<TypeSelector>),
    /// A string matching a regular expression (or an identical regex value).
    Regex(RegexPredicate),
    /// An array with exactly this many elements.
    Size(usize),
    /// Every listed predicate holds (each an `Eq`, `Regex` or `ElemMatch`); empty never matches.
    All(Vec<FieldPredicate>),
    /// Some array element matches.
    ElemMatch(ElemMatch),
    /// A number whose truncated value modulo `divisor` is `remainder`.
    Mod {
        /// Non-zero divisor.
        divisor: i64,
        /// Expected remainder (sign follows the dividend, like C).
        remainder: i64,
    },
    /// The listed predicates do not all hold.
    Not(Vec<FieldPredicate>),
    /// A bitwise test on an integral number or binary data.
    Bits {
        /// Which test.
        test: BitTest,
        /// Bit positions (0 = least significant).
        positions: Vec<u32>,
    },
}

/// The body of `$elemMatch`.
#[derive(Clone, Debug, PartialEq)]
pub enum ElemMatch {
    /// `{$elemMatch: {b: 1, c: {$gt: 2}}}`: an element that is a document matching the filter.
    Document(Box<Filter>),
    /// `{$elemMatch: {$gt: 1, $lt: 5}}`: an element satisfying every predicate.
    Value(Vec<FieldPredicate>),
}

/// The four `$bits*` operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitTest {
    /// `$bitsAllSet`
    AllSet,
    /// `$bitsAllClear`
    AllClear,
    /// `$bitsAnySet`
    AnySet,
    /// `$bitsAnyClear`
    AnyClear,
}

/// A `$type` operand: a BSON type code (-1 minKey … 127 maxKey) or the alias "number".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeSelector {
    /// One BSON type code, e.g. 2 for string.
    Code(i32),
    /// Any numeric type.
    Number,
}

impl Filter {
    /// Parses a filter document the way MongoDB does.
    pub fn parse(filter: &Document) -> Result<Filter, QueryError> {
        let parsed = parse_document(filter, 0)?;
        if parsed.text_count(false)? > 1 {
            return Err(QueryError::bad_value("Too many text expressions"));
        }
        Ok(parsed)
    }

    /// The number of `$text` searches in the filter; an error where MongoDB allows none
    /// (under `$nor`, `$elemMatch` or `$not`).
    fn text_count(&self, refused: bool) -> Result<usize, QueryError> {
        let count = match self {
            Filter::And(parts) | Filter::Or(parts) => parts
                .iter()
                .map(|p| p.text_count(refused))
                .sum::<Result<usize, _>>()?,
            Filter::Nor(parts) => parts
                .iter()
                .map(|p| p.text_count(true))
                .sum::<Result<usize, _>>()?,
            Filter::Field { predicates, .. } => {
                for predicate in predicates {
                    let nested = match predicate {
                        FieldPredicate::ElemMatch(ElemMatch::Document(inner)) => Some(inner),
                        _ => None,
                    };
                    if let Some(inner) = nested {
                        inner.text_count(true)?;
                    }
                }
                0
            }
            Filter::Text(_) if refused => {
                return Err(QueryError::bad_value(
                    "$text is only allowed at the top level of a query, in $and or in $or",
                ))
            }
            Filter::Text(_) => 1,
            Filter::Expr(_) | Filter::JsonSchema(_) | Filter::AlwaysTrue | Filter::AlwaysFalse => 0,
        };
        Ok(count)
    }

    /// The `$text` search of the filter, when it has one (at most one: see `parse`).
    pub fn text_search(&self) -> Option<&TextSearch> {
        match self {
            Filter::Text(search) => Some(search),
            Filter::And(parts) | Filter::Or(parts) => parts.iter().find_map(Filter::text_search),
            _ => None,
        }
    }

    /// Binds the `$text` search of the filter with `bind`.
    pub fn bind_text(&mut self, bind: &mut impl FnMut(&mut TextSearch)) {
        match self {
            Filter::Text(search) => bind(search),
            Filter::And(parts) | Filter::Or(parts) => {
                for part in parts {
                    part.bind_text(bind);
                }
            }
            _ => {}
        }
    }

    /// Whether `doc` matches (see `filter/eval.rs`); an `$expr` error counts as no match.
    pub fn matches(&self, doc: &Document) -> bool {
        crate::query::filter::eval::matches(self, doc)
    }

    /// Whether the filter evaluates aggregation expressions (`$expr`), whose cost per
    /// document has no bound the filter's size gives.
    pub fn evaluates_expressions(&self) -> bool {
        match self {
            Filter::And(parts) | Filter::Or(parts) | Filter::Nor(parts) => {
                parts.iter().any(Filter::evaluates_expressions)
            }
            Filter::Expr(_) => true,
            Filter::Field { .. }
            | Filter::JsonSchema(_)
            | Filter::AlwaysTrue
            | Filter::AlwaysFalse => false,
            Filter::Text(_) => false,
        }
    }

    /// Whether `doc` matches, reporting `$expr` evaluation errors as MongoDB does.
    pub fn try_matches(&self, doc: &Document) -> Result<bool, QueryError> {
        crate::query::filter::eval::try_matches(self, doc)
    }
}

const MAX_DEPTH: usize = 100;

fn parse_document(filter: &Document, depth: usize) -> Result<Filter, QueryError> {
    if depth > MAX_DEPTH {
        return Err(QueryError::bad_value(
            "exceeded depth limit of 100 when parsing filter",
        ));
    }
    let mut parts = Vec::new();
    for (key, value) in filter {
        if let Some(part) = parse_entry(key, value, depth)? {
            parts.push(part);
        }
    }
    Ok(match parts.len() {
        1 => parts.pop().unwrap_or(Filter::AlwaysTrue),
        _ => Filter::And(parts),
    })
}

/// `{$sampleRate: r}`: matches each document with probability `r`, as MongoDB does by
/// rewriting it to `{$expr: {$lt: [{$rand: {}}, r]}}`.
fn sample_rate(value: &Bson) -> Result<Expression, QueryError> {
    let rate = crate::query::value::number::Number::from_bson(value)
        .ok_or_else(|| QueryError::bad_value("argument to $sampleRate must be a numeric type"))?
        .to_f64();
    if !(0.0..=1.0).contains(&rate) {
        return Err(QueryError::bad_value(
            "numeric argument to $sampleRate must be in [0, 1]",
        ));
    }
    Expression::parse(&Bson::Document(bson::doc! {
        "$lt": [{"$rand": {}}, rate],
    }))
}

fn parse_entry(key: &str, value: &Bson, depth: usize) -> Result<Option<Filter>, QueryError> {
    if !key.starts_with('$') {
        return parse_field(key, value, depth).map(Some);
    }
    let filter = match key {
        "$and" => Filter::And(parse_clauses(key, value, depth)?),
        "$or" => Filter::Or(parse_clauses(key, value, depth)?),
        "$nor" => Filter::Nor(parse_clauses(key, value, depth)?),
        "$expr" => Filter::Expr(Box::new(Expression::parse(value)?)),
        "$comment" => return Ok(None),
        "$alwaysTrue" => Filter::AlwaysTrue,
        "$alwaysFalse" => Filter::AlwaysFalse,
        "$sampleRate" => Filter::Expr(Box::new(sample_rate(value)?)),
        "$text" => Filter::Text(Box::new(TextSearch::parse(value)?)),
        "$jsonSchema" => {
            Filter::JsonSchema(Box::new(json_schema::JsonSchema::parse_operand(value)?))
        }
        "$where" => {
            return Err(QueryError::not_supported(format!(
                "{key} is not supported by docgate"
            )))
        }
        _ => {
            return Err(QueryError::bad_value(format!(
                "unknown top level operator: {key}"
            )))
        }
    };
    Ok(Some(filter))
}

fn parse_clauses(op: &str, value: &Bson, depth: usize) -> Result<Vec<Filter>, QueryError> {
    let items = match value {
        Bson::Array(items) if !items.is_empty() => items,
        _ => {
            return Err(QueryError::bad_value(format!(
                "{op} must be a nonempty array"
            )))
        }
    };
    items
        .iter()
        .map(|item| match item {
            Bson::Document(d) => parse_document(d, depth + 1),
            _ => Err(QueryError::bad_value(
                "$or/$and/$nor entries need to be full objects",
            )),
        })
        .collect()
}

/// True when a document value is an operator object (`{$gt: 1}`) rather than a literal
/// sub-document; DBRef-shaped documents (`$ref`, `$id`, `$db`) are literals.
pub fn is_operator_document(d: &Document) -> bool {
    match d.keys().next() {
        Some(first) => first.starts_with('$') && !matches!(first.as_str(), "$ref" | "$id" | "$db"),
        None => false,
    }
}

fn parse_field(path: &str, value: &Bson, depth: usize) -> Result<Filter, QueryError> {
    let predicates = match value {
        Bson::Document(d) if is_operator_document(d) => parse_operators(d, depth)?,
        Bson::RegularExpression(re) => vec![FieldPredicate::Regex(RegexPredicate::new(
            re.pattern.as_str(),
            re.options.as_str(),
        )?)],
        other => vec![FieldPredicate::Eq(other.clone())],
    };
    Ok(Filter::Field {
        path: path.to_string(),
        predicates,
    })
}

/// Parses an operator object such as `{$gt: 1, $lt: 5}` into predicates on one path.
pub fn parse_operators(ops: &Document, depth: usize) -> Result<Vec<FieldPredicate>, QueryError> {
    if depth > MAX_DEPTH {
        return Err(QueryError::bad_value(
            "exceeded depth limit of 100 when parsing filter",
        ));
    }
    let mut predicates = Vec::new();
    let options = ops.get("$options");
    if options.is_some() && !ops.contains_key("$regex") {
        return Err(QueryError::bad_value("$options needs a $regex"));
    }
    for (op, arg) in ops {
        let predicate = match op.as_str() {
            "$eq" => FieldPredicate::Eq(arg.clone()),
            "$ne" => FieldPredicate::Ne(arg.clone()),
            "$gt" => FieldPredicate::Gt(arg.clone()),
            "$gte" => FieldPredicate::Gte(arg.clone()),
            "$lt" => FieldPredicate::Lt(arg.clone()),
            "$lte" => FieldPredicate::Lte(arg.clone()),
            "$in" => FieldPredicate::In(parse_in_list("$in", arg)?),
            "$nin" => FieldPredicate::Nin(parse_in_list("$nin", arg)?),
            "$exists" => FieldPredicate::Exists(truthy(arg)),
            "$type" => FieldPredicate::Type(parse_types(arg)?),
            "$regex" => FieldPredicate::Regex(parse_regex(arg, options)?),
            "$options" => continue,
            "$size" => FieldPredicate::Size(parse_size(arg)?),
            "$all" => FieldPredicate::All(parse_all(arg, depth)?),
            "$elemMatch" => FieldPredicate::ElemMatch(parse_elem_match(arg, depth)?),
            "$mod" => parse_mod(arg)?,
            "$not" => FieldPredicate::Not(parse_not(arg, depth)?),
            "$bitsAllSet" => parse_bits(BitTest::AllSet, op, arg)?,
            "$bitsAllClear" => parse_bits(BitTest::AllClear, op, arg)?,
            "$bitsAnySet" => parse_bits(BitTest::AnySet, op, arg)?,
            "$bitsAnyClear" => parse_bits(BitTest::AnyClear, op, arg)?,
            "$near" | "$nearSphere" | "$geoWithin" | "$geoIntersects" | "$within"
            | "$maxDistance" | "$minDistance" => {
                return Err(QueryError::not_supported(format!(
                    "geospatial operator {op} is not supported by docgate"
                )))
            }
            _ => return Err(QueryError::bad_value(format!("unknown operator: {op}"))),
        };
        predicates.push(predicate);
    }
    Ok(predicates)
}

/// Truthiness as MongoDB's `$exists` and projection flags see it: false, 0, null and
/// undefined are false.
pub fn truthy(v: &Bson) -> bool {
    match v {
        Bson::Boolean(b) => *b,
        Bson::Int32(i) => *i != 0,
        Bson::Int64(i) => *i != 0,
        Bson::Double(d) => *d != 0.0,
        Bson::Decimal128(_) => crate::query::value::number::Number::from_bson(v)
            .map(|n| n.to_f64() != 0.0)
            .unwrap_or(true),
        Bson::Null | Bson::Undefined => false,
        _ => true,
    }
}

fn parse_in_list(op: &str, arg: &Bson) -> Result<Vec<Bson>, QueryError> {
    let Bson::Array(items) = arg else {
        return Err(QueryError::bad_value(format!("{op} needs an array")));
    };
    for item in items {
        match item {
            Bson::Document(d) if is_operator_document(d) => {
                return Err(QueryError::bad_value(format!("cannot nest $ under {op}")))
            }
            Bson::RegularExpression(re) => {
                RegexPredicate::new(re.pattern.as_str(), re.options.as_str())?;
            }
            _ => {}
        }
    }
    Ok(items.clone())
}

fn parse_regex(arg: &Bson, options: Option<&Bson>) -> Result<RegexPredicate, QueryError> {
    let option_text = match options {
        None => None,
        Some(Bson::String(s)) => Some(s.as_str()),
        Some(_) => return Err(QueryError::bad_value("$options has to be a string")),
    };
    match arg {
        Bson::String(pattern) => RegexPredicate::new(pattern, option_text.unwrap_or("")),
        Bson::RegularExpression(re) => {
            if option_text.is_some() && !re.options.as_str().is_empty() {
                return Err(QueryError::bad_value(
                    "options set in both $regex and $options",
                ));
            }
            RegexPredicate::new(
                re.pattern.as_str(),
                option_text.unwrap_or(re.options.as_str()),
            )
        }
        _ => Err(QueryError::bad_value("$regex has to be a string")),
    }
}

fn parse_size(arg: &Bson) -> Result<usize, QueryError> {
    let n = crate::query::value::number::Number::from_bson(arg)
        .ok_or_else(|| QueryError::bad_value("$size needs a number"))?;
    let whole = n.to_exact_i64().ok_or_else(|| {
        QueryError::bad_value(format!(
            "Failed to parse $size. Expected an integer, but found {arg}"
        ))
    })?;
    usize::try_from(whole).map_err(|_| {
        QueryError::bad_value(format!(
            "Failed to parse $size. Expected a non-negative number in: $size: {arg}"
        ))
    })
}

fn parse_all(arg: &Bson, depth: usize) -> Result<Vec<FieldPredicate>, QueryError> {
    let Bson::Array(items) = arg else {
        return Err(QueryError::bad_value("$all needs an array"));
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(match item {
            Bson::Document(d) if d.keys().next().map(String::as_str) == Some("$elemMatch") => {
                let inner = d.get("$elemMatch").unwrap_or(&Bson::Null);
                FieldPredicate::ElemMatch(parse_elem_match(inner, depth)?)
            }
            Bson::Document(d) if is_operator_document(d) => {
                return Err(QueryError::bad_value("no $ expressions in $all"))
            }
            Bson::RegularExpression(re) => FieldPredicate::Regex(RegexPredicate::new(
                re.pattern.as_str(),
                re.options.as_str(),
            )?),
            other => FieldPredicate::Eq(other.clone()),
        });
    }
    Ok(out)
}

/// Parses the argument of `$elemMatch` (query form or value form).
pub fn parse_elem_match(arg: &Bson, depth: usize) -> Result<ElemMatch, QueryError> {
    let Bson::Document(d) = arg else {
        return Err(QueryError::bad_value("$elemMatch needs an Object"));
    };
    let value_form = match d.keys().next() {
        Some(first) => {
            first.starts_with('$')
                && !matches!(
                    first.as_str(),
                    "$and" | "$or" | "$nor" | "$expr" | "$where" | "$text" | "$comment"
                )
        }
        None => false,
    };
    if value_form {
        Ok(ElemMatch::Value(parse_operators(d, depth + 1)?))
    } else {
        Ok(ElemMatch::Document(Box::new(parse_document(d, depth + 1)?)))
    }
}

fn parse_mod(arg: &Bson) -> Result<FieldPredicate, QueryError> {
    let Bson::Array(items) = arg else {
        return Err(QueryError::bad_value("malformed mod, needs to be an array"));
    };
    if items.len() < 2 {
        return Err(QueryError::bad_value("malformed mod, not enough elements"));
    }
    if items.len() > 2 {
        return Err(QueryError::bad_value("malformed mod, too many elements"));
    }
    let as_int = |v: &Bson, what: &str| -> Result<i64, QueryError> {
        let n = crate::query::value::number::Number::from_bson(v)
            .ok_or_else(|| QueryError::bad_value(format!("malformed mod, {what} not a number")))?;
        let f = n.to_f64();
        if !f.is_finite() {
            return Err(QueryError::bad_value(format!(
                "malformed mod, {what} value is invalid :: caused by :: {v}"
            )));
        }
        Ok(n.to_exact_i64().unwrap_or(f.trunc() as i64))
    };
    let divisor = as_int(&items[0], "divisor")?;
    let remainder = as_int(&items[1], "remainder")?;
    if divisor == 0 {
        return Err(QueryError::bad_value("divisor cannot be 0"));
    }
    Ok(FieldPredicate::Mod { divisor, remainder })
}

fn parse_not(arg: &Bson, depth: usize) -> Result<Vec<FieldPredicate>, QueryError> {
    match arg {
        Bson::RegularExpression(re) => Ok(vec![FieldPredicate::Regex(RegexPredicate::new(
            re.pattern.as_str(),
            re.options.as_str(),
        )?)]),
        Bson::Document(d) if d.is_empty() => Err(QueryError::bad_value("$not cannot be empty")),
        Bson::Document(d) if is_operator_document(d) => parse_operators(d, depth + 1),
        Bson::Document(_) => Err(QueryError::bad_value(
            "$not needs a regex or a document whose first key is an operator",
        )),
        _ => Err(QueryError::bad_value("$not needs a regex or a document")),
    }
}

fn parse_bits(test: BitTest, op: &str, arg: &Bson) -> Result<FieldPredicate, QueryError> {
    let positions = match arg {
        Bson::Array(items) => {
            let mut positions = Vec::with_capacity(items.len());
            for item in items {
                let n = crate::query::value::number::Number::from_bson(item)
                    .and_then(|n| n.to_exact_i64())
                    .and_then(|i| u32::try_from(i).ok())
                    .ok_or_else(|| {
                        QueryError::bad_value(format!(
                            "bit positions must be non-negative integers: {item}"
                        ))
                    })?;
                positions.push(n);
            }
            positions
        }
        Bson::Binary(b) => (0..b.bytes.len() * 8)
            .filter(|i| b.bytes[i / 8] & (1 << (i % 8)) != 0)
            .map(|i| i as u32)
            .collect(),
        other => {
            let mask = crate::query::value::number::Number::from_bson(other)
                .and_then(|n| n.to_exact_i64())
                .filter(|m| *m >= 0)
                .ok_or_else(|| {
                    QueryError::bad_value(format!(
                        "{op} takes an Array, a number, or a BinData but received: {other}"
                    ))
                })?;
            (0..63).filter(|i| mask & (1i64 << i) != 0).collect()
        }
    };
    Ok(FieldPredicate::Bits { test, positions })
}

/// Type names accepted by `$type` and their codes.
pub fn type_code_by_alias(alias: &str) -> Option<TypeSelector> {
    let code = match alias {
        "double" => 1,
        "string" => 2,
        "object" => 3,
        "array" => 4,
        "binData" => 5,
        "undefined" => 6,
        "objectId" => 7,
        "bool" => 8,
        "date" => 9,
        "null" => 10,
        "regex" => 11,
        "dbPointer" => 12,
        "javascript" => 13,
        "symbol" => 14,
        "javascriptWithScope" => 15,
        "int" => 16,
        "timestamp" => 17,
        "long" => 18,
        "decimal" => 19,
        "minKey" => -1,
        "maxKey" => 127,
        "number" => return Some(TypeSelector::Number),
        _ => return None,
    };
    Some(TypeSelector::Code(code))
}

fn parse_types(arg: &Bson) -> Result<Vec<TypeSelector>, QueryError> {
    let one = |v: &Bson| -> Result<TypeSelector, QueryError> {
        match v {
            Bson::String(s) => type_code_by_alias(s)
                .ok_or_else(|| QueryError::bad_value(format!("Unknown type name alias: {s}"))),
            other => {
                let code = crate::query::value::number::Number::from_bson(other)
                    .and_then(|n| n.to_exact_i64())
                    .ok_or_else(|| {
                        QueryError::bad_value(format!(
                            "type must be represented as a number or a string: {other}"
                        ))
                    })?;
                match code {
                    -1 | 1..=19 | 127 => Ok(TypeSelector::Code(code as i32)),
                    _ => Err(QueryError::bad_value(format!(
                        "Invalid numerical type code: {code}"
                    ))),
                }
            }
        }
    };
    match arg {
        Bson::Array(items) => items.iter().map(one).collect(),
        other => Ok(vec![one(other)?]),
    }
}

#[cfg(test)]
/// The `field: value` equalities of a filter (top level, inside `$and`, and inside a `$or`
/// with a single clause) as the document an upsert starts from; dotted paths become nested
/// documents; `_id` included. Lenient: conflicting paths are skipped (see [`upsert_seed`]).
pub fn equality_fields(filter: &Filter) -> Document {
    let mut pairs = Vec::new();
    collect_equalities(filter, &mut pairs);
    let mut seed = Document::new();
    for (path, value) in pairs {
        insert_dotted(&mut seed, &path, value);
    }
    seed
}

/// Like [`equality_fields`], but a path matched twice or by both a field and its sub-field is
/// MongoDB's NotSingleValueField error (54), as an upsert reports it.
pub fn upsert_seed(filter: &Filter) -> Result<Document, QueryError> {
    let mut pairs = Vec::new();
    collect_equalities(filter, &mut pairs);
    for (i, (a, _)) in pairs.iter().enumerate() {
        for (b, _) in pairs.iter().skip(i + 1) {
            let conflict = if a == b {
                Some(format!(
                    "cannot infer query fields to set, path '{a}' is matched twice"
                ))
            } else if b.starts_with(&format!("{a}.")) || a.starts_with(&format!("{b}.")) {
                Some(format!(
                    "cannot infer query fields to set, both paths '{b}' and '{a}' are matched"
                ))
            } else {
                None
            };
            if let Some(message) = conflict {
                return Err(QueryError {
                    code: 54,
                    code_name: "NotSingleValueField",
                    message,
                });
            }
        }
    }
    let mut seed = Document::new();
    for (path, value) in pairs {
        insert_dotted(&mut seed, &path, value);
    }
    Ok(seed)
}

fn collect_equalities(filter: &Filter, pairs: &mut Vec<(String, Bson)>) {
    match filter {
        Filter::And(children) => {
            for child in children {
                collect_equalities(child, pairs);
            }
        }
        Filter::Or(children) if children.len() == 1 => {
            for child in children {
                collect_equalities(child, pairs);
            }
        }
        Filter::Field { path, predicates } => {
            for predicate in predicates {
                let value = match predicate {
                    FieldPredicate::Eq(v) => v,
                    FieldPredicate::In(values) if values.len() == 1 => &values[0],
                    _ => continue,
                };
                if matches!(value, Bson::RegularExpression(_)) {
                    continue;
                }
                pairs.push((path.clone(), value.clone()));
            }
        }
        _ => {}
    }
}

fn insert_dotted(doc: &mut Document, path: &str, value: Bson) {
    match path.split_once('.') {
        None => {
            if !doc.contains_key(path) {
                doc.insert(path, value);
            }
        }
        Some((head, rest)) => {
            if !doc.contains_key(head) {
                doc.insert(head, Document::new());
            }
            if let Some(Bson::Document(inner)) = doc.get_mut(head) {
                insert_dotted(inner, rest, value);
            }
        }
    }
}
