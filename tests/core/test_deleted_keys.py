"""Keyed tombstones applied in the scan (storage/deleted_keys.py): each row's key probed against the deleted
keys with the newest tombstone sequence of each, instead of a broadcast anti-join (issue 72). Every read gives
the rows the anti-join gives: plain reads, row ids, earlier versions, after compaction, after merges settled
by ours and theirs, on int and long keys, partitioned; keys of other shapes and too many keys fall back to the
join."""
import contextlib
import io

import pytest
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.storage import deleted_keys, reader
from sorted_rows import rows

from tests.core.test_deletion_vectors import needs_jdk


def plan_text(df) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain()
    return out.getvalue()


def filtered_by_keys(df) -> bool:
    return deleted_keys.FUNCTION in plan_text(df)


@pytest.fixture(autouse=True)
def keys_probed(monkeypatch):
    """Every keyed segment probes keys here: these tests check the probe. A segment every newer tombstone
    covers reads by position instead (reader.by_position), checked against the probe in test_keyed_positions.py."""
    monkeypatch.setattr(reader, "by_position", lambda table, segments, tombstones: set())


@pytest.fixture
def join_only(monkeypatch):
    """Reads built inside this context apply tombstones by the anti-join."""
    def use_join():
        monkeypatch.setenv("BRANCHSPARK_DELETION_VECTORS", "off")
    return use_join


def frame(spark, first, last, key_type="bigint", shift=0):
    return spark.range(first, last, numPartitions=2).select(
        F.col("id").cast(key_type).alias("id"), ((F.col("id") + shift) % 11).alias("qty"),
        F.concat(F.lit(f"v{shift}-"), F.col("id").cast("string")).alias("label"))


def build(lh, spark, name, key_type="bigint", partition_by=None):
    """A keyed table of several segments: updates and inserts by upsert, deletes, an update by predicate; the
    updates rewrite keys more than once, so older tombstones name keys newer rows hold again."""
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as(name, frame(spark, 0, 2000, key_type).withColumn("part", F.col("id") % 3),
                           primary_key=["id"], partition_by=partition_by)
    branch = lh.branch("main")
    branch.upsert(name, frame(spark, 1500, 2500, key_type, shift=1).withColumn("part", F.col("id") % 3), key=["id"])
    branch.delete(name, "id % 10 = 3")
    branch.upsert(name, frame(spark, 1700, 1800, key_type, shift=2).withColumn("part", F.col("id") % 3), key=["id"])
    branch.update(name, "id % 97 = 1", {"label": "'changed'"})
    branch.delete(name, "id between 1750 and 1760")


def expected(key_type="bigint"):
    table = {}
    for i in range(0, 2000):
        table[i] = (i % 11, f"v0-{i}")
    for i in range(1500, 2500):
        table[i] = ((i + 1) % 11, f"v1-{i}")
    for i in [k for k in table if k % 10 == 3]:
        del table[i]
    for i in range(1700, 1800):
        table[i] = ((i + 2) % 11, f"v2-{i}")
    for i in [k for k in table if k % 97 == 1]:
        table[i] = (table[i][0], "changed")
    for i in range(1750, 1761):
        table.pop(i, None)
    return sorted((i, qty, label, i % 3) for i, (qty, label) in table.items())


@needs_jdk
@pytest.mark.parametrize("key_type,partition_by", [("bigint", None), ("int", None), ("bigint", ["part"])],
                         ids=["bigint", "int", "partitioned"])
def test_keys_in_the_scan_read_what_the_join_reads(lh, spark, join_only, key_type, partition_by):
    name = "shop.orders"
    build(lh, spark, name, key_type, partition_by)
    table = lh.read(name)
    assert filtered_by_keys(table)
    plan = plan_text(table)
    assert "BroadcastHashJoin" not in plan and "LeftAnti" not in plan
    got = rows(table.select("id", "qty", "label", "part"))
    assert got == expected(key_type)
    with_ids = lh.snapshot("main").read(name, with_row_ids=True)
    assert filtered_by_keys(with_ids)
    ids = rows(with_ids.select("id", "_bs_file", "_bs_pos", "_bs_seq"))
    versions = [c.id for c in lh.log("main")][:4]
    earlier = [rows(lh.read(name, at=v).select("id", "qty", "label")) for v in versions]
    join_only()
    joined = lh.read(name)
    assert not filtered_by_keys(joined)
    assert rows(joined.select("id", "qty", "label", "part")) == got
    assert rows(lh.snapshot("main").read(name, with_row_ids=True).select("id", "_bs_file", "_bs_pos", "_bs_seq")) == ids
    assert [rows(lh.read(name, at=v).select("id", "qty", "label")) for v in versions] == earlier


