//! The server side of a SCRAM conversation (RFC 5802, RFC 7677) as MongoDB runs it over
//! `saslStart` / `saslContinue`.
//!
//! The payloads are the raw SCRAM messages. With `options: { skipEmptyExchange: true }` on
//! `saslStart` (every current driver) the server answers `done: true` together with the
//! `v=ServerSignature` message; without it, MongoDB answers `done: false` there and `done: true`
//! to one more, empty, `saslContinue` ([`ScramConversation::step`] handles both).
//!
//! Unknown users go through exactly the same steps with a fake credential whose salt is
//! derived from a per-process secret and the user name, so the salt an unknown user gets is
//! stable, the work done is the same, and the answer is the same 18 AuthenticationFailed as a
//! wrong password.
//!
//! Like MongoDB: user names are not SASLprep'd, `=2C` and `=3D` in the user name decode to `,`
//! and `=`, an authzid must equal the user name, channel binding (`p=`) and mandatory
//! extensions (`m=`) are refused. Stricter than MongoDB: the `c=` attribute must be the base64
//! of the GS2 header (`biws` for `n,,`), as RFC 5802 requires.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use subtle::ConstantTimeEq;

use super::credentials::{random_bytes, ScramCredential, ScramMechanism};
use super::AuthError;

/// Largest SCRAM message accepted (a real one is about 100 bytes).
const MAX_MESSAGE: usize = 8 * 1024;
/// MongoDB's server nonce: 24 random bytes, 32 base64 characters.
const SERVER_NONCE_BYTES: usize = 24;

/// What the caller found for the user named in `client-first-message`.
#[derive(Debug, Clone)]
pub enum CredentialLookup {
    /// The user exists and has a credential (for this mechanism, or the conversation fails
    /// with 334 as MongoDB does).
    Found(ScramCredential),
    /// The user exists but has no credential for this mechanism: 334 MechanismUnavailable, as
    /// MongoDB answers (drivers pick a mechanism from `saslSupportedMechs` first).
    NoCredentialForMechanism,
    /// No such user: the conversation continues with a fake credential and fails at the end.
    UnknownUser,
}

/// One reply of the conversation: the `payload` and `done` fields of the command reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslReply {
    /// The raw SCRAM message to send back (empty for the final empty exchange).
    pub payload: Vec<u8>,
    /// Whether the conversation is over.
    pub done: bool,
}

/// A parsed `client-first-message`: parse it first to learn the user name, look the user up,
/// then [`ScramServer::start_parsed`].
#[derive(Debug, Clone)]
pub struct ClientFirst {
    gs2_header: String,
    bare: String,
    username: String,
    client_nonce: String,
}

impl ClientFirst {
    /// Parses `gs2-header client-first-message-bare`.
    pub fn parse(message: &[u8]) -> Result<Self, AuthError> {
        let text = message_text(message, "client-first-message")?;
        let (cbind_flag, rest) = text
            .split_once(',')
            .ok_or_else(|| AuthError::bad_value("malformed SCRAM client-first-message"))?;
        match cbind_flag {
            "n" | "y" => {}
            flag if flag.starts_with("p=") => {
                return Err(AuthError::bad_value(
                    "Server does not support channel binding",
                ))
            }
            flag => {
                return Err(AuthError::bad_value(format!(
                    "Incorrect SCRAM client message prefix: {flag}"
                )))
            }
        }
        let (authzid, bare) = rest
            .split_once(',')
            .ok_or_else(|| AuthError::bad_value("malformed SCRAM client-first-message"))?;
        let authzid = match authzid {
            "" => None,
            a => match a.strip_prefix("a=") {
                Some(name) => Some(decode_saslname(name)?),
                None => return Err(AuthError::bad_value("Incorrect SCRAM authzid")),
            },
        };
        if bare.starts_with("m=") {
            return Err(AuthError::bad_value(
                "SCRAM mandatory extensions are not supported",
            ));
        }
        let mut fields = bare.split(',');
        let username = match fields.next().and_then(|f| f.strip_prefix("n=")) {
            Some(name) if !name.is_empty() => decode_saslname(name)?,
            _ => return Err(AuthError::bad_value("Invalid SCRAM user name")),
        };
        if authzid.as_deref().is_some_and(|a| a != username) {
            return Err(AuthError::bad_value(
                "SCRAM user name does not match authzid",
            ));
        }
        let client_nonce = match fields.next().and_then(|f| f.strip_prefix("r=")) {
            Some(nonce) if nonce.len() >= 4 && nonce.bytes().all(is_nonce_char) => nonce,
            _ => return Err(AuthError::bad_value("Invalid SCRAM client nonce")),
        };
        Ok(ClientFirst {
            gs2_header: text[..text.len() - bare.len()].to_string(),
            bare: bare.to_string(),
            username,
            client_nonce: client_nonce.to_string(),
        })
    }

