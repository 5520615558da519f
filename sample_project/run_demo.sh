#!/usr/bin/env bash
# branchspark demo: build the sample project on branch `dev`, then show that `main` is untouched.
#   pip install -e .   (from the repository root), then:   sample_project/run_demo.sh
# On object storage (docs/deploy.md): BRANCHSPARK_DEMO_WAREHOUSE=s3a://bucket/demo with a catalog URL in
# BRANCHSPARK_CATALOG_URL and the AWS variables (AWS_ENDPOINT_URL for an S3-compatible server) set.
set -euo pipefail
cd "$(dirname "$0")"

export DBT_PROFILES_DIR="$PWD"
if [[ -z "${DBT:-}" ]]; then
  if command -v dbt >/dev/null 2>&1; then DBT=dbt; else DBT="$PWD/../.venv/bin/dbt"; fi
fi
PYTHON_OF_DBT="$(dirname "$(command -v "$DBT")")/python"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$PYTHON_OF_DBT}"
quiet=(--quiet)
BRANCHSPARK="$(dirname "$(command -v "$DBT")")/branchspark"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# The profile's targets use the warm local Spark engine (method: local). One the demo starts, it stops at
# the end; an engine that was already running is left running.
if "$BRANCHSPARK" engine status >/dev/null 2>&1; then
  trap 'echo; echo "the local Spark engine stays running (it was before the demo): branchspark engine status"' EXIT
else
  trap 'echo; "$BRANCHSPARK" engine stop' EXIT
fi
step "0. the warm local Spark engine: one JVM start for the whole demo"
"$BRANCHSPARK" engine start

step "1. create branch dev from main (dropped first, so the demo can be re-run)"
"$DBT" "${quiet[@]}" run-operation drop_branch --args '{name: dev, force: true}' --target main >/dev/null 2>&1 || true
"$DBT" "${quiet[@]}" run-operation create_branch --args '{name: dev, from: main}' --target main

step "2. seed, run, snapshot and test on dev"
"$DBT" seed --target dev
"$DBT" run --target dev
"$DBT" snapshot --target dev
"$DBT" test --target dev

step "3. a change only dev sees: two late orders, merged into fct_orders on its next run"
"$DBT" "${quiet[@]}" run-operation add_late_orders --target dev
"$DBT" run --target dev --select fct_orders

step "4. the changes of fct_orders on dev (CDC): per commit since dev left main, then consumed by an incremental model"
"$DBT" "${quiet[@]}" run-operation branch_changes --args '{table: shop.fct_orders, from: main, to: dev, limit: 5}' --target dev
"$DBT" run --target dev --select fct_order_changes
"$DBT" "${quiet[@]}" show --target dev --limit 20 --inline "select change_type, order_id, status, amount, substr(commit_id, 1, 12) as commit_id from {{ ref('fct_order_changes') }} order by committed_at, order_id"

step "5. what dev has that main has not"
"$DBT" "${quiet[@]}" run-operation list_branches --target main
"$DBT" "${quiet[@]}" run-operation branch_log --args '{branch: dev, limit: 20}' --target dev
"$DBT" "${quiet[@]}" run-operation branch_log --args '{branch: main}' --target main
"$DBT" "${quiet[@]}" show --target dev --inline "select status, count(*) as orders, sum(amount) as amount from {{ ref('fct_orders') }} group by status order by status"
if on_main=$("$DBT" "${quiet[@]}" show --target main --inline "select count(*) as orders from {{ ref('fct_orders') }}" 2>&1); then
  echo "$on_main"
else
  echo "main has no fct_orders yet (dbt show on main fails: table not found): dev's commits never touched main"
fi

step "6. publish: main is protected (profiles.yml: protected_branches), so a build against it is refused"
if "$DBT" "${quiet[@]}" run --target main --select dim_customers; then
  echo "unexpected: dbt run against protected main succeeded"; exit 1
fi

step "7. merge dev into main: a dry run, then one merge commit with both parents"
"$DBT" "${quiet[@]}" run-operation merge_branch --args '{src: dev, dry_run: true}' --target main
"$DBT" "${quiet[@]}" run-operation merge_branch --args '{src: dev}' --target main
"$DBT" "${quiet[@]}" run-operation branch_log --args '{branch: main, limit: 3}' --target main
"$DBT" "${quiet[@]}" show --target main --inline "select status, count(*) as orders, sum(amount) as amount from {{ ref('fct_orders') }} group by status order by status"
