"""A table read through Spark's Parquet source against branchspark's known-files source, side by side.

    python bench/known_files_reads.py [--segments 10 40] [--keyless] [--repeat 5]

One local warehouse, one table written as the tests and small dbt models write it: one-row inserts, each its own
segment, and a delete every fifth write. For each size the same `Lakehouse.read` is timed both ways in one session
(the median of --repeat runs): building the DataFrame alone, and building it and counting its rows, with the Spark
jobs each ran. Spark's Parquet source checks and lists every path it is given, and from 32 paths on lists them in
a Spark job of its own; the known-files source (storage/known_files.py) takes the files and sizes the catalog
recorded.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from dbt.adapters.branchspark.core.lakehouse import Lakehouse  # noqa: E402
from dbt.adapters.branchspark.core.spark_session import local_session  # noqa: E402
from dbt.adapters.branchspark.core.storage import known_files  # noqa: E402
from tests.spark_settings import FAST_SMALL_QUERIES, FAST_TEST_JVM, ONE_PARTITION  # noqa: E402


def median_seconds(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, nargs="+", default=[10, 40])
    parser.add_argument("--keyless", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    spark = local_session("local[2]", {**ONE_PARTITION, **FAST_SMALL_QUERIES, **FAST_TEST_JVM})
    if not known_files.usable(spark):
        raise SystemExit("branchspark's jar is not on this session's class path: run `make install` first")
    tracker = spark.sparkContext.statusTracker()

    def jobs_of(action) -> int:
        before = len(tracker.getJobIdsForGroup(None))
        action()
        return len(tracker.getJobIdsForGroup(None)) - before

    usable = known_files.usable
    print(f"{'segments':>8} {'source':>12} {'build s':>8} {'jobs':>4} {'count s':>8} {'jobs':>4}")
    for count in args.segments:
        lh = Lakehouse(spark, tempfile.mkdtemp(prefix="known-files-"))
        frame = spark.createDataFrame([(i, f"v{i}") for i in range(10)], "id int, v string")
        with lh.transaction("main") as tx:
            tx.create_database("d")
            tx.create_table_as("d.t", frame, primary_key=None if args.keyless else ["id"])
        for i in range(count):
            lh.branch("main").insert("d.t", spark.createDataFrame([(100 + i, "a")], "id int, v string"))
            if i % 5 == 0:
                lh.branch("main").delete("d.t", f"id = {i % 10}")
        build = lambda: lh.read("d.t")  # noqa: E731
        read = lambda: lh.read("d.t").count()  # noqa: E731
        results = {}
        for source in ("parquet", "known files"):
            known_files.usable = usable if source == "known files" else (lambda _spark: False)
            try:
                read()  # warm: the first read of a table plans its classes
                results[source] = (median_seconds(build, args.repeat), jobs_of(build),
                                   median_seconds(read, args.repeat), jobs_of(read))
            finally:
                known_files.usable = usable
            b, bj, r, rj = results[source]
            print(f"{count:>8} {source:>12} {b:8.3f} {bj:4d} {r:8.3f} {rj:4d}", flush=True)
        print(f"{count:>8} {'ratio':>12} {results['parquet'][0] / results['known files'][0]:7.1f}x "
              f"{'':4} {results['parquet'][2] / results['known files'][2]:7.1f}x  (Parquet source / known files)")


if __name__ == "__main__":
    main()