    /// The user name, decoded (`=2C` → `,`, `=3D` → `=`) and not SASLprep'd.
    pub fn username(&self) -> &str {
        &self.username
    }
}

/// Per-process state shared by all conversations: the secret behind fake credentials and the
/// iteration counts fake credentials claim (set them to the configured counts).
#[derive(Clone)]
pub struct ScramServer {
    secret: [u8; 32],
    sha1_iterations: u32,
    sha256_iterations: u32,
}

impl Default for ScramServer {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ScramServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramServer").finish_non_exhaustive()
    }
}

impl ScramServer {
    /// A server with a fresh random secret and MongoDB's default iteration counts.
    pub fn new() -> Self {
        let mut secret = [0u8; 32];
        secret.copy_from_slice(&random_bytes(32));
        Self::with_secret(secret)
    }

    /// A server with a given secret: several instances sharing one secret (for example one
    /// kept in the catalog) give an unknown user the same fake salt, as they would a real one.
    pub fn with_secret(secret: [u8; 32]) -> Self {
        ScramServer {
            secret,
            sha1_iterations: ScramMechanism::Sha1.default_iterations(),
            sha256_iterations: ScramMechanism::Sha256.default_iterations(),
        }
    }

    /// The iteration counts fake credentials claim; use the counts new credentials get.
    pub fn with_iterations(mut self, sha1: u32, sha256: u32) -> Self {
        self.sha1_iterations = sha1;
        self.sha256_iterations = sha256;
        self
    }

    /// A deterministic credential for a user that does not exist: same salt for the same name
    /// within the process (or across processes sharing the secret), keys nobody can match.
    pub fn fake_credential(&self, mechanism: ScramMechanism, user: &str) -> ScramCredential {
        let part = |label: &[u8], len: usize| {
            let mut data = Vec::with_capacity(label.len() + user.len() + 16);
            data.extend_from_slice(label);
            data.push(0);
            data.extend_from_slice(mechanism.name().as_bytes());
            data.push(0);
            data.extend_from_slice(user.as_bytes());
            let mut out = ScramMechanism::Sha256
                .hmac(&self.secret, &data)
                .unwrap_or_else(|_| vec![0; 32]);
            out.resize(len, 0);
            out
        };
        ScramCredential {
            mechanism,
            salt: part(b"salt", mechanism.salt_len()),
            iterations: match mechanism {
                ScramMechanism::Sha1 => self.sha1_iterations,
                ScramMechanism::Sha256 => self.sha256_iterations,
            },
            stored_key: part(b"stored key", mechanism.hash_len()),
            server_key: part(b"server key", mechanism.hash_len()),
        }
    }

    /// `saslStart`: parses `client_first`, asks `lookup` for the named user's credential and
    /// returns the conversation and the `server-first-message` reply.
    pub fn start(
        &self,
        mechanism: ScramMechanism,
        client_first: &[u8],
        skip_empty_exchange: bool,
        lookup: impl FnOnce(&str) -> CredentialLookup,
    ) -> Result<(ScramConversation, SaslReply), AuthError> {
        let parsed = ClientFirst::parse(client_first)?;
        let found = lookup(parsed.username());
        self.start_parsed(mechanism, parsed, skip_empty_exchange, found)
    }

