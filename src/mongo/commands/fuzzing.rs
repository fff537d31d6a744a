//! The argument parsing of the commands, without running them, for the fuzz targets
//! (`docgate::fuzzing`, cargo feature `fuzzing`): what a handler reads from a request before it
//! touches the catalog or the store, by the same functions the handlers call.
//!
//! Not for: the server (the handlers parse as they run), or checking what a command does.

use bson::{Bson, Document};

use super::find::FindArguments;
use super::{delete, update};
use crate::mongo::command_table;
use crate::mongo::error::OpError;
use crate::mongo::request::CommandRequest;
use crate::query::{parse_with_variables, Pipeline};

/// Parses `request`'s arguments as its handler would: `find` (and `explain` of one), the
/// statements of `update` and `delete` (each one's error as its write error would be) and an
/// `aggregate`'s pipeline. The others are only looked up in the command table.
pub fn parse_arguments(request: &CommandRequest) -> Vec<Result<(), OpError>> {
    if command_table::lookup(&request.name).is_none() {
        return vec![Err(OpError::CommandNotFound(request.name.clone()))];
    }
    match request.name.as_str() {
        "find" => vec![FindArguments::parse(request).map(drop)],
        "explain" => match request.body.get("explain") {
            Some(Bson::Document(inner)) if inner.keys().next().is_some_and(|k| k == "find") => {
                let mut body = inner.clone();
                body.insert("$db", request.db.clone());
                let explained = CommandRequest {
                    name: "find".into(),
                    db: request.db.clone(),
                    body,
                };
                vec![FindArguments::parse(&explained).map(drop)]
            }
            _ => Vec::new(),
        },
        "update" => statements(request, "updates", |statement, variables| {
            update::parse_statement(
                statement,
                variables,
                crate::ops::validation::DocumentValidation::Enforce,
            )
            .map(drop)
        }),
        "delete" => statements(request, "deletes", |statement, variables| {
            delete::parse_statement(statement, variables).map(drop)
        }),
        "aggregate" => vec![aggregate_pipeline(request)],
        _ => Vec::new(),
    }
}

/// Each statement of the array `field`, parsed with the command's `let` variables.
fn statements(
    request: &CommandRequest,
    field: &str,
    parse: impl Fn(&Bson, &[(String, Bson)]) -> Result<(), OpError>,
) -> Vec<Result<(), OpError>> {
    let mut arguments = request.arguments();
    let variables = match arguments.variables("let") {
        Ok(variables) => variables,
        Err(error) => return vec![Err(error)],
    };
    match arguments.array(field) {
        Ok(Some(statements)) => statements
            .iter()
            .map(|statement| parse(statement, &variables))
            .collect(),
        Ok(None) => vec![Err(OpError::missing_field(field))],
        Err(error) => vec![Err(error)],
    }
}

/// An `aggregate`'s pipeline, parsed with its `let` variables.
fn aggregate_pipeline(request: &CommandRequest) -> Result<(), OpError> {
    let mut arguments = request.arguments();
    let variables = arguments.variables("let")?;
    let stages = arguments
        .array("pipeline")?
        .ok_or_else(|| OpError::missing_field("aggregate.pipeline"))?;
    let stages: Vec<Document> = stages
        .iter()
        .filter_map(|stage| stage.as_document().cloned())
        .collect();
    parse_with_variables(&variables, || Pipeline::parse(&stages))?;
    Ok(())
}
