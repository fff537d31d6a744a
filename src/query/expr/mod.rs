//! Aggregation expressions: parsing `"$a.b"`, `"$$ROOT"`, literals, `{$op: args}` and
//! expression objects into an [`Expression`] tree, and evaluating it against a document with
//! MongoDB's distinction between a missing value and null. The same evaluator serves `$expr`,
//! computed projections, `$group` keys and accumulators, and pipeline stages.
//!
//! Not for: the operators' arithmetic and string rules themselves (`expr/ops/`) or query
//! predicates (`filter/mod.rs`).

pub mod accumulator;
pub mod ops;
mod parse;
mod parse_more;
mod variables;

pub use crate::query::value::truthy::truthy;

pub(crate) use parse_more::percentile_arguments;
pub use variables::{bind_variables, parse_with_variables, visible_constants};

use crate::query::error::QueryError;
use bson::{Bson, Document};
use ops::Operator;

/// A parsed aggregation expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Expression {
    pub(crate) node: Node,
}

/// The shapes an expression can take.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    /// A constant.
    Literal(Bson),
    /// `"$a.b"`: a path from `$$CURRENT`.
    FieldPath(Vec<String>),
    /// `"$$name.a.b"`: a variable, optionally followed by a path.
    Variable { name: String, path: Vec<String> },
    /// `{a: <expr>, b: <expr>}`: a new document.
    Object(Vec<(String, Expression)>),
    /// `[<expr>, …]`: a new array.
    Array(Vec<Expression>),
    /// `{$op: [args]}`.
    Call { op: Operator, args: Vec<Expression> },
    /// `{$cond: …}` and its named-argument form.
    Cond(Box<[Expression; 3]>),
    /// `{$let: {vars: {…}, in: …}}`.
    Let {
        vars: Vec<(String, Expression)>,
        body: Box<Expression>,
    },
    /// `{$map: {input, as, in}}`.
    Map {
        input: Box<Expression>,
        name: String,
        body: Box<Expression>,
    },
    /// `{$filter: {input, as, cond, limit}}`.
    FilterArray {
        input: Box<Expression>,
        name: String,
        cond: Box<Expression>,
        limit: Option<Box<Expression>>,
    },
    /// `{$reduce: {input, initialValue, in}}`.
    Reduce {
        input: Box<Expression>,
        initial: Box<Expression>,
        body: Box<Expression>,
    },
    /// `{$switch: {branches: [{case, then}], default}}`.
    Switch {
        branches: Vec<(Expression, Expression)>,
        default: Option<Box<Expression>>,
    },
    /// `{$convert: {input, to, onError, onNull}}`.
    Convert {
        input: Box<Expression>,
        to: Box<Expression>,
        on_error: Option<Box<Expression>>,
        on_null: Option<Box<Expression>>,
    },
}

/// Whether the variable `name` is the whole current document.
fn is_whole_document(name: &str) -> bool {
    name == "ROOT" || name == "CURRENT"
}

/// `$redact`'s system variables.
pub const REDACT_VARIABLES: [&str; 3] = ["DESCEND", "PRUNE", "KEEP"];

/// The value `$$DESCEND`, `$$PRUNE` or `$$KEEP` evaluates to inside `$redact`: a document
/// whose key holds a NUL, which no stored BSON document can have, so data never mistakes
/// itself for one.
pub fn redact_marker(name: &str) -> Bson {
    let mut d = Document::new();
    d.insert("\0redact", name);
    Bson::Document(d)
}

/// Variables in scope during evaluation: `$$ROOT`, `$$CURRENT` and user variables.
pub struct Scope<'a> {
    root: &'a Document,
    /// `$$CURRENT`, which field paths read: the root except inside `$redact`'s descent.
    current: &'a Document,
    variables: Vec<(String, Option<Bson>)>,
}

impl<'a> Scope<'a> {
    /// A scope whose `$$ROOT` and `$$CURRENT` are `root`.
    pub fn new(root: &'a Document) -> Self {
        Scope {
            root,
            current: root,
            variables: Vec::new(),
        }
    }

