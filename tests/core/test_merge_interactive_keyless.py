"""Paused merges of keyless tables (SPEC 3.3 A1/A3, 3.6): the conflict relation of contested segments,
resolved with SQL (also routed UPDATE statements), in bulk, by a driver and by a forced conflict;
continue, abort; drivers on a plain merge; a paused destination takes no other change."""
from __future__ import annotations

import re

import pytest
from sorted_rows import rows
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.merge.drivers import side_sql, sql_driver
from dbt.adapters.branchspark.core.storage.reader import ROW_FILE, ROW_POS

SCHEMA = "id bigint, a bigint, b string"
TABLE = "shop.t"
VIEW = "bs_conflicts_dest_shop_t"
SHOWN = ("base_id", "base_a", "our_a", "their_a", "merged_a", "base_b", "our_b", "their_b", "merged_b",
         "our_diff_type", "their_diff_type", "our_row_exists", "their_row_exists", "merged_deleted", "conflict",
         "rule")


@pytest.fixture
def keyless(lh, spark):
    """main: shop.t(id, a, b) without a key, rows 1-4 in one segment; branches src and dest."""
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as(TABLE, spark.createDataFrame([(i, i * 10, "x") for i in range(1, 5)], SCHEMA))
    lh.create_branch("src")
    lh.create_branch("dest")
    return TABLE


@pytest.fixture
def a3(lh, keyless):
    """A3: both sides update rows of the one segment. src: row 1 twice (a, then b), row 2; dest: rows 2 and 4."""
    src, dest = lh.branch("src"), lh.branch("dest")
    src.update(keyless, "id = 1", {"a": "100"})
    src.update(keyless, "id = 1", {"b": "'s'"})  # an update of src's own update image
    src.update(keyless, "id = 2", {"a": "21"})
    dest.update(keyless, "id = 2", {"a": "22"})
    dest.update(keyless, "id = 4", {"b": "'d'"})
    return keyless


@pytest.fixture
def a1(lh, keyless):
    """A1: src updates rows 1 and 2 and deletes 4; dest deletes rows 2, 3 and 4 of the same segment."""
    src, dest = lh.branch("src"), lh.branch("dest")
    src.update(keyless, "id in (1, 2)", {"a": "a + 1"})
    src.delete(keyless, "id = 4")
    dest.delete(keyless, "id in (2, 3, 4)")
    return keyless


def relation(spark, where: str = "true"):
    return rows(spark.sql(f"select * from {VIEW} where {where}"), *SHOWN)


def identities(lh, branch: str) -> dict[int, tuple]:
    """id -> (data file, position) of each live row of shop.t on `branch`."""
    read = lh.snapshot(branch).read(TABLE, with_row_ids=True)
    return {r["id"]: (r[ROW_FILE], r[ROW_POS]) for r in read.select("id", ROW_FILE, ROW_POS).collect()}


def table_files(lh) -> list[str]:
    return sorted(p for p, _ in lh.warehouse.list_files("tables"))


