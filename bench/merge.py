"""Cost of MERGE BRANCH against table size, and against a naive full-table three-way diff.

    python bench/merge.py [--small 1000000] [--large 10000000] [--changed 10000]

For each size, `main` holds a table with a primary key written by one insert. Branch `dev`
updates about half of `--changed` rows and inserts the other half; `main` then updates a tenth as
many other rows, so the merge is a real three-way merge (both sides moved). The timed merge
runs on a fresh branch made from `main` each time (O(1)), and commits. No key changed on both
sides, so dev's segments and tombstones join main as they are after one job that checks the keys.

A second case, `overlap`, merges dev into a branch that instead changed another column of a tenth
as many of the rows dev updated: those keys are decided per key (cell by cell) and the merge
writes a tombstone and a segment. Its ratio is printed too.

The naive merge is what a merge without a change log must do: read base, src and dest in full,
join them on the key, find the keys either side changed and resolve them; it writes only the
merged changes (noop sink), so it is charged for the diff, not for writing the table.

Prints both times per size and the ratios (targets: merge >= 20x faster than naive at the large
size, i.e. naive/merge >= 20; merge time grows < 1.5x from small to large).
"""
from __future__ import annotations

import argparse

from common import median_time, report, scratch_dir, spark_session
from pyspark.sql import functions as F

from dbt.adapters.branchspark.core.lakehouse import Lakehouse

TABLE = "bench.accounts"


def rows_of(spark, start: int, end: int):
    return spark.range(start, end).select(
        F.col("id"), (F.col("id") % 997).alias("balance"), F.concat(F.lit("acct-"), F.col("id").cast("string")).alias("name"))


def prepared(spark, rows: int, changed: int) -> tuple[Lakehouse, str]:
    """A catalog where `dev` and `dest` both moved since their base; returns (lakehouse, base commit)."""
    lakehouse = Lakehouse(spark, scratch_dir(f"merge-{rows}"))
    with lakehouse.transaction("main", message="load") as tx:
        tx.create_database("bench")
        tx.create_table_as(TABLE, rows_of(spark, 0, rows).repartition(4), primary_key=["id"])
    base = lakehouse.get_branch("main").head
    lakehouse.create_branch("dev")
    half = changed // 2
    step = rows // half  # spread the updates over every file of the table
    with lakehouse.transaction("dev", message="dev work") as tx:
        tx.update(TABLE, f"id % {step} = 0", {"balance": "balance + 1"})
        tx.insert(TABLE, rows_of(spark, rows, rows + half))
    with lakehouse.transaction("main", message="main work") as tx:
        tx.update(TABLE, f"id % {step * 10} = 1", {"name": "concat(name, '-main')"})
    lakehouse.create_branch("overlap", base)
    with lakehouse.transaction("overlap", message="work on keys dev also changed") as tx:
        tx.update(TABLE, f"id % {step * 10} = 0", {"name": "concat(name, '-other')"})
    return lakehouse, base


def naive_merge(lakehouse: Lakehouse, base: str, dest: str = "main") -> None:
    """Full-table three-way diff on the key, in Spark: every row of all three versions is read."""
    keys = ["id"]
    values = ["balance", "name"]
    sides = {}
    for label, ref in (("b", base), ("s", "dev"), ("d", dest)):
        frame = lakehouse.read(TABLE, ref)
        sides[label] = frame.select(*keys, *[F.col(c).alias(f"{label}_{c}") for c in values],
                                    F.lit(True).alias(f"{label}_in"))
    joined = sides["b"].join(sides["s"], keys, "full").join(sides["d"], keys, "full")

    def changed(side: str):
        same = F.coalesce(F.col(f"{side}_in"), F.lit(False)) == F.coalesce(F.col("b_in"), F.lit(False))
        for c in values:
            same = same & F.col(f"{side}_{c}").eqNullSafe(F.col(f"b_{c}"))
        return ~same

    merged = joined.filter(changed("s")).select(
        *keys, *[F.when(changed("d") & F.col(f"s_{c}").eqNullSafe(F.col(f"b_{c}")), F.col(f"d_{c}"))
                 .otherwise(F.col(f"s_{c}")).alias(c) for c in values])
    merged.write.format("noop").mode("overwrite").save()


def branchspark_merge(lakehouse: Lakehouse, counter: list[int], source: str = "main") -> None:
    counter[0] += 1
    dest = f"dest{counter[0]}"
    lakehouse.create_branch(dest, source)
    result = lakehouse.merge("dev", dest)
    assert result.status == "merged", result.summary()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", type=int, default=1_000_000)
    parser.add_argument("--large", type=int, default=10_000_000)
    parser.add_argument("--changed", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spark = spark_session()
    spark.sparkContext.setLogLevel("ERROR")
    timings = {}
    for rows in (args.small, args.large):
        lakehouse, base = prepared(spark, rows, args.changed)
        counter = [0]
        merge_s = median_time(lambda: branchspark_merge(lakehouse, counter), repeats=args.repeats)
        naive_s = median_time(lambda: naive_merge(lakehouse, base), repeats=args.repeats)
        overlap_s = median_time(lambda: branchspark_merge(lakehouse, counter, "overlap"), repeats=args.repeats)
        naive_overlap_s = median_time(lambda: naive_merge(lakehouse, base, "overlap"), repeats=args.repeats)
        timings[rows] = (merge_s, naive_s, overlap_s, naive_overlap_s)
        print(f"{rows:>12,} rows: merge {merge_s:.2f} s, naive diff {naive_s:.2f} s; overlapping keys: merge "
              f"{overlap_s:.2f} s, naive diff {naive_overlap_s:.2f} s", flush=True)
    small, large = timings[args.small], timings[args.large]
    report(f"merge of {args.changed:,} changed rows (median of {args.repeats})",
           [(f"branchspark merge, {args.small:,} rows", small[0]),
            (f"naive three-way diff, {args.small:,} rows", small[1]),
            (f"branchspark merge, {args.large:,} rows", large[0]),
            (f"naive three-way diff, {args.large:,} rows", large[1]),
            (f"overlapping keys: branchspark merge, {args.large:,} rows", large[2]),
            (f"overlapping keys: naive three-way diff, {args.large:,} rows", large[3])],
           [(f"merge growth {args.large:,} / {args.small:,} rows", large[0] / small[0], 1.5),
            (f"merge / naive at {args.large:,} rows (target: naive >= 20x)", large[0] / large[1], 0.05),
            (f"overlapping keys: merge growth {args.large:,} / {args.small:,} rows", large[2] / small[2], 1.5)])
    print(f"  naive / merge at {args.large:,} rows: {large[1] / large[0]:.1f}x faster (target >= 20x)")
    print(f"  overlapping keys, naive / merge at {args.large:,} rows: {large[3] / large[2]:.1f}x faster")


if __name__ == "__main__":
    main()
