"""Each materialization records the core operations of SPEC section 2, one commit per build."""

import datetime

import pytest
from pyspark.sql import SparkSession

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.tests.util import run_dbt, write_file

EVENTS_V1 = """id,day,kind,amount
1,2024-01-01,a,10
2,2024-01-01,b,20
3,2024-01-02,a,30
4,2024-01-03,b,40
"""

# day 2024-01-02 restated, day 2024-01-04 new; id 2 changes
EVENTS_V2 = """id,day,kind,amount
1,2024-01-01,a,10
2,2024-01-01,b,25
3,2024-01-02,a,31
5,2024-01-02,c,5
4,2024-01-03,b,40
6,2024-01-04,a,60
"""

BY_DAY = """
{{ config(materialized='incremental', incremental_strategy='insert_overwrite', partition_by='day') }}
select day, kind, sum(amount) as amount from {{ ref('events') }}
{% if is_incremental() %} where day >= '2024-01-02' {% endif %}
group by day, kind
"""

DELETE_INSERT = """
{{ config(materialized='incremental', incremental_strategy='delete+insert', unique_key='id') }}
select id, day, amount from {{ ref('events') }}
{% if is_incremental() %} where id in (2, 5, 6) {% endif %}
"""

REBUILT = """
{{ config(materialized='table') }}
select id, {{ var('amount_expr', 'amount') }} as amount from {{ ref('events') }}
"""


def d(text):
    return datetime.date.fromisoformat(text)


class EventsSeeded:
    """Test classes whose project starts with the `events` seed at its first version."""

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"events.csv": EVENTS_V1}


class TestOperationsPerMaterialization(EventsSeeded):
    @pytest.fixture(scope="class")
    def models(self):
        return {"by_day.sql": BY_DAY, "delete_insert.sql": DELETE_INSERT, "rebuilt.sql": REBUILT}

    @pytest.fixture(scope="class")
    def lakehouse(self, project, warehouse_dir):
        return Lakehouse(SparkSession.getActiveSession(), warehouse=warehouse_dir)

    def last_ops(self, lakehouse, model):
        for commit in lakehouse.log("main", limit=20):
            if commit.message.endswith(f": model.test.{model}"):
                return {op.op for op in commit.operations}
        raise AssertionError(f"no commit for {model}")

    def rows(self, project, lakehouse, table, order_by):
        df = lakehouse.read(f"{project.test_schema}.{table}", at="main")
        return [tuple(r) for r in df.orderBy(*order_by).collect()]

    def test_operations(self, project, lakehouse):
        run_dbt(["seed"])
        run_dbt(["run"])
        assert self.last_ops(lakehouse, "rebuilt") == {"create", "insert"}

        write_file(EVENTS_V2, project.project_root, "seeds", "events.csv")
        run_dbt(["seed"])
        run_dbt(["run", "--vars", "{amount_expr: 'cast(amount as double)'}"])

        # insert_overwrite: only the partitions the new rows fall in are replaced
        assert self.last_ops(lakehouse, "by_day") == {"overwrite"}
        assert self.rows(project, lakehouse, "by_day", ["day", "kind"]) == [
            (d("2024-01-01"), "a", 10),
            (d("2024-01-01"), "b", 20),  # not restated: day 1 is outside the incremental filter
            (d("2024-01-02"), "a", 31),
            (d("2024-01-02"), "c", 5),
            (d("2024-01-03"), "b", 40),
            (d("2024-01-04"), "a", 60),
        ]

        # delete+insert: the new rows' keys are deleted, then the rows inserted
        assert self.last_ops(lakehouse, "delete_insert") == {"delete", "insert"}
        assert self.rows(project, lakehouse, "delete_insert", ["id"]) == [
            (1, d("2024-01-01"), 10),
            (2, d("2024-01-01"), 25),
            (3, d("2024-01-02"), 30),
            (4, d("2024-01-03"), 40),
            (5, d("2024-01-02"), 5),
            (6, d("2024-01-04"), 60),
        ]

        # a rebuild whose schema changed: overwrite plus alter column
        assert self.last_ops(lakehouse, "rebuilt") == {"overwrite", "alter column"}

    def test_sql_statements_on_branch_relations(self, project, lakehouse):
        """Hook and test SQL that writes a branch relation goes to the core (one commit each)."""
        schema = project.test_schema
        run_dbt(["seed", "--full-refresh"])
        project.run_sql(f"update {schema}.events set kind = 'z', amount = amount + 1 where id = 1")
        project.run_sql(f"delete from {schema}.events where id = 6")
        project.run_sql(f"insert into {schema}.events (id, day, kind) values (7, '2024-01-05', 'it\\'s')")
        assert self.rows(project, lakehouse, "events", ["id"])[0] == (1, d("2024-01-01"), "z", 11)
        assert (7, d("2024-01-05"), "it's", None) in self.rows(project, lakehouse, "events", ["id"])
        assert 6 not in [r[0] for r in self.rows(project, lakehouse, "events", ["id"])]
        ops = [{op.op for op in c.operations} for c in lakehouse.log("main", limit=3)]
        assert ops == [{"insert"}, {"delete"}, {"update"}]
        count = project.run_sql(f"select count(*) from {schema}.events where kind = 'z'", fetch="one")
        assert count[0] == 1


