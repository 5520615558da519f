"""The change-feed scenarios of tests/core/feed_scenarios.py in a session of the kind a user has, as its own OS
process (a master and a session kind are fixed when the JVM starts):

    python -m tests.core.feed_session_process --session own|branchspark|join --master local[2] \
        --partitions 1,2,4 --repeats 1 [--all]

- `own`: a user's own `SparkSession.builder.master(...)`, none of branchspark's settings (README's five lines):
  tombstones are applied by the Java UDF, registered on first read;
- `branchspark`: branchspark's own session (`local_session`), with its session extension's expression and
  Parquet source;
- `join`: branchspark's session with deletion vectors off (`BRANCHSPARK_DELETION_VECTORS=off`), as without
  the jar: tombstones are applied by a join.

Per number of shuffle partitions, issue 55's reproduction (the update chain, with and without dest compacted)
runs `--repeats` times and every other scenario once, each in a new warehouse; one JSON line per run:
{"partitions", "run", "scenario", "problems"}, then "done".
"""
import argparse
import json
import os
import shutil
import sys
import tempfile


def session(kind: str, master: str):
    if kind == "own":
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.master(master).config("spark.ui.enabled", "false").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        return spark
    if kind == "join":
        os.environ["BRANCHSPARK_DELETION_VECTORS"] = "off"
    from dbt.adapters.branchspark.core.spark_session import local_session
    return local_session(master, {"spark.ui.enabled": "false"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--session", choices=("own", "branchspark", "join"), required=True)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", default="1,2,4")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--all", action="store_true", help="every scenario, not only make test's")
    parser.add_argument("--only", help="one scenario by name")
    args = parser.parse_args()
    spark = session(args.session, args.master)
    from dbt.adapters.branchspark.core.lakehouse import Lakehouse
    from tests.core.feed_scenarios import REPRODUCTION, SCENARIOS, feed_problems
    names = [args.only] if args.only else [name for name, (_, short) in SCENARIOS.items() if short or args.all]
    for partitions in [int(p) for p in args.partitions.split(",")]:
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
        for name in names:
            for run in range(args.repeats if name in REPRODUCTION else 1):
                warehouse = tempfile.mkdtemp(prefix="feed-session-")
                lh = Lakehouse(spark, warehouse)
                try:
                    problems = feed_problems(lh, spark, name)
                finally:
                    lh.store.dispose()
                    shutil.rmtree(warehouse, ignore_errors=True)
                print(json.dumps({"partitions": partitions, "run": run, "scenario": name, "problems": problems}),
                      flush=True)
    print("done", flush=True)
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())
