//! Request extractors whose failures are `RestError`s (JSON bodies with the right status),
//! not axum's plain-text rejections: query parameters, path segments and the raw body.
//!
//! Not for: interpreting what was extracted.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use super::error::RestError;

/// The query string as name → value (the last of repeated names wins).
pub struct Params(pub HashMap<String, String>);

impl Params {
    /// The value of parameter `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = RestError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map(|Query(params)| Params(params))
            .map_err(|e| RestError::BadRequest(format!("bad query string: {}", e.body_text())))
    }
}

/// Path parameters, deserialized like axum's `Path`.
pub struct Segments<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Segments<T> {
    type Rejection = RestError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(value)| Segments(value))
            .map_err(|e| RestError::BadRequest(format!("bad path: {}", e.body_text())))
    }
}

/// The request body as bytes, within the router's body limit.
pub struct Body(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = RestError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        Bytes::from_request(request, state)
            .await
            .map(Body)
            .map_err(|e| match e.status() {
                StatusCode::PAYLOAD_TOO_LARGE => RestError::PayloadTooLarge(e.body_text()),
                _ => RestError::BadRequest(e.body_text()),
            })
    }
}
