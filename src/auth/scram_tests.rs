//! Tests of the SCRAM server: the RFC 5802 and RFC 7677 examples, the MongoDB auth spec's
//! SCRAM-SHA-1 conversation (with the MD5 digest), and round trips against a small client.

use super::*;

fn b64(s: &str) -> Vec<u8> {
    BASE64.decode(s).unwrap_or_default()
}

/// Runs the server against a recorded conversation with a fixed server nonce.
fn replay(
    mechanism: ScramMechanism,
    credential: ScramCredential,
    client_first: &str,
    server_nonce: &str,
    client_final: &str,
) -> (String, Result<SaslReply, AuthError>) {
    let server = ScramServer::new();
    let parsed = ClientFirst::parse(client_first.as_bytes());
    let Ok(parsed) = parsed else {
        panic!("client-first: {parsed:?}")
    };
    let started = server.start_with_nonce(
        mechanism,
        parsed,
        true,
        CredentialLookup::Found(credential),
        server_nonce,
    );
    let Ok((mut conversation, first)) = started else {
        panic!("start: {started:?}")
    };
    assert!(!first.done);
    let server_first = String::from_utf8(first.payload).unwrap_or_default();
    let last = conversation.finish(client_final.as_bytes());
    (server_first, last)
}

#[test]
fn rfc_7677_scram_sha_256_example() {
    let credential = ScramCredential::from_prepared_password(
        ScramMechanism::Sha256,
        b"pencil",
        &b64("W22ZaJ0SNY7soEsUEjb6gQ=="),
        4096,
    );
    let Ok(credential) = credential else {
        panic!("derive")
    };
    let (server_first, last) = replay(
        ScramMechanism::Sha256,
        credential,
        "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
        "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
         p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    );
    assert_eq!(
        server_first,
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    );
    assert_eq!(
        last,
        Ok(SaslReply {
            payload: b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_vec(),
            done: true
        })
    );
}