    /// The scope of `$redact`'s expression at one level: `$$ROOT` the whole document,
    /// `$$CURRENT` (and field paths) the sub-document, and `$$DESCEND`, `$$PRUNE`, `$$KEEP`
    /// bound (they are undefined anywhere else, as in MongoDB).
    pub fn for_redact(root: &'a Document, current: &'a Document) -> Self {
        let mut scope = Scope {
            root,
            current,
            variables: Vec::new(),
        };
        for name in REDACT_VARIABLES {
            scope.bind(name, Some(redact_marker(name)));
        }
        scope
    }

    fn lookup(&self, name: &str) -> Option<Option<Bson>> {
        self.variables
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    fn bind(&mut self, name: &str, value: Option<Bson>) {
        self.variables.push((name.to_string(), value));
    }

    fn unbind(&mut self, count: usize) {
        let keep = self.variables.len().saturating_sub(count);
        self.variables.truncate(keep);
    }
}

impl Expression {
    /// A constant expression.
    pub fn literal(value: Bson) -> Expression {
        Expression {
            node: Node::Literal(value),
        }
    }

    /// Parses an aggregation expression.
    pub fn parse(v: &Bson) -> Result<Expression, QueryError> {
        parse_value(v, 0)
    }

    /// Whether evaluating this reads the current document (a field path, `$$ROOT` or
    /// `$$CURRENT`), as a command's `let` expression may not.
    pub fn reads_document(&self) -> bool {
        self.any_node(&mut |node| match node {
            Node::FieldPath(_) => true,
            Node::Variable { name, .. } => is_whole_document(name),
            _ => false,
        })
    }

    /// Adds to `fields` the top-level fields of the current document this expression
    /// reads (the first name of each field path): evaluating it on a document holding only
    /// those fields gives what it gives on the whole one. False (with `fields` partly
    /// filled) when it reads the whole document (`$$ROOT`, `$$CURRENT`, `$getField` without
    /// an `input`).
    pub fn top_level_fields_read(&self, fields: &mut std::collections::BTreeSet<String>) -> bool {
        !self.any_node(&mut |node| match node {
            Node::FieldPath(path) => {
                if let Some(first) = path.first() {
                    fields.insert(first.clone());
                }
                false
            }
            Node::Variable { name, .. } => is_whole_document(name),
            _ => false,
        })
    }

    /// Whether `visit` answers true for this expression's node or any node inside it.
    fn any_node(&self, visit: &mut dyn FnMut(&Node) -> bool) -> bool {
        fn any(
            expressions: &mut dyn Iterator<Item = &Expression>,
            visit: &mut dyn FnMut(&Node) -> bool,
        ) -> bool {
            for expression in expressions {
                if expression.any_node(visit) {
                    return true;
                }
            }
            false
        }
        if visit(&self.node) {
            return true;
        }
        match &self.node {
            Node::Literal(_) | Node::FieldPath(_) | Node::Variable { .. } => false,
            Node::Object(fields) => any(&mut fields.iter().map(|(_, e)| e), visit),
            Node::Array(items) | Node::Call { args: items, .. } => any(&mut items.iter(), visit),
            Node::Cond(parts) => any(&mut parts.iter(), visit),
            Node::Let { vars, body } => {
                body.any_node(visit) || any(&mut vars.iter().map(|(_, e)| e), visit)
            }
            Node::Map { input, body, .. } => input.any_node(visit) || body.any_node(visit),
            Node::FilterArray {
                input, cond, limit, ..
            } => {
                input.any_node(visit)
                    || cond.any_node(visit)
                    || any(&mut limit.iter().map(|l| &**l), visit)
            }
            Node::Reduce {
                input,
                initial,
                body,
            } => any(&mut [input, initial, body].into_iter().map(|e| &**e), visit),
            Node::Switch { branches, default } => {
                any(
                    &mut branches.iter().flat_map(|(case, then)| [case, then]),
                    visit,
                ) || any(&mut default.iter().map(|d| &**d), visit)
            }
            Node::Convert {
                input,
                to,
                on_error,
                on_null,
            } => {
                input.any_node(visit)
                    || to.any_node(visit)
                    || any(
                        &mut on_error.iter().chain(on_null.iter()).map(|e| &**e),
                        visit,
                    )
            }
        }
    }

    /// Evaluates; a missing result becomes null.
    pub fn evaluate(&self, doc: &Document) -> Result<Bson, QueryError> {
        Ok(self.evaluate_optional(doc)?.unwrap_or(Bson::Null))
    }

