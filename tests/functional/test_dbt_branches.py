"""The same dbt project built on two branch targets with different seed data.

Each branch must hold exactly its own rows, and `main` (which both branches
were created from) must be left as it was.
"""

import pytest
from pyspark.sql import SparkSession

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

SEED_A = """id,name,city,score
1,Ada,London,10
2,Seán O'Brien,Dublin,
3,"Tanaka, Yuki",Tokyo,7
"""

SEED_B = """id,name,city,score
1,Ada,Paris,12
4,Grace,New York,9
"""

STG_PEOPLE = """
select id, name, coalesce(city, 'unknown') as city, score from {{ ref('people') }}
"""

CITY_SCORES = """
{{ config(materialized='table') }}
select city, count(*) as people, sum(score) as total_score
from {{ ref('stg_people') }}
group by city
"""

PEOPLE_LATEST = """
{{ config(materialized='incremental', unique_key='id') }}
select id, name, city, score, '{{ target.branch }}' as built_on from {{ ref('stg_people') }}
"""


def _profile(unique_schema, warehouse_dir, spark_config):
    def target(branch, **extra):
        return {
            "type": "branchspark",
            "method": "session",
            "branch": branch,
            "schema": unique_schema,
            "warehouse": warehouse_dir,
            "threads": 1,
            "spark_config": dict(spark_config),
            **extra,
        }

    return {
        "test": {
            "outputs": {
                "default": target("main"),
                "branch_a": target("feature_a", create_branch_from="main"),
                "branch_b": target("feature_b", create_branch_from="main"),
                "missing": target("no_such_branch"),
            },
            "target": "default",
        }
    }


class TestTwoBranchTargets:
    @pytest.fixture(scope="class")
    def profiles_config_update(self, unique_schema, warehouse_dir, dbt_profile_target):
        return _profile(unique_schema, warehouse_dir, dbt_profile_target["spark_config"])

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"people.csv": SEED_A}

    @pytest.fixture(scope="class")
    def models(self):
        return {"stg_people.sql": STG_PEOPLE, "city_scores.sql": CITY_SCORES, "people_latest.sql": PEOPLE_LATEST}

    @pytest.fixture(scope="class")
    def lakehouse(self, project, warehouse_dir):
        return Lakehouse(SparkSession.getActiveSession(), warehouse=warehouse_dir)

    def rows(self, lakehouse, branch, table, order_by):
        df = lakehouse.read(f"{self.schema}.{table}", at=branch)
        return [tuple(r) for r in df.orderBy(order_by).collect()]

    def test_branches_hold_their_own_rows(self, project, lakehouse):
        self.schema = project.test_schema
        main_head = lakehouse.get_branch("main").head

        # branch A: seed A; branch B: the same project with seed B
        run_dbt(["seed", "--target", "branch_a"])
        run_dbt(["run", "--target", "branch_a"])
        write_file(SEED_B, project.project_root, "seeds", "people.csv")
        run_dbt(["seed", "--target", "branch_b"])
        run_dbt(["run", "--target", "branch_b"])

        # seeds: NULL cells are NULL, quotes and commas survive
        assert self.rows(lakehouse, "feature_a", "people", "id") == [
            (1, "Ada", "London", 10),
            (2, "Seán O'Brien", "Dublin", None),
            (3, "Tanaka, Yuki", "Tokyo", 7),
        ]
        assert self.rows(lakehouse, "feature_b", "people", "id") == [(1, "Ada", "Paris", 12), (4, "Grace", "New York", 9)]

        assert self.rows(lakehouse, "feature_a", "city_scores", "city") == [
            ("Dublin", 1, None),
            ("London", 1, 10),
            ("Tokyo", 1, 7),
        ]
        assert self.rows(lakehouse, "feature_b", "city_scores", "city") == [("New York", 1, 9), ("Paris", 1, 12)]
        assert self.rows(lakehouse, "feature_a", "people_latest", "id") == [
            (1, "Ada", "London", 10, "feature_a"),
            (2, "Seán O'Brien", "Dublin", None, "feature_a"),
            (3, "Tanaka, Yuki", "Tokyo", 7, "feature_a"),
        ]

        # an incremental merge on B (unique_key id) changes B only
        write_file(SEED_B.replace("Paris,12", "Lyon,15"), project.project_root, "seeds", "people.csv")
        run_dbt(["seed", "--target", "branch_b"])
        run_dbt(["run", "--target", "branch_b", "--select", "people_latest"])
        assert self.rows(lakehouse, "feature_b", "people_latest", "id") == [
            (1, "Ada", "Lyon", 15, "feature_b"),
            (4, "Grace", "New York", 9, "feature_b"),
        ]
        assert self.rows(lakehouse, "feature_a", "people_latest", "id")[0] == (1, "Ada", "London", 10, "feature_a")

        # main never moved, and has none of the models
        assert lakehouse.get_branch("main").head == main_head
        main = lakehouse.snapshot("main")
        assert not any(main.has_table(f"{self.schema}.{t}") for t in ("people", "stg_people", "city_scores", "people_latest"))

        # one commit per model build, naming the invocation and the model
        messages = [c.message for c in lakehouse.log("feature_b")]
        assert any(m.startswith("dbt run ") and m.endswith(": model.test.city_scores") for m in messages)
        latest = lakehouse.log("feature_b", limit=1)[0]
        assert latest.message.endswith(": model.test.people_latest")
        assert {op.op for op in latest.operations} >= {"insert"}

    def test_reads_follow_the_target_branch(self, project):
        # dbt show (fetchmany) reads the target's branch
        _, out_a = run_dbt_and_capture(
            ["show", "--target", "branch_a", "--inline", "select city from {{ ref('city_scores') }} order by city", "--limit", "2"]
        )
        assert "Dublin" in out_a and "London" in out_a and "Tokyo" not in out_a
        _, out_b = run_dbt_and_capture(
            ["show", "--target", "branch_b", "--inline", "select city from {{ ref('city_scores') }} order by city"]
        )
        assert "New York" in out_b and "London" not in out_b

    def test_branch_operations(self, project, capsys):
        # run-operation output is printed (not logged), as dbt's own `print` does
        def printed(args):
            capsys.readouterr()
            run_dbt(["run-operation", *args])
            return capsys.readouterr().out

        out = printed(["create_branch", "--args", "{name: scratch, from: feature_a}", "--target", "branch_a"])
        assert "created branch scratch from feature_a" in out
        out = printed(["list_branches"])
        for branch in ("main", "feature_a", "scratch"):
            assert f"| {branch} " in out
        out = printed(["branch_log", "--args", "{branch: feature_a, limit: 2}"])
        assert "commits on branch feature_a" in out and "model.test." in out
        out = printed(["drop_branch", "--args", "{name: scratch}"])
        assert "dropped branch scratch" in out and "| scratch " not in out

    def test_missing_branch_is_one_clear_error(self, project):
        with pytest.raises(Exception) as failure:
            run_dbt(["run", "--target", "missing"])
        assert "branch 'no_such_branch' does not exist" in str(failure.value)
        _, out = run_dbt_and_capture(["run-operation", "drop_branch", "--args", "{name: not_there}"], expect_pass=False)
        assert "branch 'not_there' does not exist" in out
