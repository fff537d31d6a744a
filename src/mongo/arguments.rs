//! The consuming argument parser every command handler reads its fields through: a handler
//! takes each field it understands, once, with its type checked, and then calls
//! [`Arguments::finish`], which refuses every field no code took with MongoDB's 40415 ("BSON
//! field 'find.foo' is an unknown field."). A field can therefore not be accepted and never
//! read: an option docgate does not honour is either refused where it is taken, or not taken
//! and refused by `finish`. The few options that are honoured by doing nothing (a hint to a
//! sharded cluster, a storage-engine tuning knob) are taken with [`Arguments::without_effect`],
//! which says so at the call site.
//!
//! The same parser reads nested statements (`updates`, `deletes`) with their own error path.
//! The generic arguments every command may carry (`lsid`, `maxTimeMS`, …) are read by the
//! dispatcher and the connection, not by handlers, so top-level `finish` lets them pass.
//!
//! Not for: what the fields mean (each command's module).

use bson::{Bson, Document};

use super::error::OpError;
use super::request::{as_bool, as_i64, wrong_type, CommandRequest};

/// Arguments any command may carry (MongoDB's generic arguments), read by the dispatcher,
/// the connection and the session layer rather than by a command's handler. Transaction
/// fields among them are refused by the dispatcher until transactions exist.
pub const GENERIC_ARGUMENTS: &[&str] = &[
    "$db",
    "lsid",
    "$clusterTime",
    "$readPreference",
    "txnNumber",
    "autocommit",
    "startTransaction",
    "readConcern",
    "writeConcern",
    "comment",
    "maxTimeMS",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
    "$audit",
    "$client",
    "$configServerState",
    "$gleStats",
    "$oplogQueryData",
    "$replData",
    "$topologyTime",
    "databaseVersion",
    "shardVersion",
    "$queryOptions",
    "mayBypassWriteBlocking",
    "clientOperationKey",
    "help",
];

/// The fields of one command body (or one nested statement), taken one by one.
pub struct Arguments<'a> {
    /// The error path of an unknown field: `find` gives "find.foo".
    path: String,
    body: &'a Document,
    /// Which of `body`'s fields, by position, some code took.
    taken: Vec<bool>,
    /// Whether the generic arguments pass `finish` (top level only).
    generic: bool,
}

impl CommandRequest {
    /// The command's fields for its handler to take; the command name itself (the first
    /// field) is taken already.
    pub fn arguments(&self) -> Arguments<'_> {
        let mut arguments = Arguments::new(self.name.clone(), &self.body);
        arguments.generic = true;
        if let Some(first) = arguments.taken.first_mut() {
            *first = true;
        }
        arguments
    }
}

impl<'a> Arguments<'a> {
    /// The fields of a nested document, e.g. one statement of `updates` with the path
    /// `UpdateOpEntry`; generic arguments are unknown fields there.
    pub fn new(path: impl Into<String>, body: &'a Document) -> Arguments<'a> {
        Arguments {
            path: path.into(),
            body,
            taken: vec![false; body.len()],
            generic: false,
        }
    }

    /// The raw value of `field`, taken.
    pub fn value(&mut self, field: &str) -> Option<&'a Bson> {
        let position = self.body.keys().position(|key| key == field)?;
        self.taken[position] = true;
        self.body.get(field)
    }

    /// Whether the body has `field` (without taking it).
    pub fn has(&self, field: &str) -> bool {
        self.body.contains_key(field)
    }

    /// Takes a field whose every value docgate honours by doing nothing; the caller says why
    /// in a comment (e.g. `allowPartialResults` only matters on a sharded cluster).
    pub fn without_effect(&mut self, field: &str) {
        self.value(field);
    }

    /// An optional sub-document (null counts as absent).
    pub fn document(&mut self, field: &str) -> Result<Option<&'a Document>, OpError> {
        match self.value(field) {
            None | Some(Bson::Null) => Ok(None),
            Some(Bson::Document(d)) => Ok(Some(d)),
            Some(other) => Err(wrong_type(field, "object", other)),
        }
    }

    /// An optional array.
    pub fn array(&mut self, field: &str) -> Result<Option<&'a Vec<Bson>>, OpError> {
        match self.value(field) {
            None | Some(Bson::Null) => Ok(None),
            Some(Bson::Array(a)) => Ok(Some(a)),
            Some(other) => Err(wrong_type(field, "array", other)),
        }
    }

    /// An optional string.
    pub fn str(&mut self, field: &str) -> Result<Option<&'a str>, OpError> {
        match self.value(field) {
            None | Some(Bson::Null) => Ok(None),
            Some(Bson::String(s)) => Ok(Some(s)),
            Some(other) => Err(wrong_type(field, "string", other)),
        }
    }

    /// An optional boolean; numbers count as booleans, as in MongoDB.
    pub fn bool(&mut self, field: &str) -> Result<Option<bool>, OpError> {
        match self.value(field) {
            None | Some(Bson::Null) => Ok(None),
            Some(value) => as_bool(value)
                .map(Some)
                .ok_or_else(|| wrong_type(field, "bool", value)),
        }
    }

    /// An optional integral number from any numeric type (doubles must be integral).
    pub fn i64(&mut self, field: &str) -> Result<Option<i64>, OpError> {
        match self.value(field) {
            None | Some(Bson::Null) => Ok(None),
            Some(value) => as_i64(value)
                .map(Some)
                .ok_or_else(|| wrong_type(field, "long", value)),
        }
    }

    /// A non-negative count.
    pub fn count(&mut self, field: &str) -> Result<Option<u64>, OpError> {
        match self.i64(field)? {
            Some(n) if n < 0 => Err(OpError::BadValue(format!(
                "{field} value must be non-negative, but received: {n}"
            ))),
            Some(n) => Ok(Some(n.unsigned_abs())),
            None => Ok(None),
        }
    }

    /// The command's (or statement's) `collation`, parsed and validated; none when it has
    /// none (the collection's default then applies).
    pub fn collation(&mut self) -> Result<Option<crate::query::Collation>, OpError> {
        match self.document("collation")? {
            None => Ok(None),
            Some(spec) => Ok(Some(crate::query::Collation::parse(spec)?)),
        }
    }

    /// A command's `let` (or an update statement's `c`): each variable evaluated once into
    /// the constant that `"$$name"` stands for in the command's expressions.
    pub fn variables(&mut self, field: &str) -> Result<Vec<(String, Bson)>, OpError> {
        match self.document(field)? {
            None => Ok(Vec::new()),
            Some(variables) => Ok(crate::query::bind_variables(variables)?),
        }
    }

    /// Refuses every field that no code took (and that is not a generic argument at the top
    /// level), as MongoDB's command parser does.
    pub fn finish(self) -> Result<(), OpError> {
        for (key, taken) in self.body.keys().zip(&self.taken) {
            if *taken || (self.generic && GENERIC_ARGUMENTS.contains(&key.as_str())) {
                continue;
            }
            return Err(OpError::UnknownField(format!("{}.{key}", self.path)));
        }
        Ok(())
    }
}