    /// Evaluates; `None` means missing (e.g. a field path to an absent field).
    pub fn evaluate_optional(&self, doc: &Document) -> Result<Option<Bson>, QueryError> {
        let mut scope = Scope::new(doc);
        self.eval(&mut scope)
    }

    /// Evaluates within an existing scope. Every node evaluated is an interruption point
    /// (see `crate::interrupt`), so `$map`, `$reduce` and their kind stop at a time limit.
    pub fn eval(&self, scope: &mut Scope<'_>) -> Result<Option<Bson>, QueryError> {
        crate::interrupt::check()?;
        match &self.node {
            Node::Literal(v) => Ok(Some(v.clone())),
            Node::FieldPath(path) => Ok(path_value_in_document(scope.current, path)),
            Node::Variable { name, path } => eval_variable(scope, name, path),
            Node::Object(fields) => {
                let mut out = Document::new();
                for (name, expr) in fields {
                    if let Some(v) = expr.eval(scope)? {
                        out.insert(name.clone(), v);
                    }
                }
                Ok(Some(Bson::Document(out)))
            }
            Node::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(item.eval(scope)?.unwrap_or(Bson::Null));
                }
                Ok(Some(Bson::Array(out)))
            }
            Node::Call { op, args } => eval_call(scope, *op, args),
            Node::Cond(parts) => {
                let [condition, then, otherwise] = parts.as_ref();
                if condition.eval(scope)?.as_ref().map(truthy).unwrap_or(false) {
                    then.eval(scope)
                } else {
                    otherwise.eval(scope)
                }
            }
            Node::Let { vars, body } => eval_let(scope, vars, body),
            Node::Map { input, name, body } => {
                let Some(items) = array_input(input.eval(scope)?, "$map")? else {
                    return Ok(Some(Bson::Null));
                };
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    scope.bind(name, Some(item));
                    let value = body.eval(scope);
                    scope.unbind(1);
                    out.push(value?.unwrap_or(Bson::Null));
                }
                Ok(Some(Bson::Array(out)))
            }
            Node::FilterArray {
                input,
                name,
                cond,
                limit,
            } => {
                let Some(items) = array_input(input.eval(scope)?, "$filter")? else {
                    return Ok(Some(Bson::Null));
                };
                let limit = match limit {
                    Some(l) => match l.eval(scope)? {
                        Some(Bson::Null) | None => None,
                        Some(v) => Some(
                            crate::query::value::number::Number::from_bson(&v)
                                .and_then(|n| n.to_exact_i64())
                                .filter(|n| *n > 0)
                                .ok_or_else(|| {
                                    QueryError::location(
                                        327392,
                                        "$filter: limit must be a positive integer",
                                    )
                                })? as usize,
                        ),
                    },
                    None => None,
                };
                let mut out = Vec::new();
                for item in items {
                    if limit.is_some_and(|l| out.len() >= l) {
                        break;
                    }
                    scope.bind(name, Some(item.clone()));
                    let keep = cond.eval(scope);
                    scope.unbind(1);
                    if keep?.as_ref().map(truthy).unwrap_or(false) {
                        out.push(item);
                    }
                }
                Ok(Some(Bson::Array(out)))
            }
            Node::Reduce {
                input,
                initial,
                body,
            } => {
                let Some(items) = array_input(input.eval(scope)?, "$reduce")? else {
                    return Ok(Some(Bson::Null));
                };
                let mut value = initial.eval(scope)?;
                for item in items {
                    scope.bind("value", value.clone());
                    scope.bind("this", Some(item));
                    let next = body.eval(scope);
                    scope.unbind(2);
                    value = next?;
                }
                Ok(value)
            }
            Node::Convert {
                input,
                to,
                on_error,
                on_null,
            } => {
                let value = input.eval(scope)?;
                if matches!(value, None | Some(Bson::Null) | Some(Bson::Undefined)) {
                    return match on_null {
                        Some(e) => e.eval(scope),
                        None => Ok(Some(Bson::Null)),
                    };
                }
                let target = to.eval(scope)?;
                match crate::query::expr::ops::convert::convert_to(value.as_ref(), target.as_ref())
                {
                    Ok(v) => Ok(v),
                    Err(e) if e.code == 241 => match on_error {
                        Some(handler) => handler.eval(scope),
                        None => Err(e),
                    },
                    Err(e) => Err(e),
                }
            }
            Node::Switch { branches, default } => {
                for (case, then) in branches {
                    if case.eval(scope)?.as_ref().map(truthy).unwrap_or(false) {
                        return then.eval(scope);
                    }
                }
                match default {
                    Some(d) => d.eval(scope),
                    None => Err(QueryError::location(
                        40066,
                        "$switch could not find a matching branch for an input, and no default was specified.",
                    )),
                }
            }
        }
    }

    /// The path, if this expression is a plain field path (`"$a.b"`).
    pub fn field_path(&self) -> Option<&[String]> {
        match &self.node {
            Node::FieldPath(path) => Some(path),
            _ => None,
        }
    }

    /// The fields, if this expression is an object (`{a: <expr>, …}`).
    pub fn object_fields(&self) -> Option<&[(String, Expression)]> {
        match &self.node {
            Node::Object(fields) => Some(fields),
            _ => None,
        }
    }

    /// The constant value, if this expression is a literal.
    pub fn as_literal(&self) -> Option<&Bson> {
        match &self.node {
            Node::Literal(v) => Some(v),
            _ => None,
        }
    }

    /// Whether [`Expression::evaluate_raw`] can answer this expression (for documents
    /// whose paths meet no array): a literal, a field path, or an object of those — what
    /// costs no more per document than reading the fields.
    pub fn reads_raw(&self) -> bool {
        match &self.node {
            Node::Literal(_) | Node::FieldPath(_) => true,
            Node::Object(fields) => fields.iter().all(|(_, expr)| expr.reads_raw()),
            _ => false,
        }
    }

    /// Evaluates a literal, a plain field path that meets no array on its way, or an
    /// object of those, straight
    /// from a raw document, decoding only the value found: `Some(result)` (`None` inside:
    /// missing), exactly what [`Expression::evaluate_optional`] gives on the decoded
    /// document. None when this expression needs the decoded document (any other
    /// expression, a path through an array, which maps over its elements, or bytes that do
    /// not read as BSON — decoding reports them).
    pub fn evaluate_raw(&self, doc: &bson::RawDocument) -> Option<Option<Bson>> {
        let path = match &self.node {
            Node::Literal(v) => return Some(Some(v.clone())),
            Node::FieldPath(path) => path,
            Node::Object(fields) => {
                let mut out = Document::new();
                for (name, expr) in fields {
                    if let Some(value) = expr.evaluate_raw(doc)? {
                        out.insert(name.clone(), value);
                    }
                }
                return Some(Some(Bson::Document(out)));
            }
            _ => return None,
        };
        let (last, parents) = path.split_last()?;
        let mut current = doc;
        for part in parents {
            match current.get(part).ok()? {
                Some(bson::RawBsonRef::Document(inner)) => current = inner,
                Some(bson::RawBsonRef::Array(_)) => return None,
                // Through a scalar or an absent field: missing.
                _ => return Some(None),
            }
        }
        match current.get(last).ok()? {
            None => Some(None),
            Some(value) => Bson::try_from(value).ok().map(Some),
        }
    }

    /// The dotted path, if this expression is a plain field path like `"$a.b"`.
    pub fn as_field_path(&self) -> Option<String> {
        match &self.node {
            Node::FieldPath(p) => Some(p.join(".")),
            _ => None,
        }
    }
}

