"""What a write's difference removes and adds is counted by the one aggregation job that also fills the
difference's cache (the writes then read the cache): the tombstone summary and the count of added rows."""
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.storage.difference import NEW, OLD, SIDE, counted_changes
from dbt.adapters.branchspark.core.storage.layout import SEGMENT_COLUMN
from dbt.adapters.branchspark.core.storage.reader import ROW_FILE


def changed_rows(spark):
    rows = [(OLD, "s1", "s1/a.parquet"), (OLD, "s1", "s1/a.parquet"), (OLD, "s2", "s2/b.parquet"),
            (NEW, None, None), (NEW, None, None), (NEW, None, None), (NEW, None, None)]
    return spark.createDataFrame(rows, f"{SIDE} int, {SEGMENT_COLUMN} string, {ROW_FILE} string")


def test_counts_removed_rows_their_segments_and_files_and_added_rows(spark):
    changed = changed_rows(spark).cache()
    try:
        summary, added = counted_changes(changed)
        assert (summary.rows, summary.segments, summary.files, added) == (
            3, frozenset({"s1", "s2"}), frozenset({"s1/a.parquet", "s2/b.parquet"}), 4)
        assert changed.is_cached  # the writes read what the count computed
    finally:
        changed.unpersist()


def test_an_empty_difference_counts_nothing(spark):
    summary, added = counted_changes(changed_rows(spark).filter(F.lit(False)))
    assert (summary.rows, summary.segments, summary.files, added) == (0, frozenset(), frozenset(), 0)
