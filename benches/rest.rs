//! The REST front end under ORDS's two published tests, against the concert sample of
//! `docgate demo` on the real release binary:
//!
//! 1. Oracle's sequential test: `DOCGATE_BENCH_SEQUENTIAL` (100) sequential GETs of the
//!    concert `events` feed over one keep-alive connection, with HTTP Basic (the demo user,
//!    through the fast verification path), with a bearer token (OAuth2 client credentials),
//!    and with no authentication (the same feed in an unprotected module), the three modes
//!    taking turns request by request; k6-style avg/min/med/max/p90/p95 side by side, after a
//!    warm-up that pays the first PBKDF2. Target: Basic within 10% of bearer (printed for the
//!    average, and for the median, which one slow moment of the machine cannot move).
//! 2. Kris Rice's throughput test: 80 concurrent keep-alive clients (`DOCGATE_BENCH_CLIENTS`)
//!    for `DOCGATE_BENCH_SECONDS` (24) per side against the unprotected feed served by
//!    docgate's REST router with `cache.metadata.enabled` false, then true, and against a
//!    minimal hand-written axum handler that runs the same read (catalog, planner, store) with
//!    the same envelope. All three are served from this process — the cached router and the
//!    hand-written handler over one and the same `AppState` (one pool, one catalog cache) —
//!    so the only difference is what docgate does per request (module lookup, privilege
//!    check, binds); requests/s side by side. The time is cut into `DOCGATE_BENCH_ROUNDS`
//!    (12) rounds that rotate the order of the sides (shorter runs have shown ±6% between
//!    runs). Targets: cached ≥ 5× uncached, cached within 8% of hand-written.
//!
//! The load generator shares the machine with the server, so it is a minimal HTTP/1.1 client
//! (a prepared request, a response read to its `Content-Length`) rather than a full one: on
//! a small machine the absolute numbers still say as much about the client as about docgate;
//! the ratios are the point. Nothing is asserted. SQLite always; PostgreSQL as described in
//! `common/mod.rs`.
//!
//! Run: `cargo bench --bench rest` (`DOCGATE_BENCH_PG=0` for SQLite only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::routing::get;
use axum::{Json, Router};
use bson::doc;
use clap::Parser;
use common::{backends, env_usize, print_table, ratio, summarize, us, Backend, Server};
use docgate::config::{Cli, Settings};
use docgate::rest::operations::{self, PageRequest};
use docgate::rest::page::{Envelope, Paging};
use docgate::rest::settings::RestSettings;
use docgate::state::AppState;
use serde_json::{json, Value};

const FEED: &str = "/ords/concert/authuser/v1/events/";
const OPEN_FEED: &str = "/ords/concert/open/v1/events/";
const ADMIN: (&str, &str) = ("bench-admin", "bench-admin-pw");

/// The same feed as the concert module's, without a privilege.
fn open_module() -> Value {
    json!({
        "name": "concert_open", "base_path": "/open/v1/",
        "templates": [{"uri_template": "events/", "handlers": [
            {"method": "GET", "source_type": "collection_feed",
             "source": {"collection": "events", "sort": {"date": 1}}}]}]
    })
}