@needs_jdk
def test_keys_after_compaction_and_merges_read_what_the_join_reads(lh, spark, join_only):
    """Compacted rows carry their own sequences; a merge brings the other side's tombstones, whose keys may name
    rows this side wrote; a conflict settled by theirs or ours writes its own."""
    name = "shop.orders"
    build(lh, spark, name)
    lh.branch("main").compact(name)
    lh.branch("main").upsert(name, frame(spark, 10, 30, shift=5).withColumn("part", F.col("id") % 3), key=["id"])
    lh.create_branch("dev")
    lh.create_branch("ops")
    lh.branch("dev").upsert(name, frame(spark, 20, 60, shift=6).withColumn("part", F.col("id") % 3), key=["id"])
    lh.branch("dev").delete(name, "id between 100 and 120")
    lh.branch("ops").upsert(name, frame(spark, 50, 70, shift=7).withColumn("part", F.col("id") % 3), key=["id"])
    lh.branch("main").upsert(name, frame(spark, 25, 28, shift=8).withColumn("part", F.col("id") % 3), key=["id"])
    lh.branch("main").delete(name, "id between 2400 and 2410")
    lh.merge("dev", "main", on_conflict="theirs")
    lh.merge("ops", "main", on_conflict="ours")
    lh.branch("main").upsert(name, frame(spark, 55, 58, shift=9).withColumn("part", F.col("id") % 3), key=["id"])
    table = lh.read(name)
    assert filtered_by_keys(table)
    got = rows(table.select("id", "qty", "label"))
    assert len({r[0] for r in got}) == len(got)  # one row per key
    versions = [c.id for c in lh.log("main")][:6]
    earlier = [rows(lh.read(name, at=v).select("id", "qty", "label")) for v in versions]
    join_only()
    assert rows(lh.read(name).select("id", "qty", "label")) == got
    assert [rows(lh.read(name, at=v).select("id", "qty", "label")) for v in versions] == earlier


@needs_jdk
def test_keys_of_other_shapes_and_too_many_keys_fall_back_to_the_join(lh, spark, monkeypatch):
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.by_name", frame(spark, 0, 300).withColumn("id", F.col("id").cast("string")),
                           primary_key=["id"])
        tx.create_table_as("shop.by_pair", frame(spark, 0, 300), primary_key=["id", "qty"])
        tx.create_table_as("shop.by_id", frame(spark, 0, 300), primary_key=["id"])
    for name in ("shop.by_name", "shop.by_pair", "shop.by_id"):
        lh.branch("main").delete(name, "label like '%7'")
    assert not filtered_by_keys(lh.read("shop.by_name"))
    assert not filtered_by_keys(lh.read("shop.by_pair"))
    assert filtered_by_keys(lh.read("shop.by_id"))
    monkeypatch.setattr(deleted_keys, "MAX_KEYS", 10)  # the delete removed 30 rows
    fallback = lh.read("shop.by_id")
    assert not filtered_by_keys(fallback)
    want = sorted(i for i in range(300) if i % 10 != 7)
    for name in ("shop.by_name", "shop.by_pair", "shop.by_id"):
        assert sorted(int(r[0]) for r in lh.read(name).select("id").collect()) == want


def feed(lh, name, start, end):
    from dbt.adapters.branchspark.core.changes import table_changes
    return table_changes(lh, name, start, end)


def feed_rows(frame):
    return rows(frame.select("id", "qty", "label", "_change_type"))


