"""Merge rules beyond the matrix cells: A1-A6, primary-key tables (3.4), schema history (3.5),
new objects (3.1), on_conflict, strategies, dry runs and protected branches."""
from __future__ import annotations

import time

import pytest
from sorted_rows import rows

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.changes import table_changes

SCHEMA = "id bigint, a bigint, b string"


@pytest.fixture
def keyless(lh, spark):
    """main: shop.t(id, a, b) without a key, rows 1-4 in one segment; branches src and dest."""
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.t", spark.createDataFrame([(i, i * 10, "x") for i in range(1, 5)], SCHEMA))
    lh.create_branch("src")
    lh.create_branch("dest")
    return "shop.t"


@pytest.fixture
def keyed(lh, spark):
    """main: shop.k(id, a, b) with primary key id, rows 1-4; branches src and dest."""
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.k", spark.createDataFrame([(i, i * 10, "x") for i in range(1, 5)], SCHEMA),
                           primary_key=["id"])
    lh.create_branch("src")
    lh.create_branch("dest")
    return "shop.k"


def df(spark, *data):
    return spark.createDataFrame(list(data), SCHEMA)


def conflicts_of(lh, src="src", dest="dest", **options):
    head = lh.store.get_branch(dest).head
    with pytest.raises(errors.MergeConflict) as raised:
        lh.merge(src, dest, **options)
    assert lh.store.get_branch(dest).head == head, "a failed merge must change nothing"
    return raised.value.report.conflicts


# ------------------------------------------------------------ keyless rules
@pytest.mark.rule("A1")
def test_a1_update_against_delete_in_the_same_segment_conflicts(lh, keyless):
    lh.branch("src").update(keyless, "id = 1", {"a": "0"})
    lh.branch("dest").delete(keyless, "id = 2")
    [conflict] = conflicts_of(lh)
    assert (conflict.src_op, conflict.dest_op, conflict.rule) == ("update", "delete", "A1")
    assert conflict.involved.startswith("segments s")


@pytest.mark.rule("A1")
def test_a1_is_one_way_delete_on_src_against_update_on_dest_in_the_same_segment_merges(lh, keyless):
    """SPEC 3.3's delete x update cell is ok: A1 holds for an update on src against a delete on dest only."""
    lh.branch("src").delete(keyless, "id = 2")
    lh.branch("dest").update(keyless, "id = 1", {"a": "0"})
    lh.merge("src", "dest")
    assert rows(lh.read(keyless, "dest"), "id", "a") == [(1, 0), (3, 30), (4, 40)]


@pytest.mark.rule("A2")
def test_a2_deletes_on_both_sides_never_conflict_and_delete_once(lh, keyless):
    lh.branch("src").delete(keyless, "id in (1, 2)")
    lh.branch("dest").delete(keyless, "id in (2, 3)")
    lh.merge("src", "dest")
    assert rows(lh.read(keyless, "dest"), "id") == [(4,)]
    # The merge tombstone holds only the row dest had not deleted yet.
    [commit] = lh.log("dest", limit=1)
    [delete] = [o for o in commit.operations if o.op == "delete"]
    added = lh.store.tombstones(delete.detail["tombstones_added"])
    assert sum(t.row_count for t in added.values()) == 1


@pytest.mark.rule("A3")
def test_a3_updates_on_both_sides_in_the_same_segment_conflict(lh, keyless):
    lh.branch("src").update(keyless, "id = 1", {"a": "0"})
    lh.branch("dest").update(keyless, "id = 4", {"a": "0"})
    [conflict] = conflicts_of(lh)
    assert conflict.rule == "A3"


@pytest.mark.rule("A3")
def test_a3_updates_in_different_segments_merge(lh, keyless, spark):
    lh.branch("src").insert(keyless, df(spark, (5, 50, "s")))
    lh.branch("src").update(keyless, "id = 5", {"a": "55"})
    lh.branch("dest").update(keyless, "id = 4", {"a": "44"})
    lh.merge("src", "dest")
    assert rows(lh.read(keyless, "dest"), "id", "a") == [(1, 10), (2, 20), (3, 30), (4, 44), (5, 55)]


