//! A REST module as stored: ONE JSON document per module (metadata record kind
//! `rest_module`, keyed by database and module name) holding its templates, their handlers and
//! the privileges that protect them —
//!
//! ```json
//! {"name": "concert", "base_path": "/concert/authuser/v1/", "items_per_page": 25,
//!  "status": "published",
//!  "templates": [{"uri_template": "events/:id",
//!                 "handlers": [{"method": "GET", "source_type": "collection_item",
//!                               "source": "events"}]}],
//!  "privileges": [{"name": "concert_priv", "roles": ["concert_user"],
//!                  "patterns": ["/events/*"]}]}
//! ```
//!
//! This file parses and checks a definition and matches request paths against it: base path
//! (a prefix of the path after `/ords/{db}`), URI template (segments, `:name` binds one
//! non-empty segment; a trailing `/` is not significant) and privilege patterns (relative to
//! the base path; `*` matches any run of characters, `/` included).
//!
//! Not for: running handlers (`sources`) or checking credentials (`security`).

use std::collections::HashMap;

use bson::{Bson, Document};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::bind_sites::{self, BindResolver};
use crate::rest::error::{RestError, RestResult};
use crate::rest::extjson::to_document;

/// Metadata record kind of REST modules.
pub const MODULE_KIND: &str = "rest_module";

/// Whether a module is served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModuleStatus {
    #[default]
    Published,
    Unpublished,
}

/// How a handler produces its answer (see `sources`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceType {
    CollectionFeed,
    CollectionItem,
    Query,
    Dml,
    Pipeline,
}

/// One handler: a method on a template.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandlerDefinition {
    pub method: String,
    pub source_type: SourceType,
    /// A collection name, or the JSON spec (as a string or an object) of the source type.
    pub source: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_per_page: Option<u64>,
    /// `source` parsed once, when the module is parsed.
    #[serde(skip)]
    pub compiled: CompiledSource,
}

/// A handler's source as it runs: the collection (always a literal) and the rest of the
/// spec as BSON, its `":name"` placeholders still in place, checked to stand only where
/// `bind_sites` allows one.
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledSource {
    pub source_type: SourceType,
    pub collection: String,
    pub spec: Document,
    /// Whether `spec` has placeholders to bind (without, it is used as it is).
    pub has_placeholders: bool,
}

impl Default for CompiledSource {
    fn default() -> Self {
        CompiledSource {
            source_type: SourceType::CollectionFeed,
            collection: String::new(),
            spec: Document::new(),
            has_placeholders: false,
        }
    }
}

/// The fields a source type's spec may have besides `collection` (anything else is refused,
/// never ignored).
fn spec_fields(source_type: SourceType) -> &'static [&'static str] {
    match source_type {
        SourceType::CollectionFeed => &["filter", "sort"],
        SourceType::CollectionItem => &[],
        SourceType::Query => &["filter", "sort", "projection"],
        SourceType::Dml => &["insert", "update", "delete"],
        SourceType::Pipeline => &["pipeline"],
    }
}

impl CompiledSource {
    /// Whether the source is a pipeline ending in `$out` or `$merge` (it writes).
    pub fn writes_output(&self) -> bool {
        self.source_type == SourceType::Pipeline
            && matches!(
                self.spec.get("pipeline"),
                Some(Bson::Array(stages)) if stages.last().and_then(Bson::as_document).is_some_and(
                    |stage| stage.contains_key("$out") || stage.contains_key("$merge")
                )
            )
    }

