//! The one error type of the query core: a MongoDB error code, its code name and a message.
//!
//! Every parse or evaluation failure in `src/query/` is a [`QueryError`] carrying the code
//! MongoDB itself would answer with, so front ends can put it on the wire unchanged.
//! Not for: transport, storage or authentication errors, which have their own types.

/// A MongoDB-style error: numeric `code`, `codeName` and human-readable message.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct QueryError {
    /// MongoDB's numeric error code (e.g. 2 for BadValue).
    pub code: i32,
    /// MongoDB's code name (e.g. "BadValue", or "Location40324" for numbered assertions).
    pub code_name: &'static str,
    /// The message shown to the client as `errmsg`.
    pub message: String,
}

impl From<crate::interrupt::Interruption> for QueryError {
    fn from(interruption: crate::interrupt::Interruption) -> QueryError {
        QueryError::with(
            interruption.code(),
            interruption.code_name(),
            interruption.to_string(),
        )
    }
}

impl QueryError {
    fn with(code: i32, code_name: &'static str, message: impl Into<String>) -> Self {
        QueryError {
            code,
            code_name,
            message: message.into(),
        }
    }

    /// Code 2, BadValue: a malformed or semantically invalid argument.
    pub fn bad_value(message: impl Into<String>) -> Self {
        Self::with(2, "BadValue", message)
    }

    /// Code 52, DollarPrefixedFieldName: a `$`-prefixed field where storage allows none
    /// (inside `_id`).
    pub fn dollar_prefixed_field(message: impl Into<String>) -> Self {
        Self::with(52, "DollarPrefixedFieldName", message)
    }

    /// Code 9, FailedToParse: a request document that does not have the expected shape.
    pub fn failed_to_parse(message: impl Into<String>) -> Self {
        Self::with(9, "FailedToParse", message)
    }

    /// Code 14, TypeMismatch: an operand of the wrong BSON type.
    pub fn type_mismatch(message: impl Into<String>) -> Self {
        Self::with(14, "TypeMismatch", message)
    }

    /// Code 28, PathNotViable: an update path runs through a value that cannot hold it.
    pub fn path_not_viable(message: impl Into<String>) -> Self {
        Self::with(28, "PathNotViable", message)
    }

    /// Code 40, ConflictingUpdateOperators: two update operators touch overlapping paths.
    pub fn conflicting_update_operators(message: impl Into<String>) -> Self {
        Self::with(40, "ConflictingUpdateOperators", message)
    }

    /// Code 66, ImmutableField: an update would change `_id`.
    pub fn immutable_field(message: impl Into<String>) -> Self {
        Self::with(66, "ImmutableField", message)
    }

    /// Code 168, InvalidPipelineOperator: an unknown aggregation expression operator.
    pub fn invalid_pipeline_operator(message: impl Into<String>) -> Self {
        Self::with(168, "InvalidPipelineOperator", message)
    }

    /// Code 115, CommandNotSupported: a feature MongoDB has and docgate does not implement
    /// (`$where`, geospatial operators, time zones other than UTC, …) — not bad input, which
    /// is [`QueryError::bad_value`].
    pub fn not_supported(message: impl Into<String>) -> Self {
        Self::with(115, "CommandNotSupported", message)
    }

    /// A named MongoDB error code other than the ones above (e.g. 73 InvalidNamespace,
    /// 13113 MergeStageNoMatchingDocument).
    pub fn coded(code: i32, code_name: &'static str, message: impl Into<String>) -> Self {
        Self::with(code, code_name, message)
    }

    /// Code 51091-style numbered assertions: MongoDB's `uassert(code, …)` errors, whose code
    /// name is `Location<code>`.
    pub fn location(code: i32, message: impl Into<String>) -> Self {
        Self::with(code, location_code_name(code), message)
    }
}

/// MongoDB names numbered assertion codes `Location<code>`. The name must be `'static`, so
/// each distinct code's name is built once and kept for the life of the process (the set of
/// codes is fixed by the source, so this is bounded).
fn location_code_name(code: i32) -> &'static str {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashMap<i32, &'static str>>> = OnceLock::new();
    let names = NAMES.get_or_init(|| Mutex::new(HashMap::new()));
    let mut names = match names.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    names
        .entry(code)
        .or_insert_with(|| Box::leak(format!("Location{code}").into_boxed_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names() {
        let e = QueryError::bad_value("x");
        assert_eq!((e.code, e.code_name), (2, "BadValue"));
        assert_eq!(QueryError::failed_to_parse("x").code, 9);
        assert_eq!(QueryError::type_mismatch("x").code, 14);
        assert_eq!(QueryError::immutable_field("x").code_name, "ImmutableField");
        let e = QueryError::location(40324, "Unrecognized pipeline stage name: '$foo'");
        assert_eq!((e.code, e.code_name), (40324, "Location40324"));
        assert_eq!(e.to_string(), "Unrecognized pipeline stage name: '$foo'");
        assert_eq!(QueryError::location(16869, "x").code_name, "Location16869");
        assert_eq!(QueryError::location(16869, "y").code_name, "Location16869");
    }
}
