//! The fast verification path for a user name and clear-text password (PLAIN, HTTP Basic).
//!
//! The first verification of a user and password runs PBKDF2 once against the user's SCRAM
//! credential (as slow as it must be, on a blocking thread). A success is remembered in a
//! bounded, expiring moka cache, so later verifications of the same pair cost a keyed hash
//! and a lookup (microseconds). Failures are never cached.
//!
//! - The cache key is `HMAC-SHA256(secret, len(user) || user || password)` with a random
//!   per-process secret (the user name is length-prefixed rather than NUL-terminated so no
//!   two pairs share an input); neither the password nor an unkeyed hash of it is kept.
//! - Each entry remembers its user and a fingerprint of the credential it was checked
//!   against; a hit counts only if both still match, so a changed password can never be
//!   served from an old entry, even before [`PasswordVerifier::invalidate_user`] runs.
//! - [`PasswordVerifier::invalidate_user`] drops every entry of a user at once (moka
//!   `invalidate_entries_if`, which `get` honours immediately): call it when the user's
//!   password or roles change or the user is dropped.
//!
//! - Concurrent verifications of the same pair share one PBKDF2 run (moka `try_get_with`).
//! - For an unknown user, verify against [`super::ScramServer::fake_credential`]: the same
//!   PBKDF2 work and the same `false` as a wrong password, so timing does not tell them apart.
//!
//! Settings are `auth.cache.enabled`, `auth.cache.timeout` and `auth.cache.max_entries`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::credentials::{random_bytes, DerivedKeys, ScramCredential, ScramMechanism};

/// `auth.cache.*` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierSettings {
    /// `auth.cache.enabled`: off means every verification runs PBKDF2.
    pub enabled: bool,
    /// `auth.cache.timeout`: how long a successful verification is remembered.
    pub timeout: Duration,
    /// `auth.cache.max_entries`: at most this many remembered verifications.
    pub max_entries: u64,
}

impl Default for VerifierSettings {
    fn default() -> Self {
        VerifierSettings {
            enabled: true,
            timeout: Duration::from_secs(300),
            max_entries: 10_000,
        }
    }
}

#[derive(Clone)]
struct Entry {
    user: Arc<str>,
    fingerprint: [u8; 32],
}

/// Verifies user names and passwords against SCRAM credentials, remembering successes.
pub struct PasswordVerifier {
    settings: VerifierSettings,
    secret: [u8; 32],
    cache: Option<Cache<[u8; 32], Entry>>,
    pbkdf2_runs: AtomicU64,
    cache_hits: AtomicU64,
    cache_misses: AtomicU64,
}

impl std::fmt::Debug for PasswordVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordVerifier")
            .field("settings", &self.settings)
            .field("pbkdf2_runs", &self.pbkdf2_runs())
            .field("cache_hits", &self.cache_hits())
            .finish_non_exhaustive()
    }
}

impl PasswordVerifier {
    /// A verifier with a fresh per-process secret.
    pub fn new(settings: VerifierSettings) -> Self {
        let cache = settings.enabled.then(|| {
            Cache::builder()
                .max_capacity(settings.max_entries)
                .time_to_live(settings.timeout)
                .support_invalidation_closures()
                .build()
        });
        let mut secret = [0u8; 32];
        secret.copy_from_slice(&random_bytes(32));
        PasswordVerifier {
            settings,
            secret,
            cache,
            pbkdf2_runs: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
            cache_misses: AtomicU64::new(0),
        }
    }

    /// The settings this verifier was made with.
    pub fn settings(&self) -> &VerifierSettings {
        &self.settings
    }

    /// How many times PBKDF2 has run (for serverStatus and tests).
    pub fn pbkdf2_runs(&self) -> u64 {
        self.pbkdf2_runs.load(Ordering::Relaxed)
    }

    /// How many verifications the cache answered.
    pub fn cache_hits(&self) -> u64 {
        self.cache_hits.load(Ordering::Relaxed)
    }