@pytest.mark.rule("A4", "A5")
def test_a4_a5_src_changes_to_its_own_rows_survive_a_dest_overwrite(lh, keyless, spark):
    src = lh.branch("src")
    src.insert(keyless, df(spark, (11, 110, "s"), (12, 120, "s"), (13, 130, "s")))
    src.update(keyless, "id in (2, 11)", {"a": "a + 1"})  # row 2 is older: dropped (A4)
    src.update(keyless, "id = 11", {"a": "a + 1"})  # an update of an update of src's own row
    src.update(keyless, "id = 3", {"a": "a + 1"})
    src.update(keyless, "id = 3", {"a": "a + 1"})  # a chain of updates of an older row: dropped
    src.delete(keyless, "id in (1, 12)")  # row 1 is older: nothing to do (A5); 12 is src's own
    lh.branch("dest").overwrite(keyless, df(spark, (21, 210, "d")))
    lh.merge("src", "dest")
    assert rows(lh.read(keyless, "dest"), "id", "a") == [(11, 112), (13, 130), (21, 210)]


@pytest.mark.rule("A6.1")
def test_a6_1_incompatible_type_changes_conflict(lh, spark):
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.w", spark.createDataFrame([(1, 1, 1.5)], "id bigint, n int, f float"))
    lh.create_branch("src")
    lh.create_branch("dest")
    lh.branch("src").alter_column_type("shop.w", "n", "bigint")
    lh.branch("dest").alter_column_type("shop.w", "n", "double")
    [conflict] = conflicts_of(lh)
    assert (conflict.object_name, conflict.rule) == ("shop.w.n", "A6.1")
    # Compatible changes merge to the wider type.
    lh.create_branch("src2", "main")
    lh.create_branch("dest2", "main")
    lh.branch("src2").alter_column_type("shop.w", "f", "double")
    lh.branch("dest2").alter_column_type("shop.w", "n", "bigint")
    lh.branch("src2").alter_column_type("shop.w", "n", "bigint")
    lh.merge("src2", "dest2")
    types = {c.name: c.type for c in lh.snapshot("dest2").table("shop.w").columns}
    assert types == {"id": "bigint", "n": "bigint", "f": "double"}


@pytest.mark.rule("A6.2")
def test_a6_2_not_null_column_without_default_against_new_rows(lh, spark):
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table("shop.e", spark.createDataFrame([], "id bigint").schema)
    lh.create_branch("src")
    lh.create_branch("dest")
    lh.branch("dest").add_column("shop.e", "must", "string", nullable=False)
    lh.branch("src").insert("shop.e", spark.createDataFrame([(1,)], "id bigint"))
    [conflict] = conflicts_of(lh)
    assert conflict.rule == "A6.2"


@pytest.mark.rule("A6.3", "3.6 ours/theirs")
def test_a6_3_drops_on_both_sides_that_leave_no_column_conflict_and_settle_as_a_whole(lh, keyless, spark):
    """Not in SPEC (silent on it): src keeps only a, dest only id and b. A table needs a column, so this is a
    conflict; ours keeps dest's table, theirs takes src's (its schema and rows), and the feed says so."""
    with lh.transaction("src") as tx:
        tx.drop_column(keyless, "id")
        tx.drop_column(keyless, "b")
        tx.insert(keyless, spark.createDataFrame([(50,)], "a bigint"))
    with lh.transaction("dest") as tx:
        tx.drop_column(keyless, "a")
        tx.delete(keyless, "id = 1")
    [conflict] = conflicts_of(lh)
    assert (conflict.object_name, conflict.rule) == (keyless, "A6.3")
    dest_head = lh.store.get_branch("dest").head
    ours = lh.merge("src", "dest", on_conflict="ours")
    assert [c.rule for c in ours.resolved] == ["A6.3"]
    assert rows(lh.read(keyless, "dest")) == [(2, "x"), (3, "x"), (4, "x")]
    lh.create_branch("dest_theirs", dest_head)
    lh.merge("src", "dest_theirs", on_conflict="theirs")
    assert [c.name for c in lh.snapshot("dest_theirs").table(keyless).columns] == ["a"]
    assert rows(lh.read(keyless, "dest_theirs")) == [(10,), (20,), (30,), (40,), (50,)]
    feed = table_changes(lh, keyless, from_=dest_head, to=lh.store.get_branch("dest_theirs").head)
    # dest's delete of id 1 is undone and src's row arrives; the other rows are the same rows on both sides.
    assert sorted((r["_change_type"], r["a"]) for r in feed.collect()) == [("insert", 10), ("insert", 50)]


