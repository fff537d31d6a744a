//! The concert sample (`docgate demo`): collections `artists`, `venues` and `events` in
//! database `concert`, the REST module `concert` (base path `/authuser/v1/`, so its feed is
//! `/ords/concert/authuser/v1/events/`) protected by the privilege for role `concert_user`,
//! that role, and a demo user `fan` (password `fan`) holding it. The data is compiled into
//! the binary from `fixtures/concert/`. Loading is idempotent: collections that already hold
//! documents, and the role and user when they exist, are left alone; the module is replaced.
//!
//! Not for: anything but the demo (the user's password is public).

use serde_json::Value;

use super::error::RestError;
use super::extjson;
use super::modules::admin::apply_module;
use super::operations;
use crate::auth::credentials::ScramMechanism;
use crate::auth::roles::RoleGrant;
use crate::auth::service::derive_credentials_blocking;
use crate::auth::users::{new_uuid, RoleRecord, UserRecord};
use crate::auth::AuthError;
use crate::state::AppState;
use crate::store::StoreError;

/// The sample's database.
pub const DEMO_DB: &str = "concert";
/// The role the module's privilege requires.
pub const DEMO_ROLE: &str = "concert_user";
/// The demo user and its (public) password.
pub const DEMO_USER: (&str, &str) = ("fan", "fan");

const COLLECTIONS: &[(&str, &str)] = &[
    (
        "artists",
        include_str!("../../fixtures/concert/artists.json"),
    ),
    ("venues", include_str!("../../fixtures/concert/venues.json")),
    ("events", include_str!("../../fixtures/concert/events.json")),
];
const MODULE: &str = include_str!("../../fixtures/concert/module.json");

/// Why the sample could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Credentials(#[from] AuthError),
    /// A fixture compiled into the binary is not JSON (`what`: the collection or `module`).
    #[error("{what}: {source}")]
    Fixture {
        what: &'static str,
        source: serde_json::Error,
    },
    /// A collection's fixture is not an array of documents.
    #[error(transparent)]
    Documents(RestError),
    #[error("cannot load {collection}: {source}")]
    Load {
        collection: &'static str,
        source: RestError,
    },
    #[error("cannot store the concert module: {0}")]
    Module(RestError),
}

/// Loads the sample into the backend behind `state`.
pub async fn load_concert_sample(state: &AppState) -> Result<(), DemoError> {
    for &(name, text) in COLLECTIONS {
        let existing = state.catalog.collection_info(DEMO_DB, name).await?;
        if let Some(collection) = existing {
            let mut session = state.store.session().await?;
            let count = session
                .count(&collection.record, &crate::store::Predicate::True)
                .await?;
            if count > 0 {
                continue;
            }
        }
        let value: Value = serde_json::from_str(text)
            .map_err(|source| DemoError::Fixture { what: name, source })?;
        let documents = extjson::to_documents(value, name).map_err(DemoError::Documents)?;
        operations::insert_documents(state, DEMO_DB, name, documents)
            .await
            .map_err(|source| DemoError::Load {
                collection: name,
                source,
            })?;
    }
    let module: Value = serde_json::from_str(MODULE).map_err(|source| DemoError::Fixture {
        what: "module",
        source,
    })?;
    apply_module(state, DEMO_DB, None, module)
        .await
        .map_err(DemoError::Module)?;

    let role = RoleRecord {
        db: DEMO_DB.to_string(),
        name: DEMO_ROLE.to_string(),
        roles: Vec::new(),
    };
    ignore_existing(state.auth.create_role(&role).await)?;
    let (user, password) = DEMO_USER;
    if state.auth.user(DEMO_DB, user).await?.is_none() {
        let credentials = derive_credentials_blocking(
            user,
            password,
            &[ScramMechanism::Sha1, ScramMechanism::Sha256],
        )
        .await?;
        let record = UserRecord {
            db: DEMO_DB.to_string(),
            name: user.to_string(),
            user_id: new_uuid(),
            credentials,
            roles: vec![RoleGrant::new(DEMO_ROLE, DEMO_DB)],
            custom_data: None,
        };
        ignore_existing(state.auth.create_user(&record).await)?;
    }
    Ok(())
}

fn ignore_existing(result: Result<(), StoreError>) -> Result<(), StoreError> {
    match result {
        Ok(()) | Err(StoreError::AlreadyExists(_)) => Ok(()),
        Err(other) => Err(other),
    }
}
