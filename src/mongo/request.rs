//! A command as the dispatcher sees it: its name, its database and one body document in
//! which the OP_MSG kind-1 document sequences are merged as arrays. Also the typed readers
//! of single values, which accept what MongoDB accepts (numbers for booleans, any integral
//! number type for counts) and answer MongoDB's type errors otherwise; handlers take their
//! fields through `arguments::Arguments`, which uses them.
//!
//! Not for: executing anything.

use bson::{Bson, Document};
use docgate_wire::{OpMsg, OpQuery};

use super::error::OpError;

/// One command from a client.
#[derive(Clone, Debug)]
pub struct CommandRequest {
    /// The first key of the body, e.g. `find`.
    pub name: String,
    /// The database it runs against (`$db`, or the namespace of a legacy OP_QUERY).
    pub db: String,
    /// The body with kind-1 sequences merged in.
    pub body: Document,
}

impl CommandRequest {
    /// From an OP_MSG: kind-0 body plus kind-1 sequences.
    pub fn from_op_msg(msg: OpMsg) -> Result<CommandRequest, OpError> {
        let mut body = msg.body;
        for sequence in msg.sequences {
            if body.contains_key(&sequence.identifier) {
                return Err(OpError::BadValue(format!(
                    "duplicate field {} in the command body and a document sequence",
                    sequence.identifier
                )));
            }
            let docs: Vec<Bson> = sequence.documents.into_iter().map(Bson::Document).collect();
            body.insert(sequence.identifier, docs);
        }
        let db = match body.get("$db") {
            Some(Bson::String(db)) => db.clone(),
            Some(_) => return Err(OpError::TypeMismatch("$db must be a string".into())),
            None => {
                return Err(OpError::FailedToParse(
                    "OP_MSG requests require a $db argument".into(),
                ))
            }
        };
        CommandRequest::new(db, body)
    }

    /// From a legacy OP_QUERY on `db.$cmd` (the handshake); unwraps `$query`.
    pub fn from_op_query(query: OpQuery) -> Result<CommandRequest, OpError> {
        let Some(db) = query.full_collection_name.strip_suffix(".$cmd") else {
            return Err(OpError::NotSupported(format!(
                "OP_QUERY is no longer supported except for commands on db.$cmd, got {}",
                query.full_collection_name
            )));
        };
        let body = match query
            .query
            .get("$query")
            .or_else(|| query.query.get("query"))
        {
            Some(Bson::Document(inner)) => inner.clone(),
            _ => query.query,
        };
        CommandRequest::new(db.to_string(), body)
    }

    fn new(db: String, body: Document) -> Result<CommandRequest, OpError> {
        let name = match body.keys().next() {
            Some(name) => name.clone(),
            None => return Err(OpError::FailedToParse("empty command document".into())),
        };
        Ok(CommandRequest { name, db, body })
    }

    /// The value of the command's first key (`{find: "coll"}` → "coll").
    pub fn target(&self) -> &Bson {
        self.body.get(&self.name).unwrap_or(&Bson::Null)
    }

    /// The collection named by the first key, which must be a string.
    pub fn collection(&self) -> Result<&str, OpError> {
        match self.target() {
            Bson::String(name) => Ok(name),
            other => Err(OpError::InvalidNamespace(format!(
                "collection name has invalid type {}",
                type_name(other)
            ))),
        }
    }
}

/// MongoDB's name for a value's type, for error messages.
pub fn type_name(value: &Bson) -> &'static str {
    crate::query::bson_type_name(value)
}

/// MongoDB's error for an argument of the wrong type.
pub(super) fn wrong_type(field: &str, expected: &str, got: &Bson) -> OpError {
    OpError::TypeMismatch(format!(
        "BSON field '{field}' is the wrong type '{}', expected type '{expected}'",
        type_name(got)
    ))
}

