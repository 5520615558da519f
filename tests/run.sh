#!/usr/bin/env bash
# The whole test suite (`make test`): a private PostgreSQL and a Spark Connect server are started here
# unless BRANCHSPARK_TEST_PG_URL / BRANCHSPARK_TEST_CONNECT_URL already name running ones, and stopped
# at the end. Pass 1 runs every test in-process (catalog tests on SQLite and PostgreSQL); pass 2 runs
# dbt's conformance suite, the merge-rule tests and the deletion-vector reads through Spark Connect.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export PYSPARK_PYTHON=${PYSPARK_PYTHON:-$PWD/$PY}

stop=()
cleanup() { for cmd in "${stop[@]}"; do $cmd || true; done; }
trap cleanup EXIT
if [ -z "${BRANCHSPARK_TEST_PG_URL:-}" ]; then
  BRANCHSPARK_TEST_PG_URL=$(tests/pg_server.sh start)
  stop+=("tests/pg_server.sh stop")
fi
if [ -z "${BRANCHSPARK_TEST_CONNECT_URL:-}" ]; then
  tests/connect_server.sh start
  stop+=("tests/connect_server.sh stop")
  BRANCHSPARK_TEST_CONNECT_URL=sc://127.0.0.1:${BRANCHSPARK_CONNECT_PORT:-15002}
fi
export BRANCHSPARK_TEST_PG_URL BRANCHSPARK_TEST_CONNECT_URL

# The engine-against-model property test runs its `ci` profile here (300 random histories per table kind,
# derandomized; each kind a scope of its own, see tests/conftest.py); `make test-model-long` runs random
# ones in resumable chunks (tests/model/long_run.py).
export BRANCHSPARK_MODEL_PROFILE=${BRANCHSPARK_MODEL_PROFILE:-ci}
# Two workers; tests/conftest.py hands them the slowest scopes first (--no-loadscope-reorder keeps that order).
# Through Connect the matrix and the rules run on SQLite: what PostgreSQL changes is the catalog, which pass 1
# covers.
# --durations: CI's log names the slowest tests (the suite's time is a target, issue 25).
"$PY" -m pytest tests -n 2 --dist loadscope --no-loadscope-reorder -p no:cacheprovider -q --durations=25 "$@"
"$PY" -m pytest --connect tests/functional/adapter tests/core/test_merge_base.py tests/core/test_merge_matrix.py \
  tests/core/test_merge_rules.py tests/core/test_deletion_vectors.py -k "not postgresql" \
  -n 2 --dist loadscope --no-loadscope-reorder -p no:cacheprovider -q --durations=10 "$@"
