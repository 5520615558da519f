# Both targets install what they need into .venv first, so each works on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
export PYSPARK_PYTHON := $(abspath $(PY))

.PHONY: install test demo bench bench-dbt bench-dbt-cli

$(VENV)/.installed: setup.py
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

install: $(VENV)/.installed

# tests/run.sh starts a private PostgreSQL and a Spark Connect server on 127.0.0.1 (unless the
# BRANCHSPARK_TEST_*_URL variables name running ones), then runs the suite in-process and the
# conformance and merge tests again through Spark Connect.
test: install
	PY=$(PY) bash tests/run.sh

demo: install
	cd sample_project && PATH="$(abspath $(VENV))/bin:$$PATH" bash run_demo.sh

bench: install
	$(PY) bench/branch_create.py

# the sample dbt project on branchspark against plain dbt-spark (parquet); several minutes
bench-dbt: install
	$(PY) bench/dbt_run.py

# dbt from the shell, per invocation: warm local engine, method: session, dbt-spark, dbt-duckdb; several minutes
bench-dbt-cli: install
	$(PY) bench/dbt_cli.py
