"""Every writing dbt invocation lands by merge (docs/runs.md).

A run writes its own run branch and lands on the target as one commit when every node
succeeded; a failing model, or a failing test under `dbt build`, lands nothing and keeps the
run branch, which `dbt retry` continues. Two `dbt run` processes on one branch: disjoint models
both land; the same rows changed differently make the later one fail with the conflict report.
"""

import os
import subprocess
import sys
import textwrap

import pytest
from pyspark.sql import SparkSession

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

CONNECT_URL = "BRANCHSPARK_TEST_CONNECT_URL"  # the Spark Connect server tests/run.sh starts

SEED = """id,amount
1,10
2,20
3,
"""

STG = """
select id, coalesce(amount, 0) as amount from {{ ref('payments') }}
"""

TOTALS = """
{{ config(materialized='table') }}
select count(*) as payments, sum(amount) as amount from {{ ref('stg_payments') }}
"""

BIG = """
{{ config(materialized='table') }}
select id, amount from {{ ref('stg_payments') }} where amount >= {{ var('threshold', 15) }}
"""

BROKEN = """
{{ config(materialized='table') }}
select id, no_such_column from {{ ref('stg_payments') }}
"""

FIXED = """
{{ config(materialized='table') }}
select id, amount * 2 as doubled from {{ ref('stg_payments') }}
"""

SCHEMA_YML = """
version: 2
models:
  - name: totals
    columns:
      - name: payments
        data_tests: [not_null]
  - name: big
    columns:
      - name: amount
        data_tests:
          - accepted_values:
              values: [20]
              quote: false
"""


def _target(branch, schema, warehouse, spark_config, **extra):
    return {"type": "branchspark", "method": "session", "branch": branch, "schema": schema,
            "warehouse": warehouse, "threads": 1, "spark_config": dict(spark_config), **extra}


class LandingBase:
    branch = "landing"

    @pytest.fixture(scope="class")
    def profiles_config_update(self, unique_schema, warehouse_dir, dbt_profile_target):
        spark_config = dbt_profile_target["spark_config"]
        return {"test": {"outputs": {
            "default": _target(self.branch, unique_schema, warehouse_dir, spark_config, create_branch_from="main"),
            "per_model": _target(f"{self.branch}_pm", unique_schema, warehouse_dir, spark_config,
                                 create_branch_from="main", landing="per_model"),
        }, "target": "default"}}

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"payments.csv": SEED}

    @pytest.fixture(scope="class")
    def lakehouse(self, project, warehouse_dir):
        return Lakehouse(SparkSession.getActiveSession(), warehouse=warehouse_dir)

    def first_parents(self, lakehouse, branch, stop):
        """B's own history (first parents) down to, not including, `stop`."""
        out = []
        for commit in lakehouse.store.first_parents(lakehouse.get_branch(branch).head):
            if commit.id == stop:
                return out
            out.append(commit)
        raise AssertionError(f"{stop} is not on {branch}'s first-parent history")

    def run_branches(self, lakehouse, branch):
        return [b.name for b in lakehouse.list_branches() if b.name.startswith(f"dbt/{branch}/")]

    def rows(self, lakehouse, table, at=None, order_by="id"):
        df = lakehouse.read(f"{self.schema}.{table}", at=at or self.branch)
        return [tuple(r) for r in df.orderBy(order_by).collect()]


