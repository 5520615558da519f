#!/usr/bin/env bash
# A local Spark Connect server from the installed pyspark (no download), for the Connect test run.
#   tests/connect_server.sh start|stop|status
# Listens on 127.0.0.1:${BRANCHSPARK_CONNECT_PORT:-15002}; logs and pid file in .connect-server/<port>/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VENV:-$ROOT/.venv}
PORT=${BRANCHSPARK_CONNECT_PORT:-15002}
MASTER=${BRANCHSPARK_CONNECT_MASTER:-local[2]}  # tests/spark_cluster.sh: a standalone master
STATE=$ROOT/.connect-server/$PORT
export SPARK_HOME
SPARK_HOME=$("$VENV/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
# the JDK `make install` chose for this pyspark, as branchspark's own sessions use (core/jvm_home.py)
chosen_jdk=$("$VENV/bin/python" -m dbt.adapters.branchspark.core.jvm_home)
if [ -n "$chosen_jdk" ]; then export JAVA_HOME=$chosen_jdk; fi
export SPARK_PID_DIR=$STATE SPARK_LOG_DIR=$STATE SPARK_IDENT_STRING=branchspark-$PORT
# the server's Python workers need this venv's pyarrow and pandas
export PYSPARK_PYTHON=$VENV/bin/python SPARK_LOCAL_IP=127.0.0.1

port_open() { "$VENV/bin/python" -c "import socket,sys; s=socket.socket(); s.settimeout(1); sys.exit(s.connect_ex(('127.0.0.1', $PORT)))"; }

case "${1:-}" in
  start)
    mkdir -p "$STATE"
    if port_open; then echo "connect server: port $PORT already in use" >&2; exit 1; fi
    # branchspark's local file system (no chmod process per directory a write makes) when its jar is built,
    # the S3A connector and committers (fetched by make install) and the S3 endpoint of AWS_ENDPOINT_URL
    # (and the JVM's class-data archive, when make install built it), with the driver's Java options below.
    # The test JVMs' collector and memory pages (tests/spark_settings.py, FAST_TEST_JVM): the serial collector
    # leaves the cores to the tests, 1 MB pages die young; what Spark computes is the same. The Connect pass:
    # the server's CPU 267 s against 301 s (2026-11-30). On the test cluster (tests/spark_cluster.sh) its
    # executors, fresh JVMs that each live for one pass of small tasks, also compile with C1 only.
    # and, as the test JVMs, C2 for hot code only (tests/spark_settings.py, HOT_CODE_ONLY_C2)
    JIT=$("$VENV/bin/python" -c 'from tests.spark_settings import HOT_CODE_ONLY_C2 as s; print(s)')
    mapfile -t LOCAL_FILES < <("$VENV/bin/python" -m dbt.adapters.branchspark.core.spark_session "$MASTER" \
      "-Dderby.system.home=$STATE -XX:+UseSerialGC $JIT")
    # `make test`: the in-process test sessions' planning (tests/spark_settings.py, FAST_SMALL_QUERIES: no code
    # generation, no adaptive plans), so dbt's conformance suites run as fast as the rest; the deletion-vector
    # tests ask Spark's defaults for themselves (tests/conftest.py). `make test-long` (BRANCHSPARK_TEST_DEPTH=long)
    # keeps Spark's defaults, so its Connect passes (the merge matrix and rules, dbt's conformance suites) run as
    # users' servers do.
    FAST=()
    if [ "${BRANCHSPARK_TEST_DEPTH:-short}" != long ]; then
      mapfile -t FAST < <("$VENV/bin/python" -c \
        'from tests.spark_settings import FAST_SMALL_QUERIES as s; print("\n".join(f"--conf\n{k}={v}" for k, v in s.items()))')
    fi
    "$SPARK_HOME/sbin/start-connect-server.sh" \
      --master "$MASTER" --driver-memory "${BRANCHSPARK_CONNECT_MEMORY:-3g}" \
      --conf spark.connect.grpc.binding.address=127.0.0.1 \
      --conf spark.connect.grpc.binding.port="$PORT" \
      --conf spark.sql.catalogImplementation=in-memory \
      --conf spark.sql.warehouse.dir="$STATE/spark-warehouse" \
      --conf spark.ui.enabled=false \
      --conf spark.sql.shuffle.partitions=2 \
      --conf spark.default.parallelism=2 --conf spark.buffer.pageSize=1m \
      --conf "spark.executor.extraJavaOptions=-XX:+UseSerialGC -XX:TieredStopAtLevel=1" "${FAST[@]}" "${LOCAL_FILES[@]}" >"$STATE/start.log" 2>&1 \
      || { cat "$STATE/start.log" >&2; exit 1; }
    for _ in $(seq 1 120); do
      if port_open; then echo "connect server: listening on sc://127.0.0.1:$PORT (logs in $STATE)"; exit 0; fi
      sleep 1
    done
    echo "connect server: port $PORT not open after 120 s; log:" >&2
    tail -n 40 "$STATE"/*.out >&2 || true
    "$SPARK_HOME/sbin/stop-connect-server.sh" >/dev/null 2>&1 || true
    exit 1
    ;;
  stop)
    "$SPARK_HOME/sbin/stop-connect-server.sh" >/dev/null 2>&1 || true
    echo "connect server: stopped"
    ;;
  status)
    if port_open; then echo "connect server: up on port $PORT"; else echo "connect server: down"; exit 1; fi
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