/// Runs `docgate <args>` on `backend` to completion (setup steps before serving).
fn docgate(backend: &Backend, args: &[&str], env: &[(&str, &str)]) {
    let output = common::launcher::docgate_command()
        .args(["--backend", &backend.arg(), "--rest-listen", "off"])
        .args(args)
        .envs(env.iter().copied())
        .env("DOCGATE_LOG", "warn")
        .output()
        .expect("run docgate");
    assert!(
        output.status.success(),
        "docgate {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The demo sample, an unprotected copy of its feed and an administrator.
fn prepare(backend: &Backend, dir: &Path) {
    let file = dir.join(format!("open-module-{}.json", backend.name()));
    std::fs::write(&file, open_module().to_string()).expect("write module");
    let file = file.to_string_lossy().to_string();
    docgate(backend, &["rest", "apply", &file, "--db", "concert"], &[]);
    docgate(
        backend,
        &[
            "user", "create", "--user", ADMIN.0, "--db", "admin", "--roles", "root",
        ],
        &[("DOCGATE_USER_PASSWORD", ADMIN.1)],
    );
}

fn base(server: &Server) -> String {
    format!("http://127.0.0.1:{}", server.rest_port)
}

async fn get_ok(http: &reqwest::Client, url: &str, authorization: Option<&str>) {
    let mut request = http.get(url);
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    let response = request.send().await.expect("GET");
    let status = response.status();
    let body = response.bytes().await.expect("body");
    assert!(status.is_success(), "GET {url}: {status} {body:?}");
}

/// An access token for a new OAuth client holding `concert_user`.
async fn bearer_token(http: &reqwest::Client, base: &str) -> String {
    let client: Value = http
        .post(format!("{base}/ords/concert/_/oauth/clients"))
        .basic_auth(ADMIN.0, Some(ADMIN.1))
        .json(&json!({"name": "bench", "roles": ["concert_user"]}))
        .send()
        .await
        .expect("register client")
        .json()
        .await
        .expect("client json");
    let token: Value = http
        .post(format!("{base}/ords/concert/oauth/token"))
        .basic_auth(
            client["client_id"].as_str().unwrap_or_default(),
            client["client_secret"].as_str(),
        )
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .expect("token")
        .json()
        .await
        .expect("token json");
    format!(
        "Bearer {}",
        token["access_token"].as_str().expect("access_token")
    )
}

/// k6's figures of one series.
fn k6_row(name: &str, samples: &[Duration]) -> Vec<String> {
    let summary = summarize(samples);
    vec![
        name.to_string(),
        us(summary.mean),
        us(summary.min),
        us(summary.p50),
        us(summary.max),
        us(summary.p90),
        us(summary.p95),
    ]
}

async fn sequential(server: &Server, count: usize) -> Vec<(String, Vec<Duration>)> {
    let http = reqwest::Client::new();
    let base = base(server);
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "fan:fan")
    );
    let bearer = bearer_token(&http, &base).await;
    let modes: [(&str, &str, Option<&str>); 3] = [
        ("basic", FEED, Some(&basic)),
        ("bearer", FEED, Some(&bearer)),
        ("no auth", OPEN_FEED, None),
    ];
    let urls: Vec<String> = modes
        .iter()
        .map(|(_, path, _)| format!("{base}{path}"))
        .collect();
    for ((_, _, authorization), url) in modes.iter().zip(&urls) {
        for _ in 0..10 {
            get_ok(&http, url, *authorization).await;
        }
    }
    // The modes take turns request by request, so a slow moment of the machine falls on
    // every mode alike.
    let mut samples = vec![Vec::with_capacity(count); modes.len()];
    for _ in 0..count {
        for (side, ((_, _, authorization), url)) in modes.iter().zip(&urls).enumerate() {
            let started = Instant::now();
            get_ok(&http, url, *authorization).await;
            samples[side].push(started.elapsed());
        }
    }
    modes
        .iter()
        .zip(samples)
        .map(|((name, _, _), samples)| (name.to_string(), samples))
        .collect()
}

/// One keep-alive HTTP/1.1 connection that sends the same GET again and again. The load
/// generator shares two cores with the server, so it is written to cost as little as it can:
/// a request prepared once, and a response read as far as its `Content-Length`. Every
/// response must be a 200.
struct LoadConnection {
    stream: tokio::net::TcpStream,
    request: Vec<u8>,
    buffer: Vec<u8>,
}

impl LoadConnection {
    async fn open(url: &str) -> LoadConnection {
        let rest = url.strip_prefix("http://").expect("http URL");
        let (authority, path) = rest.split_at(rest.find('/').expect("path"));
        let stream = tokio::net::TcpStream::connect(authority)
            .await
            .expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let request = format!("GET {path} HTTP/1.1\r\nhost: {authority}\r\n\r\n").into_bytes();
        LoadConnection {
            stream,
            request,
            buffer: Vec::with_capacity(16 * 1024),
        }
    }

