"""branch_changes from dbt: a relation in models, incremental consumption, run-operation output.

Source tables are written with the core (as a loader outside dbt would), one commit per change,
on the target's branch `cdc`; the models read their changes through the macros.
"""

import re

import pytest
from pyspark.sql import SparkSession

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.tests.util import run_dbt, run_dbt_and_capture

BRANCH = "cdc"

SOURCES = """
version: 2
sources:
  - name: shop
    schema: "{{ target.schema }}"
    tables:
      - name: orders
      - name: history
"""

# every change of orders since this model's last build, appended
ORDER_AUDIT = """
{{ config(materialized='incremental') }}
select id, status, amount, _change_type as change_type, _commit_id as commit_id
from {{ branch_changes_since_last_build(source('shop', 'orders')) }}
"""

# the same, folded per primary key
ORDER_NET_AUDIT = """
{{ config(materialized='incremental') }}
select id, status, _change_type as change_type, _commit_id as commit_id
from {{ branch_changes_since_last_build(source('shop', 'orders'), net=true) }}
"""

# an explicit range, `from` given by keyword
HISTORY_CHANGES = """
{{ config(materialized='table') }}
select id, status, _change_type, _commit_id, _commit_seq
from {{ branch_changes(source('shop', 'history'), from=var('cdc_from'), to=var('cdc_to')) }}
"""

# snapshot mode: from 0
HISTORY_SNAPSHOT = """
{{ config(materialized='table') }}
select id, status, _change_type, _commit_id
from {{ branch_changes(source('shop', 'history'), 0, var('cdc_to')) }}
"""

BAD_FROM = """
{{ config(materialized='table') }}
select * from {{ branch_changes(source('shop', 'history'), 'not_a_commit') }}
"""

CHANGES_AS_VIEW = """
{{ config(materialized='view') }}
select * from {{ branch_changes(source('shop', 'history'), 0) }}
"""


def _profile(unique_schema, warehouse_dir, spark_config):
    target = {
        "type": "branchspark",
        "method": "session",
        "branch": BRANCH,
        "create_branch_from": "main",
        "schema": unique_schema,
        "warehouse": warehouse_dir,
        "threads": 1,
        "spark_config": dict(spark_config),
    }
    return {"test": {"outputs": {"default": target}, "target": "default"}}


def table_lines(out: str):
    """The cells of each row of the Markdown-like tables in `out` (header rows included)."""
    rows = []
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("|") and not re.fullmatch(r"[|\-: ]+", line):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


