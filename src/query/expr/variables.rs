//! User variables of a command's `let` (and `$lookup`'s `let`): evaluating a `let` document
//! into values, and parsing filters, projections, pipelines and update pipelines with those
//! values in scope, so each `"$$name"` (or `"$$name.path"`) an expression refers to is parsed
//! as the constant it is bound to.
//!
//! The bindings in scope are a stack kept per thread for the duration of one
//! [`parse_with_variables`] call. Parsing is synchronous (no `.await` inside it), so the
//! stack never leaks into another command; the guard pops it even when parsing fails. Only
//! the expression parser reads it, and only where MongoDB reads a variable: inside
//! expressions (`$expr`, computed fields, pipeline stages, update pipelines), never in a
//! filter's plain values (`{a: "$$x"}` matches the string) or under `$literal`. Names bound by
//! `$let`, `$map`, `$filter` and `$reduce` inside the expression shadow the command's.
//!
//! Not for: evaluating `$let`, `$map`, `$filter` and `$reduce` themselves, whose variables
//! are bound per document by the evaluator (`expr/mod.rs`).

use crate::query::error::QueryError;
use crate::query::expr::Expression;
use bson::{Bson, Document};
use std::cell::RefCell;

/// One entry of the parse-time scope: a constant, or a name an inner expression rebinds.
enum Binding {
    Constant(String, Bson),
    Shadowed(String),
}

thread_local! {
    static IN_SCOPE: RefCell<Vec<Binding>> = const { RefCell::new(Vec::new()) };
}

/// Evaluates a command's `let` document into variable bindings (constants or expressions
/// that need no document, such as `$$NOW`). A later variable may use an earlier one.
pub fn bind_variables(variables: &Document) -> Result<Vec<(String, Bson)>, QueryError> {
    let empty = Document::new();
    let mut bound: Vec<(String, Bson)> = Vec::with_capacity(variables.len());
    for (name, value) in variables {
        check_user_variable_name(name)?;
        let expression = parse_with_variables(&bound, || Expression::parse(value))?;
        if expression.reads_document() {
            return Err(QueryError::location(
                4890500,
                "Command let Expression tried to access a field, but this is not allowed \
                 because Command let Expressions run before the query examines any documents.",
            ));
        }
        bound.push((name.clone(), expression.evaluate(&empty)?));
    }
    Ok(bound)
}

/// MongoDB's rule for user variable names (`let`, `$let`'s vars, `as`): not empty (16866),
/// starting with a lowercase ASCII letter or a non-ASCII character (16867; `CURRENT` may be
/// rebound), then letters, digits, `_` or non-ASCII characters (16868).
pub(crate) fn check_user_variable_name(name: &str) -> Result<(), QueryError> {
    if name == "CURRENT" {
        return Ok(());
    }
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Err(QueryError::location(
            16866,
            "empty variable names are not allowed",
        ));
    };
    if !first.is_ascii_lowercase() && first.is_ascii() {
        return Err(QueryError::location(
            16867,
            format!("'{name}' starts with an invalid character for a user variable name"),
        ));
    }
    if let Some(bad) = chars.find(|c| c.is_ascii() && !(c.is_ascii_alphanumeric() || *c == '_')) {
        return Err(QueryError::location(
            16868,
            format!("'{name}' contains an invalid character for a variable name: '{bad}'"),
        ));
    }
    Ok(())
}

/// Runs `parse` with `variables` in scope (on top of any already in scope, which they
/// shadow).
pub fn parse_with_variables<T>(variables: &[(String, Bson)], parse: impl FnOnce() -> T) -> T {
    let entries = variables
        .iter()
        .map(|(name, value)| Binding::Constant(name.clone(), value.clone()))
        .collect();
    with_entries(entries, parse)
}

/// Runs `parse` with `names` rebound by an inner expression (`$let`'s vars, `$map`'s `as`…),
/// so a command variable of the same name is not substituted inside it.
pub(super) fn shadowing<T>(names: &[&str], parse: impl FnOnce() -> T) -> T {
    let entries = names
        .iter()
        .map(|name| Binding::Shadowed(name.to_string()))
        .collect();
    with_entries(entries, parse)
}

/// The constant `name` is bound to at this point of the parse, if a command variable is.
pub(super) fn constant(name: &str) -> Option<Bson> {
    IN_SCOPE.with(|scope| {
        scope.borrow().iter().rev().find_map(|entry| match entry {
            Binding::Constant(n, value) if n == name => Some(Some(value.clone())),
            Binding::Shadowed(n) if n == name => Some(None),
            _ => None,
        })?
    })
}

/// Whether `"$$name"` names a variable at this point of the parse: a system variable, a
/// command variable, or one an enclosing `$let`/`$map`/`$filter`/`$reduce` binds. MongoDB
/// refuses any other at parse time (17276), before a document is read.
pub(super) fn is_defined(name: &str) -> bool {
    const SYSTEM: [&str; 8] = [
        "ROOT",
        "CURRENT",
        "REMOVE",
        "NOW",
        "CLUSTER_TIME",
        "DESCEND",
        "PRUNE",
        "KEEP",
    ];
    SYSTEM.contains(&name)
        || IN_SCOPE.with(|scope| {
            scope.borrow().iter().any(|entry| {
                let (Binding::Constant(n, _) | Binding::Shadowed(n)) = entry;
                n == name
            })
        })
}

/// The command variables visible at this point of the parse, for a stage that parses more
/// later (a correlated `$lookup` sub-pipeline is parsed again per input document).
pub fn visible_constants() -> Vec<(String, Bson)> {
    IN_SCOPE.with(|scope| {
        let mut seen: Vec<&str> = Vec::new();
        let mut visible = Vec::new();
        let scope = scope.borrow();
        for entry in scope.iter().rev() {
            let (Binding::Constant(name, _) | Binding::Shadowed(name)) = entry;
            if seen.contains(&name.as_str()) {
                continue;
            }
            seen.push(name);
            if let Binding::Constant(name, value) = entry {
                visible.push((name.clone(), value.clone()));
            }
        }
        visible.reverse();
        visible
    })
}

/// Pushes `entries`, runs `parse`, pops them again (also when `parse` panics).
fn with_entries<T>(entries: Vec<Binding>, parse: impl FnOnce() -> T) -> T {
    struct Pop(usize);
    impl Drop for Pop {
        fn drop(&mut self) {
            IN_SCOPE.with(|scope| scope.borrow_mut().truncate(self.0));
        }
    }
    let depth = IN_SCOPE.with(|scope| {
        let mut scope = scope.borrow_mut();
        let depth = scope.len();
        scope.extend(entries);
        depth
    });
    let _pop = Pop(depth);
    parse()
}
