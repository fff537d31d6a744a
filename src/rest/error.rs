//! Errors of the REST front end and their one mapping to HTTP: every failure a REST client
//! sees is a JSON body `{"code","message","type","instance"}` (ORDS's shape) with the right
//! status. MongoDB failures from the shared core keep MongoDB's message text, so a bad `q=`
//! filter reads the same over HTTP as over the wire.
//!
//! Not for: deciding what is allowed (that is `security`) or the wire front end's replies.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::interrupt::Interruption;
use crate::ops::OpError;
use crate::query::QueryError;
use crate::store::StoreError;

/// A failed REST request, as the client will see it.
#[derive(Debug, thiserror::Error)]
pub enum RestError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    /// Credentials missing or wrong; `challenge` is the `WWW-Authenticate` value.
    #[error("{message}")]
    Unauthorized {
        message: String,
        challenge: &'static str,
    },
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    TooManyRequests(String),
    #[error("{0}")]
    Unavailable(String),
    /// The request ran past its time limit (`--rest-request-timeout`).
    #[error("{0}")]
    Timeout(String),
    #[error("{0}")]
    Internal(String),
    /// The write was planned from a stale catalog (another instance changed the
    /// collection's indexes); `ops::retry` runs it once more, so a client sees this only
    /// when that failed too.
    #[error("{0}")]
    StaleCatalog(String),
}

/// The `WWW-Authenticate` challenge offered when credentials are missing or wrong.
pub const CHALLENGE: &str = "Basic realm=\"docgate\", Bearer realm=\"docgate\"";

impl RestError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            RestError::BadRequest(_) => StatusCode::BAD_REQUEST,
            RestError::NotFound(_) => StatusCode::NOT_FOUND,
            RestError::Conflict(_) => StatusCode::CONFLICT,
            RestError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            RestError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            RestError::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            RestError::Forbidden(_) => StatusCode::FORBIDDEN,
            RestError::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            RestError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            RestError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            RestError::Internal(_) | RestError::StaleCatalog(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    /// ORDS's `code`: the status as one word.
    pub fn code(&self) -> &'static str {
        match self {
            RestError::BadRequest(_) => "BadRequest",
            RestError::NotFound(_) => "NotFound",
            RestError::Conflict(_) => "Conflict",
            RestError::PayloadTooLarge(_) => "PayloadTooLarge",
            RestError::MethodNotAllowed(_) => "MethodNotAllowed",
            RestError::Unauthorized { .. } => "Unauthorized",
            RestError::Forbidden(_) => "Forbidden",
            RestError::TooManyRequests(_) => "TooManyRequests",
            RestError::Unavailable(_) => "ServiceUnavailable",
            RestError::Timeout(_) => "Timeout",
            RestError::Internal(_) | RestError::StaleCatalog(_) => "InternalServerError",
        }
    }

    /// 401 with the standard challenge.
    pub fn unauthorized(message: impl Into<String>) -> RestError {
        RestError::Unauthorized {
            message: message.into(),
            challenge: CHALLENGE,
        }
    }
}

/// A short random id that ties a client's error to the server's log line (ORDS's `ecid`).
fn error_instance() -> String {
    let bytes: [u8; 8] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl IntoResponse for RestError {
    fn into_response(self) -> Response {
        let status = self.status();
        let instance = error_instance();
        if status.is_server_error() {
            tracing::warn!(instance, "rest request failed: {self}");
        } else {
            tracing::debug!(instance, "rest request refused: {self}");
        }
        let body = json!({
            "code": self.code(),
            "message": self.to_string(),
            "type": format!("tag:docgate,2026:error/{}", self.code()),
            "instance": format!("tag:docgate,2026:ecid/{instance}"),
        });
        let mut response = (status, axum::Json(body)).into_response();
        if let RestError::Unauthorized { challenge, .. } = &self {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        response
    }
}

impl From<Interruption> for RestError {
    fn from(reason: Interruption) -> Self {
        match reason {
            Interruption::TimeLimit => {
                RestError::Timeout(format!("the request exceeded its time limit ({reason})"))
            }
            Interruption::ClientGone | Interruption::Killed | Interruption::Shutdown => {
                RestError::Unavailable(reason.to_string())
            }
            // REST requests set no memory limit; were one set, the request asked too much.
            Interruption::SortMemoryLimit | Interruption::GroupMemoryLimit => {
                RestError::BadRequest(reason.to_string())
            }
        }
    }
}

impl From<StoreError> for RestError {
    fn from(error: StoreError) -> Self {
        if error.withholds_detail() {
            tracing::warn!(%error, "backend error (the client was told docgate's wording)");
        }
        match error {
            StoreError::PoolTimeout(_) | StoreError::Unavailable(_) => {
                RestError::Unavailable(error.client_message())
            }
            StoreError::AlreadyExists(_) => RestError::Conflict(error.to_string()),
            StoreError::IndexKeyConflict { .. } | StoreError::DuplicateKey => {
                RestError::Conflict(error.to_string())
            }
            StoreError::Unsupported(_) => RestError::BadRequest(error.to_string()),
            StoreError::Interrupted(reason) => reason.into(),
            StoreError::StaleCatalog(_) => RestError::StaleCatalog(error.to_string()),
            other => RestError::Internal(other.client_message()),
        }
    }
}

impl From<QueryError> for RestError {
    fn from(error: QueryError) -> Self {
        match Interruption::from_code(error.code) {
            Some(reason) => reason.into(),
            None => RestError::BadRequest(error.message),
        }
    }
}

impl From<OpError> for RestError {
    fn from(error: OpError) -> Self {
        match error {
            OpError::Store(store) => store.into(),
            OpError::Query(query) => query.into(),
            OpError::NamespaceNotFound(m) => RestError::NotFound(m),
            OpError::NamespaceExists(m) => RestError::Conflict(m),
            OpError::DuplicateKey(_) => RestError::Conflict(error.to_string()),
            OpError::DocumentTooLarge(m) => RestError::PayloadTooLarge(m),
            OpError::Unauthorized(m) => RestError::Forbidden(m),
            OpError::CollectionReplacedBeforeRead(m) => RestError::StaleCatalog(m),
            other => RestError::BadRequest(other.to_string()),
        }
    }
}

impl crate::ops::retry::MaybeStaleCatalog for RestError {
    fn is_stale_catalog(&self) -> bool {
        matches!(self, RestError::StaleCatalog(_))
    }
}

/// The result of a REST handler.
pub type RestResult<T> = Result<T, RestError>;
