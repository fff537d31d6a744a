#!/usr/bin/env bash
# Captures real client traffic and rebuilds the seed corpora under fuzz/corpus/.
#
# Starts target/debug/docgate on a temporary SQLite directory, puts the recording relay
# (relay.py) in front of it and drives it through the relay with pymongo (drive_pymongo.py,
# uncompressed and with zlib, snappy and zstd), mongosh (the scripts in tests/clients/mongosh)
# and the Node driver (drive_node.mjs and tests/clients/node/crud_test.mjs). Then
# derive_seeds.py turns the recorded frames into the corpora of the five targets.
#
# Needs: `cargo build` (target/debug/docgate), the pymongo venv at target/test-env/venv and
# tests/clients/node/node_modules (tests/run_all.sh creates both; see fuzz/README.md).
# Everything listens on 127.0.0.1 and is stopped at the end.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$ROOT/fuzz/capture"
PYTHON="$ROOT/target/test-env/venv/bin/python"
NODE_DIR="$ROOT/tests/clients/node"
MONGOSH="$NODE_DIR/node_modules/.bin/mongosh"
DOCGATE="$ROOT/target/debug/docgate"
for needed in "$PYTHON" "$MONGOSH" "$DOCGATE"; do
    [[ -x "$needed" ]] || { echo "missing $needed (see fuzz/README.md)" >&2; exit 2; }
done

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
wait_port() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nothing listens on $1" >&2
    return 1
}

SERVER_PORT="$(free_port)"
"$DOCGATE" --listen "127.0.0.1:$SERVER_PORT" --rest-listen off --backend "sqlite:$WORK/data" \
    >"$WORK/docgate.log" 2>&1 </dev/null &
PIDS+=($!)
wait_port "$SERVER_PORT"
RELAY_PORT="$(free_port)"
"$PYTHON" "$HERE/relay.py" "$RELAY_PORT" "$SERVER_PORT" "$WORK/frames" &
PIDS+=($!)
wait_port "$RELAY_PORT"
URI="mongodb://127.0.0.1:$RELAY_PORT/?directConnection=true"

echo "== pymongo"
"$PYTHON" "$HERE/drive_pymongo.py" "$RELAY_PORT"

echo "== mongosh"
mkdir -p "$WORK/mongosh-home"
cat >"$WORK/mongosh-config.yaml" <<'YAML'
mongosh:
  forceDisableTelemetry: true
  updateURL: ""
  snippetAutoload: false
  snippetIndexSourceURLs: ""
  disableGreetingMessage: true
YAML
export MONGOSH_GLOBAL_CONFIG_FILE_FOR_TESTING="$WORK/mongosh-config.yaml"
for script in crud operators cursor admin; do
    # A script's own checks may fail against this server: the traffic is what counts here.
    HOME="$WORK/mongosh-home" timeout -k 10 120 "$MONGOSH" \
        "mongodb://127.0.0.1:$RELAY_PORT/test?directConnection=true" --quiet \
        --file "$ROOT/tests/clients/mongosh/$script.js" >"$WORK/mongosh-$script.txt" 2>&1 ||
        echo "mongosh $script.js exited $? (traffic kept)"
done

echo "== node driver"
(cd "$NODE_DIR" && DOCGATE_URI="$URI" timeout -k 10 120 node "$HERE/drive_node.mjs")
(cd "$NODE_DIR" && DOCGATE_URI="$URI" timeout -k 10 180 node --test crud_test.mjs \
    >"$WORK/node-crud.txt" 2>&1) || echo "node crud_test.mjs failed (traffic kept)"

echo "== $(ls "$WORK/frames" | wc -l) distinct frames recorded"
"$PYTHON" "$HERE/derive_seeds.py" "$WORK/frames" "$ROOT/fuzz/corpus"
