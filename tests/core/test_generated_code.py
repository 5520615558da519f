"""Spark compiles the code of each query it runs (Janino, then the JVM's JIT from cold) unless it ran the same
code before. A BIGINT literal is written into that code, so a value that changes with every commit, such as a
tombstone's sequence, made every write compile classes of its own (issue 72: two compilations of the four an
upsert of the peers' bench made, at 100k rows). These run with Spark's code generation on (conftest.py)."""
import uuid

import pytest

from dbt.adapters.branchspark.core.changes import table_changes
from sorted_rows import rows


@pytest.fixture
def compilations(spark, spark_connect_url):
    if spark_connect_url:
        pytest.skip("counts the JVM's code compilations, which a Spark Connect client cannot read")
    metric = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    return metric.getCount


def test_an_upsert_compiles_nothing_its_first_did_not(lh, spark, compilations):
    """Upserts of the same shape, each a new commit with a new tombstone sequence: once the first has run,
    the next compile nothing; every upsert's rows are read back."""
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.stock", spark.range(0, 50).selectExpr("id", "CAST(0 AS INT) AS qty"),
                           primary_key=["id"])
    branch = lh.branch("main")
    expected = {i: 0 for i in range(50)}
    compiled = []
    for round_index in range(1, 5):
        changed = [(i, round_index) for i in range(round_index * 3, round_index * 3 + 5)]
        before = compilations()
        branch.upsert("shop.stock", spark.createDataFrame(changed, "id BIGINT, qty INT"), key=["id"])
        compiled.append(compilations() - before)
        expected.update(changed)
        assert rows(lh.read("shop.stock")) == sorted(expected.items())
    assert compiled[0] > 0 and compiled[2:] == [0, 0], compiled


def test_the_feed_of_each_new_commit_compiles_nothing_the_first_did_not(lh, spark, compilations):
    """A commit's labels (its time and sequence: BIGINT-like values new with each commit) are values the feed's
    source gives every row, not literals of its code: the feed of each new upsert compiles nothing once the first
    has been read (before: a class for each commit)."""
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.shelf", spark.range(0, 50).selectExpr("id", "CAST(0 AS SMALLINT) AS slot"),
                           primary_key=["id"])
    branch = lh.branch("main")
    compiled = []
    for round_index in range(1, 5):
        before = lh.get_branch("main").head
        changed = [(i, round_index) for i in range(round_index * 3, round_index * 3 + 4)]
        branch.upsert("shop.shelf", spark.createDataFrame(changed, "id BIGINT, slot SMALLINT"), key=["id"])
        feed = table_changes(lh, "shop.shelf", before, lh.get_branch("main").head)
        counted = compilations()
        got = [tuple(r) for r in feed.select("id", "slot", "_change_type", "_commit_seq").collect()]
        compiled.append(compilations() - counted)
        seq = lh.log("main", 1)[0].seq
        inserts = sorted((i, s, "insert", seq) for i, s in changed)
        assert sorted(r for r in got if r[2] == "insert") == inserts
        assert sorted(r[0] for r in got if r[2] == "delete") == [i for i, _ in changed if i < 50]
    assert compiled[1:] == [0, 0, 0], compiled
    # The count can see a compilation: a query of a shape new to this process compiles.
    counted = compilations()
    spark.range(3).selectExpr(f"id * {uuid.uuid4().int % 10**12} AS probe").collect()
    assert compilations() > counted
