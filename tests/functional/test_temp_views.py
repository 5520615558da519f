"""The session temp views that expose a branch to dbt's SQL (core/sql/temp_views.py).

After a commit, a relation's temp view is replaced on its next use instead of being dropped at once (one
round trip less per model build); these tests pin that a statement never reads the earlier version and
that a dropped relation's view goes away even when it was never read in between.
"""
import pytest

from dbt.adapters.branchspark.core.sql.temp_views import BranchViews
from dbt.adapters.branchspark.core.lakehouse import Lakehouse


@pytest.fixture
def shop(spark, tmp_path):
    lakehouse = Lakehouse(spark, str(tmp_path / "warehouse"))
    with lakehouse.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.orders", spark.createDataFrame([(1, "placed")], "id int, status string"))
    views = BranchViews(spark)
    views.sync(lakehouse, "main")
    yield lakehouse, views
    for name in list(views.relations):
        views.forget(name)


def _temp_views(spark) -> set:
    # SQL rather than spark.catalog.listTables(), whose typed rows the tests' interpreted sessions cannot decode
    return {r.tableName for r in spark.sql("SHOW TABLES").where("isTemporary").collect()}


def _read(spark, views: BranchViews, name: str) -> list:
    views.ensure([name])  # what every routed statement does before Spark sees it
    return sorted(tuple(r) for r in spark.table(f"`{name}`").collect())


def test_a_committed_change_is_what_the_next_statement_reads(shop, spark):
    lakehouse, views = shop
    assert _read(spark, views, "shop.orders") == [(1, "placed")]
    lakehouse.branch("main").insert("shop.orders", spark.createDataFrame([(2, "shipped")], "id int, status string"))
    views.show_snapshot(lakehouse.snapshot("main"), ["shop.orders"])
    assert _read(spark, views, "shop.orders") == [(1, "placed"), (2, "shipped")]


def test_a_relation_dropped_after_a_rebuild_leaves_no_view_behind(shop, spark):
    lakehouse, views = shop
    _read(spark, views, "shop.orders")
    lakehouse.branch("main").insert("shop.orders", spark.createDataFrame([(2, "shipped")], "id int, status string"))
    views.show_snapshot(lakehouse.snapshot("main"), ["shop.orders"])  # its view now shows the earlier rows
    lakehouse.branch("main").drop_table("shop.orders")
    views.show_snapshot(lakehouse.snapshot("main"), ["shop.orders"])  # dropped before any statement read it
    assert "shop.orders" not in _temp_views(spark)
    assert not views.is_branch_relation("shop", "orders")


def test_a_staged_table_is_built_when_a_statement_first_names_it(shop, spark):
    """A model build's staged write is shown lazily (stage_table): nothing is built until a statement names
    the table, and that statement reads the staged rows, not the head its temp view showed before."""
    lakehouse, views = shop
    assert _read(spark, views, "shop.orders") == [(1, "placed")]  # its temp view now shows the head
    loads = []
    staged = spark.createDataFrame([(1, "placed"), (3, "new")], "id int, status string")
    views.stage_table("shop.orders", lambda: loads.append("built") or staged)
    assert loads == []
    assert _read(spark, views, "shop.orders") == [(1, "placed"), (3, "new")]
    assert _read(spark, views, "shop.orders") == [(1, "placed"), (3, "new")]
    assert loads == ["built"]


def test_a_staged_table_forgotten_before_any_read_leaves_no_view_behind(shop, spark):
    lakehouse, views = shop
    _read(spark, views, "shop.orders")
    views.stage_table("shop.orders", lambda: pytest.fail("a staged table no statement named was built"))
    views.forget("shop.orders")
    assert "shop.orders" not in _temp_views(spark)
    assert not views.is_branch_relation("shop", "orders")
