"""A keyed insert's check that no new key is already held reads only the files whose recorded key range can hold one
of its keys (SegmentInfo.key_ranges, catalog revision 0005; issue 73): keys that grow touch only the newest files,
and on object storage the others cost no request. What is checked here: the ranges the catalog records are each
file's true lowest and highest key; a file whose range misses the new keys is never opened (it is taken away and
the insert still lands), one whose range can hold them is; a held key is refused wherever it lies; and a range
recorded for another column (the primary key redefined) prunes nothing.
"""
from __future__ import annotations

import os
import shutil

import pytest
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.changes import table_changes
from dbt.adapters.branchspark.core.connect import is_connect
from sorted_rows import rows

TABLE = "shop.accounts"


@pytest.fixture
def local_spark(spark):
    if is_connect(spark):
        pytest.skip("the files are taken away on the driver's disk: in-process only (the check is the same code)")
    return spark


def accounts(spark, start: int, end: int):
    return spark.range(start, end).select("id", (F.col("id") % 97).alias("balance"),
                                          F.format_string("c%05d", "id").alias("code"))


def file_ranges(lh, spark, key: str) -> dict[str, tuple]:
    """{data file path: (recorded range, (true lowest, true highest) `key`)} of the table on main."""
    snapshot = lh.snapshot()
    state = snapshot.state(TABLE)
    recorded = {}
    for segment in snapshot.ns.segment_infos(state.segments):
        assert len(segment.key_ranges) == len(segment.files), f"every file of {segment.path} has a range"
        for name, known in zip(segment.files, segment.key_ranges):
            recorded[os.path.join(lh.warehouse.root, segment.path, name)] = known
    true = {row[0]: (row[1], row[2]) for row in
            spark.read.parquet(*recorded).groupBy(F.expr("_metadata.file_path")).agg(F.min(key), F.max(key)).collect()}
    return {path.removeprefix("file:"): (known, true[path]) for path, known in
            ((p, recorded[p.removeprefix("file:")]) for p in true)}


def test_an_insert_opens_only_the_files_whose_key_range_can_hold_its_keys(lh, local_spark):
    spark = local_spark
    with lh.transaction("main", message="load") as tx:
        tx.create_database("shop")
        tx.create_table_as(TABLE, accounts(spark, 0, 4000).repartitionByRange(4, "id"), primary_key=["id"])
    ranges = file_ranges(lh, spark, "id")
    assert len(ranges) == 4
    for path, (known, true) in ranges.items():
        assert tuple(known) == true, f"{path}: recorded {known}, holds {true}"
    lowest = next(path for path, (known, _) in ranges.items() if known[0] == 0)
    aside = lowest + ".aside"
    shutil.move(lowest, aside)  # the file of ids 0..~999 is gone: any read of it fails
    try:
        with lh.transaction("main", message="new ids") as tx:
            tx.insert(TABLE, accounts(spark, 5000, 6000).coalesce(1))
        head = lh.snapshot().commit_id
        with pytest.raises(Exception, match="(?i)missing|not exist|no such file|damaged"):
            with lh.transaction("main", message="an id in the missing file's range") as tx:
                tx.insert(TABLE, accounts(spark, 4500, 4501).union(accounts(spark, 10, 11)))
        assert lh.snapshot().commit_id == head
    finally:
        shutil.move(aside, lowest)
    assert lh.read(TABLE).count() == 5000
    # a held key is refused wherever it lies: in the first file, in the last write's, at a range's edge
    for held in (10, 5999, 5000, 3999):
        with pytest.raises(errors.InvalidArgument, match="already holds"):
            lh.branch("main").insert(TABLE, accounts(spark, 4000, 4010).union(accounts(spark, held, held + 1)))
    # keys deleted before are new again (the tombstone is read with the files that held them)
    lh.branch("main").delete(TABLE, "id BETWEEN 100 AND 109")
    lh.branch("main").insert(TABLE, accounts(spark, 4000, 4010).union(accounts(spark, 100, 110)))
    assert lh.read(TABLE).count() == 5010
    assert rows(lh.read(TABLE).where("id BETWEEN 98 AND 111").select("id")) == [(i,) for i in range(98, 112)]


def test_string_keys_prune_by_their_order_and_a_redefined_key_prunes_nothing(lh, local_spark):
    spark = local_spark
    with lh.transaction("main", message="load") as tx:
        tx.create_database("shop")
        tx.create_table_as(TABLE, accounts(spark, 0, 2000).repartitionByRange(2, "code"), primary_key=["code"])
    ranges = file_ranges(lh, spark, "code")
    assert len(ranges) == 2 and all(tuple(known) == true for known, true in ranges.values()), ranges
    with pytest.raises(errors.InvalidArgument, match="already holds"):
        lh.branch("main").insert(TABLE, accounts(spark, 1999, 2001))
    lh.branch("main").insert(TABLE, accounts(spark, 2000, 2100))
    # The key becomes `id`: every file's recorded range is of `code`, so none may rule a file out.
    with lh.transaction("main", message="key on id") as tx:
        tx.replace_table(TABLE, lh.read(TABLE), primary_key=["id"])
    for held in (0, 1500, 2099):
        with pytest.raises(errors.InvalidArgument, match="already holds"):
            lh.branch("main").insert(TABLE, accounts(spark, held, held + 1).withColumn("code", F.lit("new")))
    assert lh.read(TABLE).count() == 2100


def test_an_upsert_into_a_table_of_many_files_opens_only_those_that_can_hold_its_keys(lh, local_spark):
    """An incremental model's upsert of recent keys (row_writes._upsert_key_range): with enough files that carry a
    range, only the files whose range meets the new keys' are read; what it replaces and adds is exact."""
    spark = local_spark
    with lh.transaction("main", message="load") as tx:
        tx.create_database("shop")
        tx.create_table_as(TABLE, accounts(spark, 0, 8000).repartitionByRange(8, "id"), primary_key=["id"])
    ranges = file_ranges(lh, spark, "id")
    lowest = next(path for path, (known, _) in ranges.items() if known[0] == 0)
    shutil.move(lowest, lowest + ".aside")
    try:
        changed = accounts(spark, 7990, 8010).withColumn("balance", F.col("balance") + 1000)
        lh.branch("main").upsert(TABLE, changed)
        head = lh.snapshot().commit_id
        with pytest.raises(Exception, match="(?i)missing|not exist|no such file|damaged"):
            lh.branch("main").upsert(TABLE, accounts(spark, 5, 6))
        assert lh.snapshot().commit_id == head
    finally:
        shutil.move(lowest + ".aside", lowest)
    table = lh.read(TABLE)
    assert table.count() == 8010
    assert rows(table.where("id >= 7985").select("id", "balance")) == \
        [(i, i % 97 + (1000 if i >= 7990 else 0)) for i in range(7985, 8010)]
    # the feed of the upsert (an update is a delete and an insert, SPEC 4): the 10 replaced rows and 20 new images
    before = lh.log("main")[1].id
    feed = table_changes(lh, TABLE, before, head).groupBy("_change_type").count().collect()
    assert sorted(tuple(r) for r in feed) == [("delete", 10), ("insert", 20)]
