#!/usr/bin/env bash
# Runs every docgate test suite, in this order, and stops at the first one that fails:
#
#   1. cargo build                     (debug binary target/debug/docgate)
#   2. PostgreSQL for the Rust tests   (a throwaway cluster via tests/pg_cluster.sh, unless
#                                       DOCGATE_TEST_PG_URL is set or DOCGATE_SKIP_POSTGRES=1)
#   3. cargo test --workspace          (Rust unit and integration tests)
#   4. python client env               (venv in target/test-env/venv, pinned pymongo + pytest)
#   5. node client env                 (npm ci in tests/clients/node: mongodb driver + mongosh)
#   then the integration tests again on PostgreSQL, and for each backend in
#   DOCGATE_TEST_BACKENDS (default "sqlite postgres"):
#   6. pymongo suite                   (pytest tests/clients/python; it starts its own server)
#      MongoDB's CRUD spec tests       (tests/spec/crud_unified.py over the unified-format files
#                                       of pymongo's source distribution, downloaded once)
#   7. mongosh scripts                 (each script, and the `show` helpers, on a fresh server)
#   8. mongosh over TLS                (tests/clients/mongosh/tls/*.js with --tls on a server
#                                       with --tls-mode required; a plain mongosh is refused)
#   9. node driver suite               (node --test tests/clients/node/crud_test.mjs,
#                                       transactions_test.mjs: the driver's and Mongoose's
#                                       transactions; views_test.mjs: views, Mongoose's
#                                       syncIndexes; mongoose_text_test.mjs: a schema with a
#                                       text index; validation_test.mjs: schema validation;
#                                       one server for the five files)
#
# Every server runs on 127.0.0.1 on a free port over fresh storage, and is killed at exit.
# The last line is "N passed, N failed" (N counts suites); the exit code is 0 only if all passed.
#
# Environment:
#   DOCGATE_TEST_BACKENDS  space-separated backends to run the suites against (default: sqlite postgres;
#                          sqlite only with DOCGATE_SKIP_POSTGRES=1)
#   DOCGATE_BIN            server binary (default: target/debug/docgate)
#   DOCGATE_KEEP_WORK=1    keep the temporary work directory (server logs, data) after the run
#   DOCGATE_SKIP_CARGO=1   skip cargo build and cargo test (iterate on the client suites with
#                          an already-built binary)
#   DOCGATE_TEST_PG_URL    a PostgreSQL for the Rust store tests (default: start a throwaway one)
#   DOCGATE_SKIP_POSTGRES=1  skip the PostgreSQL store tests instead
#
# Needs python3 (with venv) and node >= 20.19 with npm; installs the rest itself.

set -uo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT" || exit 1

if [[ "${DOCGATE_SKIP_POSTGRES:-}" == "1" ]]; then
    BACKENDS="${DOCGATE_TEST_BACKENDS:-sqlite}"
else
    BACKENDS="${DOCGATE_TEST_BACKENDS:-sqlite postgres}"
fi
DOCGATE_BIN="${DOCGATE_BIN:-$REPO_ROOT/target/debug/docgate}"
export DOCGATE_BIN

TEST_ENV="$REPO_ROOT/target/test-env"
VENV="$TEST_ENV/venv"
PY_DIR="$REPO_ROOT/tests/clients/python"
NODE_DIR="$REPO_ROOT/tests/clients/node"
MONGOSH_DIR="$REPO_ROOT/tests/clients/mongosh"
TLS_CERTS="$REPO_ROOT/fixtures/tls"
MONGOSH="$NODE_DIR/node_modules/.bin/mongosh"
START_TIMEOUT_S=20
# A server that accepts connections and never answers must not hang the run.
CLIENT_TIMEOUT_S=600

WORK="$(mktemp -d "${TMPDIR:-/tmp}/docgate-tests.XXXXXX")"
PG_DIR=""
SERVER_PIDS=()
PASSED=0
FAILED=0
SUITE_NO=0

# ------------------------------------------------------------------ cleanup

# kill_server PID: SIGTERM, then SIGKILL if it has not exited after 10 s.
kill_server() {
    local pid="$1" i
    kill "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "docgate (pid $pid) ignored SIGTERM for 10 s; killing it" >&2
        kill -9 "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    return 0
}

cleanup() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill_server "$pid"
        fi
    done
    if [[ -n "$PG_DIR" ]]; then
        "$REPO_ROOT/tests/pg_cluster.sh" stop "$PG_DIR" 2>/dev/null
        rm -rf "$PG_DIR"
    fi
    if [[ "${DOCGATE_KEEP_WORK:-}" == "1" ]]; then
        echo "work directory kept: $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

