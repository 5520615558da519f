"""dbt's adapter test harness on branchspark: one warehouse and one SparkSession per test process."""

import os
import sys

import pytest

from tests.spark_settings import FAST_SMALL_QUERIES, FAST_TEST_JVM, ONE_PARTITION

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


# Small and quiet Spark for tests; the adapter reuses this process's session across dbt invocations.
# Cheaper small queries and one GC thread, as for the core tests (tests/spark_settings.py says why).
TEST_SPARK_CONFIG = {
    "spark.master": "local[2]",
    **ONE_PARTITION,
    **FAST_SMALL_QUERIES,
    **FAST_TEST_JVM,
}


@pytest.fixture(scope="session")
def warehouse_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("warehouse"))


@pytest.fixture(scope="class")
def dbt_profile_target(warehouse_dir, spark_connect_url):
    """In-process Spark, or under `pytest --connect` the test Spark Connect server (same warehouse
    path: the server runs on this machine)."""
    target = {
        "type": "branchspark",
        "method": "session",
        "branch": "main",
        "warehouse": warehouse_dir,
        "threads": 2,
        "spark_config": dict(TEST_SPARK_CONFIG),
    }
    if spark_connect_url:
        target.update(method="connect", host=spark_connect_url)
    return target


@pytest.fixture(scope="class", autouse=True)
def fresh_adapter_registry():
    """Forget the adapter a previous test's dbt invocation left registered: dbt's `adapter` fixture
    keeps an already registered adapter, with that test's profile (another warehouse, protected
    branches, or only a Profile after `dbt debug`). Autouse, so it runs before that fixture."""
    from dbt.adapters.factory import reset_adapters

    reset_adapters()


@pytest.fixture(scope="class")
def profile_user(dbt_profile_target):
    # branch relations have no owner
    return None


def pytest_configure(config):
    # dbt-tests-adapter 1.20 defines class-scoped fixtures as instance methods (pytest 9 warns)
    config.addinivalue_line("filterwarnings", "ignore::pytest.PytestRemovedIn10Warning")
