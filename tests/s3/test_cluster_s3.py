"""The sample project with dbt through Spark Connect on a standalone cluster (a master and two 1-core worker
JVMs from pyspark's classes, tests/spark_cluster.sh), the warehouse on S3 (moto): the flow gives the rows it
gives in-process; a worker killed during a `dbt run` leaves the target branch whole (Spark retries its tasks
on the other worker, or the run fails and lands nothing), and the next run succeeds.

Long only (`make test-long`): four JVMs start here, over a minute on two busy cores."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from pyspark.sql import SparkSession

from dbt.adapters.branchspark.core.connect import is_connect
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.core.spark_session import connect_session
from tests.functional.test_merge_dbt import dbt, sample, tables  # noqa: F401
from tests.s3_store import s3_url

pytestmark = pytest.mark.long_only
ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "tests" / "spark_cluster.sh"
PORTS = {"BRANCHSPARK_CLUSTER_PORT": os.environ.get("BRANCHSPARK_TEST_CLUSTER_PORT", "7078"),
         "BRANCHSPARK_CLUSTER_UI_PORT": os.environ.get("BRANCHSPARK_TEST_CLUSTER_UI_PORT", "8090"),
         "BRANCHSPARK_CONNECT_PORT": os.environ.get("BRANCHSPARK_TEST_CLUSTER_CONNECT_PORT", "15012")}


@pytest.fixture(scope="module")
def cluster():
    s3_url()
    env = {**os.environ, **PORTS, "VENV": str(Path(sys.executable).parent.parent)}
    started = subprocess.run(["bash", str(CLUSTER), "start"], env=env, capture_output=True, text=True)
    try:
        assert started.returncode == 0, started.stderr
        yield {"url": started.stdout.strip(), "env": env}
    finally:
        subprocess.run(["bash", str(CLUSTER), "stop"], env=env, capture_output=True)


def _profile(project, url: str, warehouse: str, catalog: str) -> None:
    profiles = yaml.safe_load((project / "profiles.yml").read_text())
    for output in profiles["branchspark_sample"]["outputs"].values():
        output.update(method="connect", host=url, warehouse=warehouse, catalog=catalog)
    (project / "profiles.yml").write_text(yaml.safe_dump(profiles))


def _dbt_process(project, *args):
    command = [str(Path(sys.executable).with_name("dbt")), *args, "--project-dir", str(project),
               "--profiles-dir", str(project)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_flow_on_the_cluster_and_a_worker_killed_during_a_run(cluster, sample, s3_warehouse, s3_catalog):
    active = SparkSession.getActiveSession()
    assert active is None or is_connect(active), (
        "this process already runs an in-process Spark session, so it cannot open a Spark Connect one: run this "
        "module in a pytest process of its own, as tests/run.sh does")
    _profile(sample, cluster["url"], s3_warehouse, s3_catalog)
    assert dbt(sample, "seed", "--target", "dev").success
    assert dbt(sample, "run", "--target", "dev").success
    assert dbt(sample, "run-operation", "merge_branch", "--args", "{src: dev}", "--target", "main").success
    spark = connect_session(cluster["url"])
    try:
        lakehouse = Lakehouse(spark, s3_warehouse, s3_catalog)
        built = tables(lakehouse, "dev")
        assert tables(lakehouse, "main") == built and built["shop.fct_orders"]
        head = lakehouse.get_branch("dev").head

        # the table model rebuilds from the seeds (the same rows again); the worker dies as its build starts
        run = _dbt_process(sample, "run", "--target", "dev", "--select", "dim_customers")
        output = []
        for line in run.stdout:
            output.append(line)
            if "START sql table model" in line:
                time.sleep(float(os.environ.get("BRANCHSPARK_TEST_KILL_AFTER", "2")))
                subprocess.run(["bash", str(CLUSTER), "kill-worker", "1"], env=cluster["env"], check=True)
        run.wait(timeout=900)
        output = "".join(output)
        assert "START sql table model" in output, output
        if run.returncode == 0:  # Spark ran the lost tasks again on the other worker
            assert tables(lakehouse, "dev") == built, output
        else:  # the run failed: its branch never landed
            assert lakehouse.get_branch("dev").head == head and tables(lakehouse, "dev") == built, output
        print(f"worker killed during the run: dbt {'succeeded (tasks retried)' if run.returncode == 0 else 'failed'}")
        again = _dbt_process(sample, "run", "--target", "dev", "--select", "dim_customers")
        output, _ = again.communicate(timeout=900)
        assert again.returncode == 0, output
        assert tables(lakehouse, "dev") == built
    finally:
        spark.stop()
