"""Branch statements in the SQL dbt sends (SPEC 9): an on-run-start hook `MERGE BRANCH dev` (no TO: the
target's branch, main; with the project's views, as run-operation merge_branch), `run_query` and `{% call statement %}` returning result sets, reads at a version and the
table functions, a paused merge shown and aborted, a conflicting MERGE BRANCH stopping with its report, and
`dbt show --inline`."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.cli.main import dbtRunner

MACROS = """
{% macro branch_sql() %}
  {% do run_query("CREATE BRANCH IF NOT EXISTS feature") %}
  {% call statement('log', fetch_result=True) %}SHOW LOG LIMIT 2{% endcall %}
  {% set log = load_result('log')['table'] %}
  {{ print("log rows: " ~ (log.rows | length) ~ "; first: " ~ log.columns['message'].values()[0]) }}
  {% set at_base = run_query("select count(*) from shop.orders VERSION AS OF '" ~ var('base') ~ "'") %}
  {% set now = run_query("select count(*) from shop.orders") %}
  {{ print("rows at base: " ~ at_base.columns[0].values()[0] ~ "; now: " ~ now.columns[0].values()[0]) }}
  {% set changes = run_query("select id, _change_type from branch_changes('shop.orders', '" ~ var('base') ~ "', 'main') order by id") %}
  {{ print("changes: " ~ changes.columns['id'].values() | join(',') ~ " " ~ changes.columns['_change_type'].values() | join(',')) }}
  {% set branches = run_query("SHOW BRANCHES") %}
  {{ print("branches: " ~ branches.columns['branch'].values() | sort | join(',')) }}
  {% set diff = run_query("select _diff_type, id from branch_diff('" ~ var('base') ~ "', 'main', 'shop.orders') order by id") %}
  {{ print("diff: " ~ diff.columns['_diff_type'].values() | join(',')) }}
  {% do run_query("DROP BRANCH feature") %}
  {% set status = run_query("SHOW MERGE STATUS") %}
  {{ print("merge status of " ~ status.columns['dest'].values()[0] ~ ": " ~ status.columns['phase'].values()[0]) }}
  {% set paused = run_query("MERGE BRANCH other WITH (on_conflict = 'pause')") %}
  {% set status = run_query("SHOW MERGE STATUS ON main") %}
  {{ print("paused: " ~ paused.columns['status'].values()[0] ~ ", " ~ status.columns['phase'].values()[0] ~ ", open: " ~ status.columns['open_conflicts'].values()[0]) }}
  {% call statement('abort', fetch_result=True) %}ABORT MERGE{% endcall %}
  {{ print("abort: " ~ load_result('abort')['response']) }}
  {% do run_query("MERGE BRANCH other") %}
{% endmacro %}
"""


@pytest.fixture
def project(tmp_path):
    project = tmp_path / "project"
    (project / "macros").mkdir(parents=True)
    (project / "models").mkdir()
    (project / "macros" / "branch_sql.sql").write_text(MACROS)
    (project / "models" / "order_count.sql").write_text("select count(*) as n from shop.orders")
    (project / "models" / "big_orders.sql").write_text(
        "{{ config(materialized='view') }} select id from shop.orders where amount > 20")
    (project / "dbt_project.yml").write_text(yaml.safe_dump({
        "name": "shop", "version": "1.0", "config-version": 2, "profile": "shop", "macro-paths": ["macros"],
        "model-paths": ["models"], "on-run-start": ["MERGE BRANCH dev"]}))
    output = {"type": "branchspark", "method": "session", "branch": "main", "schema": "shop",
              "warehouse": str(tmp_path / "warehouse"), "threads": 1,
              "spark_config": {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "1"}}
    (project / "profiles.yml").write_text(yaml.safe_dump({"shop": {"target": "main", "outputs": {"main": output}}}))
    return project


def dbt(project: Path, *args: str):
    return dbtRunner().invoke([*args, "--project-dir", str(project), "--profiles-dir", str(project)])


def test_branch_statements_in_a_hook_run_query_statement_and_show(project, spark, tmp_path, capsys):
    lh = Lakehouse(spark, str(tmp_path / "warehouse"))
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.orders", spark.createDataFrame([(1, 10.0), (2, 20.0)], "id bigint, amount double"),
                           primary_key=["id"])
    base = lh.get_branch("main").head
    lh.create_branch("dev")
    lh.create_branch("other")
    lh.branch("dev").insert("shop.orders", spark.createDataFrame([(3, 30.0)], "id bigint, amount double"))
    lh.branch("dev").create_view("shop.big_orders", "select id from `shop.orders` where amount > 20")
    lh.branch("other").update("shop.orders", "id = 1", {"amount": "12.0"})
    lh.branch("main").update("shop.orders", "id = 1", {"amount": "15.0"})
    main_before, dev_head = lh.get_branch("main").head, lh.get_branch("dev").head

    # the hook's MERGE BRANCH dev merges into the target's branch, main: one merge commit with both parents,
    # carrying the project's views as run-operation merge_branch does (the run builds only order_count)
    assert dbt(project, "run", "--select", "order_count").success
    merges = [c for c in lh.log("main") if len(c.parents) == 2 and dev_head in c.parents]
    assert len(merges) == 1 and merges[0].parents[0] == main_before
    assert sorted(r["id"] for r in lh.read("shop.orders").collect()) == [1, 2, 3]
    assert lh.read("shop.order_count").first()["n"] == 3  # the run read main as merged
    assert [r["id"] for r in lh.read("shop.big_orders").collect()] == [3]  # the view came with the merge

    capsys.readouterr()
    head = lh.get_branch("main").head
    ran = dbt(project, "run-operation", "branch_sql", "--vars", yaml.safe_dump({"base": base}))
    printed = capsys.readouterr().out
    assert "log rows: 2; first: " in printed
    assert "rows at base: 2; now: 3" in printed
    assert "changes: 1,1,3 delete,insert,insert" in printed
    assert "branches: dev,feature,main,other" in printed
    assert "diff: modified,added" in printed
    assert "merge status of main: not started" in printed
    assert "paused: paused, resolving data, open: 1" in printed
    assert "abort: ABORT MERGE: the merge into main is aborted, main is as it was" in printed
    # the conflicting MERGE BRANCH other stops the operation with its report and the one-line reason
    assert not ran.success
    assert "merge other into main: conflicts" in printed and "| shop.orders" in printed
    assert "stopped with 1 conflict(s), nothing changed on 'main'" in printed
    assert lh.get_branch("main").head == head and not lh.branch_exists("feature")

    capsys.readouterr()
    assert dbt(project, "show", "--inline", "SHOW LOG LIMIT 3").success
    printed = capsys.readouterr().out
    assert merges[0].id[:12] in printed and "| commit" in printed
    assert not dbt(project, "show", "--inline", "MERGE BRANCH dev TO").success
    assert "syntax error at line 1, column 20: expected the branch to merge into after TO" in capsys.readouterr().out
    assert lh.get_branch("main").head == head