class TestBranchChangesInDbt:
    @pytest.fixture(scope="class")
    def profiles_config_update(self, unique_schema, warehouse_dir, dbt_profile_target):
        return _profile(unique_schema, warehouse_dir, dbt_profile_target["spark_config"])

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "sources.yml": SOURCES,
            "order_audit.sql": ORDER_AUDIT,
            "order_net_audit.sql": ORDER_NET_AUDIT,
            "history_changes.sql": HISTORY_CHANGES,
            "history_snapshot.sql": HISTORY_SNAPSHOT,
            "bad_from.sql": BAD_FROM,
            "changes_as_view.sql": CHANGES_AS_VIEW,
        }

    @pytest.fixture(scope="class")
    def lakehouse(self, project, warehouse_dir):
        return Lakehouse(SparkSession.getActiveSession(), warehouse=warehouse_dir)

    def change(self, lakehouse, message, apply):
        """One commit on the branch; returns its id."""
        with lakehouse.transaction(BRANCH, message=message) as tx:
            apply(tx)
        return lakehouse.get_branch(BRANCH).head

    def create_table(self, lakehouse, table, rows):
        spark = lakehouse.spark
        df = spark.createDataFrame(rows, "id bigint, status string, amount double")

        def create(tx):
            tx.create_database(table.split(".")[0], if_not_exists=True)
            tx.create_table_as(table, df, primary_key=["id"])

        return self.change(lakehouse, f"create {table}", create)

    @pytest.fixture(scope="class")
    def history(self, project, lakehouse):
        """schema.history: A created (1, 2, 3), B inserts 4, C updates 2, D deletes 3, E updates 2 again."""
        table = f"{project.test_schema}.history"
        spark = lakehouse.spark
        commits = {"A": self.create_table(lakehouse, table, [(1, "new", 10.0), (2, "new", 20.0), (3, "new", 30.0)])}
        commits["B"] = self.change(lakehouse, "B", lambda tx: tx.insert(
            table, spark.createDataFrame([(4, "new", 40.0)], "id bigint, status string, amount double")))
        commits["C"] = self.change(lakehouse, "C", lambda tx: tx.update(table, "id = 2", {"status": "'shipped'"}))
        commits["D"] = self.change(lakehouse, "D", lambda tx: tx.delete(table, "id = 3"))
        commits["E"] = self.change(lakehouse, "E", lambda tx: tx.update(table, "id = 2", {"status": "'delivered'"}))
        return commits

    def rows(self, lakehouse, project, table):
        df = lakehouse.read(f"{project.test_schema}.{table}", at=BRANCH)
        return sorted(tuple(r) for r in df.collect())

    # ------------------------------------------------------------------------------------
    def test_incremental_model_consumes_each_change_once(self, project, lakehouse):
        orders = f"{project.test_schema}.orders"
        spark = lakehouse.spark
        created = self.create_table(lakehouse, orders, [(1, "new", 10.0), (2, "new", 20.0), (3, "new", 30.0)])
        created_seq = lakehouse.store.get_commit(created).seq

        # first build: snapshot mode, every current row as an insert labelled with the head it read
        run_dbt(["run", "--select", "order_audit", "order_net_audit"])
        audit = self.rows(lakehouse, project, "order_audit")
        assert [row[:4] for row in audit] == [(1, "new", 10.0, "insert"), (2, "new", 20.0, "insert"),
                                              (3, "new", 30.0, "insert")]
        labels = {row[4] for row in audit}
        assert len(labels) == 1 and lakehouse.store.get_commit(labels.pop()).seq >= created_seq
        assert [row[:3] for row in self.rows(lakehouse, project, "order_net_audit")] == [
            (1, "new", "insert"), (2, "new", "insert"), (3, "new", "insert")]
        first_build = audit

        # inserts, updates (key 2 twice) and deletes between two runs
        b = self.change(lakehouse, "B", lambda tx: tx.insert(
            orders, spark.createDataFrame([(4, "new", 40.0)], "id bigint, status string, amount double")))
        c = self.change(lakehouse, "C", lambda tx: tx.update(orders, "id = 2", {"status": "'shipped'"}))
        d = self.change(lakehouse, "D", lambda tx: tx.delete(orders, "id = 3"))
        e = self.change(lakehouse, "E", lambda tx: tx.update(orders, "id = 2", {"status": "'delivered'"}))

        run_dbt(["run", "--select", "order_audit", "order_net_audit"])
        second_build = sorted(first_build + [
            (4, "new", 40.0, "insert", b),
            (2, "new", 20.0, "delete", c), (2, "shipped", 20.0, "insert", c),
            (3, "new", 30.0, "delete", d),
            (2, "shipped", 20.0, "delete", e), (2, "delivered", 20.0, "insert", e),
        ])
        assert self.rows(lakehouse, project, "order_audit") == second_build
        # net: key 2's two updates fold into one delete (first commit) + one insert (last commit)
        net = self.rows(lakehouse, project, "order_net_audit")
        assert [row[:3] for row in net if row[3] not in (b, c, d, e)] == [
            (1, "new", "insert"), (2, "new", "insert"), (3, "new", "insert")]
        assert sorted(row for row in net if row[3] in (b, c, d, e)) == sorted([
            (4, "new", "insert", b), (2, "new", "delete", c), (2, "delivered", "insert", e), (3, "new", "delete", d)])

        # nothing changed: a rebuild adds nothing (each change is consumed once)
        run_dbt(["run", "--select", "order_audit"])
        assert self.rows(lakehouse, project, "order_audit") == second_build

        # the next change after a no-op build is consumed exactly once
        f = self.change(lakehouse, "F", lambda tx: tx.delete(orders, "id = 1"))
        run_dbt(["run", "--select", "order_audit"])
        assert self.rows(lakehouse, project, "order_audit") == sorted(second_build + [(1, "new", 10.0, "delete", f)])

        # --full-refresh starts over from a snapshot of the source
        run_dbt(["run", "--select", "order_audit", "--full-refresh"])
        assert [row[:4] for row in self.rows(lakehouse, project, "order_audit")] == [
            (2, "delivered", 20.0, "insert"), (4, "new", 40.0, "insert")]

    def test_model_over_an_explicit_range_and_a_snapshot(self, project, lakehouse, history):
        a, b, c, d = history["A"], history["B"], history["C"], history["D"]
        run_dbt(["run", "--select", "history_changes", "history_snapshot", "--vars", f"{{cdc_from: {a}, cdc_to: {d}}}"])

        df = lakehouse.read(f"{project.test_schema}.history_changes", at=BRANCH)
        changes = [tuple(r) for r in df.orderBy("_commit_seq", "_change_type").collect()]
        seq = {k: lakehouse.store.get_commit(v).seq for k, v in history.items()}
        assert changes == [
            (4, "new", "insert", b, seq["B"]),
            (2, "new", "delete", c, seq["C"]), (2, "shipped", "insert", c, seq["C"]),
            (3, "new", "delete", d, seq["D"]),
        ]
        # snapshot of D: its rows, all inserts labelled D, no deletes
        assert self.rows(lakehouse, project, "history_snapshot") == [
            (1, "new", "insert", d), (2, "shipped", "insert", d), (4, "new", "insert", d)]

    def test_run_operation_prints_a_summary(self, project, lakehouse, history, capsys):
        table = f"{project.test_schema}.history"
        a, b, c, d, e = (history[k] for k in "ABCDE")

        def printed(args: str) -> str:
            capsys.readouterr()
            run_dbt(["run-operation", "branch_changes", "--args", args])
            return capsys.readouterr().out

        out = printed(f"{{table: {table}, from: {a}, to: {d}}}")
        assert f"changes of {table}, from {a[:12]} to {d[:12]}: 2 deleted, 2 inserted in 3 commit(s)" in out
        lines = table_lines(out)
        assert lines[0] == ["commit", "time", "deleted", "inserted", "message"]
        assert [row[:1] + row[2:] for row in lines[1:4]] == [[b[:12], "0", "1", "B"], [c[:12], "1", "1", "C"],
                                                            [d[:12], "1", "0", "D"]]
        assert "first 4 of 4 changes" in out
        assert lines[4] == ["id", "status", "amount", "_change_type", "_commit_id"]
        assert lines[5] == ["4", "new", "40.0", "insert", b[:12]]
        assert lines[6:8] == [["2", "new", "20.0", "delete", c[:12]], ["2", "shipped", "20.0", "insert", c[:12]]]
        assert lines[8] == ["3", "new", "30.0", "delete", d[:12]] and len(lines) == 9

        # `limit`, and a time as `from` (the last commit at or before it: A)
        a_time = lakehouse.store.get_commit(a).ts.isoformat()
        out = printed(f"{{table: {table}, from: '{a_time}', to: {d}, limit: 1}}")
        assert f"from {a_time} ({a[:12]}) to {d[:12]}: 2 deleted, 2 inserted" in out and "first 1 of 4 changes" in out
        assert table_lines(out)[-1] == ["4", "new", "40.0", "insert", b[:12]]

        # snapshot mode; net mode (key 2's two updates fold into one delete + one insert)
        out = printed(f"{{table: {table}, from: 0, to: {d}}}")
        assert f"snapshot to {d[:12]}: 0 deleted, 3 inserted in 1 commit(s)" in out
        out = printed(f"{{table: {table}, from: {a}, to: {e}, net: true}}")
        assert f"from {a[:12]} to {e[:12]} (net per key): 2 deleted, 2 inserted" in out

        # `branch`: `to` defaults to that branch's head
        lakehouse.create_branch("cdc_side", source=BRANCH)
        lakehouse.branch("cdc_side").delete(table, "id = 4")
        side_head = lakehouse.get_branch("cdc_side").head
        out = printed(f"{{table: {table}, from: {e}, branch: cdc_side}}")
        assert f"from {e[:12]} to cdc_side ({side_head[:12]}): 1 deleted, 0 inserted" in out
        out = printed(f"{{table: {table}, from: {e}}}")
        assert f"from {e[:12]} to {BRANCH} ({lakehouse.get_branch(BRANCH).head[:12]}): 0 deleted, 0 inserted" in out
        assert "no changes" in out

    def test_bad_input_is_one_clear_error(self, project, history):
        table = f"{project.test_schema}.history"
        _, out = run_dbt_and_capture(["run-operation", "branch_changes", "--args", f"{{table: {table}, from: nope}}"],
                                     expect_pass=False)
        assert "no commit matches 'nope'" in out
        _, out = run_dbt_and_capture(["run-operation", "branch_changes", "--args", "{from: 0}"], expect_pass=False)
        assert "branch_changes needs a table" in out
        _, out = run_dbt_and_capture(["run-operation", "branch_changes", "--args",
                                      f"{{table: {project.test_schema}.missing, from: 0}}"], expect_pass=False)
        assert f"table '{project.test_schema}.missing' does not exist" in out

        _, out = run_dbt_and_capture(["run", "--select", "bad_from"], expect_pass=False)
        assert "no commit matches 'not_a_commit'" in out
        _, out = run_dbt_and_capture(["run", "--select", "changes_as_view"], expect_pass=False)
        assert "materialize changes_as_view as table or incremental" in out