    /// `saslStart` with the message already parsed and the user already looked up (for an
    /// asynchronous lookup).
    pub fn start_parsed(
        &self,
        mechanism: ScramMechanism,
        client_first: ClientFirst,
        skip_empty_exchange: bool,
        found: CredentialLookup,
    ) -> Result<(ScramConversation, SaslReply), AuthError> {
        let server_nonce = BASE64.encode(random_bytes(SERVER_NONCE_BYTES));
        self.start_with_nonce(
            mechanism,
            client_first,
            skip_empty_exchange,
            found,
            &server_nonce,
        )
    }

    fn start_with_nonce(
        &self,
        mechanism: ScramMechanism,
        client_first: ClientFirst,
        skip_empty_exchange: bool,
        found: CredentialLookup,
        server_nonce: &str,
    ) -> Result<(ScramConversation, SaslReply), AuthError> {
        let (credential, fake) = match found {
            CredentialLookup::Found(credential) if credential.mechanism == mechanism => {
                if !credential.is_valid() {
                    return Err(AuthError::AuthenticationFailed);
                }
                (credential, false)
            }
            CredentialLookup::Found(_) | CredentialLookup::NoCredentialForMechanism => {
                return Err(AuthError::MechanismUnavailable(format!(
                    "Unable to use {0} based authentication for user without any {0} \
                     credentials registered",
                    mechanism.name()
                )))
            }
            CredentialLookup::UnknownUser => (
                self.fake_credential(mechanism, client_first.username()),
                true,
            ),
        };
        let nonce = format!("{}{}", client_first.client_nonce, server_nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            credential.salt_base64(),
            credential.iterations
        );
        let auth_message_prefix = format!("{},{server_first}", client_first.bare);
        let conversation = ScramConversation {
            mechanism,
            username: client_first.username,
            skip_empty_exchange,
            state: State::AwaitingFinal(Box::new(Pending {
                gs2_header: client_first.gs2_header,
                nonce,
                auth_message_prefix,
                credential,
                fake,
            })),
        };
        let reply = SaslReply {
            payload: server_first.into_bytes(),
            done: false,
        };
        Ok((conversation, reply))
    }
}

struct Pending {
    gs2_header: String,
    nonce: String,
    auth_message_prefix: String,
    credential: ScramCredential,
    fake: bool,
}

enum State {
    AwaitingFinal(Box<Pending>),
    AwaitingEmpty,
    Authenticated,
    Failed,
}

/// One SCRAM conversation, kept by the connection between `saslStart` and `saslContinue`.
pub struct ScramConversation {
    mechanism: ScramMechanism,
    username: String,
    skip_empty_exchange: bool,
    state: State,
}

impl std::fmt::Debug for ScramConversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramConversation")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl ScramConversation {
    /// The mechanism of this conversation.
    pub fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    /// The user name the client sent (whether or not the user exists).
    pub fn username(&self) -> &str {
        &self.username
    }

    /// The user, once the conversation is done and the proof was right; `None` before and
    /// after a failure.
    pub fn authenticated_user(&self) -> Option<&str> {
        matches!(self.state, State::Authenticated).then_some(self.username.as_str())
    }

    /// `saslContinue`: the `client-final-message`, then (without `skipEmptyExchange`) the
    /// empty message that ends MongoDB's longer conversation.
    pub fn step(&mut self, payload: &[u8]) -> Result<SaslReply, AuthError> {
        match self.state {
            State::AwaitingFinal(_) => self.finish(payload),
            State::AwaitingEmpty => {
                self.state = State::Authenticated;
                Ok(SaslReply {
                    payload: Vec::new(),
                    done: true,
                })
            }
            State::Authenticated | State::Failed => {
                self.state = State::Failed;
                Err(AuthError::AuthenticationFailed)
            }
        }
    }

    /// Checks `client-final-message` and answers `v=ServerSignature`. Any failure ends the
    /// conversation; a wrong proof and an unknown user both give 18 AuthenticationFailed.
    pub fn finish(&mut self, client_final: &[u8]) -> Result<SaslReply, AuthError> {
        let State::AwaitingFinal(pending) = std::mem::replace(&mut self.state, State::Failed)
        else {
            return Err(AuthError::AuthenticationFailed);
        };
        let server_signature = verify_final(self.mechanism, &pending, client_final)?;
        let payload = format!("v={}", BASE64.encode(server_signature)).into_bytes();
        if self.skip_empty_exchange {
            self.state = State::Authenticated;
        } else {
            self.state = State::AwaitingEmpty;
        }
        Ok(SaslReply {
            payload,
            done: self.skip_empty_exchange,
        })
    }
}

