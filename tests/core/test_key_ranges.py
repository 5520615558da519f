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
from dbt.adapters.branchspark.core.row_writes import UPSERT_RANGE_BYTES_ENV
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


def test_an_upsert_into_a_table_of_many_files_opens_only_those_that_can_hold_its_keys(lh, local_spark, monkeypatch):
    """An incremental model's upsert of recent keys (row_writes._upsert_key_range): with enough files that carry a
    range, and enough bytes (here any: the table is small), only the files whose range meets the new keys' are
    read; what it replaces and adds is exact. With the default floor of bytes, so small a table is read whole,
    without the query for the range."""
    spark = local_spark
    with lh.transaction("main", message="load") as tx:
        tx.create_database("shop")
        tx.create_table_as(TABLE, accounts(spark, 0, 8000).repartitionByRange(8, "id"), primary_key=["id"])
    ranges = file_ranges(lh, spark, "id")
    lowest = next(path for path, (known, _) in ranges.items() if known[0] == 0)
    shutil.move(lowest, lowest + ".aside")
    try:
        changed = accounts(spark, 7990, 8010).withColumn("balance", F.col("balance") + 1000)
        loaded = lh.snapshot().commit_id
        with pytest.raises(Exception, match="(?i)missing|not exist|no such file|damaged"):
            lh.branch("main").upsert(TABLE, changed)  # every file read: the one set aside too
        assert lh.snapshot().commit_id == loaded
        monkeypatch.setenv(UPSERT_RANGE_BYTES_ENV, "0")
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


def test_an_update_and_a_delete_by_key_open_only_the_files_whose_range_can_hold_a_match(lh, local_spark):
    """An update or delete whose predicate bounds the first key column (core/key_predicates.py) reads only the
    files whose recorded range meets the bounds, as Iceberg and Delta skip files by their statistics; a predicate
    that does not bound it (a function of the key, another column, an OR with one) reads every file."""
    spark = local_spark
    with lh.transaction("main", message="load") as tx:
        tx.create_database("shop")
        tx.create_table_as(TABLE, accounts(spark, 0, 4000).repartitionByRange(4, "id"), primary_key=["id"])
    ranges = file_ranges(lh, spark, "id")
    lowest = next(path for path, (known, _) in ranges.items() if known[0] == 0)
    shutil.move(lowest, lowest + ".aside")  # ids 0..~999: any read of this file fails
    try:
        branch = lh.branch("main")
        assert branch.update(TABLE, "id BETWEEN 3000 AND 3009", {"balance": "balance + 1000"}) == 10
        assert branch.update(TABLE, "id >= 3990 AND balance < 1000", {"balance": "balance + 1000"}) == 10
        assert branch.delete(TABLE, "id IN (2500, 2501, 3999) OR (id > 2600 AND id <= 2602)") == 5
        assert branch.delete(TABLE, "id <= -1") == 0  # no file can hold a match: nothing read, nothing written
        head = lh.snapshot().commit_id
        for unbounded in ("id % 1000 = 1", "code = 'c03001'", "id = 3001 OR balance = 5", "NOT id < 2000"):
            with pytest.raises(Exception, match="(?i)missing|not exist|no such file|damaged"):
                branch.delete(TABLE, unbounded)
        assert lh.snapshot().commit_id == head
    finally:
        shutil.move(lowest + ".aside", lowest)
    table = lh.read(TABLE)
    assert table.count() == 3995
    assert rows(table.where("balance >= 1000").select("id")) == \
        [(i,) for i in [*range(3000, 3010), *range(3990, 3999)]]
    assert rows(lh.read(TABLE).where("id BETWEEN 2499 AND 2603").select("id")) == \
        [(i,) for i in range(2499, 2604) if i not in (2500, 2501, 2601, 2602)]


def test_key_bounds_hold_every_row_spark_matches(spark):
    """For random predicates over an integer and a string column, every row Spark's own filter matches lies
    within the bounds core/key_predicates.py reads from the predicate: a file skipped by them holds no match."""
    import random

    from pyspark.sql import types as T

    from dbt.adapters.branchspark.core.key_predicates import key_bounds

    draw = random.Random(73)
    ids = list(range(-30, 131))
    frame = spark.createDataFrame([(i, f"k{i % 50:03d}", i % 7) for i in ids], "id bigint, code string, n int")

    def literal(column: str) -> str:
        if column == "code":
            return f"'k{draw.randint(-5, 55):03d}'"
        return draw.choice([str(draw.randint(-40, 140)), f"{draw.randint(-40, 140)}.5", f"-{draw.randint(0, 40)}",
                            f"'{draw.randint(0, 99)}'"])

    def atom(column: str) -> str:
        form = draw.randrange(9)
        name = draw.choice([column, column.upper(), f"`{column}`"])
        if form == 0:
            return f"{name} BETWEEN {literal(column)} AND {literal(column)}"
        if form == 1:
            return f"{name} IN ({', '.join(literal(column) for _ in range(draw.randint(1, 4)))})"
        if form == 2:
            return f"{literal(column)} {draw.choice(['<', '<=', '>', '>=', '='])} {name}"
        if form == 3:
            return f"n {draw.choice(['=', '<'])} {draw.randint(0, 7)}"  # another column
        if form == 4:
            return f"NOT {name} {draw.choice(['<', '='])} {literal(column)}"
        if form == 5 and column == "id":
            return f"{name} % 3 = {draw.randint(0, 2)}"
        return f"{name} {draw.choice(['<', '<=', '>', '>=', '=', '!=', '<=>'])} {literal(column)}"

    def predicate(column: str, depth: int = 0) -> str:
        if depth < 3 and draw.random() < 0.6:
            joined = f" {draw.choice(['AND', 'AND', 'OR'])} ".join(predicate(column, depth + 1)
                                                                  for _ in range(draw.randint(2, 3)))
            return f"({joined})" if draw.random() < 0.7 else joined
        return atom(column)

    cases = [(column, predicate(column)) for column in ("id", "code") for _ in range(150)]
    # (a string literal compared with `id`, such as '12', is a literal of another kind: it bounds nothing)
    matched = frame.select("id", "code", *[F.expr(p).alias(f"p{i}") for i, (_, p) in enumerate(cases)]).collect()
    bounded = 0
    for i, (column, text) in enumerate(cases):
        bounds = key_bounds(text, column, T.LongType() if column == "id" else T.StringType())
        if bounds is None:
            continue
        bounded += 1
        low, high = bounds
        for row in matched:
            if row[f"p{i}"]:
                value = row[column]
                assert (low is None or low <= value) and (high is None or value <= high), (text, bounds, value)
    assert bounded >= 100, bounded  # most predicates bound their column: the check above is not empty


def test_a_predicate_too_deep_to_read_bounds_nothing():
    """A generated predicate of thousands of terms (an OR per key) is beyond sqlglot's recursion: it bounds nothing
    (every file is read) rather than failing the update or delete."""
    from pyspark.sql import types as T

    from dbt.adapters.branchspark.core.key_predicates import key_bounds

    assert key_bounds(" OR ".join(f"id = {i}" for i in range(3000)), "id", T.LongType()) is None
    assert key_bounds(" OR ".join(f"id = {i}" for i in range(50)), "id", T.LongType()) == (0, 49)
