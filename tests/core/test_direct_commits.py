"""branchspark's writes commit directly (storage/direct_writes.py, jvm/DirectCommitProtocol.java; issue 73): each
file is written once, under its final name, and the catalog names exactly the files the write committed, with their
sizes; no temporary folder, no marker, no move. A user's own write on the same session commits as it always did.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.connect import is_connect
from dbt.adapters.branchspark.core.storage import direct_writes
from sorted_rows import rows
from tests.missing import missing

TABLE = "shop.accounts"


@pytest.fixture
def direct(spark):
    if is_connect(spark):
        pytest.skip("through Spark Connect the server commits and branchspark lists the folder (direct_writes.usable)")
    if not direct_writes.usable(spark):
        missing("branchspark's jar is not loaded with this session: build it (make install)")


def accounts(spark, start: int, end: int, shift: int = 0):
    return spark.range(start, end).select("id", ((F.col("id") + shift) % 97).alias("balance"))


def named_files(lh) -> dict[str, int]:
    """{path under the warehouse: bytes} of every file the catalog names for the table on main."""
    snapshot = lh.snapshot()
    state = snapshot.state(TABLE)
    named = {}
    for item in [*snapshot.ns.segment_infos(state.segments), *snapshot.ns.tombstone_infos(state.tombstones)]:
        assert len(item.files) == len(item.file_sizes), f"{item.path}: every file has its size"
        named.update({f"{item.path}/{name}": size for name, size in zip(item.files, item.file_sizes)})
    return named


def test_every_kind_of_write_names_exactly_the_files_it_wrote_with_no_temporary_folder(lh, spark, warehouse, direct):
    with lh.transaction("main", message="load") as tx:
        tx.create_database("shop")
        tx.create_table_as(TABLE, accounts(spark, 0, 400).repartition(3), primary_key=["id"])
    main = lh.branch("main")
    main.insert(TABLE, accounts(spark, 400, 500))  # a segment
    assert main.update(TABLE, "id % 10 = 0", {"balance": "balance + 1"}) == 50  # a tombstone and a segment
    main.upsert(TABLE, accounts(spark, 450, 550, shift=1))  # a difference: both sides in one write
    assert main.delete(TABLE, "id < 20") == 20
    expected = {(i, (i + (1 if i >= 450 else 0)) % 97 + (1 if i % 10 == 0 and i < 450 else 0)) for i in range(20, 550)}
    assert set(rows(lh.read(TABLE))) == expected

    root = Path(warehouse)
    on_disk = {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*.parquet")}
    named = named_files(lh)
    # every file of the table's folder is named (none is a leftover of the write) at its recorded size
    table_files = {path: size for path, size in on_disk.items() if path.startswith("tables/")}
    assert named == table_files
    leftovers = [str(p.relative_to(root)) for p in root.rglob("*")
                 if p.name in ("_temporary", "_SUCCESS") or p.name.startswith(("_bs_side=", ".spark-staging"))]
    assert not leftovers, f"a write left a temporary folder, a marker or a side folder: {leftovers}"


def test_a_write_that_fails_names_nothing_and_changes_nothing(lh, spark, direct):
    with lh.transaction("main", message="load") as tx:
        tx.create_database("shop")
        tx.create_table_as(TABLE, accounts(spark, 0, 100), primary_key=["id"])
    before = named_files(lh)
    failing = accounts(spark, 100, 200).withColumn(
        "balance", F.when(F.col("id") == 150, F.raise_error(F.lit("boom"))).otherwise(F.col("balance")))
    with pytest.raises(Exception, match="boom"):
        lh.branch("main").insert(TABLE, failing)
    repeated = accounts(spark, 50, 60)  # keys the table holds: the check refuses the written files
    with pytest.raises(errors.InvalidArgument, match="already holds"):
        lh.branch("main").insert(TABLE, repeated)
    assert named_files(lh) == before
    assert set(rows(lh.read(TABLE))) == {(i, i % 97) for i in range(100)}


def test_a_users_own_write_on_the_session_commits_as_before(spark, tmp_path, direct):
    target = str(tmp_path / "theirs")
    spark.range(0, 300).repartition(2).write.parquet(target)
    assert spark.read.parquet(target).count() == 300
    names = sorted(os.listdir(target))
    assert not [n for n in names if n.startswith("_temporary")], names
    direct_names = [n for n in names if re.search(r"-a\d+-c\d{3}\.", n)]  # DirectCommitProtocol's attempt mark
    assert not direct_names, f"a user's write went through branchspark's direct commits: {names}"
