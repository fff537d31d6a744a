//! Bind variables of metadata-defined handlers: the values a request brings, by name. A
//! handler's source is a MongoDB spec (JSON) in which a string value that is exactly
//! `":name"` is a placeholder; `bind_sites` decides what the value becomes where the
//! placeholder stands (an equality in a filter, a `$literal` in an expression, …), so values
//! are always bound into the parsed filter, update or pipeline — never spliced into any
//! text, never read as an operator, a field path or a variable.
//!
//! Where values come from, first source wins:
//! 1. `:current_user` — the authenticated caller's name (null when anonymous); a client
//!    cannot override it;
//! 2. the URI template's `:name` segments;
//! 3. the query string;
//! 4. the JSON body's top-level fields (Extended JSON), and `:body` for the whole body.
//!
//! Segment and query-string text that is a JSON number, `true`, `false` or `null` is bound
//! with that type (`?year=2026` binds the integer 2026), anything else as a string. A body
//! value is one of the plain data types (string, number, boolean, null, ObjectId, date,
//! binary, and documents and arrays of those without `$`-prefixed keys); a regular
//! expression, JavaScript, `MinKey`/`MaxKey` and the deprecated types are refused (400).
//!
//! Not for: deciding which handler runs (`dispatch`) or where placeholders may stand
//! (`bind_sites`).

use std::collections::HashMap;

use bson::Bson;

use super::bind_sites::{BindResolver, BindSite};
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
}

impl BindResolver for Binds {
    /// The value bound to `name`; an unbound placeholder is a 400.
    fn resolve(&self, name: &str, _site: BindSite) -> RestResult<Bson> {
        self.values
            .get(name)
            .cloned()
            .ok_or_else(|| RestError::BadRequest(format!("no value for the bind variable :{name}")))
    }
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

/// Refuses values a bind may not carry: a document with `$`-prefixed keys (it would read as
/// operators), and the types that are not plain data — regular expressions (an equality on
/// one is a pattern match), JavaScript, `MinKey`/`MaxKey` (they bracket every type, so a
/// range on one selects everything), symbols, DBPointers, `undefined` and timestamps.
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
            Bson::String(_)
            | Bson::Int32(_)
            | Bson::Int64(_)
            | Bson::Double(_)
            | Bson::Decimal128(_)
            | Bson::Boolean(_)
            | Bson::Null
            | Bson::ObjectId(_)
            | Bson::DateTime(_)
            | Bson::Binary(_) => {}
            other => {
                return Err(RestError::BadRequest(format!(
                    "the value of :{name} may not be of type {}: a bind carries a string, number, boolean, null, ObjectId, date, binary, or a document or array of those",
                    crate::query::bson_type_name(other)
                )))
            }
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
    fn values_take_types_and_precedence() {
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
        let resolve = |name| binds.resolve(name, BindSite::Value);
        assert_eq!(resolve("id").unwrap(), Bson::Int32(7));
        assert_eq!(resolve("year").unwrap(), Bson::Int32(2026));
        assert_eq!(resolve("current_user").unwrap(), Bson::String("ada".into()));
        assert_eq!(resolve("venue").unwrap(), Bson::String("hall".into()));
        assert_eq!(resolve("city").unwrap(), Bson::String("007".into()));
        assert!(resolve("missing").is_err());
    }

    #[test]
    fn operator_values_and_non_data_types_are_refused() {
        let refused = [
            doc! {"venue": {"$ne": null}},
            doc! {"venue": [{"a": {"$gt": 1}}]},
            doc! {"name": bson::Regex { pattern: ".".try_into().unwrap(), options: "".try_into().unwrap() }},
            doc! {"name": [Bson::MinKey]},
            doc! {"name": {"deep": Bson::JavaScriptCode("1".into())}},
        ];
        for body in refused {
            let body = Bson::Document(body);
            assert!(
                Binds::collect(None, &HashMap::new(), &HashMap::new(), Some(&body)).is_err(),
                "{body}"
            );
        }
    }
}