    /// How many verifications the cache (when on) could not answer: they took the slow path.
    pub fn cache_misses(&self) -> u64 {
        self.cache_misses.load(Ordering::Relaxed)
    }

    /// Whether `password` is `user`'s password according to `credential` (SCRAM-SHA-256:
    /// SASLprep'd password; SCRAM-SHA-1: MongoDB's MD5 digest). Runs PBKDF2 on a blocking
    /// thread unless the cache remembers this pair for this credential.
    pub async fn verify(&self, user: &str, password: &str, credential: &ScramCredential) -> bool {
        if !credential.is_valid() {
            return false;
        }
        self.verify_with(user, password, fingerprint(credential), || {
            self.run_pbkdf2(user, password, credential)
        })
        .await
    }

    /// Like [`PasswordVerifier::verify`] with another slow path (a logon to the database for
    /// delegated verification): `slow` decides, a success is remembered under `fingerprint`
    /// (which must change whenever the answer could).
    pub async fn verify_with<F, Fut>(
        &self,
        user: &str,
        password: &str,
        fingerprint: [u8; 32],
        slow: F,
    ) -> bool
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let Some(cache) = &self.cache else {
            return slow().await;
        };
        let matches = |entry: &Entry| {
            *entry.user == *user && bool::from(entry.fingerprint.ct_eq(&fingerprint))
        };
        let key = self.cache_key(user, password);
        if let Some(entry) = cache.get(&key).await {
            if matches(&entry) {
                self.cache_hits.fetch_add(1, Ordering::Relaxed);
                return true;
            }
            // Verified against another credential (the password changed): check afresh.
            cache.invalidate(&key).await;
        }
        self.cache_misses.fetch_add(1, Ordering::Relaxed);
        // Concurrent verifications of the same pair share one slow run; a failure is
        // handed to the waiting callers but never stored.
        let init = async {
            if slow().await {
                Ok(Entry {
                    user: Arc::from(user),
                    fingerprint,
                })
            } else {
                Err(())
            }
        };
        match cache.try_get_with(key, init).await {
            Ok(entry) => matches(&entry),
            Err(_) => false,
        }
    }

    /// The slow path, on a blocking thread.
    async fn run_pbkdf2(&self, user: &str, password: &str, credential: &ScramCredential) -> bool {
        self.pbkdf2_runs.fetch_add(1, Ordering::Relaxed);
        let (user, password, credential) =
            (user.to_string(), password.to_string(), credential.clone());
        tokio::task::spawn_blocking(move || check_password(&user, &password, &credential))
            .await
            .unwrap_or(false)
    }

    /// Forgets every remembered verification of `user` at once.
    pub async fn invalidate_user(&self, user: &str) {
        if let Some(cache) = &self.cache {
            let user: Arc<str> = Arc::from(user);
            let predicate = move |_: &[u8; 32], entry: &Entry| *entry.user == *user;
            if cache.invalidate_entries_if(predicate).is_err() {
                // Closures are enabled at build time, so this cannot happen; stay safe anyway.
                cache.invalidate_all();
            }
        }
    }

    /// Forgets every remembered verification.
    pub fn invalidate_all(&self) {
        if let Some(cache) = &self.cache {
            cache.invalidate_all();
        }
    }

    fn cache_key(&self, user: &str, password: &str) -> [u8; 32] {
        let mut input = Vec::with_capacity(8 + user.len() + password.len());
        input.extend_from_slice(&(user.len() as u64).to_be_bytes());
        input.extend_from_slice(user.as_bytes());
        input.extend_from_slice(password.as_bytes());
        match ScramMechanism::Sha256.hmac(&self.secret, &input) {
            Ok(mac) if mac.len() == 32 => {
                let mut key = [0u8; 32];
                key.copy_from_slice(&mac);
                key
            }
            // HMAC cannot fail; should it, a secret-prefixed hash keeps the key keyed.
            _ => Sha256::new()
                .chain_update(self.secret)
                .chain_update(&input)
                .finalize()
                .into(),
        }
    }
}

