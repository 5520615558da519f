"""A write's comparison small enough for one task (storage/difference.py, `fits_one_task`) is planned at once, in a
copy of the session without adaptive execution: it runs in Spark's default settings (conftest's
SPARK_DEFAULT_MODULES), where adaptive execution is on."""
import py4j.java_gateway
import pytest


def test_a_small_upsert_is_planned_at_once_and_leaves_the_session_as_it_was(lh, spark, spark_connect_url):
    """An upsert compared in one task is planned in a copy of the session without adaptive execution: two Spark
    jobs (the new keys' broadcast, then the comparison and its write), where adaptive execution ran four (the
    cached new rows twice as stages of their own, the broadcast, the write: about 0.1 s of a 0.6 s upsert).
    The caller's session keeps its setting and branchspark's error hook, and the rows are the upsert's."""
    if spark_connect_url:
        pytest.skip("counts the JVM's Spark jobs by job group, which a Spark Connect client cannot read")
    with lh.transaction("main") as tx:
        tx.create_database("small")
        tx.create_table_as("small.t", spark.range(1000).selectExpr("id", "id * 2 AS v"), primary_key=["id"])
    adaptive = spark.conf.get("spark.sql.adaptive.enabled")
    tracker = spark.sparkContext.statusTracker()
    jobs = []
    for round_index in range(2):
        group = f"small-upsert-{round_index}"
        spark.sparkContext.setJobGroup(group, group)
        try:
            lh.branch("main").upsert("small.t", spark.range(round_index, 1000, 100)
                                     .selectExpr("id", f"id * 3 + {round_index} AS v"))
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        jobs.append(len(tracker.getJobIdsForGroup(group)))
    assert jobs == [2, 2]
    assert spark.conf.get("spark.sql.adaptive.enabled") == adaptive
    # No new pyspark session either: one would put back pyspark's error hook in place of branchspark's
    assert getattr(py4j.java_gateway.get_return_value, "_branchspark", False)
    rows = dict(lh.read("small.t").collect())
    assert len(rows) == 1000
    assert all(rows[k] == k * 3 + 1 for k in range(1, 1000, 100))
    assert all(rows[k] == k * 3 for k in range(0, 1000, 100))
    assert rows[2] == 4