@pytest.mark.rule("3.3 column names")
def test_same_column_added_on_both_sides_is_one_column(lh, keyless, spark):
    lh.branch("src").add_column(keyless, "c", "int")
    lh.branch("src").insert(keyless, spark.createDataFrame([(5, 50, "s", 7)], SCHEMA + ", c int"))
    lh.branch("dest").add_column(keyless, "c", "bigint")
    lh.branch("dest").insert(keyless, spark.createDataFrame([(6, 60, "d", 8)], SCHEMA + ", c bigint"))
    lh.merge("src", "dest")
    info = lh.snapshot("dest").table(keyless)
    assert [(c.name, c.type) for c in info.columns] == [("id", "bigint"), ("a", "bigint"), ("b", "string"),
                                                       ("c", "bigint")]
    assert rows(lh.read(keyless, "dest"), "id", "c") == [(1, None), (2, None), (3, None), (4, None), (5, 7), (6, 8)]


@pytest.mark.rule("3.3 column names")
def test_rename_on_src_is_made_at_merge_and_keeps_dest_rows(lh, keyless, spark):
    lh.branch("src").rename_column(keyless, "a", "amount")
    lh.branch("dest").insert(keyless, df(spark, (5, 50, "d")))
    lh.merge("src", "dest")
    assert rows(lh.read(keyless, "dest"), "id", "amount") == [(1, 10), (2, 20), (3, 30), (4, 40), (5, 50)]


# ------------------------------------------------------- primary-key tables
@pytest.mark.rule("3.4 insert")
def test_keyed_same_key_inserted_differently_conflicts_and_identically_merges(lh, keyed, spark):
    lh.branch("src").insert(keyed, df(spark, (5, 50, "s"), (6, 60, "same")))
    lh.branch("dest").insert(keyed, df(spark, (5, 51, "d"), (6, 60, "same")))
    [conflict] = conflicts_of(lh)
    assert (conflict.rule, conflict.involved) == ("3.4 insert", "id=5")


@pytest.mark.rule("3.4 update/delete")
def test_keyed_update_against_delete_conflicts(lh, keyed):
    lh.branch("src").update(keyed, "id = 2", {"a": "0"})
    lh.branch("dest").delete(keyed, "id = 2")
    [conflict] = conflicts_of(lh)
    assert (conflict.rule, conflict.involved) == ("3.4 update/delete", "id=2")


@pytest.mark.rule("3.4 update/delete")
def test_keyed_delete_against_update_conflicts(lh, keyed):
    """3.4's update/delete conflict the other way round: the delete on src, the update on dest."""
    lh.branch("src").delete(keyed, "id = 2")
    lh.branch("dest").update(keyed, "id = 2", {"a": "0"})
    [conflict] = conflicts_of(lh)
    assert (conflict.rule, conflict.involved) == ("3.4 update/delete", "id=2")


@pytest.mark.rule("3.4 cells")
def test_keyed_different_columns_of_one_row_merge_cell_by_cell(lh, keyed):
    lh.branch("src").update(keyed, "id = 3", {"a": "333"})
    lh.branch("dest").update(keyed, "id = 3", {"b": "'dest'"})
    lh.merge("src", "dest")
    assert rows(lh.read(keyed, "dest")) == [(1, 10, "x"), (2, 20, "x"), (3, 333, "dest"), (4, 40, "x")]


@pytest.mark.rule("3.4 cells")
def test_keyed_same_column_changed_differently_conflicts(lh, keyed):
    lh.branch("src").update(keyed, "id = 3", {"a": "1"})
    lh.branch("dest").update(keyed, "id = 3", {"a": "2"})
    [conflict] = conflicts_of(lh)
    assert conflict.rule == "3.4 cells"


@pytest.mark.rule("3.4 cells", "3.6 ours/theirs")
@pytest.mark.parametrize("on_conflict, a", [("ours", 2), ("theirs", 1)])
def test_keyed_cell_clash_settled_by_on_conflict_keeps_the_other_cells_of_both_sides(lh, keyed, on_conflict, a):
    """SPEC 3.4: on_conflict settles only the cells both sides changed differently; a cell only one side
    changed keeps that side's value. Found by the model test's ci profile (2026-11-26): ours took dest's whole
    row, losing the cell only src had changed (theirs already merged the other cells)."""
    lh.branch("src").update(keyed, "id = 3", {"a": "1", "b": "'src'"})
    lh.branch("dest").update(keyed, "id = 3", {"a": "2"})
    result = lh.merge("src", "dest", on_conflict=on_conflict)
    assert [c.rule for c in result.resolved] == ["3.4 cells"]
    assert rows(lh.read(keyed, "dest"))[2] == (3, a, "src")
    lh.branch("src").update(keyed, "id = 4", {"a": "7"})
    lh.branch("dest").update(keyed, "id = 4", {"a": "8", "b": "'dest'"})
    lh.merge("src", "dest", on_conflict=on_conflict)
    assert rows(lh.read(keyed, "dest"))[3] == (4, 8 if on_conflict == "ours" else 7, "dest")