    /// Parses a handler's source: a collection name, or a JSON spec (text or object, Extended
    /// JSON allowed) with a literal `"collection"` and the fields of its source type.
    fn compile(source_type: SourceType, source: &Value) -> RestResult<CompiledSource> {
        let bad = |why: String| RestError::BadRequest(format!("invalid handler source: {why}"));
        let value = match source {
            Value::String(text) if text.trim_start().starts_with('{') => {
                serde_json::from_str(text).map_err(|e| bad(e.to_string()))?
            }
            Value::String(name) => serde_json::json!({"collection": name}),
            Value::Object(_) => source.clone(),
            _ => return Err(bad("a collection name or a JSON object".into())),
        };
        let mut spec = to_document(value, "the handler source")?;
        let collection = match spec.remove("collection") {
            Some(Bson::String(name)) if !name.starts_with(':') && !name.is_empty() => name,
            _ => return Err(bad("it needs a literal \"collection\" name".into())),
        };
        let allowed = spec_fields(source_type);
        if let Some(field) = spec.keys().find(|key| !allowed.contains(&key.as_str())) {
            return Err(bad(format!(
                "{field:?} is not a field of a {source_type:?} source (it takes {allowed:?})"
            )));
        }
        if source_type == SourceType::Dml && spec.len() != 1 {
            return Err(bad(
                "a dml source needs exactly one of insert, update or delete".into(),
            ));
        }
        let has_placeholders = bind_sites::has_placeholders(&Bson::Document(spec.clone()));
        let compiled = CompiledSource {
            source_type,
            collection,
            spec,
            has_placeholders,
        };
        // Every placeholder must stand where a value may: checked now, not on a request.
        compiled.bind(&bind_sites::DefinitionCheck)?;
        Ok(compiled)
    }

    /// The spec with the request's values bound at their sites.
    pub fn bind(&self, binds: &dyn BindResolver) -> RestResult<Document> {
        let mut bound = Document::new();
        for (field, value) in &self.spec {
            let value = match (field.as_str(), value) {
                ("filter" | "delete", Bson::Document(filter)) => {
                    Bson::Document(bind_sites::bind_filter(filter, binds)?)
                }
                ("sort", Bson::Document(sort)) => {
                    Bson::Document(bind_sites::bind_sort(sort, binds)?)
                }
                ("projection", projection) => bind_sites::bind_expression(projection, binds)?,
                ("insert", documents) => bind_sites::bind_value(documents, binds)?,
                ("update", Bson::Document(update)) => {
                    Bson::Document(bind_dml_update(update, binds)?)
                }
                ("pipeline", pipeline) => bind_sites::bind_pipeline(pipeline, binds)?,
                (field, other) => {
                    bind_sites::no_placeholder(other, field)?;
                    other.clone()
                }
            };
            bound.insert(field.clone(), value);
        }
        Ok(bound)
    }
}

/// A dml `update`: `{filter, update, upsert}` — a filter, an update, a literal flag.
fn bind_dml_update(update: &Document, binds: &dyn BindResolver) -> RestResult<Document> {
    let mut bound = Document::new();
    for (field, value) in update {
        let value = match (field.as_str(), value) {
            ("filter", Bson::Document(filter)) => {
                Bson::Document(bind_sites::bind_filter(filter, binds)?)
            }
            ("update", update) => bind_sites::bind_update(update, binds)?,
            ("upsert", upsert) => {
                bind_sites::no_placeholder(upsert, "update.upsert")?;
                upsert.clone()
            }
            (other, _) => {
                return Err(RestError::BadRequest(format!(
                    "invalid handler source: update.{other} is not a field of a dml update (it takes filter, update, upsert)"
                )))
            }
        };
        bound.insert(field.clone(), value);
    }
    Ok(bound)
}

/// A URI template and its handlers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateDefinition {
    pub uri_template: String,
    #[serde(default)]
    pub handlers: Vec<HandlerDefinition>,
}

/// Roles that protect URI patterns of the module.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivilegeDefinition {
    pub name: String,
    #[serde(default)]
    pub roles: Vec<String>,
    #[serde(default)]
    pub patterns: Vec<String>,
}

/// A whole module.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleDefinition {
    pub name: String,
    pub base_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_per_page: Option<u64>,
    #[serde(default)]
    pub status: ModuleStatus,
    #[serde(default)]
    pub templates: Vec<TemplateDefinition>,
    #[serde(default)]
    pub privileges: Vec<PrivilegeDefinition>,
}

/// Methods a handler may answer.
const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE"];

