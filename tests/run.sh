#!/usr/bin/env bash
# The test suite (`make test`; `make test-long` with BRANCHSPARK_TEST_DEPTH=long): a private PostgreSQL and a
# Spark Connect server are started here unless BRANCHSPARK_TEST_PG_URL / BRANCHSPARK_TEST_CONNECT_URL already
# name running ones, and stopped at the end. Pass 1 runs every test in-process (catalog and merge tests on
# SQLite and PostgreSQL) but dbt's conformance suites; pass 2 runs those, the merge base and the deletion-vector
# reads through Spark Connect. At the long depth both passes run only what `make test-long` adds: the `deep`
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
if [ -z "${BRANCHSPARK_TEST_CONNECT_URL:-}" ]; then
  tests/connect_server.sh start
  stop+=("tests/connect_server.sh stop")
  BRANCHSPARK_TEST_CONNECT_URL=sc://127.0.0.1:${BRANCHSPARK_CONNECT_PORT:-15002}
fi
export BRANCHSPARK_TEST_PG_URL BRANCHSPARK_TEST_CONNECT_URL

# The engine-against-model property test runs the depth's profile (tests/model/profiles.py): `quick` (60
# derandomized histories per table kind) in `make test`, `full` (300) in `make test-long`.
export BRANCHSPARK_TEST_DEPTH=${BRANCHSPARK_TEST_DEPTH:-short}
only=()
# The cluster test (long only) runs dbt and a Spark Connect client in its own process: a test worker that has
# run an in-process session cannot open a Connect one (pyspark's SESSION_ALREADY_EXIST), so it runs last, alone.
OWN_PROCESS=tests/s3/test_cluster_s3.py
[ "$BRANCHSPARK_TEST_DEPTH" = long ] && only=(--deep-only --deselect "$OWN_PROCESS")
started=$SECONDS
# Two workers; tests/conftest.py hands them the slowest scopes first (--no-loadscope-reorder keeps that order).
# Through Connect the merge tests run on SQLite: what PostgreSQL changes is the catalog, which pass 1 covers;
# the matrix's warehouse on S3 too (the test Connect server has no S3 settings; pass 1 runs it at the long depth).
# --durations: CI's log names the slowest tests (the suite's time is a target, issue 50).
"$PY" -m pytest tests -n 2 --dist loadscope --no-loadscope-reorder -p no:cacheprovider -q --durations=25 \
  "${only[@]}" "$@"
echo "in-process pass: $((SECONDS - started)) s"
started=$SECONDS
"$PY" -m pytest --connect tests/functional/adapter tests/core/test_merge_base.py tests/core/test_merge_matrix.py \
  tests/core/test_merge_rules.py tests/core/test_deletion_vectors.py -k "not postgresql and not s3_warehouse" \
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
