#!/usr/bin/env bash
# An S3-compatible server for the tests, the demo and bench/object_store.py: moto's server mode (`moto[server]`
# from PyPI), on 127.0.0.1:${BRANCHSPARK_S3_PORT:-5000}. `tests/moto_server.sh start|stop|url`.
# Its request log (one line per request, which bench/object_store.py counts) is .moto-server/<port>/requests.log.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-$PWD/.venv}
PORT=${BRANCHSPARK_S3_PORT:-5000}
STATE=$PWD/.moto-server/$PORT
URL=http://127.0.0.1:$PORT

port_open() { "$VENV/bin/python" -c "import socket,sys; s=socket.socket(); s.settimeout(1); sys.exit(s.connect_ex(('127.0.0.1', $PORT)))"; }

case "${1:-}" in
  start)
    mkdir -p "$STATE"
    if port_open; then echo "s3 server: port $PORT already in use" >&2; exit 1; fi
    nohup "$VENV/bin/moto_server" -H 127.0.0.1 -p "$PORT" >"$STATE/requests.log" 2>&1 &
    echo $! >"$STATE/pid"
    for _ in $(seq 1 100); do
      if port_open; then echo "$URL"; exit 0; fi
      sleep 0.2
    done
    echo "s3 server: port $PORT not open after 20 s; log:" >&2
    tail -n 20 "$STATE/requests.log" >&2 || true
    exit 1
    ;;
  stop)
    if [ -f "$STATE/pid" ]; then kill "$(cat "$STATE/pid")" 2>/dev/null || true; rm -f "$STATE/pid"; fi
    ;;
  url)
    echo "$URL" ;;
  *)
    echo "usage: $0 start|stop|url" >&2; exit 2 ;;
esac
