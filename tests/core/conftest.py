import pytest

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from tests.pg_catalog import CATALOG_KINDS, catalog_of_kind

# Modules whose tests also run on a PostgreSQL catalog (the catalog and merge tests); the rest use SQLite only.
PG_MODULES = {"test_branches", "test_versions", "test_errors", "test_crash_and_gc", "test_concurrency",
              "test_merge_base", "test_merge_matrix", "test_merge_rules", "test_commit_retry",
              "test_catalog_binding", "test_drop_guards", "test_one_line_errors", "test_secrets",
              "test_serializable_writes"}
# ... and those whose PostgreSQL twins only `make test-long` runs (`long_only`): what they check is which rows a
# merge keeps, which the catalog does not decide (the matrix and rules, on both catalogs in `make test`, cover
# the catalog's part of a merge)
LONG_PG_MODULES = {"test_merge_keyless_on_conflict"}
LONG_ONLY_PG = ["sqlite", pytest.param("postgresql", marks=pytest.mark.long_only)]


def pytest_generate_tests(metafunc):
    if "catalog_url" not in metafunc.fixturenames:
        return
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    if module in PG_MODULES:
        metafunc.parametrize("catalog_url", CATALOG_KINDS, indirect=True)
    elif module in LONG_PG_MODULES:
        metafunc.parametrize("catalog_url", LONG_ONLY_PG, indirect=True)


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "warehouse")


@pytest.fixture
def catalog_url(request):
    """The catalog URL of a test: None (a SQLite file in the warehouse) or a fresh PostgreSQL database."""
    with catalog_of_kind(getattr(request, "param", "sqlite")) as url:
        yield url


def pytest_configure(config):
    config.addinivalue_line("markers", "catalog_only: the test's `lh` has no Spark (it reads no data and starts no JVM)")


@pytest.fixture
def lh(request, warehouse, catalog_url):
    """A new catalog (a real SQLite file, or a new PostgreSQL database) and warehouse per test; with
    Spark unless the test is marked catalog_only."""
    spark = None if request.node.get_closest_marker("catalog_only") else request.getfixturevalue("spark")
    lakehouse = Lakehouse(spark, warehouse, catalog_url)
    yield lakehouse
    lakehouse.store.dispose()


@pytest.fixture
def orders(lh, spark):
    """main: database shop, table shop.orders(id, amount) with ids 1..5."""
    with lh.transaction("main", message="setup") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.orders", spark.createDataFrame(
            [(i, float(i * 10)) for i in range(1, 6)], "id bigint, amount double"))
    return "shop.orders"