def test_a3_relation_rows_then_sql_and_routed_update_then_continue(lh, a3, spark):
    from dbt.adapters.branchspark.core.sql.branch_session import BranchSession
    from dbt.adapters.branchspark.core.sql.router import StatementRouter

    before = lh.store.get_branch("dest").head
    src_ids, dest_ids = identities(lh, "src"), identities(lh, "dest")
    paused = lh.merge("src", "dest", on_conflict="pause")
    assert (paused.status, paused.phase) == ("paused", "resolving data")
    assert {(c.src_op, c.dest_op, c.rule) for c in paused.conflicts} == {("update", "update", "A3")}
    assert lh.store.get_branch("dest").head == before
    assert lh.conflict_views("dest")[TABLE] == VIEW
    # One row per base row either side changed in the contested segment; each is a conflict (A3 is per segment),
    # proposing the values of the side that changed it, and null where both changed a column differently.
    assert relation(spark) == [
        (1, 10, 10, 100, 100, "x", "x", "s", "s", None, "modified", True, True, False, True, "A3"),
        (2, 20, 22, 21, None, "x", "x", "x", "x", "modified", "modified", True, True, False, True, "A3"),
        (4, 40, 40, 40, 40, "x", "d", "x", "d", "modified", None, True, True, False, True, "A3"),
    ]
    segment = spark.sql(f"select distinct row_segment from {VIEW}").collect()
    assert len(segment) == 1 and paused.conflicts[0].involved == f"segments {segment[0][0]} (3 rows)"
    status = [t for t in lh.merge_status("dest")["tables"] if t["kind"] == "data"]
    assert [(t["table"], t["open conflicts"], t["rows"]) for t in status] == [(TABLE, 3, 3)]
    with pytest.raises(errors.MergeConflict, match="still has 1 open data conflict"):
        lh.merge(None, "dest", continue_=True)

    # dbt's UPDATE of the conflict view, routed as branch-table DML is, resolves row 2 ...
    router = StatementRouter(spark, BranchSession(spark, lh, "dest"), write=None)
    router.execute(f"update {VIEW} set merged_a = our_a + their_a where base_id = 2")
    assert relation(spark, "base_id = 2")[0][4::10] == (43, False)
    # ... and the proposals of rows 1 and 4 are accepted as they are.
    lh.resolve_conflicts("dest", TABLE, where="conflict and base_id in (1, 4)", set={"conflict": "false"})
    done = lh.merge(None, "dest", continue_=True)
    assert done.status == "merged"
    assert rows(lh.read(a3, "dest")) == [(1, 100, "s"), (2, 43, "x"), (3, 30, "x"), (4, 40, "d")]
    [commit] = lh.log("dest", limit=1)
    assert commit.parents == (before, lh.store.get_branch("src").head)
    # Rows whose merged values one side already held keep that row (and its identity); row 2 is new.
    merged_ids = identities(lh, "dest")
    assert (merged_ids[1], merged_ids[3], merged_ids[4]) == (src_ids[1], dest_ids[3], dest_ids[4])
    assert merged_ids[2] not in (src_ids[2], dest_ids[2])
    assert lh.merge_status("dest")["phase"] == "finished" and not lh.warehouse.list_files("merges")


def test_a_later_merge_pairs_the_row_a_resolution_rewrote(lh, a3, spark):
    lh.merge("src", "dest", on_conflict="pause")
    lh.resolve_conflicts("dest", TABLE, where="base_id = 2", set={"merged_a": "0"})
    lh.resolve_conflicts("dest", TABLE, where="conflict", set={"conflict": "false"})
    lh.merge(None, "dest", continue_=True)
    # src changes its row 2 again: dest's merge replaced that very row, so this is A3 on it, not a new row.
    lh.branch("src").update(TABLE, "id = 2", {"a": "25"})
    with pytest.raises(errors.MergeConflict) as raised:
        lh.merge("src", "dest")
    assert [c.rule for c in raised.value.report.conflicts] == ["A3"]
    lh.merge("src", "dest", on_conflict="pause")
    lh.conflict_views("dest")
    assert rows(spark.sql(f"select base_a, our_a, their_a, our_diff_type, their_diff_type from {VIEW}")) == [
        (21, 0, 25, "modified", "modified")]
    lh.resolve_conflicts("dest", TABLE, take="theirs")
    lh.merge(None, "dest", continue_=True)
    assert rows(lh.read(TABLE, "dest")) == [(1, 100, "s"), (2, 25, "x"), (3, 30, "x"), (4, 40, "d")]


