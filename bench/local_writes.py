"""Small writes on a local master with Hadoop's local file system against ours, side by side in one run.

    .venv/bin/python bench/local_writes.py [--rounds 9] [--writes 10]

Hadoop's local file system starts a `chmod` process for every directory a write makes (no native library
in pyspark); branchspark's sets the bits through java.nio (core/storage/local_files.py). A JVM has one
file system for `file:`, so each side is a worker process with its own session: `hadoop` names Hadoop's
class (a file system the caller names is kept), `branchspark` takes the default. The parent alternates
rounds between them, each round `--writes` of each kind, and prints median milliseconds per write and
the ratio branchspark / hadoop:
- a Parquet write of 100 rows (`DataFrame.write.parquet`);
- a branchspark upsert of 5 keys into a 100-row keyed table (`Lakehouse.upsert`);
- a branchspark overwrite of a 100-row keyless table changing 5 rows (a dbt table model's rebuild).
"""
from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time

import common  # noqa: F401  (puts the repo on sys.path)

KINDS = ("parquet write", "upsert", "rebuild")
SIDES = {"hadoop": {"spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.LocalFileSystem"}, "branchspark": {}}


def _worker(side: str, commands, results) -> None:
    from dbt.adapters.branchspark.core.lakehouse import Lakehouse
    from dbt.adapters.branchspark.core.spark_session import local_session

    spark = local_session("local[2]", {"spark.sql.shuffle.partitions": "2", **SIDES[side]})
    root = tempfile.mkdtemp(prefix=f"bench-local-writes-{side}-")
    lh = Lakehouse(spark, f"{root}/warehouse")
    with lh.transaction("main", message="bench tables") as tx:
        tx.create_database("b")
        tx.create_table_as("b.keyed", spark.range(100).selectExpr("id", "id * 2 as v"), primary_key=["id"])
        tx.create_table_as("b.keyless", spark.range(100).selectExpr("id", "id * 2 as v"))
    main = lh.branch("main")
    counter = [0]

    def parquet_write():
        counter[0] += 1
        spark.range(100).write.parquet(f"{root}/plain/{counter[0]}")

    def upsert():
        counter[0] += 1
        main.upsert("b.keyed", spark.range(5).selectExpr("id", f"id + {counter[0]} as v"))

    def rebuild():
        counter[0] += 1
        main.overwrite("b.keyless", spark.range(100).selectExpr(
            "id", f"if(id < 5, id + {counter[0]}, id * 2) as v"))

    actions = dict(zip(KINDS, (parquet_write, upsert, rebuild)))
    while True:
        writes = commands.get()
        if writes is None:
            return
        timings = {}
        for kind, action in actions.items():
            start = time.perf_counter()
            for _ in range(writes):
                action()
            timings[kind] = (time.perf_counter() - start) / writes
        results.put((side, timings))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--writes", type=int, default=10)
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")  # each side its own JVM
    results = context.Queue()
    workers = {}
    for side in SIDES:
        commands = context.Queue()
        process = context.Process(target=_worker, args=(side, commands, results), daemon=True)
        process.start()
        workers[side] = (process, commands)
    samples = {(side, kind): [] for side in SIDES for kind in KINDS}
    for round_number in range(args.rounds + 1):  # round 0 warms both JVMs up, untimed
        order = list(SIDES) if round_number % 2 else list(reversed(SIDES))
        for side in order:  # one side at a time: they do not share the cores within a round
            workers[side][1].put(args.writes)
            got_side, timings = results.get(timeout=1800)
            if round_number:
                for kind, seconds in timings.items():
                    samples[(got_side, kind)].append(seconds)
    for process, commands in workers.values():
        commands.put(None)
        process.join(timeout=60)
    print(f"small writes on local[2], median of {args.rounds} rounds of {args.writes} writes each:")
    for kind in KINDS:
        hadoop = statistics.median(samples[("hadoop", kind)])
        ours = statistics.median(samples[("branchspark", kind)])
        print(f"  {kind:14s} Hadoop's local file system {hadoop * 1000:7.1f} ms, branchspark's "
              f"{ours * 1000:7.1f} ms: {ours / hadoop:.2f}x")


if __name__ == "__main__":
    main()
