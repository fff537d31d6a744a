//! Bearer tokens of the REST front end.
//!
//! Not for: Basic credentials (`security`).

use super::error::{RestError, RestResult};
use super::security::Principal;
use crate::state::AppState;

/// Verifies a bearer token.
pub async fn verify_bearer(state: &AppState, token: &str) -> RestResult<Principal> {
    let _ = (state, token);
    Err(RestError::unauthorized("invalid or expired token"))
}