def test_a1_relation_rows(lh, a1, spark):
    paused = lh.merge("src", "dest", on_conflict="pause")
    assert {(c.src_op, c.dest_op, c.rule) for c in paused.conflicts} == {("update", "delete", "A1")}
    lh.conflict_views("dest")
    assert relation(spark) == [
        # src updated it, dest left it: src's row is proposed.
        (1, 10, 10, 11, 11, "x", "x", "x", "x", None, "modified", True, True, False, True, "A1"),
        # src updated it, dest deleted it: undecided.
        (2, 20, None, 21, None, "x", None, "x", None, "removed", "modified", False, True, None, True, "A1"),
        # dest deleted it, src left it: the deletion is proposed.
        (3, 30, None, 30, None, "x", None, "x", None, "removed", None, False, True, True, True, "A1"),
        # both deleted it (A2): no conflict.
        (4, 40, None, None, None, "x", None, None, None, "removed", "removed", False, False, True, False, None),
    ]


@pytest.mark.parametrize("take, expected", [
    ("ours", [(1, 10, "x")]),
    ("theirs", [(1, 11, "x"), (2, 21, "x"), (3, 30, "x")]),
])
def test_bulk_resolution_takes_one_side_of_every_open_row(lh, a1, spark, take, expected):
    lh.branch("src").insert(TABLE, spark.createDataFrame([(9, 90, "s")], SCHEMA))  # merges by the rules
    lh.merge("src", "dest", on_conflict="pause")
    status = lh.resolve_conflicts("dest", TABLE, take=take)
    assert [t["open conflicts"] for t in status["tables"] if t["kind"] == "data"] == [0]
    lh.merge(None, "dest", continue_=True)
    assert rows(lh.read(TABLE, "dest")) == sorted(expected + [(9, 90, "s")])


def test_forced_conflict_on_a_row_the_rules_merge(lh, a1, spark):
    lh.merge("src", "dest", on_conflict="pause")
    lh.resolve_conflicts("dest", TABLE, where="base_id = 2", set={"merged_deleted": "true"})
    lh.resolve_conflicts("dest", TABLE, where="conflict", set={"conflict": "false"})
    # Row 4, deleted on both sides, merges by A2: mark it a conflict anyway.
    status = lh.resolve_conflicts("dest", TABLE, where="base_id = 4", set={"conflict": "true"})
    assert [t["open conflicts"] for t in status["tables"] if t["kind"] == "data"] == [1]
    with pytest.raises(errors.MergeConflict) as raised:
        lh.merge(None, "dest", continue_=True)
    assert [c.rule for c in raised.value.report.conflicts] == ["marked"]
    lh.resolve_conflicts("dest", TABLE, where="base_id = 4", set={
        "merged_id": "base_id", "merged_a": "base_a", "merged_b": "'back'", "merged_deleted": "false"})
    lh.merge(None, "dest", continue_=True)
    assert rows(lh.read(TABLE, "dest")) == [(1, 11, "x"), (4, 40, "back")]


def test_abort_leaves_dest_byte_identical(lh, a3):
    head, files = lh.store.get_branch("dest").head, table_files(lh)
    lh.merge("src", "dest", on_conflict="pause")
    lh.resolve_conflicts("dest", TABLE, where="base_id = 2", set={"merged_a": "0"})
    assert lh.abort_merge("dest")["phase"] == "not started"
    assert lh.store.get_branch("dest").head == head
    assert table_files(lh) == files
    assert not lh.warehouse.list_files("merges")


def add_the_changes(base, ours, theirs):
    """Both sides' changes of `a` added up; `b` from whichever side changed it."""
    return {"a": ours["a"] + theirs["a"] - base["a"],
            "b": F.when(ours["b"] != base["b"], ours["b"]).otherwise(theirs["b"])}


def test_driver_settles_contested_rows_on_a_plain_merge(lh, a3):
    result = lh.merge("src", "dest", drivers={TABLE: add_the_changes})
    assert result.status == "merged" and not result.conflicts
    # Row 2, changed on both sides, is the driver's; rows 1 and 4 take the side that changed them.
    assert rows(lh.read(a3, "dest")) == [(1, 100, "s"), (2, 23, "x"), (3, 30, "x"), (4, 40, "d")]
    assert len(lh.log("dest", limit=1)[0].parents) == 2


