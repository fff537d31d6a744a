//! Who is calling the REST front end, and whether they may. Credentials come in the
//! `Authorization` header:
//! - `Basic` — a docgate user and password, checked by the shared password verifier (the
//!   fast path, throttled per user and client address, the same as PLAIN on the wire). The user is the one of
//!   that name in the request's database (`/ords/{db}/…`) if it exists, else the one in
//!   `admin`.
//! - `Bearer` — an access token from `POST /ords/{db}/oauth/token`, or a JWT from an external
//!   identity provider (`tokens`).
//!
//! The rules are the wire front end's: with `auth = off` everything is open; otherwise, until
//! the first user exists, loopback clients may use the document API without credentials (the
//! localhost exception). Once a user exists, the document API needs a caller whose roles allow
//! the action on the database (`read` for reads, `readWrite` for writes, …), and the module
//! admin endpoints one with `dbAdmin`, `dbOwner` or `root`. A privilege of a REST module
//! needs a caller holding one of its roles (granted in the module's database or in `admin`;
//! `root` passes every privilege) unless `auth = off`. Missing or wrong credentials are 401
//! with `WWW-Authenticate`; credentials whose roles do not allow it are 403.
//!
//! Not for: verifying passwords or tokens (that is `auth` and `tokens`).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use base64::Engine;

use super::error::{RestError, RestResult};
use super::RestState;
use crate::auth::roles::{allows, Action, RoleGrant};
use crate::auth::service::Access;
use crate::auth::users::USER_KIND;
use crate::auth::AuthError;
use crate::state::AppState;

/// The default authentication database of Basic credentials.
pub const DEFAULT_AUTH_DB: &str = "admin";

/// An authenticated caller: a user, an OAuth client or a JWT subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// What `:current_user` binds: the user name, client id or JWT subject.
    pub name: String,
    pub grants: Vec<RoleGrant>,
}

/// Who is calling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    /// `auth = off`: everything is allowed.
    Open,
    /// No user exists yet and the client is on loopback: the document API is open,
    /// privileges still need credentials.
    LocalhostException,
    /// Credentials are required and none were given.
    Anonymous,
    Authenticated(Principal),
}

impl Caller {
    /// The caller's name for `:current_user`.
    pub fn name(&self) -> Option<&str> {
        match self {
            Caller::Authenticated(principal) => Some(&principal.name),
            _ => None,
        }
    }

    /// Allows the request when the caller's roles allow `action` on `db`.
    pub fn require_action(&self, action: Action, db: &str) -> RestResult<()> {
        match self {
            Caller::Open | Caller::LocalhostException => Ok(()),
            Caller::Anonymous => Err(RestError::unauthorized("credentials are required")),
            Caller::Authenticated(principal) if allows(&principal.grants, action, db) => Ok(()),
            Caller::Authenticated(principal) => Err(RestError::Forbidden(format!(
                "{} is not allowed to {} on {db}",
                principal.name,
                action.name()
            ))),
        }
    }

    /// Allows the request when the caller holds one of `roles` in `db` (or `admin`).
    pub fn require_role(&self, roles: &[String], db: &str, what: &str) -> RestResult<()> {
        match self {
            Caller::Open => Ok(()),
            Caller::LocalhostException | Caller::Anonymous => Err(RestError::unauthorized(
                format!("{what} requires credentials"),
            )),
            Caller::Authenticated(principal) => {
                let holds = principal.grants.iter().any(|grant| {
                    (grant.db == db || grant.db == DEFAULT_AUTH_DB)
                        && (roles.contains(&grant.role)
                            || (grant.role == "root" && grant.db == DEFAULT_AUTH_DB))
                });
                if holds {
                    Ok(())
                } else {
                    Err(RestError::Forbidden(format!(
                        "{} does not hold a role that {what} requires",
                        principal.name
                    )))
                }
            }
        }
    }
}

