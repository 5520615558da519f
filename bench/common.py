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
    from dbt.adapters.branchspark.core.spark_session import local_session

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


def jvm_cpu_clock(spark):
    """A function giving the CPU seconds the Spark JVM has used so far (all its threads: driver and
    local executors), or None where /proc is missing. On a shared machine CPU time is steadier than
    wall time, since it does not count the time other processes hold the cores.

    It sums each thread's scheduler time (`/proc/PID/task/*/schedstat`, nanoseconds): the process's
    `utime + stime` counts in clock ticks (10 ms), too coarse for scans of about 100 ms. Spark's task
    and compiler threads are pooled and live through a benchmark, so none is lost between readings."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    tasks = f"/proc/{pid}/task"
    if not os.path.isdir(tasks):
        return None

    def seconds() -> float:
        total = 0
        for thread in os.listdir(tasks):
            try:
                with open(f"{tasks}/{thread}/schedstat") as src:
                    total += int(src.read().split()[0])
            except (OSError, ValueError, IndexError):  # the thread ended just now
                pass
        return total / 1e9

    return seconds


def side_by_side(actions: dict, rounds: int = 9, warmup: int = 2, cpu_clock=None) -> dict:
    """Median wall (and CPU) seconds of each action, run in rounds that take every action in turn, so
    that all of them share the machine's load alike; each round starts one action later than the last,
    so none always runs first, or right after the same other. Returns {label: (wall, cpu or None)}."""
    for _ in range(warmup):
        for action in actions.values():
            action()
    samples = {label: [] for label in actions}
    order = list(actions.items())
    for round_index in range(rounds):
        shift = round_index % len(order)
        for label, action in order[shift:] + order[:shift]:
            cpu_start = cpu_clock() if cpu_clock else None
            start = time.perf_counter()
            action()
            wall = time.perf_counter() - start
            samples[label].append((wall, cpu_clock() - cpu_start if cpu_clock else None))
    return {label: (statistics.median(w for w, _ in runs),
                    statistics.median(c for _, c in runs) if cpu_clock else None)
            for label, runs in samples.items()}


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