# ------------------------------------------------------------------ suites

summary() {
    echo
    echo "$PASSED passed, $FAILED failed"
}

# run_suite TITLE COMMAND [ARGS...]: runs one suite; on failure prints the summary and exits.
run_suite() {
    local title="$1"
    shift
    SUITE_NO=$((SUITE_NO + 1))
    echo
    echo "================================================================"
    echo "== [$SUITE_NO] $title"
    echo "================================================================"
    local start=$SECONDS rc=0
    "$@" || rc=$?
    local took=$((SECONDS - start))
    if [[ $rc -eq 0 ]]; then
        PASSED=$((PASSED + 1))
        echo "-- PASS: $title (${took}s)"
    else
        FAILED=$((FAILED + 1))
        echo "-- FAIL: $title (exit $rc, ${took}s)"
        summary
        exit 1
    fi
}

# ------------------------------------------------------------------ servers

free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Fresh storage for one server. Prints the --backend argument.
# A backend is one function backend_arg_NAME.
backend_arg_sqlite() {
    local dir="$1/sqlite-data"
    mkdir -p "$dir" || return 1
    echo "sqlite:$dir"
}

# A fresh, empty database in the test PostgreSQL cluster (DOCGATE_TEST_PG_URL).
backend_arg_postgres() {
    if [[ -z "${DOCGATE_TEST_PG_URL:-}" ]]; then
        echo "the postgres backend needs DOCGATE_TEST_PG_URL (run_all.sh starts one unless DOCGATE_SKIP_POSTGRES=1)" >&2
        return 1
    fi
    # Called in a command substitution (a subshell): the name must be unique on its own.
    local name
    name="dg_clients_$(date +%s%N)_$RANDOM"
    psql -q -v ON_ERROR_STOP=1 "$DOCGATE_TEST_PG_URL" -c "CREATE DATABASE $name" >/dev/null || return 1
    echo "${DOCGATE_TEST_PG_URL%/*}/$name"
}

backend_arg() {
    local backend="$1" dir="$2"
    if ! declare -F "backend_arg_$backend" >/dev/null; then
        echo "unknown backend '$backend' (known: sqlite postgres)" >&2
        return 1
    fi
    "backend_arg_$backend" "$dir"
}

# start_server BACKEND NAME [FLAGS...]: starts docgate on fresh storage with extra FLAGS;
# sets SERVER_PID, SERVER_PORT, SERVER_LOG.
start_server() {
    local backend="$1" name="$2"
    shift 2
    local dir="$WORK/$backend/$name"
    mkdir -p "$dir" || return 1
    local arg
    arg="$(backend_arg "$backend" "$dir")" || return 1
    SERVER_PORT="$(free_port)" || return 1
    SERVER_LOG="$dir/docgate.log"
    "$DOCGATE_BIN" --listen "127.0.0.1:$SERVER_PORT" --rest-listen off --admin-listen off --backend "$arg" "$@" >"$SERVER_LOG" 2>&1 </dev/null &
    SERVER_PID=$!
    SERVER_PIDS+=("$SERVER_PID")
    local deadline=$((SECONDS + START_TIMEOUT_S))
    while ((SECONDS < deadline)); do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            echo "docgate exited before listening; its log:" >&2
            tail -n 40 "$SERVER_LOG" >&2
            return 1
        fi
        if port_open "$SERVER_PORT"; then
            return 0
        fi
        sleep 0.1
    done
    echo "docgate did not accept connections on 127.0.0.1:$SERVER_PORT within ${START_TIMEOUT_S}s; its log:" >&2
    tail -n 40 "$SERVER_LOG" >&2
    stop_server
    return 1
}

# stop_server: stops the current server; fails if it had died on its own (a crash).
stop_server() {
    local rc=0 status
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        kill_server "$SERVER_PID"
    else
        wait "$SERVER_PID" 2>/dev/null
        status=$?
        echo "docgate (pid $SERVER_PID) died during the suite (exit $status); its log:" >&2
        tail -n 40 "$SERVER_LOG" >&2
        rc=1
    fi
    return $rc
}

server_uri() {
    echo "mongodb://127.0.0.1:$SERVER_PORT/${1:-}?directConnection=true"
}

show_server_log() {
    echo "--- last lines of the docgate log ($SERVER_LOG) ---"
    tail -n 30 "$SERVER_LOG"
    echo "---"
}

