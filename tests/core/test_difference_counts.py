"""What a write's difference removes and adds is counted while a write computes it (observed metrics, no
job of its own): the tombstone summary and the count of added rows. A difference of a table without
partitions is written once, split by side, and each side's files moved to a tombstone and a segment."""
import pytest
from pyspark.sql import Observation
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core import errors

from dbt.adapters.branchspark.core.storage.difference import (NEW, OLD, SIDE, change_counts, fits_one_task,
                                                              observed_changes)
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


# ------------------------------------------------------------ a difference in one write (writer.write_difference)
def _table_files(lh, name):
    """(state, segments, tombstones) of table `name` on main."""
    snap = lh.snapshot("main")
    state = snap.state(name)
    segments = snap.ns.segment_infos(state.segments)
    tombstones = snap.ns.tombstone_infos(state.tombstones)
    return state, segments, tombstones


def _rows(lh, name):
    return sorted(tuple(r) for r in lh.read(name).collect())


def test_a_rebuild_writes_removed_and_added_rows_once_each_where_tombstones_and_segments_live(lh, spark):
    with lh.transaction("main") as tx:
        tx.create_database("d")
        tx.create_table_as("d.t", spark.range(20).selectExpr("id", "id * 10 AS v"))
    lh.branch("main").overwrite("d.t", spark.range(20).selectExpr("id", "IF(id < 3, -1 - id, id * 10) AS v"))
    state, segments, tombstones = _table_files(lh, "d.t")
    assert _rows(lh, "d.t") == sorted((i, -1 - i if i < 3 else i * 10) for i in range(20))
    new = segments[-1]  # segments are listed in the order they were added
    # the added rows are the segment's only rows, in files straight below its folder, as any write's
    assert lh.warehouse.parquet_rows(f"{new.path}/{f}" for f in new.files) == 3
    assert all("/" not in f for f in new.files)
    assert [t.row_count for t in tombstones] == [3]
    tomb_files = [p for p, _ in lh.warehouse.list_files(tombstones[0].path) if p.endswith(".parquet")]
    assert lh.warehouse.parquet_rows(tomb_files) == 3
    # no folder of the one write's split by side is left anywhere under the table
    table_dir = lh.warehouse.table_dir(state.id)
    assert not [p for p, _ in lh.warehouse.list_files(table_dir) if "_bs_side=" in p]
    # and gc finds every file referenced: nothing of the write is left over
    assert lh.gc(grace_seconds=0).deleted_files == []
    assert _rows(lh, "d.t") == sorted((i, -1 - i if i < 3 else i * 10) for i in range(20))


def test_a_difference_that_only_removes_or_only_adds_writes_only_that_side(lh, spark):
    with lh.transaction("main") as tx:
        tx.create_database("d")
        tx.create_table_as("d.t", spark.range(10).selectExpr("id", "id AS v"))
        tx.create_table_as("d.k", spark.range(10).selectExpr("id", "id AS v"), primary_key=["id"])
    lh.branch("main").overwrite("d.t", spark.range(8).selectExpr("id", "id AS v"))  # rows 8, 9 removed
    _, segments, tombstones = _table_files(lh, "d.t")
    assert (len(segments), [t.row_count for t in tombstones]) == (1, [2])
    assert _rows(lh, "d.t") == [(i, i) for i in range(8)]
    lh.branch("main").upsert("d.k", spark.range(8, 13).selectExpr("id", "id AS v"))  # rows 10-12 added
    state, segments, tombstones = _table_files(lh, "d.k")
    assert (len(segments), tombstones) == (2, [])
    assert lh.warehouse.parquet_rows(f"{segments[-1].path}/{f}" for f in segments[-1].files) == 3
    lh.branch("main").upsert("d.k", spark.range(5).selectExpr("id", "id AS v"))  # the same rows: nothing
    assert _table_files(lh, "d.k")[0] == state
    assert _rows(lh, "d.k") == [(i, i) for i in range(13)]
    for name in ("d.t", "d.k"):
        table_dir = lh.warehouse.table_dir(_table_files(lh, name)[0].id)
        assert not [p for p, _ in lh.warehouse.list_files(table_dir) if "_bs_side=" in p]
    assert lh.gc(grace_seconds=0).deleted_files == []


# --------------------------------------------- a comparison in one task or after a shuffle (difference.fits_one_task)
def test_a_comparison_in_one_task_and_one_after_a_shuffle_change_the_same_rows(lh, spark):
    """Old and new rows Spark estimates under its broadcast threshold are compared in one task, with no
    shuffle of their own; larger ones (here: the threshold turned off) after a shuffle by value, or by key
    for an upsert on the primary key. Both ways a rebuild and an upsert change the same rows and refuse a
    repeated key."""
    def play(branch):
        b = lh.branch(branch)
        b.overwrite("d.free", spark.range(12).selectExpr("id % 4 AS k", "IF(id < 2, 'new', 'v') AS v"))
        b.upsert("d.keyed", spark.createDataFrame([(1, "a"), (2, "B"), (7, "g")], "k bigint, v string"))
        with pytest.raises(errors.InvalidArgument, match="repeats key"):
            b.upsert("d.keyed", spark.createDataFrame([(2, "B"), (2, "x")], "k bigint, v string"))
        changed = {t: sorted(tuple(r) for r in lh.read(t, branch).collect()) for t in ("d.free", "d.keyed")}
        return changed, [[o.op for o in c.operations] for c in lh.log(branch, 2)]  # the upsert's, the rebuild's

    with lh.transaction("main") as tx:
        tx.create_database("d")
        tx.create_table_as("d.free", spark.range(10).selectExpr("id % 4 AS k", "'v' AS v"))
        tx.create_table_as("d.keyed", spark.createDataFrame([(1, "a"), (2, "b")], "k bigint, v string"),
                           primary_key=["k"])
    lh.create_branch("one_task", "main")
    lh.create_branch("shuffled", "main")
    one_task = play("one_task")
    threshold = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        shuffled = play("shuffled")
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", threshold)
    assert one_task == shuffled
    rows, ops = one_task
    assert rows["d.free"] == sorted([(0, "new"), (1, "new")] + [(k, "v") for k in (0, 1, 2, 3, 2, 3, 0, 1, 2, 3)])
    assert rows["d.keyed"] == [(1, "a"), (2, "B"), (7, "g")]
    assert ops == [["update", "insert"], ["overwrite"]]  # key 1 unchanged: only 2 updated, 7 inserted


def test_what_counts_as_small_enough_for_one_task(spark):
    """The relations behind the rows are summed (a WITH query's name aside: its definition's relations count),
    not the plan's estimate of its output (a join's is the product of its sides)."""
    small = spark.range(1000)
    assert fits_one_task(small.join(small.selectExpr("id AS other"), F.lit(True)))  # product ~64 MB, inputs 16 KB
    assert fits_one_task(spark.sql("WITH x AS (SELECT id FROM range(1000)) SELECT * FROM x JOIN x USING (id)"))
    assert not fits_one_task(spark.range(10**9).union(small))  # 8 GB by Spark's estimate
    threshold = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        assert not fits_one_task(small)
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", threshold)

