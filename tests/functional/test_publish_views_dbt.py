"""A dbt project's views reach a protected main by `merge_branch` (SPEC 5, issue 24).

sample_project's staging models are views. Built on `dev` and published into a protected `main` with
`dbt run-operation merge_branch`, the views arrive in the same merge commit as the tables, and a query
of main through them returns the seeds' rows (checked row by row). A view changed differently on two
branches is a conflict in the merge report, and nothing lands.
"""
from __future__ import annotations

import csv
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from dbt.adapters.branchspark.core.sql.temp_views import views_of
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.cli.main import dbtRunner

SAMPLE = Path(__file__).resolve().parents[2] / "sample_project"


@pytest.fixture
def sample(tmp_path):
    """sample_project with its warehouse in tmp_path, main protected, and targets a and b (from main)."""
    project = tmp_path / "sample_project"
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns("warehouse", "target", "logs", "dbt_packages"))
    profiles = yaml.safe_load((project / "profiles.yml").read_text())
    outputs = profiles["branchspark_sample"]["outputs"]
    for output in outputs.values():
        output["method"] = "session"  # this test process's Spark, not the user's warm local engine
        output["warehouse"] = str(tmp_path / "warehouse")
        output["protected_branches"] = ["main"]
    for name in ("a", "b"):
        outputs[name] = {**outputs["dev"], "branch": name, "create_branch_from": "main"}
    (project / "profiles.yml").write_text(yaml.safe_dump(profiles))
    return project


def dbt(project: Path, *args: str) -> bool:
    return dbtRunner().invoke([*args, "--project-dir", str(project), "--profiles-dir", str(project)]).success


def query(lakehouse: Lakehouse, spark, branch: str, sql: str, names) -> list[tuple]:
    """`sql` on `branch` as dbt's session runs it: the branch's relations as Spark SQL sees them."""
    views = views_of(spark)
    views.sync(lakehouse, branch)
    views.ensure(names)
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def seed_rows(project: Path, name: str) -> list[dict]:
    with open(project / "seeds" / f"{name}.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_views_reach_protected_main_by_merge_branch(sample, spark, tmp_path, capsys):
    assert dbt(sample, "seed", "--target", "dev")
    assert dbt(sample, "run", "--target", "dev")
    lakehouse = Lakehouse(spark, str(tmp_path / "warehouse"))
    main_head = lakehouse.get_branch("main").head

    capsys.readouterr()
    assert dbt(sample, "run-operation", "merge_branch", "--args", "{src: dev}", "--target", "main")
    printed = capsys.readouterr().out
    assert "shop.stg_orders" in printed and "shop.stg_customers" in printed

    # one merge commit brought tables and views
    head = lakehouse.store.get_commit(lakehouse.get_branch("main").head)
    assert head.parents == (main_head, lakehouse.get_branch("dev").head)
    ops = {(o.object_name, o.op) for o in lakehouse.store.operations(head.id)}
    assert {("shop.stg_orders", "create"), ("shop.stg_customers", "create"), ("shop.fct_orders", "create")} <= ops
    on_main = {t.full_name: t for t in lakehouse.snapshot("main").tables()}
    assert on_main["shop.stg_orders"].kind == on_main["shop.stg_customers"].kind == "view"

    # a query of main through the views: the seeds' rows, row by row
    orders = query(lakehouse, spark, "main", "SELECT order_id, customer_id, CAST(order_date AS STRING), status, "
                   "amount FROM `shop.stg_orders`", ["shop.stg_orders"])
    assert orders == sorted((int(r["order_id"]), int(r["customer_id"]), r["ordered_at"][:10],
                             r["status"] or "unknown", Decimal(r["amount"]))
                            for r in seed_rows(sample, "raw_orders"))
    customers = query(lakehouse, spark, "main", "SELECT customer_id, customer_name, email, country "
                      "FROM `shop.stg_customers`", ["shop.stg_customers"])
    assert customers == sorted((int(r["customer_id"]), r["name"], r["email"].lower() or None, r["country"])
                               for r in seed_rows(sample, "raw_customers"))

    # the same view changed differently on two branches: the first merge replaces main's, the second conflicts
    model = sample / "models" / "staging" / "stg_customers.sql"
    original = model.read_text()
    model.write_text(original + "where country <> 'US'\n")
    assert dbt(sample, "run", "--select", "stg_customers", "--target", "a")
    model.write_text(original + "where country <> 'GB'\n")
    assert dbt(sample, "run", "--select", "stg_customers", "--target", "b")
    model.write_text(original)

    assert dbt(sample, "run-operation", "merge_branch", "--args", "{src: a}", "--target", "main")
    countries = query(lakehouse, spark, "main", "SELECT DISTINCT country FROM `shop.stg_customers`",
                      ["shop.stg_customers"])
    assert ("US",) not in countries and ("GB",) in countries
    head = lakehouse.get_branch("main").head

    capsys.readouterr()
    assert not dbt(sample, "run-operation", "merge_branch", "--args", "{src: b}", "--target", "main")
    printed = capsys.readouterr().out
    assert "conflicts:" in printed and "shop.stg_customers" in printed
    assert "both sides changed the view's SQL differently" in printed
    assert lakehouse.get_branch("main").head == head  # nothing landed
    assert "country <> 'US'" in lakehouse.snapshot("main").table("shop.stg_customers").view_sql
