//! `GET /ords/{db}/open-api-catalog/`: an OpenAPI 3.0 document describing the published REST
//! modules of the database — one path per URI template (`:name` segments become `{name}`
//! path parameters), one operation per handler, `limit`/`offset` on the listing source
//! types, and the Basic/Bearer security schemes on the paths a privilege protects. Like the
//! handlers themselves, it is built from the cached metadata on every request.
//!
//! Not for: serving the handlers (`modules::dispatch`).

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Map, Value};

use super::error::RestResult;
use super::extract::Segments;
use super::modules::definition::{ModuleDefinition, SourceType};
use super::modules::dispatch::published_modules;
use super::RestState;

/// The catalog route.
pub fn routes() -> Router<Arc<RestState>> {
    Router::new()
        .route("/ords/{db}/open-api-catalog", get(catalog))
        .route("/ords/{db}/open-api-catalog/", get(catalog))
}

async fn catalog(
    State(state): State<Arc<RestState>>,
    Segments(db): Segments<String>,
) -> RestResult<Json<Value>> {
    let modules = published_modules(&state, &db).await?;
    Ok(Json(describe(&db, &modules)))
}

/// The OpenAPI document of `modules`.
pub fn describe(db: &str, modules: &[ModuleDefinition]) -> Value {
    let mut paths = Map::new();
    for module in modules {
        for template in &module.templates {
            let relative = template.uri_template.as_str();
            let protected = module.privileges_for(relative).next().is_some();
            let (path, parameters) = openapi_path(db, &module.base_path, relative);
            let mut operations = Map::new();
            for handler in &template.handlers {
                let mut operation = Map::new();
                operation.insert(
                    "summary".into(),
                    json!(format!(
                        "{} ({})",
                        source_type_name(handler.source_type),
                        module.name
                    )),
                );
                operation.insert("tags".into(), json!([module.name]));
                let mut all_parameters = parameters.clone();
                if matches!(
                    handler.source_type,
                    SourceType::CollectionFeed | SourceType::Query | SourceType::Pipeline
                ) {
                    for name in ["limit", "offset"] {
                        all_parameters.push(json!({
                            "name": name, "in": "query", "required": false,
                            "schema": {"type": "integer", "minimum": 0}
                        }));
                    }
                }
                if !all_parameters.is_empty() {
                    operation.insert("parameters".into(), Value::Array(all_parameters));
                }
                if matches!(handler.method.as_str(), "POST" | "PUT" | "PATCH") {
                    operation.insert(
                        "requestBody".into(),
                        json!({"content": {"application/json": {"schema": {"type": "object"}}}}),
                    );
                }
                operation.insert(
                    "responses".into(),
                    json!({"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}},
                           "default": {"description": "an error: {code, message, type, instance}"}}),
                );
                if protected {
                    operation.insert(
                        "security".into(),
                        json!([{"basicAuth": []}, {"bearerAuth": []}]),
                    );
                }
                operations.insert(
                    handler.method.to_ascii_lowercase(),
                    Value::Object(operation),
                );
            }
            paths.insert(path, Value::Object(operations));
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": format!("docgate REST modules of {db}"), "version": "1.0.0"},
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {"securitySchemes": {
            "basicAuth": {"type": "http", "scheme": "basic"},
            "bearerAuth": {"type": "http", "scheme": "bearer"}
        }}
    })
}

/// `/ords/{db}/base/events/{id}` and the path parameters of a template.
fn openapi_path(db: &str, base_path: &str, template: &str) -> (String, Vec<Value>) {
    let mut parameters = Vec::new();
    let segments: Vec<String> = template
        .split('/')
        .map(|segment| match segment.strip_prefix(':') {
            Some(name) => {
                parameters.push(json!({
                    "name": name, "in": "path", "required": true, "schema": {"type": "string"}
                }));
                format!("{{{name}}}")
            }
            None => segment.to_string(),
        })
        .collect();
    (
        format!("/ords/{db}{base_path}{}", segments.join("/")),
        parameters,
    )
}

fn source_type_name(source_type: SourceType) -> &'static str {
    match source_type {
        SourceType::CollectionFeed => "collection_feed",
        SourceType::CollectionItem => "collection_item",
        SourceType::Query => "query",
        SourceType::Dml => "dml",
        SourceType::Pipeline => "pipeline",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_become_paths_with_parameters() {
        let module = ModuleDefinition::parse(
            json!({"name": "concert", "base_path": "/authuser/v1/",
                   "templates": [{"uri_template": "events/:id", "handlers": [
                       {"method": "GET", "source_type": "collection_item", "source": "events"}]}],
                   "privileges": [{"name": "p", "roles": ["r"], "patterns": ["/events/*"]}]}),
            None,
        )
        .unwrap();
        let document = describe("concert", &[module]);
        let operation = &document["paths"]["/ords/concert/authuser/v1/events/{id}"]["get"];
        assert_eq!(operation["parameters"][0]["name"], json!("id"));
        assert_eq!(operation["security"][0], json!({"basicAuth": []}));
    }
}