# ------------------------------------------------------------------ Rust

suite_cargo_build() {
    cargo build
}

# The PostgreSQL store tests in `cargo test` need a server: start a throwaway cluster
# (PostgreSQL 15 from Debian's packages) and hand its URL over in DOCGATE_TEST_PG_URL.
# A postgres backend for the client suites (backend_arg_postgres) can create its fresh
# databases in the same cluster.
suite_test_postgres() {
    if [[ -n "${DOCGATE_TEST_PG_URL:-}" ]]; then
        echo "using the PostgreSQL given in DOCGATE_TEST_PG_URL"
        return 0
    fi
    if [[ "${DOCGATE_SKIP_POSTGRES:-}" == "1" ]]; then
        echo "DOCGATE_SKIP_POSTGRES=1: the PostgreSQL store tests will be skipped"
        return 0
    fi
    local pg_bin="${PG_BIN:-/usr/lib/postgresql/15/bin}"
    if [[ ! -x "$pg_bin/initdb" ]]; then
        echo "no PostgreSQL 15 server in $pg_bin; installing Debian's postgresql-15"
        if [[ "$(id -u)" -ne 0 ]]; then
            echo "not root: install postgresql-15, or set DOCGATE_TEST_PG_URL or DOCGATE_SKIP_POSTGRES=1" >&2
            return 1
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql-15 ||
            { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql-15; } ||
            return 1
    fi
    # Not under $WORK: the cluster runs as the postgres user, which cannot enter $WORK (0700).
    PG_DIR="$(mktemp -d /tmp/docgate-pg.XXXXXX)" || return 1
    chmod 755 "$PG_DIR"
    local url
    if ! url="$("$REPO_ROOT/tests/pg_cluster.sh" start "$PG_DIR")"; then
        tail -n 20 "$PG_DIR/log" 2>/dev/null
        return 1
    fi
    export DOCGATE_TEST_PG_URL="$url"
    echo "PostgreSQL for the tests: $DOCGATE_TEST_PG_URL"
}

# DOCGATE_LONG_TESTS=1: the long tests (tests/soak.rs) run too, on each backend.
suite_cargo_test() {
    DOCGATE_LONG_TESTS=1 cargo test --workspace
}

# The integration tests (tests/*.rs) again, each server on a fresh PostgreSQL database.
suite_cargo_test_postgres() {
    DOCGATE_LONG_TESTS=1 DOCGATE_TEST_BACKEND="$DOCGATE_TEST_PG_URL" cargo test --test '*'
}

# ------------------------------------------------------------------ client environments

file_hash() {
    sha256sum "$@" | sha256sum | cut -d' ' -f1
}

