"""The plans a read builds. Each DataFrame step is analyzed by Spark as it is built (5-9 ms a step on 2 cores,
issue 72), so a read whose projection would keep every column as loaded builds none, and the change feed's
labelled sides read no row ids they would drop."""
import pytest

from dbt.adapters.branchspark.core.changes import table_changes
from sorted_rows import rows


@pytest.fixture
def analyzed(spark_connect_url):
    if spark_connect_url:
        pytest.skip("reads the JVM's analyzed plan, which a Spark Connect client does not hold")
    return lambda frame: frame._jdf.queryExecution().analyzed().toString()


@pytest.mark.parametrize("key", [["id"], None], ids=["keyed", "keyless"])
def test_a_read_projects_nothing_it_loads_as_it_is(lh, spark, analyzed, key):
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.stock", spark.range(0, 40).selectExpr("id", "CAST(id % 3 AS INT) AS qty"),
                           primary_key=key)
    plain = analyzed(lh.read("shop.stock"))
    assert "Project" not in plain and "_metadata" not in plain, plain
    lh.branch("main").delete("shop.stock", "id % 10 = 4")  # a tombstone: its rows left out by position
    after = analyzed(lh.read("shop.stock"))
    assert "Project" not in after, after
    assert rows(lh.read("shop.stock")) == [(i, i % 3) for i in range(40) if i % 10 != 4]


def test_the_feed_of_an_upsert_projects_nothing_and_reads_no_row_ids(lh, spark, analyzed):
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.stock", spark.range(0, 40).selectExpr("id", "CAST(0 AS INT) AS qty"),
                           primary_key=["id"])
    before = lh.get_branch("main").head
    changed = [(5, 1), (17, 1), (40, 1)]  # two updates and an insert
    lh.branch("main").upsert("shop.stock", spark.createDataFrame(changed, "id BIGINT, qty INT"), key=["id"])
    feed = table_changes(lh, "shop.stock", before, lh.get_branch("main").head)
    plan = analyzed(feed)
    # no projection at all: each side's file is read in the table's columns, its source giving the commit's
    # labels as values of every row; no row id computed for either
    assert "Project [" not in plan and "_metadata" not in plan, plan
    collected = [tuple(r) for r in feed.select("id", "qty", "_change_type").collect()]
    assert [r[2] for r in collected] == ["delete"] * 2 + ["insert"] * 3  # the commit's deletes come first
    assert sorted(collected) == sorted([(5, 0, "delete"), (17, 0, "delete"), (5, 1, "insert"), (17, 1, "insert"),
                                        (40, 1, "insert")])
