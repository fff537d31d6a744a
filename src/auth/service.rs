//! `AuthService`: the one authentication service both front ends share (it lives in
//! `AppState`). It finds users and user-defined roles through the catalog's metadata cache,
//! runs SCRAM conversations, verifies clear-text passwords (PLAIN, HTTP Basic) through the
//! fast verification path, throttles failed attempts per `db.user` and client address, and decides whether a
//! client must authenticate at all.
//!
//! When authentication is required (DESIGN.md invariant 7): with `auth = off` never; with
//! `auth = on` (the default) as soon as any user exists. Before the first user exists, a
//! loopback client may do everything (the localhost exception, which is how the first user
//! gets created) and any other client nothing but the handshake.
//!
//! Unknown users cost the same as wrong passwords: SCRAM runs with a fake credential whose
//! salt comes from a secret shared by every instance on the database (kept as a metadata
//! record), and a password check runs PBKDF2 against such a credential.
//!
//! Not for: wire or HTTP shapes (the front ends turn results into replies).

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::credentials::{random_bytes, ScramCredential, ScramMechanism};
use super::roles::RoleGrant;
use super::scram::{ClientFirst, CredentialLookup, SaslReply, ScramConversation, ScramServer};
use super::throttle::{Throttle, ThrottleSettings};
use super::users::{expand_grants, RoleRecord, UserRecord, ROLE_KIND, USER_KIND};
use super::verifier::{PasswordVerifier, VerifierSettings};
use super::AuthError;
use crate::catalog::Catalog;
use crate::store::{MetaRecord, MetaWrite, Store, StoreError};

/// The database name drivers send for PLAIN.
const EXTERNAL_DB: &str = "$external";
/// Whose users `$external` means when docgate checks the passwords itself.
const EXTERNAL_USERS_DB: &str = "admin";

/// Metadata record kind of server secrets.
const SECRET_KIND: &str = "secret";
/// Name of the secret that seeds fake SCRAM salts.
const FAKE_SALT_SECRET: &str = "scram_fake_salt";

/// `auth` setting: whether docgate checks who is calling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// Authentication required once any user exists (the default).
    On,
    /// No authentication at all: development only.
    Off,
}

/// `auth.source`: who checks clear-text passwords of `$external` users.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthSource {
    /// docgate's own users: `$external` means the users of `admin`.
    Docgate,
    /// The database: a `$external` user is a PostgreSQL role, its password checked by a
    /// PostgreSQL logon (then remembered by the fast path); its MongoDB roles come from the
    /// `$external` user record (`createUser` in `$external`, without a password).
    Database,
}

/// Everything `AuthService` is configured with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthSettings {
    pub mode: AuthMode,
    pub source: AuthSource,
    /// `auth.cache.*`.
    pub verifier: VerifierSettings,
    /// `security.credentials.*`.
    pub throttle: ThrottleSettings,
}

impl Default for AuthSettings {
    fn default() -> Self {
        AuthSettings {
            mode: AuthMode::On,
            source: AuthSource::Docgate,
            verifier: VerifierSettings::default(),
            throttle: ThrottleSettings::default(),
        }
    }
}

/// Who a client proved to be, and the roles granted to that user (user-defined roles
/// expanded into what they inherit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthenticatedUser {
    /// The user's authentication database.
    pub db: String,
    pub name: String,
    pub roles: Vec<RoleGrant>,
}

/// The cached user and role lists an identity was computed from (see
/// [`AuthService::refresh`]).
#[derive(Debug, Clone)]
pub struct IdentitySource {
    users: Arc<Vec<MetaRecord>>,
    roles: Arc<Vec<MetaRecord>>,
}

impl IdentitySource {
    fn same_as(&self, other: &IdentitySource) -> bool {
        Arc::ptr_eq(&self.users, &other.users) && Arc::ptr_eq(&self.roles, &other.roles)
    }
}