def test_driver_leaves_what_it_does_not_decide_to_the_rules(lh, a1):
    # A1: row 2 updated on src and deleted on dest; a driver of column `a` only leaves it a conflict.
    with pytest.raises(errors.MergeConflict) as raised:
        lh.merge("src", "dest", drivers={TABLE: lambda base, ours, theirs: {"a": theirs["a"]}})
    assert [(c.rule, c.involved.endswith("(1 rows)")) for c in raised.value.report.conflicts] == [("A1", True)]
    # Its conflict marker makes rows conflicts of its own.
    with pytest.raises(errors.MergeConflict) as raised:
        lh.merge("src", "dest", drivers={TABLE: lambda base, ours, theirs: {
            "id": theirs["id"], "a": theirs["a"], "b": theirs["b"], "_conflict": ours["id"].isNull()}})
    assert {c.rule for c in raised.value.report.conflicts} == {"driver"}


def test_sql_driver_in_a_paused_merge_keeps_its_values_in_the_relation(lh, a3, spark):
    from dbt.adapters.branchspark.adapter.merge_operations import driver_sides

    sides = driver_sides(lh, "dest", TABLE)  # what a dbt driver macro receives: every column of a keyless table
    assert sides["ours"] == side_sql("ours", ["id", "a", "b"])
    driver = sql_driver({"a": f"greatest({sides['ours']['a']}, {sides['theirs']['a']})"})
    paused = lh.merge("src", "dest", strategy="interactive", drivers={TABLE: driver})
    assert paused.phase == "inspecting schema"
    assert lh.merge(None, "dest", continue_=True, drivers={TABLE: driver}).phase == "inspecting data"
    lh.conflict_views("dest")
    assert rows(spark.sql(f"select base_id, merged_a, conflict, rule from {VIEW}")) == [
        (1, 100, False, None), (2, 22, False, None), (4, 40, False, None)]
    assert lh.merge(None, "dest", continue_=True, drivers={TABLE: driver}).status == "merged"
    assert rows(lh.read(a3, "dest")) == [(1, 100, "s"), (2, 22, "x"), (3, 30, "x"), (4, 40, "d")]


def test_a_paused_destination_takes_no_other_change(lh, a3, spark):
    lh.merge("src", "dest", on_conflict="pause")
    lh.create_branch("other", "main")
    lh.branch("other").insert(TABLE, spark.createDataFrame([(7, 70, "o")], SCHEMA))
    head, files = lh.store.get_branch("dest").head, table_files(lh)
    refused = (re.escape("a merge of 'src' into 'dest' is paused (resolving data): continue it") + ".*"
               + re.escape("or abort it (abort_merge dest) first; nothing was written to 'dest'"))
    for attempt in (lambda: lh.merge("other", "dest"),
                    lambda: lh.merge("other", "dest", dry_run=True),
                    lambda: lh.merge("other", "dest", strategy="fast_forward"),
                    lambda: lh.branch("dest").insert(TABLE, spark.createDataFrame([(8, 80, "d")], SCHEMA)),
                    lambda: lh.restore_branch("dest", "main")):
        with pytest.raises(errors.MergeInProgress, match=refused) as raised:
            attempt()
        assert "\n" not in str(raised.value)
    assert lh.store.get_branch("dest").head == head and table_files(lh) == files
    assert lh.merge_status("dest")["phase"] == "resolving data"
    # The paused merge itself still finishes; then dest takes changes again.
    lh.resolve_conflicts("dest", take="theirs")
    assert lh.merge(None, "dest", continue_=True).status == "merged"
    assert lh.merge("other", "dest").status == "merged"
    assert (7, 70, "o") in rows(lh.read(TABLE, "dest"))