/// The type a field of a write's statements takes (see [`check_statements`]).
#[derive(Clone, Copy, Debug)]
pub enum FieldKind {
    Object,
    Array,
    Bool,
    Integer,
    /// Several types (checked where the statement is run).
    Any,
}

/// MongoDB parses every statement of a write before it runs any (its IDL): a statement that
/// is not an object, or has a field the command does not know or of the wrong type, fails the
/// whole command (`update.updates.<field>`) and nothing runs — while what a field's value
/// means (a filter, an update) is that statement's own write error. `fields` are the
/// statement's fields and their types.
pub fn check_statements(
    path: &str,
    statements: &[Bson],
    fields: &[(&str, FieldKind)],
) -> Result<(), OpError> {
    for statement in statements {
        let Bson::Document(statement) = statement else {
            return Err(wrong_type(path, "object", statement));
        };
        let mut arguments = Arguments::new(path, statement);
        for (field, kind) in fields {
            let checked = match kind {
                FieldKind::Object => arguments.document(field).map(|_| ()),
                FieldKind::Array => arguments.array(field).map(|_| ()),
                FieldKind::Bool => arguments.bool(field).map(|_| ()),
                FieldKind::Integer => arguments.i64(field).map(|_| ()),
                FieldKind::Any => {
                    arguments.without_effect(field);
                    Ok(())
                }
            };
            checked?;
        }
        arguments.finish()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn request(body: Document) -> CommandRequest {
        let name = body.keys().next().cloned().unwrap_or_default();
        CommandRequest {
            name,
            db: "app".into(),
            body,
        }
    }

    #[test]
    fn a_field_nobody_took_is_refused() {
        let request = request(doc! {"find": "c", "filter": {}, "bogus": 1, "lsid": {}});
        let mut arguments = request.arguments();
        arguments.document("filter").unwrap();
        let error = arguments.finish().unwrap_err();
        assert_eq!(error.code(), 40415);
        assert!(error.to_string().contains("find.bogus"), "{error}");
    }

    #[test]
    fn taken_and_generic_fields_pass() {
        let request = request(doc! {"find": "c", "limit": 2, "maxTimeMS": 5, "comment": "x"});
        let mut arguments = request.arguments();
        assert_eq!(arguments.count("limit").unwrap(), Some(2));
        assert!(arguments.finish().is_ok());
    }

    #[test]
    fn nested_statements_have_no_generic_arguments() {
        let statement = doc! {"q": {}, "lsid": {}};
        let mut arguments = Arguments::new("UpdateOpEntry", &statement);
        arguments.document("q").unwrap();
        let error = arguments.finish().unwrap_err();
        assert!(error.to_string().contains("UpdateOpEntry.lsid"), "{error}");
    }

    #[test]
    fn variables_are_evaluated_once_and_checked() {
        let body = doc! {"let": {"x": {"$add": [1, 2]}}, "c": {"Bad": 1}, "d": 1};
        let mut arguments = Arguments::new("s", &body);
        assert_eq!(
            arguments.variables("let").unwrap(),
            vec![("x".to_string(), Bson::Int32(3))]
        );
        assert_eq!(arguments.variables("c").unwrap_err().code(), 16867);
        assert_eq!(arguments.variables("d").unwrap_err().code(), 14);
    }

    #[test]
    fn types_are_checked_as_they_are_taken() {
        let body = doc! {"limit": "x", "skip": -1, "ordered": 1};
        let mut arguments = Arguments::new("s", &body);
        assert_eq!(arguments.i64("limit").unwrap_err().code(), 14);
        assert_eq!(arguments.count("skip").unwrap_err().code(), 2);
        assert_eq!(arguments.bool("ordered").unwrap(), Some(true));
    }
}
