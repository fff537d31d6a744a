//! The server's recent log lines in memory, for `getLog`: a `tracing` layer that writes
//! every event the log filter lets through (the same events stderr gets) as one line of
//! MongoDB's structured log format — `{"t":{"$date":…},"s":"I","c":"COMMAND","ctx":"conn3",
//! "msg":"Slow query","attr":{…}}` — into a ring of the last [`RAM_LOG_LINES`] lines
//! (`getLog: "global"`), and the warnings logged before the server is ready into a second
//! one (`getLog: "startupWarnings"`). The fields of the spans an event happens in (the
//! connection `conn` and the operation `opid` of a command, `request` of a REST request) go
//! into its `attr`, so every line of a command carries its request id.
//!
//! Not for: where the log goes otherwise (stderr, set up in `main.rs`) or what is logged.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// Lines `getLog: "global"` keeps (MongoDB's RamLog holds as many).
pub const RAM_LOG_LINES: usize = 1024;
/// Startup warnings kept.
const STARTUP_WARNING_LINES: usize = 128;

#[derive(Default)]
struct RamLog {
    lines: Mutex<VecDeque<String>>,
    total: AtomicU64,
    startup_warnings: Mutex<Vec<String>>,
    started: AtomicBool,
}

static RAM_LOG: LazyLock<RamLog> = LazyLock::new(RamLog::default);

/// `getLog: "global"`: how many lines were written since start, and the last ones.
pub fn global() -> (u64, Vec<String>) {
    let lines = RAM_LOG
        .lines
        .lock()
        .map(|lines| lines.iter().cloned().collect())
        .unwrap_or_default();
    (RAM_LOG.total.load(Ordering::Relaxed), lines)
}

/// `getLog: "startupWarnings"`: the warnings logged before [`startup_complete`].
pub fn startup_warnings() -> Vec<String> {
    RAM_LOG
        .startup_warnings
        .lock()
        .map(|lines| lines.clone())
        .unwrap_or_default()
}

/// The server is ready: later warnings are no startup warnings.
pub fn startup_complete() {
    RAM_LOG.started.store(true, Ordering::Relaxed);
}

/// The layer that feeds the ring.
pub struct RamLogLayer;

/// The fields of a span, kept in its extensions for the events inside it.
struct SpanFields(Map<String, Value>);

/// Collects fields as JSON values: numbers and booleans as such, `message` apart, a value
/// that reads as a JSON object (a command's shape) as that object.
#[derive(Default)]
struct JsonFields {
    message: Option<String>,
    fields: Map<String, Value>,
}

impl JsonFields {
    fn insert(&mut self, field: &Field, value: Value) {
        if field.name() == "message" {
            self.message = Some(match value {
                Value::String(text) => text,
                other => other.to_string(),
            });
        } else {
            self.fields.insert(field.name().to_string(), value);
        }
    }
}

