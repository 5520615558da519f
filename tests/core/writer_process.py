"""A writer run as its own OS process by the crash and concurrency tests (and bench/commit_throughput.py).

    writer_process.py WAREHOUSE insert --branch B --table T --first-id N [--commits C --rows R]
    writer_process.py WAREHOUSE merge --source S --branch B
    writer_process.py WAREHOUSE gc [--grace SECONDS]
    writer_process.py WAREHOUSE stale-insert --branch B --table T --first-id N
        (a transaction whose head another commit moves before it commits: the replay path)
    writer_process.py WAREHOUSE stale-update --branch B --table T
        (an update of id 1 whose row another commit changes before it commits: it runs again there)
    writer_process.py WAREHOUSE increment-and-insert --branch B --table T --first-id N --commits C
        (C times: `update T set n = n + 1 where id = 1` as dbt sends it, then insert row (N + i) into T_log;
        prints "incremented", "inserted <id>" or "conflict <the WriteConflict line>" for each)

With BRANCHSPARK_FAULT=<point> it dies (SIGKILL) at that fault-injection point; at the end it prints how often
it passed each point ("passed retry.after_staged_commit 3"): the concurrency tests check that their writers
took each way a write lands on a moved head. `--catalog` selects the
catalog URL (default: SQLite in the warehouse); `--barrier DIR` lines processes up: each, once warm, creates
DIR/ready-<pid> and waits for DIR/go. It prints one line per commit ("committed <i> <seconds>") and "done" at the end.

Where $BRANCHSPARK_TEST_CONNECT_URL names a Spark Connect server (tests/run.sh starts one), a writer is a
client of it instead of starting a JVM of its own: a dozen JVM starts on two cores cost minutes per test,
and what these tests check (commits racing through the catalog, a process dying between two steps) is the
Python process's either way.
"""
import argparse
import os
import time
from collections import Counter
from pathlib import Path

from dbt.adapters.branchspark.core.sql.branch_session import BranchSession, statement_transaction
from dbt.adapters.branchspark.core.errors import WriteConflict
from dbt.adapters.branchspark.core.lakehouse import Lakehouse, fault_from_env
from dbt.adapters.branchspark.core.sql.router import StatementRouter
from dbt.adapters.branchspark.core.spark_session import connect_session, local_session
from tests.spark_settings import FAST_SMALL_QUERIES

# A small, quick JVM: many of these run at once on two cores.
SMALL_SPARK = {"spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
               "spark.driver.memory": "512m", "spark.ui.enabled": "false", **FAST_SMALL_QUERIES,
               "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss4m"}
# The same through the shared Connect server: a writer's few rows need neither adaptive planning, nor
# whole-stage code, nor two tasks per shuffle.
CONNECT_WRITER_SETTINGS = {**FAST_SMALL_QUERIES, "spark.sql.shuffle.partitions": "1"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("warehouse")
    parser.add_argument("action", choices=["insert", "merge", "gc", "stale-insert", "stale-update",
                                           "increment-and-insert"])
    parser.add_argument("--catalog")
    parser.add_argument("--branch", default="main")
    parser.add_argument("--table")
    parser.add_argument("--first-id", type=int, default=0)
    parser.add_argument("--commits", type=int, default=1)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--source")
    parser.add_argument("--barrier")
    parser.add_argument("--grace", type=float, default=0.0, help="gc: keep files younger than this (seconds)")
    args = parser.parse_args()

    spark = writer_session() if args.action != "gc" else None
    try:
        run(args, spark)
    finally:
        if spark is not None and os.environ.get(CONNECT_URL):
            spark.stop()  # an open Connect session keeps the process from exiting


CONNECT_URL = "BRANCHSPARK_TEST_CONNECT_URL"


def writer_session():
    if os.environ.get(CONNECT_URL):
        # The core's factory passes a Connect client only the settings users may change (spark_session's
        # CONNECT_RUNTIME_SETTINGS): a test writer sets the test settings on its session itself.
        session = connect_session(os.environ[CONNECT_URL])
        for key, value in CONNECT_WRITER_SETTINGS.items():
            session.conf.set(key, value)
        return session
    return local_session("local[1]", SMALL_SPARK)


def run(args, spark) -> None:
    passed = Counter()
    die_at = fault_from_env()

    def fault(point: str) -> None:
        passed[point] += 1
        if die_at:
            die_at(point)

    lakehouse = Lakehouse(spark, args.warehouse, args.catalog, fault=fault)
    if args.action in ("insert", "increment-and-insert"):
        spark.range(1).count()  # warm up before the start line
    if args.barrier:
        barrier = Path(args.barrier)
        (barrier / f"ready-{os.getpid()}").touch()
        while not (barrier / "go").exists():
            time.sleep(0.05)
    if args.action == "insert":
        for i in range(args.commits):
            first = args.first_id + i * args.rows
            rows = spark.range(first, first + args.rows).selectExpr("id", "cast(id * 10 as double) as amount")
            started = time.monotonic()
            lakehouse.branch(args.branch).insert(args.table, rows, message=f"insert from {first}")
            print(f"committed {i} {time.monotonic() - started:.3f}", flush=True)
    elif args.action == "stale-insert":
        def rows_from(first):
            return spark.range(first, first + args.rows).selectExpr("id", "cast(id * 10 as double) as amount")

        slow = lakehouse.transaction(args.branch, message=f"insert from {args.first_id}")
        slow.insert(args.table, rows_from(args.first_id))
        lakehouse.branch(args.branch).insert(args.table, rows_from(args.first_id + args.rows),
                                             message=f"insert from {args.first_id + args.rows}")
        slow.commit()
        print("committed stale", flush=True)
    elif args.action == "stale-update":
        slow = lakehouse.transaction(args.branch, message="update id 1 by one")
        slow.replayable(lambda tx: tx.update(args.table, "id = 1", {"amount": "amount + 1"}))
        lakehouse.branch(args.branch).update(args.table, "id = 1", {"amount": "amount + 100"},
                                             message="update id 1 by 100")
        slow.commit()
        print("committed stale", flush=True)
    elif args.action == "increment-and-insert":
        session = BranchSession(spark, lakehouse, args.branch)
        router = StatementRouter(spark, session, lambda what: statement_transaction(session, None, what))
        for i in range(args.commits):
            try:
                router.execute(f"update {args.table} set n = n + 1 where id = 1")
                print("incremented", flush=True)
            except WriteConflict as exc:
                print(f"conflict {exc}", flush=True)
            key = args.first_id + i
            row = spark.createDataFrame([(key,)], "id bigint")
            try:
                lakehouse.branch(args.branch).insert(f"{args.table}_log", row)
                print(f"inserted {key}", flush=True)
            except WriteConflict as exc:
                print(f"conflict {exc}", flush=True)
    elif args.action == "merge":
        result = lakehouse.merge(args.source, args.branch)
        print(f"committed {result.status}", flush=True)
    else:
        report = lakehouse.gc(grace_seconds=args.grace)
        print(f"committed gc {len(report.deleted_files)}", flush=True)
    for point, times in sorted(passed.items()):
        print(f"passed {point} {times}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
