"""`branchspark ui` page times (issue 54; targets from SPEC 10).

    python bench/ui.py [--scale 1.0] [--rows 10000000] [--changed 10000] [--repeats 5]

Prints, measured in one run against the app served on uvicorn in this process (real HTTP from a client
thread, as a browser would ask):
- each page's time on a catalog of 1,000 commits, 100 tables and 20 branches (target < 500 ms each): the
  first request (cold: commits and operations not yet read, Spark plans not yet compiled) and the median of
  `--repeats` warm ones;
- the first page of a diff between two versions of a 10M-row keyed table with 10k changed rows (target < 5 s):
  the compare page's table view (counts and the first 50 rows, cut in Spark), cold and warm.
`--scale 0.1` builds a tenth of everything (100 commits, 10 tables, 2 branches; 1M rows, 1k changed).

The catalog: 100 tables of 20 rows created on main; then commits spread over the branches, each touching one
table: every 25th inserts a row (a Spark write), the others set a table property (metadata only, so the
build takes minutes, not an hour); every fiftieth merges a branch into main. Page times depend on the count of
commits, tables and branches, not on what the commits wrote, except the pages that run Spark (compare counts
of an update, a diff's rows, a merge preview, a table's first rows), which are measured on the tables written
here. Then, side by side in the same process, the figures the pages now read from the catalog (a commit's
rows per table, a table's row count) as Spark jobs counted them before, each checked equal; and the merge
preview as the merge planner's dry run (as the page planned it before 2026-11-30: every row-level check of
the write, then the first keys in another job) against the planner as a report (core/diff/preview.py now),
their conflicts checked equal, with the Spark jobs each ran.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import threading
import time
import urllib.request

import uvicorn

from common import scratch_dir, side_by_side, spark_session

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.ui.app import create_app

TOKEN = "bench-token"


def build_catalog(spark, commits: int, tables: int, branches: int) -> tuple[Lakehouse, dict]:
    lh = Lakehouse(spark, scratch_dir("ui"))
    rows = spark.createDataFrame([(i, f"r{i}") for i in range(20)], "id bigint, name string")
    with lh.transaction("main", message=f"{tables} tables") as tx:
        tx.create_database("bench")
        for index in range(tables):
            tx.create_table_as(f"bench.t{index}", rows, primary_key=["id"])
    names = [f"feature/b{index}" for index in range(branches - 1)]
    for name in names:
        lh.create_branch(name, "main")
    made = 1 + 0  # the create commit
    serial = 100
    while made < commits:
        branch = names[made % len(names)] if names and made % 3 else "main"
        table = f"bench.t{made % tables}"
        if made % 50 == 0 and names:
            lh.merge(names[(made // 50) % len(names)], "main", on_conflict="theirs", message=f"merge {made}")
        elif made % 25 == 0:
            serial += 1
            lh.branch(branch).insert(table, spark.createDataFrame([(serial, f"n{serial}")], "id bigint, name string"),
                                     message=f"insert {serial} into {table}")
        else:
            lh.branch(branch).set_table_properties(table, {"step": str(made)}, message=f"step {made} on {table}")
        made += 1
        if made % 100 == 0:
            print(f"  {made} commits", flush=True)
    # one branch that changes rows, for compare and the merge preview
    lh.create_branch("review", "main")
    lh.branch("review").update("bench.t1", "id < 5", {"name": "'changed'"}, message="review: rename five")
    lh.branch("main").update("bench.t1", "id = 2", {"name": "'main side'"}, message="main: rename 2")
    head = lh.get_branch("main").head
    return lh, {"branches": "/", "history (first 100)": "/log/main", "history (page 5)": "/log/main?offset=400",
                "commit": f"/commit/{head}", "compare main...review": "/compare/main...review",
                "compare, table rows": "/compare/main...review?table=bench.t1",
                "merge preview (a conflict)": "/merge/review/into/main", "paused merge (none)": "/merge-status/main",
                "table": "/table/main/bench.t1"}


def build_big_diff(spark, rows: int, changed: int) -> tuple[Lakehouse, str]:
    lh = Lakehouse(spark, scratch_dir("ui-big"))
    frame = spark.range(rows).selectExpr("id", "id * 2 AS amount", "concat('row ', id) AS name")
    with lh.transaction("main", message=f"{rows} rows") as tx:
        tx.create_database("bench")
        tx.create_table_as("bench.big", frame, primary_key=["id"])
    lh.create_branch("dev", "main")
    step = max(rows // changed, 1)
    lh.branch("dev").update("bench.big", f"id % {step} = 0", {"amount": "amount + 1"}, message=f"{changed} changes")
    return lh, "/compare/main...dev?table=bench.big"


PORT = 0  # --port: the servers' port, one at a time (0: any free one)


def serve(lh: Lakehouse, keep: bool = True):
    port = PORT
    if not port:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(lh, TOKEN, reads_need_token=False, keep=keep), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    return server, thread, f"http://127.0.0.1:{port}"


def timed(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as response:
        response.read()
        assert response.status == 200, url
    return time.perf_counter() - start


def measure(lh: Lakehouse, pages: dict, repeats: int) -> dict[str, tuple[float, float, float]]:
    """Per page: the first request (nothing read yet), the median of repeats computed afresh (an app that keeps
    nothing: Spark's plans and the store's commits are warm), and of repeats an app answers from what it kept
    for the same commits (a page reviewed again, the branches not moved)."""
    found = {}
    lh = Lakehouse(lh.spark, lh.warehouse.root, lh.catalog_url)  # a server's first request reads the catalog
    server, thread, base = serve(lh, keep=False)
    for label, path in pages.items():
        cold = timed(base + path)
        fresh = statistics.median(timed(base + path) for _ in range(repeats))
        found[label] = (cold, fresh)
    server.should_exit = True
    thread.join(10)
    server, thread, base = serve(lh, keep=True)
    for label, path in pages.items():
        timed(base + path)
        kept = statistics.median(timed(base + path) for _ in range(repeats))
        found[label] = found[label] + (kept,)
    server.should_exit = True
    thread.join(10)
    return found


def spark_way(lh: Lakehouse, head: str, repeats: int) -> dict[str, tuple[float, float]]:
    """Side by side with the pages: the same figures counted by Spark jobs, as the pages did before they read
    the catalog (a commit's rows: its diff from the parent; a table's rows: a count), and what the catalog
    read costs in this process: (Spark, catalog) medians in seconds, each checked equal."""
    from dbt.adapters.branchspark.core.diff import TWO_DOT, branch_diff
    from dbt.adapters.branchspark.core.diff.counted import live_rows
    from dbt.adapters.branchspark.core.diff.report import report
    from dbt.adapters.branchspark.ui.commits import file_rows

    lh = Lakehouse(lh.spark, lh.warehouse.root, lh.catalog_url)
    commit = lh.store.get_commit(head)
    state = lh.snapshot(head).state("bench.t1")

    def median(action) -> tuple[float, object]:
        samples, value = [], None
        for _ in range(repeats):
            start = time.perf_counter()
            value = action()
            samples.append(time.perf_counter() - start)
        return statistics.median(samples), value

    spark_diff, counted = median(lambda: report(branch_diff(lh, commit.parents[0], commit.id, mode=TWO_DOT,
                                                            preview=False), limit=0))
    catalog_diff, rows = median(lambda: file_rows(lh, commit))
    changed = next(t for t in counted.tables if t.table == "bench.t1")
    assert list(rows.values())[0].written == changed.added + changed.modified, (rows, changed)
    spark_count, total = median(lambda: lh.snapshot(head).read("bench.t1").count())
    catalog_count, known = median(lambda: live_rows(lh.store, lh.warehouse, state))
    assert known in (None, total), (known, total)  # None: not exact from the catalog, the page counts in Spark
    if known is None:
        print("  (bench.t1 at main: its row count is not exact from the catalog; the table page counts in Spark)")
    return {"commit's rows per table": (spark_diff, catalog_diff), "table's row count": (spark_count, catalog_count)}


def preview_ways(lh: Lakehouse, src: str, dest: str, rounds: int) -> dict[str, tuple[float, int]]:
    """The merge preview's two ways side by side, in rounds that alternate them: the merge planner as a dry
    run plus the first keys (before) and as a report (now). {label: (median seconds, Spark jobs per run)}."""
    from pyspark.sql import functions as F

    from dbt.adapters.branchspark.core.diff.preview import KEYS_SHOWN, preview_merge
    from dbt.adapters.branchspark.core.merge.base import merge_base
    from dbt.adapters.branchspark.core.merge.merger import ThreeWayMerge
    from dbt.adapters.branchspark.core.merge.report import MergeResult

    lh = Lakehouse(lh.spark, lh.warehouse.root, lh.catalog_url)
    scheduler = lh.spark.sparkContext._jsc.sc().dagScheduler()

    def dry_run():
        src_head = lh.resolve(src).id
        planner = ThreeWayMerge(lh, src, src_head, dest, merge_base(lh.store, src_head, lh.get_branch(dest).head))
        result = MergeResult(src, dest, "", "merge", "dry-run")
        try:
            planner.plan(result)
            for plan in planner.data_plans.values():
                keys = [F.col(f"`{k}`") for k in plan.relation_keys]
                plan.decided.filter(F.col("_bs_rule").isNotNull()).select(*keys, "_bs_rule") \
                    .orderBy(*keys).limit(KEYS_SHOWN).collect()
        finally:
            planner.release()
        return result.conflicts

    def report():
        return preview_merge(lh, src, dest).conflicts

    before, now = dry_run(), report()
    assert before == now, (before, now)
    jobs = {}
    for label, action in (("dry run (before)", dry_run), ("report (now)", report)):
        first = scheduler.nextJobId()
        action()
        jobs[label] = scheduler.nextJobId() - first
    times = side_by_side({"dry run (before)": dry_run, "report (now)": report}, rounds=rounds, warmup=1)
    return {label: (wall, jobs[label]) for label, (wall, _) in times.items()}


def rows_page_ways(lh: Lakehouse, from_ref: str, to_ref: str, table: str, rounds: int) -> dict[str, float]:
    """A diff page's counts and first rows afresh, two ways side by side: a union of the counts' aggregate and
    the cut page (before 2026-11-30) against the counts carried on the rows (ui/compare.py now), checked equal."""
    from pyspark.sql import functions as F

    from dbt.adapters.branchspark.core.diff.counted import table_diff_counts
    from dbt.adapters.branchspark.core.diff.rows import DIFF_TYPES
    from dbt.adapters.branchspark.ui import compare

    lh = Lakehouse(lh.spark, lh.warehouse.root, lh.catalog_url)

    def union_way():
        rows = compare._table(lh, from_ref, to_ref, compare.THREE_DOT, table).rows
        keys = [F.col(f"`{k}`") for k in rows.primary_key]
        shown = rows.differing.select(*keys, compare.OLD, compare.NEW, compare.CHANGED).orderBy(*keys).limit(50)
        kind = rows.type_column
        counted = rows.relation().groupBy(kind).count().selectExpr(f"`{kind}` AS _bs_kind", "count AS _bs_count")
        page = shown.selectExpr("CAST(NULL AS STRING) AS _bs_kind", "CAST(NULL AS BIGINT) AS _bs_count",
                                f"struct({', '.join(f'`{c}`' for c in shown.columns)}) AS _bs_row")
        counts, page_rows = dict.fromkeys(DIFF_TYPES, 0), []
        for row in counted.unionByName(page, allowMissingColumns=True).collect():
            if row["_bs_kind"] is not None:
                counts[row["_bs_kind"]] = row["_bs_count"]
            else:
                page_rows.append(row["_bs_row"])
        return counts, len(page_rows)

    def carried_way():
        page = compare.table_page(lh, from_ref, to_ref, compare.THREE_DOT, table, 0, memo={})
        return page.counts, len(page.rows)

    found = compare._table(lh, from_ref, to_ref, compare.THREE_DOT, table)
    assert table_diff_counts(lh.store, lh.warehouse, found, {}) is None, "the counts must need Spark here"
    assert union_way() == carried_way(), (union_way(), carried_way())
    times = side_by_side({"union (before)": union_way, "counts on the rows (now)": carried_way}, rounds=rounds,
                         warmup=1)
    return {label: wall for label, (wall, _) in times.items()}


def show(found: dict, target: float) -> None:
    for label, (cold, fresh, kept) in found.items():
        print(f"  {label:<28} first {cold * 1000:7.0f} ms  afresh {fresh * 1000:7.0f} ms  kept {kept * 1000:6.0f} ms"
              f"  (target < {target * 1000:.0f} ms afresh: {'ok' if fresh < target else 'OVER TARGET'})")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} {five:.1f} {fifteen:.1f} on {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--changed", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-big", action="store_true")
    parser.add_argument("--port", type=int, default=0, help="the app's port (default: any free one)")
    args = parser.parse_args()
    global PORT
    PORT = args.port
    commits, tables = int(1000 * args.scale), max(int(100 * args.scale), 2)
    branches = max(int(20 * args.scale), 2)
    rows = args.rows or int(10_000_000 * args.scale)
    changed = args.changed or int(10_000 * args.scale)
    spark = spark_session()
    print(f"building {commits} commits, {tables} tables, {branches} branches ({load()})", flush=True)
    started = time.perf_counter()
    lh, pages = build_catalog(spark, commits, tables, branches)
    reachable = lh.store.reachable_commits([b.head for b in lh.list_branches()])
    print(f"built in {time.perf_counter() - started:.0f} s: {len(reachable)} commits, {len(lh.list_branches())} "
          f"branches", flush=True)
    found = measure(lh, pages, args.repeats)
    print(f"\n== page times, {commits} commits / {tables} tables / {branches + 1} branches ({load()})")
    show(found, 0.5)
    print(f"\n== the same figures counted by Spark jobs (as before) and read from the catalog, side by side "
          f"({load()})")
    for label, (by_spark, by_catalog) in spark_way(lh, lh.get_branch("main").head, args.repeats).items():
        print(f"  {label:<28} Spark {by_spark * 1000:7.0f} ms  catalog {by_catalog * 1000:6.1f} ms  "
              f"({by_spark / max(by_catalog, 1e-6):.0f}x)")
    print(f"\n== the merge preview of review into main, side by side ({load()})")
    ways = preview_ways(lh, "review", "main", max(args.repeats, 3))
    for label, (seconds, jobs) in ways.items():
        print(f"  {label:<28} {seconds * 1000:7.0f} ms  {jobs} Spark jobs")
    (old, _), (new, _) = ways.values()
    print(f"  report / dry run            {new / old:7.2f}x  ({load()})")
    print(f"\n== compare, table rows (afresh, keyed bench.t1 of main...review), side by side ({load()})")
    ways = rows_page_ways(lh, "main", "review", "bench.t1", max(args.repeats, 3))
    for label, seconds in ways.items():
        print(f"  {label:<28} {seconds * 1000:7.0f} ms")
    old, new = ways.values()
    print(f"  now / before                {new / old:7.2f}x  ({load()})")
    if args.skip_big:
        return
    print(f"\nbuilding a {rows:,}-row table with {changed:,} changed rows ({load()})", flush=True)
    started = time.perf_counter()
    big, path = build_big_diff(spark, rows, changed)
    print(f"built in {time.perf_counter() - started:.0f} s", flush=True)
    found = measure(big, {"diff first page": path}, max(args.repeats // 2, 1))
    print(f"\n== first page of a {rows:,}-row diff with {changed:,} changed rows ({load()})")
    show(found, 5.0)

if __name__ == "__main__":
    main()