#[test]
fn rfc_5802_scram_sha_1_example_without_mongodb_digest() {
    // The RFC feeds "pencil" to PBKDF2 directly; MongoDB would feed md5("user:mongo:pencil").
    let credential = ScramCredential::from_prepared_password(
        ScramMechanism::Sha1,
        b"pencil",
        &b64("QSXCR+Q6sek8bf92"),
        4096,
    );
    let Ok(credential) = credential else {
        panic!("derive")
    };
    let (server_first, last) = replay(
        ScramMechanism::Sha1,
        credential,
        "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
        "3rfcNHYJY1ZVvWVs7j",
        "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
    );
    assert_eq!(
        server_first,
        "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096"
    );
    let Ok(last) = last else {
        panic!("final: {last:?}")
    };
    assert_eq!(last.payload, b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=".to_vec());
}

#[test]
fn mongodb_auth_spec_scram_sha_1_conversation_with_the_md5_digest() {
    // The auth spec's SCRAM-SHA-1 example: user "user", password "pencil", 10,000 iterations.
    let credential = ScramCredential::derive_with(
        ScramMechanism::Sha1,
        "user",
        "pencil",
        &b64("rQ9ZY3MntBeuP3E1TDVC4w=="),
        10_000,
    );
    let Ok(credential) = credential else {
        panic!("derive")
    };
    let (server_first, last) = replay(
        ScramMechanism::Sha1,
        credential,
        "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
        "Ho+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE",
        "c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,\
         p=MC2T8BvbmWRckDw8oWl5IVghwCY=",
    );
    assert_eq!(
        server_first,
        "r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,\
         s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000"
    );
    let Ok(last) = last else {
        panic!("final: {last:?}")
    };
    assert_eq!(last.payload, b"v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=".to_vec());
}

/// A minimal SCRAM client, as a driver would run it.
struct Client {
    mechanism: ScramMechanism,
    user: String,
    password: String,
    nonce: String,
    gs2_header: String,
    server_key: Vec<u8>,
    auth_message: String,
}

impl Client {
    fn new(mechanism: ScramMechanism, user: &str, password: &str) -> Self {
        Client {
            mechanism,
            user: user.to_string(),
            password: password.to_string(),
            nonce: BASE64.encode(random_bytes(18)),
            gs2_header: "n,,".to_string(),
            server_key: Vec::new(),
            auth_message: String::new(),
        }
    }

    fn bare(&self) -> String {
        let name = self.user.replace('=', "=3D").replace(',', "=2C");
        format!("n={name},r={}", self.nonce)
    }

    fn first(&self) -> Vec<u8> {
        format!("{}{}", self.gs2_header, self.bare()).into_bytes()
    }

    fn last(&mut self, server_first: &[u8]) -> Vec<u8> {
        let text = String::from_utf8(server_first.to_vec()).unwrap_or_default();
        let mut nonce = "";
        let mut salt = Vec::new();
        let mut iterations = 0;
        for field in text.split(',') {
            if let Some(v) = field.strip_prefix("r=") {
                nonce = v;
            } else if let Some(v) = field.strip_prefix("s=") {
                salt = b64(v);
            } else if let Some(v) = field.strip_prefix("i=") {
                iterations = v.parse().unwrap_or(0);
            }
        }
        assert!(nonce.starts_with(&self.nonce));
        let m = self.mechanism;
        let prepared = m
            .prepare_password(&self.user, &self.password)
            .unwrap_or_default();
        let salted = m.salted_password(&prepared, &salt, iterations);
        let keys = super::super::credentials::DerivedKeys::from_salted_password(m, &salted);
        let Ok(keys) = keys else { panic!("keys") };
        let client_key = m.hmac(&salted, b"Client Key").unwrap_or_default();
        let without_proof = format!("c={},r={nonce}", BASE64.encode(self.gs2_header.as_bytes()));
        self.auth_message = format!("{},{text},{without_proof}", self.bare());
        let signature = m
            .hmac(&keys.stored_key, self.auth_message.as_bytes())
            .unwrap_or_default();
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        self.server_key = keys.server_key;
        format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes()
    }

    fn server_signature_ok(&self, server_final: &[u8]) -> bool {
        let expected = self
            .mechanism
            .hmac(&self.server_key, self.auth_message.as_bytes())
            .unwrap_or_default();
        server_final == format!("v={}", BASE64.encode(expected)).as_bytes()
    }
}

fn lookup_for(stored: &ScramCredential, name: &str) -> impl FnOnce(&str) -> CredentialLookup {
    let stored = stored.clone();
    let name = name.to_string();
    move |user: &str| {
        if user == name {
            CredentialLookup::Found(stored)
        } else {
            CredentialLookup::UnknownUser
        }
    }
}

fn credential(mechanism: ScramMechanism, user: &str, password: &str) -> ScramCredential {
    let salt = random_bytes(mechanism.salt_len());
    let made = ScramCredential::derive_with(mechanism, user, password, &salt, 4096);
    let Ok(made) = made else { panic!("derive") };
    made
}

#[test]
fn round_trip_both_mechanisms_with_skip_empty_exchange() {
    let server = ScramServer::new();
    for mechanism in [ScramMechanism::Sha1, ScramMechanism::Sha256] {
        // A user name with the characters SCRAM escapes and a password SASLprep changes.
        let user = "a,b=c";
        let stored = credential(mechanism, user, "p\u{00AD}w\u{2163}");
        let mut client = Client::new(mechanism, user, "p\u{00AD}w\u{2163}");
        let started = server.start(mechanism, &client.first(), true, lookup_for(&stored, user));
        let Ok((mut conversation, first)) = started else {
            panic!("start: {started:?}")
        };
        assert_eq!(conversation.username(), user);
        assert_eq!(conversation.authenticated_user(), None);
        let reply = conversation.step(&client.last(&first.payload));
        let Ok(reply) = reply else {
            panic!("final: {reply:?}")
        };
        assert!(reply.done);
        assert!(client.server_signature_ok(&reply.payload));
        assert_eq!(conversation.authenticated_user(), Some(user));
        // Nothing more is expected once done.
        assert_eq!(conversation.step(b""), Err(AuthError::AuthenticationFailed));
        assert_eq!(conversation.authenticated_user(), None);
    }
}

#[test]
fn without_skip_empty_exchange_one_more_empty_round_ends_it() {
    let server = ScramServer::new();
    let mechanism = ScramMechanism::Sha256;
    let stored = credential(mechanism, "bob", "pw");
    let mut client = Client::new(mechanism, "bob", "pw");
    let started = server.start(
        mechanism,
        &client.first(),
        false,
        lookup_for(&stored, "bob"),
    );
    let Ok((mut conversation, first)) = started else {
        panic!("start")
    };
    let reply = conversation.step(&client.last(&first.payload));
    let Ok(reply) = reply else {
        panic!("final: {reply:?}")
    };
    assert!(!reply.done);
    assert!(client.server_signature_ok(&reply.payload));
    assert_eq!(conversation.authenticated_user(), None, "not until done");
    let end = conversation.step(b"");
    assert_eq!(
        end,
        Ok(SaslReply {
            payload: Vec::new(),
            done: true
        })
    );
    assert_eq!(conversation.authenticated_user(), Some("bob"));
}

#[test]
fn wrong_password_and_unknown_user_fail_alike() {
    let server = ScramServer::new();
    let mechanism = ScramMechanism::Sha256;
    let stored = credential(mechanism, "carol", "right");
    for (user, password) in [("carol", "wrong"), ("nobody", "right")] {
        let mut client = Client::new(mechanism, user, password);
        let started = server.start(
            mechanism,
            &client.first(),
            true,
            lookup_for(&stored, "carol"),
        );
        let Ok((mut conversation, first)) = started else {
            panic!("start")
        };
        // The unknown user gets a well-formed challenge with a real-looking salt.
        let text = String::from_utf8(first.payload.clone()).unwrap_or_default();
        assert!(text.contains(",i=15000") || user == "carol", "{text}");
        let salt = text
            .split(",s=")
            .nth(1)
            .and_then(|s| s.split(',').next())
            .unwrap_or("");
        assert_eq!(b64(salt).len(), mechanism.salt_len());
        let last = conversation.step(&client.last(&first.payload));
        assert_eq!(last, Err(AuthError::AuthenticationFailed));
        assert_eq!(
            last.map_err(|e| e.to_string()),
            Err("Authentication failed.".into())
        );
        assert_eq!(conversation.authenticated_user(), None);
    }
}

#[test]
fn unknown_user_salt_is_stable_per_name_and_differs_between_names() {
    let server = ScramServer::new();
    let m = ScramMechanism::Sha1;
    let a1 = server.fake_credential(m, "ghost");
    let a2 = server.fake_credential(m, "ghost");
    let b = server.fake_credential(m, "ghost2");
    assert_eq!(a1.salt, a2.salt);
    assert_ne!(a1.salt, b.salt);
    assert_eq!(a1.salt.len(), 16);
    assert_eq!(a1.iterations, 10_000);
    let shared = ScramServer::with_secret([9; 32]);
    assert_eq!(
        shared.fake_credential(m, "ghost").salt,
        ScramServer::with_secret([9; 32])
            .fake_credential(m, "ghost")
            .salt
    );
    assert_ne!(shared.fake_credential(m, "ghost").salt, a1.salt);
}

#[test]
fn user_without_a_credential_for_the_mechanism_is_334() {
    let server = ScramServer::new();
    let sha1 = credential(ScramMechanism::Sha1, "dave", "pw");
    let client = Client::new(ScramMechanism::Sha256, "dave", "pw");
    let found = server.start(ScramMechanism::Sha256, &client.first(), true, |_: &str| {
        CredentialLookup::Found(sha1)
    });
    assert_eq!(found.map(|_| ()).map_err(|e| e.code()), Err(334));
    let none = server.start(ScramMechanism::Sha256, &client.first(), true, |_: &str| {
        CredentialLookup::NoCredentialForMechanism
    });
    assert_eq!(none.map(|_| ()).map_err(|e| e.code()), Err(334));
}

#[test]
fn malformed_client_first_messages_are_bad_values() {
    let cases: &[&[u8]] = &[
        b"",
        b"n",
        b"n,,",
        b"x,,n=user,r=abcdef",
        b"p=tls-unique,,n=user,r=abcdef",
        b"n,,m=ext,n=user,r=abcdef",
        b"n,,n=,r=abcdef",
        b"n,,n=user",
        b"n,,n=user,r=abc",
        b"n,,n=us=er,r=abcdef",
        b"n,,n=user,r=ab\x7fcd",
        b"n,a=other,n=user,r=abcdef",
        b"n,b=user,n=user,r=abcdef",
        b"n,,n=\xff\xfe,r=abcdef",
    ];
    for case in cases {
        let parsed = ClientFirst::parse(case);
        assert_eq!(parsed.map(|_| ()).map_err(|e| e.code()), Err(2), "{case:?}");
    }
    let long = [b'a'; MAX_MESSAGE + 1];
    assert!(ClientFirst::parse(&long).is_err());
    let ok = ClientFirst::parse(b"y,a=us=2Cer,n=us=2Cer,r=abcd,x=ext");
    assert_eq!(
        ok.map(|c| c.username().to_string()).ok().as_deref(),
        Some("us,er")
    );
}

#[test]
fn malformed_or_mismatched_client_final_messages_fail_and_end_the_conversation() {
    let server = ScramServer::new();
    let mechanism = ScramMechanism::Sha256;
    let stored = credential(mechanism, "erin", "pw");
    let mut client = Client::new(mechanism, "erin", "pw");
    let good = |server: &ScramServer, client: &mut Client| {
        let started = server.start(
            mechanism,
            &client.first(),
            true,
            lookup_for(&stored, "erin"),
        );
        let Ok((conversation, first)) = started else {
            panic!("start")
        };
        let last = String::from_utf8(client.last(&first.payload)).unwrap_or_default();
        (conversation, last)
    };
    let mutations: [fn(&str) -> String; 8] = [
        |m: &str| m.replacen("c=biws", "c=eSws", 1),
        |m: &str| m.replacen("c=biws,", "", 1),
        |m: &str| m.replacen(",r=", ",r=x", 1),
        |m: &str| m.replacen(",p=", ",p=AAAA", 1),
        |m: &str| m.replacen(",p=", ",q=", 1),
        |m: &str| format!("{m}!!"),
        |m: &str| m.split(",p=").next().unwrap_or_default().to_string(),
        |_: &str| String::new(),
    ];
    for mutate in &mutations {
        let (mut conversation, last) = good(&server, &mut client);
        let bad = mutate(&last);
        assert!(conversation.step(bad.as_bytes()).is_err(), "{bad}");
        // The real message no longer works: the conversation is over.
        assert_eq!(
            conversation.step(last.as_bytes()),
            Err(AuthError::AuthenticationFailed)
        );
        assert_eq!(conversation.authenticated_user(), None);
    }
    // A proof flipped in one bit is a wrong password: 18.
    let (mut conversation, last) = good(&server, &mut client);
    let (head, proof) = last.rsplit_once(",p=").unwrap_or_default();
    let mut bytes = b64(proof);
    bytes[0] ^= 1;
    let flipped = format!("{head},p={}", BASE64.encode(bytes));
    assert_eq!(
        conversation.step(flipped.as_bytes()),
        Err(AuthError::AuthenticationFailed)
    );
}
