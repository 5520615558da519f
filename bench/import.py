"""Zero-copy import (issue 70) against copying the rows in, side by side in one run.

    python bench/import.py [--rows 10000000] [--changes 10000,100000] [--layout spread|recent]

A Delta table (deletion vectors on) and an Iceberg table (format 2, merge-on-read) of `--rows` rows are written by
Spark 4.1 with Delta's and Iceberg's runtimes (bench/peers_side.py in .venv-peers, `make peers`): the tables a
team already has. For each, branchspark (this Python's Spark 4.3) imports it (`Lakehouse.import_table`: one commit,
its files borrowed) and, beside it, copies it in (a CTAS of the imported table's rows, which writes every row);
printed: seconds (the import's: the median of three more under other names; the first in the process, which also
loads modules once, beside it), bytes written under the warehouse's tables and the ratio (targets: >= 100x faster,
0 data bytes). Then the source moves on by Spark 4.1 (a third of N rows updated, a third deleted, a third inserted:
three commits) and `refresh_import` brings the three commits, for each N of `--changes`: seconds, and the rows `branch_changes`
gives against the rows changed (target: the cost follows the changes, not the table). `--layout spread` (the
default): the sources' ids spread over 4 files and the changes spread over all of them, so every refresh touches
every file; `--layout recent`: the ids in order over `--files` files and the changes to the most recent ids, as
ingestion updates a table, so a refresh touches the files that hold them.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import scratch_dir, spark_session  # noqa: E402
from peers import PeersProcess, dir_bytes  # noqa: E402

from dbt.adapters.branchspark.core.changes import table_changes  # noqa: E402
from dbt.adapters.branchspark.core.lakehouse import Lakehouse  # noqa: E402

KINDS = ("delta", "iceberg_mor")


def timed(action):
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--changes", default="10000,100000", help="rows changed per refresh, comma-separated")
    parser.add_argument("--layout", choices=("spread", "recent"), default="spread")
    parser.add_argument("--files", type=int, default=1000, help="the sources' files with --layout recent")
    args = parser.parse_args()
    recent = args.layout == "recent"
    changes = [int(n) for n in args.changes.split(",")]
    root = scratch_dir("import")
    layout = f"ids in order over {args.files} files, recent rows changed" if recent else \
        "ids spread over 4 files, changes spread over the table"
    print(f"load average {os.getloadavg()[0]:.2f}; {args.rows:,} rows per source; {layout}", flush=True)
    peers = PeersProcess(root)
    built = peers("setup", total=args.rows, kinds=list(KINDS), files=args.files if recent else 0)
    print(f"sources written by Spark {peers.version}: {built['seconds']:.1f} s", flush=True)
    spark = spark_session()
    # branchspark loads pyiceberg on its first Iceberg import (about 1 s, once per process, as Spark's JVM
    # starts once): loaded here, so each import below is timed as a warm session runs it, as the CTAS is
    loaded, _ = timed(lambda: __import__("pyiceberg.table"))
    print(f"pyiceberg loaded once per process: {loaded:.2f} s", flush=True)
    warehouse = os.path.join(root, "warehouse")
    lh = Lakehouse(spark, warehouse)
    tables = os.path.join(warehouse, "tables")  # files only: the catalog's rows (catalog.db beside it) are no data

    def table_bytes() -> int:
        return dir_bytes(tables) if os.path.isdir(tables) else 0

    with lh.transaction("main", message="database") as tx:
        tx.create_database("bench")
    try:
        for kind in KINDS:
            source = peers("location", kind=kind)["path"]
            name, copy = f"bench.{kind}", f"bench.{kind}_copy"
            before = table_bytes()
            first, _ = timed(lambda: lh.import_table(source, name, format=kind.split("_")[0]))
            import_bytes = table_bytes() - before
            # again under other names: the first import of a kind in a process also loads its modules (pyiceberg's
            # Arrow bridge, the Delta log reader), once, as a warm session has them
            again = sorted(timed(lambda: lh.import_table(source, f"{name}_again{i}", format=kind.split("_")[0]))[0]
                           for i in range(3))
            imported = again[1]  # the median
            rows = lh.read(name).count()

            def ctas():
                with lh.transaction("main", message="copy in") as tx:
                    tx.create_table_as(copy, lh.read(name))

            before = table_bytes()
            copied, _ = timed(ctas)
            copy_bytes = table_bytes() - before
            print(f"  {kind:<12} import {imported:7.3f} s (median of 3; the first in this process {first:.3f} s), "
                  f"{import_bytes:>12,} bytes written | CTAS copy "
                  f"{copied:7.2f} s, {copy_bytes:>12,} bytes | {copied / imported:6.1f}x faster "
                  f"(target >= 100x: {'ok' if copied / imported >= 100 else 'UNDER'}), {rows:,} rows", flush=True)
            for round_index, changed in enumerate(changes):
                moved = peers("change_rows", kind=kind, total=args.rows, changed=changed, round_index=round_index,
                              recent=recent)
                head = lh.snapshot("main").commit_id
                seconds, commits = timed(lambda: lh.refresh_import(name))
                feed = table_changes(lh, name, head, lh.snapshot("main").commit_id)
                counted = {r[0]: r[1] for r in feed.groupBy("_change_type").count().collect()}
                # an updated row is a delete and an insert (SPEC 4)
                exact = counted == {"delete": moved["updated"] + moved["deleted"],
                                    "insert": moved["updated"] + moved["inserted"]}
                print(f"  {kind:<12} refresh after {changed:>7,} changed rows ({moved['seconds']:.1f} s at the "
                      f"source): {seconds:6.2f} s, {len(commits)} commits, feed {dict(sorted(counted.items()))} "
                      f"({'exact' if exact else 'NOT the changes made'})", flush=True)
    finally:
        peers.close()
        lh.store.dispose()


if __name__ == "__main__":
    main()