    /// Sends the GET and reads its whole response.
    async fn get(&mut self) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        self.stream.write_all(&self.request).await.expect("send");
        self.buffer.clear();
        // The response's length, known once its head is in.
        let mut total = usize::MAX;
        while self.buffer.len() < total {
            let mut chunk = [0u8; 8192];
            let n = self.stream.read(&mut chunk).await.expect("read");
            assert!(n > 0, "server closed the connection");
            self.buffer.extend_from_slice(&chunk[..n]);
            if total == usize::MAX {
                if let Some(at) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = std::str::from_utf8(&self.buffer[..at]).expect("head");
                    assert!(head.starts_with("HTTP/1.1 200"), "not a 200: {head}");
                    let length: usize = head
                        .lines()
                        .find_map(|line| {
                            let (name, value) = line.split_once(':')?;
                            name.eq_ignore_ascii_case("content-length")
                                .then(|| value.trim().parse().ok())?
                        })
                        .expect("content-length");
                    total = at + 4 + length;
                }
            }
        }
        assert_eq!(self.buffer.len(), total, "one response at a time");
    }
}

/// Requests that `clients` concurrent keep-alive connections complete against `url` when
/// they start new ones for `window`, and the time until the last one finished
/// (connections are opened and warmed before the clock starts).
async fn requests_in_window(url: &str, clients: usize, window: Duration) -> (u64, Duration) {
    let mut connections = Vec::with_capacity(clients);
    for _ in 0..clients {
        let mut connection = LoadConnection::open(url).await;
        connection.get().await;
        connections.push(connection);
    }
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + window;
    let tasks: Vec<_> = connections
        .into_iter()
        .map(|mut connection| {
            let done = done.clone();
            tokio::spawn(async move {
                while Instant::now() < deadline {
                    connection.get().await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("client task");
    }
    (done.load(Ordering::Relaxed), started.elapsed())
}

/// Requests/s of each of `urls` under `clients` concurrent clients, measured side by side:
/// `rounds` rounds of one window per URL, the order rotating each round, so that a noisy
/// moment of the machine falls on every side alike. Each side's figure is its requests over
/// all rounds divided by its total time (including the requests in flight at each window's
/// end).
async fn throughput_side_by_side(
    urls: &[&str],
    clients: usize,
    rounds: usize,
    window: Duration,
) -> Vec<f64> {
    let mut completed = vec![(0u64, Duration::ZERO); urls.len()];
    for round in 0..rounds {
        for step in 0..urls.len() {
            let side = (round + step) % urls.len();
            let (requests, took) = requests_in_window(urls[side], clients, window).await;
            completed[side].0 += requests;
            completed[side].1 += took;
        }
    }
    completed
        .iter()
        .map(|(requests, took)| *requests as f64 / took.as_secs_f64())
        .collect()
}

/// The hand-written baseline: one route, the same read and envelope, nothing else.
async fn hand_written_events(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    headers: HeaderMap,
) -> Json<Envelope<docgate::rest::extjson::RelaxedRaw>> {
    let paging = Paging {
        offset: 0,
        limit: 25,
    };
    let sort = doc! {"date": 1};
    let filter = doc! {};
    let collection = operations::existing_collection(&state, "concert", "events")
        .await
        .expect("events");
    let page = operations::find_page(
        &state,
        &collection,
        PageRequest {
            filter: &filter,
            sort: Some(&sort),
            offset: paging.offset,
            limit: paging.limit,
            resume: None,
        },
    )
    .await
    .expect("page");
    let items = page
        .items
        .into_iter()
        .map(docgate::rest::extjson::RelaxedRaw)
        .collect();
    Json(Envelope::new(
        items,
        page.has_more,
        paging,
        page.next.as_ref(),
        &uri,
        &headers,
    ))
}

/// An `AppState` over `backend` with the metadata cache on or off.
async fn app_state(backend: &Backend, cache: bool) -> Arc<AppState> {
    let cache = cache.to_string();
    let cli = Cli::parse_from([
        "docgate",
        "--backend",
        &backend.arg(),
        "--cache-metadata-enabled",
        &cache,
    ]);
    let settings = Settings::resolve(cli, Vec::new()).expect("settings");
    AppState::open(settings.app).await.expect("open backend")
}

/// Serves `app` on a free port of this process; answers its base URL.
async fn serve_in_process(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    base
}

/// docgate's REST router over `state`.
async fn docgate_router(state: Arc<AppState>) -> String {
    let rest = docgate::rest::RestState::new(state, &RestSettings::default()).expect("rest state");
    serve_in_process(docgate::rest::router(rest)).await
}

/// The hand-written handler over `state`.
async fn hand_written(state: Arc<AppState>) -> String {
    let app = Router::new()
        .route("/events/", get(hand_written_events))
        .with_state(state);
    format!("{}/events/", serve_in_process(app).await)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let count = env_usize("DOCGATE_BENCH_SEQUENTIAL", 100);
    let clients = env_usize("DOCGATE_BENCH_CLIENTS", 80);
    let seconds = env_usize("DOCGATE_BENCH_SECONDS", 24) as u64;
    let rounds = env_usize("DOCGATE_BENCH_ROUNDS", 12).max(1);
    let dir = tempfile::Builder::new()
        .prefix("docgate-bench-rest-")
        .tempdir()
        .expect("temp dir");
    let (backends, _pg) = backends(dir.path());
    println!(
        "rest: concert events feed (8 documents); {count} sequential GETs per mode; \
         {clients} clients x {seconds}s per throughput side, in {rounds} interleaved rounds"
    );
    for backend in &backends {
        prepare(backend, dir.path());
        let cached = Server::start(backend, dir.path(), &["demo"]);
        let series = sequential(&cached, count).await;
        println!("\n[{}] sequential, microseconds", backend.name());
        let rows: Vec<Vec<String>> = series.iter().map(|(n, s)| k6_row(n, s)).collect();
        print_table(&["mode", "avg", "min", "med", "max", "p90", "p95"], &rows);
        let summary =
            |name: &str| summarize(&series.iter().find(|(n, _)| n == name).expect("series").1);
        let (basic, bearer) = (summary("basic"), summary("bearer"));
        println!(
            "basic/bearer (avg): {}   (med): {}   target within 1.10x",
            ratio(basic.mean, bearer.mean),
            ratio(basic.p50, bearer.p50)
        );

        drop(cached);

        // In this process: docgate's router and the hand-written handler over one AppState.
        let shared = app_state(backend, true).await;
        let cached_url = format!("{}{OPEN_FEED}", docgate_router(shared.clone()).await);
        let hand_url = hand_written(shared).await;
        let uncached_state = app_state(backend, false).await;
        let uncached_url = format!("{}{OPEN_FEED}", docgate_router(uncached_state).await);
        let rps = throughput_side_by_side(
            &[&uncached_url, &cached_url, &hand_url],
            clients,
            rounds,
            Duration::from_secs_f64(seconds as f64 / rounds as f64),
        )
        .await;
        let (uncached_rps, cached_rps, hand_rps) = (rps[0], rps[1], rps[2]);

        println!("\n[{}] throughput, requests/s", backend.name());
        print_table(
            &["handler", "req/s", "vs hand-written"],
            &[
                ("metadata cache off", uncached_rps),
                ("metadata cache on", cached_rps),
                ("hand-written axum", hand_rps),
            ]
            .iter()
            .map(|(name, rps)| {
                vec![
                    name.to_string(),
                    format!("{rps:.0}"),
                    format!("{:.2}x", rps / hand_rps),
                ]
            })
            .collect::<Vec<_>>(),
        );
        println!(
            "cached/uncached: {:.2}x (target >= 5x)   cached/hand-written: {:.2}x (target >= 0.92x)",
            cached_rps / uncached_rps,
            cached_rps / hand_rps
        );
    }
}
