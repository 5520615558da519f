"""What a write's difference removes and adds is counted while the difference is computed (observed
metrics), and by one aggregation where no metrics come back (a Spark Connect server reports none for
a checkpoint): both give the same tombstone summary and count."""
from pyspark.sql import Observation
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.storage.difference import NEW, OLD, SIDE, change_counts, counted_changes
from dbt.adapters.branchspark.core.storage.layout import SEGMENT_COLUMN
from dbt.adapters.branchspark.core.storage.reader import ROW_FILE


def changed_rows(spark):
    rows = [(OLD, "s1", "s1/a.parquet"), (OLD, "s1", "s1/a.parquet"), (OLD, "s2", "s2/b.parquet"),
            (NEW, None, None), (NEW, None, None), (NEW, None, None), (NEW, None, None)]
    return spark.createDataFrame(rows, f"{SIDE} int, {SEGMENT_COLUMN} string, {ROW_FILE} string")


def test_observed_counts_equal_the_counted_ones(spark):
    observed = Observation()
    changed = changed_rows(spark).observe(observed, *change_counts()).localCheckpoint()
    summary, added = counted_changes(observed, changed)
    assert (summary.rows, summary.segments, summary.files, added) == (
        3, frozenset({"s1", "s2"}), frozenset({"s1/a.parquet", "s2/b.parquet"}), 4)
    # No metrics (an observation never computed): the same numbers, counted by an aggregation.
    assert counted_changes(Observation(), changed) == (summary, added)


def test_an_empty_difference_counts_nothing(spark):
    observed = Observation()
    changed = changed_rows(spark).filter(F.lit(False)).observe(observed, *change_counts()).localCheckpoint()
    for observation in (observed, Observation()):
        summary, added = counted_changes(observation, changed)
        assert (summary.rows, summary.segments, summary.files, added) == (0, frozenset(), frozenset(), 0)