@pytest.mark.rule("3.4 keys")
def test_keyed_identical_changes_and_keys_one_side_changed(lh, keyed, spark):
    src, dest = lh.branch("src"), lh.branch("dest")
    src.update(keyed, "id = 1", {"a": "100"})
    dest.update(keyed, "id = 1", {"a": "100"})
    src.delete(keyed, "id = 4")
    dest.delete(keyed, "id = 4")
    src.delete(keyed, "id = 2")  # only src: deleted
    dest.update(keyed, "id = 3", {"b": "'d'"})  # only dest: kept
    src.insert(keyed, df(spark, (7, 70, "s")))  # DML kinds differ, but keys decide (no matrix conflict)
    lh.merge("src", "dest")
    assert rows(lh.read(keyed, "dest")) == [(1, 100, "x"), (3, 30, "d"), (7, 70, "s")]
    # Merging back gives src the same table.
    lh.merge("dest", "src")
    assert rows(lh.read(keyed, "src")) == rows(lh.read(keyed, "dest"))


@pytest.mark.rule("3.4 keys")
def test_keyed_changes_to_different_keys_join_dest_as_they_are(lh, keyed, spark):
    """No key changed by both sides: src's segments and tombstones join dest unchanged; nothing is written."""
    src, dest = lh.branch("src"), lh.branch("dest")
    src.update(keyed, "id = 1", {"a": "100"})
    src.delete(keyed, "id = 2")
    src.insert(keyed, df(spark, (7, 70, "s")))
    src.update(keyed, "id = 7", {"b": "'s2'"})  # an update of src's own new row
    dest.update(keyed, "id = 3", {"b": "'d'"})
    dest.insert(keyed, df(spark, (8, 80, "d")))
    dest.delete(keyed, "id = 8")
    before = lh.get_branch("dest").head
    files_before = set(lh.warehouse.list_files("tables"))
    lh.merge("src", "dest")
    assert rows(lh.read(keyed, "dest")) == [(1, 100, "x"), (3, 30, "d"), (4, 40, "x"), (7, 70, "s2")]
    assert set(lh.warehouse.list_files("tables")) == files_before
    base, src_state, merged = (lh.snapshot(ref).state(keyed) for ref in ("main", "src", "dest"))
    assert set(merged.segments) - set(lh.snapshot(before).state(keyed).segments) == set(src_state.segments) - set(base.segments)
    assert set(src_state.tombstones) - set(base.tombstones) <= set(merged.tombstones)
    assert rows(lh.read(keyed, before)) == [(1, 10, "x"), (2, 20, "x"), (3, 30, "d"), (4, 40, "x")]
    # Merging back is a merge of dest's own changes onto src: the same table on both.
    lh.merge("dest", "src")
    assert rows(lh.read(keyed, "src")) == rows(lh.read(keyed, "dest"))


@pytest.mark.rule("3.4 keys")
def test_keyed_changes_sharing_one_key_are_decided_per_key_and_written(lh, keyed, spark):
    """One key changed on both sides (different columns): the merge writes the merged rows."""
    src, dest = lh.branch("src"), lh.branch("dest")
    src.update(keyed, "id in (1, 3)", {"a": "a + 1"})
    dest.update(keyed, "id = 3", {"b": "'d'"})
    files_before = set(lh.warehouse.list_files("tables"))
    lh.merge("src", "dest")
    assert rows(lh.read(keyed, "dest")) == [(1, 11, "x"), (2, 20, "x"), (3, 31, "d"), (4, 40, "x")]
    assert set(lh.warehouse.list_files("tables")) > files_before


