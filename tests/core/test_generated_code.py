"""Spark compiles the code of each query it runs (Janino, then the JVM's JIT from cold) unless it ran the same
code before. A BIGINT literal is written into that code, so a value that changes with every commit, such as a
tombstone's sequence, made every write compile classes of its own (issue 72: two compilations of the four an
upsert of the peers' bench made, at 100k rows). These run with Spark's code generation on (conftest.py)."""
import pytest

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
