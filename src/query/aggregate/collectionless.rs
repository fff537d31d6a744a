//! The stages of a collection-less aggregation (`aggregate: 1`) that produce its input:
//! `$documents` (an expression evaluated once to an array of documents) and
//! `$listLocalSessions` (which sessions to list; the core reads them from its session
//! registry), with MongoDB's errors for where they may stand.
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