class TestRunLandsAsOneCommit(LandingBase):
    branch = "landing_ok"

    @pytest.fixture(scope="class")
    def models(self):
        return {"stg_payments.sql": STG, "totals.sql": TOTALS, "big.sql": BIG}

    def test_run_lands_as_one_commit(self, project, lakehouse):
        self.schema = project.test_schema
        run_dbt(["seed"])
        before = lakehouse.get_branch(self.branch).head
        _, out = run_dbt_and_capture(["run"])

        # B's own history gained exactly one commit: the landing, with B's old head and the run as parents
        (landing,) = self.first_parents(lakehouse, self.branch, before)
        assert landing.parents[0] == before and len(landing.parents) == 2
        assert landing.message.startswith("dbt run ")
        assert ": landed 3 nodes from dbt/landing_ok/run-" in landing.message
        assert landing.message.endswith("model.test.stg_payments, model.test.big, model.test.totals") or \
            landing.message.endswith("model.test.stg_payments, model.test.totals, model.test.big")
        assert f"landed on {self.branch} as commit {landing.id[:12]}" in out
        # the run's commits, one per model, are the landing's second parent line
        run_commits = self.first_parents_of(lakehouse, landing.parents[1], before)
        assert sorted(c.message.rsplit(": ", 1)[1] for c in run_commits) == [
            "model.test.big", "model.test.stg_payments", "model.test.totals"]
        assert {op.op for op in lakehouse.store.operations(landing.id)} >= {"insert", "create"}
        # the run branch is gone, and the target has the run's rows
        assert self.run_branches(lakehouse, self.branch) == []
        assert self.rows(lakehouse, "totals", order_by="payments") == [(3, 30)]
        assert self.rows(lakehouse, "big") == [(2, 20)]
        # metadata only: B's catalog at the landing is the run's, table versions and all (no file written)
        store = lakehouse.store
        assert store.root(landing.id).tables == store.root(landing.parents[1]).tables
        # the seed landed the same way, before
        seed_landing = lakehouse.store.get_commit(before)
        assert seed_landing.message.startswith("dbt seed ") and seed_landing.message.endswith("seed.test.payments")

    def test_per_model_landing(self, project, lakehouse):
        self.schema = project.test_schema
        run_dbt(["seed", "--target", "per_model"])
        before = lakehouse.get_branch(f"{self.branch}_pm").head
        run_dbt(["run", "--target", "per_model"])
        own = self.first_parents(lakehouse, f"{self.branch}_pm", before)
        # one commit per model straight on the branch, no run branch, no landing commit
        assert sorted(c.message.rsplit(": ", 1)[1] for c in own) == [
            "model.test.big", "model.test.stg_payments", "model.test.totals"]
        assert all(len(c.parents) == 1 for c in own)
        assert self.run_branches(lakehouse, f"{self.branch}_pm") == []

    @staticmethod
    def first_parents_of(lakehouse, head, stop):
        out = []
        for commit in lakehouse.store.first_parents(head):
            if commit.id == stop:
                break
            out.append(commit)
        return out


class TestFailuresLandNothing(LandingBase):
    branch = "landing_fail"

    @pytest.fixture(scope="class")
    def models(self):
        return {"stg_payments.sql": STG, "totals.sql": TOTALS, "big.sql": BIG, "broken.sql": BROKEN,
                "schema.yml": SCHEMA_YML}

    def test_failing_model_lands_nothing_and_retry_completes(self, project, lakehouse):
        self.schema = project.test_schema
        run_dbt(["seed"])
        before = lakehouse.get_branch(self.branch).head
        _, out = run_dbt_and_capture(["run"], expect_pass=False)

        assert lakehouse.get_branch(self.branch).head == before  # nothing landed
        (kept,) = self.run_branches(lakehouse, self.branch)
        assert kept.startswith(f"dbt/{self.branch}/run-")
        assert f"nothing landed on branch '{self.branch}'" in out and kept in out and "model.test.broken" in out
        # the kept run branch holds what succeeded, for inspection
        assert self.rows(lakehouse, "totals", at=kept, order_by="payments") == [(3, 30)]
        assert not lakehouse.snapshot(self.branch).has_table(f"{self.schema}.totals")

        # dbt retry continues on the kept branch: only the failed model runs, then everything lands
        write_file(FIXED, project.project_root, "models", "broken.sql")
        results = run_dbt(["retry"])
        assert [r.node.name for r in results] == ["broken"]
        (landing,) = self.first_parents(lakehouse, self.branch, before)
        assert f"(retry of {kept.split('run-', 1)[1]})" in landing.message
        assert "landed 4 nodes" in landing.message and landing.message.endswith("model.test.broken")
        assert self.run_branches(lakehouse, self.branch) == []
        assert self.rows(lakehouse, "broken") == [(1, 20), (2, 40), (3, 0)]
        assert self.rows(lakehouse, "totals", order_by="payments") == [(3, 30)]

    def test_failing_test_under_build_lands_nothing(self, project, lakehouse):
        self.schema = project.test_schema
        before = lakehouse.get_branch(self.branch).head
        # big now holds amounts 10 and 20 (threshold 5): its accepted_values test fails
        _, out = run_dbt_and_capture(["build", "--vars", "{threshold: 5}", "--exclude", "broken"], expect_pass=False)
        assert lakehouse.get_branch(self.branch).head == before
        (kept,) = self.run_branches(lakehouse, self.branch)
        assert kept.startswith(f"dbt/{self.branch}/build-") and kept in out
        assert "Failure in test accepted_values_big_amount" in out, out
        # the audit saw the new rows on the run branch; the target still has the last landed ones
        assert self.rows(lakehouse, "big", at=kept) == [(1, 10), (2, 20)]
        assert self.rows(lakehouse, "big") == [(2, 20)]
        lakehouse.drop_branch(kept, force=True)  # its commits landed nowhere

        # the same build with passing tests lands as one commit
        run_dbt(["build", "--vars", "{threshold: 15}", "--exclude", "broken"])
        (landing,) = self.first_parents(lakehouse, self.branch, before)
        assert landing.message.startswith("dbt build ") and "landed" in landing.message
        # the seed reloaded the rows it already held: a write that changes nothing makes no commit (SPEC 4)
        assert "seed.test.payments" not in landing.message


