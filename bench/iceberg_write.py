"""Iceberg writers through `branchspark serve` side by side with Iceberg's own catalog, in one run (issue 69).

    python bench/iceberg_write.py [--scale 1.0] [--repeats 1] [--writers 1,8] [--appends 40] [--keep]

Two sides, the same statements, one JVM (Spark 4.1 with Iceberg's runtime 1.12, .venv-peers; `make peers`):

    bs      a REST catalog: `branchspark serve` (its own process, SQLite catalog) on branch `dev`
    hadoop  Iceberg's Hadoop catalog on a local folder: no catalog service, the floor for a writer

At scale 1 a table of 10M rows (id, name, qty; built by one INSERT on each side, timed apart), then, per round,
the sides taking turns:

    insert  INSERT INTO of 10k new rows
    merge   MERGE INTO of 10k changed rows spread over the table (every 1,000th id), copy-on-write (Spark's
            default: Iceberg rewrites the files holding them), then again merge-on-read (position deletes)

and small PyIceberg appends (one row per commit, a fresh load_table each time, retried on a
CommitFailedException) per second, by 1 and by 8 writers at once, against the same server and against
PyIceberg's SqlCatalog on a SQLite file (what Iceberg's JDBC catalog is for Java). `--scale 0.01`: 100k rows and
100 changes. Sized for 2 cores and 24 GB: `local[2]`, 4 shuffle partitions, 6 GB driver memory.
Prints each figure (medians, then each round's serve / hadoop) and the ratio bs / hadoop (bs / SqlCatalog for
appends: under 1 is faster there); target <= 1.2x for Spark's statements. Exits 0 whatever the ratios are.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import scratch_dir  # noqa: E402  (puts the repo on sys.path)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS_PYTHON = os.path.join(REPO, ".venv-peers", "bin", "python")
SPARK_ICEBERG_JARS = os.path.join(REPO, ".jars", "spark-iceberg")
RUNNER = os.path.join(REPO, "bench", "iceberg_write_spark.py")
BRANCHSPARK = os.path.join(os.path.dirname(sys.executable), "branchspark")
SPARK = {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "4", "spark.driver.memory": "6g",
         "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
TARGET = 1.2
MOR = ("'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(warehouse: str) -> tuple[subprocess.Popen, str]:
    from dbt.adapters.branchspark.core.lakehouse import Lakehouse

    lh = Lakehouse(None, warehouse)
    lh.create_branch("dev")
    lh.store.dispose()
    port = free_port()
    log = open(os.path.join(os.path.dirname(warehouse), "serve.log"), "w")  # a pipe left unread would block it
    server = subprocess.Popen([BRANCHSPARK, "--warehouse", warehouse, "serve", "--port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/iceberg"
    deadline = time.time() + 120
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, url
        except OSError:
            if server.poll() is not None or time.time() > deadline:
                raise SystemExit(f"branchspark serve did not start: see {log.name}")
            time.sleep(0.2)


def spark_steps(total: int, changed: int, repeats: int) -> list:
    every = max(total // changed, 1)
    setup = [(side, "create", f"CREATE TABLE {side}.bench.t (id bigint, name string, qty bigint) USING iceberg")
             for side in ("bs", "hadoop")]
    setup = [(side, "namespace", f"CREATE NAMESPACE IF NOT EXISTS {side}.bench") for side in ("bs", "hadoop")] + setup
    # the JVM's first writes pay its warm-up (classes, code generation): a small table on each side first
    setup += [(side, "warm-up", f"CREATE TABLE {side}.bench.warm USING iceberg AS SELECT id, concat('n', "
               f"CAST(id AS string)) AS name, id AS qty FROM range(1000)") for side in ("bs", "hadoop")]
    # each statement the rounds time, once on each side: a first MERGE of a kind ran up to 0.5 s longer
    # (Spark event logs at 100k rows, whichever side went first)
    setup += [(side, "warm-up", f"INSERT INTO {side}.bench.warm SELECT id, 'w', 0 FROM range(1000, 1100)")
              for side in ("bs", "hadoop")]
    for setting in ("('write.merge.mode'='copy-on-write')", f"({MOR})"):
        for side in ("bs", "hadoop"):
            setup += [(side, "warm-up", f"ALTER TABLE {side}.bench.warm SET TBLPROPERTIES {setting}"),
                      (side, "warm-up", f"MERGE INTO {side}.bench.warm t USING (SELECT id * 10 AS id FROM range(50)) s "
                                        f"ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.qty = t.qty + 1")]
    setup += [(side, f"setup {total} rows", f"INSERT INTO {side}.bench.t SELECT id, concat('n', CAST(id AS string)), "
               f"id % 1000 FROM range({total})") for side in ("bs", "hadoop")]
    steps = list(setup)
    for round_index in range(repeats):
        order = ("bs", "hadoop") if round_index % 2 == 0 else ("hadoop", "bs")
        start = total + round_index * changed
        for side in order:
            steps.append((side, "insert", f"INSERT INTO {side}.bench.t SELECT id, concat('new', CAST(id AS string)), "
                          f"0 FROM range({start}, {start + changed})"))
        for mode, setting in (("cow", "('write.merge.mode'='copy-on-write')"), ("mor", f"({MOR})")):
            for side in order:
                steps.append((side, f"to {mode}", f"ALTER TABLE {side}.bench.t SET TBLPROPERTIES {setting}"))
                offset = (2 * round_index + (mode == "mor")) % every
                steps.append((side, f"merge {mode}", f"MERGE INTO {side}.bench.t t USING (SELECT id * {every} + "
                              f"{offset} AS id FROM range({changed})) s ON t.id = s.id "
                              f"WHEN MATCHED THEN UPDATE SET t.qty = t.qty + 1"))
    return steps


def run_spark(url: str, hadoop_dir: str, steps: list) -> list:
    jars = [os.path.join(SPARK_ICEBERG_JARS, f) for f in os.listdir(SPARK_ICEBERG_JARS)
            if f.startswith("iceberg-spark-runtime-")]
    request = {"jars": jars, "spark": SPARK, "steps": steps,
               "catalogs": {"bs": {"type": "rest", "uri": url, "warehouse": "dev"},
                            "hadoop": {"type": "hadoop", "warehouse": hadoop_dir}}}
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYTHONPATH", "PYSPARK_PYTHON",
                                                             "PYSPARK_DRIVER_PYTHON")}
    env["PYSPARK_PYTHON"] = PEERS_PYTHON
    done = subprocess.run([PEERS_PYTHON, RUNNER], input=json.dumps(request), capture_output=True, text=True,
                          env=env, cwd=REPO)
    if done.returncode != 0:
        raise SystemExit(f"Spark with Iceberg failed ({done.returncode}): {done.stderr[-3000:]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    if "error" in answer:  # the steps before it are still figures; the rest of the run goes on
        print(f"a statement failed (the steps after it did not run): {answer['error']}", flush=True)
    return answer["times"]


def appends_per_second(catalog_factory, table: str, writers: int, appends: int) -> tuple[float, int]:
    """Commits per second of `writers` threads each appending `appends` one-row commits; and the retries."""
    import pyarrow as pa
    from pyiceberg.exceptions import CommitFailedException

    schema = pa.schema([pa.field("writer", pa.int64()), pa.field("n", pa.int64())])
    retries = [0] * writers
    failures: list[str] = []

    def write(writer: int):
        catalog = catalog_factory()
        for n in range(appends):
            for _ in range(1000):
                try:
                    catalog.load_table(table).append(pa.table({"writer": [writer], "n": [n]}, schema=schema))
                    break
                except CommitFailedException:
                    retries[writer] += 1
                except Exception as exc:  # noqa: BLE001 - SQLite's "database is locked" under 8 writers
                    if "locked" not in str(exc):
                        failures.append(str(exc).splitlines()[0])
                        return
                    retries[writer] += 1
    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if failures:
        raise SystemExit(f"an append failed: {failures[0]}")
    return writers * appends / elapsed, sum(retries)


def pyiceberg_step(url: str, root: str, writer_counts: list[int], appends: int) -> dict:
    import logging

    import pyarrow as pa
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.catalog.sql import SqlCatalog

    logging.getLogger("pyiceberg").setLevel(logging.ERROR)  # its own retries, one line each, are counted instead
    schema = pa.schema([pa.field("writer", pa.int64()), pa.field("n", pa.int64())])
    peer_dir = os.path.join(root, "sqlcatalog")
    os.makedirs(peer_dir, exist_ok=True)
    factories = {
        "bs": lambda: RestCatalog("bs", uri=url, warehouse="dev"),
        "sqlite": lambda: SqlCatalog("peer", uri=f"sqlite:///{peer_dir}/catalog.db", warehouse=f"file://{peer_dir}"),
    }
    results = {}
    for side, factory in factories.items():
        catalog = factory()
        catalog.create_namespace_if_not_exists("appends")
        for writers in writer_counts:
            name = f"appends.w{writers}"
            catalog.create_table(name, schema=schema)
            results[(side, writers)] = appends_per_second(factory, name, writers, appends)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1.0: 10M rows, 10k inserted and changed rows")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of insert and merges (medians)")
    parser.add_argument("--writers", default="1,8", help="PyIceberg writer counts")
    parser.add_argument("--appends", type=int, default=40, help="one-row commits per PyIceberg writer")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    for needed in (PEERS_PYTHON, SPARK_ICEBERG_JARS):
        if not os.path.exists(needed):
            raise SystemExit(f"{needed} is missing: run `make peers`")
    total, changed = max(int(10_000_000 * args.scale), 1000), max(int(10_000 * args.scale), 100)
    root = scratch_dir("iceberg_write")
    server, url = start_server(os.path.join(root, "warehouse"))
    try:
        print(f"load before: {os.getloadavg()}", flush=True)
        times = run_spark(url, f"file://{root}/hadoop", spark_steps(total, changed, args.repeats))
        by: dict[tuple[str, str], list[float]] = {}
        for side, step, seconds in times:
            by.setdefault((side, step), []).append(seconds)
        print(f"Spark 4.1 + Iceberg 1.12, {total:,} rows, {changed:,} rows per statement, {args.repeats} round(s):")
        print(f"{'statement':<22}{'serve s':>10}{'hadoop s':>10}{'ratio':>8}")
        for step in [f"setup {total} rows", "insert", "merge cow", "merge mor"]:
            if ("bs", step) not in by or ("hadoop", step) not in by:
                print(f"{step:<22}{'(not run)':>10}")
                continue
            bs, peer = statistics.median(by[("bs", step)]), statistics.median(by[("hadoop", step)])
            flag = "" if step.startswith("setup") else ("  ok" if bs / peer <= TARGET else f"  > {TARGET}x")
            rounds = "" if len(by[("bs", step)]) < 2 else "  rounds " + ", ".join(
                f"{b:.2f}/{h:.2f}" for b, h in zip(by[("bs", step)], by[("hadoop", step)]))
            print(f"{step:<22}{bs:>10.2f}{peer:>10.2f}{bs / peer:>7.2f}x{flag}{rounds}", flush=True)
        appends = pyiceberg_step(url, root, [int(w) for w in args.writers.split(",")], args.appends)
        print(f"PyIceberg one-row appends per second ({args.appends} per writer):")
        print(f"{'writers':<22}{'serve/s':>10}{'sqlite/s':>10}{'ratio':>8}{'retries':>16}  (ratio: time per commit)")
        for writers in [int(w) for w in args.writers.split(",")]:
            (bs, bs_retries), (peer, peer_retries) = appends[("bs", writers)], appends[("sqlite", writers)]
            print(f"{writers:<22}{bs:>10.1f}{peer:>10.1f}{peer / bs:>7.2f}x{bs_retries:>8}/{peer_retries:<7}")
        print(f"load after: {os.getloadavg()}")
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
