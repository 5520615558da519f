"""strategy rebase (SPEC 3.6): src's commits replayed one by one on dest's head, linear history,
a conflict that stops the rebase resumably, and a branch already contained in dest."""
from __future__ import annotations

import pytest
from sorted_rows import rows

from dbt.adapters.branchspark.core import errors

SCHEMA = "id bigint, a bigint, b string"


@pytest.fixture
def diverged(lh, spark):
    """main: shop.k keyed on id (1-3); dev updates id 1 then inserts id 9; main updates id 1 and id 2."""
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.k", spark.createDataFrame([(i, i * 10, "x") for i in range(1, 4)], SCHEMA),
                           primary_key=["id"])
    lh.create_branch("dev")
    lh.branch("dev").update("shop.k", "id = 1", {"a": "100"}, message="dev: a of 1")
    lh.branch("dev").insert("shop.k", spark.createDataFrame([(9, 90, "d")], SCHEMA), message="dev: add 9")
    lh.branch("main").update("shop.k", "id = 1", {"a": "200"}, message="main: a of 1")
    lh.branch("main").update("shop.k", "id = 2", {"b": "'m'"}, message="main: b of 2")
    return "shop.k"


def first_parent_messages(lh, branch, count):
    return [c.message for c in lh.log(branch, limit=count)]


def test_rebase_with_a_conflict_stops_then_resumes_to_linear_history(lh, diverged):
    dev_head, main_head = lh.store.get_branch("dev").head, lh.store.get_branch("main").head
    with pytest.raises(errors.MergeConflict, match=r"stopped at commit .* \(1 of 2\)") as raised:
        lh.merge("dev", "main", strategy="rebase")
    assert [c.rule for c in raised.value.report.conflicts] == ["3.4 cells"]
    assert (lh.store.get_branch("dev").head, lh.store.get_branch("main").head) == (dev_head, main_head)
    status = lh.merge_status("main")
    assert (status["phase"], status["kind"], status["tables"][0]["table"]) == ("rebasing", "rebase", "shop.k")
    result = lh.merge(None, "main", continue_=True, on_conflict="replace")
    assert result.status == "rebased"
    new_dev = lh.store.get_branch("dev").head
    assert result.commit_id == new_dev and lh.store.get_branch("main").head == main_head
    # Linear: one parent each, src's messages on top of main's head.
    log = lh.log("dev", limit=3)
    assert [c.message for c in log[:2]] == ["dev: add 9", "dev: a of 1"]
    assert all(len(c.parents) == 1 for c in log[:2]) and log[1].parents == (main_head,)
    assert rows(lh.read(diverged, "dev")) == [(1, 100, "x"), (2, 20, "m"), (3, 30, "x"), (9, 90, "d")]
    assert lh.merge("dev", "main", strategy="fast_forward").status == "fast-forward"
    assert lh.store.get_branch("main").head == new_dev
    assert not any(b.name.endswith("~rebase") for b in lh.list_branches())


def test_rebase_skip_keeps_dest_and_abort_leaves_both_branches(lh, diverged):
    heads = {b: lh.store.get_branch(b).head for b in ("dev", "main")}
    with pytest.raises(errors.MergeConflict):
        lh.merge("dev", "main", strategy="rebase")
    lh.abort_merge("main")
    assert {b: lh.store.get_branch(b).head for b in ("dev", "main")} == heads
    assert lh.merge_status("main")["phase"] == "not started"
    lh.merge("dev", "main", strategy="rebase", on_conflict="skip")
    assert rows(lh.read(diverged, "dev"), "id", "a") == [(1, 200), (2, 20), (3, 30), (9, 90)]


def test_rebase_with_a_driver(lh, diverged):
    def larger(base, ours, theirs):
        from pyspark.sql import functions as F

        return {"a": F.greatest(ours["a"], theirs["a"])}

    lh.merge("dev", "main", strategy="rebase", drivers={"shop.k": larger})
    assert rows(lh.read(diverged, "dev"), "id", "a") == [(1, 200), (2, 20), (3, 30), (9, 90)]


def test_rebase_of_a_branch_already_in_dest_changes_nothing(lh, diverged):
    lh.merge("dev", "main", on_conflict="theirs")
    heads = {b: lh.store.get_branch(b).head for b in ("dev", "main")}
    result = lh.merge("dev", "main", strategy="rebase")
    assert result.status == "up-to-date"
    assert {b: lh.store.get_branch(b).head for b in ("dev", "main")} == heads
    assert lh.merge_status("main")["phase"] == "not started"


def test_rebase_needs_a_branch(lh, diverged):
    commit = lh.store.get_branch("dev").head
    with pytest.raises(errors.InvalidArgument, match="src must be a branch"):
        lh.merge(commit, "main", strategy="rebase")
    with pytest.raises(errors.InvalidArgument, match="handler 'sideways' is not valid"):
        lh.merge("dev", "main", strategy="rebase", on_conflict="sideways")
