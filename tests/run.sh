#!/usr/bin/env bash
# The test suite (`make test`; `make test-long` with BRANCHSPARK_TEST_DEPTH=long): a private PostgreSQL, an
# S3-compatible server (moto) and a Spark standalone cluster with a Spark Connect server on it are started here
# unless BRANCHSPARK_TEST_PG_URL / BRANCHSPARK_TEST_S3_URL / BRANCHSPARK_TEST_CONNECT_URL already name running
# ones, and stopped at the end. Pass 1 runs every test in-process (catalog and merge tests on SQLite and
# PostgreSQL) but dbt's conformance suites; pass 2 runs those, the merge base, the deletion-vector reads (keyless
# and keyed), the keyless feed across a merge (issue 67) and the sample project on S3 through Spark Connect on the cluster (a
# master and two 1-core worker JVMs). At the long depth both passes run only what `make test-long` adds: the `deep`
# tests at full size and the long-only ones (tests/depth.py), such as the conformance suites in-process and the
# merge matrix and rules through Connect.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export PYSPARK_PYTHON=${PYSPARK_PYTHON:-$PWD/$PY}

# The browser tests of `branchspark ui` drive Debian's chromium (tests/ui/test_ui.py): installed here when missing
# and apt can (as root), as .ci/run does; without it they skip locally (and fail under CI=true), saying why.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
fi

stop=()
cleanup() { for cmd in "${stop[@]}"; do $cmd || true; done; }
trap cleanup EXIT
if [ -z "${BRANCHSPARK_TEST_PG_URL:-}" ]; then
  BRANCHSPARK_TEST_PG_URL=$(tests/pg_server.sh start)
  stop+=("tests/pg_server.sh stop")
fi
# The S3-compatible server (moto) of the object-storage tests (issue 51); tests/conftest.py sets the four AWS
# variables from it for every session the tests build.
if [ -z "${BRANCHSPARK_TEST_S3_URL:-}" ]; then
  BRANCHSPARK_TEST_S3_URL=$(tests/moto_server.sh start)
  stop+=("tests/moto_server.sh stop")
fi
export BRANCHSPARK_TEST_S3_URL
# The cluster's executors reach the S3 server as a user's would, by the four AWS variables alone (the values
# tests/conftest.py gives the test sessions); the Connect server's S3A settings name AWS_ENDPOINT_URL.
export AWS_ENDPOINT_URL=${AWS_ENDPOINT_URL:-$BRANCHSPARK_TEST_S3_URL} AWS_REGION=${AWS_REGION:-us-east-1}
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-testing} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-testing-secret}
# The cluster and its Connect server start beside pass 1, which does not use them (four JVMs, about 35 s), and
# pass 2 waits for them. Executors are JVMs of their own on this machine, so every Connect test runs its tasks
# as on a real cluster: task and broadcast data serialized between JVMs, jars shipped by Spark (issue 51).
cluster_started=
stop_cluster() { wait "$cluster_started" 2>/dev/null || true; tests/spark_cluster.sh stop; }
if [ -z "${BRANCHSPARK_TEST_CONNECT_URL:-}" ]; then
  mkdir -p .spark-cluster
  BRANCHSPARK_CONNECT_MEMORY=3g tests/spark_cluster.sh start >.spark-cluster/start.log 2>&1 &
  cluster_started=$!
  stop+=(stop_cluster)
  BRANCHSPARK_TEST_CONNECT_URL=sc://127.0.0.1:${BRANCHSPARK_CONNECT_PORT:-15002}
  # the master the Connect pass's sessions must report (tests/s3/test_dbt_s3.py checks its flow ran there)
  export BRANCHSPARK_TEST_CLUSTER=spark://127.0.0.1:${BRANCHSPARK_CLUSTER_PORT:-7077}
fi
export BRANCHSPARK_TEST_PG_URL BRANCHSPARK_TEST_CONNECT_URL

# The engine-against-model property test runs the depth's profile (tests/model/profiles.py): `quick` (22
# derandomized histories per table kind) in `make test`, `full` (300) in `make test-long`.
export BRANCHSPARK_TEST_DEPTH=${BRANCHSPARK_TEST_DEPTH:-short}
only=()
# The cluster test (long only) runs dbt and a Spark Connect client in its own process: a test worker that has
# run an in-process session cannot open a Connect one (pyspark's SESSION_ALREADY_EXIST), so it runs last, alone.
OWN_PROCESS=tests/s3/test_cluster_s3.py
ON_THE_CLUSTER=tests/s3/test_dbt_s3.py::test_sample_project_on_s3_builds_tests_and_merges
# a data file missing or damaged under a table: one line through Connect too (issue 51)
DAMAGED_FILE=tests/core/test_one_line_errors.py::test_missing_or_damaged_segment_file_is_one_line
# an update whose predicate reads the clock changes each row once through Connect too (its two writes, one read)
CLOCK_UPDATE=tests/core/test_dml.py::test_an_update_whose_predicate_reads_the_clock_changes_each_row_once
[ "$BRANCHSPARK_TEST_DEPTH" = long ] && only=(--deep-only --deselect "$OWN_PROCESS")
started=$SECONDS
# Two workers; tests/conftest.py hands them the slowest scopes first (--no-loadscope-reorder keeps that order).
# Through Connect the merge tests run on SQLite: what PostgreSQL changes is the catalog, which pass 1 covers;
# the matrix's warehouse on S3 too (pass 1 runs it on S3 at the long depth).
# --durations: CI's log names the slowest tests (the suite's time is a target, issue 50).
"$PY" -m pytest tests -n 2 --dist loadscope --no-loadscope-reorder -p no:cacheprovider -q --durations=25 \
  "${only[@]}" "$@"
echo "in-process pass: $((SECONDS - started)) s"
if [ -n "$cluster_started" ] && ! wait "$cluster_started"; then
  echo "the test cluster did not start:" >&2; cat .spark-cluster/start.log >&2; exit 1
fi
started=$SECONDS
# The sample project's dbt flow on S3 runs here, on the cluster (tests/conftest.py leaves it out of pass 1).
"$PY" -m pytest --connect tests/functional/adapter tests/core/test_merge_base.py tests/core/test_merge_matrix.py \
  tests/core/test_merge_rules.py tests/core/test_deletion_vectors.py tests/core/test_merge_keyless_on_conflict.py \
  tests/core/test_keyed_positions.py \
  tests/core/test_connect_sessions.py \
  "$ON_THE_CLUSTER" "$DAMAGED_FILE" "$CLOCK_UPDATE" \
  -k "not postgresql and not s3_warehouse" \
  -n 2 --dist loadscope --no-loadscope-reorder -p no:cacheprovider -q --durations=10 "${only[@]}" "$@"
echo "Spark Connect pass: $((SECONDS - started)) s"
if [ "$BRANCHSPARK_TEST_DEPTH" = long ]; then
  # make test runs dbt's conformance suites through a server that plans as the test sessions do (no code
  # generation, no adaptive plans: tests/connect_server.sh); here the server keeps Spark's defaults, as users' do
  started=$SECONDS
  "$PY" -m pytest --connect tests/functional/adapter -n 2 --dist loadscope --no-loadscope-reorder -p no:cacheprovider \
    -q --durations=10 "$@"
  echo "conformance suites through Connect, Spark's defaults: $((SECONDS - started)) s"
  started=$SECONDS
  "$PY" -m pytest "$OWN_PROCESS" -p no:cacheprovider -q -rfE "$@"
  echo "own-process pass: $((SECONDS - started)) s"
fi
