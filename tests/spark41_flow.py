"""The Spark 4.1 flow (tests/spark41_sources.py) that tests/core/test_sources_spark41.py (issue 68) and
tests/core/test_import_spark41.py (issue 70) read: run once per test process, on first need, in one .venv-peers
process and one JVM (a Spark 4.1 session with Delta and Iceberg costs 15-20 s of CPU to start). Kept here, outside
both test modules, so that both see one cache; tests/conftest.py gives both modules one xdist scope, so one worker
runs it."""
from __future__ import annotations

import glob
import json
import os
import subprocess

from tests.depth import LONG
from tests.missing import missing
from tests.spark_iceberg import PEERS_PYTHON, REPO, iceberg_runtime_jar

DELTA_JARS = os.path.join(REPO, ".jars", "peers")
FLOW = os.path.join(REPO, "tests", "spark41_sources.py")


def _installed() -> list[str]:
    absent = []
    if not os.path.exists(PEERS_PYTHON) or subprocess.run(
            [PEERS_PYTHON, "-c", "import dbt.adapters.branchspark"], capture_output=True).returncode != 0:
        absent.append("branchspark in .venv-peers")
    if not glob.glob(os.path.join(DELTA_JARS, "delta-spark_*.jar")):
        absent.append(".jars/peers/delta-spark_*.jar")
    if not iceberg_runtime_jar():
        absent.append(".jars/spark-iceberg/iceberg-spark-runtime-*.jar")
    return absent


_FLOW: dict = {}  # the flow's report, once per test process


def spark41_flow(tmp_path_factory) -> dict:
    """The flow's report: the sources flow, then the tables the import tests import."""
    if not _FLOW:
        _FLOW.update(_run_flow(tmp_path_factory))
    return _FLOW


def _run_flow(tmp_path_factory) -> dict:
    absent = _installed()
    if absent:
        missing(f"branchspark on Spark 4.1 is not installed ({', '.join(absent)} missing): run `make spark41`")
    root = tmp_path_factory.mktemp("sources41")
    request = {"dir": str(root), "delta_jars": DELTA_JARS, "iceberg_jar": iceberg_runtime_jar(), "full": LONG,
               "import_dir": str(tmp_path_factory.mktemp("import41"))}
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYTHONPATH", "PYSPARK_PYTHON",
                                                             "PYSPARK_DRIVER_PYTHON", "SPARK_REMOTE")}
    env["PYSPARK_PYTHON"] = PEERS_PYTHON
    done = subprocess.run([PEERS_PYTHON, FLOW], input=json.dumps(request), capture_output=True, text=True,
                          timeout=1800, env=env, cwd=str(root))
    if done.returncode != 0:
        raise AssertionError(f"the Spark 4.1 sources flow failed ({done.returncode}): {done.stderr[-4000:]}")
    seen = json.loads(done.stdout)
    print("the Spark 4.1 sources flow:", *seen["phases"], "building the import sources:",
          *seen["import_sources"]["phases"], sep="\n  ")  # where its time went (shown with -s)
    return seen


