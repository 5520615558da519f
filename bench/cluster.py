"""MERGE BRANCH and branch_changes through Spark Connect against in-process Spark.

    python bench/cluster.py [--rows 300000] [--changed 10000] [--repeats 3] [--rounds 2] [--url sc://host:port]

The same work as bench/merge.py (a three-way merge of `--changed` changed rows into a fresh
branch of main) and bench/changes.py (the changes DataFrame of one commit that changed
`--changed` rows, read in full), at a smaller default size, run twice: on an in-process
SparkSession (local[2], 4 GB driver) and as a Spark Connect client of a server with the same
master and memory. Without --url (or $BRANCHSPARK_TEST_CONNECT_URL) the script starts that
server itself with tests/connect_server.sh and stops it at the end. Each side runs in its own
process (a process is either a classic or a Connect client); the two sides alternate for
`--rounds` rounds and each keeps its best round, so a burst of load from other jobs on a shared
machine does not fall on one side only. Prints both times and the ratios Connect / in-process:
the price of planning on a remote driver (a round trip per DataFrame analysis and per action).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULT_PREFIX = "RESULT "
PORT = "15012"  # not the test server's port, so a bench run and `make test` can coexist


def measure(url: str, rows: int, changed: int, repeats: int) -> dict[str, float]:
    """Runs in a child process: both benchmarks on one kind of session."""
    from common import full_scan, median_time, scratch_dir, spark_session

    import changes as changes_bench
    import merge as merge_bench
    from dbt.adapters.branchspark.core.changes import table_changes
    from dbt.adapters.branchspark.core.spark_session import connect_session

    spark = connect_session(url, {"spark.sql.shuffle.partitions": "4"}) if url else spark_session()
    try:
        lakehouse, _ = merge_bench.prepared(spark, rows, changed)
        counter = [0]
        merge_s = median_time(lambda: merge_bench.branchspark_merge(lakehouse, counter), repeats=repeats)
        lakehouse, before, after = changes_bench.table_with_changes(spark, rows, changed)
        changes_s = median_time(lambda: full_scan(table_changes(lakehouse, changes_bench.TABLE, before, after)),
                                repeats=repeats)
        return {"merge": merge_s, "changes": changes_s}
    finally:
        spark.stop()  # a Connect client with an open session keeps its process alive


def run_side(url: str, args) -> dict[str, float]:
    command = [sys.executable, os.path.abspath(__file__), "--child", "--url", url, "--rows", str(args.rows),
               "--changed", str(args.changed), "--repeats", str(args.repeats)]
    out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True, cwd=HERE).stdout
    return json.loads(next(line for line in out.splitlines() if line.startswith(RESULT_PREFIX))[len(RESULT_PREFIX):])


def server(action: str) -> None:
    env = {**os.environ, "BRANCHSPARK_CONNECT_PORT": PORT, "BRANCHSPARK_CONNECT_MEMORY": "4g",
           "VENV": os.path.dirname(os.path.dirname(sys.executable))}
    subprocess.run(["bash", os.path.join(ROOT, "tests", "connect_server.sh"), action], check=True, env=env)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--changed", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--url", default=os.environ.get("BRANCHSPARK_TEST_CONNECT_URL", ""))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(RESULT_PREFIX + json.dumps(measure(args.url, args.rows, args.changed, args.repeats)), flush=True)
        return

    from common import report

    started = not args.url
    url = args.url or f"sc://127.0.0.1:{PORT}"
    if started:
        server("start")
    runs: dict[str, list[dict[str, float]]] = {"in-process": [], "Spark Connect": []}
    try:
        for round_ in range(args.rounds):
            sides = [("in-process", ""), ("Spark Connect", url)]
            for label, side_url in sides if round_ % 2 == 0 else sides[::-1]:
                runs[label].append(run_side(side_url, args))
                print(f"round {round_ + 1}, {label}: merge {runs[label][-1]['merge']:.2f} s, "
                      f"branch_changes {runs[label][-1]['changes']:.2f} s", flush=True)
    finally:
        if started:
            server("stop")
    local, remote = ({key: min(r[key] for r in runs[label]) for key in ("merge", "changes")}
                     for label in ("in-process", "Spark Connect"))
    what = f"{args.changed:,} changed rows in {args.rows:,} (median of {args.repeats}, best of {args.rounds} rounds)"
    report(f"Spark Connect ({url}) against in-process Spark: {what}",
           [("merge, in-process", local["merge"]), ("merge, Spark Connect", remote["merge"]),
            ("branch_changes, in-process", local["changes"]), ("branch_changes, Spark Connect", remote["changes"])],
           [("merge: Spark Connect / in-process", remote["merge"] / local["merge"], 1.5),
            ("branch_changes: Spark Connect / in-process", remote["changes"] / local["changes"], 1.5)])


if __name__ == "__main__":
    main()
