"""One SparkSession per test process (a JVM start costs about 10 s)."""
import os
import sys

import pytest

# dbt's test fixtures (the conformance suite); pytest wants plugins declared in the top conftest.
pytest_plugins = ["dbt.tests.fixtures.project"]

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    from dbt.adapters.branchspark.storage.session import local_session

    session = local_session("local[2]", {"spark.sql.shuffle.partitions": "2",
                                         "spark.default.parallelism": "2",
                                         "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "2"})
    yield session
