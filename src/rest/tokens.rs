//! Bearer tokens of the REST front end, of two kinds:
//!
//! - **docgate's own access tokens** (OAuth2 client credentials): `POST /ords/{db}/oauth/token`
//!   issues an HS256 JWT `{iss: "docgate", sub: client_id, db, roles, iat, exp}`, signed with a
//!   key every instance on the database shares (a metadata record), so a token issued by one
//!   instance is accepted by all, and none has to remember tokens. A token stays valid until
//!   it expires (`--rest-token-lifetime`, default 1h), even if its client is deleted.
//! - **JWTs from an external identity provider**, verified against the keys of a JWKS file
//!   (`--rest-jwks`): asymmetric algorithms only, `exp` required, `iss`/`aud` when configured,
//!   the roles from a claim (`--rest-jwt-roles-claim`, default `roles`: an array of names or
//!   one space-separated string), granted in the database of the request. `sub` names the
//!   caller.
//!
//! Expiry is checked without leeway.
//!
//! Not for: OAuth client administration or the token endpoint's HTTP shape (`oauth`).

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::OnceCell;

use super::error::{RestError, RestResult};
use super::security::Principal;
use super::settings::RestSettings;
use crate::auth::roles::RoleGrant;
use crate::auth::service::shared_secret;
use crate::catalog::Catalog;

/// `iss` of the tokens docgate issues.
pub const ISSUER: &str = "docgate";
/// Name of the shared signing key's metadata record.
const SIGNING_KEY_SECRET: &str = "rest_token_key";

/// The claims of docgate's access tokens.
#[derive(Debug, Serialize, Deserialize)]
struct AccessClaims {
    iss: String,
    sub: String,
    db: String,
    roles: Vec<String>,
    iat: u64,
    exp: u64,
}

/// A token handed to a client.
pub struct IssuedToken {
    pub access_token: String,
    pub expires_in: u64,
}

/// The keys of an external identity provider and what its tokens must say.
struct ExternalProvider {
    keys: JwkSet,
    issuer: Option<String>,
    audience: Option<String>,
    roles_claim: String,
}

/// Issues and verifies bearer tokens.
pub struct TokenService {
    lifetime_secs: u64,
    signing_key: OnceCell<[u8; 32]>,
    external: Option<ExternalProvider>,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl TokenService {
    /// Builds the service, reading the JWKS file when one is configured.
    pub fn new(settings: &RestSettings) -> Result<TokenService, String> {
        let external = match &settings.jwks {
            None => None,
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read --rest-jwks {}: {e}", path.display()))?;
                let keys: JwkSet = serde_json::from_str(&text)
                    .map_err(|e| format!("--rest-jwks {} is not a JWKS: {e}", path.display()))?;
                Some(ExternalProvider {
                    keys,
                    issuer: settings.jwt_issuer.clone(),
                    audience: settings.jwt_audience.clone(),
                    roles_claim: settings.jwt_roles_claim.clone(),
                })
            }
        };
        Ok(TokenService {
            lifetime_secs: settings.token_lifetime.as_secs().max(1),
            signing_key: OnceCell::new(),
            external,
        })
    }

    /// Whether external JWTs are accepted.
    pub fn accepts_external(&self) -> bool {
        self.external.is_some()
    }

    async fn signing_key(&self, catalog: &Catalog) -> RestResult<&[u8; 32]> {
        self.signing_key
            .get_or_try_init(|| async { shared_secret(catalog, SIGNING_KEY_SECRET).await })
            .await
            .map_err(RestError::from)
    }

    /// Issues an access token for OAuth client `client_id` of `db` with `roles`.
    pub async fn issue(
        &self,
        catalog: &Catalog,
        db: &str,
        client_id: &str,
        roles: &[String],
    ) -> RestResult<IssuedToken> {
        let key = self.signing_key(catalog).await?;
        let now = now_secs();
        let claims = AccessClaims {
            iss: ISSUER.to_string(),
            sub: client_id.to_string(),
            db: db.to_string(),
            roles: roles.to_vec(),
            iat: now,
            exp: now + self.lifetime_secs,
        };
        let access_token = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(key),
        )
        .map_err(|e| RestError::Internal(format!("cannot sign a token: {e}")))?;
        Ok(IssuedToken {
            access_token,
            expires_in: self.lifetime_secs,
        })
    }

    /// Verifies a bearer token presented to database `db`.
    pub async fn verify(&self, catalog: &Catalog, token: &str, db: &str) -> RestResult<Principal> {
        let invalid = |why: String| {
            tracing::debug!("bearer token refused: {why}");
            RestError::unauthorized("invalid or expired token")
        };
        let header = jsonwebtoken::decode_header(token).map_err(|e| invalid(e.to_string()))?;
        if header.alg == Algorithm::HS256 && header.kid.is_none() {
            let key = self.signing_key(catalog).await?;
            let mut validation = Validation::new(Algorithm::HS256);
            validation.set_issuer(&[ISSUER]);
            validation.leeway = 0;
            validation.required_spec_claims = ["exp", "iss", "sub"]
                .into_iter()
                .map(String::from)
                .collect::<HashSet<_>>();
            let claims = jsonwebtoken::decode::<AccessClaims>(
                token,
                &DecodingKey::from_secret(key),
                &validation,
            )
            .map_err(|e| invalid(e.to_string()))?
            .claims;
            return Ok(Principal {
                grants: claims
                    .roles
                    .iter()
                    .map(|role| RoleGrant::new(role.as_str(), claims.db.as_str()))
                    .collect(),
                name: claims.sub,
            });
        }
        let Some(provider) = &self.external else {
            return Err(invalid("no identity provider is configured".into()));
        };
        provider.verify(&header, token, db).map_err(invalid)
    }
}

impl ExternalProvider {
    fn verify(&self, header: &Header, token: &str, db: &str) -> Result<Principal, String> {
        let asymmetric = !matches!(
            header.alg,
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
        );
        if !asymmetric {
            return Err(format!(
                "{:?} is not accepted from an identity provider",
                header.alg
            ));
        }
        let jwk = match &header.kid {
            Some(kid) => self.keys.find(kid),
            None if self.keys.keys.len() == 1 => self.keys.keys.first(),
            None => None,
        }
        .ok_or("no key in the JWKS matches the token")?;
        let key = DecodingKey::from_jwk(jwk).map_err(|e| e.to_string())?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = 0;
        if let Some(issuer) = &self.issuer {
            validation.set_issuer(&[issuer]);
        }
        match &self.audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        let claims =
            jsonwebtoken::decode::<serde_json::Map<String, Value>>(token, &key, &validation)
                .map_err(|e| e.to_string())?
                .claims;
        let name = claims
            .get("sub")
            .and_then(Value::as_str)
            .ok_or("the token has no sub")?
            .to_string();
        let roles: Vec<String> = match claims.get(&self.roles_claim) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            Some(Value::String(text)) => text.split_whitespace().map(str::to_string).collect(),
            _ => Vec::new(),
        };
        Ok(Principal {
            name,
            grants: roles
                .into_iter()
                .map(|role| RoleGrant::new(role, db))
                .collect(),
        })
    }
}
