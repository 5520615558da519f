"""`make test` keeps every rule, and the tests that need no Spark start none.

Every rule: each cell of SPEC 3.2's and 3.3's matrices and each merge rule (SPEC 3,
merge/rules.py's `Rule`, and the rules of 3.3-3.6 without a report name) is exercised on SQLite and on
PostgreSQL by the tests `make test` runs (what its short depth leaves to `make test-long` does not count).

It collects the suite as `make test` does (no JVM: collection starts no Spark) and reads the inventory of
tests/rule_inventory.py.
"""
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dbt.adapters.branchspark.core.merge.rules import DATABASE_OPS, TABLE_OPS, Rule
from tests.pg_catalog import CATALOG_KINDS
from tests.rule_inventory import INVENTORY_FILE

ROOT = Path(__file__).resolve().parents[1]
# OK and CONFLICT are the matrices' cells, checked cell by cell; A6 is reported as A6.1, A6.2 or A6.3.
REPORTED_RULES = [rule.value for rule in Rule if rule not in (Rule.OK, Rule.CONFLICT, Rule.A6)]
# SPEC 3's rules that no conflict report names.
SPEC_RULES = ["3.3 overwrites", "3.3 compaction", "3.3 column names", "3.4 keys", "3.5", "3.6 abort",
              "3.6 ours/theirs", "3.6 pause", "3.6 strategies"]
# Tests of rule tables, planning, the catalog's compare-and-swap, URLs and the model itself: no JVM.
SPARK_FREE_MODULES = ["tests/model/test_model_unit.py", "tests/core/test_write_dependencies.py",
                      "tests/core/test_merge_base.py", "tests/core/test_catalog_revisions.py",
                      "tests/core/test_connect_profile.py", "tests/core/test_imports.py", "tests/core/test_secrets.py",
                      "tests/functional/test_operation_tables.py", "tests/test_rule_coverage.py"]
CELLS = [("table", src, dest) for src, dest in itertools.product(TABLE_OPS, TABLE_OPS)] + [
    ("database", src, dest) for src, dest in itertools.product(DATABASE_OPS, DATABASE_OPS)]


def missing(inventory: list[dict]) -> list[str]:
    """What the inventory lacks: one line per catalog kind and rule or cell."""
    seen = {(e["catalog"], rule) for e in inventory for rule in e["rules"]}
    cells = {(e["catalog"], tuple(e["cell"])) for e in inventory if e["cell"]}
    lines = []
    for kind in CATALOG_KINDS:
        lines += [f"{kind}: rule {rule}" for rule in REPORTED_RULES + SPEC_RULES if (kind, rule) not in seen]
        lines += [f"{kind}: {cell[0]} matrix cell {cell[1]} x {cell[2]}" for cell in CELLS if (kind, cell) not in cells]
    return lines


@pytest.fixture(scope="module")
def make_test_inventory(tmp_path_factory) -> list[dict]:
    """The inventory of the in-process pass of `make test` (tests/run.sh), at its short depth."""
    path = tmp_path_factory.mktemp("inventory") / "inventory.jsonl"
    env = {**os.environ, "BRANCHSPARK_TEST_DEPTH": "short", INVENTORY_FILE: str(path)}
    done = subprocess.run([sys.executable, "-m", "pytest", "tests", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-p", "tests.rule_inventory"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_make_test_exercises_every_matrix_cell_and_rule_on_both_catalogs(make_test_inventory):
    assert len(make_test_inventory) > 500  # the whole suite was collected, not a part of it
    assert missing(make_test_inventory) == []


def test_a_rule_or_cell_left_out_of_make_test_is_named(make_test_inventory):
    """The check above can fail: drop PostgreSQL's A1 tests and one SQLite cell, and it names exactly those."""
    cell = ["table", "update", "delete"]
    reduced = [e for e in make_test_inventory
               if not (e["catalog"] == "postgresql" and "A1" in e["rules"])
               and not (e["catalog"] == "sqlite" and e["cell"] == cell)]
    assert sorted(missing(reduced)) == ["postgresql: rule A1", "sqlite: table matrix cell update x delete"]


def test_tests_that_need_no_spark_start_no_jvm(make_test_inventory):
    by_module = {}
    for e in make_test_inventory:
        by_module.setdefault(e["test"].split("::")[0], []).append(e)
    assert set(SPARK_FREE_MODULES) <= set(by_module)
    assert [e["test"] for m in SPARK_FREE_MODULES for e in by_module[m] if e["spark"]] == []
    assert any(e["spark"] for e in make_test_inventory)  # the flag is read: most tests do start Spark
