"""What a write's difference removes and adds is counted while the tombstone's write computes it (observed
metrics, no job of its own): the tombstone summary and the count of added rows, which the write filters out."""
from pyspark.sql import Observation
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.storage.difference import NEW, OLD, SIDE, change_counts, observed_changes
from dbt.adapters.branchspark.core.storage.layout import SEGMENT_COLUMN
from dbt.adapters.branchspark.core.storage.reader import ROW_FILE


def changed_rows(spark):
    rows = [(OLD, "s1", "s1/a.parquet"), (OLD, "s1", "s1/a.parquet"), (OLD, "s2", "s2/b.parquet"),
            (NEW, None, None), (NEW, None, None), (NEW, None, None), (NEW, None, None)]
    return spark.createDataFrame(rows, f"{SIDE} int, {SEGMENT_COLUMN} string, {ROW_FILE} string")


def write_removed(changed, path):
    observed = Observation()
    changed.observe(observed, *change_counts()).filter(F.col(SIDE) == OLD).write.parquet(str(path))
    return observed_changes(observed)


def test_counts_removed_rows_their_segments_and_files_and_added_rows(spark, tmp_path):
    summary, added = write_removed(changed_rows(spark), tmp_path / "tombstone")
    assert (summary.rows, summary.segments, summary.files, added) == (
        3, frozenset({"s1", "s2"}), frozenset({"s1/a.parquet", "s2/b.parquet"}), 4)
    assert spark.read.parquet(str(tmp_path / "tombstone")).count() == 3  # the write kept only the removed rows


def test_an_empty_difference_counts_nothing(spark, tmp_path):
    summary, added = write_removed(changed_rows(spark).filter(F.lit(False)), tmp_path / "tombstone")
    assert (summary.rows, summary.segments, summary.files, added) == (0, frozenset(), frozenset(), 0)
