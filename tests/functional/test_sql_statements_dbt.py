"""Branch statements in the SQL dbt sends (SPEC 9): an on-run-start hook `MERGE BRANCH dev` (no TO: the
target's branch, main; with the project's views, as run-operation merge_branch) and an on-run-end hook
`CREATE BRANCH`, `run_query` and `{% call statement %}` returning result sets, reads at a version or a time and
the table functions, a paused merge shown and aborted, another resolved and continued, a conflicting MERGE
BRANCH stopping with its report, `dbt show --inline` (USE BRANCH refused there: the target names the branch),
and an analysis run by `dbt show --select`."""
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
  {% set at_time = run_query("select amount from shop.orders TIMESTAMP AS OF '" ~ var('base_ts') ~ "' where id = 1") %}
  {{ print("amount of 1 at the base's time: " ~ at_time.columns[0].values()[0]) }}
  {% do run_query("MERGE BRANCH third WITH (on_conflict = 'pause')") %}
  {% set resolved = run_query("RESOLVE CONFLICTS ON main TABLE shop.orders TAKE THEIRS") %}
  {{ print("resolved: " ~ resolved.columns['phase'].values()[0] ~ ", open: " ~ resolved.columns['open_conflicts'].values()[0]) }}
  {% set continued = run_query("CONTINUE MERGE") %}
  {{ print("continued: " ~ continued.columns['status'].values()[0] ~ " " ~ continued.columns['commit'].values()[0]) }}
  {% set amount = run_query("select amount from shop.orders where id = 1") %}
  {{ print("amount of 1 after the merge: " ~ amount.columns[0].values()[0]) }}
  {% do run_query("MERGE BRANCH other") %}
{% endmacro %}
"""


@pytest.fixture
def project(tmp_path):
    project = tmp_path / "project"
    (project / "macros").mkdir(parents=True)
    (project / "models").mkdir()
    (project / "macros" / "branch_sql.sql").write_text(MACROS)
    (project / "analyses").mkdir()
    (project / "analyses" / "at_base.sql").write_text(
        "select id, _change_type from branch_changes('shop.orders', '{{ var(\"base\") }}', 'dev') "
        "union all select id, 'at base time' from shop.orders TIMESTAMP AS OF '{{ var(\"base_ts\") }}'")
    (project / "models" / "order_count.sql").write_text("select count(*) as n from shop.orders")
    (project / "models" / "big_orders.sql").write_text(
        "{{ config(materialized='view') }} select id from shop.orders where amount > 20")
    (project / "dbt_project.yml").write_text(yaml.safe_dump({
        "name": "shop", "version": "1.0", "config-version": 2, "profile": "shop", "macro-paths": ["macros"],
        "model-paths": ["models"], "analysis-paths": ["analyses"],
        "on-run-start": ["MERGE BRANCH dev"], "on-run-end": ["CREATE BRANCH IF NOT EXISTS after_run"]}))
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
    base_ts = lh.log("main", limit=1)[0].ts.isoformat()
    lh.create_branch("dev")
    lh.create_branch("other")
    lh.create_branch("third")
    lh.branch("dev").insert("shop.orders", spark.createDataFrame([(3, 30.0)], "id bigint, amount double"))
    lh.branch("dev").create_view("shop.big_orders", "select id from `shop.orders` where amount > 20")
    lh.branch("other").update("shop.orders", "id = 1", {"amount": "12.0"})
    lh.branch("third").update("shop.orders", "id = 1", {"amount": "13.0"})
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
    # the on-run-end hook's CREATE BRANCH (no FROM: the target's branch, not the run branch) starts at main as
    # the on-run-start hook left it: the run's models land on main after the hooks
    assert lh.get_branch("after_run").head == merges[0].id != lh.get_branch("main").head

    capsys.readouterr()
    head = lh.get_branch("main").head
    ran = dbt(project, "run-operation", "branch_sql", "--vars", yaml.safe_dump({"base": base, "base_ts": base_ts}))
    printed = capsys.readouterr().out
    assert "log rows: 2; first: " in printed
    assert "rows at base: 2; now: 3" in printed
    assert "changes: 1,1,3 delete,insert,insert" in printed
    assert "branches: after_run,dev,feature,main,other,third" in printed
    assert "diff: modified,added" in printed
    assert "merge status of main: not started" in printed
    assert "paused: paused, resolving data, open: 1" in printed
    assert "abort: ABORT MERGE: the merge into main is aborted, main is as it was" in printed
    assert "amount of 1 at the base's time: 10.0" in printed  # TIMESTAMP AS OF: main before its update
    # a paused merge of third, its conflict on order 1 resolved taking third's side, then continued: one merge
    # commit with both parents, and the session reads main as merged
    assert "resolved: resolving data, open: 0" in printed
    merged = lh.log("main", limit=1)[0]
    assert merged.id != head and list(merged.parents) == [head, lh.get_branch("third").head]
    assert f"continued: merged {merged.id[:12]}" in printed
    assert "amount of 1 after the merge: 13.0" in printed
    # the conflicting MERGE BRANCH other stops the operation with its report and the one-line reason
    assert not ran.success
    assert "merge other into main: conflicts" in printed and "| shop.orders" in printed
    assert "stopped with 1 conflict(s), nothing changed on 'main'" in printed
    assert lh.get_branch("main").head == merged.id and not lh.branch_exists("feature")
    head = merged.id

    capsys.readouterr()
    assert dbt(project, "show", "--inline", "SHOW LOG LIMIT 3").success
    printed = capsys.readouterr().out
    assert merges[0].id[:12] in printed and "| commit" in printed
    assert not dbt(project, "show", "--inline", "MERGE BRANCH dev TO").success
    assert "syntax error at line 1, column 20: expected the branch to merge into after TO" in capsys.readouterr().out
    # USE BRANCH is refused in dbt, whose target names the branch: one line saying so, nothing changes
    assert not dbt(project, "show", "--inline", "USE BRANCH dev").success
    refused = [line for line in capsys.readouterr().out.splitlines() if "USE BRANCH" in line]
    assert len(refused) == 1 and refused[0].endswith(
        "USE BRANCH switches a SQL session's branch; in dbt the target's `branch` names it: run with a target on "
        "that branch instead"), refused
    # an analysis: the table function and a read at a time, compiled and run by dbt show
    assert dbt(project, "show", "--select", "at_base", "--vars",
               yaml.safe_dump({"base": base, "base_ts": base_ts})).success
    shown = capsys.readouterr().out
    assert "|  3 | insert       |\n|  1 | at base time |\n|  2 | at base time |" in shown, shown
    assert lh.get_branch("main").head == head