impl ModuleDefinition {
    /// Parses and checks a definition; `name` (from the URL or the file) must agree with
    /// the body's `name` when the body has one. The base path is normalized to `/a/b/`.
    pub fn parse(mut body: Value, name: Option<&str>) -> RestResult<ModuleDefinition> {
        if let (Some(name), Value::Object(map)) = (name, &mut body) {
            map.entry("name")
                .or_insert_with(|| Value::String(name.to_string()));
        }
        let mut module: ModuleDefinition = serde_json::from_value(body)
            .map_err(|e| RestError::BadRequest(format!("invalid module definition: {e}")))?;
        if let Some(name) = name {
            if module.name != name {
                return Err(RestError::BadRequest(format!(
                    "the module is named {:?} in its body and {name:?} in the URL",
                    module.name
                )));
            }
        }
        if module.name.is_empty() {
            return Err(RestError::BadRequest("a module needs a name".into()));
        }
        module.base_path = normalize_base_path(&module.base_path);
        if module.base_path == "/" || module.base_path.starts_with("/_/") {
            return Err(RestError::BadRequest(format!(
                "base_path {:?} is reserved: use e.g. /app/v1/",
                module.base_path
            )));
        }
        for template in &mut module.templates {
            template.uri_template = template.uri_template.trim_start_matches('/').to_string();
            for handler in &mut template.handlers {
                handler.method = handler.method.to_ascii_uppercase();
                handler.compiled = CompiledSource::compile(handler.source_type, &handler.source)?;
                if !METHODS.contains(&handler.method.as_str()) {
                    return Err(RestError::BadRequest(format!(
                        "handler method {:?} of template {:?} is not one of {METHODS:?}",
                        handler.method, template.uri_template
                    )));
                }
            }
        }
        Ok(module)
    }

    /// Whether it is served.
    pub fn is_published(&self) -> bool {
        self.status == ModuleStatus::Published
    }

    /// The path below the base path when `path` (after `/ords/{db}`) is inside this module.
    pub fn relative_path<'p>(&self, path: &'p str) -> Option<&'p str> {
        let base = self.base_path.trim_end_matches('/');
        let rest = path.strip_prefix(base)?;
        match rest {
            "" => Some(""),
            _ => rest.strip_prefix('/'),
        }
    }

    /// The template `relative` matches and the values of its `:name` segments. A template
    /// without binds wins over one with binds.
    pub fn match_template(
        &self,
        relative: &str,
    ) -> Option<(&TemplateDefinition, HashMap<String, String>)> {
        let mut best: Option<(&TemplateDefinition, HashMap<String, String>)> = None;
        for template in &self.templates {
            if let Some(binds) = match_segments(&template.uri_template, relative) {
                let better = best
                    .as_ref()
                    .is_none_or(|(_, found)| binds.len() < found.len());
                if better {
                    best = Some((template, binds));
                }
            }
        }
        best
    }

    /// The privileges whose patterns cover `relative`.
    pub fn privileges_for<'a>(
        &'a self,
        relative: &'a str,
    ) -> impl Iterator<Item = &'a PrivilegeDefinition> + 'a {
        let path = format!("/{relative}");
        self.privileges.iter().filter(move |privilege| {
            privilege
                .patterns
                .iter()
                .any(|pattern| glob_matches(pattern, &path))
        })
    }
}

/// `a/b` or `/a/b` → `/a/b/`.
fn normalize_base_path(path: &str) -> String {
    let trimmed = path.trim().trim_matches('/');
    if trimmed.is_empty() {
        "/".to_string()
    } else {
        format!("/{trimmed}/")
    }
}

/// Matches path segments against template segments (`:name` binds one non-empty segment).
fn match_segments(template: &str, path: &str) -> Option<HashMap<String, String>> {
    let template = template.trim_end_matches('/');
    let path = path.trim_end_matches('/');
    let template_segments: Vec<&str> = if template.is_empty() {
        Vec::new()
    } else {
        template.split('/').collect()
    };
    let path_segments: Vec<&str> = if path.is_empty() {
        Vec::new()
    } else {
        path.split('/').collect()
    };
    if template_segments.len() != path_segments.len() {
        return None;
    }
    let mut binds = HashMap::new();
    for (expected, actual) in template_segments.iter().zip(&path_segments) {
        match expected.strip_prefix(':') {
            Some(name) if !actual.is_empty() => {
                binds.insert(name.to_string(), percent_decode(actual));
            }
            Some(_) => return None,
            None if expected == actual => {}
            None => return None,
        }
    }
    Some(binds)
}