/// An optional sub-document argument (null counts as absent).
pub fn opt_document<'a>(body: &'a Document, field: &str) -> Result<Option<&'a Document>, OpError> {
    match body.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Document(d)) => Ok(Some(d)),
        Some(other) => Err(wrong_type(field, "object", other)),
    }
}

/// An optional array argument.
pub fn opt_array<'a>(body: &'a Document, field: &str) -> Result<Option<&'a Vec<Bson>>, OpError> {
    match body.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Array(a)) => Ok(Some(a)),
        Some(other) => Err(wrong_type(field, "array", other)),
    }
}

/// An optional string argument.
pub fn opt_str<'a>(body: &'a Document, field: &str) -> Result<Option<&'a str>, OpError> {
    match body.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::String(s)) => Ok(Some(s)),
        Some(other) => Err(wrong_type(field, "string", other)),
    }
}

/// An optional boolean argument; numbers count as booleans, as in MongoDB.
pub fn opt_bool(body: &Document, field: &str) -> Result<Option<bool>, OpError> {
    match body.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(value) => as_bool(value)
            .map(Some)
            .ok_or_else(|| wrong_type(field, "bool", value)),
    }
}

/// A boolean, or a number standing for one (non-zero is true), as MongoDB reads flags.
pub fn as_bool(value: &Bson) -> Option<bool> {
    match value {
        Bson::Boolean(b) => Some(*b),
        Bson::Int32(n) => Some(*n != 0),
        Bson::Int64(n) => Some(*n != 0),
        Bson::Double(n) => Some(*n != 0.0),
        _ => None,
    }
}

/// An optional integral argument from any numeric type (doubles must be integral).
pub fn opt_i64(body: &Document, field: &str) -> Result<Option<i64>, OpError> {
    match body.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(value) => as_i64(value)
            .map(Some)
            .ok_or_else(|| wrong_type(field, "long", value)),
    }
}

/// An integral number of any BSON numeric type.
pub fn as_i64(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        Bson::Double(n) if n.fract() == 0.0 && n.abs() < 9.2e18 => Some(*n as i64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;
    use docgate_wire::{DocumentSequence, MsgFlags};

    #[test]
    fn sequences_merge_into_the_body() {
        let msg = OpMsg {
            flags: MsgFlags::default(),
            body: doc! {"insert": "c", "$db": "d"},
            sequences: vec![DocumentSequence {
                identifier: "documents".into(),
                documents: vec![doc! {"a": 1}, doc! {"a": 2}],
            }],
        };
        let request = CommandRequest::from_op_msg(msg).unwrap();
        assert_eq!(request.name, "insert");
        assert_eq!(request.db, "d");
        assert_eq!(request.body.get_array("documents").unwrap().len(), 2);
    }

    #[test]
    fn missing_db_is_an_error() {
        let msg = OpMsg::reply(doc! {"ping": 1});
        assert_eq!(CommandRequest::from_op_msg(msg).unwrap_err().code(), 9);
    }

    #[test]
    fn legacy_query_unwraps_dollar_query() {
        let query = OpQuery {
            flags: 0,
            full_collection_name: "admin.$cmd".into(),
            number_to_skip: 0,
            number_to_return: -1,
            query: doc! {"$query": {"isMaster": 1}, "$readPreference": {"mode": "primary"}},
            return_fields_selector: None,
        };
        let request = CommandRequest::from_op_query(query).unwrap();
        assert_eq!(
            (request.name.as_str(), request.db.as_str()),
            ("isMaster", "admin")
        );
    }

    #[test]
    fn numbers_are_booleans_and_counts() {
        let body = doc! {"a": 1, "b": 2.0, "c": "x"};
        assert_eq!(opt_bool(&body, "a").unwrap(), Some(true));
        assert_eq!(opt_i64(&body, "b").unwrap(), Some(2));
        assert_eq!(opt_i64(&body, "c").unwrap_err().code(), 14);
        assert_eq!(opt_i64(&body, "missing").unwrap(), None);
    }
}
