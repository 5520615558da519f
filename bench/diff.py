"""Cost of branch_diff against table size, and against a naive comparison of the two versions.

    python bench/diff.py [--small 1000000] [--large 10000000] [--changed 10000] [--repeats 5]

Each table (keyed by id) is written on main by one insert; branch dev then changes `--changed` rows in
one commit (a third each deleted, updated and inserted, spread over the whole table), and main moves on
with one small insert of its own. The timed action is the three-dot diff main...dev of the table, read
in full (noop write): metadata planning plus the Spark job. Prints:
- the diff at 10M rows against the diff at 1M rows (target <= 1.5x: the cost follows the changes);
- a naive diff at 10M (a full outer join of both versions on the key, keeping rows that differ) against
  branch_diff at 10M (target: branch_diff at least 20x faster). The naive one compares the heads
  (two-dot), which is less work than a three-dot diff, and still reads both tables whole.
"""
from __future__ import annotations

import argparse

from common import full_scan, median_time, report, scratch_dir, spark_session
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.diff import branch_diff
from dbt.adapters.branchspark.lakehouse import Lakehouse

TABLE = "bench.orders"


def rows_of(spark, start: int, end: int):
    return spark.range(start, end).select(
        F.col("id"), (F.col("id") % 1000).cast("double").alias("amount"),
        F.concat(F.lit("customer-"), (F.col("id") % 5000).cast("string")).alias("customer"))


def branches_with_changes(spark, rows: int, changed: int) -> Lakehouse:
    lakehouse = Lakehouse(spark, scratch_dir(f"diff-{rows}"))
    with lakehouse.transaction("main", message="load") as tx:
        tx.create_database("bench")
        tx.create_table_as(TABLE, rows_of(spark, 0, rows).repartition(4), primary_key=["id"])
    lakehouse.create_branch("dev")
    third = changed // 3
    step = rows // third  # spread the touched rows over every file of the table
    with lakehouse.transaction("dev", message="change") as tx:
        tx.delete(TABLE, f"id % {step} = 0")
        tx.update(TABLE, f"id % {step} = 1", {"amount": "amount + 0.5"})
        tx.insert(TABLE, rows_of(spark, rows, rows + changed - 2 * third))
    with lakehouse.transaction("main", message="main moves on") as tx:
        tx.insert(TABLE, rows_of(spark, 2 * rows, 2 * rows + 100))
    return lakehouse


def diff_frame(lakehouse: Lakehouse):
    return branch_diff(lakehouse, "main", "dev", mode="three_dot", preview=False).table(TABLE).relation()


def naive_frame(lakehouse: Lakehouse):
    """Both heads read whole, full outer join on the key, the rows whose values differ."""
    old, new = lakehouse.read(TABLE, at="main").alias("o"), lakehouse.read(TABLE, at="dev").alias("n")
    differs = (F.col("o.id").isNull() | F.col("n.id").isNull() | ~F.col("o.amount").eqNullSafe(F.col("n.amount"))
               | ~F.col("o.customer").eqNullSafe(F.col("n.customer")))
    return old.join(new, F.col("o.id") == F.col("n.id"), "full_outer").filter(differs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", type=int, default=1_000_000)
    parser.add_argument("--large", type=int, default=10_000_000)
    parser.add_argument("--changed", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    spark = spark_session()

    timings, counts, large = [], [], None
    for rows in (args.small, args.large):
        lakehouse = branches_with_changes(spark, rows, args.changed)
        counts.append(sorted(map(tuple, diff_frame(lakehouse).groupBy("_diff_type").count().collect())))
        seconds = median_time(lambda: full_scan(diff_frame(lakehouse)), repeats=args.repeats)
        timings.append((f"three-dot diff, {args.changed:,} changed rows in {rows:,}", seconds))
        large = lakehouse
    assert counts[0] == counts[1], counts
    print("diff rows per type:", ", ".join(f"{kind}={n:,}" for kind, n in counts[0]))
    naive = median_time(lambda: full_scan(naive_frame(large)), repeats=args.repeats)
    timings.append((f"naive full outer join of both heads, {args.large:,}", naive))
    report("branch_diff: cost against table size, and against a naive diff", timings,
           [(f"diff {args.large:,} rows / {args.small:,} rows", timings[1][1] / timings[0][1], 1.5),
            (f"branch_diff / naive at {args.large:,} rows (target 1/20)", timings[1][1] / naive, 0.05)])


if __name__ == "__main__":
    main()
