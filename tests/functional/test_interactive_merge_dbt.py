"""Paused merges and merge drivers from `dbt run-operation` (SPEC 3.6): merge_branch with
on_conflict pause, merge_status, resolve_conflicts, continue, abort_merge, and a driver macro."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.cli.main import dbtRunner

DRIVER = """
{% macro larger_amount(base, ours, theirs) %}
  {{ return({'amount': 'greatest(' ~ ours['amount'] ~ ', ' ~ theirs['amount'] ~ ')'}) }}
{% endmacro %}

{% macro update_conflicts(assignments, where, table='shop.orders') %}
  {% do run_query("update " ~ merge_conflicts(table, 'main') ~ " set " ~ assignments ~ " where " ~ where) %}
{% endmacro %}

{% macro larger_qty(base, ours, theirs) %}
  {{ return({'qty': 'greatest(' ~ ours['qty'] ~ ', ' ~ theirs['qty'] ~ ')'}) }}
{% endmacro %}

{% macro count_open_conflicts() %}
  {% set result = run_query("select count(*) from " ~ merge_conflicts('shop.orders', 'main') ~ " where conflict") %}
  {{ print("open conflicts: " ~ result.columns[0].values()[0]) }}
{% endmacro %}
"""


@pytest.fixture
def project(tmp_path):
    project = tmp_path / "project"
    (project / "macros").mkdir(parents=True)
    (project / "macros" / "drivers.sql").write_text(DRIVER)
    (project / "dbt_project.yml").write_text(yaml.safe_dump({
        "name": "shop", "version": "1.0", "config-version": 2, "profile": "shop", "macro-paths": ["macros"]}))
    output = {"type": "branchspark", "method": "session", "branch": "main", "schema": "shop",
              "warehouse": str(tmp_path / "warehouse"), "threads": 1,
              "spark_config": {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2"}}
    (project / "profiles.yml").write_text(yaml.safe_dump({"shop": {"target": "main", "outputs": {"main": output}}}))
    return project


def dbt(project: Path, *args: str):
    return dbtRunner().invoke([*args, "--project-dir", str(project), "--profiles-dir", str(project)])


def conflicting_orders(lh: Lakehouse, spark) -> None:
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.orders", spark.createDataFrame([(1, 10.0), (2, 20.0)], "id bigint, amount double"),
                           primary_key=["id"])
    lh.create_branch("dev")
    lh.branch("dev").update("shop.orders", "id = 1", {"amount": "12.0"})
    lh.branch("main").update("shop.orders", "id = 1", {"amount": "15.0"})


def amounts(lh: Lakehouse, branch: str = "main"):
    return sorted(tuple(r) for r in lh.read("shop.orders", branch).collect())


def test_pause_status_resolve_continue_abort_and_a_driver_from_dbt(project, spark, tmp_path, capsys):
    lh = Lakehouse(spark, str(tmp_path / "warehouse"))
    conflicting_orders(lh, spark)
    head = lh.get_branch("main").head

    assert dbt(project, "run-operation", "merge_branch", "--args", "{src: dev, dest: main, on_conflict: pause}").success
    printed = capsys.readouterr().out
    assert "merge dev into main: paused (resolving data)" in printed and "bs_conflicts_main_shop_orders" in printed
    assert lh.get_branch("main").head == head

    assert dbt(project, "run-operation", "merge_status", "--args", "{dest: main}").success
    printed = capsys.readouterr().out
    assert "merge of dev into main: resolving data" in printed and "3.4 cells" in printed
    assert dbt(project, "run-operation", "count_open_conflicts").success
    assert "open conflicts: 1" in capsys.readouterr().out

    # abort leaves main as it was; pause again and resolve in bulk, then continue.
    assert dbt(project, "run-operation", "abort_merge", "--args", "{dest: main}").success
    assert lh.get_branch("main").head == head and lh.merge_status("main")["phase"] == "not started"
    assert dbt(project, "run-operation", "merge_branch", "--args", "{src: dev, dest: main, on_conflict: pause}").success
    assert dbt(project, "run-operation", "resolve_conflicts", "--args",
               "{dest: main, table: shop.orders, take: theirs}").success
    capsys.readouterr()
    assert dbt(project, "run-operation", "merge_branch", "--args", "{dest: main, continue: true}").success
    assert "merge dev into main: merged" in capsys.readouterr().out
    assert amounts(lh) == [(1, 12.0), (2, 20.0)]

    # A driver named by the project variable merges the next conflict by itself.
    lh.branch("dev").update("shop.orders", "id = 2", {"amount": "21.0"})
    lh.branch("main").update("shop.orders", "id = 2", {"amount": "25.0"})
    assert dbt(project, "run-operation", "merge_branch", "--args", "{src: dev, dest: main}",
               "--vars", "{merge_drivers: {shop.orders: larger_amount}}").success
    assert amounts(lh) == [(1, 12.0), (2, 25.0)]

    # UPDATE statements on the conflict relation: mark a row the rules merged as a conflict, then
    # set merged values, which resolves both rows.
    lh.branch("dev").update("shop.orders", "id = 1", {"amount": "13.0"})
    lh.branch("dev").update("shop.orders", "id = 2", {"amount": "23.0"})
    lh.branch("main").update("shop.orders", "id = 1", {"amount": "16.0"})
    assert dbt(project, "run-operation", "merge_branch", "--args", "{src: dev, dest: main, on_conflict: pause}").success
    capsys.readouterr()
    assert dbt(project, "run-operation", "update_conflicts", "--args", "{assignments: 'conflict = true', where: 'id = 2'}").success
    assert dbt(project, "run-operation", "count_open_conflicts").success
    assert "open conflicts: 2" in capsys.readouterr().out
    assert dbt(project, "run-operation", "update_conflicts", "--args",
               "{assignments: 'merged_amount = 99.0', where: 'id in (1, 2)'}").success
    assert dbt(project, "run-operation", "count_open_conflicts").success
    assert "open conflicts: 0" in capsys.readouterr().out
    assert dbt(project, "run-operation", "merge_branch", "--args", "{dest: main, continue: true}").success
    assert amounts(lh) == [(1, 99.0), (2, 99.0)]


def test_keyless_conflicts_a_driver_and_a_refused_merge_from_dbt(project, spark, tmp_path, capsys):
    """A keyless table updated on both branches in one segment (A3): its conflict relation resolved by
    UPDATE statements, a plain merge into the paused main refused, then a driver macro on the next A3."""
    lh = Lakehouse(spark, str(tmp_path / "warehouse"))
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.events", spark.createDataFrame([(1, 10), (2, 20), (3, 30)], "id bigint, qty bigint"))
    lh.create_branch("dev")
    lh.create_branch("hotfix")
    lh.branch("hotfix").insert("shop.events", spark.createDataFrame([(9, 90)], "id bigint, qty bigint"))
    lh.branch("dev").update("shop.events", "id = 1", {"qty": "11"})
    lh.branch("main").update("shop.events", "id = 2", {"qty": "22"})

    assert dbt(project, "run-operation", "merge_branch", "--args", "{src: dev, dest: main, on_conflict: pause}").success
    printed = capsys.readouterr().out
    assert "bs_conflicts_main_shop_events" in printed and "A3" in printed
    head = lh.get_branch("main").head
    refused = dbt(project, "run-operation", "merge_branch", "--args", "{src: hotfix, dest: main}")
    assert not refused.success
    assert ("a merge of 'dev' into 'main' is paused (resolving data): continue it (merge_branch with continue: "
            "true) or abort it (abort_merge main) first" in capsys.readouterr().out)
    assert lh.get_branch("main").head == head

    # Both rows only one side changed: accept their proposals, one by SQL, one by marking it resolved.
    assert dbt(project, "run-operation", "update_conflicts", "--args",
               "{table: shop.events, assignments: 'merged_qty = their_qty', where: 'base_id = 1'}").success
    assert dbt(project, "run-operation", "update_conflicts", "--args",
               "{table: shop.events, assignments: 'conflict = false', where: 'base_id = 2'}").success
    assert dbt(project, "run-operation", "merge_branch", "--args", "{dest: main, continue: true}").success
    assert sorted(tuple(r) for r in lh.read("shop.events", "main").collect()) == [(1, 11), (2, 22), (3, 30)]

    lh.branch("dev").update("shop.events", "id = 3", {"qty": "31"})
    lh.branch("main").update("shop.events", "id = 3", {"qty": "33"})
    assert dbt(project, "run-operation", "merge_branch", "--args", "{src: dev, dest: main}",
               "--vars", "{merge_drivers: {shop.events: larger_qty}}").success
    assert dbt(project, "run-operation", "merge_branch", "--args", "{src: hotfix, dest: main}").success
    assert sorted(tuple(r) for r in lh.read("shop.events", "main").collect()) == [(1, 11), (2, 22), (3, 33), (9, 90)]
