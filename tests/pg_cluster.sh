#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for tests of the PostgreSQL store.
#
#   tests/pg_cluster.sh start DIR   initdb into DIR/data (the `postgres` superuser is trusted;
#                                   every other role logs on with its password, which the
#                                   delegated-verification tests need), start on a free port,
#                                   print exactly one line: postgres://postgres@127.0.0.1:PORT/postgres
#                                   (on an existing DIR/data, after `stop`: start it again with
#                                   its data, on its previous port when that is still free)
#   tests/pg_cluster.sh stop DIR    stop it (pg_ctl -m fast)
#   tests/pg_cluster.sh restart DIR restart it on the same port (pg_ctl -m fast restart)
#
# Runs the server as the `postgres` user when invoked as root (initdb refuses root), else as
# the current user. The socket lives in DIR, the log in DIR/log. Not for production use.
set -euo pipefail

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

usage() {
    echo "usage: $0 start DIR | stop DIR | restart DIR" >&2
    exit 2
}

[ $# -eq 2 ] || usage
cmd=$1
dir=$2

# Runs a PostgreSQL binary as the cluster owner.
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# A port the kernel just handed out as free; without python3 a random high port (a taken
# port only makes `pg_ctl start` fail, and the loop below tries another).
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null ||
        echo $((20000 + RANDOM % 40000))
}

case "$cmd" in
start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres: "$dir"
    fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        as_owner "$PG_BIN/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 || {
            cat "$dir/initdb.log" >&2
            exit 1
        }
        as_owner sh -c "cat >'$dir/data/pg_hba.conf'" <<'HBA'
local all all trust
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
HBA
    fi
    # A cluster started here before comes back on its old port (clients keep their URL);
    # if that port was taken meanwhile, a new one is chosen and printed.
    previous=""
    if [ -f "$dir/port" ]; then
        previous=$(cat "$dir/port")
    fi
    # Another process may grab the port between choosing and binding it: try a few.
    for attempt in 1 2 3 4 5; do
        if [ "$attempt" -eq 1 ] && [ -n "$previous" ]; then
            port=$previous
        else
            port=$(free_port)
        fi
        if as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/log" \
            -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=on" -w start >/dev/null 2>&1; then
            echo "$port" >"$dir/port"
            echo "postgres://postgres@127.0.0.1:$port/postgres"
            exit 0
        fi
    done
    echo "could not start PostgreSQL in $dir; see $dir/log" >&2
    exit 1
    ;;
stop)
    dir=$(cd "$dir" && pwd)
    as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
restart)
    dir=$(cd "$dir" && pwd)
    as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/log" -m fast -w restart >/dev/null
    ;;
*)
    usage
    ;;
esac
