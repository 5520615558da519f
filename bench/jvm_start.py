"""A JVM's start with the class-data archive `make install` builds (core/jvm_archive.py) and without it.

    python bench/jvm_start.py [--rounds 3]

Each round starts, in turn with and without the archive (BRANCHSPARK_JVM_ARCHIVE naming no file), two cold
starts in fresh processes:
- in-process: a Python process builds its session and runs a first branch write and read (what the first
  command of `branchspark` or of a `dbt run` on `method: session` waits for);
- engine: `branchspark engine start` in a new engine home until the engine answers (`method: local`).
Prints the median wall time of each and the ratio with/without (target: at most 0.7x).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from common import report

FIRST_WORK = """
import sys, tempfile, time
started = time.perf_counter()
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.core.spark_session import local_session
spark = local_session("local[2]")
lakehouse = Lakehouse(spark, tempfile.mkdtemp(prefix="branchspark-bench-jvm-"))
with lakehouse.transaction("main") as tx:
    tx.create_database("shop")
    tx.create_table_as("shop.t", spark.createDataFrame([(1, "a")], "id bigint, name string"), primary_key=["id"])
lakehouse.read("shop.t").collect()
print(time.perf_counter() - started)
"""


def in_process(env: dict) -> float:
    out = subprocess.run([sys.executable, "-c", FIRST_WORK], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def engine(env: dict) -> float:
    home = tempfile.mkdtemp(prefix="branchspark-bench-engine-")
    env = {**env, "BRANCHSPARK_ENGINE_HOME": home, "BRANCHSPARK_ENGINE_WARMUP": "0"}
    branchspark = os.path.join(os.path.dirname(sys.executable), "branchspark")
    try:
        started = time.perf_counter()
        subprocess.run([branchspark, "engine", "start"], env=env, capture_output=True, check=True)
        return time.perf_counter() - started
    finally:
        subprocess.run([branchspark, "engine", "stop"], env=env, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from dbt.adapters.branchspark.core import jvm_archive

    archive = jvm_archive.archive_path()
    if not archive.is_file():
        sys.exit(f"no class-data archive at {archive}: build it with `make install`")
    variants = {"with the archive": {**os.environ}, "without": {**os.environ, jvm_archive.ARCHIVE_ENV: "/nonexistent"}}
    samples = {(start, variant): [] for start in ("in-process", "engine") for variant in variants}
    for _ in range(args.rounds):
        for start, measure in (("in-process", in_process), ("engine", engine)):
            for variant, env in variants.items():
                samples[(start, variant)].append(measure(env))
    medians = {key: statistics.median(values) for key, values in samples.items()}
    rows = [(f"{start}, {variant}", medians[(start, variant)]) for start, variant in samples]
    ratios = [(f"{start}: with / without the archive",
               medians[(start, "with the archive")] / medians[(start, "without")], 0.7)
              for start in ("in-process", "engine")]
    report(f"JVM start, median of {args.rounds} cold starts each (archive {archive.name}, "
           f"{archive.stat().st_size // 2**20} MB)", rows, ratios)


if __name__ == "__main__":
    main()