suite_python_env() {
    local stamp="$VENV/.requirements.sha256" want
    want="$(file_hash "$PY_DIR/requirements.txt")"
    if [[ -x "$VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        echo "venv up to date: $VENV"
    else
        echo "creating $VENV"
        rm -rf "$VENV"
        python3 -m venv "$VENV" || {
            echo "python3 -m venv failed (on Debian: apt-get install python3-venv)" >&2
            return 1
        }
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
            -r "$PY_DIR/requirements.txt" || return 1
        echo "$want" >"$stamp"
    fi
    "$VENV/bin/python" - <<'EOF'
import pymongo, pytest
from pymongo import compression_support as c
missing = [n for n, ok in (("snappy", c._have_snappy()), ("zlib", c._have_zlib()), ("zstd", c._have_zstd())) if not ok]
assert not missing, f"pymongo lacks compressors: {missing}"
print(f"pymongo {pymongo.version}, pytest {pytest.__version__}, compressors snappy/zlib/zstd")
EOF
}

suite_node_env() {
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        echo "node and npm are needed (node >= 20.19 for the mongodb driver 7)" >&2
        return 1
    fi
    # shellcheck disable=SC2016 # JavaScript, not shell
    node -e '
const [maj, min] = process.versions.node.split(".").map(Number);
if (maj < 20 || (maj === 20 && min < 19)) {
  console.error(`node ${process.versions.node} is too old: the mongodb driver 7 needs >= 20.19`);
  process.exit(1);
}' || return 1
    local stamp="$NODE_DIR/node_modules/.docgate-lock.sha256" want
    want="$(file_hash "$NODE_DIR/package-lock.json")"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$MONGOSH" ]]; then
        echo "node_modules up to date: $NODE_DIR/node_modules"
    else
        # Install scripts only build optional native add-ons (and would fetch
        # headers from the network); the driver and mongosh work without them.
        (cd "$NODE_DIR" && npm ci --ignore-scripts --no-audit --no-fund) || return 1
        echo "$want" >"$stamp"
    fi
    echo "node $(node --version), mongodb driver $(node -p 'require(process.argv[1]).version' \
        "$NODE_DIR/node_modules/mongodb/package.json"), mongosh $("$MONGOSH" --version)"
}

# mongosh must not reach for telemetry, update or snippet hosts, and writes its
# logs under $HOME/.mongodb: give it a config of its own and a HOME of its own.
setup_mongosh_config() {
    MONGOSH_HOME="$WORK/mongosh-home"
    mkdir -p "$MONGOSH_HOME"
    cat >"$WORK/mongosh-config.yaml" <<'EOF'
mongosh:
  forceDisableTelemetry: true
  updateURL: ""
  snippetAutoload: false
  snippetIndexSourceURLs: ""
  disableGreetingMessage: true
EOF
    export MONGOSH_GLOBAL_CONFIG_FILE_FOR_TESTING="$WORK/mongosh-config.yaml"
}

run_mongosh() {
    HOME="$MONGOSH_HOME" timeout -k 10 "$CLIENT_TIMEOUT_S" "$MONGOSH" "$@"
}

# MongoDB's CRUD specification tests (unified format) as pymongo ships them in its source
# distribution on PyPI (the specifications repository's own licence keeps them out of this
# one): downloaded once for the pinned pymongo into target/test-env/spec.
SPEC_DIR="$TEST_ENV/spec/crud-unified"
# The 308 tests that apply to a 7.0 replica set all pass; a lower count fails the suite.
SPEC_EXPECTED_PASSES=308

suite_spec_env() {
    if [[ -d "$SPEC_DIR" ]] && ls "$SPEC_DIR"/*.json >/dev/null 2>&1; then
        echo "CRUD spec tests present: $SPEC_DIR"
        return 0
    fi
    local version download
    version="$(sed -n 's/^pymongo==//p' "$PY_DIR/requirements.txt")"
    download="$TEST_ENV/spec/download"
    rm -rf "$download" "$SPEC_DIR" && mkdir -p "$download" "$SPEC_DIR" || return 1
    "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
        --no-binary :all: "pymongo==$version" -d "$download" || return 1
    tar -xzf "$download/pymongo-$version.tar.gz" -C "$download" \
        "pymongo-$version/test/crud/unified" || return 1
    mv "$download/pymongo-$version/test/crud/unified/"*.json "$SPEC_DIR/" || return 1
    rm -rf "$download"
    echo "CRUD spec tests of pymongo $version: $(ls "$SPEC_DIR" | wc -l) files in $SPEC_DIR"
}

suite_crud_spec() {
    local backend="$1" target=(--start)
    if [[ "$backend" == "postgres" ]]; then
        target=(--backend "$DOCGATE_TEST_PG_URL")
    fi
    timeout -k 10 "$((3 * CLIENT_TIMEOUT_S))" "$VENV/bin/python" tests/spec/crud_unified.py \
        --specs "$SPEC_DIR" "${target[@]}" --failures --expect-pass "$SPEC_EXPECTED_PASSES"
}

# ------------------------------------------------------------------ client suites

suite_pymongo() {
    local backend="$1" dir="$WORK/$1/pytest"
    mkdir -p "$dir" || return 1
    local arg
    arg="$(backend_arg "$backend" "$dir")" || return 1
    # conftest.py starts (and stops) its own server on this fresh storage.
    DOCGATE_BACKEND="$arg" timeout -k 10 "$((3 * CLIENT_TIMEOUT_S))" \
        "$VENV/bin/python" -m pytest "$PY_DIR" -p no:cacheprovider
}

# mongosh_script BACKEND FILE: one script against a fresh server; it must exit 0 and print OK last.
mongosh_script() {
    local backend="$1" file="$2" name out rc=0
    name="$(basename "$file" .js)"
    start_server "$backend" "mongosh-$name" || return 1
    out="$WORK/$backend/mongosh-$name/output.txt"
    run_mongosh "$(server_uri test)" --quiet --file "$file" >"$out" 2>&1 || rc=$?
    cat "$out"
    if [[ $rc -eq 0 && "$(grep -v '^[[:space:]]*$' "$out" | tail -n 1)" != "OK" ]]; then
        echo "script did not print OK last"
        rc=1
    fi
    stop_server || rc=1
    if [[ $rc -ne 0 ]]; then
        show_server_log
    fi
    return $rc
}

# The interactive helpers `show dbs` and `show collections` only work in --eval
# (or interactive) mode, not in --file scripts.
mongosh_show_helpers() {
    local backend="$1" out rc=0
    start_server "$backend" "mongosh-show" || return 1
    out="$WORK/$backend/mongosh-show"
    run_mongosh "$(server_uri shown_db)" --quiet --eval \
        'db.first_coll.insertOne({a: 1}); db.second_coll.insertOne({b: 2}); db.createView("a_view", "first_coll", []); db.getSiblingDB("other_db").c.insertOne({c: 3}); print("seeded")' \
        >"$out/seed.txt" 2>&1 || rc=$?
    cat "$out/seed.txt"
    if [[ $rc -eq 0 ]]; then
        run_mongosh "$(server_uri shown_db)" --quiet --eval 'show dbs' >"$out/dbs.txt" 2>&1 || rc=$?
        echo "\$ mongosh --eval 'show dbs'"
        cat "$out/dbs.txt"
        for want in shown_db other_db; do
            if ! grep -Eq "^${want}[[:space:]]" "$out/dbs.txt"; then
                echo "show dbs: '$want' not listed"
                rc=1
            fi
        done
        run_mongosh "$(server_uri shown_db)" --quiet --eval 'show collections' >"$out/colls.txt" 2>&1 || rc=$?
        echo "\$ mongosh --eval 'show collections'"
        cat "$out/colls.txt"
        # A view is listed with mongosh's `[view]` badge.
        if [[ "$(sort "$out/colls.txt" | tr -s ' ' | tr '\n' ' ')" != "a_view [view] first_coll second_coll " ]]; then
            echo "show collections: expected exactly a_view [view], first_coll and second_coll"
            rc=1
        fi
    fi
    stop_server || rc=1
    if [[ $rc -ne 0 ]]; then
        show_server_log
    fi
    return $rc
}

suite_mongosh() {
    local backend="$1" file name failures=0
    for file in "$MONGOSH_DIR"/*.js; do
        name="$(basename "$file")"
        [[ "$name" == _* ]] && continue # helpers, loaded by the scripts
        echo "---- mongosh --file $name"
        if mongosh_script "$backend" "$file"; then
            echo "---- ok: $name"
        else
            echo "---- FAILED: $name"
            failures=$((failures + 1))
        fi
    done
    echo "---- mongosh --eval 'show dbs' / 'show collections'"
    if mongosh_show_helpers "$backend"; then
        echo "---- ok: show helpers"
    else
        echo "---- FAILED: show helpers"
        failures=$((failures + 1))
    fi
    [[ $failures -eq 0 ]]
}

# Each script of tests/clients/mongosh/tls through `mongosh --tls` (the server name
# `localhost` is in the test certificate), then a plain mongosh, which must be refused.
suite_mongosh_tls() {
    local backend="$1" file name out rc=0
    start_server "$backend" "mongosh-tls" --tls-mode required \
        --tls-cert "$TLS_CERTS/server.pem" --tls-key "$TLS_CERTS/server.key" || return 1
    out="$WORK/$backend/mongosh-tls"
    local uri="mongodb://localhost:$SERVER_PORT/test?directConnection=true"
    for file in "$MONGOSH_DIR"/tls/*.js; do
        name="$(basename "$file" .js)"
        echo "---- mongosh --tls --file tls/$name.js"
        if ! run_mongosh --tls --tlsCAFile "$TLS_CERTS/ca.pem" "$uri" --quiet --file "$file" \
            >"$out/$name.txt" 2>&1; then
            rc=1
        elif [[ "$(grep -v '^[[:space:]]*$' "$out/$name.txt" | tail -n 1)" != "OK" ]]; then
            echo "script did not print OK last"
            rc=1
        fi
        cat "$out/$name.txt"
    done
    echo "---- plain mongosh (must be refused)"
    if run_mongosh "$uri&serverSelectionTimeoutMS=2000" --quiet --eval 'db.runCommand({ping: 1})' \
        >"$out/plain.txt" 2>&1; then
        cat "$out/plain.txt"
        echo "a plain mongosh was served by a --tls-mode required server"
        rc=1
    else
        echo "refused: $(tail -n 1 "$out/plain.txt")"
    fi
    stop_server || rc=1
    if [[ $rc -ne 0 ]]; then
        show_server_log
    fi
    return $rc
}

suite_node() {
    local backend="$1" rc=0
    start_server "$backend" "node" || return 1
    DOCGATE_URI="$(server_uri)" timeout -k 10 "$CLIENT_TIMEOUT_S" \
        node --test "$NODE_DIR/crud_test.mjs" "$NODE_DIR/transactions_test.mjs" \
        "$NODE_DIR/views_test.mjs" "$NODE_DIR/mongoose_text_test.mjs" \
        "$NODE_DIR/validation_test.mjs" "$NODE_DIR/stable_api_test.mjs" || rc=$?
    stop_server || rc=1
    if [[ $rc -ne 0 ]]; then
        show_server_log
    fi
    return $rc
}

# Authentication with mongosh and the node driver, on a fresh server with auth on: the first
# user (root) is created over the localhost exception, then mongosh logs in with
# --username/--password/--authenticationDatabase and runs auth.js, `show users` is checked,
# and the node suite (auth_test.mjs) logs in with each mechanism.
suite_auth_clients() {
    local backend="$1" out rc=0 user=dgroot pwd=dg-root-pwd-1
    start_server "$backend" "auth" || return 1
    out="$WORK/$backend/auth"
    run_mongosh "$(server_uri admin)" --quiet --eval \
        "db.createUser({user: '$user', pwd: '$pwd', roles: ['root']}); print('created')" >"$out/create.txt" 2>&1 || rc=$?
    cat "$out/create.txt"
    if [[ $rc -eq 0 ]]; then
        echo "---- mongosh --username $user --authenticationDatabase admin --file auth.js"
        run_mongosh "$(server_uri test)" --username "$user" --password "$pwd" --authenticationDatabase admin \
            --quiet --file "$MONGOSH_DIR/auth.js" >"$out/mongosh.txt" 2>&1 || rc=$?
        cat "$out/mongosh.txt"
        if [[ $rc -eq 0 && "$(grep -v '^[[:space:]]*$' "$out/mongosh.txt" | tail -n 1)" != "OK" ]]; then
            echo "auth.js did not print OK last"
            rc=1
        fi
        echo "---- mongosh --eval 'show users'"
        run_mongosh "$(server_uri admin)" --username "$user" --password "$pwd" --authenticationDatabase admin \
            --quiet --eval 'show users' >"$out/users.txt" 2>&1 || rc=$?
        cat "$out/users.txt"
        if ! grep -q "user: '$user'" "$out/users.txt" || grep -q "credentials" "$out/users.txt"; then
            echo "show users: expected $user listed, without credentials"
            rc=1
        fi
        echo "---- node --test auth_test.mjs"
        DOCGATE_URI="$(server_uri)" DOCGATE_ADMIN_USER="$user" DOCGATE_ADMIN_PASSWORD="$pwd" \
            timeout -k 10 "$CLIENT_TIMEOUT_S" node --test "$NODE_DIR/auth_test.mjs" || rc=$?
    fi
    stop_server || rc=1
    if [[ $rc -ne 0 ]]; then
        show_server_log
    fi
    return $rc
}

# ------------------------------------------------------------------ main

echo "docgate tests: backends '$BACKENDS', work directory $WORK"

run_suite "PostgreSQL for the tests" suite_test_postgres
if [[ "${DOCGATE_SKIP_CARGO:-}" == "1" ]]; then
    echo "DOCGATE_SKIP_CARGO=1: not running cargo build / cargo test"
else
    run_suite "cargo build" suite_cargo_build
    run_suite "cargo test --workspace" suite_cargo_test
    if [[ " $BACKENDS " == *" postgres "* ]]; then
        run_suite "cargo test: integration tests [postgres]" suite_cargo_test_postgres
    fi
fi
run_suite "python client env (pymongo, pytest)" suite_python_env
run_suite "node client env (mongodb driver, mongosh)" suite_node_env
run_suite "CRUD spec tests (from pymongo's source distribution)" suite_spec_env
setup_mongosh_config

for backend in $BACKENDS; do
    run_suite "pymongo suite [$backend]" suite_pymongo "$backend"
    run_suite "MongoDB CRUD spec tests [$backend]" suite_crud_spec "$backend"
    run_suite "mongosh scripts [$backend]" suite_mongosh "$backend"
    run_suite "mongosh over TLS [$backend]" suite_mongosh_tls "$backend"
    run_suite "node driver suite [$backend]" suite_node "$backend"
    run_suite "auth: mongosh and node driver [$backend]" suite_auth_clients "$backend"
done

summary