# Real `dbt run` processes (each its own JVM) on one branch. A wrapper holds each process at its
# landing until all have reached it, so all forked from the same head; then they land in order.
WRAPPER = textwrap.dedent("""
    import os, sys, time
    from dbt.adapters.branchspark.adapter import run_landing

    barrier, me, order = os.environ["RUN_BARRIER"], os.environ["RUN_NAME"], os.environ["RUN_ORDER"].split(",")
    land = run_landing.InvocationRun.land

    def wait_for(names):
        deadline = time.time() + 600
        while not all(os.path.exists(os.path.join(barrier, n)) for n in names) and time.time() < deadline:
            time.sleep(0.2)

    def held_land(self):
        open(os.path.join(barrier, me + ".ready"), "w").close()
        wait_for([name + ".ready" for name in order])
        wait_for([name + ".done" for name in order[:order.index(me)]])
        try:
            land(self)
        finally:
            open(os.path.join(barrier, me + ".done"), "w").close()

    run_landing.InvocationRun.land = held_land
    from dbt.cli.main import cli
    sys.exit(cli())
""")

INCREMENTAL = """
{{ config(materialized='incremental', unique_key='id') }}
select id, '{{ var("label", "start") }}' as label from {{ ref('stg_payments') }}
{% if is_incremental() %} where id = 1 {% endif %}
"""

LEFT = """
{{ config(materialized='table') }}
select id, '{{ var("label", "start") }}' as label from {{ ref('stg_payments') }} where id <= 2
"""

RIGHT = """
{{ config(materialized='table') }}
select id, '{{ var("label", "start") }}' as label from {{ ref('stg_payments') }} where id >= 2
"""