/// `$let`: the variables are evaluated in the outer scope, then bound for the body.
fn eval_let(
    scope: &mut Scope<'_>,
    vars: &[(String, Expression)],
    body: &Expression,
) -> Result<Option<Bson>, QueryError> {
    let mut values = Vec::with_capacity(vars.len());
    for (name, expr) in vars {
        values.push((name, expr.eval(scope)?));
    }
    let count = values.len();
    for (name, value) in values {
        scope.bind(name, value);
    }
    let result = body.eval(scope);
    scope.unbind(count);
    result
}

/// An operator call: `$and` and `$or` short-circuit, every other operator evaluates all its
/// arguments first.
fn eval_call(
    scope: &mut Scope<'_>,
    op: Operator,
    args: &[Expression],
) -> Result<Option<Bson>, QueryError> {
    if op == Operator::And {
        for arg in args {
            if !arg.eval(scope)?.as_ref().map(truthy).unwrap_or(false) {
                return Ok(Some(Bson::Boolean(false)));
            }
        }
        return Ok(Some(Bson::Boolean(true)));
    }
    if op == Operator::Or {
        for arg in args {
            if arg.eval(scope)?.as_ref().map(truthy).unwrap_or(false) {
                return Ok(Some(Bson::Boolean(true)));
            }
        }
        return Ok(Some(Bson::Boolean(false)));
    }
    let mut values = Vec::with_capacity(args.len());
    for arg in args {
        values.push(arg.eval(scope)?);
    }
    ops::apply(op, values)
}