COPIED = """
{{ config(materialized='table',
          post_hook="create or replace table {{ this.schema }}.copy_of_copied as select * from {{ this }}") }}
select id, amount from {{ ref('events') }}
"""


class TestPostHookReadsTheRebuild(EventsSeeded):
    """A post-hook reads the table its model just rebuilt: the staged rows, not the earlier version whose
    temp view the session still had (the staged table is shown when a statement first names it)."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"copied.sql": COPIED}

    def test_the_hook_reads_the_staged_rows(self, project, warehouse_dir):
        lakehouse = Lakehouse(SparkSession.getActiveSession(), warehouse=warehouse_dir)

        def copy() -> list:
            rows = lakehouse.read(f"{project.test_schema}.copy_of_copied", at="main").orderBy("id").collect()
            return [tuple(r) for r in rows]

        run_dbt(["seed"])
        run_dbt(["run"])
        assert copy() == [(1, 10), (2, 20), (3, 30), (4, 40)]
        write_file(EVENTS_V2, project.project_root, "seeds", "events.csv")
        run_dbt(["seed"])
        run_dbt(["run"])  # the same session: `copied`'s temp view shows the first build until the hook names it
        assert copy() == [(1, 10), (2, 25), (3, 31), (4, 40), (5, 5), (6, 60)]


HOOKED = """
{{ config(materialized='table',
          pre_hook=[{"sql": "insert into {{ this.schema }}.hook_log select 'pre, before the build', count(*), -1
                             from {{ this.schema }}.hook_log", "transaction": false},
                    "insert into {{ this.schema }}.hook_log select 'pre, in the build', count(*), -1
                     from {{ this.schema }}.hook_log"],
          post_hook=["insert into {{ this.schema }}.hook_log select 'post, in the build', count(*),
                      (select count(*) from {{ this }}) from {{ this.schema }}.hook_log",
                     {"sql": "insert into {{ this.schema }}.hook_log select 'post, after the commit', count(*),
                              (select count(*) from {{ this }}) from {{ this.schema }}.hook_log",
                      "transaction": false}]) }}
select id, amount from {{ ref('events') }}
"""

SNAPSHOTTED = """
{% snapshot events_snapshot %}
{{ config(target_schema=schema, unique_key='id', strategy='check', check_cols=['amount']) }}
select id, amount from {{ ref('events') }}
{% endsnapshot %}
"""


class TestHooksAroundTheBuild(EventsSeeded):
    """Every materialization runs its hooks through the same two macros (model_build.sql): pre-hooks before
    and in the build, post-hooks in the build and after its commit, each once and in that order; a snapshot drops its
    staging view (the body it passes to the end of the build)."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"hooked.sql": HOOKED}

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"events_snapshot.sql": SNAPSHOTTED}

    def test_hooks_run_once_each_in_order_and_see_the_build(self, project, warehouse_dir):
        lakehouse = Lakehouse(SparkSession.getActiveSession(), warehouse=warehouse_dir)
        schema = project.test_schema
        project.run_sql(f"create table {schema}.hook_log (name string, earlier bigint, model_rows bigint)")
        run_dbt(["seed"])
        run_dbt(["run"])
        logged = [tuple(r) for r in lakehouse.read(f"{schema}.hook_log", at="main").orderBy("earlier").collect()]
        assert logged == [("pre, before the build", 0, -1), ("pre, in the build", 1, -1),
                          ("post, in the build", 2, 4), ("post, after the commit", 3, 4)]

    def test_a_snapshot_leaves_no_staging_view(self, project):
        spark = SparkSession.getActiveSession()
        run_dbt(["seed"])
        run_dbt(["snapshot"])
        write_file(EVENTS_V2, project.project_root, "seeds", "events.csv")
        run_dbt(["seed"])
        run_dbt(["snapshot"])  # the second run stages the changes in a session view, then drops it
        # other tests of this worker's session may leave views of failed builds: only this snapshot's counts
        temp_views = [r.tableName for r in spark.sql("SHOW TABLES").where("isTemporary").collect()]
        assert "events_snapshot__dbt_tmp" not in temp_views
        rows = project.run_sql(f"select count(*) from {project.test_schema}.events_snapshot", fetch="one")
        assert rows[0] == 4 + 2 + 2  # ids 2 and 3 changed (a new version each), ids 5 and 6 new