@needs_jdk
def test_the_feed_of_a_commit_needs_no_join_unless_it_deletes_a_row_again(lh, spark, join_only):
    """A commit's tombstones are checked on the driver against the earlier ones that could have deleted the same
    rows: with none in common (an upsert, a delete), the feed reads them with no anti-join; a merge where both
    sides deleted one row still gives that delete once."""
    name = "shop.orders"
    build(lh, spark, name)
    heads = [c.id for c in lh.log("main")]
    lh.create_branch("dev")
    lh.branch("dev").delete(name, "id between 200 and 210")
    lh.branch("main").delete(name, "id between 205 and 215")
    before_merge = lh.get_branch("main").head
    lh.merge("dev", "main")
    after_merge = lh.get_branch("main").head
    upsert = feed(lh, name, heads[3], heads[2])
    assert "Join" not in plan_text(upsert)
    got = [feed_rows(upsert), feed_rows(feed(lh, name, heads[-1], heads[0])),
           feed_rows(feed(lh, name, before_merge, after_merge))]
    assert [r[0] for r in got[2]] == [200, 201, 202, 204]  # what dev deleted that main had not (203 was gone)
    join_only()
    assert [feed_rows(feed(lh, name, heads[3], heads[2])), feed_rows(feed(lh, name, heads[-1], heads[0])),
            feed_rows(feed(lh, name, before_merge, after_merge))] == got


@needs_jdk
def test_the_key_table_and_its_filter_find_every_key_and_no_other(spark):
    """DeletedKeys.java directly: a filter in front of the key table answers most probes; every deleted key
    (the extremes of a long among them, and Long.MIN_VALUE, which is also the table's empty mark) still finds
    its newest sequence, and keys next to them, or whose filter bits collide, find none."""
    if not hasattr(spark, "_jvm"):
        pytest.skip("reaches the JVM's classes directly: not through Spark Connect")
    import random
    import struct
    chooser = random.Random(72)
    extremes = [-(2 ** 63), 2 ** 63 - 1, 0, -1, 1]
    keys = sorted(set(extremes + [chooser.randrange(-(2 ** 63), 2 ** 63) for _ in range(3000)]
                      + list(range(10_000, 12_000, 3))))
    newest = {key: chooser.randrange(1, 10 ** 9) for key in keys}
    encoded = (struct.pack(">i", len(keys)) + b"".join(struct.pack(">q", k) for k in keys)
               + b"".join(struct.pack(">q", newest[k]) for k in keys))
    table = spark._jvm.branchspark.DeletedKeys(bytearray(encoded))
    none = spark._jvm.branchspark.DeletedKeys.NONE
    probes = (extremes + chooser.sample(keys, 200) + list(range(9_990, 10_300))
              + [k + 1 for k in chooser.sample(keys, 200)])
    probes += [-(2 ** 63) + 1, 2 ** 63 - 2]
    for key in probes:
        assert table.newestTombstone(key) == newest.get(key, none), key
    assert spark._jvm.branchspark.DeletedKeys(bytearray(struct.pack(">i", 0))).newestTombstone(-(2 ** 63)) == none


@needs_jdk
def test_a_versions_keys_are_sent_once_and_a_new_delete_sends_new_ones(lh, spark):
    """Reads of one version reuse its keys' literal (megabytes sent to the JVM once per session, not per read);
    a delete makes a new version whose reads carry its own keys and leave its rows out; an older version's
    reads still give its rows."""
    name = "shop.orders"
    build(lh, spark, name)
    held = deleted_keys._literals[spark]
    held.clear()  # the build's own reads, and earlier tests', sent theirs
    first, again = lh.read(name), lh.read(name)
    assert filtered_by_keys(first) and filtered_by_keys(again)
    assert len(held) == 1
    (keys, literal), = held.items()
    before = lh.log("main")[0].id
    lh.branch("main").delete(name, "id in (0, 1, 2400)")
    after = lh.read(name)
    assert filtered_by_keys(after) and len(held) == 2 and held[keys] is literal
    assert rows(after.select("id", "qty", "label", "part")) == [r for r in expected() if r[0] not in (0, 1, 2400)]
    assert rows(lh.read(name, at=before).select("id", "qty", "label", "part")) == expected()
    assert rows(again.select("id", "qty", "label", "part")) == expected()
