"""A keyed table's deleted rows dropped by position (reader.by_position), as a keyless table's are: a segment that
every newer tombstone was written over reads through deletion vectors, with no key probed; a segment a merge or a
concurrent commit brought in after a tombstone was written, or one a tombstone without that record is newer than,
keeps the key probe. Every read gives the rows the probe gives (issue 72: the scan after deletes)."""
import threading
from dataclasses import replace

import pytest
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.storage import deletion_vectors, reader
from sorted_rows import rows

from tests.core.test_deleted_keys import build, expected, filtered_by_keys, frame, plan_text
from tests.core.test_deletion_vectors import LIVE_ROWS, needs_jdk


@pytest.fixture
def probe_only(monkeypatch):
    """Reads built after this call probe keys in every segment: the reference the positions must match."""
    def use_probe():
        monkeypatch.setattr(reader, "by_position", lambda table, segments, tombstones: set())
    return use_probe


def by_vectors(df) -> bool:
    """Whether a read drops deleted rows by position: our Parquet source, or the position filter."""
    plan = plan_text(df)
    return LIVE_ROWS in plan or deletion_vectors.FUNCTION in plan


def by_keys(df) -> bool:
    """Whether a read drops deleted rows by key: the probe, or the anti-join where the probe is not available (a
    Connect server without our extension)."""
    return filtered_by_keys(df) or "LeftAnti" in plan_text(df)


def all_reads(lh, name, versions):
    """Each version's rows, and its rows with their ids."""
    return [(rows(lh.read(name, at=v).select("id", "qty", "label")),
             rows(lh.snapshot(v).read(name, with_row_ids=True).select("id", "_bs_seg", "_bs_file", "_bs_pos",
                                                                      "_bs_seq")))
            for v in versions]


@needs_jdk
@pytest.mark.parametrize("key_type,partition_by", [("bigint", None), ("int", None), ("bigint", ["part"])],
                         ids=["bigint", "int", "partitioned"])
def test_a_keyed_table_written_on_one_branch_reads_by_position(lh, spark, probe_only, key_type, partition_by):
    """Upserts, deletes and an update on one branch: each tombstone records the version it was written over, so
    every segment reads by position, and the rows, row ids and earlier versions are the probe's."""
    name = "shop.orders"
    build(lh, spark, name, key_type, partition_by)
    table = lh.read(name)
    assert not by_keys(table) and by_vectors(table)
    assert "Join" not in plan_text(table)
    assert rows(table.select("id", "qty", "label", "part")) == expected(key_type)
    versions = [c.id for c in lh.log("main")][:4]
    positional = all_reads(lh, name, versions)
    probe_only()
    assert by_keys(lh.read(name))
    assert all_reads(lh, name, versions) == positional


@needs_jdk
def test_segments_a_merge_brings_after_a_tombstone_are_probed(lh, spark, probe_only):
    """dev upserts while main deletes other keys: main's tombstone is newer than dev's segment and was not written
    over it, so after the merge that segment is probed and main's older segments read by position. Then both
    branches change keys 1500-1504 and the merge settles it with its own tombstone, which records nothing: every
    older segment is probed. Each read gives the probe's rows."""
    name = "shop.orders"
    build(lh, spark, name)
    lh.create_branch("dev")
    lh.branch("dev").upsert(name, frame(spark, 2600, 2610, shift=6).withColumn("part", F.col("id") % 3), key=["id"])
    lh.branch("main").delete(name, "id between 100 and 110")
    lh.merge("dev", "main")
    table = lh.read(name)
    assert by_keys(table) and by_vectors(table)
    state = lh.snapshot("main").state(name)
    segments = list(lh.store.segments(state.segments).values())
    exact = reader.by_position(state, segments, list(lh.store.tombstones(state.tombstones).values()))
    assert len(exact) == len(segments) - 1
    got = rows(table.select("id", "qty", "label"))
    ids = {r[0] for r in got}
    assert set(range(2600, 2610)) <= ids and not ids & set(range(100, 111))
    merged_once = [c.id for c in lh.log("main")][:3]
    read_once = all_reads(lh, name, merged_once)

    lh.branch("dev").upsert(name, frame(spark, 1500, 1510, shift=7).withColumn("part", F.col("id") % 3), key=["id"])
    lh.branch("main").delete(name, "id between 1500 and 1504")
    lh.merge("dev", "main", on_conflict="ours")
    got = rows(lh.read(name).select("id", "qty", "label"))
    assert len({r[0] for r in got}) == len(got)
    versions = [c.id for c in lh.log("main")][:6]
    merged_twice = all_reads(lh, name, versions)
    probe_only()
    assert all_reads(lh, name, merged_once) == read_once
    assert all_reads(lh, name, versions) == merged_twice


@needs_jdk
def test_concurrent_writes_to_one_table_read_as_the_probe_reads(lh, spark, probe_only):
    """An upsert and a delete of one table started together, each on its own thread: the one that lands second
    runs again on the new head (commit_replay.py), so its tombstone is written over the version it lands on.
    Both changes are there, and every version reads the probe's rows."""
    name = "shop.orders"
    build(lh, spark, name)
    barrier = threading.Barrier(2)
    failures = []

    def run(write):
        try:
            barrier.wait(60)
            write()
        except Exception as exc:  # reported below: a thread's exception would not fail the test
            failures.append(exc)

    for round_index in range(3):
        first = 3000 + 10 * round_index
        threads = [threading.Thread(target=run, args=(lambda: lh.branch("main").upsert(
                       name, frame(spark, first, first + 10, shift=3).withColumn("part", F.col("id") % 3),
                       key=["id"]),)),
                   threading.Thread(target=run, args=(lambda: lh.branch("main").delete(
                       name, f"id between {10 * round_index} and {10 * round_index + 5}"),))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
    assert not failures
    ids = {r[0] for r in rows(lh.read(name).select("id", "qty", "label"))}
    assert set(range(3000, 3030)) <= ids and not ids & {i for r in range(3) for i in range(10 * r, 10 * r + 6)}
    versions = [c.id for c in lh.log("main")][:7]
    positional = all_reads(lh, name, versions)
    probe_only()
    assert all_reads(lh, name, versions) == positional


@needs_jdk
def test_what_a_tombstone_was_written_over_is_recorded(lh, spark):
    """A keyed write's tombstone names the segments and tombstones of the version it read; a keyless table's
    names none (its positions are its rows). A tombstone without the record (an older catalog's) keeps the probe
    for every segment older than it."""
    name = "shop.orders"
    build(lh, spark, name)
    store, state = lh.store, lh.snapshot("main").state(name)
    tombstones = sorted(store.tombstones(state.tombstones).values(), key=lambda t: t.seq)
    newest = tombstones[-1]
    assert newest.over_segments is not None and newest.over_segments <= set(state.segments)
    assert newest.over_tombstones == frozenset(t.id for t in tombstones[:-1])
    segments = list(store.segments(state.segments).values())
    assert reader.by_position(state, segments, tombstones) == {s.id for s in segments}
    unrecorded = [replace(t, over_segments=None, over_tombstones=None) if t is tombstones[1] else t
                  for t in tombstones]
    older = {s.id for s in segments if s.seq < tombstones[1].seq}
    assert reader.by_position(state, segments, unrecorded) == {s.id for s in segments} - older

