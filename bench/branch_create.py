"""Branch creation cost against catalog size, and scan cost of tombstones and compaction.

    python bench/branch_create.py [--rows 1000000] [--rounds 25]

Prints, measured side by side in one run:
- branch creation time on catalogs of 1 and 1,000 tables, and their ratio (target <= 1.5x);
- full-scan time of a table with 1% of its rows tombstoned, the same table after compaction,
  and the same rows as plain Parquet; ratios tombstoned/compacted (target <= 1.3x) and
  compacted/plain (target <= 1.05x). The three scans take turns in each round (the machine's load
  hits them alike); medians of wall time and of the Spark JVM's CPU time (steadier on a shared
  machine) are printed.
"""
from __future__ import annotations

import argparse
import itertools
import os
import shutil

from common import full_scan, jvm_cpu_clock, median_time, report, scratch_dir, side_by_side, spark_session
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.branchspark.lakehouse import Lakehouse


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=25, help="timed rounds of the three scans")
    args = parser.parse_args()
    spark = spark_session()

    small, large = catalog_with_tables(spark, 1), catalog_with_tables(spark, 1000)
    t_small, t_large = branch_creation_time(small), branch_creation_time(large)
    report("branch creation", [("catalog of 1 table", t_small), ("catalog of 1,000 tables", t_large)],
           [("1,000 tables / 1 table", t_large / t_small, 1.5)])

    lakehouse = Lakehouse(spark, scratch_dir("scan"))
    data = spark.range(args.rows).select(
        F.col("id"), (F.col("id") % 1000).cast("double").alias("amount"),
        F.concat(F.lit("customer-"), (F.col("id") % 5000).cast("string")).alias("customer"))
    with lakehouse.transaction("main") as tx:
        tx.create_database("bench")
        tx.create_table_as("bench.events", data.repartition(4))
    lakehouse.branch("main").delete("bench.events", "id % 100 = 0")
    tombstoned = lakehouse.read("bench.events")
    # Compaction leaves the tombstoned version's files in place (only gc deletes files), so the
    # DataFrame above still reads it.
    lakehouse.branch("main").compact("bench.events")
    compacted = lakehouse.read("bench.events")
    plain_dir = scratch_dir("plain")
    shutil.rmtree(plain_dir)
    compacted.write.parquet(plain_dir)
    plain = spark.read.parquet(plain_dir)
    expected = args.rows - len(range(0, args.rows, 100))
    assert tombstoned.count() == compacted.count() == plain.count() == expected
    # The same rows, not only as many: nothing differs either way (a shuffle, outside the timings).
    assert tombstoned.exceptAll(plain).isEmpty() and plain.exceptAll(tombstoned).isEmpty()

    # The timed action reads every column of every row (no collect); the three DataFrames are built
    # once, outside the timings (building them runs no Spark job). Rounds take the three in turn.
    scans = {"tombstoned (segments minus tombstones)": tombstoned, "after compaction": compacted,
             "plain Parquet": plain}
    timings = side_by_side({label: (lambda df=df: full_scan(df)) for label, df in scans.items()},
                           rounds=args.rounds, warmup=5, cpu_clock=jvm_cpu_clock(spark))
    (t_tomb, c_tomb), (t_comp, c_comp), (t_plain, c_plain) = timings.values()
    rows = [(f"{label}, wall", wall) for label, (wall, _) in timings.items()]
    ratios = [("tombstoned / compacted, wall", t_tomb / t_comp, 1.3),
              ("compacted / plain Parquet, wall", t_comp / t_plain, 1.05)]
    if c_tomb is not None:
        rows += [(f"{label}, JVM CPU", cpu) for label, (_, cpu) in timings.items()]
        ratios += [("tombstoned / compacted, JVM CPU", c_tomb / c_comp, 1.3),
                   ("compacted / plain Parquet, JVM CPU", c_comp / c_plain, 1.05)]
    report(f"full scan of {args.rows:,} rows, 1% deleted (median of {args.rounds} rounds)", rows, ratios)
    print(f"  load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
