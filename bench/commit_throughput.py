"""Commits per second on one branch with 1, 4 and 8 concurrent writer processes, SQLite and PostgreSQL.

    python bench/commit_throughput.py [--commits 25]

Each writer is its own OS process that makes `--commits` commits on `main` (a table property of its own,
so every commit is a real catalog commit and none conflicts); they start together. A writer whose head
moved is replayed onto the new head by the merge rules, so contention costs replays, not failures.
The commits are catalog-only (no Spark job), so the figures are the catalog's: a data write adds its Spark
job's time before the commit. PostgreSQL is the private server of tests/pg_server.sh (started if
BRANCHSPARK_TEST_PG_URL is not set, and stopped again).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from common import scratch_dir

from dbt.adapters.branchspark.core.lakehouse import Lakehouse

ROOT = Path(__file__).resolve().parents[1]
WRITERS = (1, 4, 8)


def worker(warehouse: str, catalog: str | None, index: int, commits: int, barrier: str) -> None:
    lakehouse = Lakehouse(None, warehouse, catalog)  # catalog-only: no Spark session
    (Path(barrier) / f"ready-{index}").touch()
    while not (Path(barrier) / "go").exists():
        time.sleep(0.01)
    for i in range(commits):
        lakehouse.branch("main").set_table_properties("bench.t", {f"writer{index}": str(i)},
                                                      message=f"writer {index} commit {i}")


def measure(catalog: str | None, writers: int, commits: int) -> float:
    warehouse = scratch_dir("commits")
    lakehouse = Lakehouse(None, warehouse, catalog)
    from pyspark.sql import types as T

    with lakehouse.transaction("main") as tx:
        tx.create_database("bench")
        tx.create_table("bench.t", T.StructType([T.StructField("id", T.LongType())]))
    barrier = scratch_dir("barrier")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    processes = [subprocess.Popen([sys.executable, __file__, "--worker", warehouse, catalog or "", str(w),
                                   str(commits), barrier], env=env) for w in range(writers)]
    while len(list(Path(barrier).glob("ready-*"))) < writers:
        time.sleep(0.01)
    start = time.perf_counter()
    (Path(barrier) / "go").touch()
    for process in processes:
        if process.wait() != 0:
            raise SystemExit(f"a writer failed ({process.returncode})")
    elapsed = time.perf_counter() - start
    landed = [c for c in lakehouse.log("main") if c.message.startswith("writer ")]
    assert len(landed) == writers * commits, (len(landed), writers * commits)  # none lost, none twice
    props = lakehouse.snapshot("main").table("bench.t").properties
    assert all(props[f"writer{w}"] == str(commits - 1) for w in range(writers))
    lakehouse.store.dispose()
    if catalog:
        from tests.pg_catalog import drop_database

        drop_database(os.environ["BRANCHSPARK_TEST_PG_URL"], catalog)
    return writers * commits / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=25, help="commits per writer")
    parser.add_argument("--worker", nargs=5)
    args = parser.parse_args()
    if args.worker:
        warehouse, catalog, index, commits, barrier = args.worker
        worker(warehouse, catalog or None, int(index), int(commits), barrier)
        return
    started_pg = "BRANCHSPARK_TEST_PG_URL" not in os.environ
    if started_pg:
        os.environ["BRANCHSPARK_TEST_PG_URL"] = subprocess.run(
            [str(ROOT / "tests" / "pg_server.sh"), "start"], check=True, capture_output=True, text=True).stdout.strip()
    from tests.pg_catalog import create_database

    try:
        print(f"\n== commits per second on one branch ({args.commits} commits per writer, catalog-only commits)")
        print(f"  {'writers':>8} {'SQLite':>12} {'PostgreSQL':>12}")
        for writers in WRITERS:
            sqlite = measure(None, writers, args.commits)
            postgres = measure(create_database(os.environ["BRANCHSPARK_TEST_PG_URL"]), writers, args.commits)
            print(f"  {writers:>8} {sqlite:>12.1f} {postgres:>12.1f}", flush=True)
    finally:
        if started_pg:
            subprocess.run([str(ROOT / "tests" / "pg_server.sh"), "stop"], check=False)


if __name__ == "__main__":
    main()