@pytest.mark.rule("3.6 ours/theirs")
def test_on_conflict_ours_and_theirs_per_key_and_per_table(lh, keyed, spark):
    lh.branch("src").update(keyed, "id = 3", {"a": "1"})
    lh.branch("dest").update(keyed, "id = 3", {"a": "2"})
    lh.branch("src").update(keyed, "id = 4", {"a": "4000"})
    lh.create_branch("dest2", "dest")
    result = lh.merge("src", "dest", on_conflict="ours")
    assert result.resolved and not result.conflicts
    assert rows(lh.read(keyed, "dest"), "id", "a") == [(1, 10), (2, 20), (3, 2), (4, 4000)]
    lh.merge("src", "dest2", on_conflict={"shop.k": "theirs"})
    assert rows(lh.read(keyed, "dest2"), "id", "a") == [(1, 10), (2, 20), (3, 1), (4, 4000)]
    with pytest.raises(errors.InvalidArgument, match="on_conflict"):
        lh.merge("src", "main", on_conflict="mine")


# ---------------------------------------------------------- schema history
@pytest.mark.rule("3.5")
def test_schema_history_on_merge_and_time_travel(lh, keyless, spark):
    src = lh.branch("src")
    src.add_column(keyless, "c", "int")  # S1: rows are written under it
    src.insert(keyless, spark.createDataFrame([(5, 50, "s", 5)], SCHEMA + ", c int"))
    src.add_column(keyless, "d", "string")  # S2: no rows: discarded by the merge
    src.drop_column(keyless, "d")  # S3: src's final schema
    with_rows = lh.snapshot("src@" + lh.log("src")[2].ts.isoformat()).state(keyless).schema_id
    no_rows = lh.snapshot("src@" + lh.log("src")[1].ts.isoformat()).state(keyless).schema_id
    lh.branch("dest").insert(keyless, df(spark, (6, 60, "d")))
    before = lh.store.get_commit(lh.store.get_branch("dest").head).ts
    time.sleep(0.01)
    lh.merge("src", "dest")

    state = lh.snapshot("dest").state(keyless)
    history = {h["schema_id"]: h for h in state.schema_history}
    assert history[with_rows]["visible"] is False  # moved over, out of sight
    assert no_rows not in history  # never held rows: discarded
    assert history[state.schema_id]["visible"] is True  # the merged schema, at the merge's sequence
    merge_commit = lh.store.get_commit(lh.store.get_branch("dest").head)
    assert history[state.schema_id]["seq"] > lh.store.get_commit(merge_commit.parents[0]).seq
    visible = [h["schema_id"] for h in state.schema_history if h["visible"]]
    assert with_rows not in visible and no_rows not in visible
    # Every segment stays readable in the merged schema.
    assert [c.name for c in lh.snapshot("dest").table(keyless).columns] == ["id", "a", "b", "c"]
    assert rows(lh.read(keyless, "dest"), "id", "c") == [(1, None), (2, None), (3, None), (4, None), (5, 5), (6, None)]
    # Time travel and restore to before the merge show dest's own schema, never src's intermediate ones.
    earlier = lh.snapshot("dest", as_of=before)
    assert [c.name for c in earlier.table(keyless).columns] == ["id", "a", "b"]
    lh.restore_table("dest", keyless, "dest", as_of=before)
    assert [c.name for c in lh.snapshot("dest").table(keyless).columns] == ["id", "a", "b"]
    assert rows(lh.read(keyless, "dest"), "id") == [(1,), (2,), (3,), (4,), (6,)]


# ---------------------------------------------------- new objects, strategies
@pytest.mark.rule("3.1")
def test_new_objects_are_added_with_their_ids_and_name_clashes_conflict(lh, keyless, spark):
    with lh.transaction("src") as tx:
        tx.create_database("sales")
        tx.create_table_as("sales.orders", df(spark, (1, 1, "s")))
        tx.create_table_as("shop.fresh", df(spark, (2, 2, "s")))
    lh.branch("dest").create_table_as("shop.fresh", df(spark, (3, 3, "d")))
    [conflict] = conflicts_of(lh)
    assert (conflict.object_name, conflict.rule) == ("shop.fresh", "3.1")
    lh.merge("src", "dest", on_conflict="theirs")
    snapshot = lh.snapshot("dest")
    assert snapshot.table("sales.orders").id == lh.snapshot("src").table("sales.orders").id
    assert rows(snapshot.read("shop.fresh"), "id") == [(2,)]
    assert rows(snapshot.read("sales.orders"), "id") == [(1,)]


