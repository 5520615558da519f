"""One batch of the model test (tests/model) in a test-configured session: where a batch's time and CPU go.

    python bench/model_batch.py [--kind keyed|keyless] [--cases 30] [--warm 30] [--conf KEY=VALUE ...]
                                [--driver-memory 3g] [--jfr FILE] [--phases]

Warms the JVM with a first batch of `--warm` cases, then times the second batch of the `quick` profile's
derandomized sequence and prints its wall time, its Spark jobs, the JVM's CPU (from /proc), the time its
collectors and JIT compilers took, and how long the test's readbacks (driver._json_rows) took. `--conf`
changes one Spark setting of the session (several may be given): run it once per setting to compare side by
side. `--jfr` records the measured batch with Java Flight Recorder (`jfr print --stack-depth 300 ...` reads it).
`--phases` adds a table of each phase's and each operation kind's wall time and Spark jobs.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

import tests.model.driver as driver  # noqa: E402
from dbt.adapters.branchspark.core.spark_session import local_session  # noqa: E402
from tests.model.cases import batches  # noqa: E402
from tests.spark_settings import FAST_SMALL_QUERIES, FAST_TEST_JVM, ONE_PARTITION  # noqa: E402


def jvm_figures(spark) -> dict:
    """The JVM's CPU seconds so far, and its collectors' and JIT compilers' milliseconds."""
    jvm = spark._jvm
    management = jvm.java.lang.management.ManagementFactory
    pid = jvm.java.lang.ProcessHandle.current().pid()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    figures = {"cpu_s": (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"),
               "jit_ms": management.getCompilationMXBean().getTotalCompilationTime()}
    for bean in management.getGarbageCollectorMXBeans():
        figures[f"gc {bean.getName()} ms"] = bean.getCollectionTime()
        figures[f"gc {bean.getName()} n"] = bean.getCollectionCount()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("keyed", "keyless"), default="keyed")
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--warm", type=int, default=30, help="cases of the warm-up batch")
    parser.add_argument("--conf", action="append", default=[], help="KEY=VALUE, a Spark setting")
    parser.add_argument("--driver-memory", help="the session's heap (the tests' default is in tests/spark_settings)")
    parser.add_argument("--jfr", help="record the measured batch with Java Flight Recorder into this file")
    parser.add_argument("--phases", action="store_true",
                        help="also print each phase's and each operation kind's wall time and Spark jobs")
    args = parser.parse_args()

    config = {**ONE_PARTITION, **FAST_SMALL_QUERIES, **FAST_TEST_JVM}
    config.update(pair.split("=", 1) for pair in args.conf)
    if args.driver_memory:
        config["spark.driver.memory"] = args.driver_memory
    if args.jfr:  # deep stacks, so that a sample names the Spark phase it belongs to
        config["spark.driver.extraJavaOptions"] += " -XX:FlightRecorderOptions:stackdepth=1024"
    spark = local_session("local[2]", config)

    drawn = []

    @settings(max_examples=2, deadline=None, derandomize=True, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), database=None)
    @given(batch=batches(args.kind == "keyed", args.cases, args.cases))
    def draw(batch):
        drawn.append(batch)

    draw()
    driver.run_batch(spark, drawn[0][:args.warm])

    readback = [0.0]
    json_rows = driver._json_rows

    def timed_json_rows(frames, extra=()):
        started = time.perf_counter()
        try:
            return json_rows(frames, extra)
        finally:
            readback[0] += time.perf_counter() - started

    driver._json_rows = timed_json_rows
    scheduler = spark.sparkContext._jsc.sc().dagScheduler()
    phases = PhaseClock(scheduler) if args.phases else None
    if phases:
        phases.wrap(driver, "_run_on_engine", lambda spark, tx, name, table, op, split=0: f"op {op[0]}")
        phases.wrap(driver.Batch, "build", lambda self: "build")
        phases.wrap(driver.Batch, "merge_and_check", lambda self: "merge and checks")
        phases.wrap(driver.Batch, "_check_rows", lambda self, settled: "  check rows")
        phases.wrap(driver.Batch, "_check_changes", lambda self, settled: "  check changes")
        phases.wrap(driver.Batch, "_check_merge_range", lambda self, head, settled: "  check merge range")
        phases.wrap(driver.Lakehouse, "merge", lambda self, *a, **k: "  merge, on_conflict " + (
            k["on_conflict"] if isinstance(k.get("on_conflict"), str) else "per table"))
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    if args.jfr:
        subprocess.run(["jcmd", str(pid), "JFR.start", "name=batch", "settings=profile", f"filename={args.jfr}"],
                       check=True, capture_output=True)
    before, jobs, started = jvm_figures(spark), scheduler.nextJobId(), time.perf_counter()
    problems = driver.run_batch(spark, drawn[1])
    wall = time.perf_counter() - started
    after = jvm_figures(spark)
    if args.jfr:
        subprocess.run(["jcmd", str(pid), "JFR.stop", "name=batch"], check=True, capture_output=True)
    print(f"{args.kind}: {len(drawn[1])} cases in {wall:.1f} s, {scheduler.nextJobId() - jobs} Spark jobs, "
          f"readbacks {readback[0]:.1f} s, {len(problems)} mismatch(es); settings {args.conf or 'as the tests'}")
    print("  " + ", ".join(f"{k} {after[k] - before[k]:.1f}" for k in after))
    if phases:
        phases.report()


class PhaseClock:
    """Wall time and Spark jobs per named phase, by wrapping the functions that make up a batch (nested phases
    count in their parents too)."""

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.seen: dict[str, list] = {}

    def wrap(self, owner, attribute: str, name_of) -> None:
        inner = getattr(owner, attribute)

        def timed(*args, **kwargs):
            name = name_of(*args, **kwargs)
            jobs, started = self.scheduler.nextJobId(), time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                row = self.seen.setdefault(name, [0, 0.0, 0])
                row[0] += 1
                row[1] += time.perf_counter() - started
                row[2] += self.scheduler.nextJobId() - jobs

        setattr(owner, attribute, timed)

    def report(self) -> None:
        print(f"  {'phase':<24} {'calls':>5} {'wall s':>7} {'jobs':>5} {'jobs/call':>9}")
        for name, (calls, wall, jobs) in sorted(self.seen.items(), key=lambda item: -item[1][1]):
            print(f"  {name:<24} {calls:>5} {wall:>7.1f} {jobs:>5} {jobs / calls:>9.1f}")


if __name__ == "__main__":
    main()
