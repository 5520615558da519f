"""Spark's plain Parquet scan of the same files in fresh processes of each Spark and JDK bench/peers.py runs (issue 72).

    python bench/parquet_floor.py [--rows 1000000] [--rounds 20] [--pairs 2] [--keep]

bench/peers.py's scan compares JVMs that have run different amounts of work (the peers' JVM three scans a round,
ours two), and a scan of 1M rows keeps getting faster for about 60 rounds. This measures the floor itself at
equal work: the live rows of the peers' table after its 1% delete (bench/peers_side.py's rows, 4 files), written
once, then the same hash of every column `--rounds` times in a fresh process per side, the sides' order
alternating per pair. Sides: pyspark 4.3 on the JDK `make install` chose (core/jvm_home.py) and on `java` on the
PATH, and .venv-peers' Spark 4.1 on the PATH's `java`, as bench/peers.py runs the peers (`make peers`); a side
whose JDK is the same as another's is left out. Prints each process's median of its last 10 rounds (2026-12-07:
4.3 on JDK 25 292-300 ms, 4.1 on JDK 17 323-332 ms at 20 rounds; 239 against 257 ms at 60). Exits 0.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from common import scratch_dir  # puts the repo on sys.path

from peers import PEERS_PYTHON, REPO, SPARK

LAST = 10  # the rounds each process's median is of


def child(path: str, rows: int, rounds: int) -> None:
    """In a fresh process: write the live rows if missing, scan them `rounds` times, print one JSON line."""
    from pyspark.sql import SparkSession

    import peers_side

    builder = SparkSession.builder
    for key, value in SPARK.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not os.path.exists(path):
        peers_side.rows(spark, 0, rows).repartition(4).where("id % 100 <> 42").write.parquet(path)
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        spark.read.parquet(path).selectExpr(*peers_side.ROW_HASH_SUM).collect()
        seconds.append(time.perf_counter() - start)
    java = spark.sparkContext._jvm.java.lang.System.getProperty("java.version")
    print(json.dumps({"spark": spark.version, "java": java, "median": statistics.median(seconds[-LAST:])}))


def sides() -> dict[str, tuple[str, dict]]:
    """label -> (python, environment): each Spark and JDK bench/peers.py runs, without repeats."""
    from dbt.adapters.branchspark.core import jvm_home

    path_java = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    found = {"pyspark 4.3, the JDK make install chose": (sys.executable, jvm_home.launch_env(path_java)),
             "pyspark 4.3, java on the PATH": (sys.executable, path_java),
             "Spark 4.1 (the peers'), java on the PATH": (PEERS_PYTHON, path_java)}
    if found["pyspark 4.3, the JDK make install chose"][1].get("JAVA_HOME") is None:
        del found["pyspark 4.3, the JDK make install chose"]  # no choice: the same JDK as the PATH's
    if not os.path.isfile(PEERS_PYTHON):
        print(f"no {PEERS_PYTHON}: Spark 4.1 left out (`make peers` installs it)")
        del found["Spark 4.1 (the peers'), java on the PATH"]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=20, help=f"scans per process (its median: the last {LAST})")
    parser.add_argument("--pairs", type=int, default=2, help="fresh processes per side, the order alternating")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.rows, args.rounds)
    root = scratch_dir("parquet-floor")
    path = os.path.join(root, "live_rows")
    found = sides()
    print(f"bench/parquet_floor.py: {args.rows:,} rows less 1%, {args.rounds} rounds a process, the median of the "
          f"last {min(LAST, args.rounds)}; {args.pairs} processes a side; load average {os.getloadavg()[0]:.1f}")
    medians: dict[str, list[str]] = {label: [] for label in found}
    try:
        for pair in range(args.pairs):
            for label in (list(found) if pair % 2 == 0 else list(reversed(found))):
                python, env = found[label]
                out = subprocess.run([python, os.path.abspath(__file__), "--child", path, "--rows", str(args.rows),
                                      "--rounds", str(args.rounds)], env=env, cwd=REPO, capture_output=True,
                                     text=True, check=True).stdout
                answer = json.loads(out.strip().splitlines()[-1])
                medians[label].append(f"{answer['median'] * 1000:.0f} ms (Spark {answer['spark']}, "
                                      f"Java {answer['java']})")
        for label, runs in medians.items():
            print(f"  {label:<45} {'; '.join(runs)}")
        print(f"load average {os.getloadavg()[0]:.1f} at end")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