/// Identifies the caller of a request to database `db` from the request headers and peer
/// address.
pub async fn identify(
    state: &RestState,
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
    db: &str,
) -> RestResult<Caller> {
    let Some(authorization) = headers.get(header::AUTHORIZATION) else {
        let loopback = peer.is_some_and(|addr| addr.ip().is_loopback());
        if state.auth.settings().mode == crate::auth::service::AuthMode::Off {
            return Ok(Caller::Open);
        }
        return Ok(match state.auth.access(loopback).await? {
            Access::Open => Caller::LocalhostException,
            Access::Required => Caller::Anonymous,
        });
    };
    let text = authorization
        .to_str()
        .map_err(|_| RestError::unauthorized("malformed Authorization header"))?;
    let (scheme, credentials) = text.split_once(' ').unwrap_or((text, ""));
    let credentials = credentials.trim();
    let principal = if scheme.eq_ignore_ascii_case("basic") {
        basic_principal(state, credentials, db, peer).await?
    } else if scheme.eq_ignore_ascii_case("bearer") {
        state.tokens.verify(&state.catalog, credentials, db).await?
    } else {
        return Err(RestError::unauthorized(format!(
            "unsupported authorization scheme {scheme:?}: use Basic or Bearer"
        )));
    };
    Ok(Caller::Authenticated(principal))
}

async fn basic_principal(
    state: &AppState,
    credentials: &str,
    db: &str,
    peer: Option<SocketAddr>,
) -> RestResult<Principal> {
    let malformed = || RestError::unauthorized("malformed Basic credentials");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(credentials)
        .map_err(|_| malformed())?;
    let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
    let (user, password) = decoded.split_once(':').ok_or_else(malformed)?;
    // The user of the request's database if there is one, else the `admin` user (a
    // missing one still costs a password verification).
    let users_of_db = state.catalog.meta_records(USER_KIND, Some(db)).await?;
    let auth_db = if users_of_db.iter().any(|record| record.name == user) {
        db
    } else {
        DEFAULT_AUTH_DB
    };
    // Without a peer address (never, behind the real listener) failures count as one unknown
    // client.
    let client = peer.map_or(std::net::IpAddr::from([0, 0, 0, 0]), |addr| addr.ip());
    match state
        .auth
        .verify_password(auth_db, user, password, client)
        .await
    {
        Ok(user) => Ok(Principal {
            name: user.name,
            grants: user.roles,
        }),
        Err(AuthError::Backend(message)) => Err(RestError::Unavailable(message)),
        Err(_) => Err(RestError::unauthorized("authentication failed")),
    }
}

/// The database a request path names (`/ords/{db}/…`).
pub fn request_db(path: &str) -> &str {
    path.strip_prefix("/ords/")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or("")
}

impl FromRequestParts<Arc<RestState>> for Caller {
    type Rejection = RestError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<RestState>,
    ) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| *addr);
        let db = request_db(parts.uri.path());
        // Every route that extracts a caller needs one with credentials once they are
        // required: refusing here answers 401 before a request body is read.
        match identify(state, &parts.headers, peer, db).await? {
            Caller::Anonymous => Err(RestError::unauthorized("credentials are required")),
            caller => Ok(caller),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(grants: &[(&str, &str)]) -> Caller {
        Caller::Authenticated(Principal {
            name: "u".into(),
            grants: grants.iter().map(|(r, d)| RoleGrant::new(*r, *d)).collect(),
        })
    }

    #[test]
    fn privileges_need_a_role_in_the_database_or_admin() {
        let roles = vec!["concert_user".to_string()];
        assert!(principal(&[("concert_user", "concert")])
            .require_role(&roles, "concert", "x")
            .is_ok());
        assert!(principal(&[("concert_user", "admin")])
            .require_role(&roles, "concert", "x")
            .is_ok());
        assert!(principal(&[("concert_user", "other")])
            .require_role(&roles, "concert", "x")
            .is_err());
        assert!(principal(&[("root", "admin")])
            .require_role(&roles, "concert", "x")
            .is_ok());
        assert!(Caller::Anonymous
            .require_role(&roles, "concert", "x")
            .is_err());
        assert!(Caller::LocalhostException
            .require_role(&roles, "concert", "x")
            .is_err());
        assert!(Caller::Open.require_role(&roles, "concert", "x").is_ok());
    }

    #[test]
    fn actions_follow_builtin_roles() {
        assert!(principal(&[("read", "shop")])
            .require_action(Action::Find, "shop")
            .is_ok());
        assert!(principal(&[("read", "shop")])
            .require_action(Action::Insert, "shop")
            .is_err());
        assert!(Caller::Anonymous
            .require_action(Action::Find, "shop")
            .is_err());
    }
}
