"""A pytest plugin listing which merge rules and matrix cells a run's tests exercise, on which catalog.

`pytest --collect-only -p tests.rule_inventory ...` with $BRANCHSPARK_RULE_INVENTORY naming a file: after
collection and every deselection (tests/conftest.py leaves out what only `make test-long` runs), it writes one
JSON line per test: its id, its catalog kind, the rules its `rule` marker names, for a matrix test its cell,
and whether it starts Spark. tests/test_rule_coverage.py reads it.
"""
import json
import os

from tests.pg_catalog import CATALOG_KINDS

INVENTORY_FILE = "BRANCHSPARK_RULE_INVENTORY"
MATRIX_TESTS = {"test_table_matrix_cell": "table", "test_database_matrix_cell": "database"}
SPEC_NAMES = {"alter props": "alter properties"}  # the matrix test's short name of SPEC 2's operation


def starts_spark(item) -> bool:
    """Whether the test needs the worker's SparkSession: asks for it, for a dbt project, or for a Lakehouse
    with Spark (tests/core/conftest.py's `lh`, unless marked catalog_only)."""
    names = set(item.fixturenames)
    return bool(names & {"spark", "project"}) or ("lh" in names and not item.get_closest_marker("catalog_only"))


def entry(item) -> dict:
    params = getattr(getattr(item, "callspec", None), "params", {})
    catalogs = [value for value in params.values() if isinstance(value, str) and value in CATALOG_KINDS]
    matrix = MATRIX_TESTS.get(item.originalname)
    return {"test": item.nodeid,
            "catalog": catalogs[0] if catalogs else "sqlite",  # a test's `lh` is on SQLite unless parametrized
            "rules": [rule for marker in item.iter_markers("rule") for rule in marker.args],
            "cell": [matrix, *(SPEC_NAMES.get(params[op], params[op]) for op in ("src_op", "dest_op"))] if matrix else None,
            "spark": starts_spark(item)}


def pytest_collection_finish(session):
    with open(os.environ[INVENTORY_FILE], "w") as out:
        for item in session.items:
            out.write(json.dumps(entry(item)) + "\n")
