"""Branch creation cost against catalog size, and scan cost of tombstones and compaction.

    python bench/branch_create.py [--rows 1000000] [--rounds 25] [--forks 5]

Prints, measured side by side in one run:
- branch creation time on catalogs of 1 and 1,000 tables, and their ratio (target <= 1.5x);
- full-scan time of a table with 1% of its rows tombstoned, the same table after compaction,
  and the same rows as plain Parquet; ratios tombstoned/compacted (target <= 1.3x) and
  compacted/plain (target <= 1.05x). The three scans take turns in each round (the machine's load
  hits them alike); medians of wall time and of the Spark JVM's CPU time (steadier on a shared
  machine) are taken. That is done in several fresh JVMs (`--forks`, one after another), since JIT
  and GC luck differ from one JVM to the next: each JVM's ratios are printed, and their medians.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys

from common import full_scan, jvm_cpu_clock, median_time, report, scratch_dir, side_by_side, spark_session
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.branchspark.core.lakehouse import Lakehouse


def catalog_with_tables(spark, count: int) -> Lakehouse:
    lakehouse = Lakehouse(spark, scratch_dir(f"{count}tables"))
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("name", T.StringType())])
    with lakehouse.transaction("main", message=f"{count} tables") as tx:
        tx.create_database("bench")
        for index in range(count):
            tx.create_table(f"bench.t{index}", schema)
    return lakehouse


def branch_creation_time(lakehouse: Lakehouse) -> float:
    names = (f"b{i}" for i in itertools.count())
    return median_time(lambda: lakehouse.create_branch(next(names)), repeats=50, warmup=5)


SCANS = ("tombstoned (segments minus tombstones)", "after compaction", "plain Parquet",
         "the tombstoned version's files, read plainly")


def scan_timings(spark, rows: int, rounds: int) -> dict:
    """{label: (wall, cpu)} medians of full scans of the tombstoned, compacted and plain tables, and of
    the tombstoned version's data files read as plain Parquet (what the deletion vectors add to them)."""
    lakehouse = Lakehouse(spark, scratch_dir("scan"))
    data = spark.range(rows).select(
        F.col("id"), (F.col("id") % 1000).cast("double").alias("amount"),
        F.concat(F.lit("customer-"), (F.col("id") % 5000).cast("string")).alias("customer"))
    with lakehouse.transaction("main") as tx:
        tx.create_database("bench")
        tx.create_table_as("bench.events", data.repartition(4))
    lakehouse.branch("main").delete("bench.events", "id % 100 = 0")
    tombstoned = lakehouse.read("bench.events")
    snapshot = lakehouse.snapshot("main")
    segments = snapshot.ns.segment_infos(snapshot.state("bench.events").segments)
    segment_files = spark.read.parquet(*[lakehouse.warehouse.uri(f"{s.path}/{name}") for s in segments for name in s.files])
    # Compaction leaves the tombstoned version's files in place (only gc deletes files), so the
    # DataFrame above still reads it.
    lakehouse.branch("main").compact("bench.events")
    compacted = lakehouse.read("bench.events")
    plain_dir = scratch_dir("plain")
    shutil.rmtree(plain_dir)
    compacted.write.parquet(plain_dir)
    plain = spark.read.parquet(plain_dir)
    expected = rows - len(range(0, rows, 100))
    assert tombstoned.count() == compacted.count() == plain.count() == expected and segment_files.count() == rows
    # The same rows, not only as many: nothing differs either way (a shuffle, outside the timings).
    assert tombstoned.exceptAll(plain).isEmpty() and plain.exceptAll(tombstoned).isEmpty()

    # The timed action reads every column of every row (no collect); the three DataFrames are built
    # once, outside the timings (building them runs no Spark job). Rounds take them in turn.
    scans = dict(zip(SCANS, (tombstoned, compacted, plain, segment_files)))
    return side_by_side({label: (lambda df=df: full_scan(df)) for label, df in scans.items()},
                        rounds=rounds, warmup=5, cpu_clock=jvm_cpu_clock(spark))


def forked_scan_timings(rows: int, rounds: int) -> dict:
    """scan_timings in a fresh Spark JVM (this script run as a child process)."""
    child = subprocess.run([sys.executable, __file__, "--scan-only", "--rows", str(rows), "--rounds", str(rounds)],
                           check=True, capture_output=True, text=True)
    return json.loads(child.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=25, help="timed rounds of the three scans, per fork")
    parser.add_argument("--forks", type=int, default=5,
                        help="fresh Spark JVMs the scans are timed in, one after another (JIT and GC luck "
                             "differ from one JVM to the next; the medians of their ratios are reported)")
    parser.add_argument("--scan-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    spark = spark_session()
    if args.scan_only:  # a fork: its timings, as JSON, on the last line
        print(json.dumps(scan_timings(spark, args.rows, args.rounds)))
        return

    small, large = catalog_with_tables(spark, 1), catalog_with_tables(spark, 1000)
    t_small, t_large = branch_creation_time(small), branch_creation_time(large)
    report("branch creation", [("catalog of 1 table", t_small), ("catalog of 1,000 tables", t_large)],
           [("1,000 tables / 1 table", t_large / t_small, 1.5)])
    spark.stop()  # the forks below each start their own JVM

    print(f"\n== full scan of {args.rows:,} rows, 1% deleted: {args.forks} fresh JVMs, median of "
          f"{args.rounds} rounds in each")
    print("  (each JVM: tombstoned / compacted / plain / the tombstoned version's files read plainly; then the "
          "ratios, in the order below)")
    forks = []
    for index in range(args.forks):
        timings = forked_scan_timings(args.rows, args.rounds)
        (t_tomb, c_tomb), (t_comp, c_comp), (t_plain, c_plain), (t_files, c_files) = (timings[l] for l in SCANS)
        ratios = {"tombstoned / compacted, wall": t_tomb / t_comp, "compacted / plain Parquet, wall": t_comp / t_plain}
        extra = {"tombstoned / its files read plainly, wall": t_tomb / t_files}
        line = (f"  JVM {index + 1}: wall {t_tomb * 1000:.1f} / {t_comp * 1000:.1f} / {t_plain * 1000:.1f} / "
                f"{t_files * 1000:.1f} ms")
        if c_tomb is not None:
            ratios.update({"tombstoned / compacted, JVM CPU": c_tomb / c_comp,
                           "compacted / plain Parquet, JVM CPU": c_comp / c_plain})
            extra["tombstoned / its files read plainly, JVM CPU"] = c_tomb / c_files
            line += (f", JVM CPU {c_tomb * 1000:.1f} / {c_comp * 1000:.1f} / {c_plain * 1000:.1f} / "
                     f"{c_files * 1000:.1f} ms")
        print(line + "; ratios " + ", ".join(f"{value:.3f}x" for value in ratios.values()))
        forks.append({**ratios, **extra})
    targets = {"tombstoned / compacted": 1.3, "compacted / plain Parquet": 1.05}
    report(f"full scan of {args.rows:,} rows, 1% deleted: median over the {args.forks} JVMs", [],
           [(label, statistics.median(f[label] for f in forks), targets[label.split(",")[0]])
            for label in forks[0] if label.split(",")[0] in targets])
    for label in forks[0]:
        if label.split(",")[0] not in targets:  # what the deletion vectors cost over the same files
            print(f"  {label:<55} {statistics.median(f[label] for f in forks):10.3f}x  (no target)")
    print(f"  load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
