//! Users and user-defined roles as docgate keeps them: metadata records of kind `user` and
//! `role` (see `store::MetaRecord`), whose JSON body follows MongoDB's `admin.system.users`
//! shape so people who know MongoDB recognise it:
//!
//! ```json
//! {"_id": "shop.alice", "userId": "<uuid>", "user": "alice", "db": "shop",
//!  "credentials": {"SCRAM-SHA-256": {"iterationCount": 15000, "salt": "…",
//!                                    "storedKey": "…", "serverKey": "…"}, "SCRAM-SHA-1": {…}},
//!  "roles": [{"role": "readWrite", "db": "shop"}], "customData": {…}}
//! ```
//!
//! A user-defined role (`createRole`) is a name that inherits built-in roles and carries no
//! privileges of its own: `{"role": "concert_user", "db": "concert", "roles": [...]}`. Such
//! roles serve as tags for REST privileges and as bundles of built-in roles.
//!
//! Not for: where records are kept (the catalog) or how commands shape them (the front ends).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::credentials::{random_bytes, ScramCredential, ScramMechanism};
use super::roles::{BuiltinRole, RoleGrant};
use super::AuthError;

/// Metadata record kind of users.
pub const USER_KIND: &str = "user";
/// Metadata record kind of user-defined roles.
pub const ROLE_KIND: &str = "role";

/// A user with its credentials and role grants.
#[derive(Clone, PartialEq)]
pub struct UserRecord {
    /// The user's authentication database.
    pub db: String,
    pub name: String,
    /// Random id (MongoDB's `userId`), in canonical UUID text.
    pub user_id: String,
    /// At most one credential per mechanism.
    pub credentials: Vec<ScramCredential>,
    pub roles: Vec<RoleGrant>,
    /// `customData` as relaxed Extended JSON (the front end converts BSON).
    pub custom_data: Option<Value>,
}

impl std::fmt::Debug for UserRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserRecord")
            .field("db", &self.db)
            .field("name", &self.name)
            .field("roles", &self.roles)
            .finish_non_exhaustive()
    }
}

impl UserRecord {
    /// A new user: credentials for `mechanisms` derived from `password` (runs PBKDF2 once per
    /// mechanism: call it off the async executor).
    pub fn new(
        db: &str,
        name: &str,
        password: &str,
        mechanisms: &[ScramMechanism],
        roles: Vec<RoleGrant>,
        custom_data: Option<Value>,
    ) -> Result<UserRecord, AuthError> {
        Ok(UserRecord {
            db: db.to_owned(),
            name: name.to_owned(),
            user_id: new_uuid(),
            credentials: derive_credentials(name, password, mechanisms)?,
            roles,
            custom_data,
        })
    }

    /// `db.name`, MongoDB's `_id` of a user.
    pub fn full_name(&self) -> String {
        format!("{}.{}", self.db, self.name)
    }

    /// The credential for `mechanism`, if the user has one.
    pub fn credential(&self, mechanism: ScramMechanism) -> Option<&ScramCredential> {
        self.credentials.iter().find(|c| c.mechanism == mechanism)
    }

    /// The mechanisms the user can authenticate with, in MongoDB's order.
    pub fn mechanisms(&self) -> Vec<&'static str> {
        [ScramMechanism::Sha1, ScramMechanism::Sha256]
            .into_iter()
            .filter(|m| self.credential(*m).is_some())
            .map(ScramMechanism::name)
            .collect()
    }

    /// The stored JSON body.
    pub fn to_json(&self) -> Value {
        let mut credentials = Map::new();
        for credential in &self.credentials {
            credentials.insert(
                credential.mechanism.name().to_owned(),
                json!({
                    "iterationCount": credential.iterations,
                    "salt": credential.salt_base64(),
                    "storedKey": credential.stored_key_base64(),
                    "serverKey": credential.server_key_base64(),
                }),
            );
        }
        let mut body = json!({
            "_id": self.full_name(),
            "userId": self.user_id,
            "user": self.name,
            "db": self.db,
            "credentials": credentials,
            "roles": grants_to_json(&self.roles),
        });
        if let (Some(custom), Some(map)) = (&self.custom_data, body.as_object_mut()) {
            map.insert("customData".into(), custom.clone());
        }
        body
    }

    /// Reads a stored JSON body; anything malformed is an error, never a panic.
    pub fn from_json(body: &Value) -> Result<UserRecord, AuthError> {
        let corrupt = |what: &str| AuthError::bad_value(format!("corrupt user record: {what}"));
        let text = |key: &str| {
            body.get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| corrupt(key))
        };
        let mut credentials = Vec::new();
        if let Some(map) = body.get("credentials").and_then(Value::as_object) {
            for (name, value) in map {
                let mechanism = ScramMechanism::from_name(name).ok_or_else(|| corrupt(name))?;
                let bytes = |key: &str| {
                    value
                        .get(key)
                        .and_then(Value::as_str)
                        .and_then(|s| BASE64.decode(s).ok())
                        .ok_or_else(|| corrupt(key))
                };
                let iterations = value
                    .get("iterationCount")
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| corrupt("iterationCount"))?;
                let credential = ScramCredential {
                    mechanism,
                    salt: bytes("salt")?,
                    iterations,
                    stored_key: bytes("storedKey")?,
                    server_key: bytes("serverKey")?,
                };
                if !credential.is_valid() {
                    return Err(corrupt(name));
                }
                credentials.push(credential);
            }
        }
        Ok(UserRecord {
            db: text("db")?,
            name: text("user")?,
            user_id: text("userId").unwrap_or_default(),
            credentials,
            roles: grants_from_json(body.get("roles")).ok_or_else(|| corrupt("roles"))?,
            custom_data: body.get("customData").cloned(),
        })
    }
}

