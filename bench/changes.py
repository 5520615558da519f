"""Cost of branch_changes against table size: the same 10k changed rows in tables of 1M and 10M rows.

    python bench/changes.py [--small 1000000] [--large 10000000] [--changed 10000]

Each table is written by one insert; then one commit deletes, updates and inserts about a
third of `--changed` rows each, spread over the whole table. The timed action builds the
changes DataFrame of that commit and reads all of it (noop write). Prints both times and
their ratio (target <= 1.5x: the cost follows the changes, not the table).
"""
from __future__ import annotations

import argparse

from common import full_scan, median_time, report, scratch_dir, spark_session
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.changes import table_changes
from dbt.adapters.branchspark.core.lakehouse import Lakehouse

TABLE = "bench.events"


def rows_of(spark, start: int, end: int):
    return spark.range(start, end).select(
        F.col("id"), (F.col("id") % 1000).cast("double").alias("amount"),
        F.concat(F.lit("customer-"), (F.col("id") % 5000).cast("string")).alias("customer"))


def table_with_changes(spark, rows: int, changed: int) -> tuple[Lakehouse, str, str]:
    """A table of `rows` rows and one commit changing `changed` of them; (lakehouse, before, after)."""
    lakehouse = Lakehouse(spark, scratch_dir(f"changes-{rows}"))
    with lakehouse.transaction("main", message="load") as tx:
        tx.create_database("bench")
        tx.create_table_as(TABLE, rows_of(spark, 0, rows).repartition(4))
    before = lakehouse.get_branch("main").head
    third = changed // 3
    step = rows // third  # spread the touched rows over every file of the table
    with lakehouse.transaction("main", message="change") as tx:
        tx.delete(TABLE, f"id % {step} = 0")
        tx.update(TABLE, f"id % {step} = 1", {"amount": "amount + 0.5"})
        tx.insert(TABLE, rows_of(spark, rows, rows + changed - 2 * third))
    return lakehouse, before, lakehouse.get_branch("main").head


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", type=int, default=1_000_000)
    parser.add_argument("--large", type=int, default=10_000_000)
    parser.add_argument("--changed", type=int, default=10_000)
    args = parser.parse_args()
    spark = spark_session()

    timings, counts = [], []
    for rows in (args.small, args.large):
        lakehouse, before, after = table_with_changes(spark, rows, args.changed)
        counts.append(table_changes(lakehouse, TABLE, before, after).groupBy("_change_type").count().collect())
        seconds = median_time(lambda: full_scan(table_changes(lakehouse, TABLE, before, after)), repeats=5)
        timings.append((f"changes of {args.changed:,} rows in a table of {rows:,} rows", seconds))
    assert sorted(map(tuple, counts[0])) == sorted(map(tuple, counts[1])), counts
    print("change rows per type:", ", ".join(f"{kind}={n:,}" for kind, n in sorted(map(tuple, counts[0]))))
    report("branch_changes: cost against table size", timings,
           [(f"{args.large:,} rows / {args.small:,} rows", timings[1][1] / timings[0][1], 1.5)])


if __name__ == "__main__":
    main()
