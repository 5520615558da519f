"""branch_diff and restore from dbt on a copy of sample_project: `dev` and `feat` branch from main and change
different seeds and models; run-operation branch_diff prints the three-dot summary of feat against main
(only feat's changes, though dev was merged into main meanwhile) and `{{ branch_diff(ref(...), ...) }}` is
a relation of the changed rows; run-operation restore puts a table back as a new commit."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from dbt.adapters.branchspark.core.diff import branch_diff
from dbt.adapters.branchspark.lakehouse import Lakehouse
from dbt.cli.main import dbtRunner

SAMPLE = Path(__file__).resolve().parents[2] / "sample_project"

CUSTOMER_DIFF = """
{{ config(materialized='table') }}
select _diff_type, customer_id, customer_name, country, order_count
from {{ branch_diff(ref('dim_customers'), 'main', 'feat') }}
"""


@pytest.fixture
def sample(tmp_path):
    project = tmp_path / "sample_project"
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns("warehouse", "target", "logs", "dbt_packages"))
    profiles = yaml.safe_load((project / "profiles.yml").read_text())
    outputs = profiles["branchspark_sample"]["outputs"]
    outputs["feat"] = dict(outputs["dev"], branch="feat")
    for output in outputs.values():
        output["warehouse"] = str(tmp_path / "warehouse")
        output["method"] = "session"  # this test process's Spark, not the user's warm local engine
    (project / "profiles.yml").write_text(yaml.safe_dump(profiles))
    return project


def dbt(project: Path, *args: str) -> bool:
    return dbtRunner().invoke([*args, "--project-dir", str(project), "--profiles-dir", str(project)]).success


def edit_seed(project: Path, seed: str, old: str, new: str) -> None:
    path = project / "seeds" / f"{seed}.csv"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def summary_lines(printed: str) -> list[str]:
    """The summary table's rows, as `table | status | added | removed | modified | schema | conflicts`."""
    return [" | ".join(c.strip() for c in line.strip().strip("|").split("|"))
            for line in printed.splitlines() if line.startswith("| shop.")]


def test_diff_summary_relation_and_restore_in_dbt(sample, spark, tmp_path, capsys):
    assert dbt(sample, "seed", "--target", "dev")
    assert dbt(sample, "run", "--target", "dev", "--exclude", "tag:branchspark_only")
    assert dbt(sample, "run-operation", "merge_branch", "--args", "{src: dev}", "--target", "main")
    lakehouse = Lakehouse(spark, str(tmp_path / "warehouse"))

    # feat: Grace Hopper moves to Canada (seed raw_customers, model dim_customers)
    edit_seed(sample, "raw_customers", "grace@example.com,US", "grace@example.com,CA")
    assert dbt(sample, "seed", "--target", "feat", "--select", "raw_customers")
    assert dbt(sample, "run", "--target", "feat", "--select", "dim_customers")
    # dev: order 1006 is returned (seed raw_orders, model fct_orders), merged into main
    edit_seed(sample, "raw_orders", "1006,5,2024-01-09 08:05:00,shipped", "1006,5,2024-01-09 08:05:00,returned")
    assert dbt(sample, "seed", "--target", "dev", "--select", "raw_orders")
    assert dbt(sample, "run", "--target", "dev", "--select", "fct_orders")
    assert dbt(sample, "run-operation", "merge_branch", "--args", "{src: dev}", "--target", "main")

    capsys.readouterr()
    assert dbt(sample, "run-operation", "branch_diff", "--args", "{from: main, to: feat, limit: 5}",
               "--target", "feat")
    printed = capsys.readouterr().out
    assert "merge of feat into main: clean" in printed
    # three-dot: only feat's changes; a keyless seed reload and table rebuild change one row each
    assert summary_lines(printed) == [
        "shop.dim_customers | changed | 1 | 1 | 0 |  | 0",
        "shop.raw_customers | changed | 1 | 1 | 0 |  | 0",
    ]
    first_rows = [" | ".join(c.strip() for c in line.strip().strip("|").split("|"))
                  for line in printed.splitlines() if "Grace Hopper" in line]
    assert first_rows == [  # dim_customers, then raw_customers; by the row's values, so added (CA) first
        "added | 2 | Grace Hopper | grace@example.com | CA | 2 | 99.25 | null",
        "removed | 2 | Grace Hopper | grace@example.com | US | 2 | 99.25 | null",
        "added | 2 | Grace Hopper | grace@example.com | CA | 2024-01-01 09:00:00 | null",
        "removed | 2 | Grace Hopper | grace@example.com | US | 2024-01-01 09:00:00 | null"]

    capsys.readouterr()
    assert dbt(sample, "run-operation", "branch_diff",
               "--args", "{from: main, to: feat, mode: two_dot, tables: [shop.fct_orders, shop.raw_orders]}",
               "--target", "feat")
    # two-dot: main's own change (from dev) shows, reversed: fct_orders is keyed by its unique_key
    printed = capsys.readouterr().out
    assert summary_lines(printed) == [
        "shop.fct_orders | changed | 0 | 0 | 1 |  | 0",
        "shop.raw_orders | changed | 1 | 1 | 0 |  | 0",
    ]
    assert [" | ".join(c.strip() for c in line.strip().strip("|").split("|"))
            for line in printed.splitlines() if line.startswith("| modified")] == [
        "modified | 1006 | 5 | FI | 2024-01-09 | shipped | 250.00 | status"]

    # the relation, built into a table on feat
    (sample / "models" / "marts" / "customer_diff.sql").write_text(CUSTOMER_DIFF)
    assert dbt(sample, "run", "--target", "feat", "--select", "customer_diff")
    rows = sorted(tuple(r) for r in lakehouse.read("shop.customer_diff", at="feat").collect())
    assert rows == [("added", 2, "Grace Hopper", "CA", 2), ("removed", 2, "Grace Hopper", "US", 2)]

    # restore raw_customers on feat to main's version: one new commit, and no difference left
    head = lakehouse.get_branch("feat").head
    assert dbt(sample, "run-operation", "restore", "--args", "{table: shop.raw_customers, to: main}",
               "--target", "feat")
    commit = lakehouse.store.get_commit(lakehouse.get_branch("feat").head)
    assert commit.parents == (head,)
    restored = branch_diff(lakehouse, "main", "feat", tables=["shop.raw_customers"], mode="two_dot")
    assert restored.tables == [] and restored.unchanged == 1


def test_the_example_workflow_posts_the_preview_diff():
    """examples/github-actions-preview.yml: after building the preview, its markdown diff against main is
    an artifact and a pull-request comment."""
    workflow = yaml.safe_load((SAMPLE.parent / "examples" / "github-actions-preview.yml").read_text())
    steps = [str(step.get("run", "")) for step in workflow["jobs"]["preview"]["steps"]]
    build = next(i for i, s in enumerate(steps) if s.startswith("dbt build --target ci"))
    diff = next(i for i, s in enumerate(steps) if s.startswith("branchspark diff main"))
    comment = next(i for i, s in enumerate(steps) if s.startswith("gh pr comment"))
    assert build < diff < comment
    assert '"pr_${PR_NUMBER}" --format markdown' in steps[diff] and "preview-diff.md" in steps[comment]
    assert workflow["jobs"]["preview"]["permissions"]["pull-requests"] == "write"