/// A user-defined role: a name in a database inheriting other roles.
#[derive(Clone, Debug, PartialEq)]
pub struct RoleRecord {
    pub db: String,
    pub name: String,
    pub roles: Vec<RoleGrant>,
}

impl RoleRecord {
    /// The stored JSON body.
    pub fn to_json(&self) -> Value {
        json!({
            "_id": format!("{}.{}", self.db, self.name),
            "role": self.name,
            "db": self.db,
            "roles": grants_to_json(&self.roles),
            "privileges": [],
        })
    }

    /// Reads a stored JSON body.
    pub fn from_json(body: &Value) -> Result<RoleRecord, AuthError> {
        let corrupt = |what: &str| AuthError::bad_value(format!("corrupt role record: {what}"));
        let text = |key: &str| {
            body.get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| corrupt(key))
        };
        Ok(RoleRecord {
            db: text("db")?,
            name: text("role")?,
            roles: grants_from_json(body.get("roles")).ok_or_else(|| corrupt("roles"))?,
        })
    }
}

/// `[{"role": …, "db": …}]`.
pub fn grants_to_json(grants: &[RoleGrant]) -> Value {
    Value::Array(
        grants
            .iter()
            .map(|g| json!({"role": g.role, "db": g.db}))
            .collect(),
    )
}

fn grants_from_json(value: Option<&Value>) -> Option<Vec<RoleGrant>> {
    let Some(value) = value else {
        return Some(Vec::new());
    };
    value
        .as_array()?
        .iter()
        .map(|g| {
            Some(RoleGrant::new(
                g.get("role")?.as_str()?,
                g.get("db")?.as_str()?,
            ))
        })
        .collect()
}

/// Every grant `roles` amounts to: the grants themselves plus, for user-defined roles, what
/// they inherit (followed through `lookup`, cycles and unknown roles ignored).
pub fn expand_grants(
    roles: &[RoleGrant],
    lookup: impl Fn(&RoleGrant) -> Option<Vec<RoleGrant>>,
) -> Vec<RoleGrant> {
    let mut out: Vec<RoleGrant> = Vec::new();
    let mut pending: Vec<RoleGrant> = roles.to_vec();
    while let Some(grant) = pending.pop() {
        if out.contains(&grant) {
            continue;
        }
        if BuiltinRole::from_name(&grant.role).is_none() {
            if let Some(inherited) = lookup(&grant) {
                pending.extend(inherited);
            }
        }
        out.push(grant);
    }
    out
}

/// Credentials for each of `mechanisms` (PBKDF2 per mechanism).
pub fn derive_credentials(
    user: &str,
    password: &str,
    mechanisms: &[ScramMechanism],
) -> Result<Vec<ScramCredential>, AuthError> {
    if password.is_empty() {
        return Err(AuthError::bad_value("Password cannot be empty"));
    }
    mechanisms
        .iter()
        .map(|m| ScramCredential::derive(*m, user, password))
        .collect()
}

/// A random (version 4) UUID in canonical text.
pub fn new_uuid() -> String {
    let mut bytes = random_bytes(16);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_records_round_trip_through_json() {
        let user = UserRecord::new(
            "shop",
            "alice",
            "secret",
            &[ScramMechanism::Sha1, ScramMechanism::Sha256],
            vec![RoleGrant::new("readWrite", "shop")],
            Some(json!({"team": "blue"})),
        );
        let Ok(user) = user else { panic!("derive") };
        let body = user.to_json();
        assert_eq!(body["_id"], "shop.alice");
        assert_eq!(
            body["credentials"]["SCRAM-SHA-256"]["iterationCount"],
            15000
        );
        assert!(!body.to_string().contains("secret"));
        let back = UserRecord::from_json(&body);
        assert!(back.as_ref().is_ok_and(|b| *b == user), "{back:?}");
        assert_eq!(user.mechanisms(), vec!["SCRAM-SHA-1", "SCRAM-SHA-256"]);
        assert!(UserRecord::from_json(&json!({"user": "x"})).is_err());
    }

    #[test]
    fn user_defined_roles_expand_to_what_they_inherit() {
        let lookup = |g: &RoleGrant| {
            (g.role == "fan").then(|| vec![RoleGrant::new("read", "concert"), g.clone()])
        };
        let grants = expand_grants(&[RoleGrant::new("fan", "concert")], lookup);
        assert!(grants.contains(&RoleGrant::new("read", "concert")));
        assert!(grants.contains(&RoleGrant::new("fan", "concert")));
        assert_eq!(grants.len(), 2);
    }
}
