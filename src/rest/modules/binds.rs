//! Bind variables of metadata-defined handlers. A handler's source is a MongoDB spec (JSON)
//! in which a string value that is exactly `":name"` is a placeholder; before the spec is
//! parsed, each placeholder is replaced by the typed BSON value bound to `name`. Values are
//! therefore always bound into the parsed filter, update or pipeline — never spliced into
//! any text, and the store binds them into SQL as it binds every other value.
//!
//! Where values come from, first source wins:
//! 1. `:current_user` — the authenticated caller's name (null when anonymous); a client
//!    cannot override it;
//! 2. the URI template's `:name` segments;
//! 3. the query string;
//! 4. the JSON body's top-level fields (Extended JSON), and `:body` for the whole body.
//!
//! Segment and query-string text that is a JSON number, `true`, `false` or `null` is bound
//! with that type (`?year=2026` binds the integer 2026), anything else as a string. A bound
//! value may not be a document with `$`-prefixed keys, so a client cannot turn an equality
//! into an operator (`{"$ne": null}`) by sending one.
//!
//! Not for: deciding which handler runs (`dispatch`).

use std::collections::HashMap;

use bson::{Bson, Document};

use crate::rest::error::{RestError, RestResult};

/// The bind name whose value is the caller's user name.
pub const CURRENT_USER: &str = "current_user";
/// The bind name whose value is the whole JSON body.
pub const BODY: &str = "body";

/// Bind values by name.
#[derive(Debug, Default)]
pub struct Binds {
    values: HashMap<String, Bson>,
}

impl Binds {
    /// Binds from every source, with the precedence of the module comment.
    pub fn collect(
        current_user: Option<&str>,
        template: &HashMap<String, String>,
        query: &HashMap<String, String>,
        body: Option<&Bson>,
    ) -> RestResult<Binds> {
        let mut values = HashMap::new();
        values.insert(
            CURRENT_USER.to_string(),
            current_user.map_or(Bson::Null, |name| Bson::String(name.to_string())),
        );
        for (name, text) in template.iter().chain(query) {
            values
                .entry(name.clone())
                .or_insert_with(|| typed_text(text));
        }
        if let Some(body) = body {
            if let Bson::Document(fields) = body {
                for (name, value) in fields {
                    if !values.contains_key(name) {
                        check_value(name, value)?;
                        values.insert(name.clone(), value.clone());
                    }
                }
            }
            if !values.contains_key(BODY) {
                check_value(BODY, body)?;
                values.insert(BODY.to_string(), body.clone());
            }
        }
        Ok(Binds { values })
    }

    /// The value bound to `name`.
    pub fn get(&self, name: &str) -> Option<&Bson> {
        self.values.get(name)
    }

    /// A document with every placeholder replaced.
    pub fn substitute_document(&self, spec: &Document) -> RestResult<Document> {
        let mut out = Document::new();
        for (key, value) in spec {
            out.insert(key.clone(), self.substitute(value)?);
        }
        Ok(out)
    }

    /// `spec` with every placeholder replaced; an unbound placeholder is a 400.
    pub fn substitute(&self, spec: &Bson) -> RestResult<Bson> {
        match spec {
            Bson::String(text) => match placeholder(text) {
                Some(name) => self.values.get(name).cloned().ok_or_else(|| {
                    RestError::BadRequest(format!("no value for the bind variable :{name}"))
                }),
                None => Ok(spec.clone()),
            },
            Bson::Document(document) => Ok(Bson::Document(self.substitute_document(document)?)),
            Bson::Array(items) => Ok(Bson::Array(
                items
                    .iter()
                    .map(|item| self.substitute(item))
                    .collect::<RestResult<_>>()?,
            )),
            other => Ok(other.clone()),
        }
    }
}

/// Whether `spec` holds any `":name"` placeholder (a spec without one is used as it is).
pub fn has_placeholders(spec: &Document) -> bool {
    spec.values().any(value_has_placeholders)
}

fn value_has_placeholders(value: &Bson) -> bool {
    match value {
        Bson::String(text) => placeholder(text).is_some(),
        Bson::Document(document) => has_placeholders(document),
        Bson::Array(items) => items.iter().any(value_has_placeholders),
        _ => false,
    }
}

/// `":name"` → `name`, for identifiers only.
fn placeholder(text: &str) -> Option<&str> {
    let name = text.strip_prefix(':')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(name)
}

/// Text from a URI or query string, typed when it is a JSON scalar.
fn typed_text(text: &str) -> Bson {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Number(n)) => match n.as_i64() {
            Some(i) => match i32::try_from(i) {
                Ok(small) => Bson::Int32(small),
                Err(_) => Bson::Int64(i),
            },
            None => n
                .as_f64()
                .map_or_else(|| Bson::String(text.into()), Bson::Double),
        },
        Ok(serde_json::Value::Bool(b)) => Bson::Boolean(b),
        Ok(serde_json::Value::Null) => Bson::Null,
        _ => Bson::String(text.to_string()),
    }
}

/// Refuses values that would read as query operators.
fn check_value(name: &str, value: &Bson) -> RestResult<()> {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Bson::Document(document) => {
                if document.keys().any(|key| key.starts_with('$')) {
                    return Err(RestError::BadRequest(format!(
                        "the value of :{name} may not contain $-prefixed field names"
                    )));
                }
                stack.extend(document.values());
            }
            Bson::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn placeholders_take_typed_values_with_precedence() {
        let body = Bson::Document(doc! {"venue": "hall", "id": "from-body"});
        let binds = Binds::collect(
            Some("ada"),
            &map(&[("id", "7")]),
            &map(&[
                ("year", "2026"),
                ("current_user", "mallory"),
                ("city", "007"),
            ]),
            Some(&body),
        )
        .unwrap();
        let spec = Bson::Document(doc! {
            "filter": {"id": ":id", "year": ":year", "who": ":current_user", "venue": ":venue",
                       "city": ":city", "text": "a :literal inside", "list": [":id"]}
        });
        assert_eq!(
            binds.substitute(&spec).unwrap(),
            Bson::Document(doc! {
                "filter": {"id": 7, "year": 2026, "who": "ada", "venue": "hall",
                           "city": "007", "text": "a :literal inside", "list": [7]}
            })
        );
        assert!(binds.substitute(&Bson::String(":missing".into())).is_err());
    }

    #[test]
    fn operator_values_are_refused() {
        let body = Bson::Document(doc! {"venue": {"$ne": null}});
        assert!(Binds::collect(None, &HashMap::new(), &HashMap::new(), Some(&body)).is_err());
        let nested = Bson::Document(doc! {"venue": [{"a": {"$gt": 1}}]});
        assert!(Binds::collect(None, &HashMap::new(), &HashMap::new(), Some(&nested)).is_err());
    }
}
