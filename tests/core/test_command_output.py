"""What the command lines print: `dbt --version` lists the branchspark plugin, Spark's progress
bars stay out of the output unless a config asks for them (issue 24), and Spark's own log stays out of it:
a damaged data file is one line, in Python and on the command line (issue 51)."""
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
# command line's `show` over it, both on the command line's own session (Lakehouse(None, ...)); then one of
# its files damaged, and a count in Python and `show` again, each of which must fail in one line.
PROBE = """
import glob, sys, time
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
print(DONE, flush=True)
with open(sorted(glob.glob(f"{warehouse}/tables/*/data/*/*.parquet"))[0], "wb") as victim:
    victim.write(b"not parquet at all")
try:
    lh.read("shop.t").count()
except Exception as exc:
    print(f"python: {type(exc).__name__}: {exc}", flush=True)
try:
    cli.main(["--warehouse", warehouse, "show", "shop.t"], standalone_mode=False)
except SystemExit as exc:
    print(f"exit {exc.code}", flush=True)
""".replace("DONE", repr("--- shown ---"))
# What the JVM itself prints as it starts, for options Spark's launcher always passes: the incubating vector module,
# and on JDK 24 and later an --add-opens of a package that JDK no longer has
JVM_NOTICES = {"WARNING: Using incubator modules: jdk.incubator.vector",
               "WARNING: package sun.security.action not in java.base"}


def run_probe(tmp_path, ask: bool) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "COLUMNS": "200"}
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / f"wh-{ask}"), "ask" if ask else "quiet"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "rows: 8" in done.stdout
    return done


@pytest.fixture(scope="module")
def quiet_probe(tmp_path_factory) -> subprocess.CompletedProcess:
    return run_probe(tmp_path_factory.mktemp("probe"), ask=False)


def test_command_line_output_has_no_progress_bars(quiet_probe):
    assert PROGRESS_MARK not in quiet_probe.stdout + quiet_probe.stderr


def test_damaged_file_is_one_line_in_python_and_on_the_command_line_with_no_spark_log(quiet_probe):
    """Issue 51: a count of `lh.read(...)` and `branchspark show` on a damaged file printed Spark's executor log
    and a Py4J trace (47 and 104 lines); now each is one line naming the file and its table, and the process
    printed nothing of Spark's own from its start (no start-up lines, no task's error)."""
    after = quiet_probe.stdout.split("--- shown ---\n", 1)[1].splitlines()
    python, command, status = after[0], after[-2], after[-1]
    assert python.startswith("python: DataFileUnreadable: data file tables/") and "of table shop.t is damaged" in python
    assert command.startswith("error: data file tables/") and "of table shop.t is damaged" in command, after
    assert status == "exit 1", after
    assert [line for line in quiet_probe.stderr.splitlines() if line not in JVM_NOTICES] == []


@pytest.mark.long_only  # a JVM of its own; the probe's stage is slow by design (tests/depth.py)
def test_progress_bars_show_when_the_config_asks(tmp_path):
    """The control: the same work with spark.ui.showConsoleProgress=true draws bars."""
    done = run_probe(tmp_path, ask=True)
    assert PROGRESS_MARK in done.stdout + done.stderr


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
