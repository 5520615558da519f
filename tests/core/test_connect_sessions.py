"""Frames the core materializes stay in the session that made them, through Spark Connect too (make test-long's
Connect pass, 2026-12-03: a merge in a second Connect session failed with DATAFRAME_NOT_FOUND)."""
import pytest
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.connect import is_connect, local_checkpoint
from tests.sessions import make_active


@pytest.mark.parametrize("run", [1, 2])
def test_a_checkpoint_made_in_a_second_session_is_read_in_that_session(spark, run):
    """pyspark's Connect client binds a checkpoint to the active session; the core's checkpoint keeps it in its
    own, so the next query of the second session finds it (and releasing it asks the right session)."""
    other = spark.newSession()
    try:
        frame = local_checkpoint(other.range(6).withColumn("twice", F.col("id") * 2))
        assert frame.sparkSession is other
        assert sorted(row.twice for row in frame.filter("id > 3").collect()) == [8, 10]
        joined = frame.join(other.range(2, 4), "id")  # mixing it with the session's own frames
        assert sorted(row.twice for row in joined.collect()) == [4, 6]
    finally:
        make_active(spark)


def test_a_checkpoint_in_the_active_session_is_the_one_pyspark_made(spark):
    frame = spark.range(3)
    checkpointed = local_checkpoint(frame)
    assert checkpointed.sparkSession is spark and checkpointed.count() == 3
    if is_connect(spark):  # nothing rebound: its own relation, released when collected
        assert checkpointed._plan._relation_id is not None
