"""Branch creation cost against catalog size, and scan cost of tombstones and compaction.

    python bench/branch_create.py [--rows 1000000]

Prints, measured side by side in one run:
- branch creation time on catalogs of 1 and 1,000 tables, and their ratio (target <= 1.5x);
- full-scan time of a table with 1% of its rows tombstoned, the same table after compaction,
  and the same rows as plain Parquet; ratios tombstoned/compacted (target <= 1.3x) and
  compacted/plain (target <= 1.05x).
"""
from __future__ import annotations

import argparse
import itertools
import shutil

from common import full_scan, median_time, report, scratch_dir, spark_session
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
    t_tombstoned = median_time(lambda: full_scan(tombstoned))

    lakehouse.branch("main").compact("bench.events")
    compacted = lakehouse.read("bench.events")
    t_compacted = median_time(lambda: full_scan(compacted))

    plain_dir = scratch_dir("plain")
    shutil.rmtree(plain_dir)
    compacted.write.parquet(plain_dir)
    plain = spark.read.parquet(plain_dir)
    t_plain = median_time(lambda: full_scan(plain))
    assert compacted.count() == plain.count() == tombstoned.count() == args.rows - args.rows // 100

    report(f"full scan of {args.rows:,} rows, 1% deleted",
           [("tombstoned (segments minus tombstones)", t_tombstoned), ("after compaction", t_compacted),
            ("plain Parquet", t_plain)],
           [("tombstoned / compacted", t_tombstoned / t_compacted, 1.3),
            ("compacted / plain Parquet", t_compacted / t_plain, 1.05)])


if __name__ == "__main__":
    main()
