# Both targets install what they need into .venv first, so each works on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
export PYSPARK_PYTHON := $(abspath $(PY))

.PHONY: install test demo bench bench-dbt

$(VENV)/.installed: setup.py
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

install: $(VENV)/.installed

# The second pass runs the dbt conformance suite and the merge tests through
# Spark Connect at $BRANCHSPARK_TEST_CONNECT_URL (tests/connect_server.sh; .ci/run starts it);
# without it the pass is skipped with the reason in its header (under CI=true it fails).
CONNECT_TESTS := tests/functional/adapter tests/core/test_merge_base.py tests/core/test_merge_matrix.py \
	tests/core/test_merge_rules.py

test: install
	$(PY) -m pytest tests -n 2 --dist loadscope -p no:cacheprovider -q
	$(PY) -m pytest --connect $(CONNECT_TESTS) -n 2 --dist loadscope -p no:cacheprovider -q

demo: install
	cd sample_project && PATH="$(abspath $(VENV))/bin:$$PATH" bash run_demo.sh

bench: install
	$(PY) bench/branch_create.py

# the sample dbt project on branchspark against plain dbt-spark (parquet); several minutes
bench-dbt: install
	$(PY) bench/dbt_run.py