/// Checks the client-final-message against the pending state; returns the ServerSignature.
fn verify_final(
    mechanism: ScramMechanism,
    pending: &Pending,
    client_final: &[u8],
) -> Result<Vec<u8>, AuthError> {
    let text = message_text(client_final, "client-final-message")?;
    let (without_proof, proof) = text
        .rsplit_once(',')
        .ok_or_else(|| AuthError::bad_value("malformed SCRAM client-final-message"))?;
    let proof = proof
        .strip_prefix("p=")
        .ok_or_else(|| AuthError::bad_value("Incorrect SCRAM ClientProof"))?;
    let mut fields = without_proof.split(',');
    let binding = fields
        .next()
        .and_then(|f| f.strip_prefix("c="))
        .ok_or_else(|| AuthError::bad_value("Incorrect SCRAM channel binding"))?;
    if binding != BASE64.encode(pending.gs2_header.as_bytes()) {
        return Err(AuthError::bad_value("Incorrect SCRAM channel binding"));
    }
    let nonce = fields
        .next()
        .and_then(|f| f.strip_prefix("r="))
        .ok_or_else(|| AuthError::bad_value("Incorrect SCRAM client|server nonce"))?;
    if nonce != pending.nonce {
        return Err(AuthError::bad_value(
            "Unmatched SCRAM nonce received from client",
        ));
    }
    let proof = BASE64
        .decode(proof)
        .map_err(|_| AuthError::bad_value("Incorrect SCRAM ClientProof"))?;
    if proof.len() != mechanism.hash_len() {
        return Err(AuthError::AuthenticationFailed);
    }

    let auth_message = format!("{},{without_proof}", pending.auth_message_prefix);
    let credential = &pending.credential;
    // ClientKey = HMAC(StoredKey, AuthMessage) XOR ClientProof; H(ClientKey) must be StoredKey.
    let client_signature = mechanism.hmac(&credential.stored_key, auth_message.as_bytes())?;
    let client_key: Vec<u8> = client_signature
        .iter()
        .zip(&proof)
        .map(|(s, p)| s ^ p)
        .collect();
    let matches = mechanism.hash(&client_key).ct_eq(&credential.stored_key);
    // The fake credential cannot match, but is checked the same way; its result is ignored.
    if !bool::from(matches) || pending.fake {
        return Err(AuthError::AuthenticationFailed);
    }
    mechanism.hmac(&credential.server_key, auth_message.as_bytes())
}

fn message_text<'a>(message: &'a [u8], what: &str) -> Result<&'a str, AuthError> {
    if message.len() > MAX_MESSAGE {
        return Err(AuthError::bad_value(format!("SCRAM {what} too long")));
    }
    std::str::from_utf8(message)
        .map_err(|_| AuthError::bad_value(format!("SCRAM {what} is not UTF-8")))
}

/// RFC 5802 `printable` minus `,`.
fn is_nonce_char(b: u8) -> bool {
    (0x21..=0x7e).contains(&b) && b != b','
}

/// RFC 5802 `saslname`: `=2C` is `,`, `=3D` is `=`, any other `=` is an error.
fn decode_saslname(name: &str) -> Result<String, AuthError> {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        let escape = rest.get(at..at + 3);
        match escape {
            Some("=2C") | Some("=2c") => out.push(','),
            Some("=3D") | Some("=3d") => out.push('='),
            _ => return Err(AuthError::bad_value("Invalid SCRAM user name encoding")),
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
#[path = "scram_tests.rs"]
mod tests;
