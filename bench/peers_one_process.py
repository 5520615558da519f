"""branchspark and Iceberg merge-on-read in one Spark 4.1 process, turn about: the upsert and the scan after 1%
deleted of bench/peers.py, without the process split (issue 72).

    python bench/peers_one_process.py [--scale 0.1] [--repeats 3] [--warmup 1] [--delta] [--keep]

bench/peers.py runs ours and the peers in JVMs of their own, and the peers' JVM runs three MERGEs a round
(Delta's, Iceberg's two modes) and three scans (Delta's, Iceberg's, plain Parquet) where ours runs one upsert
and two scans (ours, the floor): its JIT and Spark's code caches warm faster, and at 100k and 1M rows, where a
step takes 0.2-1.5 s, that warm-up is as large as the gaps. Here one session of .venv-peers' Spark 4.1 holds
Iceberg's runtime and branchspark's jar and extension (which adds two functions, no planner rule; the session's
file system for file: is then branchspark's, which Iceberg's Hadoop FileIO writes through as well: both sides
write through the same one); the same table (bench/peers_side.py's rows), the same upserts, then one DELETE of
1% on both, then full scans (every column hashed and summed; the sums must agree) of both and of a plain
Parquet copy of the live rows (the floor), each round in a rotating order. Run it with any Python: it starts
itself again under .venv-peers' (`make peers`).
`--delta` adds Delta Lake to the session (its extension, and its catalog as Spark's): its table takes the same
upserts, and the change feed of the last upsert is read in full on both, `branch_changes` against Delta's
`table_changes_by_path` (Delta's feed step of bench/peers.py); Delta's MERGE then warms the one JVM for every side.
Prints each round and the medians; exits 0 whatever the ratios are.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys

from common import scratch_dir  # puts the repo on sys.path

PEERS_PYTHON = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".venv-peers", "bin", "python")


def in_peers_python() -> None:
    """Start this script again under .venv-peers' Python (Spark 4.1 with Iceberg's runtime) unless it runs there."""
    if os.path.realpath(sys.prefix) == os.path.realpath(os.path.dirname(os.path.dirname(PEERS_PYTHON))):
        return
    if not os.path.exists(PEERS_PYTHON):
        raise SystemExit("bench/peers_one_process.py needs the peers' environment: run `make peers` first")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYTHONPATH")}
    env["PYSPARK_PYTHON"] = PEERS_PYTHON
    os.execve(PEERS_PYTHON, [PEERS_PYTHON, os.path.abspath(__file__), *sys.argv[1:]], env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=0.1, help="1.0: 10M rows, 10k changes")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds before the timed ones, each step")
    parser.add_argument("--delta", action="store_true", help="Delta Lake too: its upserts, and the change feed step")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    in_peers_python()

    import peers_side
    from peers import FLOOR, SPARK, peers_jars, report, rounds
    from peers_branchspark import Branchspark
    from dbt.adapters.branchspark.core.spark_session import local_session

    total, changed = int(10_000_000 * args.scale), max(int(10_000 * args.scale), 10)
    root = scratch_dir("peers_one_process")
    # our session settings add branchspark's jar and extension to these (deletion_vectors.session_config)
    extensions = ["org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"]
    config = {**SPARK, "spark.jars": ",".join(peers_jars()), **peers_side.iceberg_catalog(root)}
    if args.delta:
        extensions.insert(0, "io.delta.sql.DeltaSparkSessionExtension")
        config["spark.sql.catalog.spark_catalog"] = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    config["spark.sql.extensions"] = ",".join(extensions)
    spark = local_session(config["spark.master"], config)
    print(f"bench/peers_one_process.py: Spark {spark.version}, one process; {total:,} rows, {changed:,} changed "
          f"rows; {args.repeats} rounds after {args.warmup} untimed; load average {os.getloadavg()[0]:.1f}",
          flush=True)
    ours, peers = Branchspark(root, config), peers_side.Peers(root, [], {}, spark=spark)
    kinds = ("delta", "iceberg_mor") if args.delta else ("iceberg_mor",)
    results = {}
    try:
        ours.setup(total)
        peers.setup(total, kinds=kinds)
        sides = {"branchspark": lambda i: ours.upsert(total, changed, i)}
        for kind in kinds:
            sides[kind] = (lambda k: lambda i: peers.upsert(k, total, changed, i))(kind)
        upserts = rounds(sides, args.repeats, lambda label, run, i: run(i), args.warmup)
        results["upsert"] = {label: statistics.median(a["seconds"] for a in runs) for label, runs in upserts.items()}
        if args.delta:
            last = {label: runs[-1] for label, runs in upserts.items()}
            feeds = rounds({"branchspark": lambda i: ours.change_feed(last["branchspark"]["before"],
                                                                      last["branchspark"]["after"]),
                            "delta": lambda i: peers.change_feed("delta", last["delta"]["before"],
                                                                 last["delta"]["after"])},
                           args.repeats, lambda label, run, i: run(i), args.warmup)
            results["changes"] = {label: statistics.median(a["seconds"] for a in runs) for label, runs in feeds.items()}
        deletes = {"branchspark": ours.delete_percent()["seconds"],
                   "iceberg_mor": peers.delete_percent("iceberg_mor")["seconds"]}
        counts = {"branchspark": ours.count()["count"], "iceberg_mor": peers.count("iceberg_mor")["count"]}
        if len(set(counts.values())) != 1:
            raise SystemExit(f"the sides hold different rows after the deletes: {counts}")
        ours.floor_scan()  # its copy written before the rounds
        scans = rounds({"branchspark": lambda i: ours.full_scan(),
                        "iceberg_mor": lambda i: peers.full_scan("iceberg_mor"),
                        FLOOR: lambda i: ours.floor_scan()}, args.repeats, lambda label, run, i: run(i), args.warmup)
        sums = {label: tuple(runs[-1]["sum"]) for label, runs in scans.items()}
        if len(set(sums.values())) != 1:
            raise SystemExit(f"the sides read different rows after the deletes (hash sums): {sums}")
        results["scan"] = {label: statistics.median(a["seconds"] for a in runs) for label, runs in scans.items()}
        results["delete 1% (one run)"] = deletes
        report(results, {})
        print(f"rows after the deletes, both sides: {counts['branchspark']:,}")
    finally:
        spark.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
