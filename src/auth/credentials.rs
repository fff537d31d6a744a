//! SCRAM credentials as MongoDB stores them: salt, iteration count, StoredKey and ServerKey
//! (RFC 5802 section 3), never the password.
//!
//! How the password is prepared before PBKDF2 follows MongoDB's authentication spec:
//!
//! - SCRAM-SHA-1: the "password" is `hex(md5(user + ":mongo:" + password))`, with neither
//!   user nor password SASLprep'd; 10,000 iterations, 16-byte salt.
//! - SCRAM-SHA-256: the password is SASLprep'd (RFC 4013, full profile via the `stringprep`
//!   crate, so non-ASCII passwords work as drivers send them); 15,000 iterations, 28-byte salt.
//!
//! MongoDB's salt is the hash length minus 4 bytes (16 for SHA-1, 28 for SHA-256) and the
//! minimum iteration count is 4096; both are enforced here.
//!
//! # Stored format ([`ScramCredential::to_bytes`])
//!
//! ```text
//! offset  size  field
//! 0       1     format version, 1
//! 1       1     mechanism: 1 = SCRAM-SHA-1, 2 = SCRAM-SHA-256
//! 2       4     iteration count, u32 big-endian
//! 6       1     salt length n (1..=255)
//! 7       n     salt
//! 7+n     h     StoredKey (h = 20 for SHA-1, 32 for SHA-256)
//! 7+n+h   h     ServerKey
//! ```
//!
//! Nothing follows the ServerKey; [`ScramCredential::from_bytes`] rejects any other length.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use md5::Md5;
use sha1::Sha1;
use sha2::{Digest, Sha256};

use super::AuthError;

/// MongoDB's minimum SCRAM iteration count.
pub const MIN_ITERATIONS: u32 = 4096;
const FORMAT_VERSION: u8 = 1;

/// A SCRAM mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScramMechanism {
    /// SCRAM-SHA-1 (RFC 5802) with MongoDB's MD5 password digest.
    Sha1,
    /// SCRAM-SHA-256 (RFC 7677), MongoDB's default.
    Sha256,
}

impl ScramMechanism {
    /// The SASL mechanism name, as in `saslStart.mechanism` and `saslSupportedMechs`.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha1 => "SCRAM-SHA-1",
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
        }
    }

    /// The mechanism with this SASL name (exact, as MongoDB compares it).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "SCRAM-SHA-1" => Some(ScramMechanism::Sha1),
            "SCRAM-SHA-256" => Some(ScramMechanism::Sha256),
            _ => None,
        }
    }

    /// MongoDB's default iteration count (`scramIterationCount` 10,000,
    /// `scramSHA256IterationCount` 15,000).
    pub fn default_iterations(self) -> u32 {
        match self {
            ScramMechanism::Sha1 => 10_000,
            ScramMechanism::Sha256 => 15_000,
        }
    }

    /// MongoDB's salt length: the hash length minus 4.
    pub fn salt_len(self) -> usize {
        self.hash_len() - 4
    }

    /// Length of the hash, and so of StoredKey, ServerKey and ClientProof.
    pub fn hash_len(self) -> usize {
        match self {
            ScramMechanism::Sha1 => 20,
            ScramMechanism::Sha256 => 32,
        }
    }

    fn code(self) -> u8 {
        match self {
            ScramMechanism::Sha1 => 1,
            ScramMechanism::Sha256 => 2,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(ScramMechanism::Sha1),
            2 => Some(ScramMechanism::Sha256),
            _ => None,
        }
    }

    /// `H(data)`.
    pub(crate) fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha1 => Sha1::digest(data).to_vec(),
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
        }
    }

    /// `HMAC(key, data)`.
    pub(crate) fn hmac(self, key: &[u8], data: &[u8]) -> Result<Vec<u8>, AuthError> {
        match self {
            ScramMechanism::Sha1 => hmac_with::<Hmac<Sha1>>(key, data),
            ScramMechanism::Sha256 => hmac_with::<Hmac<Sha256>>(key, data),
        }
    }

    /// `Hi(password, salt, i)`: PBKDF2 with this mechanism's HMAC.
    pub(crate) fn salted_password(self, prepared: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        let mut out = vec![0u8; self.hash_len()];
        match self {
            ScramMechanism::Sha1 => {
                pbkdf2::pbkdf2_hmac::<Sha1>(prepared, salt, iterations, &mut out)
            }
            ScramMechanism::Sha256 => {
                pbkdf2::pbkdf2_hmac::<Sha256>(prepared, salt, iterations, &mut out)
            }
        }
        out
    }

    /// The password as this mechanism feeds it to PBKDF2 (see the module documentation).
    pub fn prepare_password(self, user: &str, password: &str) -> Result<Vec<u8>, AuthError> {
        match self {
            ScramMechanism::Sha1 => Ok(mongo_password_digest(user, password).into_bytes()),
            ScramMechanism::Sha256 => match stringprep::saslprep(password) {
                Ok(prepared) if !prepared.is_empty() => Ok(prepared.as_bytes().to_vec()),
                Ok(_) => Err(AuthError::bad_value("password is empty after SASLprep")),
                Err(_) => Err(AuthError::bad_value(
                    "password contains characters SASLprep (RFC 4013) prohibits",
                )),
            },
        }
    }
}