/// A `$$variable` (with an optional path): ROOT/CURRENT, REMOVE, NOW or a bound name.
fn eval_variable(
    scope: &mut Scope<'_>,
    name: &str,
    path: &[String],
) -> Result<Option<Bson>, QueryError> {
    let base = match name {
        "ROOT" if !path.is_empty() => return Ok(path_value_in_document(scope.root, path)),
        "CURRENT" if !path.is_empty() => return Ok(path_value_in_document(scope.current, path)),
        "ROOT" => Some(Bson::Document(scope.root.clone())),
        "CURRENT" => Some(Bson::Document(scope.current.clone())),
        "REMOVE" => None,
        // One value per command, whatever the document or stage (MongoDB's rule).
        "NOW" => Some(Bson::DateTime(crate::interrupt::command_now())),
        "CLUSTER_TIME" => match crate::interrupt::command_cluster_time() {
            Some(time) => Some(Bson::Timestamp(time)),
            None => {
                return Err(QueryError::location(
                    51144,
                    "Builtin variable '$$CLUSTER_TIME' is not available",
                ))
            }
        },
        other => scope.lookup(other).ok_or_else(|| {
            QueryError::location(17276, format!("Use of undefined variable: {other}"))
        })?,
    };
    Ok(base.and_then(|b| path_value(&b, path)))
}

fn array_input(value: Option<Bson>, op: &str) -> Result<Option<Vec<Bson>>, QueryError> {
    match value {
        None | Some(Bson::Null) | Some(Bson::Undefined) => Ok(None),
        Some(Bson::Array(items)) => Ok(Some(items)),
        Some(other) => Err(QueryError::location(
            28651,
            format!(
                "input to {op} must be an array not {}",
                ops::type_name(Some(&other))
            ),
        )),
    }
}

/// Aggregation path semantics: documents descend by name; arrays map the rest of the path
/// over their elements (missing results dropped, numeric components are field names).
pub fn path_value(value: &Bson, path: &[String]) -> Option<Bson> {
    let Some((first, rest)) = path.split_first() else {
        return Some(value.clone());
    };
    match value {
        Bson::Document(d) => d.get(first).and_then(|v| path_value(v, rest)),
        Bson::Array(items) => Some(Bson::Array(
            items
                .iter()
                .filter(|item| matches!(item, Bson::Document(_) | Bson::Array(_)))
                .filter_map(|item| path_value(item, path))
                .collect(),
        )),
        _ => None,
    }
}

/// [`path_value`] starting at a document.
pub fn path_value_in_document(doc: &Document, path: &[String]) -> Option<Bson> {
    let (first, rest) = path.split_first()?;
    doc.get(first).and_then(|v| path_value(v, rest))
}

const MAX_DEPTH: usize = 150;

