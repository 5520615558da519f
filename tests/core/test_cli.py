"""The branchspark command line, run as a user would, on a real catalog file."""
import pytest
from click.testing import CliRunner

from dbt.adapters.branchspark.cli.main import cli


def run(warehouse, *args):
    result = CliRunner().invoke(cli, ["--warehouse", warehouse, *args], catch_exceptions=False,
                                env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_init_branch_log_show_gc(lh, spark, orders, warehouse):
    assert run(warehouse, "init")[0] == 0
    code, out = run(warehouse, "branch", "create", "dev")
    assert code == 0 and "created branch dev" in out
    lh.branch("dev").delete(orders, "id = 1", message="remove first order")
    code, out = run(warehouse, "branch", "list")
    assert code == 0 and "dev" in out and "remove first order" in out
    code, out = run(warehouse, "log", "dev")
    assert code == 0
    lines = [l for l in out.splitlines() if l.strip()]
    assert lines[0].startswith(lh.get_branch("dev").head[:12]) and "(dev)" in lines[0]
    assert "remove first order" in lines[0]
    assert "delete shop.orders" in lines[0] and "initialize catalog" in lines[-1]
    code, out = run(warehouse, "show", "shop.orders", "--branch", "dev")
    assert code == 0 and "amount" in out and "double" in out and "rows: 4" in out and "tombstones: 1" in out
    code, out = run(warehouse, "gc", "--grace", "0")
    assert code == 0 and "deleted 0 files" in out


@pytest.mark.catalog_only
def test_errors_are_one_line_and_exit_non_zero(lh, warehouse):
    code, out = run(warehouse, "branch", "drop", "nope")
    assert code == 1 and out.strip() == ("error: branch 'nope' does not exist: create it with "
                                         "`branchspark branch create nope` or pick one of `branchspark branch list`")
    code, out = run(warehouse, "branch", "protect", "main")
    assert code == 0 and lh.get_branch("main").protected


def test_log_graph_shows_a_merge_lane():
    from datetime import datetime

    from dbt.adapters.branchspark.core.catalog.commits import CommitInfo
    from dbt.adapters.branchspark.cli.graph import GraphDrawer

    now = datetime(2026, 1, 1)
    commits = [CommitInfo("m", 5, now, ("a2", "b1"), "merge", None), CommitInfo("b1", 4, now, ("a1",), "b", None),
               CommitInfo("a2", 3, now, ("a1",), "a", None), CommitInfo("a1", 2, now, ("r",), "a1", None),
               CommitInfo("r", 1, now, (), "root", None)]
    drawer = GraphDrawer()
    lines = [line.rstrip() for c in commits for line in drawer.draw(c.id, c.parents)]
    assert lines == ["*", "|\\", "| *", "* |", "|/", "*", "*"]  # as git draws it


def test_merge_prints_outcomes_and_a_conflict_table(lh, spark, orders, warehouse):
    lh.create_branch("dev")
    lh.create_branch("other")
    lh.branch("dev").update(orders, "id = 1", {"amount": "1.0"})
    code, out = run(warehouse, "merge", "dev", "--into", "other", "--dry-run")
    assert code == 0 and "dry-run" in out and "shop.orders" in out
    assert lh.get_branch("other").head == lh.get_branch("main").head
    code, out = run(warehouse, "merge", "dev", "--into", "other")
    assert code == 0 and "merge dev into other: merged" in out
    assert sorted(r.amount for r in lh.read(orders, "other").collect()) == [1.0, 20.0, 30.0, 40.0, 50.0]
    lh.branch("main").update(orders, "id = 2", {"amount": "2.0"})
    head = lh.get_branch("main").head
    code, out = run(warehouse, "merge", "dev", "--into", "main")
    assert code == 1 and lh.get_branch("main").head == head
    table, error = out.rsplit("\n", 2)[0], out.strip().splitlines()[-1]
    assert "conflicts" in table and "A3" in table and "update" in table
    assert error.startswith("error: merge of 'dev' into 'main' stopped with 1 conflict(s), nothing changed")