/// Decodes `%XX` escapes of a path segment (invalid escapes stay as they are).
fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = (bytes[i] == b'%')
            .then(|| segment.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match decoded {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `*` matches any run of characters; everything else matches itself.
fn glob_matches(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == text;
    };
    if parts.len() == 1 {
        return pattern == text;
    }
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn concert() -> ModuleDefinition {
        ModuleDefinition::parse(
            json!({
                "name": "concert", "base_path": "concert/authuser/v1",
                "templates": [
                    {"uri_template": "events/", "handlers": [{"method": "get", "source_type": "collection_feed", "source": "events"}]},
                    {"uri_template": "events/:id", "handlers": [{"method": "GET", "source_type": "collection_item", "source": "events"}]},
                    {"uri_template": "events/latest", "handlers": [{"method": "GET", "source_type": "query", "source": "{\"collection\": \"events\", \"sort\": {\"date\": -1}}"}]}
                ],
                "privileges": [{"name": "p", "roles": ["concert_user"], "patterns": ["/events/*"]}]
            }),
            Some("concert"),
        )
        .unwrap()
    }

    #[test]
    fn paths_match_base_templates_and_binds() {
        let module = concert();
        assert_eq!(module.base_path, "/concert/authuser/v1/");
        assert_eq!(
            module.relative_path("/concert/authuser/v1/events/7"),
            Some("events/7")
        );
        assert_eq!(module.relative_path("/concert/authuser/v10/events"), None);
        let (template, binds) = module.match_template("events/7").unwrap();
        assert_eq!(template.uri_template, "events/:id");
        assert_eq!(binds.get("id").map(String::as_str), Some("7"));
        assert_eq!(
            module.match_template("events").unwrap().0.uri_template,
            "events/"
        );
        assert_eq!(
            module
                .match_template("events/latest")
                .unwrap()
                .0
                .uri_template,
            "events/latest"
        );
        assert!(module.match_template("venues/1").is_none());
        assert_eq!(module.templates[0].handlers[0].method, "GET");
        let latest = &module.templates[2].handlers[0].compiled;
        assert_eq!(latest.collection, "events");
        assert_eq!(latest.spec, bson::doc! {"sort": {"date": -1}});
    }

    #[test]
    fn privilege_patterns_are_globs_relative_to_the_base() {
        let module = concert();
        assert_eq!(module.privileges_for("events/7").count(), 1);
        assert_eq!(module.privileges_for("events/").count(), 1);
        assert_eq!(module.privileges_for("venues/1").count(), 0);
        assert!(glob_matches("/a/*/c", "/a/b/c"));
        assert!(!glob_matches("/a/*/c", "/a/b/d"));
        assert!(glob_matches("*", "/anything"));
    }

    #[test]
    fn bad_definitions_are_refused() {
        assert!(
            ModuleDefinition::parse(json!({"base_path": "/x/"}), Some("other"))
                .map(|m| m.name == "other")
                .unwrap()
        );
        assert!(
            ModuleDefinition::parse(json!({"name": "a", "base_path": "/x/"}), Some("b")).is_err()
        );
        assert!(ModuleDefinition::parse(json!({"name": "a", "base_path": "/"}), None).is_err());
        assert!(ModuleDefinition::parse(
            json!({"name": "a", "base_path": "/x/", "templates": [{"uri_template": "t", "handlers": [{"method": "TRACE", "source_type": "query", "source": "{}"}]}]}),
            None
        )
        .is_err());
        assert!(ModuleDefinition::parse(
            json!({"name": "a", "base_path": "/x/", "extra": 1}),
            None
        )
        .is_err());
        let bad_source = |source: Value| {
            ModuleDefinition::parse(
                json!({"name": "a", "base_path": "/x/", "templates": [{"uri_template": "t", "handlers": [
                    {"method": "GET", "source_type": "query", "source": source}]}]}),
                None,
            )
            .is_err()
        };
        assert!(bad_source(json!("{not json")));
        assert!(bad_source(json!({"collection": ":coll"})));
        assert!(bad_source(json!({"filter": {}})));
        assert!(bad_source(json!(5)));
    }
}
