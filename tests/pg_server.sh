#!/usr/bin/env bash
# A private PostgreSQL for the tests: `tests/pg_server.sh start|stop|url`.
# Installs postgresql from Debian packages if missing, runs initdb once into $BRANCHSPARK_PG_DIR
# (default /tmp/branchspark-pg-$PORT) with trust auth, and listens on 127.0.0.1:$BRANCHSPARK_PG_PORT only.
set -euo pipefail
PORT="${BRANCHSPARK_PG_PORT:-54329}"
DIR="${BRANCHSPARK_PG_DIR:-/tmp/branchspark-pg-$PORT}"
DATA="$DIR/data"

as_postgres() {
  if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi
}

pg_bin() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$bin" ]; then
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2
    bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  fi
  echo "$bin"
}

case "${1:-}" in
  start)
    BIN=$(pg_bin)
    mkdir -p "$DIR"
    chown postgres:postgres "$DIR"
    if [ ! -f "$DATA/PG_VERSION" ]; then
      as_postgres "$BIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 >"$DIR/initdb.log"
    fi
    if [ -f "$DATA/postmaster.pid" ] && kill -0 "$(head -1 "$DATA/postmaster.pid")" 2>/dev/null; then
      echo "postgresql already running on 127.0.0.1:$PORT" >&2
    else
      rm -f "$DATA/postmaster.pid"
      as_postgres "$BIN/pg_ctl" -D "$DATA" -l "$DIR/server.log" -w \
        -o "-p $PORT -c listen_addresses=127.0.0.1 -k $DIR -c max_connections=200 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null
    fi
    echo "postgresql+psycopg://postgres@127.0.0.1:$PORT/postgres"
    ;;
  stop)
    if [ -f "$DATA/postmaster.pid" ]; then
      pid=$(head -1 "$DATA/postmaster.pid")
      kill -INT "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    ;;
  url)
    echo "postgresql+psycopg://postgres@127.0.0.1:$PORT/postgres"
    ;;
  *)
    echo "usage: tests/pg_server.sh start|stop|url" >&2
    exit 2
    ;;
esac
