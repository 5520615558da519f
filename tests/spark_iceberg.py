"""Run Spark with Iceberg's runtime (`make spark-iceberg`, which `make test` and `make peers` run) against a
`branchspark serve` URL.

The reader is tests/spark_iceberg_reader.py, run by .venv-peers' Python (pyspark 4.1) with Iceberg's runtime
jar that Maven copied into .jars/spark-iceberg: one process, one JVM, for a whole batch of queries.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess

from tests.missing import missing

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS_PYTHON = os.path.join(REPO, ".venv-peers", "bin", "python")
SPARK_ICEBERG_JARS = os.path.join(REPO, ".jars", "spark-iceberg")
READER = os.path.join(REPO, "tests", "spark_iceberg_reader.py")


def iceberg_runtime_jar() -> str | None:
    found = glob.glob(os.path.join(SPARK_ICEBERG_JARS, "iceberg-spark-runtime-*.jar"))
    return found[0] if found else None


def require_spark_iceberg() -> None:
    """Skip with the reason (fail under CI) when Spark with Iceberg's runtime is not installed."""
    absent = [what for what, ok in ((PEERS_PYTHON, os.path.exists(PEERS_PYTHON)),
                                     (f"{SPARK_ICEBERG_JARS}/iceberg-spark-runtime-*.jar", iceberg_runtime_jar()))
               if not ok]
    if absent:
        reason = (f"Spark with Iceberg's runtime is not installed ({', '.join(absent)} missing): "
                  "run `make spark-iceberg`")
        missing(reason)


def spark_iceberg_read(url: str, catalogs: dict[str, str], queries: dict[str, str],
                       token: str | None = None, timeout: int = 600) -> dict:
    """{query name: {"rows": canonical rows} or {"error": first line}} as Spark with Iceberg reads them."""
    request = {"uri": url, "jars": [iceberg_runtime_jar()], "catalogs": catalogs, "queries": queries,
               "token": token}
    # the project's venv puts its own pyspark on PYTHONPATH/SPARK_HOME for nothing here; the peers use theirs
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYTHONPATH", "PYSPARK_PYTHON",
                                                             "PYSPARK_DRIVER_PYTHON")}
    env["PYSPARK_PYTHON"] = PEERS_PYTHON
    done = subprocess.run([PEERS_PYTHON, READER], input=json.dumps(request), capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO)
    if done.returncode != 0:
        raise AssertionError(f"the Spark-Iceberg reader failed ({done.returncode}): {done.stderr[-3000:]}")
    return json.loads(done.stdout)
