import pytest

from dbt.adapters.branchspark.lakehouse import Lakehouse


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "warehouse")


@pytest.fixture
def lh(spark, warehouse):
    """A new catalog (a real SQLite file) and warehouse per test."""
    lakehouse = Lakehouse(spark, warehouse)
    yield lakehouse
    lakehouse.store.dispose()


def rows(df, *columns):
    """The rows of a small test DataFrame as sorted tuples."""
    if columns:
        df = df.select(*columns)
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture
def orders(lh, spark):
    """main: database shop, table shop.orders(id, amount) with ids 1..5."""
    with lh.transaction("main", message="setup") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.orders", spark.createDataFrame(
            [(i, float(i * 10)) for i in range(1, 6)], "id bigint, amount double"))
    return "shop.orders"
