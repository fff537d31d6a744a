//! Documents over HTTP: request bodies and `q=` parameters are parsed as MongoDB Extended
//! JSON (canonical or relaxed: `{"$oid": …}`, `{"$date": …}`, `{"$numberLong": …}`), and
//! documents go out as relaxed Extended JSON with their key order kept.
//!
//! A document's id in a URL path (`/{coll}/{id}`) is the ObjectId's 24 hex digits when the
//! segment parses as one, and the string itself otherwise; ids of other types are reached
//! with a filter (`q={"_id":5}`).
//!
//! Not for: deciding what a request means (the handlers do).

use bson::oid::ObjectId;
use bson::raw::{RawBsonRef, RawDocument, RawDocumentBuf};
use bson::{Bson, Document};
use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::error::{RestError, RestResult};
use super::RestState;

/// Parses a request body as JSON; an empty body is `default`. A body nesting objects and
/// arrays deeper than `--rest-max-json-depth` is refused before it is parsed.
pub fn parse_body(state: &RestState, body: &[u8], default: Value) -> RestResult<Value> {
    let max = state.limits.max_json_depth;
    if json_depth_exceeds(body, max) {
        state
            .metrics
            .limit_hit(crate::metrics::LimitHit::RestJsonDepth);
        return Err(RestError::BadRequest(format!(
            "request body nests objects and arrays deeper than {max} levels (--rest-max-json-depth)"
        )));
    }
    parse_json(body, default)
}

/// Parses a body as JSON without the depth limit's check (the fuzz targets call it); an
/// empty body is `default`.
pub fn parse_json(body: &[u8], default: Value) -> RestResult<Value> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(default);
    }
    serde_json::from_slice(body)
        .map_err(|e| RestError::BadRequest(format!("request body is not valid JSON: {e}")))
}

/// Whether the JSON text opens more than `max` objects and arrays inside one another
/// (brackets inside strings do not count). Malformed text is left to the parser.
fn json_depth_exceeds(text: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in text {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// A JSON object (Extended JSON) as a BSON document; `what` names it in errors.
pub fn to_document(value: Value, what: &str) -> RestResult<Document> {
    match value {
        Value::Object(map) => Document::try_from(map)
            .map_err(|e| RestError::BadRequest(format!("{what} is not valid Extended JSON: {e}"))),
        other => Err(RestError::BadRequest(format!(
            "{what} must be a JSON object, not {}",
            json_type(&other)
        ))),
    }
}

/// A JSON value (Extended JSON) as a BSON value.
pub fn to_bson(value: Value, what: &str) -> RestResult<Bson> {
    Bson::try_from(value)
        .map_err(|e| RestError::BadRequest(format!("{what} is not valid Extended JSON: {e}")))
}

/// A JSON array of objects as documents.
pub fn to_documents(value: Value, what: &str) -> RestResult<Vec<Document>> {
    match value {
        Value::Array(items) => items
            .into_iter()
            .map(|item| to_document(item, what))
            .collect(),
        other => Err(RestError::BadRequest(format!(
            "{what} must be a JSON array of objects, not {}",
            json_type(&other)
        ))),
    }
}

/// A JSON text parameter (such as `q=`) as a document; empty text is the empty document.
pub fn parse_document_text(text: &str, what: &str) -> RestResult<Document> {
    if text.trim().is_empty() {
        return Ok(Document::new());
    }
    let value: Value = serde_json::from_str(text)
        .map_err(|e| RestError::BadRequest(format!("{what} is not valid JSON: {e}")))?;
    to_document(value, what)
}

/// A document that serializes as relaxed Extended JSON, through the same writer as
/// [`RelaxedRaw`] (the document is encoded to BSON bytes first, which costs less than a
/// second writer would to keep in step).
#[derive(Debug)]
pub struct RelaxedDocument(pub Document);

impl Serialize for RelaxedDocument {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw = RawDocumentBuf::try_from(&self.0).map_err(S::Error::custom)?;
        serialize_raw_fields(&raw, serializer)
    }
}

/// A stored document, still in its BSON bytes, that serializes as relaxed Extended JSON
/// while walking the bytes, so a page of documents read only to be sent is never decoded
/// into maps. The text is `Bson::into_relaxed_extjson`'s: the types JSON has (strings,
/// numbers, booleans, null, objects, arrays) and dates are written directly, the others go
/// through `into_relaxed_extjson`, so they cannot differ. Dates differ in one case, on
/// purpose: one after the year 9999 is written in canonical form (`{"$numberLong": …}`), as
/// the Extended JSON specification says, where `into_relaxed_extjson` would clamp it to
/// 9999-12-31 and lose it.
#[derive(Debug)]
pub struct RelaxedRaw(pub RawDocumentBuf);

impl Serialize for RelaxedRaw {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_raw_fields(&self.0, serializer)
    }
}

