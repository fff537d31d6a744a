//! Shared helpers of the REST tests: a small HTTP client over reqwest that answers
//! `(status, JSON body)` and checks that error bodies have ORDS's shape.
//!
//! Not for assertions about particular endpoints: those live in the `rest_*.rs` files.

#![allow(dead_code)]

use reqwest::{Method, StatusCode};
use serde_json::Value;

/// An HTTP client bound to one server's REST base URL.
pub struct Rest {
    pub http: reqwest::Client,
    pub base: String,
    /// `Authorization` header value sent with every request, if any.
    pub authorization: Option<String>,
}

/// A response: status, headers and the body parsed as JSON (`Null` when empty).
pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Reply {
    /// Panics unless the status is `expected`; answers the body.
    pub fn expect(self, expected: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            expected,
            "unexpected status, body: {}",
            self.body
        );
        self.body
    }

    /// Panics unless this is an ORDS-shaped error with status `expected`; answers its message.
    pub fn expect_error(self, expected: u16) -> String {
        let body = self.expect(expected);
        for field in ["code", "message", "type", "instance"] {
            assert!(body[field].is_string(), "error body lacks {field}: {body}");
        }
        body["message"].as_str().unwrap_or_default().to_string()
    }
}

impl Rest {
    pub fn new(base: String) -> Rest {
        Rest {
            http: reqwest::Client::new(),
            base,
            authorization: None,
        }
    }

    /// The same server, with an `Authorization` header on every request.
    pub fn with_authorization(&self, value: &str) -> Rest {
        Rest {
            http: self.http.clone(),
            base: self.base.clone(),
            authorization: Some(value.to_string()),
        }
    }

    /// Sends `method path` with an optional raw body.
    pub async fn send(&self, method: Method, path: &str, body: Option<String>) -> Reply {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method.clone(), &url);
        if let Some(value) = &self.authorization {
            request = request.header(reqwest::header::AUTHORIZATION, value);
        }
        if let Some(body) = body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body);
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.expect("read body");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {url}: {e}: {text}"))
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, None).await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        self.send(Method::DELETE, path, None).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Reply {
        self.send(Method::PUT, path, Some(body.to_string())).await
    }

    pub async fn put_empty(&self, path: &str) -> Reply {
        self.send(Method::PUT, path, None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        self.send(Method::POST, path, Some(body.to_string())).await
    }

    pub async fn post_raw(&self, path: &str, body: &str) -> Reply {
        self.send(Method::POST, path, Some(body.to_string())).await
    }

    pub async fn patch(&self, path: &str, body: &Value) -> Reply {
        self.send(Method::PATCH, path, Some(body.to_string())).await
    }
}

/// `q=` parameter text, percent-encoded.
pub fn encode(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}