impl Visit for JsonFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.insert(field, text_value(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.insert(field, Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.insert(field, Value::from(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.insert(field, Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.insert(field, Value::from(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.insert(field, text_value(&format!("{value:?}")));
    }
}

/// A text field; one that holds a JSON object (a command's shape) becomes the object.
fn text_value(text: &str) -> Value {
    if text.starts_with('{') {
        if let Ok(object @ Value::Object(_)) = serde_json::from_str(text) {
            return object;
        }
    }
    Value::String(text.to_string())
}

/// MongoDB's severity letter.
fn severity(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "E",
        Level::WARN => "W",
        Level::INFO => "I",
        Level::DEBUG => "D1",
        Level::TRACE => "D2",
    }
}

/// MongoDB's component, from the module that logged.
fn component(target: &str) -> &'static str {
    let module = target.strip_prefix("docgate::").unwrap_or(target);
    match module.split("::").next().unwrap_or("") {
        "slow_op" | "mongo" => {
            if module.starts_with("mongo::listener")
                || module.starts_with("mongo::connection")
                || module.starts_with("mongo::reader")
                || module.starts_with("mongo::tls")
            {
                "NETWORK"
            } else {
                "COMMAND"
            }
        }
        "auth" => "ACCESS",
        "store" | "catalog" => "STORAGE",
        "query" | "ops" => "QUERY",
        "rest" => "REST",
        _ => "CONTROL",
    }
}

impl<S> Layer<S> for RamLogLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attributes: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        context: Context<'_, S>,
    ) {
        let mut fields = JsonFields::default();
        attributes.record(&mut fields);
        if let Some(span) = context.span(id) {
            span.extensions_mut().insert(SpanFields(fields.fields));
        }
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        context: Context<'_, S>,
    ) {
        let Some(span) = context.span(id) else {
            return;
        };
        let mut fields = JsonFields::default();
        values.record(&mut fields);
        let mut extensions = span.extensions_mut();
        if let Some(SpanFields(existing)) = extensions.get_mut::<SpanFields>() {
            existing.extend(fields.fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, context: Context<'_, S>) {
        let mut fields = JsonFields::default();
        event.record(&mut fields);
        let mut attr = Map::new();
        let mut ctx = "main".to_string();
        if let Some(scope) = context.event_scope(event) {
            for span in scope.from_root() {
                if let Some(SpanFields(span_fields)) = span.extensions().get::<SpanFields>() {
                    for (key, value) in span_fields {
                        if key == "conn" {
                            ctx = format!("conn{value}");
                        }
                        attr.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        attr.extend(fields.fields);
        let metadata = event.metadata();
        let mut line = Map::new();
        line.insert(
            "t".into(),
            serde_json::json!({"$date": bson::DateTime::now().try_to_rfc3339_string().unwrap_or_default()}),
        );
        line.insert("s".into(), Value::from(severity(metadata.level())));
        line.insert("c".into(), Value::from(component(metadata.target())));
        if let Some(Value::Number(id)) = attr.remove("log_id") {
            line.insert("id".into(), Value::Number(id));
        }
        line.insert("ctx".into(), Value::from(ctx));
        line.insert(
            "msg".into(),
            Value::from(fields.message.unwrap_or_default()),
        );
        if !attr.is_empty() {
            line.insert("attr".into(), Value::Object(attr));
        }
        let text = Value::Object(line).to_string();
        if *metadata.level() <= Level::WARN && !RAM_LOG.started.load(Ordering::Relaxed) {
            if let Ok(mut warnings) = RAM_LOG.startup_warnings.lock() {
                if warnings.len() < STARTUP_WARNING_LINES {
                    warnings.push(text.clone());
                }
            }
        }
        if let Ok(mut lines) = RAM_LOG.lines.lock() {
            if lines.len() == RAM_LOG_LINES {
                lines.pop_front();
            }
            lines.push_back(text);
        }
        RAM_LOG.total.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn events_become_structured_lines_with_their_span_fields() {
        let subscriber = tracing_subscriber::registry().with(RamLogLayer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("command", conn = 7_i64, opid = tracing::field::Empty);
            span.record("opid", 42_u64);
            let _entered = span.enter();
            let shape = "{\"find\":\"###\"}";
            tracing::info!(
                target: "docgate::slow_op",
                log_id = 51803_i64,
                ns = "db.c",
                command = %shape,
                durationMillis = 120_i64,
                "Slow query"
            );
        });
        let (total, lines) = global();
        assert!(total >= 1);
        let line: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
        assert_eq!(line["msg"], "Slow query");
        assert_eq!(line["s"], "I");
        assert_eq!(line["c"], "COMMAND");
        assert_eq!(line["id"], 51803);
        assert_eq!(line["ctx"], "conn7");
        assert_eq!(line["attr"]["opid"], 42);
        assert_eq!(line["attr"]["command"]["find"], "###");
        assert_eq!(line["attr"]["durationMillis"], 120);
    }
}
