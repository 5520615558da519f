"""sample_project built on `dev` with dbt, merged into a protected `main` with
`dbt run-operation merge_branch`, then `main` checked row by row against `dev`."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.cli.main import dbtRunner

SAMPLE = Path(__file__).resolve().parents[2] / "sample_project"


@pytest.fixture
def sample(tmp_path):
    project = tmp_path / "sample_project"
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns("warehouse", "target", "logs", "dbt_packages"))
    profiles = yaml.safe_load((project / "profiles.yml").read_text())
    for output in profiles["branchspark_sample"]["outputs"].values():
        output["warehouse"] = str(tmp_path / "warehouse")
        output["protected_branches"] = ["main"]
        output["method"] = "session"  # this test process's Spark, not the user's warm local engine
    (project / "profiles.yml").write_text(yaml.safe_dump(profiles))
    return project


def dbt(project: Path, *args: str):
    result = dbtRunner().invoke([*args, "--project-dir", str(project), "--profiles-dir", str(project)])
    return result


def tables(lakehouse: Lakehouse, branch: str) -> dict[str, list[tuple]]:
    snapshot = lakehouse.snapshot(branch)
    return {t.full_name: sorted((tuple(r) for r in snapshot.read(t.full_name).collect()), key=repr)
            for t in snapshot.tables() if t.kind == "table"}


def test_sample_project_built_on_dev_merges_into_protected_main(sample, spark, tmp_path, capsys):
    assert dbt(sample, "seed", "--target", "dev").success
    assert dbt(sample, "run", "--target", "dev").success
    assert dbt(sample, "snapshot", "--target", "dev").success

    lakehouse = Lakehouse(spark, str(tmp_path / "warehouse"))
    main_head = lakehouse.get_branch("main").head
    assert lakehouse.get_branch("main").protected

    # A build against protected main fails before building anything.
    capsys.readouterr()
    refused = dbt(sample, "run", "--target", "main")
    assert not refused.success
    assert "branch 'main' is protected and only changes by merge" in capsys.readouterr().out
    assert lakehouse.get_branch("main").head == main_head

    assert dbt(sample, "run-operation", "merge_branch", "--args", "{src: dev, dest: main, dry_run: true}",
               "--target", "main").success
    assert lakehouse.get_branch("main").head == main_head
    capsys.readouterr()
    assert dbt(sample, "run-operation", "merge_branch", "--args", "{src: dev}", "--target", "main").success
    printed = capsys.readouterr().out
    assert "merge dev into main: merged" in printed and "shop.fct_orders" in printed

    head = lakehouse.store.get_commit(lakehouse.get_branch("main").head)
    assert head.parents == (main_head, lakehouse.get_branch("dev").head)
    on_dev, on_main = tables(lakehouse, "dev"), tables(lakehouse, "main")
    assert {"shop.raw_orders", "shop.raw_customers", "shop.fct_orders", "shop.dim_customers"} <= set(on_main)
    assert on_main == on_dev  # every table, row by row
    fct = on_main["shop.fct_orders"]
    assert len(fct) == len({row[0] for row in fct}) and not any(row[0] == 1008 for row in fct)
    # the report counts the rows the merge added to main per table (issue 71: a merge left them blank)
    reported = next(line for line in printed.splitlines() if "| shop.fct_orders " in line)
    object_, kind, action, added, deleted = [c.strip() for c in reported.strip().strip("|").split("|")][:5]
    assert (object_, kind, action, added, deleted) == ("shop.fct_orders", "table", "added", str(len(fct)), "0")

    # Later work on dev (two late orders merged into fct_orders on its key) merges as a second merge.
    assert dbt(sample, "run-operation", "add_late_orders", "--target", "dev").success
    assert dbt(sample, "run", "--target", "dev", "--select", "fct_orders").success
    assert dbt(sample, "run-operation", "merge_branch", "--args", "{src: dev}", "--target", "main").success
    on_dev, on_main = tables(lakehouse, "dev"), tables(lakehouse, "main")
    assert on_main == on_dev
    assert {row[0] for row in on_main["shop.fct_orders"]} >= {1008, 1009}
