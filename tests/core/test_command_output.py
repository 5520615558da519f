"""What the command lines print: `dbt --version` lists the branchspark plugin, and Spark's progress
bars stay out of the output unless a config asks for them (issue 24)."""
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from dbt.adapters.branchspark.__version__ import version as adapter_version

ROOT = Path(__file__).resolve().parents[2]
PROGRESS_MARK = "[Stage "  # Spark's console progress bar: "[Stage 0:=====>   (1 + 1) / 2]"

# One process: a table built with a stage slow enough for the bar to show (it waits 500 ms), then the
# command line's `show` over it, both on the command line's own session (Lakehouse(None, ...)).
PROBE = """
import sys, time
from pyspark.sql import functions as F, types as T
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.core.spark_session import local_session
from dbt.adapters.branchspark.cli.main import cli

warehouse, ask = sys.argv[1], sys.argv[2] == "ask"
if ask:
    local_session(config={"spark.ui.showConsoleProgress": "true"})
lh = Lakehouse(None, warehouse)
slow = F.udf(lambda x: (time.sleep(0.4), x)[1], T.LongType())
rows = lh.spark.range(0, 8, 1, 2).select(slow("id").alias("id"))
with lh.transaction("main") as tx:
    tx.create_database("shop")
    tx.create_table_as("shop.t", rows)
cli.main(["--warehouse", warehouse, "show", "shop.t"], standalone_mode=False)
"""


def run_probe(tmp_path, ask: bool) -> str:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "COLUMNS": "200"}
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / f"wh-{ask}"), "ask" if ask else "quiet"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "rows: 8" in done.stdout
    return done.stdout + done.stderr


def test_command_line_output_has_no_progress_bars(tmp_path):
    assert PROGRESS_MARK not in run_probe(tmp_path, ask=False)


@pytest.mark.long_only  # a JVM of its own; the probe's stage is slow by design (tests/depth.py)
def test_progress_bars_show_when_the_config_asks(tmp_path):
    """The control: the same work with spark.ui.showConsoleProgress=true draws bars."""
    assert PROGRESS_MARK in run_probe(tmp_path, ask=True)


def test_dbt_version_lists_branchspark_with_the_package_version():
    assert adapter_version == version("dbt-branchspark")  # one version for the package and the plugin
    dbt = Path(sys.executable).parent / "dbt"
    done = subprocess.run([str(dbt), "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    plugins = done.stdout.split("Plugins:", 1)[1].splitlines()
    listed = {line.split(":")[0].strip(" -"): line.split(":")[1].split()[0] for line in plugins if ":" in line}
    assert listed.get("branchspark") == adapter_version, (
        f"{done.stdout}\n(an editable install needs `make install`'s link: see Makefile)")
    assert "spark" in listed
