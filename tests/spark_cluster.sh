#!/usr/bin/env bash
# A Spark standalone cluster on this machine from pyspark's own classes, and a Spark Connect server on it:
#   tests/spark_cluster.sh start|stop|kill-worker N
# A master on 127.0.0.1:${BRANCHSPARK_CLUSTER_PORT:-7077}, two workers (each its own JVM, 1 core, 1 GB and its
# own work directory), and tests/connect_server.sh's server with that master on ${BRANCHSPARK_CONNECT_PORT}.
# Executors get the S3A jars by spark.jars (object_store.py) and branchspark's own by the client's
# addArtifacts: Spark's own mechanisms, no shared class path. Web UIs on UI_PORT.. (standalone has no off).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VENV:-$ROOT/.venv}
PORT=${BRANCHSPARK_CLUSTER_PORT:-7077}
UI_PORT=${BRANCHSPARK_CLUSTER_UI_PORT:-8080}
STATE=$ROOT/.spark-cluster/$PORT
export SPARK_HOME
SPARK_HOME=$("$VENV/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
# the JDK `make install` chose for this pyspark, as branchspark's own sessions use (core/jvm_home.py)
chosen_jdk=$("$VENV/bin/python" -m dbt.adapters.branchspark.core.jvm_home)
if [ -n "$chosen_jdk" ]; then export JAVA_HOME=$chosen_jdk; fi
export PYSPARK_PYTHON=$VENV/bin/python SPARK_LOCAL_IP=127.0.0.1 SPARK_MASTER_HOST=127.0.0.1
MASTER=spark://127.0.0.1:$PORT

port_open() { "$VENV/bin/python" -c "import socket,sys; s=socket.socket(); s.settimeout(1); sys.exit(s.connect_ex(('127.0.0.1', $1)))"; }

case "${1:-}" in
  start)
    mkdir -p "$STATE"
    if port_open "$PORT"; then echo "spark cluster: port $PORT already in use" >&2; exit 1; fi
    nohup "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master --host 127.0.0.1 --port "$PORT" \
      --webui-port "$UI_PORT" >"$STATE/master.log" 2>&1 &
    echo $! >"$STATE/master.pid"
    for n in 1 2; do
      mkdir -p "$STATE/worker$n"
      nohup "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --cores 1 \
        --memory 1g --work-dir "$STATE/worker$n" --webui-port $((UI_PORT + n)) "$MASTER" >"$STATE/worker$n.log" 2>&1 &
      echo $! >"$STATE/worker$n.pid"
    done
    for _ in $(seq 1 120); do port_open "$PORT" && break; sleep 1; done
    BRANCHSPARK_CONNECT_MASTER=$MASTER BRANCHSPARK_CONNECT_MEMORY=${BRANCHSPARK_CONNECT_MEMORY:-1g} \
      tests/connect_server.sh start >&2
    echo "sc://127.0.0.1:${BRANCHSPARK_CONNECT_PORT:-15002}"
    ;;
  stop)
    tests/connect_server.sh stop >&2 || true
    for name in worker1 worker2 master; do
      if [ -f "$STATE/$name.pid" ]; then kill "$(cat "$STATE/$name.pid")" 2>/dev/null || true; rm -f "$STATE/$name.pid"; fi
    done
    ;;
  kill-worker)
    # the worker JVM and the executor it started (its child), at once: a machine lost mid-job
    pid=$(cat "$STATE/worker${2:-1}.pid")
    pkill -KILL -P "$pid" 2>/dev/null || true
    kill -KILL "$pid"
    ;;
  *)
    echo "usage: $0 start|stop|kill-worker N" >&2; exit 2 ;;
esac
