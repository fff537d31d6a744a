//! The stages of a collection-less aggregation (`aggregate: 1`) that produce its input:
//! `$documents` (an expression evaluated once to an array of documents),
//! `$listLocalSessions` (which sessions to list; the core reads them from its session
//! registry) and `$currentOp` (which operations to list; the front end reads them from the
//! operation registry), with MongoDB's errors for where they may stand.
//!
//! Not for: the session registry itself (`ops::sessions`), or running the stages that
//! follow (`Pipeline::run_with`).

use bson::{Bson, Document};

use crate::query::error::QueryError;
use crate::query::expr::Expression;

/// Which sessions `$listLocalSessions` lists.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionListing {
    /// `{}`: the sessions of the current user.
    CurrentUser,
    /// `{allUsers: true}`.
    AllUsers,
    /// `{users: [{user, db}, ...]}`: the sessions of these (name, db) users.
    Users(Vec<(String, String)>),
}

/// Parses `$documents`: an expression (evaluated once, with no input document) that must
/// give an array of documents.
pub fn parse_documents(spec: &Bson) -> Result<Expression, QueryError> {
    Expression::parse(spec)
}

/// Evaluates a parsed `$documents` expression into its documents.
pub fn documents(expression: &Expression) -> Result<Vec<Document>, QueryError> {
    let value = expression.evaluate(&Document::new())?;
    let Bson::Array(items) = value else {
        return Err(QueryError::location(
            5858203,
            format!(
                "an array is expected, found {}",
                crate::query::expr::ops::type_name(Some(&value))
            ),
        ));
    };
    items
        .into_iter()
        .map(|item| match item {
            Bson::Document(d) => Ok(d),
            other => Err(QueryError::location(
                40228,
                format!(
                    "'replacement document' must evaluate to an object, but resulting value was: {other}. Type of resulting value: '{}'.",
                    crate::query::expr::ops::type_name(Some(&other))
                ),
            )),
        })
        .collect()
}

/// Parses `$listLocalSessions`: `{}`, `{allUsers: true}` or `{users: [{user, db}]}`.
pub fn parse_list_local_sessions(spec: &Bson) -> Result<SessionListing, QueryError> {
    let Bson::Document(d) = spec else {
        return Err(QueryError::type_mismatch(format!(
            "BSON field '$listLocalSessions' is the wrong type '{}', expected type 'object'",
            crate::query::expr::ops::type_name(Some(spec))
        )));
    };
    for key in d.keys() {
        if key != "allUsers" && key != "users" {
            return Err(QueryError::location(
                40415,
                format!("BSON field '$listLocalSessions.{key}' is an unknown field."),
            ));
        }
    }
    let all_users = match d.get("allUsers") {
        None => false,
        Some(Bson::Boolean(b)) => *b,
        Some(other) => {
            return Err(QueryError::type_mismatch(format!(
            "BSON field '$listLocalSessions.allUsers' is the wrong type '{}', expected type 'bool'",
            crate::query::expr::ops::type_name(Some(other))
        )))
        }
    };
    let users = match d.get("users") {
        None => None,
        Some(Bson::Array(items)) => {
            let mut users = Vec::with_capacity(items.len());
            for item in items {
                let Bson::Document(user) = item else {
                    return Err(QueryError::type_mismatch(
                        "BSON field '$listLocalSessions.users' must be an array of objects",
                    ));
                };
                let field = |name: &str| {
                    match user.get(name) {
                    Some(Bson::String(s)) => Ok(s.clone()),
                    _ => Err(QueryError::failed_to_parse(format!(
                        "BSON field '$listLocalSessions.users.{name}' is missing but a required field"
                    ))),
                }
                };
                users.push((field("user")?, field("db")?));
            }
            Some(users)
        }
        Some(other) => {
            return Err(QueryError::type_mismatch(format!(
            "BSON field '$listLocalSessions.users' is the wrong type '{}', expected type 'array'",
            crate::query::expr::ops::type_name(Some(other))
        )))
        }
    };
    match (all_users, users) {
        (true, Some(_)) => Err(QueryError::failed_to_parse(
            "$listLocalSessions may not specify both allUsers and users",
        )),
        (true, None) => Ok(SessionListing::AllUsers),
        (false, Some(users)) => Ok(SessionListing::Users(users)),
        (false, None) => Ok(SessionListing::CurrentUser),
    }
}

/// The options of `$currentOp`, as given (MongoDB's defaults where absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurrentOpOptions {
    /// `allUsers` (default false: the current user's operations).
    pub all_users: bool,
    /// `idleConnections` (default false).
    pub idle_connections: bool,
    /// `idleSessions` (default true: sessions idle in an open transaction).
    pub idle_sessions: bool,
    /// `idleCursors` (default false).
    pub idle_cursors: bool,
    /// `localOps` (default false; only a router tells local from cluster operations).
    pub local_ops: bool,
    /// `truncateOps` (default false).
    pub truncate_ops: bool,
    /// `backtrace` (default false).
    pub backtrace: bool,
    /// `targetAllNodes` (default false; a sharded cluster's).
    pub target_all_nodes: bool,
}

/// Parses `$currentOp`: a document of boolean options.
pub fn parse_current_op(spec: &Bson) -> Result<CurrentOpOptions, QueryError> {
    let Bson::Document(d) = spec else {
        return Err(QueryError::failed_to_parse(format!(
            "$currentOp options must be specified in an object, but found: {}",
            crate::query::expr::ops::type_name(Some(spec))
        )));
    };
    let mut options = CurrentOpOptions {
        all_users: false,
        idle_connections: false,
        idle_sessions: true,
        idle_cursors: false,
        local_ops: false,
        truncate_ops: false,
        backtrace: false,
        target_all_nodes: false,
    };
    for (key, value) in d {
        let flag = match key.as_str() {
            "allUsers" => &mut options.all_users,
            "idleConnections" => &mut options.idle_connections,
            "idleSessions" => &mut options.idle_sessions,
            "idleCursors" => &mut options.idle_cursors,
            "localOps" => &mut options.local_ops,
            "truncateOps" => &mut options.truncate_ops,
            "backtrace" => &mut options.backtrace,
            "targetAllNodes" => &mut options.target_all_nodes,
            other => {
                return Err(QueryError::failed_to_parse(format!(
                    "Unrecognized option '{other}' in $currentOp stage."
                )))
            }
        };
        match value {
            Bson::Boolean(set) => *flag = *set,
            _ => {
                return Err(QueryError::failed_to_parse(format!(
                    "The '{key}' parameter of the $currentOp stage must be a boolean value, \
                     but found: {}",
                    crate::query::expr::ops::type_name(Some(value))
                )))
            }
        }
    }
    Ok(options)
}
