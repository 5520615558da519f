"""Paused merges (SPEC 3.6): phases, conflict relations resolved with SQL, in bulk and by drivers,
forced conflicts, abort, and a paused merge picked up by a fresh process."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from sorted_rows import rows
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.merge.drivers import CONFLICT

SCHEMA = "id bigint, a bigint, b string"


@pytest.fixture
def keyed(lh, spark):
    """main: shop.k(id, a, b) keyed on id, rows 1-4; src and dest both change ids 1 and 2."""
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.k", spark.createDataFrame([(i, i * 10, "x") for i in range(1, 5)], SCHEMA),
                           primary_key=["id"])
    lh.create_branch("src")
    lh.create_branch("dest")
    lh.branch("src").update("shop.k", "id = 1", {"a": "100"})      # clash with dest on id 1, column a
    lh.branch("src").update("shop.k", "id = 2", {"b": "'s'"})      # merges with dest's change of a
    lh.branch("src").insert("shop.k", spark.createDataFrame([(5, 50, "s")], SCHEMA))
    lh.branch("dest").update("shop.k", "id = 1", {"a": "200"})
    lh.branch("dest").update("shop.k", "id = 2", {"a": "22"})
    return "shop.k"


def table_files(lh) -> list[str]:
    return sorted(p for p, _ in lh.warehouse.list_files("tables"))


def test_pause_then_sql_resolution_then_continue_writes_the_merge_commit(lh, keyed, spark):
    before = lh.store.get_branch("dest").head
    assert lh.merge_status("dest")["phase"] == "not started"
    paused = lh.merge("src", "dest", on_conflict="pause")
    assert (paused.status, paused.phase) == ("paused", "resolving data")
    assert lh.store.get_branch("dest").head == before
    status = lh.merge_status("dest")
    [table] = [t for t in status["tables"] if t["kind"] == "data"]
    assert (table["table"], table["open conflicts"], table["rows"]) == ("shop.k", 1, 3)
    views = lh.conflict_views("dest")
    view = views["shop.k"]
    assert view == "bs_conflicts_dest_shop_k"
    [clash] = spark.sql(f"select * from {view} where conflict").collect()
    assert (clash.id, clash.base_a, clash.our_a, clash.their_a, clash.merged_a) == (1, 10, 200, 100, None)
    assert (clash.our_diff_type, clash.their_diff_type, clash.rule) == ("modified", "modified", "3.4 cells")
    merged_2 = spark.sql(f"select merged_a, merged_b, conflict from {view} where id = 2").first()
    assert tuple(merged_2) == (22, "s", False)
    with pytest.raises(errors.MergeConflict, match="still has 1 open data conflict"):
        lh.merge(None, "dest", continue_=True)
    lh.resolve_conflicts("dest", "shop.k", where="id = 1", set={"merged_a": "our_a + their_a"})
    assert lh.merge_status("dest")["tables"][0]["open conflicts"] == 0
    done = lh.merge(None, "dest", continue_=True)
    assert done.status == "merged"
    assert rows(lh.read(keyed, "dest")) == [(1, 300, "x"), (2, 22, "s"), (3, 30, "x"), (4, 40, "x"), (5, 50, "s")]
    [commit] = lh.log("dest", limit=1)
    assert commit.parents == (before, lh.store.get_branch("src").head)
    assert lh.merge_status("dest")["phase"] == "finished"
    assert not lh.warehouse.exists(f"merges")  or not lh.warehouse.list_files("merges")


def test_abort_leaves_dest_byte_identical(lh, keyed):
    head, files = lh.store.get_branch("dest").head, table_files(lh)
    lh.merge("src", "dest", on_conflict="pause")
    lh.resolve_conflicts("dest", "shop.k", take="theirs")
    assert lh.merge_status("dest")["phase"] == "resolving data"
    assert lh.abort_merge("dest")["phase"] == "not started"
    assert lh.store.get_branch("dest").head == head
    assert table_files(lh) == files
    assert not lh.warehouse.list_files("merges")
    with pytest.raises(errors.InvalidArgument, match="no merge into 'dest' is paused"):
        lh.abort_merge("dest")


@pytest.mark.parametrize("take, expected_a", [("ours", 200), ("theirs", 100)])
def test_bulk_resolution_takes_one_side(lh, keyed, take, expected_a):
    lh.merge("src", "dest", on_conflict="pause")
    lh.resolve_conflicts("dest", "shop.k", take=take)
    lh.merge(None, "dest", continue_=True)
    assert rows(lh.read(keyed, "dest"), "id", "a") == [(1, expected_a), (2, 22), (3, 30), (4, 40), (5, 50)]


def test_forced_conflict_needs_manual_resolution(lh, keyed, spark):
    lh.merge("src", "dest", on_conflict="pause")
    lh.resolve_conflicts("dest", "shop.k", where="id = 1", set={"merged_a": "1"})
    # id 5 (only src inserted it) would merge by the rules: mark it a conflict.
    lh.resolve_conflicts("dest", "shop.k", where="id = 5", set={"merged_b": "CONFLICT()"})
    assert lh.merge_status("dest")["tables"][0]["open conflicts"] == 1
    with pytest.raises(errors.MergeConflict) as raised:
        lh.merge(None, "dest", continue_=True)
    assert [c.rule for c in raised.value.report.conflicts] == ["marked"]
    lh.resolve_conflicts("dest", "shop.k", where="id = 5", set={"merged_deleted": "true"})
    lh.merge(None, "dest", continue_=True)
    assert rows(lh.read(keyed, "dest"), "id", "a") == [(1, 1), (2, 22), (3, 30), (4, 40)]


def test_interactive_pauses_at_every_phase_even_without_conflicts(lh, spark):
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.k", spark.createDataFrame([(1, 10, "x"), (2, 20, "x")], SCHEMA),
                           primary_key=["id"])
    lh.create_branch("src")
    lh.branch("src").update("shop.k", "id = 1", {"a": "11"})
    lh.branch("src").add_column("shop.k", "c", "string")
    lh.branch("main").update("shop.k", "id = 2", {"a": "22"})
    head = lh.store.get_branch("main").head
    phases = [lh.merge("src", "main", strategy="interactive").phase]
    assert lh.merge_status("main")["phase"] == "inspecting schema"
    [row] = spark.sql(f"select * from {lh.conflict_views('main')['schema']}").collect()
    assert (row.table_name, row.conflict) == ("shop.k", False)
    assert row.merged_schema == "id bigint, a bigint, b string, c string"
    phases.append(lh.merge(None, "main", continue_=True).phase)
    view = lh.conflict_views("main")["shop.k"]
    assert rows(spark.sql(f"select id, merged_a, conflict from {view}")) == [(1, 11, False)]
    # Mark the only changed row: continuing moves to resolving, then a resolution finishes.
    lh.resolve_conflicts("main", "shop.k", where="id = 1", set={"conflict": "true"})
    phases.append(lh.merge(None, "main", continue_=True).phase)
    assert lh.store.get_branch("main").head == head
    lh.resolve_conflicts("main", "shop.k", where="id = 1", set={"merged_a": "their_a * 10"})
    result = lh.merge(None, "main", continue_=True)
    phases.append(lh.merge_status("main")["phase"])
    assert phases == ["inspecting schema", "inspecting data", "resolving data", "finished"]
    assert result.status == "merged"
    assert rows(lh.read("shop.k", "main"), "id", "a") == [(1, 110), (2, 22)]


def test_schema_conflict_pauses_and_is_resolved_in_the_schema_relation(lh, spark):
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.k", spark.createDataFrame([(1, 10, "x")], SCHEMA), primary_key=["id"])
    lh.create_branch("src")
    lh.branch("src").add_column("shop.k", "c", "string")
    lh.branch("main").add_column("shop.k", "c", "bigint")
    paused = lh.merge("src", "main", on_conflict="pause")
    assert paused.phase == "resolving schema"
    view = lh.conflict_views("main")["schema"]
    [row] = spark.sql(f"select * from {view}").collect()
    assert (row.conflict, row.merged_schema) == (True, None)
    with pytest.raises(errors.MergeConflict, match="open schema conflict"):
        lh.merge(None, "main", continue_=True)
    lh.resolve_conflicts("main", "schema", where="table_name = 'shop.k'", set={"merged_schema": "our_schema"})
    assert lh.merge(None, "main", continue_=True).status == "merged"
    assert dict(lh.read("shop.k", "main").dtypes)["c"] == "bigint"


def test_driver_merges_every_key_both_sides_changed(lh, keyed):
    def add_the_changes(base, ours, theirs):
        return {"a": ours["a"] + theirs["a"] - base["a"],
                CONFLICT: ours["b"].isNotNull() & (ours["b"] == F.lit("never"))}

    lh.merge("src", "dest", drivers={"shop.k": add_the_changes})
    assert rows(lh.read(keyed, "dest"), "id", "a", "b") == [(1, 290, "x"), (2, 22, "s"), (3, 30, "x"),
                                                            (4, 40, "x"), (5, 50, "s")]


def test_driver_conflict_marker_stops_the_merge(lh, keyed):
    def refuse_dest_updates(base, ours, theirs):
        return {CONFLICT: ours["a"] != base["a"]}

    with pytest.raises(errors.MergeConflict) as raised:
        lh.merge("src", "dest", drivers={"shop.k": refuse_dest_updates})
    assert {c.rule for c in raised.value.report.conflicts} == {"driver"}


def test_sql_driver_in_a_paused_merge(lh, keyed, spark):
    from dbt.adapters.branchspark.core.merge.drivers import side_sql, sql_driver

    ours, theirs = side_sql("ours", ["a", "b"]), side_sql("theirs", ["a", "b"])
    driver = sql_driver({"a": f"greatest({ours['a']}, {theirs['a']})"})
    lh.merge("src", "dest", on_conflict="pause", drivers={"shop.k": driver})
    assert lh.merge_status("dest")["phase"] == "finished"
    assert rows(lh.read(keyed, "dest"), "id", "a") == [(1, 200), (2, 22), (3, 30), (4, 40), (5, 50)]


def test_paused_merge_survives_a_process_restart(lh, keyed, warehouse):
    lh.merge("src", "dest", on_conflict="pause")
    lh.store.dispose()
    script = textwrap.dedent(f"""
        from dbt.adapters.branchspark.core.lakehouse import Lakehouse
        import os
        from dbt.adapters.branchspark.core.spark_session import connect_session, local_session
        # the Spark Connect server tests/run.sh starts, where there is one: a new process, no JVM start
        url = os.environ.get("BRANCHSPARK_TEST_CONNECT_URL")
        lh = Lakehouse(connect_session(url) if url else local_session("local[1]"), {warehouse!r})
        assert lh.merge_status("dest")["phase"] == "resolving data"
        lh.resolve_conflicts("dest", "shop.k", where="id = 1", set={{"merged_a": "7"}})
        print(lh.merge(None, "dest", continue_=True).status)
    """)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "merged"
    assert rows(lh.read(keyed, "dest"), "id", "a") == [(1, 7), (2, 22), (3, 30), (4, 40), (5, 50)]


def test_a_paused_merge_blocks_another_and_pins_its_commits(lh, keyed):
    lh.merge("src", "dest", on_conflict="pause")
    with pytest.raises(errors.InvalidArgument, match="is paused"):
        lh.merge("src", "dest", strategy="interactive")
    src_head = lh.store.get_branch("src").head
    assert src_head in lh.store.pinned_commits()
    lh.drop_branch("src", force=True)  # its commits are reached only by the paused merge
    lh.gc(grace_seconds=0)
    lh.resolve_conflicts("dest", take="theirs")
    assert lh.merge(None, "dest", continue_=True).status == "merged"
    assert rows(lh.read(keyed, "dest"), "id", "a") == [(1, 100), (2, 22), (3, 30), (4, 40), (5, 50)]


def test_interactive_schema_conflict_then_data_inspection_then_finish(lh, spark):
    """inspecting schema -> resolving schema -> inspecting data -> finished, and take in bulk."""
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.k", spark.createDataFrame([(1, 10, "x"), (2, 20, "x")], SCHEMA),
                           primary_key=["id"])
    lh.create_branch("src")
    lh.branch("src").add_column("shop.k", "c", "string")
    lh.branch("src").update("shop.k", "id = 1", {"a": "11"})
    lh.branch("main").add_column("shop.k", "c", "bigint")
    lh.branch("main").update("shop.k", "id = 2", {"a": "22"})
    phases = [lh.merge("src", "main", strategy="interactive").phase]
    phases.append(lh.merge(None, "main", continue_=True).phase)
    lh.resolve_conflicts("main", take="theirs")
    phases.append(lh.merge(None, "main", continue_=True).phase)
    status = lh.merge_status("main")
    assert [(t["table"], t["kind"], t["open conflicts"]) for t in status["tables"]] == [
        ("shop.k", "schema", 0), ("shop.k", "data", 0)]
    result = lh.merge(None, "main", continue_=True)
    phases.append(lh.merge_status("main")["phase"])
    assert phases == ["inspecting schema", "resolving schema", "inspecting data", "finished"]
    assert result.status == "merged" and dict(lh.read("shop.k", "main").dtypes)["c"] == "string"
    assert rows(lh.read("shop.k", "main"), "id", "a") == [(1, 11), (2, 22)]
