"""Shared helpers for the benchmarks: one Spark session, timing by median of repeats."""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def spark_session():
    from dbt.adapters.branchspark.storage.session import local_session

    return local_session("local[2]", {"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "4g",
                                      "spark.ui.showConsoleProgress": "false"})


def median_time(action, repeats: int = 5, warmup: int = 1) -> float:
    for _ in range(warmup):
        action()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def scratch_dir(name: str) -> str:
    return tempfile.mkdtemp(prefix=f"branchspark-bench-{name}-")


def full_scan(df) -> None:
    """Read every column of every row, without collecting anything to the driver."""
    df.write.format("noop").mode("overwrite").save()


def report(title: str, rows: list[tuple[str, float]], ratios: list[tuple[str, float, float]]) -> None:
    print(f"\n== {title}")
    for label, seconds in rows:
        print(f"  {label:<55} {seconds * 1000:10.2f} ms")
    for label, ratio, target in ratios:
        verdict = "ok" if ratio <= target else "OVER TARGET"
        print(f"  {label:<55} {ratio:10.3f}x  (target <= {target}x: {verdict})")
