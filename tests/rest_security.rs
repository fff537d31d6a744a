//! REST security through real HTTP against the real binary: OAuth2 client credentials
//! (clients registered with the secret shown once, tokens from `/oauth/token`, 401 once they
//! expire), JWTs from an external identity provider verified against a JWKS file (issuer,
//! audience, expiry, roles claim, no algorithm confusion), the concert sample of
//! `docgate demo`, and `docgate rest apply`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod common;
mod rest_support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use common::TestServer;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rest_support::Rest;
use serde_json::{json, Value};

const FEED: &str = "/ords/concert/authuser/v1/events/";

fn protected_module() -> Value {
    json!({
        "base_path": "/authuser/v1/",
        "templates": [{"uri_template": "events/", "handlers": [
            {"method": "GET", "source_type": "collection_feed", "source": "events"}]}],
        "privileges": [{"name": "p", "roles": ["concert_user"], "patterns": ["/events/*"]}]
    })
}

async fn seeded(server: &TestServer) -> Rest {
    let rest = Rest::new(server.rest_base());
    rest.post(
        "/ords/concert/soda/latest/events",
        &json!({"_id": 1, "name": "Gig"}),
    )
    .await
    .expect(201);
    rest.put("/ords/concert/_/modules/concert", &protected_module())
        .await
        .expect(201);
    rest
}

fn basic(user: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

async fn token_request(
    rest: &Rest,
    authorization: Option<&str>,
    form: &str,
) -> rest_support::Reply {
    let mut request = rest
        .http
        .post(format!("{}/ords/concert/oauth/token", rest.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form.to_string());
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    let response = request.send().await.expect("token request");
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.json::<Value>().await.unwrap_or(Value::Null);
    rest_support::Reply {
        status,
        headers,
        body,
    }
}

#[tokio::test]
async fn oauth_client_credentials_grant_tokens_that_expire() {
    let server = TestServer::start_with_args(&["--rest-token-lifetime", "2s"]);
    let rest = seeded(&server).await;
    let clients = "/ords/concert/_/oauth/clients";
    let fan = rest
        .post(
            clients,
            &json!({"name": "fan-app", "roles": ["concert_user"]}),
        )
        .await
        .expect(201);
    let (id, secret) = (
        fan["client_id"].as_str().expect("client_id").to_string(),
        fan["client_secret"]
            .as_str()
            .expect("client_secret")
            .to_string(),
    );
    let stranger = rest
        .post(
            clients,
            &json!({"name": "other-app", "roles": ["reporting"]}),
        )
        .await
        .expect(201);
    let listing = rest.get(clients).await.expect(200);
    assert_eq!(listing["count"], json!(2));
    assert!(
        !listing.to_string().contains(&secret),
        "secrets are shown once only"
    );

    let granted = token_request(
        &rest,
        Some(&basic(&id, &secret)),
        "grant_type=client_credentials",
    )
    .await
    .expect(200);
    assert_eq!(granted["token_type"], json!("bearer"));
    assert_eq!(granted["expires_in"], json!(2));
    let token = granted["access_token"].as_str().expect("token").to_string();
    let form_fields =
        format!("grant_type=client_credentials&client_id={id}&client_secret={secret}");
    token_request(&rest, None, &form_fields).await.expect(200);
    token_request(
        &rest,
        Some(&basic(&id, "wrong")),
        "grant_type=client_credentials",
    )
    .await
    .expect_error(401);
    token_request(&rest, Some(&basic(&id, &secret)), "grant_type=password")
        .await
        .expect_error(400);

    let bearer = rest.with_authorization(&format!("Bearer {token}"));
    assert_eq!(bearer.get(FEED).await.expect(200)["count"], json!(1));
    rest.with_authorization("Bearer not-a-token")
        .get(FEED)
        .await
        .expect_error(401);
    let other_token = token_request(
        &rest,
        Some(&basic(
            stranger["client_id"].as_str().unwrap_or_default(),
            stranger["client_secret"].as_str().unwrap_or_default(),
        )),
        "grant_type=client_credentials",
    )
    .await
    .expect(200);
    rest.with_authorization(&format!(
        "Bearer {}",
        other_token["access_token"].as_str().unwrap_or_default()
    ))
    .get(FEED)
    .await
    .expect_error(403);

    tokio::time::sleep(Duration::from_millis(3100)).await;
    let expired = bearer.get(FEED).await;
    assert!(expired.headers.contains_key("www-authenticate"));
    expired.expect_error(401);

    rest.delete(&format!("{clients}/{id}")).await.expect(200);
    token_request(
        &rest,
        Some(&basic(&id, &secret)),
        "grant_type=client_credentials",
    )
    .await
    .expect_error(401);
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn idp_token(claims: &Value) -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/jwt/idp_ed25519_pkcs8.der.b64"
    );
    let text = std::fs::read_to_string(path).expect("read the test IdP key");
    let der = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .expect("base64 key");
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("test-idp-1".into());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_ed_der(&der)).expect("sign")
}