class TestConcurrentRuns(LandingBase):
    branch = "landing_concurrent"

    @pytest.fixture(scope="class")
    def models(self):
        return {"stg_payments.sql": STG, "left_side.sql": LEFT, "right_side.sql": RIGHT, "keyed.sql": INCREMENTAL}

    def concurrent_runs(self, project, tmp_path, runs):
        """Start one `dbt run` process per (name, args), all at once; they land in the order given. Under
        tests/run.sh they are clients of its Spark Connect server (what they race for is the catalog)."""
        barrier = tmp_path / "barrier"
        barrier.mkdir()
        wrapper = tmp_path / "held_landing.py"  # not dbt_*: dbt imports such modules as plugins
        wrapper.write_text(WRAPPER)
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "RUN_BARRIER": str(barrier),
               "RUN_ORDER": ",".join(name for name, _ in runs)}
        if os.environ.get(CONNECT_URL):  # tests/run.sh's server: three JVM starts at once cost a minute on 2 cores
            env["SPARK_REMOTE"] = os.environ[CONNECT_URL]
        procs = {}
        for name, args in runs:
            procs[name] = subprocess.Popen(
                [sys.executable, str(wrapper), "run", *args, "--project-dir", str(project.project_root),
                 "--profiles-dir", str(project.profiles_dir), "--target-path", f"target_{name}"],
                cwd=str(project.project_root), env={**env, "RUN_NAME": name},
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        outs = {}
        for name, proc in procs.items():
            out, _ = proc.communicate(timeout=900)
            outs[name] = (proc.returncode, out)
        return outs

    def test_concurrent_runs_on_one_branch(self, project, lakehouse, tmp_path):
        self.schema = project.test_schema
        run_dbt(["seed"])
        run_dbt(["run"])
        before = lakehouse.get_branch(self.branch).head
        # a and b build different models; c changes the row of keyed that a changes, differently
        outs = self.concurrent_runs(project, tmp_path, [
            ("a", ["-s", "left_side", "keyed", "--vars", "{label: from_a}"]),
            ("b", ["-s", "right_side", "--vars", "{label: from_b}"]),
            ("c", ["-s", "keyed", "--vars", "{label: from_c}"]),
        ])
        assert outs["a"][0] == 0, outs["a"][1][-3000:]
        assert outs["b"][0] == 0, outs["b"][1][-3000:]

        # disjoint models both land: a's as a landing (B had not moved), b's as a three-way merge
        b_landing, a_landing = self.first_parents(lakehouse, self.branch, before)
        assert "model.test.left_side" in a_landing.message and "model.test.keyed" in a_landing.message
        assert "landed 1 node from dbt/" in b_landing.message
        assert "model.test.right_side" in b_landing.message
        assert len(a_landing.parents) == 2 and len(b_landing.parents) == 2
        assert self.rows(lakehouse, "left_side") == [(1, "from_a"), (2, "from_a")]
        assert self.rows(lakehouse, "right_side") == [(2, "from_b"), (3, "from_b")]
        # metadata only: the merge reused the segments each run wrote
        merged = lakehouse.snapshot(self.branch)
        for table in ("left_side", "right_side", "keyed"):
            name = f"{self.schema}.{table}"
            sides = set()
            for parent in b_landing.parents:
                sides |= set(lakehouse.snapshot(parent).state(name).segments)
            assert set(merged.state(name).segments) <= sides

        # the same row changed differently: c, landing after a, fails with the conflict report
        code, out = outs["c"]
        assert code != 0, out[-3000:]
        assert f"nothing landed on branch '{self.branch}'" in out
        assert f"{self.schema}.keyed" in out and "conflict" in out.lower()
        assert self.rows(lakehouse, "keyed") == [(1, "from_a"), (2, "start"), (3, "start")]
        (kept,) = self.run_branches(lakehouse, self.branch)
        assert kept in out and kept.startswith(f"dbt/{self.branch}/run-")
        assert self.rows(lakehouse, "keyed", at=kept)[0] == (1, "from_c")


SOURCES_YML = """
version: 2
sources:
  - name: files
    schema: files
    tables:
      - name: numbers
        meta:
          external_location: "parquet.`{path}`"
"""


class TestLandingsRecordTheSourcesRead(LandingBase):
    """The versions of Spark's tables a run read (issue 68) are recorded for a view model as for a table model,
    and under `landing: per_model` on each model's own commit (the run's only record there). A Parquet path
    table is "unversioned"; the Delta and Iceberg versions and sources_as_of's pins of a view are on Spark 4.1
    (tests/core/test_sources_spark41.py)."""
    branch = "landing_src"

    @pytest.fixture(scope="class")
    def numbers_path(self, spark, tmp_path_factory):
        path = str(tmp_path_factory.mktemp("numbers") / "numbers")
        spark.createDataFrame([(1,), (2,), (3,)], "n int").write.parquet(path)
        return path

    @pytest.fixture(scope="class")
    def models(self, numbers_path):
        return {"sources.yml": SOURCES_YML.replace("{path}", numbers_path),
                "numbers_view.sql": "select n from {{ source('files', 'numbers') }}",
                "numbers_total.sql": "{{ config(materialized='table') }} "
                                     "select sum(n) as total from {{ source('files', 'numbers') }}",
                "constant.sql": "{{ config(materialized='table') }} select 1 as one"}

    def test_a_view_models_run_records_its_sources_and_per_model_commits_record_their_own(
            self, project, lakehouse, numbers_path):
        self.schema = project.test_schema
        read = {f"parquet.`{numbers_path}`": {"format": "parquet", "version": "unversioned"}}
        before = lakehouse.get_branch(self.branch).head
        run_dbt(["run", "--select", "numbers_view"])
        (landing,) = self.first_parents(lakehouse, self.branch, before)
        assert landing.message.endswith("model.test.numbers_view") and landing.sources == read

        pm = f"{self.branch}_pm"
        before = lakehouse.create_branch(pm, source="main").head
        run_dbt(["run", "--target", "per_model"])
        own = {c.message.rsplit(": ", 1)[1]: c.sources for c in self.first_parents(lakehouse, pm, before)
               if ": model." in c.message}  # the models' commits (the schema's is the run's first)
        assert own == {"model.test.numbers_view": read, "model.test.numbers_total": read,
                       "model.test.constant": None}
        assert self.rows(lakehouse, "numbers_total", at=pm, order_by="total") == [(6,)]