/// Whether a client must authenticate before running commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Everything is allowed without authenticating.
    Open,
    /// Commands need an authenticated user whose roles allow them.
    Required,
}

/// The shared authentication service.
pub struct AuthService {
    settings: AuthSettings,
    catalog: Catalog,
    /// For delegated verification (`auth.source = database`).
    store: Arc<dyn Store>,
    /// Logons made to the database to check a password (the delegated slow path).
    database_logons: AtomicU64,
    verifier: PasswordVerifier,
    scram: ScramServer,
    throttle: Throttle,
}

impl std::fmt::Debug for AuthService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthService")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl AuthService {
    /// Builds the service; reads (or creates) the shared fake-salt secret.
    pub async fn open(
        settings: AuthSettings,
        catalog: Catalog,
        store: Arc<dyn Store>,
    ) -> Result<Self, StoreError> {
        if settings.source == AuthSource::Database && !store.delegates_logons() {
            return Err(StoreError::Unsupported(format!(
                "auth.source = database needs the PostgreSQL backend or the Oracle backend \
                 (logons of their own to check passwords with), not {}",
                store.backend_name()
            )));
        }
        let secret = shared_secret(&catalog, FAKE_SALT_SECRET).await?;
        Ok(AuthService {
            store,
            database_logons: AtomicU64::new(0),
            verifier: PasswordVerifier::new(settings.verifier.clone()),
            throttle: Throttle::new(settings.throttle.clone()),
            scram: ScramServer::with_secret(secret),
            settings,
            catalog,
        })
    }

    /// The settings the service was built with.
    pub fn settings(&self) -> &AuthSettings {
        &self.settings
    }

    /// Failed-attempt locks (for `serverStatus`).
    pub fn throttle(&self) -> &Throttle {
        &self.throttle
    }

    /// The fast verification path (for counters and tests).
    pub fn verifier(&self) -> &PasswordVerifier {
        &self.verifier
    }

    /// How many database logons delegated verification has made.
    pub fn database_logons(&self) -> u64 {
        self.database_logons.load(Ordering::Relaxed)
    }

    /// Whether any user exists (in any database). "None" opens the localhost exception, so
    /// it is confirmed against the database like a catalog miss: a user created through
    /// another instance closes it on the next command, without waiting for the announcement.
    pub async fn users_exist(&self) -> Result<bool, StoreError> {
        if !self.catalog.meta_records(USER_KIND, None).await?.is_empty() {
            return Ok(true);
        }
        Ok(!self
            .catalog
            .fresh_meta_records(USER_KIND, None)
            .await?
            .is_empty())
    }

    /// Whether a client, from loopback or not, must authenticate.
    pub async fn access(&self, loopback: bool) -> Result<Access, StoreError> {
        if self.settings.mode == AuthMode::Off {
            return Ok(Access::Open);
        }
        if loopback && !self.users_exist().await? {
            return Ok(Access::Open);
        }
        Ok(Access::Required)
    }

    /// Whether requests must carry credentials (for front ends that cannot tell loopback
    /// clients apart): authentication is on and some user exists.
    pub async fn auth_required(&self) -> Result<bool, StoreError> {
        Ok(self.settings.mode == AuthMode::On && self.users_exist().await?)
    }

    /// The user `name` of database `db`.
    pub async fn user(&self, db: &str, name: &str) -> Result<Option<UserRecord>, StoreError> {
        match self.catalog.meta_record(USER_KIND, db, name).await? {
            Some(record) => UserRecord::from_json(&record.body)
                .map(Some)
                .map_err(|e| StoreError::Corrupt(e.to_string())),
            None => Ok(None),
        }
    }

    /// Every user of `db`, or of every database.
    pub async fn users(&self, db: Option<&str>) -> Result<Vec<UserRecord>, StoreError> {
        self.catalog
            .meta_records(USER_KIND, db)
            .await?
            .iter()
            .map(|record| {
                UserRecord::from_json(&record.body).map_err(|e| StoreError::Corrupt(e.to_string()))
            })
            .collect()
    }

    /// Every user-defined role of `db`, or of every database.
    pub async fn roles(&self, db: Option<&str>) -> Result<Vec<RoleRecord>, StoreError> {
        self.catalog
            .meta_records(ROLE_KIND, db)
            .await?
            .iter()
            .map(|record| {
                RoleRecord::from_json(&record.body).map_err(|e| StoreError::Corrupt(e.to_string()))
            })
            .collect()
    }

    /// The grants `roles` amount to, user-defined roles expanded.
    pub async fn effective_roles(&self, roles: &[RoleGrant]) -> Result<Vec<RoleGrant>, StoreError> {
        let defined = self.roles(None).await?;
        Ok(expand_grants(roles, |grant| {
            defined
                .iter()
                .find(|r| r.name == grant.role && r.db == grant.db)
                .map(|r| r.roles.clone())
        }))
    }

    /// Brings an identity established earlier up to date: None once the user was dropped,
    /// and the roles as they are now (grants and revocations apply at once). `seen` remembers
    /// which cached user and role lists the identity was computed from; while the catalog
    /// hands out the same lists nothing changed, and nothing is re-read or re-parsed.
    pub async fn refresh(
        &self,
        user: &mut Option<AuthenticatedUser>,
        seen: &mut Option<IdentitySource>,
    ) -> Result<(), StoreError> {
        let Some(current) = user.as_ref() else {
            return Ok(());
        };
        let source = IdentitySource {
            users: self
                .catalog
                .meta_records(USER_KIND, Some(&current.db))
                .await?,
            roles: self.catalog.meta_records(ROLE_KIND, None).await?,
        };
        if seen.as_ref().is_some_and(|seen| seen.same_as(&source)) {
            return Ok(());
        }
        *user = match self.user(&current.db, &current.name).await? {
            Some(record) => Some(self.identity(&record).await?),
            None => None,
        };
        *seen = Some(source);
        Ok(())
    }

    async fn identity(&self, record: &UserRecord) -> Result<AuthenticatedUser, StoreError> {
        Ok(AuthenticatedUser {
            db: record.db.clone(),
            name: record.name.clone(),
            roles: self.effective_roles(&record.roles).await?,
        })
    }

    /// Verifies a clear-text password (PLAIN, HTTP Basic) for user `name` of `db` through the
    /// fast path. `$external` means the users of `admin`, or with `auth.source = database`
    /// PostgreSQL roles. Unknown users, wrong passwords and locked users all get 18 after the
    /// same work.
    pub async fn verify_password(
        &self,
        db: &str,
        name: &str,
        password: &str,
        client: IpAddr,
    ) -> Result<AuthenticatedUser, AuthError> {
        let delegated = db == EXTERNAL_DB && self.settings.source == AuthSource::Database;
        let db = if db == EXTERNAL_DB && !delegated {
            EXTERNAL_USERS_DB
        } else {
            db
        };
        let throttle_key = format!("{db}.{name}");
        let locked = self.throttle.check(&throttle_key, client).await.is_err();
        let record = self.user(db, name).await.map_err(backend)?;
        let verified = if delegated {
            self.verify_by_logon(name, password, record.as_ref()).await
        } else {
            let credential = match &record {
                Some(user) => user
                    .credential(ScramMechanism::Sha256)
                    .or_else(|| user.credential(ScramMechanism::Sha1))
                    .cloned(),
                None => None,
            };
            let credential = credential
                .unwrap_or_else(|| self.scram.fake_credential(ScramMechanism::Sha256, name));
            self.verifier.verify(name, password, &credential).await
        };
        match record {
            Some(user) if verified && !locked => {
                self.throttle.record_success(&throttle_key, client).await;
                self.identity(&user).await.map_err(backend)
            }
            _ => {
                self.throttle.record_failure(&throttle_key, client).await;
                Err(AuthError::AuthenticationFailed)
            }
        }
    }

    /// Delegated verification: a logon as `name` decides, remembered by the fast path for
    /// this user record (dropping and re-creating the user starts afresh).
    async fn verify_by_logon(
        &self,
        name: &str,
        password: &str,
        record: Option<&UserRecord>,
    ) -> bool {
        let mut fingerprint = Sha256::new();
        fingerprint.update(b"database logon\0");
        fingerprint.update(name.as_bytes());
        fingerprint.update(b"\0");
        fingerprint.update(record.map_or("", |r| r.user_id.as_str()).as_bytes());
        self.verifier
            .verify_with(name, password, fingerprint.finalize().into(), || async {
                self.database_logons.fetch_add(1, Ordering::Relaxed);
                match self.store.verify_login(name, password).await {
                    Ok(verified) => verified,
                    Err(error) => {
                        tracing::warn!(%error, "delegated password verification failed");
                        false
                    }
                }
            })
            .await
    }

    /// `saslStart` for SCRAM: looks the user up and answers `server-first-message`. A locked
    /// or unknown user gets a conversation that will fail at its end, like a wrong password.
    pub async fn scram_start(
        &self,
        mechanism: ScramMechanism,
        db: &str,
        client_first: &[u8],
        skip_empty_exchange: bool,
        client: IpAddr,
    ) -> Result<(ScramConversation, SaslReply), AuthError> {
        let parsed = ClientFirst::parse(client_first)?;
        let name = parsed.username().to_owned();
        let locked = self
            .throttle
            .check(&format!("{db}.{name}"), client)
            .await
            .is_err();
        let lookup = match self.user(db, &name).await.map_err(backend)? {
            _ if locked => CredentialLookup::UnknownUser,
            Some(user) => match user.credential(mechanism) {
                Some(credential) => CredentialLookup::Found(credential.clone()),
                None => CredentialLookup::NoCredentialForMechanism,
            },
            None => CredentialLookup::UnknownUser,
        };
        self.scram
            .start_parsed(mechanism, parsed, skip_empty_exchange, lookup)
    }

    /// `saslContinue` for SCRAM: one step; when the conversation is done, the user it proved.
    pub async fn scram_step(
        &self,
        db: &str,
        conversation: &mut ScramConversation,
        payload: &[u8],
        client: IpAddr,
    ) -> Result<(SaslReply, Option<AuthenticatedUser>), AuthError> {
        let throttle_key = format!("{db}.{}", conversation.username());
        let reply = match conversation.step(payload) {
            Ok(reply) => reply,
            Err(error) => {
                if error == AuthError::AuthenticationFailed {
                    self.throttle.record_failure(&throttle_key, client).await;
                }
                return Err(error);
            }
        };
        let Some(name) = conversation.authenticated_user().map(str::to_owned) else {
            return Ok((reply, None));
        };
        let Some(record) = self.user(db, &name).await.map_err(backend)? else {
            // Dropped during the conversation.
            return Err(AuthError::AuthenticationFailed);
        };
        self.throttle.record_success(&throttle_key, client).await;
        let identity = self.identity(&record).await.map_err(backend)?;
        Ok((reply, Some(identity)))
    }

    /// The mechanisms user `name` of `db` can use (`saslSupportedMechs`); None for an
    /// unknown user.
    pub async fn mechanisms_of(
        &self,
        db: &str,
        name: &str,
    ) -> Result<Option<Vec<&'static str>>, StoreError> {
        Ok(self.user(db, name).await?.map(|user| user.mechanisms()))
    }

    /// Stores a new user; `AlreadyExists` if there is one.
    pub async fn create_user(&self, user: &UserRecord) -> Result<(), StoreError> {
        self.put(
            USER_KIND,
            &user.db,
            &user.name,
            user.to_json(),
            MetaWrite::Insert,
        )
        .await
        .map(drop)
    }

    /// Replaces a stored user; false if there is none. Remembered verifications of the user
    /// are dropped at once.
    pub async fn replace_user(&self, user: &UserRecord) -> Result<bool, StoreError> {
        let written = self
            .put(
                USER_KIND,
                &user.db,
                &user.name,
                user.to_json(),
                MetaWrite::Update,
            )
            .await;
        self.verifier.invalidate_user(&user.name).await;
        written
    }

    /// Drops one user (`name`) or every user of `db`; answers how many were dropped.
    pub async fn drop_users(&self, db: &str, name: Option<&str>) -> Result<u64, StoreError> {
        let dropped = self.catalog.delete_meta(USER_KIND, db, name).await;
        match name {
            Some(name) => self.verifier.invalidate_user(name).await,
            None => self.verifier.invalidate_all(),
        }
        dropped
    }

    /// Stores a new user-defined role; `AlreadyExists` if there is one.
    pub async fn create_role(&self, role: &RoleRecord) -> Result<(), StoreError> {
        self.put(
            ROLE_KIND,
            &role.db,
            &role.name,
            role.to_json(),
            MetaWrite::Insert,
        )
        .await
        .map(drop)
    }

    /// Drops a user-defined role; answers whether it existed.
    pub async fn drop_role(&self, db: &str, name: &str) -> Result<bool, StoreError> {
        Ok(self.catalog.delete_meta(ROLE_KIND, db, Some(name)).await? > 0)
    }

    async fn put(
        &self,
        kind: &str,
        db: &str,
        name: &str,
        body: Value,
        mode: MetaWrite,
    ) -> Result<bool, StoreError> {
        let record = MetaRecord {
            kind: kind.into(),
            db: db.into(),
            name: name.into(),
            body,
        };
        self.catalog.put_meta(&record, mode).await
    }
}

