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

    /// Code 2, BadValue: MongoDB answers unknown or unsupported query operators with BadValue
    /// ("unknown top level operator: $foo", "unknown operator: $foo"); features docgate does
    /// not implement ($where, $text, geo) are reported the same way.
    pub fn not_supported(message: impl Into<String>) -> Self {
        Self::with(2, "BadValue", message)
    }

    /// Code 51091-style numbered assertions: MongoDB's `uassert(code, …)` errors, whose code
    /// name is "Location<code>".
    pub fn location(code: i32, message: impl Into<String>) -> Self {
        Self::with(code, location_code_name(code), message)
    }
}

/// MongoDB names numbered assertion codes "Location<code>"; the name must be `'static`, so the
/// codes this module raises are listed here.
fn location_code_name(code: i32) -> &'static str {
    match code {
        15974 => "Location15974",
        15975 => "Location15975",
        15976 => "Location15976",
        15981 => "Location15981",
        15983 => "Location15983",
        16020 => "Location16020",
        16554 => "Location16554",
        16555 => "Location16555",
        16608 => "Location16608",
        16609 => "Location16609",
        16610 => "Location16610",
        16702 => "Location16702",
        16006 => "Location16006",
        17040 => "Location17040",
        17041 => "Location17041",
        17048 => "Location17048",
        17124 => "Location17124",
        28667 => "Location28667",
        28689 => "Location28689",
        28724 => "Location28724",
        28765 => "Location28765",
        28811 => "Location28811",
        31249 => "Location31249",
        31250 => "Location31250",
        31253 => "Location31253",
        31254 => "Location31254",
        31308 => "Location31308",
        40156 => "Location40156",
        40157 => "Location40157",
        40158 => "Location40158",
        40160 => "Location40160",
        40228 => "Location40228",
        40234 => "Location40234",
        40272 => "Location40272",
        40323 => "Location40323",
        40324 => "Location40324",
        40352 => "Location40352",
        40353 => "Location40353",
        40400 => "Location40400",
        40401 => "Location40401",
        51091 => "Location51091",
        51108 => "Location51108",
        15998 => "Location15998",
        16412 => "Location16412",
        16611 => "Location16611",
        16612 => "Location16612",
        17080 => "Location17080",
        17081 => "Location17081",
        28690 => "Location28690",
        28691 => "Location28691",
        40081 => "Location40081",
        40390 => "Location40390",
        40069 => "Location40069",
        16410 => "Location16410",
        16411 => "Location16411",
        31325 => "Location31325",
        40066 => "Location40066",
        34435 => "Location34435",
        50700 => "Location50700",
        31109 => "Location31109",
        _ => "Location",
    }
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
    }
}