/// Identifies a credential: an entry verified against another credential is not a hit.
fn fingerprint(credential: &ScramCredential) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(credential.mechanism.name().as_bytes());
    hash.update(credential.iterations.to_be_bytes());
    hash.update((credential.salt.len() as u64).to_be_bytes());
    hash.update(&credential.salt);
    hash.update(&credential.stored_key);
    hash.update(&credential.server_key);
    hash.finalize().into()
}

/// The slow path: PBKDF2, ClientKey, StoredKey, constant-time comparison.
fn check_password(user: &str, password: &str, credential: &ScramCredential) -> bool {
    let mechanism = credential.mechanism;
    let Ok(prepared) = mechanism.prepare_password(user, password) else {
        return false;
    };
    let salted = mechanism.salted_password(&prepared, &credential.salt, credential.iterations);
    match DerivedKeys::from_salted_password(mechanism, &salted) {
        Ok(keys) => bool::from(keys.stored_key.ct_eq(&credential.stored_key)),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credential(mechanism: ScramMechanism, user: &str, password: &str) -> ScramCredential {
        let salt = random_bytes(mechanism.salt_len());
        let made = ScramCredential::derive_with(mechanism, user, password, &salt, 4096);
        let Ok(made) = made else { panic!("derive") };
        made
    }

    fn enabled() -> VerifierSettings {
        VerifierSettings {
            enabled: true,
            timeout: Duration::from_secs(60),
            max_entries: 100,
        }
    }

    #[tokio::test]
    async fn second_verification_is_served_from_the_cache() {
        let verifier = PasswordVerifier::new(enabled());
        for mechanism in [ScramMechanism::Sha256, ScramMechanism::Sha1] {
            verifier.invalidate_all();
            let c = credential(mechanism, "alice", "s3cret");
            let runs = verifier.pbkdf2_runs();
            assert!(verifier.verify("alice", "s3cret", &c).await);
            assert_eq!(verifier.pbkdf2_runs(), runs + 1);
            let hits = verifier.cache_hits();
            assert!(verifier.verify("alice", "s3cret", &c).await);
            assert!(verifier.verify("alice", "s3cret", &c).await);
            assert_eq!(verifier.pbkdf2_runs(), runs + 1, "served from the cache");
            assert_eq!(verifier.cache_hits(), hits + 2);
        }
    }

    #[tokio::test]
    async fn wrong_passwords_are_never_cached() {
        let verifier = PasswordVerifier::new(enabled());
        let c = credential(ScramMechanism::Sha256, "bob", "right");
        assert!(!verifier.verify("bob", "wrong", &c).await);
        assert!(!verifier.verify("bob", "wrong", &c).await);
        assert_eq!(verifier.pbkdf2_runs(), 2);
        assert_eq!(verifier.cache_hits(), 0);
        // A cached success for the right password does not make a wrong one pass.
        assert!(verifier.verify("bob", "right", &c).await);
        assert!(!verifier.verify("bob", "right ", &c).await);
        // The cache is per user: another name is checked afresh (the SCRAM-SHA-256 credential
        // itself does not bind the name; the caller looks the credential up by name).
        assert!(verifier.verify("bobx", "right", &c).await);
        assert_eq!(verifier.pbkdf2_runs(), 5);
    }

    #[tokio::test]
    async fn invalidate_user_forces_pbkdf2_again_for_that_user_only() {
        let verifier = PasswordVerifier::new(enabled());
        let carol = credential(ScramMechanism::Sha256, "carol", "pw1");
        let dave = credential(ScramMechanism::Sha256, "dave", "pw2");
        assert!(verifier.verify("carol", "pw1", &carol).await);
        assert!(verifier.verify("dave", "pw2", &dave).await);
        assert_eq!(verifier.pbkdf2_runs(), 2);
        verifier.invalidate_user("carol").await;
        assert!(verifier.verify("carol", "pw1", &carol).await);
        assert_eq!(verifier.pbkdf2_runs(), 3, "carol's entry was dropped");
        assert!(verifier.verify("dave", "pw2", &dave).await);
        assert_eq!(verifier.pbkdf2_runs(), 3, "dave's entry was kept");
        // Entries made after the invalidation are cached as usual.
        assert!(verifier.verify("carol", "pw1", &carol).await);
        assert_eq!(verifier.pbkdf2_runs(), 3);
    }

    #[tokio::test]
    async fn a_changed_credential_is_never_answered_from_an_old_entry() {
        let verifier = PasswordVerifier::new(enabled());
        let old = credential(ScramMechanism::Sha256, "erin", "old");
        assert!(verifier.verify("erin", "old", &old).await);
        let new = credential(ScramMechanism::Sha256, "erin", "new");
        // No invalidate_user: the fingerprint alone keeps the old password out.
        assert!(!verifier.verify("erin", "old", &new).await);
        assert!(verifier.verify("erin", "new", &new).await);
        assert_eq!(verifier.pbkdf2_runs(), 3);
    }

    #[tokio::test]
    async fn concurrent_verifications_of_one_pair_share_one_pbkdf2_run() {
        let verifier = Arc::new(PasswordVerifier::new(enabled()));
        let c = credential(ScramMechanism::Sha256, "ivy", "pw");
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (verifier, c) = (Arc::clone(&verifier), c.clone());
                tokio::spawn(async move { verifier.verify("ivy", "pw", &c).await })
            })
            .collect();
        for task in tasks {
            assert!(matches!(task.await, Ok(true)));
        }
        assert_eq!(verifier.pbkdf2_runs(), 1);
    }

    #[tokio::test]
    async fn unknown_users_cost_one_pbkdf2_run_against_a_fake_credential() {
        // For PLAIN / Basic with an unknown user, verify against ScramServer::fake_credential:
        // the same work as a wrong password, the same answer, nothing cached.
        let verifier = PasswordVerifier::new(enabled());
        let fake = super::super::ScramServer::new().fake_credential(ScramMechanism::Sha256, "x");
        assert!(!verifier.verify("x", "guess", &fake).await);
        assert!(!verifier.verify("x", "guess", &fake).await);
        assert_eq!(verifier.pbkdf2_runs(), 2);
    }

    #[tokio::test]
    async fn disabled_cache_runs_pbkdf2_every_time() {
        let settings = VerifierSettings {
            enabled: false,
            ..enabled()
        };
        let verifier = PasswordVerifier::new(settings);
        let c = credential(ScramMechanism::Sha1, "frank", "pw");
        for _ in 0..3 {
            assert!(verifier.verify("frank", "pw", &c).await);
        }
        assert_eq!(verifier.pbkdf2_runs(), 3);
        assert_eq!(verifier.cache_hits(), 0);
    }

    #[tokio::test]
    async fn entries_expire_after_the_timeout() {
        let settings = VerifierSettings {
            timeout: Duration::from_millis(50),
            ..enabled()
        };
        let verifier = PasswordVerifier::new(settings);
        let c = credential(ScramMechanism::Sha256, "gina", "pw");
        assert!(verifier.verify("gina", "pw", &c).await);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(verifier.verify("gina", "pw", &c).await);
        assert_eq!(verifier.pbkdf2_runs(), 2);
    }

    #[tokio::test]
    async fn plain_passwords_are_prepared_like_scram() {
        let verifier = PasswordVerifier::new(enabled());
        // SCRAM-SHA-256: SASLprep'd on both sides; SCRAM-SHA-1: MongoDB's digest.
        let c = credential(ScramMechanism::Sha256, "hal", "I\u{00AD}X");
        assert!(verifier.verify("hal", "IX", &c).await);
        let c = credential(ScramMechanism::Sha1, "hal", "pw");
        assert!(
            !verifier.verify("hal2", "pw", &c).await,
            "the SHA-1 digest includes the user"
        );
        let corrupt = ScramCredential {
            stored_key: vec![1],
            ..c
        };
        assert!(!verifier.verify("hal", "pw", &corrupt).await);
    }
}