@pytest.mark.rule("3.6 strategies")
def test_strategies_fast_forward_and_auto(lh, keyless, spark):
    lh.branch("src").insert(keyless, df(spark, (5, 50, "s")))
    src_head = lh.store.get_branch("src").head
    assert lh.merge("src", "dest", strategy="fast_forward").status == "fast-forward"
    assert lh.store.get_branch("dest").head == src_head
    lh.branch("dest").insert(keyless, df(spark, (6, 60, "d")))
    lh.branch("src").insert(keyless, df(spark, (7, 70, "s")))
    with pytest.raises(errors.InvalidArgument, match="cannot fast-forward 'dest'"):
        lh.merge("src", "dest", strategy="fast_forward")
    assert lh.merge("src", "dest", strategy="auto").status == "merged"
    assert rows(lh.read(keyless, "dest"), "id") == [(1,), (2,), (3,), (4,), (5,), (6,), (7,)]
    assert lh.merge("src", "dest").status == "up-to-date"
    with pytest.raises(errors.InvalidArgument, match="unknown merge strategy"):
        lh.merge("src", "dest", strategy="octopus")


@pytest.mark.rule("A3", "3.6 abort")
def test_dry_run_reports_without_writing(lh, keyless, spark):
    lh.branch("src").insert(keyless, df(spark, (5, 50, "s")))
    lh.branch("src").update(keyless, "id = 1", {"a": "0"})
    lh.branch("dest").update(keyless, "id = 2", {"a": "0"})
    head = lh.store.get_branch("dest").head
    result = lh.merge("src", "dest", dry_run=True)
    assert result.status == "dry-run" and [c.rule for c in result.conflicts] == ["A3"]
    assert lh.store.get_branch("dest").head == head


@pytest.mark.rule("3.4 keys")
def test_merges_in_both_directions_find_the_nearest_base(lh, keyed, spark):
    src, dest = lh.branch("src"), lh.branch("dest")
    src.insert(keyed, df(spark, (5, 50, "s")))
    lh.merge("src", "dest")
    dest.update(keyed, "id = 5", {"a": "55"})
    src.insert(keyed, df(spark, (6, 60, "s")))
    lh.merge("dest", "src")  # base is src's first merge into dest
    src.update(keyed, "id = 6", {"b": "'s2'"})
    dest.delete(keyed, "id = 1")
    lh.merge("src", "dest")
    expected = [(2, 20, "x"), (3, 30, "x"), (4, 40, "x"), (5, 55, "s"), (6, 60, "s2")]
    assert rows(lh.read(keyed, "dest")) == expected


def test_protected_branch_changes_only_by_merge(lh, keyless, spark):
    lh.protect_branch("dest")
    with pytest.raises(errors.ProtectedBranch, match="only changes by merge"):
        lh.branch("dest").insert(keyless, df(spark, (9, 90, "d")))
    lh.branch("src").insert(keyless, df(spark, (5, 50, "s")))
    assert lh.merge("src", "dest").status == "merged"
    assert rows(lh.read(keyless, "dest"), "id")[-1] == (5,)


# ------------------------------------------- the rest of SPEC 3's rules, on both catalogs
# tests/test_rule_coverage.py checks that `make test` exercises every rule on SQLite and PostgreSQL: these are
# the rules the modules above and the matrix leave to other modules that run on SQLite only.
@pytest.mark.rule("props")
def test_the_same_property_set_differently_on_both_sides_conflicts(lh, keyless):
    lh.branch("src").set_table_properties(keyless, {"owner": "src", "tier": "1"})
    lh.branch("dest").set_table_properties(keyless, {"owner": "dest"})
    [conflict] = conflicts_of(lh)
    assert (conflict.object_name, conflict.rule) == (keyless, "props")
    lh.create_branch("dest2", "dest")
    lh.merge("src", "dest", on_conflict="theirs")
    assert lh.snapshot("dest").table(keyless).properties == {"owner": "src", "tier": "1"}
    lh.merge("src", "dest2", on_conflict="ours")  # dest's owner; src's tier, which only src set
    assert lh.snapshot("dest2").table(keyless).properties == {"owner": "dest", "tier": "1"}