/// Runs PBKDF2 for new credentials off the async executor.
pub async fn derive_credentials_blocking(
    user: &str,
    password: &str,
    mechanisms: &[ScramMechanism],
) -> Result<Vec<ScramCredential>, AuthError> {
    let (user, password, mechanisms) = (user.to_owned(), password.to_owned(), mechanisms.to_vec());
    tokio::task::spawn_blocking(move || {
        super::users::derive_credentials(&user, &password, &mechanisms)
    })
    .await
    .map_err(|_| AuthError::bad_value("credential derivation failed"))?
}

fn backend(error: StoreError) -> AuthError {
    if error.withholds_detail() {
        tracing::warn!(%error, "backend error during authentication");
    }
    AuthError::Backend(error.client_message())
}

/// A 32-byte secret every instance on this database shares (a metadata record of kind
/// `secret` named `name`), created on first use: the seed of fake salts, the REST front end's
/// token signing key.
pub async fn shared_secret(catalog: &Catalog, name: &str) -> Result<[u8; 32], StoreError> {
    let decode = |record: &MetaRecord| -> Option<[u8; 32]> {
        let hex = record.body.get("hex")?.as_str()?;
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect::<Option<_>>()?;
        bytes.try_into().ok()
    };
    for _ in 0..3 {
        if let Some(record) = catalog.meta_record(SECRET_KIND, "", name).await? {
            return decode(&record)
                .ok_or_else(|| StoreError::Corrupt("the shared auth secret".into()));
        }
        let hex: String = random_bytes(32)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let record = MetaRecord {
            kind: SECRET_KIND.into(),
            db: String::new(),
            name: name.into(),
            body: json!({ "hex": hex }),
        };
        match catalog.put_meta(&record, MetaWrite::Insert).await {
            Ok(_) | Err(StoreError::AlreadyExists(_)) => continue,
            Err(error) => return Err(error),
        }
    }
    Err(StoreError::Database(
        "could not read or create the shared auth secret".into(),
    ))
}