fn hmac_with<M: Mac + KeyInit>(key: &[u8], data: &[u8]) -> Result<Vec<u8>, AuthError> {
    // HMAC accepts keys of any length, so this never fails; if it did, authentication fails.
    let mut mac =
        <M as KeyInit>::new_from_slice(key).map_err(|_| AuthError::AuthenticationFailed)?;
    mac.update(data);
    Ok(mac.finalize().into_bytes().to_vec())
}

/// MongoDB's legacy password digest, `hex(md5(user + ":mongo:" + password))`, which
/// SCRAM-SHA-1 uses as the password.
pub fn mongo_password_digest(user: &str, password: &str) -> String {
    let mut md5 = Md5::new();
    md5.update(user.as_bytes());
    md5.update(b":mongo:");
    md5.update(password.as_bytes());
    let digest = md5.finalize();
    let mut hex = String::with_capacity(32);
    for byte in digest.iter() {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    hex
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The keys derived from a salted password (RFC 5802 section 3).
pub(crate) struct DerivedKeys {
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl DerivedKeys {
    pub(crate) fn from_salted_password(
        mechanism: ScramMechanism,
        salted: &[u8],
    ) -> Result<Self, AuthError> {
        let client_key = mechanism.hmac(salted, b"Client Key")?;
        let stored_key = mechanism.hash(&client_key);
        let server_key = mechanism.hmac(salted, b"Server Key")?;
        Ok(DerivedKeys {
            stored_key,
            server_key,
        })
    }
}

/// A SCRAM credential: everything the server keeps to verify a password.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    /// SCRAM-SHA-1 or SCRAM-SHA-256.
    pub mechanism: ScramMechanism,
    /// The salt (16 or 28 bytes for credentials made here; any 1..=255 bytes accepted).
    pub salt: Vec<u8>,
    /// PBKDF2 iteration count (at least 4096).
    pub iterations: u32,
    /// `H(ClientKey)`.
    pub stored_key: Vec<u8>,
    /// `HMAC(SaltedPassword, "Server Key")`.
    pub server_key: Vec<u8>,
}

impl std::fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The keys are password equivalents for an offline attack: keep them out of logs.
        f.debug_struct("ScramCredential")
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramCredential {
    /// A new credential for `user` and `password` with a fresh random salt and MongoDB's
    /// default iteration count. Runs PBKDF2: call it off the async executor.
    pub fn derive(
        mechanism: ScramMechanism,
        user: &str,
        password: &str,
    ) -> Result<Self, AuthError> {
        Self::derive_with(
            mechanism,
            user,
            password,
            &random_bytes(mechanism.salt_len()),
            mechanism.default_iterations(),
        )
    }

    /// A credential with the given salt and iteration count (the iteration count is checked
    /// against MongoDB's minimum, 4096).
    pub fn derive_with(
        mechanism: ScramMechanism,
        user: &str,
        password: &str,
        salt: &[u8],
        iterations: u32,
    ) -> Result<Self, AuthError> {
        let prepared = mechanism.prepare_password(user, password)?;
        Self::from_prepared_password(mechanism, &prepared, salt, iterations)
    }

    /// A credential from an already prepared password (SASLprep'd, or MongoDB's SHA-1 digest):
    /// the RFC test vectors use this to skip MongoDB's digest step.
    pub fn from_prepared_password(
        mechanism: ScramMechanism,
        prepared: &[u8],
        salt: &[u8],
        iterations: u32,
    ) -> Result<Self, AuthError> {
        check_shape(salt, iterations)?;
        let salted = mechanism.salted_password(prepared, salt, iterations);
        let keys = DerivedKeys::from_salted_password(mechanism, &salted)?;
        Ok(ScramCredential {
            mechanism,
            salt: salt.to_vec(),
            iterations,
            stored_key: keys.stored_key,
            server_key: keys.server_key,
        })
    }

    /// The salt in base64, as `server-first-message` and `usersInfo` show it.
    pub fn salt_base64(&self) -> String {
        BASE64.encode(&self.salt)
    }

    /// StoredKey in base64 (MongoDB's `storedKey` field).
    pub fn stored_key_base64(&self) -> String {
        BASE64.encode(&self.stored_key)
    }

    /// ServerKey in base64 (MongoDB's `serverKey` field).
    pub fn server_key_base64(&self) -> String {
        BASE64.encode(&self.server_key)
    }

    /// Whether the lengths and iteration count make a usable credential.
    pub fn is_valid(&self) -> bool {
        check_shape(&self.salt, self.iterations).is_ok()
            && self.stored_key.len() == self.mechanism.hash_len()
            && self.server_key.len() == self.mechanism.hash_len()
    }

    /// The compact stored form (see the module documentation).
    pub fn to_bytes(&self) -> Vec<u8> {
        let salt_len = self.salt.len().min(usize::from(u8::MAX));
        let mut out = Vec::with_capacity(7 + salt_len + 2 * self.mechanism.hash_len());
        out.push(FORMAT_VERSION);
        out.push(self.mechanism.code());
        out.extend_from_slice(&self.iterations.to_be_bytes());
        out.push(u8::try_from(salt_len).unwrap_or(u8::MAX));
        out.extend_from_slice(&self.salt[..salt_len]);
        out.extend_from_slice(&self.stored_key);
        out.extend_from_slice(&self.server_key);
        out
    }

    /// Reads the compact stored form; any inconsistency is an error, never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, AuthError> {
        let corrupt =
            |what: &str| AuthError::bad_value(format!("corrupt SCRAM credential: {what}"));
        let [version, mechanism, i0, i1, i2, i3, salt_len, rest @ ..] = bytes else {
            return Err(corrupt("too short"));
        };
        if *version != FORMAT_VERSION {
            return Err(corrupt("unknown format version"));
        }
        let mechanism =
            ScramMechanism::from_code(*mechanism).ok_or_else(|| corrupt("mechanism"))?;
        let iterations = u32::from_be_bytes([*i0, *i1, *i2, *i3]);
        let salt_len = usize::from(*salt_len);
        let hash_len = mechanism.hash_len();
        if rest.len() != salt_len + 2 * hash_len {
            return Err(corrupt("length"));
        }
        let (salt, keys) = rest.split_at(salt_len);
        let (stored_key, server_key) = keys.split_at(hash_len);
        let credential = ScramCredential {
            mechanism,
            salt: salt.to_vec(),
            iterations,
            stored_key: stored_key.to_vec(),
            server_key: server_key.to_vec(),
        };
        if !credential.is_valid() {
            return Err(corrupt("salt or iteration count"));
        }
        Ok(credential)
    }
}

fn check_shape(salt: &[u8], iterations: u32) -> Result<(), AuthError> {
    if salt.is_empty() || salt.len() > usize::from(u8::MAX) {
        return Err(AuthError::bad_value("SCRAM salt must be 1 to 255 bytes"));
    }
    if iterations < MIN_ITERATIONS {
        return Err(AuthError::bad_value(format!(
            "SCRAM iteration count must be at least {MIN_ITERATIONS}"
        )));
    }
    Ok(())
}

/// `n` bytes from the thread-local CSPRNG (ChaCha seeded from the OS).
pub(crate) fn random_bytes(n: usize) -> Vec<u8> {
    use rand::RngCore as _;
    let mut out = vec![0u8; n];
    rand::rng().fill_bytes(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mongodb_sizes_and_iterations() {
        assert_eq!(ScramMechanism::Sha1.salt_len(), 16);
        assert_eq!(ScramMechanism::Sha256.salt_len(), 28);
        assert_eq!(ScramMechanism::Sha1.default_iterations(), 10_000);
        assert_eq!(ScramMechanism::Sha256.default_iterations(), 15_000);
        assert_eq!(
            ScramMechanism::from_name("SCRAM-SHA-256"),
            Some(ScramMechanism::Sha256)
        );
        assert_eq!(ScramMechanism::from_name("scram-sha-256"), None);
    }

    #[test]
    fn sha1_uses_the_md5_digest_of_user_mongo_password() {
        // MD5("user:mongo:pencil"), the MONGODB-CR / SCRAM-SHA-1 digest from the auth spec.
        assert_eq!(
            mongo_password_digest("user", "pencil"),
            "1c33006ec1ffd90f9cadcbcc0e118200"
        );
        let prepared = ScramMechanism::Sha1.prepare_password("user", "pencil");
        assert_eq!(
            prepared.ok(),
            Some(b"1c33006ec1ffd90f9cadcbcc0e118200".to_vec())
        );
    }

    #[test]
    fn sha256_saslpreps_the_password() {
        let prep = |p: &str| ScramMechanism::Sha256.prepare_password("u", p);
        // The auth spec's SASLprep cases: soft hyphen maps to nothing, U+2163 folds to "IV".
        assert_eq!(prep("I\u{00AD}X").ok(), Some(b"IX".to_vec()));
        assert_eq!(prep("\u{2163}").ok(), Some(b"IV".to_vec()));
        assert_eq!(prep("pencil").ok(), Some(b"pencil".to_vec()));
        // A prohibited control character is refused with BadValue, not a panic.
        assert_eq!(prep("a\u{0007}b").map_err(|e| e.code()), Err(2));
        assert_eq!(prep("\u{00AD}").map_err(|e| e.code()), Err(2));
    }

    #[test]
    fn derive_makes_mongodb_shaped_credentials() {
        for mechanism in [ScramMechanism::Sha1, ScramMechanism::Sha256] {
            let c = ScramCredential::derive(mechanism, "alice", "secret");
            let Ok(c) = c else { panic!("derive failed") };
            assert_eq!(c.salt.len(), mechanism.salt_len());
            assert_eq!(c.iterations, mechanism.default_iterations());
            assert_eq!(c.stored_key.len(), mechanism.hash_len());
            assert_eq!(c.server_key.len(), mechanism.hash_len());
            assert!(c.is_valid());
            let again = ScramCredential::derive(mechanism, "alice", "secret");
            assert_ne!(
                again.map(|a| a.salt).ok(),
                Some(c.salt.clone()),
                "salt is random"
            );
        }
    }

    #[test]
    fn too_few_iterations_are_refused() {
        let r = ScramCredential::derive_with(ScramMechanism::Sha256, "u", "p", &[1; 28], 4095);
        assert_eq!(r.map_err(|e| e.code()), Err(2));
    }

    #[test]
    fn bytes_round_trip_and_corruption_is_an_error() {
        let salt = [7u8; 28];
        let c = ScramCredential::derive_with(ScramMechanism::Sha256, "u", "p", &salt, 4096);
        let Ok(c) = c else { panic!("derive failed") };
        let bytes = c.to_bytes();
        assert_eq!(bytes.len(), 7 + 28 + 64);
        assert_eq!(&bytes[..7], &[1, 2, 0, 0, 0x10, 0, 28]);
        assert_eq!(ScramCredential::from_bytes(&bytes).ok(), Some(c.clone()));

        assert!(ScramCredential::from_bytes(&[]).is_err());
        assert!(ScramCredential::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(ScramCredential::from_bytes(&extra).is_err());
        let mut version = bytes.clone();
        version[0] = 9;
        assert!(ScramCredential::from_bytes(&version).is_err());
        let mut mech = bytes.clone();
        mech[1] = 3;
        assert!(ScramCredential::from_bytes(&mech).is_err());
        let mut iters = bytes.clone();
        iters[2..6].copy_from_slice(&100u32.to_be_bytes());
        assert!(ScramCredential::from_bytes(&iters).is_err());
    }

    #[test]
    fn debug_hides_the_keys() {
        let c = ScramCredential {
            mechanism: ScramMechanism::Sha1,
            salt: vec![1; 16],
            iterations: 4096,
            stored_key: vec![0xAB; 20],
            server_key: vec![0xCD; 20],
        };
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("171") && !shown.contains("stored_key"),
            "{shown}"
        );
    }
}