/// One BSON value, still in its bytes, written as relaxed Extended JSON.
struct RelaxedRawValue<'a>(RawBsonRef<'a>);

impl Serialize for RelaxedRawValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            RawBsonRef::Double(number) if number.is_finite() => serializer.serialize_f64(number),
            RawBsonRef::String(text) => serializer.serialize_str(text),
            RawBsonRef::Document(document) => serialize_raw_fields(document, serializer),
            RawBsonRef::Array(items) => {
                let mut seq = serializer.serialize_seq(None)?;
                for item in items {
                    seq.serialize_element(&RelaxedRawValue(item.map_err(S::Error::custom)?))?;
                }
                seq.end()
            }
            RawBsonRef::Boolean(flag) => serializer.serialize_bool(flag),
            RawBsonRef::Null => serializer.serialize_unit(),
            RawBsonRef::Int32(number) => serializer.serialize_i32(number),
            RawBsonRef::Int64(number) => serializer.serialize_i64(number),
            RawBsonRef::DateTime(date) => serialize_date(date, serializer),
            other => Bson::try_from(other)
                .map_err(S::Error::custom)?
                .into_relaxed_extjson()
                .serialize(serializer),
        }
    }
}

/// The first instant relaxed Extended JSON no longer writes as an ISO-8601 string
/// (10000-01-01T00:00:00Z), in milliseconds since the epoch.
const YEAR_10000_MILLIS: i64 = 253_402_300_800_000;

/// A date as relaxed Extended JSON: `{"$date": "<ISO-8601>"}` from 1970 through 9999,
/// `{"$date": {"$numberLong": "<millis>"}}` otherwise.
fn serialize_date<S: Serializer>(date: bson::DateTime, serializer: S) -> Result<S::Ok, S::Error> {
    let millis = date.timestamp_millis();
    let mut map = serializer.serialize_map(Some(1))?;
    match date.try_to_rfc3339_string() {
        Ok(text) if (0..YEAR_10000_MILLIS).contains(&millis) => {
            map.serialize_entry("$date", &text)?;
        }
        _ => {
            let number_long = [("$numberLong", millis.to_string())];
            map.serialize_entry("$date", &std::collections::BTreeMap::from(number_long))?;
        }
    }
    map.end()
}

fn serialize_raw_fields<S: Serializer>(
    document: &RawDocument,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(None)?;
    for element in document {
        let (key, value) = element.map_err(S::Error::custom)?;
        map.serialize_entry(key.as_str(), &RelaxedRawValue(value))?;
    }
    map.end()
}

/// The `_id` a path segment names (see the module comment).
pub fn id_from_segment(segment: &str) -> Bson {
    match ObjectId::parse_str(segment) {
        Ok(oid) if segment.len() == 24 => Bson::ObjectId(oid),
        _ => Bson::String(segment.to_string()),
    }
}

/// Every `_id` a module's `:id` segment may name: the ObjectId when it is 24 hex digits,
/// the number when it is a JSON integer, and always the string itself.
pub fn id_candidates(segment: &str) -> Vec<Bson> {
    let mut candidates = Vec::with_capacity(2);
    if let Bson::ObjectId(oid) = id_from_segment(segment) {
        candidates.push(Bson::ObjectId(oid));
    }
    if let Ok(number) = segment.parse::<i64>() {
        if number.to_string() == segment {
            candidates.push(i32::try_from(number).map_or(Bson::Int64(number), Bson::Int32));
        }
    }
    candidates.push(Bson::String(segment.to_string()));
    candidates
}