fn parse_value(v: &Bson, depth: usize) -> Result<Expression, QueryError> {
    if depth > MAX_DEPTH {
        return Err(QueryError::bad_value("expression nested too deeply"));
    }
    let node = match v {
        Bson::String(s) if s.starts_with("$$") => {
            let mut parts = s[2..].split('.').map(str::to_string);
            let name = parts.next().unwrap_or_default();
            if name.is_empty() {
                return Err(QueryError::location(16869, "empty variable name"));
            }
            let path: Vec<String> = parts.collect();
            match variables::constant(&name) {
                // A command's `let` variable: the constant it is bound to (a path into it
                // that finds nothing is missing, like `$$REMOVE`).
                Some(value) => match path_value(&value, &path) {
                    Some(found) => Node::Literal(found),
                    None => Node::Variable {
                        name: "REMOVE".into(),
                        path: Vec::new(),
                    },
                },
                None if variables::is_defined(&name) => Node::Variable { name, path },
                None => {
                    return Err(QueryError::location(
                        17276,
                        format!("Use of undefined variable: {name}"),
                    ))
                }
            }
        }
        Bson::String(s) if s.starts_with('$') => Node::FieldPath(parse_field_path(&s[1..])?),
        Bson::Array(items) => Node::Array(
            items
                .iter()
                .map(|i| parse_value(i, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Bson::Document(d) => return parse_document(d, depth),
        other => Node::Literal(other.clone()),
    };
    Ok(Expression { node })
}

fn parse_field_path(path: &str) -> Result<Vec<String>, QueryError> {
    if path.is_empty() {
        return Err(QueryError::location(
            16872,
            "'$' by itself is not a valid FieldPath",
        ));
    }
    let parts: Vec<String> = path.split('.').map(str::to_string).collect();
    if parts.iter().any(String::is_empty) {
        return Err(QueryError::location(
            15998,
            "FieldPath field names may not be empty strings.",
        ));
    }
    Ok(parts)
}

fn parse_document(d: &Document, depth: usize) -> Result<Expression, QueryError> {
    let first_is_operator = d.keys().next().map(|k| k.starts_with('$')).unwrap_or(false);
    if !first_is_operator {
        let mut fields = Vec::with_capacity(d.len());
        for (name, value) in d {
            if name.starts_with('$') {
                return Err(QueryError::location(
                    16410,
                    format!("FieldPath field names may not start with '$'. Consider using $getField or $setField. ({name})"),
                ));
            }
            if name.contains('.') {
                return Err(QueryError::location(
                    16412,
                    format!("FieldPath field names may not contain '.'. ({name})"),
                ));
            }
            fields.push((name.clone(), parse_value(value, depth + 1)?));
        }
        return Ok(Expression {
            node: Node::Object(fields),
        });
    }
    if d.len() != 1 {
        return Err(QueryError::location(
            15983,
            "an expression specification must contain exactly one field, the name of the expression.",
        ));
    }
    let (name, arg) = match d.iter().next() {
        Some(entry) => entry,
        None => return Ok(Expression::literal(Bson::Document(Document::new()))),
    };
    crate::query::expr::parse::parse_operator(name, arg, depth)
}

/// Parses a sub-expression one level deeper (used by `expr/parse.rs`).
pub(crate) fn parse_nested(v: &Bson, depth: usize) -> Result<Expression, QueryError> {
    parse_value(v, depth + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn eval(expr: Bson, d: Document) -> Result<Option<Bson>, QueryError> {
        Expression::parse(&expr)?.evaluate_optional(&d)
    }

    #[test]
    fn paths_variables_and_literals() {
        let d = doc! {"a": {"b": 1}, "arr": [{"x": 1}, {"x": 2}, {"y": 3}]};
        assert_eq!(
            eval(Bson::String("$a.b".into()), d.clone()).unwrap(),
            Some(Bson::Int32(1))
        );
        assert_eq!(
            eval(Bson::String("$missing".into()), d.clone()).unwrap(),
            None
        );
        assert_eq!(
            eval(Bson::String("$arr.x".into()), d.clone()).unwrap(),
            Some(Bson::Array(vec![1.into(), 2.into()]))
        );
        assert_eq!(
            eval(Bson::String("$$ROOT.a.b".into()), d.clone()).unwrap(),
            Some(Bson::Int32(1))
        );
        assert_eq!(
            eval(Bson::Document(doc! {"$literal": "$a"}), d.clone()).unwrap(),
            Some(Bson::String("$a".into()))
        );
        assert_eq!(
            eval(Bson::Document(doc! {"k": "$a.b", "gone": "$nope"}), d).unwrap(),
            Some(Bson::Document(doc! {"k": 1}))
        );
    }

    #[test]
    fn operators() {
        let d = doc! {"a": 5, "b": 2, "s": "Hi", "arr": [1, 2, 3]};
        let e = |x: Document| {
            eval(Bson::Document(x), d.clone())
                .unwrap()
                .unwrap_or(Bson::String("MISSING".into()))
        };
        assert_eq!(e(doc! {"$add": ["$a", "$b", 1]}), Bson::Int32(8));
        assert_eq!(e(doc! {"$subtract": ["$a", "$b"]}), Bson::Int32(3));
        assert_eq!(e(doc! {"$multiply": ["$a", 2.5]}), Bson::Double(12.5));
        assert_eq!(e(doc! {"$divide": ["$a", "$b"]}), Bson::Double(2.5));
        let dec = |s: &str| Bson::Decimal128(s.parse().unwrap());
        assert_eq!(e(doc! {"$divide": [dec("6.0"), 2]}), dec("3.0"));
        assert_eq!(
            e(doc! {"$divide": [dec("1"), 3]}),
            dec("0.3333333333333333333333333333333333")
        );
        assert_eq!(e(doc! {"$divide": [dec("1"), dec("0.25")]}), dec("4"));
        assert_eq!(e(doc! {"$mod": ["$a", "$b"]}), Bson::Int32(1));
        assert_eq!(e(doc! {"$add": ["$a", "$nope"]}), Bson::Null);
        assert_eq!(e(doc! {"$eq": ["$a", 5.0]}), Bson::Boolean(true));
        assert_eq!(e(doc! {"$eq": ["$nope", null]}), Bson::Boolean(false));
        assert_eq!(e(doc! {"$cmp": ["$a", "$b"]}), Bson::Int32(1));
        assert_eq!(e(doc! {"$and": [1, "$a"]}), Bson::Boolean(true));
        assert_eq!(e(doc! {"$not": [0]}), Bson::Boolean(true));
        assert_eq!(
            e(doc! {"$cond": {"if": {"$gt": ["$a", 3]}, "then": "big", "else": "small"}}),
            Bson::String("big".into())
        );
        assert_eq!(e(doc! {"$cond": [false, 1, 2]}), Bson::Int32(2));
        assert_eq!(
            e(doc! {"$ifNull": ["$nope", "dflt"]}),
            Bson::String("dflt".into())
        );
        assert_eq!(e(doc! {"$concat": ["$s", "!"]}), Bson::String("Hi!".into()));
        assert_eq!(e(doc! {"$toUpper": "$s"}), Bson::String("HI".into()));
        assert_eq!(e(doc! {"$toLower": "$s"}), Bson::String("hi".into()));
        assert_eq!(e(doc! {"$size": "$arr"}), Bson::Int32(3));
        assert_eq!(e(doc! {"$arrayElemAt": ["$arr", -1]}), Bson::Int32(3));
        assert_eq!(
            e(doc! {"$arrayElemAt": ["$arr", 9]}),
            Bson::String("MISSING".into())
        );
        assert_eq!(e(doc! {"$in": [2, "$arr"]}), Bson::Boolean(true));
        assert_eq!(e(doc! {"$type": "$nope"}), Bson::String("missing".into()));
        assert_eq!(e(doc! {"$type": "$s"}), Bson::String("string".into()));
        assert_eq!(e(doc! {"$sum": "$arr"}), Bson::Int32(6));
        assert_eq!(
            e(doc! {"$map": {"input": "$arr", "as": "x", "in": {"$multiply": ["$$x", 2]}}}),
            Bson::Array(vec![2.into(), 4.into(), 6.into()])
        );
        assert_eq!(
            e(doc! {"$filter": {"input": "$arr", "cond": {"$gt": ["$$this", 1]}}}),
            Bson::Array(vec![2.into(), 3.into()])
        );
        assert_eq!(
            e(doc! {"$let": {"vars": {"z": 10}, "in": {"$add": ["$$z", "$a"]}}}),
            Bson::Int32(15)
        );
    }

    #[test]
    fn errors() {
        let d = doc! {"s": "x", "a": 1};
        assert_eq!(
            eval(Bson::Document(doc! {"$foo": 1}), d.clone())
                .unwrap_err()
                .code,
            168
        );
        assert_eq!(
            eval(Bson::Document(doc! {"$eq": [1]}), d.clone())
                .unwrap_err()
                .code,
            16020
        );
        assert_eq!(
            eval(Bson::Document(doc! {"$size": "$s"}), d.clone())
                .unwrap_err()
                .code,
            17124
        );
        assert_eq!(
            eval(Bson::Document(doc! {"$concat": ["$s", 1]}), d.clone())
                .unwrap_err()
                .code,
            16702
        );
        assert_eq!(
            eval(Bson::Document(doc! {"$divide": [1, 0]}), d.clone())
                .unwrap_err()
                .code,
            2
        );
        assert_eq!(
            eval(Bson::Document(doc! {"$add": ["$s"]}), d)
                .unwrap_err()
                .code,
            16554
        );
    }
}