@pytest.mark.rule("partition")
def test_partitioning_changed_differently_on_both_sides_conflicts(lh, keyless):
    lh.branch("src").set_partitioning(keyless, ["b"])
    lh.branch("dest").set_partitioning(keyless, ["a"])
    [conflict] = conflicts_of(lh)
    assert (conflict.object_name, conflict.rule) == (keyless, "partition")
    lh.create_branch("dest2", "dest")
    lh.merge("src", "dest", on_conflict="ours")
    assert list(lh.snapshot("dest").table(keyless).partition_by) == ["a"]
    lh.merge("src", "dest2", on_conflict="theirs")
    assert list(lh.snapshot("dest2").table(keyless).partition_by) == ["b"]


@pytest.mark.rule("view")
def test_a_view_both_sides_changed_differently_conflicts(lh, keyless):
    lh.branch("src").create_view("shop.v", f"SELECT id FROM `{keyless}` WHERE a > 15")
    lh.branch("dest").create_view("shop.v", f"SELECT id FROM `{keyless}` WHERE a > 25")
    [conflict] = conflicts_of(lh, views=["shop.v"])
    assert (conflict.object_kind, conflict.object_name, conflict.rule) == ("view", "shop.v", "view")
    lh.merge("src", "dest", views=["shop.v"], on_conflict="theirs")
    assert "a > 15" in lh.snapshot("dest").table("shop.v").view_sql


@pytest.mark.rule("driver")
def test_a_merge_driver_merges_rows_and_its_conflict_marker_stops_the_merge(lh, keyed):
    from dbt.adapters.branchspark.core.merge.drivers import CONFLICT

    lh.branch("src").update(keyed, "id = 1", {"a": "a + 1"})
    lh.branch("dest").update(keyed, "id = 1", {"a": "a + 5"})
    [conflict] = conflicts_of(lh, drivers={keyed: lambda base, ours, theirs: {CONFLICT: ours["a"] != base["a"]}})
    assert conflict.rule == "driver"
    lh.merge("src", "dest", drivers={keyed: lambda base, ours, theirs: {"a": ours["a"] + theirs["a"] - base["a"]}})
    assert rows(lh.read(keyed, "dest"), "id", "a") == [(1, 16), (2, 20), (3, 30), (4, 40)]


@pytest.mark.rule("marked", "3.6 pause")
def test_a_row_marked_as_a_conflict_in_a_paused_merge_stops_continue(lh, keyed):
    lh.branch("src").update(keyed, "id = 1", {"a": "100"})
    lh.branch("src").update(keyed, "id = 2", {"b": "'s'"})  # merges by the rules
    lh.branch("dest").update(keyed, "id = 1", {"a": "200"})
    head = lh.store.get_branch("dest").head
    assert lh.merge("src", "dest", on_conflict="pause").phase == "resolving data"
    lh.resolve_conflicts("dest", keyed, where="id = 1", set={"merged_a": "our_a + their_a"})
    lh.resolve_conflicts("dest", keyed, where="id = 2", set={"merged_b": "CONFLICT()"})
    with pytest.raises(errors.MergeConflict) as raised:
        lh.merge(None, "dest", continue_=True)
    assert [c.rule for c in raised.value.report.conflicts] == ["marked"]
    assert lh.store.get_branch("dest").head == head
    lh.resolve_conflicts("dest", keyed, where="id = 2", set={"merged_b": "'kept'"})
    assert lh.merge(None, "dest", continue_=True).status == "merged"
    assert rows(lh.read(keyed, "dest"), "id", "a", "b") == [(1, 300, "x"), (2, 20, "kept"), (3, 30, "x"),
                                                            (4, 40, "x")]


@pytest.mark.rule("3.3 overwrites")
def test_keyless_overwrites_on_both_sides_merge_by_row_counts(lh, keyless, spark):
    lh.branch("src").overwrite(keyless, df(spark, (2, 20, "x"), (3, 30, "x"), (4, 40, "x"), (5, 50, "s")))
    lh.branch("dest").overwrite(keyless, df(spark, (2, 20, "x"), (3, 30, "x"), (4, 40, "x"), (6, 60, "d")))
    lh.merge("src", "dest")
    assert rows(lh.read(keyless, "dest"), "id") == [(2,), (3,), (4,), (5,), (6,)]


@pytest.mark.rule("3.3 compaction", "A3")
def test_compaction_on_dest_hides_no_a3_conflict(lh, keyless):
    lh.branch("src").update(keyless, "id = 1", {"a": "0"})
    lh.branch("dest").compact(keyless)
    lh.branch("dest").update(keyless, "id = 4", {"a": "0"})
    [conflict] = conflicts_of(lh)
    assert conflict.rule == "A3"