/// The path segment that names `id`: ObjectId hex, the string itself, or the relaxed
/// Extended JSON text of other types (which no path segment parses back to).
pub fn id_to_segment(id: &Bson) -> String {
    match id {
        Bson::ObjectId(oid) => oid.to_hex(),
        Bson::String(text) => text.clone(),
        other => other.clone().into_relaxed_extjson().to_string(),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn json_depth_counts_brackets_outside_strings() {
        assert!(!json_depth_exceeds(br#"{"a":[{"b":1}]}"#, 3));
        assert!(json_depth_exceeds(br#"{"a":[{"b":[1]}]}"#, 3));
        assert!(!json_depth_exceeds(br#"{"a":"[[[[\"{{{{"}"#, 1));
        let deep = "[".repeat(101) + &"]".repeat(101);
        assert!(json_depth_exceeds(deep.as_bytes(), 100));
    }

    use super::*;

    /// Found by the `extended_json` fuzz target: a double in a request body is the double
    /// its shortest decimal text names (serde_json's fast float parser was 1 ulp off for
    /// some, so a value written by a client and read back differed).
    #[test]
    fn doubles_parse_to_the_double_their_text_names() {
        for (text, expected) in [
            ("1.5555555555555556e+41", 1.5555555555555556e41_f64),
            (
                "155555555555555555555555555555555555555555",
                1.5555555555555556e41_f64,
            ),
            ("2.2250738585072014e-308", 2.2250738585072014e-308_f64),
            ("0.30000000000000004", 0.30000000000000004_f64),
        ] {
            let document = parse_document_text(&format!("{{\"x\": {text}}}"), "q").unwrap();
            assert_eq!(
                document.get_f64("x").unwrap().to_bits(),
                expected.to_bits(),
                "{text}"
            );
            let written = serde_json::to_string(&RelaxedDocument(document)).unwrap();
            let again = parse_document_text(&written, "q").unwrap();
            assert_eq!(
                again.get_f64("x").unwrap().to_bits(),
                expected.to_bits(),
                "{written}"
            );
        }
    }

    #[test]
    fn ids_round_trip_through_path_segments() {
        let oid = ObjectId::new();
        assert_eq!(id_from_segment(&oid.to_hex()), Bson::ObjectId(oid));
        assert_eq!(id_to_segment(&Bson::ObjectId(oid)), oid.to_hex());
        assert_eq!(id_from_segment("alice"), Bson::String("alice".into()));
        assert_eq!(id_to_segment(&Bson::Int32(5)), "5");
        assert_eq!(
            id_candidates("5"),
            [Bson::Int32(5), Bson::String("5".into())]
        );
        assert_eq!(id_candidates("05"), [Bson::String("05".into())]);
    }

    #[test]
    fn relaxed_documents_and_their_bytes_serialize_like_their_json_values() {
        use bson::spec::BinarySubtype;
        use bson::{doc, Binary, DateTime, Decimal128, Regex, Timestamp};
        let document = doc! {
            "z": 1, "a": 2.5, "whole": 3.0, "negative_zero": -0.0, "nan": f64::NAN,
            "infinite": f64::NEG_INFINITY, "long": i64::MAX, "small": i32::MIN,
            "text": "quote \" and \u{e9} and \n", "flag": true, "nothing": Bson::Null,
            "nested": {"b": [1, "two", {"c": [] }], "empty": {}},
            "_id": ObjectId::parse_str("0123456789abcdef01234567").unwrap(),
            "when": DateTime::from_millis(1_700_000_000_123),
            "before_1970": DateTime::from_millis(-5),
            "last_of_9999": DateTime::from_millis(253_402_300_799_999),
            "epoch": DateTime::from_millis(0),
            "bytes": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] },
            "regex": Regex { pattern: "^a".try_into().unwrap(), options: "mi".try_into().unwrap() },
            "ts": Timestamp { time: 5, increment: 6 },
            "decimal": "1.5".parse::<Decimal128>().unwrap(),
            "max": Bson::MaxKey, "min": Bson::MinKey, "undefined": Bson::Undefined,
        };
        let direct = serde_json::to_string(&RelaxedDocument(document.clone())).unwrap();
        let raw = RawDocumentBuf::try_from(&document).unwrap();
        let from_bytes = serde_json::to_string(&RelaxedRaw(raw)).unwrap();
        let through_value =
            serde_json::to_string(&Bson::Document(document).into_relaxed_extjson()).unwrap();
        assert_eq!(direct, through_value);
        assert_eq!(from_bytes, through_value);
        assert!(direct.starts_with(r#"{"z":1,"a":2.5,"whole":3.0,"negative_zero":-0.0,"#));
    }

    /// Relaxed Extended JSON writes a date after 9999 in canonical form. (`bson`'s
    /// `into_relaxed_extjson` clamps such a date to the last instant of 9999 instead, so
    /// these documents do not go through it.)
    #[test]
    fn dates_after_9999_keep_their_exact_value() {
        use bson::DateTime;
        let late = DateTime::from_millis(YEAR_10000_MILLIS + 1_234);
        let document = bson::doc! {"late": late};
        let expected = r#"{"late":{"$date":{"$numberLong":"253402300801234"}}}"#;
        let raw = RawDocumentBuf::try_from(&document).unwrap();
        assert_eq!(serde_json::to_string(&RelaxedRaw(raw)).unwrap(), expected);
        let text = serde_json::to_string(&RelaxedDocument(document.clone())).unwrap();
        assert_eq!(text, expected);
        let back = to_document(serde_json::from_str(&text).unwrap(), "date").unwrap();
        assert_eq!(back, document);
    }

    #[test]
    fn extended_json_keeps_types_and_key_order() {
        let value: Value = serde_json::from_str(
            r#"{"z":1,"a":{"$numberLong":"7"},"_id":{"$oid":"0123456789abcdef01234567"}}"#,
        )
        .unwrap();
        let document = to_document(value, "body").unwrap();
        let keys: Vec<&str> = document.keys().map(String::as_str).collect();
        assert_eq!(keys, ["z", "a", "_id"]);
        assert_eq!(document.get("a"), Some(&Bson::Int64(7)));
        assert!(to_document(Value::Array(vec![]), "body").is_err());
    }
}