#[tokio::test]
async fn jwts_from_an_identity_provider_are_verified_against_its_jwks() {
    let jwks = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/jwt/jwks.json");
    let server = TestServer::start_with_args(&[
        "--rest-jwks",
        jwks,
        "--rest-jwt-issuer",
        "https://idp.example",
        "--rest-jwt-audience",
        "docgate-tests",
    ]);
    let rest = seeded(&server).await;
    let good = json!({"sub": "alice", "iss": "https://idp.example", "aud": "docgate-tests",
                      "exp": now() + 60, "roles": ["concert_user"]});
    let with = |token: String| rest.with_authorization(&format!("Bearer {token}"));
    assert_eq!(
        with(idp_token(&good)).get(FEED).await.expect(200)["count"],
        json!(1)
    );

    let mut wrong_audience = good.clone();
    wrong_audience["aud"] = json!("someone-else");
    with(idp_token(&wrong_audience))
        .get(FEED)
        .await
        .expect_error(401);
    let mut wrong_issuer = good.clone();
    wrong_issuer["iss"] = json!("https://evil.example");
    with(idp_token(&wrong_issuer))
        .get(FEED)
        .await
        .expect_error(401);
    let mut expired = good.clone();
    expired["exp"] = json!(now() - 5);
    with(idp_token(&expired)).get(FEED).await.expect_error(401);
    let mut no_roles = good.clone();
    no_roles["roles"] = json!([]);
    with(idp_token(&no_roles)).get(FEED).await.expect_error(403);

    // An HS256 token "signed" with the public key must not pass (algorithm confusion).
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("test-idp-1".into());
    let forged = jsonwebtoken::encode(
        &header,
        &good,
        &EncodingKey::from_secret(b"9fglON8hwCfX-vxt3rGCk9JJeQOBrOrc3H0kRftDxUs"),
    )
    .expect("sign");
    with(forged).get(FEED).await.expect_error(401);
}

#[tokio::test]
async fn the_demo_serves_the_concert_sample_to_its_user() {
    let mut server = TestServer::start_with_args(&["demo"]);
    let rest = Rest::new(server.rest_base());
    rest.get(FEED).await.expect_error(401);
    let fan = rest.with_authorization(&basic("fan", "fan"));
    let events = fan.get(FEED).await.expect(200);
    assert_eq!(events["count"], json!(8));
    assert_eq!(events["items"][0]["name"], json!("Orbit at the Harbor"));
    let one = fan.get(&format!("{FEED}3")).await.expect(200);
    assert_eq!(one["name"], json!("Lumen Drive Live"));
    let by_artist = rest
        .get("/ords/concert/authuser/v1/artists/1/events")
        .await
        .expect(200);
    let venues: Vec<&str> = by_artist["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|e| e["venue"].as_str())
        .collect();
    assert_eq!(venues, ["Harbor Hall", "Riverside Amphitheatre"]);
    // The module's `$project` computes `venue` then `city`: its definition keeps its key
    // order on every backend (PostgreSQL once stored it as jsonb, which sorts keys).
    let keys: Vec<&str> = by_artist["items"][0]
        .as_object()
        .expect("an event")
        .keys()
        .map(String::as_str)
        .collect();
    let (venue, city) = (
        keys.iter().position(|k| *k == "venue"),
        keys.iter().position(|k| *k == "city"),
    );
    assert!(venue.is_some() && venue < city, "keys in order: {keys:?}");

    // Loading again on the same data changes nothing.
    server.restart_same_data();
    let rest = Rest::new(server.rest_base()).with_authorization(&basic("fan", "fan"));
    assert_eq!(rest.get(FEED).await.expect(200)["count"], json!(8));
}

#[tokio::test]
async fn rest_apply_stores_modules_from_a_file() {
    let server = TestServer::start_with_args(&["--cache-metadata-timeout", "1s"]);
    let rest = Rest::new(server.rest_base());
    rest.post(
        "/ords/concert/soda/latest/events",
        &json!({"_id": 1, "name": "Gig"}),
    )
    .await
    .expect(201);
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("modules.json");
    let mut module = protected_module();
    module["name"] = json!("concert");
    module["privileges"] = json!([]);
    std::fs::write(&file, Value::Array(vec![module]).to_string()).expect("write");
    let backend = server.backend().arg();
    let output = common::launcher::docgate_command()
        .args([
            "--backend",
            &backend,
            "--rest-listen",
            "off",
            "rest",
            "apply",
        ])
        .arg(&file)
        .args(["--db", "concert"])
        .output()
        .expect("run docgate rest apply");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("created REST module concert in concert"),
        "{stderr}"
    );

    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    loop {
        let reply = rest.get(FEED).await;
        if reply.status == 200 {
            assert_eq!(reply.body["count"], json!(1));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not served: {}",
            reply.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
