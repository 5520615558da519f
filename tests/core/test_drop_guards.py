"""Dropping a branch as git does (issue 20 item 4): a protected branch is refused until it is
unprotected; a branch whose commits no other branch reaches needs force (`-d` / `-D`); gc's run-branch
expiry drops only branches the catalog recorded as dbt run branches."""
import pytest
from click.testing import CliRunner

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.cli.main import cli


def run(lh, *args):
    result = CliRunner().invoke(cli, ["--warehouse", lh.warehouse.root, "--catalog", lh.catalog_url, *args],
                                env={"COLUMNS": "300"})
    return result.exit_code, result.output


@pytest.mark.catalog_only
def test_protected_branch_is_not_dropped_until_unprotected(lh):
    lh.create_branch("dev")
    code, out = run(lh, "branch", "protect", "dev")
    assert code == 0
    code, out = run(lh, "branch", "drop", "dev")
    assert code == 1 and out.count("\n") == 1, out
    assert "branch 'dev' is protected and cannot be dropped" in out and "protect --off dev" in out
    assert run(lh, "branch", "drop", "--force", "dev")[0] == 1  # force does not override protection
    with pytest.raises(errors.ProtectedBranch, match="cannot be dropped"):
        lh.drop_branch("dev", force=True)
    assert lh.branch_exists("dev")
    assert run(lh, "branch", "protect", "--off", "dev")[0] == 0
    code, out = run(lh, "branch", "drop", "dev")
    assert code == 0 and not lh.branch_exists("dev"), out


def test_branch_with_unmerged_commits_needs_force(lh, spark, orders):
    lh.create_branch("dev")
    lh.branch("dev").insert(orders, spark.createDataFrame([(100, 1.0)], "id bigint, amount double"))
    code, out = run(lh, "branch", "drop", "dev")
    assert code == 1 and out.count("\n") == 1, out
    assert "branch 'dev' has 1 commit(s) no other branch reaches" in out and "--force" in out
    with pytest.raises(errors.InvalidArgument, match="no other branch reaches"):
        lh.drop_branch("dev")
    assert lh.branch_exists("dev")
    # a second branch at the same head reaches those commits: -d is enough
    lh.create_branch("keep", "dev")
    lh.drop_branch("dev")
    assert not lh.branch_exists("dev")
    code, out = run(lh, "branch", "drop", "--force", "keep")
    assert code == 0 and not lh.branch_exists("keep"), out


def test_merged_branch_drops_without_force(lh, spark, orders):
    lh.create_branch("dev")
    lh.branch("dev").insert(orders, spark.createDataFrame([(100, 1.0)], "id bigint, amount double"))
    lh.merge("dev", "main")
    code, out = run(lh, "branch", "drop", "dev")
    assert code == 0 and not lh.branch_exists("dev"), out


def test_gc_expires_only_recorded_run_branches(lh, spark, orders):
    """A user's branch named like a run branch (`dbt/dev/run-x`) is not one."""
    lh.create_branch("dbt/dev/run-x")
    lh.branch("dbt/dev/run-x").insert(orders, spark.createDataFrame([(7, 7.0)], "id bigint, amount double"))
    lh.create_branch("dbt/dev/run-0f3c", run_branch=True)
    assert lh.get_branch("dbt/dev/run-0f3c").run_branch and not lh.get_branch("dbt/dev/run-x").run_branch
    code, out = run(lh, "gc", "--grace", "0", "--drop-run-branches-after", "0")
    assert code == 0 and "dropped run branch dbt/dev/run-0f3c" in out and "dbt/dev/run-x" not in out, out
    assert lh.branch_exists("dbt/dev/run-x") and not lh.branch_exists("dbt/dev/run-0f3c")
    assert sorted(r.id for r in lh.read(orders, at="dbt/dev/run-x").collect()) == [1, 2, 3, 4, 5, 7]
